//! What checking a call's arguments against its input schema costs, once the schema is compiled
//! (the first call compiles it; every later call of that contract reuses it). Target: ≤ 5 µs for
//! a typical schema. The schema is the real memory server's `create_entities`, the arguments a
//! call a model would make.

use std::hint::black_box;

use capabilities_core::address::{Namespace, ToolAddress};
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::manifest::Manifest;
use capabilities_core::validate::Checked;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::{Value, json};

fn bench(c: &mut Criterion) {
    let tools: Vec<Value> = serde_json::from_str(include_str!("../tests/data/tools/memory.json")).unwrap();
    let (manifest, _) = Manifest::from_tools_list(Namespace::new("memory").unwrap(), &tools);
    let catalog = Catalog::new(vec![SourceView { manifest, connections: vec![], default_connection: None }]);
    let address = ToolAddress::parse("memory.createEntities").unwrap();
    let good = json!({ "entities": [
        { "name": "Ada", "entityType": "person", "observations": ["wrote the first program", "liked engines"] },
        { "name": "Engine", "entityType": "machine", "observations": ["analytical"] },
    ] });
    let bad = json!({ "entities": "not an array" });
    assert_eq!(catalog.check(&address, &good), Checked::Valid);
    assert!(matches!(catalog.check(&address, &bad), Checked::Invalid(_)));
    let mut group = c.benchmark_group("validate");
    group.bench_function("valid call", |b| b.iter(|| catalog.check(black_box(&address), black_box(&good))));
    group.bench_function("invalid call", |b| b.iter(|| catalog.check(black_box(&address), black_box(&bad))));
    group.bench_function("first call (compile)", |b| {
        b.iter(|| {
            let fresh = catalog.clone();
            fresh.check(black_box(&address), black_box(&good))
        })
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

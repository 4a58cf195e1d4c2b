//! Benchmarks `describe` on a namespace of 100 real tools (the recorded servers' tools, renamed
//! and repeated): the whole namespace within the default budget, and one address in it; and
//! the token counter's one-time start (its table decoded).

use capabilities_core::address::{Namespace, ToolAddress};
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::limits::Limits;
use capabilities_core::manifest::Manifest;
use capabilities_core::surface::describe::describe;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;

const FIXTURES: &[&str] = &[
    include_str!("../tests/data/tools/everything.json"),
    include_str!("../tests/data/tools/filesystem.json"),
    include_str!("../tests/data/tools/github.json"),
    include_str!("../tests/data/tools/memory.json"),
    include_str!("../tests/data/tools/playwright.json"),
];

/// One namespace, `big`, with 100 tools taken round-robin from the fixtures, each renamed.
fn big_catalog() -> Catalog {
    let all: Vec<Value> = FIXTURES
        .iter()
        .flat_map(|f| serde_json::from_str::<Vec<Value>>(f).expect("fixture is JSON"))
        .collect();
    let entries: Vec<Value> = (0..100)
        .map(|i| {
            let mut tool = all[i % all.len()].clone();
            let name = format!("{}_{i}", tool["name"].as_str().unwrap_or("tool"));
            tool["name"] = Value::String(name);
            tool
        })
        .collect();
    let (manifest, problems) = Manifest::from_tools_list(Namespace::new("big").expect("valid"), &entries);
    assert!(problems.is_empty());
    Catalog::new(vec![SourceView { manifest, connections: Vec::new(), default_connection: None }])
}

fn bench(c: &mut Criterion) {
    let catalog = big_catalog();
    let everything = |_: &ToolAddress| true;
    let budget = Limits::DEFAULT.describe_tokens;
    // Warm the token counter's tables outside the measurement.
    capabilities_core::tokens::count("warm up");
    let namespace = vec!["big".to_owned()];
    let text = describe(&catalog, &namespace, &everything, budget).expect("describes");
    assert!(capabilities_core::tokens::count(&text) <= budget);
    c.bench_function("describe namespace of 100 tools", |b| {
        b.iter(|| describe(&catalog, std::hint::black_box(&namespace), &everything, budget))
    });
    let one = vec!["big.createPullRequestReview52".to_owned()];
    describe(&catalog, &one, &everything, budget).expect("describes");
    c.bench_function("describe one tool among 100", |b| {
        b.iter(|| describe(&catalog, std::hint::black_box(&one), &everything, budget))
    });
    // What the first count in a process pays: the LZMA token table decoded, the encoder built.
    let mut group = c.benchmark_group("tokens");
    group.sample_size(10);
    group.bench_function("first count (table decoded, encoder built)", |b| {
        b.iter(capabilities_core::tokens::build)
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

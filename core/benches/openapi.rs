//! Reading GitHub's REST API description (about 13 MB of OpenAPI 3.0, 1,100+ operations) into
//! tool records, indexing them, and searching them. Targets: read ≤ 2 s, index build ≤ 150 ms,
//! search p50 ≤ 1 ms. The document comes from `node/node_modules` (`cargo xtask test` or
//! `cd node && npm ci` installs it).

use std::hint::black_box;
use std::time::Duration;

use capabilities_core::address::Namespace;
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::index::Index;
use capabilities_core::manifest::Manifest;
use capabilities_core::openapi::document::{ReadOptions, read};
use criterion::{Criterion, criterion_group, criterion_main};

const GITHUB: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../node/node_modules/@octokit/openapi/generated/api.github.com.json"
);

fn bench(c: &mut Criterion) {
    #[allow(clippy::disallowed_methods)] // the bench reads its input; the code measured does not
    let bytes = std::fs::read(GITHUB).unwrap_or_else(|e| {
        panic!("{GITHUB}: {e}; run `cargo xtask test` once, or `cd node && npm ci`, to install it")
    });
    let options = ReadOptions::default();

    let mut group = c.benchmark_group("openapi");
    group.sample_size(10).measurement_time(Duration::from_secs(20));
    group.bench_function("read GitHub's document", |b| b.iter(|| read(black_box(&bytes), &options)));
    group.finish();

    let document = read(&bytes, &options).expect("GitHub's document reads");
    let manifest = Manifest::from_records(Namespace::new("github").expect("valid"), document.operations);
    let catalog = Catalog::new(vec![SourceView { manifest, connections: vec![], default_connection: None }]);

    let mut group = c.benchmark_group("openapi");
    group.sample_size(20).measurement_time(Duration::from_secs(5));
    group.bench_function("index GitHub's operations", |b| b.iter(|| Index::build(black_box(&catalog))));
    group.finish();

    let index = Index::build(&catalog);
    let mut group = c.benchmark_group("openapi search");
    group.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    for query in ["create an issue", "list pull request review comments", "delete a webhook", "star"] {
        group.bench_function(query, |b| b.iter(|| index.search(black_box(query), None, 8)));
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! Index build and query time over 10,000 tools: the five recorded tool lists repeated across
//! namespaces `ns0`, `ns1`, …. Targets: build ≤ 50 ms, query p50 ≤ 50 µs.

use std::hint::black_box;
use std::time::Duration;

use capabilities_core::address::Namespace;
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::index::Index;
use capabilities_core::manifest::Manifest;
use capabilities_core::policy::Effect;
use capabilities_core::surface::search::{SearchArgs, render};
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::Value;

const TOOLS: usize = 10_000;

const LISTS: [&str; 5] = [
    include_str!("../tests/data/tools/everything.json"),
    include_str!("../tests/data/tools/memory.json"),
    include_str!("../tests/data/tools/filesystem.json"),
    include_str!("../tests/data/tools/playwright.json"),
    include_str!("../tests/data/tools/github.json"),
];

fn catalog() -> Catalog {
    let lists: Vec<Vec<Value>> = LISTS.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let mut sources = Vec::new();
    let mut total = 0;
    let mut i = 0;
    while total < TOOLS {
        let entries = &lists[i % lists.len()];
        let take = entries.len().min(TOOLS - total);
        let ns = Namespace::new(&format!("ns{i}")).unwrap();
        let (manifest, _) = Manifest::from_tools_list(ns, &entries[..take]);
        total += manifest.tools.len();
        sources.push(SourceView { manifest, connections: vec![], default_connection: None });
        i += 1;
    }
    Catalog::new(sources)
}

fn bench(c: &mut Criterion) {
    let catalog = catalog();
    assert_eq!(catalog.tools().count(), TOOLS);

    let mut group = c.benchmark_group("build");
    group.sample_size(20).measurement_time(Duration::from_secs(5));
    group.bench_function("10k tools", |b| b.iter(|| Index::build(black_box(&catalog))));
    group.finish();

    let index = Index::build(&catalog);
    let queries = [
        "create issue",
        "read file",
        "take a screenshot",
        "list directory",
        "add observations to entities",
        "search repositories",
        "file",
        "screensh",
        // A person's words: stand-ins from the vocabulary, a plural.
        "open a PR from my branch",
        "capture the screen",
        "what do you remember about alice",
    ];
    let mut group = c.benchmark_group("query");
    group.measurement_time(Duration::from_secs(2)).warm_up_time(Duration::from_millis(500));
    for query in queries {
        group.bench_function(query, |b| b.iter(|| index.search(black_box(query), None, 8)));
    }
    let ns = Namespace::new("ns44").unwrap();
    group.bench_function("namespace ns44: pull request", |b| {
        b.iter(|| index.search(black_box("pull request"), Some(&ns), 8))
    });
    let words = capabilities_core::fakes::words();
    group.bench_function("render: create issue", |b| {
        let args = SearchArgs { query: "create issue".into(), namespace: None, limit: 8 };
        b.iter(|| render(&catalog, &index, black_box(&args), &|_| Effect::Ask, &words))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

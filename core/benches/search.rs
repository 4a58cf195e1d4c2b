//! Index build and query time over 10,000 tools: the five recorded tool lists repeated across
//! namespaces `ns0`, `ns1`, …. Targets: build ≤ 50 ms, query p50 ≤ 50 µs; with 500 skills
//! beside the tools, a search's p50 stays that of the tools alone (`render` with and without).

use std::hint::black_box;
use std::time::Duration;

use capabilities_core::address::Namespace;
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::index::Index;
use capabilities_core::manifest::Manifest;
use capabilities_core::policy::Effect;
use capabilities_core::surface::search::{SearchArgs, render};
use capabilities_core::surface::skills::{SkillDoc, SkillIndex, search_lines};
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

/// 500 skills with names and descriptions in the words people give them.
fn skills() -> Vec<SkillDoc> {
    let verbs =
        ["write", "review", "triage", "deploy", "release", "summarize", "test", "migrate", "audit", "plan"];
    let things = [
        "notes",
        "issues",
        "pull requests",
        "databases",
        "docs",
        "changelogs",
        "incidents",
        "dashboards",
        "invoices",
        "schemas",
    ];
    (0..500)
        .map(|i| {
            let (verb, thing) = (verbs[i % verbs.len()], things[(i / verbs.len()) % things.len()]);
            let name = format!("{verb}-{}-{i}", thing.replace(' ', "-"));
            let description = format!(
                "How to {verb} {thing} for team {i}: the steps, the checks to run first, and what to \
                 write down when it is done."
            );
            let skill_md = format!("---\nname: {name}\ndescription: {description}\n---\nSteps.\n");
            SkillDoc::new(name, description, skill_md, vec![("SKILL.md".to_owned(), 100)])
        })
        .collect()
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
    // What `Surface::search` adds for a hub with 500 skills: the matching skills' lines.
    let skills = skills();
    let skill_index = SkillIndex::new(&skills);
    group.bench_function("render: write the release notes", |b| {
        let args = SearchArgs { query: "write the release notes".into(), namespace: None, limit: 8 };
        b.iter(|| render(&catalog, &index, black_box(&args), &|_| Effect::Ask, &words))
    });
    group.bench_function("skills alone: create issue", |b| {
        b.iter(|| search_lines(&skill_index.matching(&skills, black_box("create issue"))))
    });
    for query in ["create issue", "write the release notes"] {
        group.bench_function(format!("render + 500 skills: {query}"), |b| {
            let args = SearchArgs { query: query.into(), namespace: None, limit: 8 };
            b.iter(|| {
                let mut text = render(&catalog, &index, black_box(&args), &|_| Effect::Ask, &words);
                for line in search_lines(&skill_index.matching(&skills, &args.query)) {
                    text.push('\n');
                    text.push_str(&line);
                }
                text
            })
        });
    }
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! The pruned ranking against the plain one: for every query in `evals/queries/` and a few
//! more, over the recorded tool lists once and repeated across namespaces, with and without a
//! namespace and a filter, the answers must be the same, scores bit for bit.

use super::*;
use crate::catalog::SourceView;
use crate::manifest::Manifest;

const LISTS: [&str; 5] = [
    include_str!("../../tests/data/tools/everything.json"),
    include_str!("../../tests/data/tools/memory.json"),
    include_str!("../../tests/data/tools/filesystem.json"),
    include_str!("../../tests/data/tools/playwright.json"),
    include_str!("../../tests/data/tools/github.json"),
];

const QUERY_SETS: [&str; 2] =
    [include_str!("../../../evals/queries/tuning.txt"), include_str!("../../../evals/queries/held-out.txt")];

/// The recorded lists repeated until `tools` tools, in namespaces `ns0`, `ns1`, …; every third
/// source describes itself, so source descriptions are scored too.
fn catalog(tools: usize) -> Catalog {
    let lists: Vec<Vec<serde_json::Value>> = LISTS.iter().map(|l| serde_json::from_str(l).unwrap()).collect();
    let descriptions = ["Issues, pull requests and repositories on GitHub", "A knowledge graph memory", ""];
    let mut sources = Vec::new();
    let mut total = 0;
    let mut i = 0;
    while total < tools {
        let entries = &lists[i % lists.len()];
        let take = entries.len().min(tools - total);
        let ns = Namespace::new(&format!("ns{i}")).unwrap();
        let (mut manifest, _) = Manifest::from_tools_list(ns, &entries[..take]);
        let description = descriptions[i % descriptions.len()];
        manifest.description = (!description.is_empty()).then(|| description.to_owned());
        total += manifest.tools.len();
        sources.push(SourceView { manifest, connections: vec![], default_connection: None });
        i += 1;
    }
    Catalog::new(sources)
}

fn queries() -> Vec<&'static str> {
    let mut queries: Vec<&str> = QUERY_SETS
        .iter()
        .flat_map(|set| set.lines())
        .filter(|l| !l.starts_with('#') && !l.starts_with('['))
        .filter_map(|l| l.split_once(" => ").map(|(q, _)| q.trim()))
        .collect();
    queries.extend([
        "file",
        "screensh",
        "ns3 issues",
        "github pull requests",
        "issue 42",
        "open a PR from my branch",
        "what do you remember about alice",
        "the of and",
        "create read update delete list search find get file issue branch commit page tab",
    ]);
    queries
}

/// Scores as bits, so equal means equal to the last bit.
fn bits_of(outcome: &SearchOutcome) -> Vec<(String, u32)> {
    outcome.hits.iter().map(|h| (h.address.to_string(), h.score.to_bits())).collect()
}

fn check_same(index: &Index, namespaces: &[Option<&str>]) -> usize {
    let mut pruned = 0;
    let keep = |a: &ToolAddress| !a.tool.len().is_multiple_of(3);
    for query in queries() {
        let plan = index.plan(query);
        if plan.words == 0 {
            continue;
        }
        for &ns in namespaces {
            let range = match ns {
                Some(ns) => index.namespace_range(&Namespace::new(ns).unwrap()).unwrap(),
                None => 0..to_u32(index.len()),
            };
            for limit in [0, 1, 5, 8, 50] {
                for filter in [None, Some(&keep)] {
                    let every = index.rank_every(&plan, range.clone(), limit, filter);
                    let Some(fast) = index.rank_pruned(&plan, range.clone(), limit, filter) else { continue };
                    pruned += 1;
                    let what = format!("{query:?} in {ns:?}, limit {limit}, filtered {}", filter.is_some());
                    assert_eq!(bits_of(&fast), bits_of(&every), "{what}");
                    assert_eq!(fast, every, "{what}");
                }
            }
        }
    }
    pruned
}

#[test]
fn pruned_ranking_matches_the_plain_one() {
    let small = Index::build(&catalog(93));
    let pruned = check_same(&small, &[None, Some("ns4")]);
    assert!(pruned > 1000, "{pruned} rankings pruned");
    let large = Index::build(&catalog(3000));
    check_same(&large, &[None, Some("ns14")]);
}

#[test]
fn search_takes_the_pruned_way() {
    let index = Index::build(&catalog(93));
    for query in queries() {
        let plan = index.plan(query);
        if plan.words > 0 {
            let range = 0..to_u32(index.len());
            assert!(
                index.rank_pruned(&plan, range, 8, None::<fn(&ToolAddress) -> bool>).is_some(),
                "{query}"
            );
        }
    }
}

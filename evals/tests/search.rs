//! The search query sets as a test: natural queries ranked by the core's index over the eval
//! fixtures and the recorded tool lists (`evals::recall`). The held-out set holds the gate,
//! recall@5 and MRR; `evals/results/search.md` is the committed report of both sets
//! (`UPDATE_EXPECT=1` rewrites it). The ranking is the core's, so the Worker ranks alike:
//! `invariants` holds local and hosted `search` answers byte-identical.

use std::path::Path;

use capabilities_evals::recall::{self, CatalogName, Catalogs, Figures, MIN_MRR, MIN_RECALL_AT_5, Ranked};
use capabilities_evals::repo;
use expect_test::expect_file;

fn ranked(catalogs: &Catalogs, set: &str) -> Vec<Ranked> {
    let queries = recall::load(&repo().join(Path::new("evals/queries").join(set))).unwrap();
    recall::rank(catalogs, &queries)
}

#[test]
fn held_out_queries_hold_the_gate() {
    let catalogs = Catalogs::load(&repo()).unwrap();
    let tuning = ranked(&catalogs, "tuning.txt");
    let held_out = ranked(&catalogs, "held-out.txt");
    assert!(tuning.len() + held_out.len() >= 150, "the sets keep at least 150 queries");
    expect_file!["../results/search.md"].assert_eq(&recall::report(&tuning, &held_out));
    let figures = Figures::of(&held_out);
    assert!(
        figures.passes(),
        "held-out {figures}; the gate needs recall@5 ≥ {MIN_RECALL_AT_5} and MRR ≥ {MIN_MRR}"
    );
}

/// The queries the issue tried as a new user would, on the fixture sources, and a query that
/// names a namespace.
#[test]
fn the_first_tool_is_the_one_meant() {
    let catalogs = Catalogs::load(&repo()).unwrap();
    let first = |catalog, query: &str| {
        let (_, index) = catalogs.get(catalog);
        let hits = index.search(query, None, 1).hits;
        format!("{query} => {}", hits.first().map_or("nothing".to_owned(), |h| h.address.to_string()))
    };
    let out: Vec<String> = [
        (CatalogName::Fixtures, "open bugs"),
        (CatalogName::Fixtures, "find documents about onboarding"),
        (CatalogName::Fixtures, "schedule a meeting"),
        (CatalogName::Fixtures, "who changed this page"),
        (CatalogName::All, "github issues"),
        (CatalogName::All, "tracker bugs"),
    ]
    .into_iter()
    .map(|(catalog, query)| first(catalog, query))
    .collect();
    expect_test::expect![[r#"
        open bugs => tracker.listIssues
        find documents about onboarding => docs.searchDocuments
        schedule a meeting => calendar.createEvent
        who changed this page => docs.getDocumentHistory
        github issues => github.listIssues
        tracker bugs => tracker.listIssues"#]]
    .assert_eq(&out.join("\n"));
}

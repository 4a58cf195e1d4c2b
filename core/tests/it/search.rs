//! `search` end to end over the real recorded tool lists: ranking, the text it returns, policy
//! hiding and marking, argument errors, and properties (deterministic, never panics).

use std::fmt::Write as _;
use std::sync::OnceLock;

use capabilities_core::address::{Namespace, ToolAddress};
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::index::Index;
use capabilities_core::limits::Limits;
use capabilities_core::manifest::Manifest;
use capabilities_core::policy::Effect;
use capabilities_core::surface::search::{SearchArgs, input_schema, render};
use expect_test::{Expect, ExpectFile, expect, expect_file};
use proptest::prelude::*;
use serde_json::{Value, json};

const LISTS: [(&str, &str); 5] = [
    ("everything", include_str!("../data/tools/everything.json")),
    ("memory", include_str!("../data/tools/memory.json")),
    ("filesystem", include_str!("../data/tools/filesystem.json")),
    ("playwright", include_str!("../data/tools/playwright.json")),
    ("github", include_str!("../data/tools/github.json")),
];

fn manifest(ns: &str, list: &str) -> Manifest {
    let entries: Vec<Value> = serde_json::from_str(list).unwrap();
    let (manifest, problems) = Manifest::from_tools_list(Namespace::new(ns).unwrap(), &entries);
    assert!(problems.is_empty(), "{ns}: {problems:?}");
    manifest
}

/// All five servers; github has two connections, `personal` the default.
fn catalog() -> &'static Catalog {
    static CATALOG: OnceLock<Catalog> = OnceLock::new();
    CATALOG.get_or_init(|| {
        Catalog::new(
            LISTS
                .iter()
                .map(|(ns, list)| {
                    let github = *ns == "github";
                    SourceView {
                        manifest: manifest(ns, list),
                        connections: if github { vec!["personal".into(), "work".into()] } else { vec![] },
                        default_connection: github.then(|| "personal".into()),
                    }
                })
                .collect(),
        )
    })
}

fn index() -> &'static Index {
    static INDEX: OnceLock<Index> = OnceLock::new();
    INDEX.get_or_init(|| Index::build(catalog()))
}

/// Policy without rules: tools that declare themselves read-only run, everything else asks.
fn default_effect(address: &ToolAddress) -> Effect {
    match catalog().tool(address) {
        Some(tool) if tool.record.annotations.is_read_only() => Effect::Allow,
        _ => Effect::Ask,
    }
}

fn search_text(arguments: &Value, effect: &dyn Fn(&ToolAddress) -> Effect) -> String {
    match SearchArgs::parse(arguments, catalog(), &Limits::DEFAULT) {
        Ok(args) => render(catalog(), index(), &args, effect, &crate::words::local()),
        Err(e) => format!("error: {e}"),
    }
}

fn check(arguments: Value, expect: Expect) {
    expect.assert_eq(&search_text(&arguments, &default_effect));
}

fn check_file(arguments: Value, expect: ExpectFile) {
    let text = search_text(&arguments, &default_effect);
    expect.assert_eq(&format!("search {arguments}\n\n{text}\n"));
}

#[test]
fn snapshots_of_realistic_queries() {
    check_file(json!({ "query": "create issue" }), expect_file!["../snapshots/search/create_issue.txt"]);
    check_file(json!({ "query": "read file" }), expect_file!["../snapshots/search/read_file.txt"]);
    check_file(
        json!({ "query": "take a screenshot" }),
        expect_file!["../snapshots/search/take_screenshot.txt"],
    );
    check_file(json!({ "query": "list directory" }), expect_file!["../snapshots/search/list_directory.txt"]);
    check_file(
        json!({ "query": "add observations to entities" }),
        expect_file!["../snapshots/search/add_observations.txt"],
    );
    check_file(
        json!({ "query": "search repositories" }),
        expect_file!["../snapshots/search/search_repositories.txt"],
    );
    check_file(
        json!({ "query": "", "namespace": "memory" }),
        expect_file!["../snapshots/search/list_memory.txt"],
    );
    check_file(
        json!({ "query": "pull request review", "namespace": "github", "limit": 3 }),
        expect_file!["../snapshots/search/github_pull_request.txt"],
    );
    check_file(json!({ "query": "bake sourdough bread" }), expect_file!["../snapshots/search/no_match.txt"]);
    check_file(
        json!({ "query": "screenshot", "namespace": "github" }),
        expect_file!["../snapshots/search/no_match_in_namespace.txt"],
    );
    check_file(
        json!({ "query": "Écrire un fichier ✍️ write file" }),
        expect_file!["../snapshots/search/unicode.txt"],
    );
    check_file(json!({ "query": "screensh" }), expect_file!["../snapshots/search/prefix.txt"]);
}

/// Scores for the same queries, independent of how signatures are printed.
#[test]
fn ranking() {
    let queries = [
        "create issue",
        "read file",
        "take a screenshot",
        "list directory",
        "add observations to entities",
        "search repositories",
        "create a GitHub issue",
        "navigate to a url",
        "merge pull request",
        "delete relations",
        "screensh",
    ];
    let mut out = String::new();
    for query in queries {
        writeln!(out, "{query}").unwrap();
        for hit in index().search(query, None, 5).hits {
            writeln!(out, "  {:.3}  {}", hit.score, hit.address).unwrap();
        }
    }
    expect_file!["../snapshots/search/ranking.txt"].assert_eq(&out);
}

fn tiny_catalog(sources: &[(&str, &[(&str, &str)])], connections: &[&str]) -> Catalog {
    Catalog::new(
        sources
            .iter()
            .map(|(ns, tools)| {
                let entries: Vec<Value> = tools
                    .iter()
                    .map(|(name, description)| {
                        json!({ "name": name, "description": description, "inputSchema": { "type": "object" } })
                    })
                    .collect();
                SourceView {
                    manifest: Manifest::from_tools_list(Namespace::new(ns).unwrap(), &entries).0,
                    connections: connections.iter().map(|c| (*c).to_owned()).collect(),
                    default_connection: connections.first().map(|c| (*c).to_owned()),
                }
            })
            .collect(),
    )
}

fn hits(index: &Index, query: &str, namespace: Option<&str>, limit: usize) -> String {
    let ns = namespace.map(|n| Namespace::new(n).unwrap());
    let outcome = index.search(query, ns.as_ref(), limit);
    let mut out: Vec<String> = outcome.hits.iter().map(|h| format!("{} {:.3}", h.address, h.score)).collect();
    out.push(format!("total {}", outcome.total_matches));
    out.join("\n")
}

#[test]
fn ties_are_broken_by_address() {
    let tools: &[(&str, &str)] =
        &[("zeta", "Does a thing."), ("alpha", "Does a thing."), ("mu", "Does a thing.")];
    let catalog = tiny_catalog(&[("bb", tools), ("aa", tools)], &[]);
    let index = Index::build(&catalog);
    expect![[r#"
        aa.alpha 0.019
        aa.mu 0.019
        aa.zeta 0.019
        bb.alpha 0.019
        bb.mu 0.019
        bb.zeta 0.019
        total 6"#]]
    .assert_eq(&hits(&index, "thing", None, 10));
    // A limit cuts the same order.
    expect![[r#"
        aa.alpha 0.019
        aa.mu 0.019
        total 6"#]]
    .assert_eq(&hits(&index, "thing", None, 2));
}

#[test]
fn connection_names_are_never_indexed() {
    let catalog = tiny_catalog(&[("notes", &[("write_note", "Write a note.")])], &["zebra"]);
    let index = Index::build(&catalog);
    expect!["total 0"].assert_eq(&hits(&index, "zebra", None, 8));
    expect![[r#"
        notes.writeNote 0.290
        total 1"#]]
    .assert_eq(&hits(&index, "note", None, 8));
}

#[test]
fn empty_query_lists_a_namespace_in_listing_order() {
    expect![[r#"
        filesystem.readFile 0.000
        filesystem.readTextFile 0.000
        filesystem.readMediaFile 0.000
        total 14"#]]
    .assert_eq(&hits(index(), "", Some("filesystem"), 3));
    // Only stopwords is the same as empty; without a namespace it matches nothing.
    expect![[r#"
        memory.createEntities 0.000
        total 9"#]]
    .assert_eq(&hits(index(), "  the of a ", Some("memory"), 1));
    expect!["total 0"].assert_eq(&hits(index(), "", None, 8));
    expect!["total 0"].assert_eq(&hits(index(), "file", Some("nowhere"), 8));

    check(
        json!({ "query": "", "namespace": "filesystem", "limit": 3 }),
        expect![[r#"
            filesystem
              filesystem.readFile(input: { path: string; tail?: number; head?: number }): Promise<{ content: string }>
                Read the complete contents of a file as text.
              filesystem.readTextFile(input: { path: string; tail?: number; head?: number }): Promise<{ content: string }>
                Read the complete contents of a file from the file system as text.
              filesystem.readMediaFile(input: { path: string }): Promise<{ content: ({ … } | { … })[] }>
                Read a file and return it as a base64-encoded content block with its MIME type.
            11 more tools in filesystem. Raise limit or search with a query."#]],
    );
}

#[test]
fn limits_bound_the_hits() {
    for limit in [0, 1, 8, 25, 1000] {
        let outcome = index().search("file", None, limit);
        assert_eq!(outcome.hits.len(), limit.min(outcome.total_matches), "limit {limit}");
    }
    check(
        json!({ "query": "merge pull request", "limit": 1 }),
        expect![[r#"
            github  (connections: personal*, work)
              github.mergePullRequest(input: { owner: string; repo: string; pull_number: number; commit_title?: string; commit_message?: string; merge_method?: "merge" | "squash" | "rebase" }): Promise<unknown>   [asks]
                Merge a pull request
            19 more matches. Narrow the query or pass namespace."#]],
    );
    let text = search_text(&json!({ "query": "file", "limit": 25 }), &default_effect);
    let tools = text.lines().filter(|l| l.starts_with("  ") && !l.starts_with("    ")).count();
    assert_eq!(tools, 25, "{text}");
}

#[test]
fn denied_tools_are_hidden_before_ranking_and_counted() {
    let deny_deletes =
        |a: &ToolAddress| if a.tool.starts_with("delete") { Effect::Deny } else { Effect::Allow };
    expect![[r#"
        memory
          memory.createRelations(input: { relations: { from: string; to: string; relationType: string }[] }): Promise<{ relations: { … }[] }>
            Create multiple new relations between entities in the knowledge graph.
        14 more matches. Narrow the query or pass namespace.
        3 tools hidden by policy."#]]
    .assert_eq(&search_text(&json!({ "query": "delete relations", "limit": 1 }), &deny_deletes));
    expect![[r#"
        memory
          memory.createEntities(input: { entities: { name: string; entityType: string; observations: string[] }[] }): Promise<{ entities: { … }[] }>
          memory.createRelations(input: { relations: { from: string; to: string; relationType: string }[] }): Promise<{ relations: { … }[] }>
        4 more tools in memory. Raise limit or search with a query.
        3 tools hidden by policy."#]]
    .assert_eq(
        &search_text(&json!({ "namespace": "memory", "limit": 2 }), &deny_deletes)
            .lines()
            .filter(|l| !l.starts_with("    "))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    let deny_all = |_: &ToolAddress| Effect::Deny;
    expect![[r#"
        No tools match "read file". Try other words for what you want to do, or browse a namespace: search it with an empty query.
          everything  19 tools: echo, getAnnotatedMessage, getEnv, getResourceLinks, …
          filesystem  14 tools: readFile, readTextFile, readMediaFile, readMultipleFiles, …
          github  26 tools: createOrUpdateFile, searchRepositories, createRepository, getFileContents, …
          memory  9 tools: createEntities, createRelations, addObservations, deleteEntities, …
          playwright  25 tools: browserClose, browserResize, browserConsoleMessages, browserHandleDialog, …
        44 tools hidden by policy."#]]
    .assert_eq(&search_text(&json!({ "query": "read file" }), &deny_all));
    expect![[r#"
        No tools to show in memory.
        9 tools hidden by policy."#]]
    .assert_eq(&search_text(&json!({ "query": "", "namespace": "memory" }), &deny_all));
}

#[test]
fn asking_tools_are_marked() {
    let ask_writes = |a: &ToolAddress| if a.tool == "writeFile" { Effect::Ask } else { Effect::Allow };
    expect![[r#"
        filesystem
          filesystem.writeFile(input: { path: string; content: string }): Promise<{ content: string }>   [asks]
            Create a new file or completely overwrite an existing file with new content.
          filesystem.editFile(input: { path: string; edits: { oldText: string; newText: string }[]; dryRun?: boolean }): Promise<{ content: string }>
            Make line-based edits to a text file.
        46 more matches. Narrow the query or pass namespace."#]]
    .assert_eq(&search_text(&json!({ "query": "write file", "limit": 2 }), &ask_writes));
}

#[test]
fn argument_errors_say_what_is_allowed() {
    let cases = [
        json!("create issue"),
        json!([]),
        json!({}),
        json!(null),
        json!({ "query": "" }),
        json!({ "query": "   " }),
        json!({ "query": 42 }),
        json!({ "query": "x".repeat(201) }),
        json!({ "query": "ok", "namespace": "githb" }),
        json!({ "query": "ok", "namespace": "git" }),
        json!({ "query": "ok", "namespace": "slack" }),
        json!({ "query": "ok", "namespace": 7 }),
        json!({ "query": "ok", "limit": 0 }),
        json!({ "query": "ok", "limit": 26 }),
        json!({ "query": "ok", "limit": -3 }),
        json!({ "query": "ok", "limit": 2.5 }),
        json!({ "query": "ok", "limit": "5" }),
        json!({ "query": "ok", "limt": 5 }),
    ];
    let out: String = cases
        .iter()
        .map(|args| match SearchArgs::parse(args, catalog(), &Limits::DEFAULT) {
            Ok(args) => format!("ok {args:?}\n"),
            Err(e) => format!("{e}\n"),
        })
        .collect();
    expect![[r#"
        search arguments are a string, not an object: pass {"query": "what you want to do"}
        search arguments are an array, not an object: pass {"query": "what you want to do"}
        `query` is missing: say what you want to do, for example "create issue", or pass `namespace` with an empty query to list that namespace
        `query` is missing: say what you want to do, for example "create issue", or pass `namespace` with an empty query to list that namespace
        `query` is empty: say what you want to do, or pass `namespace` with an empty query to list that namespace
        `query` is empty: say what you want to do, or pass `namespace` with an empty query to list that namespace
        `query` is a number, not a string: say what you want to do, for example "create issue"
        `query` has 201 characters: use 1 to 200
        no namespace `githb`: did you mean `github`? namespaces are everything, filesystem, github, memory, playwright
        no namespace `git`: did you mean `github`? namespaces are everything, filesystem, github, memory, playwright
        no namespace `slack`: namespaces are everything, filesystem, github, memory, playwright
        `namespace` is a number, not a string: pass a namespace such as `github`, or leave it out
        `limit` is 0: pass an integer from 1 to 25
        `limit` is 26: pass an integer from 1 to 25
        `limit` is -3: pass an integer from 1 to 25
        `limit` is 2.5, not an integer: pass 1 to 25, or leave it out for 8
        `limit` is "5", not an integer: pass 1 to 25, or leave it out for 8
        unknown argument `limt`: search takes `query`, `namespace` and `limit`
    "#]]
    .assert_eq(&out);
}

#[test]
fn arguments_that_are_accepted() {
    let cases = [
        json!({ "query": "  create issue  " }),
        json!({ "query": "x".repeat(200), "limit": 25 }),
        json!({ "namespace": "GitHub" }),
        json!({ "query": "", "namespace": "memory", "limit": 1.0 }),
        json!({ "query": "read", "namespace": "", "limit": null }),
    ];
    let out: String = cases
        .iter()
        .map(|args| match SearchArgs::parse(args, catalog(), &Limits::DEFAULT) {
            Ok(a) => format!("{:?} {:?} {}\n", a.query.len(), a.namespace.map(|n| n.to_string()), a.limit),
            Err(e) => format!("{e}\n"),
        })
        .collect();
    expect![[r#"
        12 None 8
        200 None 25
        0 Some("github") 8
        0 Some("memory") 1
        4 None 8
    "#]]
    .assert_eq(&out);
    // A host's lower limits apply.
    let host = Limits { search_max_limit: 5, search_default_limit: 3, ..Limits::DEFAULT };
    let err = SearchArgs::parse(&json!({ "query": "x", "limit": 6 }), catalog(), &host).unwrap_err();
    expect!["`limit` is 6: pass an integer from 1 to 5"].assert_eq(&err.to_string());
    assert_eq!(SearchArgs::parse(&json!({ "query": "x" }), catalog(), &host).unwrap().limit, 3);
}

#[test]
fn the_schema_states_the_same_bounds() {
    expect![[r#"
        {
          "type": "object",
          "properties": {
            "query": {
              "type": "string",
              "maxLength": 200,
              "description": "What you want to do. Empty lists `namespace`."
            },
            "namespace": {
              "type": "string",
              "description": "Search or list one source only."
            },
            "limit": {
              "type": "integer",
              "minimum": 1,
              "maximum": 25,
              "default": 8
            }
          },
          "required": [
            "query"
          ],
          "additionalProperties": false
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&input_schema(&Limits::DEFAULT)).unwrap());
}

#[test]
fn an_empty_catalog_says_so() {
    let empty = Catalog::default();
    let args = SearchArgs { query: "anything".into(), namespace: None, limit: 8 };
    expect!["The hub has no sources yet, so there are no tools to search. Ask the user to add one with `capabilities hub add`."]
        .assert_eq(&render(&empty, &Index::build(&empty), &args, &|_| Effect::Allow, &crate::words::local()));
    let err = SearchArgs::parse(&json!({ "namespace": "github" }), &empty, &Limits::DEFAULT).unwrap_err();
    expect!["no namespace `github`: the hub has no sources yet"].assert_eq(&err.to_string());
}

fn any_query() -> impl Strategy<Value = String> {
    prop_oneof![
        any::<String>(),
        "[a-zA-Z _-]{0,40}",
        proptest::sample::select(vec!["create issue", "read file", "", "the", "screensh", "GitHub"])
            .prop_map(str::to_owned),
        ("\\PC{0,8}", 0usize..20_000).prop_map(|(s, n)| s.repeat(n.max(1))),
    ]
}

fn any_namespace() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(proptest::sample::select(vec!["github", "memory", "filesystem", "nope", "GitHub"]))
        .prop_map(|n| n.map(str::to_owned))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn search_is_deterministic(query in any_query(), namespace in any_namespace(), limit in 0usize..30) {
        let ns = namespace.as_deref().and_then(|n| Namespace::new(n).ok());
        let a = index().search(&query, ns.as_ref(), limit);
        let b = index().search(&query, ns.as_ref(), limit);
        prop_assert_eq!(&a, &b);
        let rebuilt = Index::build(catalog()).search(&query, ns.as_ref(), limit);
        prop_assert_eq!(&a, &rebuilt);
        let args = json!({ "query": query, "namespace": namespace, "limit": limit });
        prop_assert_eq!(search_text(&args, &default_effect), search_text(&args, &default_effect));
    }

    #[test]
    fn search_is_total(query in any_query(), namespace in any_namespace(), limit in any::<i64>()) {
        let args = json!({ "query": query, "namespace": namespace, "limit": limit });
        let text = search_text(&args, &default_effect);
        prop_assert!(text.len() <= 16 * 1024);
        let outcome = index().search(&query, None, 25);
        prop_assert!(outcome.hits.len() <= 25);
        prop_assert!(outcome.hits.windows(2).all(|w| w[0].score >= w[1].score));
    }
}

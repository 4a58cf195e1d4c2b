//! The `capabilities hub` commands that manage sources and decide approvals, run as the real
//! binary against the npm memory server, each test in a store of its own.
//!
//! Needs Node.js on PATH and `cd node && npm ci` at the repository root; the tests fail (never
//! skip) without them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use expect_test::expect;
use serde_json::Value;

/// The memory server's entry point, after checking that node and the package are there.
fn memory_server() -> PathBuf {
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|out| out.status.success()),
        "`node` is not on PATH: install Node.js 20 or later, then run `cd node && npm ci`"
    );
    let package = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the local crate sits in the repository")
        .join("node/node_modules/@modelcontextprotocol/server-memory");
    let manifest: Value = std::fs::read(package.join("package.json"))
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_else(|| panic!("{} is missing: run `cd node && npm ci`", package.display()));
    let bin = manifest["bin"]["mcp-server-memory"].as_str().expect("the package names its bin");
    package.join(bin)
}

/// One hub in a temporary directory, with the memory server's data file beside it.
struct Hub {
    dir: tempfile::TempDir,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Hub {
    fn new() -> Hub {
        Hub { dir: tempfile::tempdir().unwrap() }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    fn memory_file(&self) -> PathBuf {
        self.dir.path().join("memory.jsonl")
    }

    fn run(&self, args: &[&str]) -> Ran {
        let Output { status, stdout, stderr } = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .arg("hub")
            .args(args)
            .env("CAPABILITIES_HOME", self.home())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        Ran {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    fn add_memory(&self, extra: &[&str]) -> Ran {
        let env = format!("MEMORY_FILE_PATH={}", self.memory_file().display());
        let server = memory_server();
        let mut args = vec!["add", "--namespace", "memory", "--env", &env];
        args.extend_from_slice(extra);
        args.extend(["--", "node", server.to_str().unwrap()]);
        self.run(&args)
    }

    fn records(&self) -> Vec<String> {
        let mut found = Vec::new();
        for dir in ["sources", "manifests", "connections"] {
            for entry in std::fs::read_dir(self.home().join(dir)).into_iter().flatten().flatten() {
                found.push(format!("{dir}/{}", entry.file_name().to_string_lossy()));
            }
        }
        found
    }
}

fn run_id(text: &str) -> String {
    let start = text.find("run_").expect("the output names a run");
    text[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect()
}

#[test]
fn add_exec_approve_once_runs_the_write_exactly_once() {
    let hub = Hub::new();
    let added = hub.add_memory(&["--yes"]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert_eq!(added.stdout, "added `memory` with 9 tools\n");

    let list = hub.run(&["list", "--json"]);
    let rows: Value = serde_json::from_str(&list.stdout).unwrap();
    assert_eq!(rows[0]["namespace"], "memory");
    assert_eq!(rows[0]["transport"], "stdio");
    assert_eq!(rows[0]["tools"], 9);
    assert_eq!(rows[0]["unreviewed"], 0);

    let read = hub.run(&["--json", "exec", "return await memory.readGraph({})"]);
    assert_eq!(read.code, 0, "{}{}", read.stdout, read.stderr);

    let code = r#"await memory.createEntities({entities:[{name:"a",entityType:"t",observations:["x"]}]}); return (await memory.readGraph({})).entities.length"#;
    let paused = hub.run(&["exec", code]);
    assert_eq!(paused.code, 4, "{}{}", paused.stdout, paused.stderr);
    assert!(paused.stdout.starts_with("awaiting_approval"), "{}", paused.stdout);
    let id = run_id(&paused.stdout);

    let refused = hub.run(&["approve", &id]);
    assert_eq!(refused.code, 2);
    assert!(refused.stderr.contains("--choice"), "{}", refused.stderr);

    let approved = hub.run(&["--json", "approve", &id, "--choice", "once"]);
    assert_eq!(approved.code, 0, "{}{}", approved.stdout, approved.stderr);
    let envelope: Value = serde_json::from_str(&approved.stdout).unwrap();
    assert_eq!(envelope["status"], "completed");
    assert_eq!(envelope["result"], 1);
    assert!(approved.stderr.contains("memory.createEntities"), "{}", approved.stderr);

    let lines = std::fs::read_to_string(hub.memory_file()).unwrap();
    assert_eq!(lines.lines().filter(|l| l.contains(r#""name":"a""#)).count(), 1, "{lines}");

    let again = hub.run(&["approve", &id, "--choice", "once"]);
    assert_eq!(again.code, 1);
    assert!(again.stderr.contains("waits for nothing"), "{}", again.stderr);
}

/// The issue's example, with the real memory server: a write whose arguments its schema
/// refuses fails at once with the path and what was expected; no one is asked and the memory
/// file is untouched. A read with bad arguments never reaches the server either.
#[test]
fn a_write_with_bad_arguments_fails_before_anyone_is_asked() {
    let hub = Hub::new();
    assert_eq!(hub.add_memory(&["--yes"]).code, 0);
    let out =
        hub.run(&["--json", "exec", r#"return await memory.createEntities({ entities: "not an array" })"#]);
    assert_eq!(out.code, 3, "the run failed, it did not wait: {}{}", out.stdout, out.stderr);
    let envelope: Value = serde_json::from_str(&out.stdout).unwrap();
    assert_eq!(envelope["status"], "failed", "{envelope}");
    let text = envelope.to_string();
    assert!(
        text.contains("invalid_arguments") && text.contains("entities: expected array, got string"),
        "{text}"
    );
    assert!(text.contains("memory.createEntities(input: {"), "the signature is in the hint: {text}");
    assert!(hub.run(&["runs"]).stdout.lines().all(|l| !l.contains("awaiting")), "nothing waits for a person");
    let file = std::fs::read_to_string(hub.memory_file()).unwrap_or_default();
    assert!(file.is_empty(), "the memory file is untouched: {file}");
    let read = hub.run(&[
        "--json",
        "exec",
        r#"try { await memory.openNodes({ names: 7 }) } catch (e) { return e.code }"#,
    ]);
    let envelope: Value = serde_json::from_str(&read.stdout).unwrap();
    assert_eq!(envelope["result"], "invalid_arguments", "{envelope}");
}

#[test]
fn a_denied_call_fails_inside_the_code() {
    let hub = Hub::new();
    assert_eq!(hub.add_memory(&["--yes"]).code, 0);
    let code = r#"try { await memory.deleteEntities({entityNames:["a"]}); return "ran" } catch (e) { return e.code }"#;
    let paused = hub.run(&["exec", code]);
    assert_eq!(paused.code, 4, "{}{}", paused.stdout, paused.stderr);
    let denied = hub.run(&["--json", "approve", &run_id(&paused.stdout), "--choice", "deny"]);
    let envelope: Value = serde_json::from_str(&denied.stdout).unwrap();
    assert_eq!(envelope["status"], "completed", "{}", denied.stdout);
    assert_eq!(envelope["result"], "approval_denied");
}

#[test]
fn always_allow_leaves_a_pinned_rule_and_cancel_ends_a_run() {
    let hub = Hub::new();
    assert_eq!(hub.add_memory(&["--yes"]).code, 0);
    let code =
        r#"await memory.createEntities({entities:[{name:"b",entityType:"t",observations:[]}]}); return 1"#;
    let paused = hub.run(&["exec", code]);
    let approved = hub.run(&["approve", &run_id(&paused.stdout), "--choice", "always"]);
    assert_eq!(approved.code, 0, "{}{}", approved.stdout, approved.stderr);
    let policy: Value =
        serde_json::from_slice(&std::fs::read(hub.home().join("policies/policy.json")).unwrap()).unwrap();
    assert_eq!(policy["rules"][0]["tool"], "memory.createEntities");
    assert_eq!(policy["rules"][0]["effect"], "allow");
    // The rule lets the next call run without asking.
    assert_eq!(hub.run(&["exec", code]).code, 0);

    let paused = hub.run(&["exec", r#"await memory.deleteEntities({entityNames:["b"]})"#]);
    assert_eq!(paused.code, 4);
    let cancelled = hub.run(&["--json", "cancel", &run_id(&paused.stdout)]);
    let envelope: Value = serde_json::from_str(&cancelled.stdout).unwrap();
    assert_eq!(envelope["status"], "cancelled", "{}", cancelled.stdout);
    assert_eq!(cancelled.code, 3);
}

#[test]
fn add_refuses_without_consent_a_taken_name_or_a_dead_command() {
    let hub = Hub::new();
    let no_consent = hub.run(&["--no-input", "add", "--", "node", memory_server().to_str().unwrap()]);
    assert_eq!(no_consent.code, 2);
    assert!(no_consent.stderr.contains("pass `--yes`"), "{}", no_consent.stderr);
    assert!(hub.records().is_empty());

    let dead = hub.run(&["add", "--yes", "--namespace", "ghost", "--", "capabilities-no-such-command-here"]);
    assert_eq!(dead.code, 1);
    assert!(dead.stderr.contains("source `ghost` did not start"), "{}", dead.stderr);
    assert!(hub.records().is_empty(), "{:?}", hub.records());

    let crashes = hub.run(&[
        "add",
        "--yes",
        "--namespace",
        "crash",
        "--",
        "node",
        "-e",
        "console.error('boom: no token'); process.exit(3)",
    ]);
    assert_eq!(crashes.code, 1);
    assert!(crashes.stderr.contains("boom: no token"), "{}", crashes.stderr);
    assert!(hub.records().is_empty(), "{:?}", hub.records());

    assert_eq!(hub.add_memory(&["--yes"]).code, 0);
    let taken = hub.add_memory(&["--yes"]);
    assert_eq!(taken.code, 2);
    assert!(taken.stderr.contains("hub refresh memory"), "{}", taken.stderr);
}

#[test]
fn refresh_review_and_remove() {
    let hub = Hub::new();
    let added = hub.add_memory(&[]);
    // Without a terminal the consent prompt cannot be answered.
    assert_eq!(added.code, 2);
    let added = hub.run(&[
        "add",
        "--yes",
        "--env",
        &format!("MEMORY_FILE_PATH={}", hub.memory_file().display()),
        "--",
        "node",
        memory_server().to_str().unwrap(),
    ]);
    assert_eq!(added.code, 0, "{}", added.stderr);
    assert_eq!(added.stdout, "added `memory` with 9 tools\n", "the namespace comes from the package");
    let review = added.stderr.split_once("…\n").map(|(_, r)| r).unwrap_or(&added.stderr);
    expect![[r#"
        Read-only — proposed: allow (3)
           memory.readGraph [new]  Read the entire knowledge graph
           memory.searchNodes [new]  Search for nodes in the knowledge graph based on a query
           memory.openNodes [new]  Open specific nodes in the knowledge graph by their names
        Writes — proposed: ask (3)
           memory.createEntities [new]  Create multiple new entities in the knowledge graph
           memory.createRelations [new]  Create multiple new relations between entities in the knowledge graph.
           memory.addObservations [new]  Add new observations to existing entities in the knowledge graph
        Destructive or undeclared — proposed: ask (flagged) (3)
         ! memory.deleteEntities [new]  Delete multiple entities and their associated relations from the knowledge graph
         ! memory.deleteObservations [new]  Delete specific observations from entities in the knowledge graph
         ! memory.deleteRelations [new]  Delete multiple relations from the knowledge graph
        accepted 9 tools
    "#]]
    .assert_eq(review);

    let refreshed = hub.run(&["refresh"]);
    assert_eq!(refreshed.code, 0, "{}", refreshed.stderr);
    assert_eq!(refreshed.stdout, "memory: no changes\n");

    // A contract nobody accepted asks again, and review pins it.
    let policy_path = hub.home().join("policies/policy.json");
    let mut policy: Value = serde_json::from_slice(&std::fs::read(&policy_path).unwrap()).unwrap();
    policy["reviewed"]["memory.readGraph"] = Value::String(format!("sha256:{}", "0".repeat(64)));
    std::fs::write(&policy_path, serde_json::to_vec(&policy).unwrap()).unwrap();
    let asks = hub.run(&["exec", "return await memory.readGraph({})"]);
    assert_eq!(asks.code, 4, "{}", asks.stdout);
    let left = hub.run(&["review"]);
    assert!(left.stderr.contains("memory.readGraph [changed]"), "{}", left.stderr);
    assert!(left.stderr.contains("left unreviewed"), "{}", left.stderr);
    let accepted = hub.run(&["review", "--yes"]);
    assert!(accepted.stderr.contains("accepted 1 tool"), "{}", accepted.stderr);
    assert_eq!(hub.run(&["exec", "return await memory.readGraph({})"]).code, 0);

    let refused = hub.run(&["remove", "memory"]);
    assert_eq!(refused.code, 2);
    assert!(refused.stderr.contains("pass `--yes`"), "{}", refused.stderr);
    let removed = hub.run(&["remove", "memory", "--yes"]);
    assert_eq!(removed.code, 0, "{}", removed.stderr);
    assert!(hub.records().is_empty(), "{:?}", hub.records());
    let policy: Value = serde_json::from_slice(&std::fs::read(&policy_path).unwrap()).unwrap();
    assert_eq!(policy["reviewed"], serde_json::json!({}));
    assert_eq!(hub.run(&["list", "--json"]).stdout, "[]\n");
    let gone = hub.run(&["remove", "memory", "--yes"]);
    assert_eq!(gone.code, 1);
    assert!(gone.stderr.contains("hub list"), "{}", gone.stderr);
}

/// A source's own `initialize` instructions become its manifest's description: `search` indexes
/// it, and a query that matches no tool lists the source by it. The reference everything server
/// sends instructions; the memory server sends none.
#[test]
fn a_sources_instructions_describe_it_in_search() {
    let hub = Hub::new();
    let everything = memory_server()
        .ancestors()
        .find(|p| p.ends_with("@modelcontextprotocol"))
        .expect("the scoped packages' folder")
        .join("server-everything/dist/index.js");
    let added = hub.run(&[
        "add",
        "--yes",
        "--namespace",
        "everything",
        "--",
        "node",
        everything.to_str().unwrap(),
        "stdio",
    ]);
    assert_eq!(added.code, 0, "{}{}", added.stdout, added.stderr);
    let manifest: Value =
        serde_json::from_slice(&std::fs::read(hub.home().join("manifests/everything.json")).unwrap())
            .unwrap();
    let description = manifest["description"].as_str().expect("the instructions are kept");
    assert!(description.contains("Everything Server") && !description.contains('\n'), "{description}");
    assert!(description.chars().count() <= 401, "{description}");
    let weak = hub.run(&["exec", r#"return await hub.search("zzqqxx")"#]);
    assert!(
        weak.stdout.contains("everything  ") && weak.stdout.contains("Everything Server"),
        "{}",
        weak.stdout
    );
}

/// Run history: filters by status, source, text and time, `runs show` with each call's timing,
/// decision and preview, and a corrupt record named by `hub runs` and `hub doctor` instead of
/// vanishing.
#[test]
fn run_history_filters_shows_decisions_and_names_corrupt_records() {
    let hub = Hub::new();
    assert_eq!(hub.add_memory(&["--yes"]).code, 0);
    let read = hub.run(&["exec", "return await memory.readGraph({})"]);
    assert_eq!(read.code, 0, "{}{}", read.stdout, read.stderr);
    let plain = hub.run(&["exec", "return 'no calls here'"]);
    assert_eq!(plain.code, 0);
    let write = r#"return await memory.createEntities({ entities: [{ name: "a", entityType: "t", observations: [] }] })"#;
    let paused = hub.run(&["exec", write]);
    assert_eq!(paused.code, 4, "{}{}", paused.stdout, paused.stderr);
    let written = run_id(&paused.stdout);
    assert_eq!(hub.run(&["approve", &written, "--choice", "once"]).code, 0);

    let list = |args: &[&str]| -> Value {
        let mut all = vec!["--json", "runs"];
        all.extend_from_slice(args);
        let out = hub.run(&all);
        assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
        serde_json::from_str(&out.stdout).unwrap()
    };
    assert_eq!(list(&[])["runs"].as_array().unwrap().len(), 3);
    assert_eq!(list(&["--source", "memory"])["runs"].as_array().unwrap().len(), 2);
    assert_eq!(list(&["--source", "mem"])["runs"].as_array().unwrap().len(), 0, "a namespace, not a prefix");
    let texts = list(&["--text", "NO CALLS"]);
    assert_eq!(texts["runs"].as_array().unwrap().len(), 1, "{texts}");
    assert_eq!(texts["runs"][0]["calls"], 0);
    assert_eq!(list(&["--text", "createEntities"])["runs"][0]["id"], written.as_str());
    assert_eq!(list(&["--since", "1h"])["runs"].as_array().unwrap().len(), 3);
    assert_eq!(list(&["--until", "2020-01-01"])["runs"].as_array().unwrap().len(), 0);
    assert_eq!(list(&["--limit", "1"])["runs"].as_array().unwrap().len(), 1);
    let bad = hub.run(&["runs", "--since", "yesterday"]);
    assert_eq!(bad.code, 2, "a usage error: {}", bad.stderr);
    assert!(bad.stderr.contains("not an age (30m, 2h, 7d) or a UTC date"), "{}", bad.stderr);

    let shown = hub.run(&["runs", "show", &written]);
    assert_eq!(shown.code, 0, "{}", shown.stderr);
    assert!(shown.stdout.contains("journal:"), "{}", shown.stdout);
    assert!(shown.stdout.contains("ok    memory.createEntities"), "{}", shown.stdout);
    assert!(shown.stdout.contains("decided: allowed once by a person at the terminal"), "{}", shown.stdout);
    let json: Value = serde_json::from_str(&hub.run(&["--json", "runs", "show", &written]).stdout).unwrap();
    let call = &json["journal"][0];
    assert_eq!(call["address"], "memory.createEntities", "{json}");
    assert_eq!(call["ok"], true);
    assert_eq!(call["decision"]["choice"], "once");
    assert_eq!(call["decision"]["channel"], "cli");
    assert!(call["preview"].as_str().unwrap().contains("\"a\""), "{json}");

    // A record cut short by hand: named with the reason, the others still listed.
    let broken = run_id(&read.stdout);
    std::fs::write(hub.home().join("runs").join(format!("{broken}.json")), "{\"id\": ").unwrap();
    let listed = list(&[]);
    assert_eq!(listed["runs"].as_array().unwrap().len(), 2, "{listed}");
    assert_eq!(listed["unreadable"][0]["file"], format!("runs/{broken}.json"), "{listed}");
    let text = hub.run(&["runs"]);
    assert!(text.stdout.contains(&format!("cannot read runs/{broken}.json")), "{}", text.stdout);
    let doctor = hub.run(&["--json", "doctor"]);
    assert!(doctor.stdout.contains(&format!("runs/{broken}.json")), "doctor names it: {}", doctor.stdout);
    assert_ne!(doctor.code, 0, "and says something is wrong: {}", doctor.stdout);
}

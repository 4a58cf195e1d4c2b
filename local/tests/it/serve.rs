//! `capabilities hub serve --stdio` through real clients: the official TypeScript SDK client
//! (`tests/fixtures/serve-client.mjs`) and raw JSON-RPC lines for an older protocol version, on
//! an empty hub and on a hub with the reference memory server as its one source.
//!
//! Needs Node.js on PATH and `cd node && npm ci` at the repository root; the tests fail (never
//! skip) without them.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use capabilities::config::SourceRecord;
use capabilities::serve::tools;
use capabilities::upstream::{PoolOptions, SourcePool, SourceSpec, SourceTransport};
use capabilities_core::address::Namespace;
use capabilities_core::limits::Limits;
use capabilities_core::manifest::Manifest;
use capabilities_core::policy::PolicyState;
use capabilities_core::ports::Credentials;
use expect_test::{expect, expect_file};
use serde_json::{Value, json};

use crate::support::{packages, repo};

/// Starts the server under the SDK client, lists its tools, makes `calls` and returns what the
/// client saw.
fn client(home: &Path, calls: Value) -> Value {
    let script = repo().join("local/tests/fixtures/serve-client.mjs");
    let out = Command::new("node")
        .arg(&script)
        .arg(calls.to_string())
        .env("MCP_SDK_DIR", packages().join("sdk"))
        .env("CAPABILITIES_BIN", env!("CARGO_BIN_EXE_capabilities"))
        .env("CAPABILITIES_HOME", home)
        .stderr(Stdio::inherit())
        .output()
        .expect("node starts");
    assert!(out.status.success(), "the client failed: {}", String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout).expect("the client prints one JSON object")
}

/// Each result as one line: `error` or `ok`, then its text, run ids replaced by `run_…`.
fn render(results: &Value) -> String {
    let mut out = String::new();
    for result in results.as_array().into_iter().flatten() {
        if let Some(thrown) = result.get("thrown") {
            out.push_str(&format!("thrown {thrown}\n"));
            continue;
        }
        let flag = if result["isError"] == json!(true) { "error" } else { "ok   " };
        let text = result["text"].as_str().unwrap_or_default();
        out.push_str(&format!("{flag} {}\n", without_run_ids(text)));
        if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
            assert_eq!(structured.to_string(), text, "the text is the envelope's compact line");
        }
    }
    out
}

fn without_run_ids(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find("run_") {
        out.push_str(&rest[..at]);
        let tail = &rest[at + 4..];
        let hex = tail.chars().take_while(char::is_ascii_hexdigit).count();
        if hex == 16 {
            out.push_str("run_…");
            rest = &tail[16..];
        } else {
            out.push_str("run_");
            rest = tail;
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn the_fixed_surface_is_three_tools_and_short_instructions() {
    let surface = tools::surface_json(&Limits::DEFAULT);
    expect_file!["../snapshots/surface.json"]
        .assert_eq(&format!("{}\n", serde_json::to_string_pretty(&surface).unwrap()));
    let tokens = capabilities_core::tokens::count(&surface.to_string());
    assert!(tokens <= 1_500, "the fixed surface is {tokens} tokens, over 1,500");
}

#[test]
fn an_empty_hub_through_the_sdk_client() {
    let home = hub_home();
    let seen = client(
        home.path(),
        json!([
            { "name": "execute", "arguments": { "code": "return 6*7" } },
            { "name": "execute", "arguments": { "code": "return ((" } },
            { "name": "execute", "arguments": { "code": "return 1", "resume": "run_0123456789abcdef" } },
            { "name": "search", "arguments": { "query": "create an issue" } },
            { "name": "describe", "arguments": {} },
            { "name": "execute", "arguments": { "resume": "run_0123456789abcdef" } },
            { "name": "execute", "arguments": { "resume": "../../etc/passwd" } },
        ]),
    );
    // What the client received is exactly what the definitions say.
    let listed = &seen["tools"];
    assert_eq!(listed, &tools::surface_json(&Limits::DEFAULT)["tools"]);
    assert_eq!(seen["instructions"], json!(tools::INSTRUCTIONS));
    assert_eq!(seen["server"]["name"], json!("capabilities"));
    let results = &seen["results"];
    assert_eq!(results[0]["structuredContent"]["status"], json!("completed"));
    assert_eq!(results[0]["structuredContent"]["result"], json!(42));
    expect![[r#"
        ok    {"runId":"run_…","status":"completed","result":42,"calls":[]}
        error {"runId":"run_…","status":"failed","error":{"code":"syntax_error","message":"syntax error: expected `)` but found `EOF` (line 1, column 10)","hint":"execute takes the body of an async function: statements, `await`, and a final `return`"},"calls":[]}
        error send either `code` (a new run) or `resume` (a runId to continue), not both
        ok    The hub has no sources yet, so there are no tools to search. Ask the user to add one with `capabilities hub add`.
        error describe takes `targets`: a list of 1 to 10 addresses (`github.createIssue`), namespaces (`github`) or type names (`github.Issue`)
        error {"runId":"run_…","status":"failed","error":{"code":"unknown_run","message":"there is no run `run_…`","hint":"resume takes the runId of an earlier execute; runs are kept for 7 days"},"calls":[]}
        error {"runId":"../../etc/passwd","status":"failed","error":{"code":"unknown_run","message":"there is no run `../../etc/passwd`","hint":"resume takes the runId of an earlier execute; runs are kept for 7 days"},"calls":[]}
    "#]]
    .assert_eq(&render(results));
}

/// A client that speaks 2025-06-18 gets that version back, the three tools, and a clean exit
/// when it closes stdin; stdout carries nothing but JSON-RPC lines.
#[test]
fn an_older_client_over_raw_json_rpc() {
    let home = hub_home();
    let mut child = serve_raw(home.path());
    let lines = [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "old", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"}),
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call",
               "params": {"name": "execute", "arguments": {"code": "return 'hi'"}}}),
        json!({"jsonrpc": "2.0", "id": 4, "method": "tools/call",
               "params": {"name": "configure", "arguments": {}}}),
    ];
    let mut stdin = child.stdin.take().unwrap();
    for line in &lines {
        writeln!(stdin, "{line}").unwrap();
    }
    // Give the answers time to arrive before stdin closes; the server must still finish them.
    std::thread::sleep(Duration::from_millis(300));
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the server exits cleanly at end of input");
    let answers = answers_by_id(&out.stdout);
    assert_eq!(answers[&1]["result"]["protocolVersion"], json!("2025-06-18"));
    let names: Vec<&str> = answers[&2]["result"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["search", "describe", "execute"]);
    assert_eq!(answers[&3]["result"]["structuredContent"]["result"], json!("hi"));
    assert_eq!(answers[&3]["result"]["isError"], json!(false));
    expect![[r#"{"content":[{"type":"text","text":"there is no tool `configure`: this server has `search`, `describe` and `execute`"}],"isError":true}"#]]
        .assert_eq(&answers[&4]["result"].to_string());
}

/// `hub serve --stdio` on `home`, its stdin and stdout piped for raw JSON-RPC lines.
fn serve_raw(home: &Path) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_capabilities"))
        .args(["hub", "serve", "--stdio"])
        .env("CAPABILITIES_HOME", home)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap()
}

/// The answers on a server's stdout, by request id.
fn answers_by_id(stdout: &[u8]) -> BTreeMap<u64, Value> {
    String::from_utf8_lossy(stdout)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("stdout holds only JSON-RPC lines"))
        .filter_map(|v| Some((v["id"].as_u64()?, v)))
        .collect()
}

/// A private temporary hub store (the store warns about directories others can read).
pub(crate) fn hub_home() -> tempfile::TempDir {
    use std::os::unix::fs::PermissionsExt;
    let home = tempfile::tempdir().unwrap();
    std::fs::set_permissions(home.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    home
}

fn write(home: &Path, relative: &str, value: &impl serde::Serialize) {
    use std::os::unix::fs::DirBuilderExt;
    let path = home.join(relative);
    std::fs::DirBuilder::new().recursive(true).mode(0o700).create(path.parent().unwrap()).unwrap();
    std::fs::write(path, serde_json::to_vec_pretty(value).unwrap()).unwrap();
}

/// A hub whose one source is the reference memory server, its tools reviewed as they are now.
pub(crate) fn memory_hub(home: &Path) {
    let script = packages().join("server-memory/dist/index.js");
    let spec = SourceSpec {
        namespace: "memory".to_owned(),
        transport: SourceTransport::Stdio {
            command: "node".to_owned(),
            args: vec![script.to_str().unwrap().to_owned()],
            env: BTreeMap::from([(
                "MEMORY_FILE_PATH".to_owned(),
                home.join("memory.jsonl").to_str().unwrap().to_owned(),
            )]),
            env_slots: Vec::new(),
            cwd: None,
            isolation: None,
        },
    };
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let entries = runtime.block_on(async {
        let pool =
            SourcePool::new(PoolOptions { start_timeout: Duration::from_secs(30), ..PoolOptions::default() });
        pool.list_tools(&spec, &Credentials::default()).await.expect("the memory server lists its tools")
    });
    let (manifest, problems) = Manifest::from_tools_list(Namespace::new("memory").unwrap(), &entries);
    assert!(problems.is_empty(), "{problems:?}");
    let policy = PolicyState {
        rules: Vec::new(),
        reviewed: manifest.tools.iter().map(|t| (manifest.address(t).to_string(), t.digest)).collect(),
        changes: Default::default(),
    };
    write(home, "sources/memory.json", &SourceRecord { spec, added_ms: 0 });
    write(home, "manifests/memory.json", &manifest);
    write(home, "policies/policy.json", &policy);
}

#[test]
fn a_hub_with_the_memory_server() {
    let home = hub_home();
    memory_hub(home.path());
    let seen = client(
        home.path(),
        json!([
            { "name": "search", "arguments": { "query": "create entities", "limit": 2 } },
            { "name": "execute", "arguments": { "code": "return await memory.readGraph({})" } },
            { "name": "execute", "arguments": { "code":
                "await memory.createEntities({entities:[{name:\"a\",entityType:\"t\",observations:[]}]})" } },
            // A second run reaches the same source: its connection outlives the first run.
            { "name": "execute", "arguments": { "code": "return (await memory.readGraph({})).entities.length" } },
        ]),
    );
    let results = &seen["results"];
    let search = results[0]["text"].as_str().unwrap();
    let line =
        search.lines().find(|l| l.contains("memory.createEntities(")).expect("search finds createEntities");
    assert!(line.ends_with("[asks]"), "{search}");
    assert_eq!(results[1]["structuredContent"]["status"], json!("completed"), "{}", results[1]);
    assert_eq!(results[1]["structuredContent"]["result"], json!({"entities": [], "relations": []}));
    let waiting = &results[2]["structuredContent"];
    assert_eq!(waiting["status"], json!("awaiting_approval"), "{waiting}");
    assert_eq!(results[2]["isError"], json!(false));
    let pending = waiting["pending"].as_array().unwrap();
    assert_eq!(pending.len(), 1, "{waiting}");
    assert_eq!(pending[0]["kind"], json!("approval"));
    assert_eq!(pending[0]["address"], json!("memory.createEntities"));
    assert_eq!(results[3]["structuredContent"]["status"], json!("completed"), "{}", results[3]);
    assert_eq!(results[3]["structuredContent"]["result"], json!(0));
    let text = waiting.to_string();
    assert!(!text.contains("http://") && !text.contains("https://"), "no URL reaches the model: {text}");
}

#[test]
fn an_oversized_message_is_answered_and_the_server_reads_on() {
    let home = hub_home();
    let mut child = serve_raw(home.path());
    let mut stdin = child.stdin.take().unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "big", "version": "0"}}});
    writeln!(stdin, "{initialize}").unwrap();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    let code = format!("return {:?}", "x".repeat(20 * 1024 * 1024));
    let big = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                     "params": {"name": "execute", "arguments": {"code": code}}});
    writeln!(stdin, "{big}").unwrap();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "id": 3, "method": "ping"})).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the server exits cleanly at end of input");
    let answers = answers_by_id(&out.stdout);
    assert_eq!(answers[&2]["error"]["code"], json!(-32600), "{:?}", answers.get(&2));
    let message = answers[&2]["error"]["message"].as_str().unwrap();
    assert!(message.contains("over the limit of 4194304"), "{message}");
    assert_eq!(answers[&3]["result"], json!({}), "the next message is read: {:?}", answers.get(&3));
    assert_eq!(std::fs::read_dir(home.path().join("runs")).map_or(0, |d| d.count()), 0, "nothing ran");
}

/// Over stdio a `tools/call` is answered by the thread that ran it while the server reads on:
/// calls sent together, runs and other requests mixed, each get exactly one answer, shaped for
/// the client's revision as rmcp shapes its own.
#[test]
fn calls_sent_together_get_one_answer_each() {
    let home = hub_home();
    memory_hub(home.path());
    let mut child = serve_raw(home.path());
    let mut stdin = child.stdin.take().unwrap();
    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "many", "version": "0"}}});
    writeln!(stdin, "{initialize}").unwrap();
    writeln!(stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"})).unwrap();
    let execute = |id: u64, code: &str| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "execute", "arguments": {"code": code}}})
    };
    let mut batch = String::new();
    for id in 2..22u64 {
        let line = match id % 4 {
            0 => execute(id, "return await memory.readGraph({})"),
            1 => execute(id, &format!("let s = 0; for (let i = 0; i < 200000; i++) s += i; return {id}")),
            2 => json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
                        "params": {"name": "search", "arguments": {"query": "read graph"}}}),
            _ => json!({"jsonrpc": "2.0", "id": id, "method": "ping"}),
        };
        batch.push_str(&format!("{line}\n"));
    }
    // All in one write: the server reads the next while it runs the first.
    stdin.write_all(batch.as_bytes()).unwrap();
    stdin.flush().unwrap();
    std::thread::sleep(Duration::from_secs(3));
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the server exits cleanly at end of input");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut ids: Vec<u64> = stdout
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).expect("stdout holds only JSON-RPC lines"))
        .map(|v| v["id"].as_u64().unwrap_or_else(|| panic!("only answers are written: {v}")))
        .collect();
    ids.sort_unstable();
    assert_eq!(ids, (1..22).collect::<Vec<u64>>(), "each request answered once: {stdout}");
    let answers = answers_by_id(&out.stdout);
    for id in (2..22u64).filter(|id| id % 4 == 0 || id % 4 == 1) {
        let result = &answers[&id]["result"];
        assert_eq!(result["structuredContent"]["status"], json!("completed"), "{result}");
        // 2025-06-18 predates the result's `resultType`: rmcp leaves it out, and so does an
        // answer written in place.
        assert!(result.get("resultType").is_none(), "{result}");
    }
    assert_eq!(answers[&5]["result"]["structuredContent"]["result"], json!(5));
    assert!(answers[&6]["result"]["content"][0]["text"].as_str().unwrap().contains("memory.readGraph"));
}

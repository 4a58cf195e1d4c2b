//! The MCP sources adapter against real servers: the npm reference servers over stdio, our
//! fixture server (`tests/fixtures/fixture-server.mjs`) over stdio and streamable HTTP, and
//! process trees checked in `/proc`.
//!
//! Needs Node.js on PATH and `cd node && npm ci` at the repository root; the tests fail (never
//! skip) without them.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use capabilities::upstream::{
    HeaderSlot, HealthState, PoolOptions, PooledUpstream, SourceError, SourcePool, SourceSpec,
    SourceTransport,
};
use capabilities_core::address::Namespace;
use capabilities_core::ports::{Credentials, Upstream, UpstreamError, UpstreamRequest};
use expect_test::expect;
use serde_json::{Value, json};

use crate::support::{HttpFixture, packages, repo};

fn stdio(
    namespace: &str,
    command: &str,
    args: &[&str],
    env: &[(&str, &str)],
    env_slots: &[&str],
) -> SourceSpec {
    SourceSpec {
        namespace: namespace.to_owned(),
        transport: SourceTransport::Stdio {
            command: command.to_owned(),
            args: args.iter().map(|a| (*a).to_owned()).collect(),
            env: env.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect::<BTreeMap<_, _>>(),
            env_slots: env_slots.iter().map(|s| (*s).to_owned()).collect(),
            cwd: None,
            isolation: None,
        },
    }
}

fn everything(namespace: &str) -> SourceSpec {
    let script = packages().join("server-everything/dist/index.js");
    stdio(namespace, "node", &[script.to_str().unwrap()], &[], &["API_TOKEN"])
}

/// The fixture server over stdio, with extra plain environment.
fn fixture(namespace: &str, env: &[(&str, &str)]) -> SourceSpec {
    let sdk = packages().join("sdk");
    let script = repo().join("local/tests/fixtures/fixture-server.mjs");
    let mut all = vec![("MCP_SDK_DIR", sdk.to_str().unwrap())];
    all.extend_from_slice(env);
    stdio(namespace, "node", &[script.to_str().unwrap()], &all, &["FIXTURE_TOKEN"])
}

fn none() -> Credentials {
    Credentials::default()
}

fn creds(connection: &str, values: &[(&str, &str)]) -> Credentials {
    Credentials {
        connection: Some(connection.to_owned()),
        values: values.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect(),
    }
}

fn pool() -> SourcePool {
    SourcePool::new(PoolOptions { start_timeout: Duration::from_secs(30), ..PoolOptions::default() })
}

fn quick_pool() -> SourcePool {
    SourcePool::new(PoolOptions { start_timeout: Duration::from_millis(1500), ..PoolOptions::default() })
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().map(|t| t["name"].as_str().unwrap_or("?")).collect()
}

/// The text of a `CallToolResult`'s first content block, parsed as JSON when it is.
fn first_text(result: &Value) -> Value {
    let text = result["content"][0]["text"].as_str().unwrap_or_default();
    serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned()))
}

async fn call(
    pool: &SourcePool,
    ns: &str,
    tool: &str,
    args: Value,
    credentials: &Credentials,
    ms: u64,
) -> Result<Value, SourceError> {
    pool.call_tool(ns, tool, &args, credentials, Duration::from_millis(ms)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lists_the_tools_of_server_everything_exactly_as_sent() {
    let pool = pool();
    let tools = pool.list_tools(&everything("everything"), &none()).await.unwrap();
    // The recording advertised client capabilities that unlock more tools; the hub offers none,
    // so it sees a subset, and each entry must be byte-for-byte the recorded one.
    let recorded: Vec<Value> =
        serde_json::from_str(include_str!("../../../core/tests/data/tools/everything.json")).unwrap();
    for tool in &tools {
        let same = recorded.iter().find(|r| r["name"] == tool["name"]);
        assert_eq!(Some(tool), same, "tool {} differs from the recording", tool["name"]);
    }
    expect![[r#"
        [
            "echo",
            "get-annotated-message",
            "get-env",
            "get-resource-links",
            "get-resource-reference",
            "get-structured-content",
            "get-sum",
            "get-tiny-image",
            "gzip-file-as-resource",
            "toggle-simulated-logging",
            "toggle-subscriber-updates",
            "trigger-long-running-operation",
            "simulate-research-query",
        ]
    "#]]
    .assert_debug_eq(&names(&tools));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn follows_pages_and_keeps_fields_the_client_model_does_not_know() {
    let pool = pool();
    let tools = pool.list_tools(&fixture("fixture", &[]), &none()).await.unwrap();
    expect![[r#"
        [
            "env",
            "sleep",
            "headers",
            "pad_1",
            "pad_2",
            "pad_3",
        ]
    "#]]
    .assert_debug_eq(&names(&tools));
    expect![[r#"{"name":"pad_3","description":"Filler three.","inputSchema":{"type":"object","properties":{}},"annotations":{"readOnlyHint":true,"x-custom-hint":7},"execution":{"taskSupport":"forbidden"},"x-vendor":{"shelf":"pad_3"}}"#]]
        .assert_eq(&tools[5].to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_memory_creates_entities_and_reads_them_back() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("memory.jsonl");
    let script = packages().join("server-memory/dist/index.js");
    let spec = stdio(
        "memory",
        "node",
        &[script.to_str().unwrap()],
        &[("MEMORY_FILE_PATH", file.to_str().unwrap())],
        &[],
    );
    let pool = pool();
    let tools = pool.list_tools(&spec, &none()).await.unwrap();
    assert!(names(&tools).contains(&"create_entities"), "{:?}", names(&tools));
    pool.register(spec);
    let entities = json!({"entities": [{"name": "Ada", "entityType": "person", "observations": ["wrote the first program"]}]});
    let created = call(&pool, "memory", "create_entities", entities, &none(), 10_000).await.unwrap();
    assert_ne!(created["isError"], json!(true), "{created}");
    let graph = call(&pool, "memory", "read_graph", json!({}), &none(), 10_000).await.unwrap();
    expect![[r#"{"entities":[{"name":"Ada","entityType":"person","observations":["wrote the first program"]}],"relations":[]}"#]]
        .assert_eq(&graph["structuredContent"].to_string());
    assert!(file.is_file(), "the memory file was not written where MEMORY_FILE_PATH said");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_outlives_its_timeout_fails_and_the_source_keeps_working() {
    let pool = pool();
    pool.register(everything("everything"));
    let started = Instant::now();
    let slow = json!({"duration": 10, "steps": 5});
    let error =
        call(&pool, "everything", "trigger-long-running-operation", slow, &none(), 700).await.unwrap_err();
    expect!["source `everything` did not answer `tools/call` within 700 ms"].assert_eq(&error.to_string());
    assert!(started.elapsed() < Duration::from_secs(8), "the timeout did not cut the call short");
    let groups = pool.process_groups("everything");
    let echoed =
        call(&pool, "everything", "echo", json!({"message": "still here"}), &none(), 10_000).await.unwrap();
    expect![["Echo: still here"]].assert_eq(first_text(&echoed).as_str().unwrap());
    assert_eq!(pool.process_groups("everything"), groups, "the timeout restarted the server");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_port_maps_timeouts_and_returns_raw_results() {
    let pool = pool();
    pool.register(fixture("fixture", &[]));
    let upstream = PooledUpstream::new(pool.clone(), tokio::runtime::Handle::current());
    let namespace = Namespace::new("fixture").unwrap();
    let credentials = none();
    let request = |tool, arguments, timeout_ms| UpstreamRequest {
        namespace: &namespace,
        tool,
        http: None,
        arguments,
        credentials: &credentials,
        timeout_ms,
    };
    let fast = json!({"ms": 0});
    let slow = json!({"ms": 5_000});
    let result = Upstream::call(&upstream, request("sleep", &fast, 10_000)).await.unwrap();
    expect![[r#"{"content":[{"type":"text","text":"\"slept\""}]}"#]].assert_eq(&result.to_string());
    let timed_out = Upstream::call(&upstream, request("sleep", &slow, 300)).await.unwrap_err();
    assert_eq!(timed_out, UpstreamError::Timeout(300));
    let unknown = Namespace::new("nowhere").unwrap();
    let missing = Upstream::call(
        &upstream,
        UpstreamRequest {
            namespace: &unknown,
            tool: "x",
            http: None,
            arguments: &fast,
            credentials: &credentials,
            timeout_ms: 100,
        },
    )
    .await
    .unwrap_err();
    expect!["the source is unavailable: no source is registered under `nowhere`; add it with `capabilities hub add`"]
        .assert_eq(&missing.to_string());
}

/// A run thread calls a stdio server that is running over its lane, on its own runtime: the
/// same results and the same errors as through the pool's runtime, timeouts cancelled, long
/// requests whole, and a server that dies mid-call reported and restarted.
#[test]
fn calls_to_a_running_stdio_server_go_over_its_lane_with_the_same_answers() {
    let sources = tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
    let mark = marker("lane");
    let pool = pool();
    pool.register(family("lane", &mark));
    let upstream = PooledUpstream::new(pool.clone(), sources.handle().clone());
    // As a run thread: a runtime of its own, driven only while a run goes on.
    let run = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let namespace = Namespace::new("lane").unwrap();
    let credentials = none();
    let upstream_call = |tool: &str, arguments: Value, timeout_ms| {
        let request = UpstreamRequest {
            namespace: &namespace,
            tool,
            http: None,
            arguments: &arguments,
            credentials: &credentials,
            timeout_ms,
        };
        // Asked inside the run's runtime, as the engine asks.
        run.block_on(async { Upstream::call(&upstream, request).await })
    };
    let through_pool = |tool: &str, arguments: Value| {
        sources.block_on(call(&pool, "lane", tool, arguments, &none(), 10_000))
    };
    let in_place = |tool: &str, arguments: Value, ms| {
        let call = pool.call_tool_in_place("lane", tool, &arguments, &none(), Duration::from_millis(ms));
        run.block_on(call.expect("the running server has a lane"))
    };

    // Not started: nothing in place; the first call starts the server through the pool.
    assert!(pool.call_tool_in_place("lane", "sleep", &json!({}), &none(), Duration::from_secs(1)).is_none());
    let first = upstream_call("request_id", json!({}), 10_000).unwrap();
    assert!(first_text(&first).is_number(), "rmcp numbers its requests: {first}");
    let groups = pool.process_groups("lane");

    // Running: the call goes over the lane, with the lane's id, and answers as through the pool.
    let id = upstream_call("request_id", json!({}), 10_000).unwrap();
    assert!(first_text(&id).as_str().is_some_and(|id| id.starts_with("lane-")), "{id}");
    assert_eq!(
        in_place("sleep", json!({"ms": 0}), 10_000).unwrap(),
        through_pool("sleep", json!({"ms": 0})).unwrap()
    );
    let refused = in_place("refuse", json!({"message": "not that"}), 10_000).unwrap_err();
    assert_eq!(
        refused.to_string(),
        through_pool("refuse", json!({"message": "not that"})).unwrap_err().to_string()
    );
    expect!["source `lane` refused `tools/call`: MCP error -32602: not that"].assert_eq(&refused.to_string());
    let not_object = in_place("sleep", json!([1]), 10_000).unwrap_err();
    assert_eq!(not_object.to_string(), through_pool("sleep", json!([1])).unwrap_err().to_string());

    // A request longer than one pipe write goes whole, and so do the calls after it.
    let long = "x".repeat(200_000);
    assert_eq!(first_text(&in_place("size", json!({"text": long}), 10_000).unwrap()), json!(200_000));
    assert_eq!(first_text(&in_place("sleep", json!({"ms": 0}), 10_000).unwrap()), json!("slept"));

    // A timeout cancels the call and leaves the server running for the next one.
    assert_eq!(upstream_call("sleep", json!({"ms": 5_000}), 300).unwrap_err(), UpstreamError::Timeout(300));
    assert_eq!(first_text(&upstream_call("sleep", json!({"ms": 0}), 10_000).unwrap()), json!("slept"));
    assert_eq!(pool.process_groups("lane"), groups, "the timeout restarted the server");

    // The server dies while a call waits: the call says so at once, and the next call starts
    // a new server through the pool.
    let node = marked_processes(&mark)
        .into_iter()
        .find(|p| p.contains("fixture-server.mjs") && !p.contains("sh -c"))
        .unwrap();
    let pid = node.split(' ').next().unwrap().to_owned();
    let killer = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        Command::new("kill").args(["-KILL", &pid]).status().unwrap();
    });
    let started = Instant::now();
    let died = in_place("sleep", json!({"ms": 20_000}), 30_000).unwrap_err();
    killer.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10), "the call waited for its timeout");
    assert!(matches!(died, SourceError::Unavailable { .. }), "{died}");
    let again = upstream_call("sleep", json!({"ms": 0}), 10_000).unwrap();
    assert_eq!(first_text(&again), json!("slept"));
    assert_ne!(pool.process_groups("lane"), groups, "the dead server was not replaced");

    // A server that stops reading its stdin: the pipe fills, and the timeout still ends the
    // call, long request or short.
    assert_eq!(first_text(&in_place("stop_reading", json!({}), 10_000).unwrap()), json!("paused"));
    for text in ["x".repeat(300_000), "short".to_owned()] {
        let started = Instant::now();
        let stuck = in_place("size", json!({ "text": text }), 500).unwrap_err();
        expect!["source `lane` did not answer `tools/call` within 500 ms"].assert_eq(&stuck.to_string());
        assert!(started.elapsed() < Duration::from_secs(5), "the timeout did not cut the write short");
    }
    drop((pool, upstream));
    assert_eq!(wait_until_gone(&mark), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_command_that_does_not_exist_is_a_clear_error() {
    let pool = quick_pool();
    let error = pool
        .list_tools(&stdio("ghost", "no-such-mcp-server-7f3a", &[], &[], &[]), &none())
        .await
        .unwrap_err();
    expect!["source `ghost` did not start: command `no-such-mcp-server-7f3a` was not found on PATH; install it or give its full path"]
        .assert_eq(&error.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_on_stdout_is_reported_as_not_mcp() {
    let pool = quick_pool();
    let spec = stdio(
        "noisy",
        "sh",
        &["-c", "echo 'Server ready on port 8080'; echo 'and more'; sleep 30"],
        &[],
        &[],
    );
    let error = pool.list_tools(&spec, &none()).await.unwrap_err();
    expect!["source `noisy` answered something that is not MCP: it wrote `Server ready on port 8080` to stdout (and 1 more such lines); a stdio server may write only MCP messages there"]
        .assert_eq(&error.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_at_start_is_reported_with_its_status_and_stderr() {
    let pool = pool();
    let bad = stdio(
        "broken",
        "sh",
        &["-c", "echo 'starting'; echo 'error: cannot open database' >&2; exit 3"],
        &[],
        &[],
    );
    pool.register(bad.clone());
    pool.register(fixture("fixture", &[]));
    let error = pool.list_tools(&bad, &none()).await.unwrap_err();
    expect!["source `broken` answered something that is not MCP: it wrote `starting` to stdout; a stdio server may write only MCP messages there; its last stderr line: error: cannot open database"]
        .assert_eq(&error.to_string());
    let bad = stdio("broken", "sh", &["-c", "echo 'error: cannot open database' >&2; exit 3"], &[], &[]);
    let error = pool.list_tools(&bad, &none()).await.unwrap_err();
    expect!["source `broken` did not start: it exited (exit status: 3) before answering `initialize`; its last stderr line: error: cannot open database"]
        .assert_eq(&error.to_string());
    let Some(health) = pool.health("broken") else { panic!("no health for a registered source") };
    assert!(
        matches!(&health.state, HealthState::Failed { reason } if reason.contains("exit status: 3")),
        "{health:?}"
    );
    assert!(health.stderr_tail.ends_with("error: cannot open database\n"), "{health:?}");
    // Another source is not disturbed.
    assert_eq!(pool.list_tools(&fixture("fixture", &[]), &none()).await.unwrap().len(), 6);
    assert_eq!(pool.health("fixture").unwrap().state, HealthState::Running { connections: 1 });
    assert_eq!(pool.health("unknown"), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_start_is_tried_again_by_the_next_request() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("start-server");
    let spec = stdio("later", script.to_str().unwrap(), &[], &[], &[]);
    let pool = pool();
    pool.register(spec.clone());
    assert_eq!(pool.health("later").unwrap().state, HealthState::NotStarted);
    let error = pool.list_tools(&spec, &none()).await.unwrap_err();
    assert!(matches!(error, SourceError::Start { .. }), "{error}");
    assert!(matches!(pool.health("later").unwrap().state, HealthState::Failed { .. }));
    let fixture = repo().join("local/tests/fixtures/fixture-server.mjs");
    let sdk = packages().join("sdk");
    std::fs::write(
        &script,
        format!("#!/bin/sh\nMCP_SDK_DIR='{}' exec node '{}'\n", sdk.display(), fixture.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    assert_eq!(pool.list_tools(&spec, &none()).await.unwrap().len(), 6);
    assert_eq!(pool.health("later").unwrap().state, HealthState::Running { connections: 1 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_reach_the_server_through_its_env_slots_and_nothing_else_does() {
    let pool = pool();
    pool.register(everything("everything"));
    let work = creds("work", &[("API_TOKEN", "tok-work-1"), ("NOT_A_SLOT", "x")]);
    let result = call(&pool, "everything", "get-env", json!({}), &work, 10_000).await.unwrap();
    let env = first_text(&result);
    assert_eq!(env["API_TOKEN"], json!("tok-work-1"));
    let allowed = [
        "PATH",
        "HOME",
        "USER",
        "LOGNAME",
        "SHELL",
        "TERM",
        "LANG",
        "LC_ALL",
        "LC_CTYPE",
        "TMPDIR",
        "TZ",
        "API_TOKEN",
        "PWD", // set by the supervisor shell
    ];
    let keys: Vec<&String> = env.as_object().unwrap().keys().collect();
    let extra: Vec<&&String> = keys.iter().filter(|k| !allowed.contains(&k.as_str())).collect();
    assert!(extra.is_empty(), "the server saw more than its base and its slots: {extra:?}");
    // Another connection is another server, with its own value.
    let home = creds("home", &[("API_TOKEN", "tok-home-2")]);
    let result = call(&pool, "everything", "get-env", json!({}), &home, 10_000).await.unwrap();
    assert_eq!(first_text(&result)["API_TOKEN"], json!("tok-home-2"));
    assert_eq!(pool.process_groups("everything").len(), 2);
    assert_eq!(pool.health("everything").unwrap().state, HealthState::Running { connections: 2 });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_stderr_tail_is_kept_with_credentials_scrubbed() {
    let pool = pool();
    let spec = fixture("fixture", &[]);
    pool.list_tools(&spec, &creds("default", &[("FIXTURE_TOKEN", "s3cret-value")])).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while !pool.stderr_tail("fixture").contains('\n') && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    expect![[r#"
        fixture starting token=[secret]
    "#]]
    .assert_eq(&pool.stderr_tail("fixture"));
}

/// Processes (not zombies) whose environment holds `CAPABILITIES_TEST_MARKER=<marker>`.
fn marked_processes(marker: &str) -> Vec<String> {
    let needle = format!("CAPABILITIES_TEST_MARKER={marker}");
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if !environ.split(|&b| b == 0).any(|var| var == needle.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()).unwrap_or("?");
        if state != "Z" && state != "X" {
            let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
            found.push(format!("{pid} {}", String::from_utf8_lossy(&cmdline).replace('\0', " ").trim()));
        }
    }
    found
}

fn wait_until_gone(marker: &str) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let left = marked_processes(marker);
        if left.is_empty() || Instant::now() > deadline {
            return left;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn marker(name: &str) -> String {
    format!("{name}-{}-{:?}", std::process::id(), Instant::now())
}

/// The fixture with a `sleep` grandchild, all marked.
fn family(namespace: &str, marker: &str) -> SourceSpec {
    fixture(namespace, &[("CAPABILITIES_TEST_MARKER", marker), ("FIXTURE_SPAWN_CHILD", "1")])
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_source_or_dropping_the_pool_kills_its_whole_tree() {
    let removed = marker("remove");
    let dropped = marker("drop");
    let pool = pool();
    pool.list_tools(&family("a", &removed), &none()).await.unwrap();
    pool.list_tools(&family("b", &dropped), &none()).await.unwrap();
    // sh (the supervisor), node, and node's sleep child.
    assert_eq!(marked_processes(&removed).len(), 3, "{:?}", marked_processes(&removed));
    assert!(pool.remove("a"));
    assert_eq!(wait_until_gone(&removed), Vec::<String>::new());
    assert_eq!(marked_processes(&dropped).len(), 3, "{:?}", marked_processes(&dropped));
    drop(pool);
    assert_eq!(wait_until_gone(&dropped), Vec::<String>::new());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_dies_takes_its_children_and_is_restarted_on_next_use() {
    let mark = marker("crash");
    let pool = pool();
    let spec = family("crashy", &mark);
    pool.register(spec.clone());
    pool.list_tools(&spec, &none()).await.unwrap();
    let node = marked_processes(&mark)
        .into_iter()
        .find(|p| p.contains("fixture-server.mjs") && !p.contains("sh -c"))
        .unwrap();
    let pid = node.split(' ').next().unwrap();
    Command::new("kill").args(["-KILL", pid]).status().unwrap();
    assert_eq!(wait_until_gone(&mark), Vec::<String>::new(), "the crashed server's children survived");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !matches!(pool.health("crashy").unwrap().state, HealthState::Failed { .. })
        && Instant::now() < deadline
    {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(
        matches!(pool.health("crashy").unwrap().state, HealthState::Failed { ref reason } if reason.contains("signal: 9")
        || reason.contains("exit")),
        "{:?}",
        pool.health("crashy")
    );
    assert_eq!(pool.list_tools(&spec, &none()).await.unwrap().len(), 6);
    assert_eq!(marked_processes(&mark).len(), 3);
}

const HELPER_DIR: &str = "CAPABILITIES_REAP_HELPER_DIR";

/// Not a test on its own: the body of the process that `a_sigkilled_hub_leaves_no_server_behind`
/// starts (this binary, re-run with `HELPER_DIR` set) and kills. Without it, it returns at once.
#[test]
fn reap_helper() {
    let Some(dir) = std::env::var_os(HELPER_DIR) else { return };
    let dir = PathBuf::from(dir);
    let mark = std::fs::read_to_string(dir.join("marker")).unwrap();
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let pool = pool();
        pool.list_tools(&family("victim", &mark), &none()).await.unwrap();
        std::fs::write(dir.join("ready"), "ready").unwrap();
        tokio::time::sleep(Duration::from_secs(600)).await;
        drop(pool);
    });
}

#[test]
fn a_sigkilled_hub_leaves_no_server_behind() {
    packages();
    let dir = tempfile::tempdir().unwrap();
    let mark = marker("sigkill");
    std::fs::write(dir.path().join("marker"), &mark).unwrap();
    let mut hub = Command::new(std::env::current_exe().unwrap())
        .args(["upstream::reap_helper", "--exact", "--nocapture", "--test-threads=1"])
        .env(HELPER_DIR, dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.path().join("ready").exists() {
        if Instant::now() > deadline || hub.try_wait().unwrap().is_some() {
            let _ = hub.kill();
            panic!("the helper hub did not start its source");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let alive = marked_processes(&mark);
    assert_eq!(alive.len(), 3, "{alive:?}");
    hub.kill().unwrap(); // SIGKILL: no destructor runs in the hub
    hub.wait().unwrap();
    assert_eq!(wait_until_gone(&mark), Vec::<String>::new(), "servers outlived a SIGKILLed hub");
}

impl HttpFixture {
    fn spec(&self, namespace: &str, path: &str) -> SourceSpec {
        SourceSpec {
            namespace: namespace.to_owned(),
            transport: SourceTransport::Http {
                url: format!("http://127.0.0.1:{}{path}", self.port),
                header_slots: vec![
                    HeaderSlot::bearer(),
                    HeaderSlot { name: "X-Api-Key".to_owned(), prefix: String::new() },
                ],
            },
        }
    }

    async fn seen_by_other_origin(&self) -> Value {
        let url = format!("http://localhost:{}/seen", self.other);
        let body = reqwest::get(url).await.unwrap().text().await.unwrap();
        serde_json::from_str(&body).unwrap()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_sources_list_raw_and_call_with_their_header_credentials() {
    let server = HttpFixture::start();
    let pool = pool();
    let keys = creds("default", &[("Authorization", "tok-http"), ("X-Api-Key", "key-1")]);
    for (namespace, path) in [("sse", "/mcp"), ("jsonmode", "/mcp-json")] {
        let spec = server.spec(namespace, path);
        let tools = pool.list_tools(&spec, &keys).await.unwrap();
        assert_eq!(names(&tools), ["env", "sleep", "headers", "pad_1", "pad_2", "pad_3"], "{namespace}");
        assert_eq!(tools[0]["x-vendor"], json!({"shelf": "env"}), "{namespace}: entries are not raw");
        assert_eq!(tools[0]["execution"], json!({"taskSupport": "forbidden"}), "{namespace}");
        pool.register(spec);
        let result = call(&pool, namespace, "headers", json!({}), &keys, 10_000).await.unwrap();
        let headers = first_text(&result);
        assert_eq!(headers["authorization"], json!("Bearer tok-http"), "{namespace}: {headers}");
        assert_eq!(headers["x-api-key"], json!("key-1"), "{namespace}");
        assert!(
            !result.to_string().contains("do-not-leak"),
            "{namespace}: a response header reached the result"
        );
        let error = call(&pool, namespace, "sleep", json!({"ms": 5_000}), &keys, 300).await.unwrap_err();
        assert_eq!(
            error,
            SourceError::Timeout {
                namespace: namespace.to_owned(),
                method: "tools/call".to_owned(),
                ms: 300
            }
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_credentials_never_follow_a_redirect_to_another_origin() {
    let server = HttpFixture::start();
    let pool = pool();
    let keys = creds("default", &[("Authorization", "tok-http"), ("X-Api-Key", "key-1")]);
    let error = pool.list_tools(&server.spec("away", "/other-origin"), &keys).await.unwrap_err();
    let text = error.to_string();
    assert!(matches!(error, SourceError::Start { .. }), "{text}");
    assert!(text.contains("307"), "{text}");
    assert!(!text.contains("tok-http") && !text.contains("key-1"), "{text}");
    assert_eq!(server.seen_by_other_origin().await, json!([]), "a request reached the other origin");
    // A redirect on the same origin keeps method and body and is followed.
    let tools = pool.list_tools(&server.spec("same", "/same-origin"), &keys).await.unwrap();
    assert_eq!(tools.len(), 6);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_sources_must_be_https_unless_on_loopback() {
    let pool = quick_pool();
    let spec = SourceSpec {
        namespace: "remote".to_owned(),
        transport: SourceTransport::Http {
            url: "http://mcp.example.com/mcp".to_owned(),
            header_slots: vec![],
        },
    };
    let error = pool.list_tools(&spec, &none()).await.unwrap_err();
    expect!["source `remote` is misconfigured: its URL `http://mcp.example.com/mcp` is plain http to another machine; use https"]
        .assert_eq(&error.to_string());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn server_everything_over_streamable_http_with_a_session() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let script = packages().join("server-everything/dist/index.js");
    let child = Command::new("node")
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let server = HttpFixture { child, port, other: 0 };
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "server-everything did not listen on {port}");
        std::thread::sleep(Duration::from_millis(50));
    }
    let pool = pool();
    let spec = server.spec("everything", "/mcp");
    let tools = pool.list_tools(&spec, &none()).await.unwrap();
    assert!(names(&tools).contains(&"echo"), "{:?}", names(&tools));
    assert_eq!(tools[0]["execution"], json!({"taskSupport": "forbidden"}), "entries are not raw");
    pool.register(spec);
    let echoed =
        call(&pool, "everything", "echo", json!({"message": "over http"}), &none(), 10_000).await.unwrap();
    expect![["Echo: over http"]].assert_eq(first_text(&echoed).as_str().unwrap());
    let slow = json!({"duration": 10, "steps": 5});
    let error =
        call(&pool, "everything", "trigger-long-running-operation", slow, &none(), 500).await.unwrap_err();
    assert!(matches!(error, SourceError::Timeout { .. }), "{error}");
}

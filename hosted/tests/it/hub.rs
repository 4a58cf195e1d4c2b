//! The hosted hub end to end: workerd on loopback, the tenant's Durable Object on disk.

use std::time::{Duration, Instant};

use capabilities_core::address::ToolAddress;
use capabilities_core::limits::Limits;
use capabilities_core::manifest::Manifest;
use capabilities_core::policy::{Effect, PolicyState, Rule};
use serde_json::{Value, json};

use crate::support::{Upstream, Workerd, repo};

/// A load with one source, every tool reviewed, and `allow` rules for `allowed` tools.
pub(crate) fn load_one(namespace: &str, upstream: &Upstream, manifest: &Manifest, allowed: &[&str]) -> Value {
    let mut policy = PolicyState::default();
    for tool in &manifest.tools {
        policy.reviewed.insert(manifest.address(tool).to_string(), tool.digest);
    }
    for tool in allowed {
        let address = ToolAddress::parse(&format!("{namespace}.{tool}")).unwrap();
        policy.rules.push(Rule::on_tool(address, Effect::Allow));
    }
    json!({
        "sources": [{
            "namespace": namespace,
            "url": format!("{}/mcp", upstream.origin()),
            "reviewedOrigin": upstream.origin(),
            "manifest": manifest,
        }],
        "policy": policy,
    })
}

/// Loads `load` into `tenant`'s object and checks the Worker took it.
pub(crate) fn loaded(hub: &Workerd, tenant: &str, load: &Value) {
    let (status, text) = hub.load(tenant, load);
    assert_eq!(status, 200, "{text}");
}

fn temp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

/// A fresh workerd (its storage in `dir`) beside `counter`, and the one-source load of the
/// counter with its live manifest, to adjust before [`loaded`] takes it into tenant `acme`.
struct CounterHub {
    hub: Workerd,
    counter: Upstream,
    load: Value,
    dir: tempfile::TempDir,
}

fn counter_hub(counter: Upstream) -> CounterHub {
    let manifest = counter.manifest("counter");
    let load = load_one("counter", &counter, &manifest, &[]);
    let dir = temp();
    let hub = Workerd::start(dir.path());
    CounterHub { hub, counter, load, dir }
}

#[test]
fn initialize_and_tools_list_are_the_local_hubs() {
    let dir = temp();
    let hub = Workerd::start(dir.path());
    let snapshot: Value = serde_json::from_str(
        &std::fs::read_to_string(repo().join("local/tests/snapshots/surface.json")).unwrap(),
    )
    .unwrap();
    for version in ["2025-11-25", "2026-07-28"] {
        let init = hub.rpc(
            "acme",
            "initialize",
            json!({"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}),
        );
        assert_eq!(init["protocolVersion"], version);
        assert_eq!(init["instructions"], snapshot["instructions"]);
        // Resources: a handle's parts and the skills' files, read with `resources/read`; the
        // Skills extension with `resources/directory/read`.
        assert_eq!(
            init["capabilities"],
            json!({
                "tools": {},
                "resources": {},
                "extensions": {"io.modelcontextprotocol/skills": {"directoryRead": true}},
            })
        );
    }
    assert_eq!(hub.rpc("acme", "ping", json!({})), json!({}));
    let listed = hub.rpc("acme", "tools/list", json!({}));
    assert_eq!(listed["tools"], snapshot["tools"]);
    assert_eq!(
        listed["tools"],
        json!(capabilities_core::surface::tools::definitions(&Limits::DEFAULT)),
        "the core's definitions are what local serves"
    );
}

#[test]
fn execute_return_1() {
    let dir = temp();
    let hub = Workerd::start(dir.path());
    let envelope = hub.execute("acme", json!({"code": "return 1"}));
    assert_eq!(envelope["status"], "completed", "{envelope}");
    assert_eq!(envelope["result"], 1);
    let search = hub.rpc("acme", "tools/call", json!({"name": "search", "arguments": {"query": "anything"}}));
    assert_eq!(search["isError"], false, "{search}");
}

#[test]
fn execute_calls_server_everything_over_http() {
    let everything = Upstream::everything();
    let manifest = everything.manifest("everything");
    let dir = temp();
    let hub = Workerd::start(dir.path());
    loaded(&hub, "acme", &load_one("everything", &everything, &manifest, &["echo"]));
    let envelope =
        hub.execute("acme", json!({"code": "return await everything.echo({message: 'through workerd'})"}));
    assert_eq!(envelope["status"], "completed", "{envelope}");
    assert!(envelope["result"].to_string().contains("Echo: through workerd"), "{envelope}");
    // The surface reads the same catalog.
    let found =
        hub.rpc("acme", "tools/call", json!({"name": "search", "arguments": {"query": "echo a message"}}));
    assert!(found["content"][0]["text"].as_str().unwrap().contains("everything.echo"), "{found}");
    // Another tenant has none of it.
    let other = hub.execute("other", json!({"code": "return typeof everything"}));
    assert_eq!(other["result"], "undefined", "{other}");
}

#[test]
fn a_write_waits_for_approval_and_nothing_goes_upstream() {
    let CounterHub { hub, counter, load, dir: _dir } = counter_hub(Upstream::counter());
    loaded(&hub, "acme", &load);
    let envelope = hub.execute(
        "acme",
        json!({"code": "await counter.count({}); return await counter.write({text: 'hi'})"}),
    );
    assert_eq!(envelope["status"], "awaiting_approval", "{envelope}");
    assert_eq!(envelope["pending"][0]["address"], "counter.write", "{envelope}");
    // The model is told where a person decides here: the admin endpoint, not the local CLI.
    let message = envelope["pending"][0]["message"].as_str().unwrap();
    let run = envelope["runId"].as_str().unwrap();
    assert!(message.contains(&format!(r#"`POST /t/acme/admin/approve {{"run": "{run}"}}`"#)), "{message}");
    assert!(!message.contains("capabilities hub approve"), "{message}");
    assert_eq!(counter.calls(), json!({"count": 1}));
    // Asking again does not run anything again.
    let again = hub.execute("acme", json!({"resume": envelope["runId"]}));
    assert_eq!(again["status"], "awaiting_approval", "{again}");
    assert_eq!(counter.calls(), json!({"count": 1}));
}

#[test]
fn a_killed_workerd_resumes_from_its_journal_without_repeating_a_call() {
    let CounterHub { hub, counter, load, dir } = counter_hub(Upstream::counter());
    loaded(&hub, "acme", &load);
    let port = hub.port;
    let code = "const n = await counter.count({}); \
                let slow; try { slow = await counter.slow({ms: 20000}); } catch (e) { slow = e.code; } \
                return {n, slow, after: await counter.count({})};";
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": "execute", "arguments": {"code": code}}});
    let running =
        std::thread::spawn(move || crate::support::post(port, "/t/acme/mcp", None, &body.to_string()));
    let deadline = Instant::now() + Duration::from_secs(30);
    while counter.calls().get("slow").is_none() {
        assert!(Instant::now() < deadline, "the slow call never reached the upstream");
        std::thread::sleep(Duration::from_millis(20));
    }
    hub.kill();
    let _ = running.join();
    let hub = Workerd::start(dir.path());
    let runs = hub.runs("acme");
    assert_eq!(runs[0]["status"], "running", "{runs}");
    let resumed = hub.execute("acme", json!({"resume": runs[0]["runId"]}));
    assert_eq!(resumed["status"], "completed", "{resumed}");
    // The first count came from the journal; the lost slow call was not made again.
    assert_eq!(resumed["result"], json!({"n": "1", "slow": "outcome_unknown", "after": "2"}), "{resumed}");
    assert_eq!(counter.calls(), json!({"count": 2, "slow": 1}));
}

#[test]
fn a_guest_infinite_loop_ends_with_the_limit_error_and_workerd_keeps_answering() {
    let dir = temp();
    let hub = Workerd::start(dir.path());
    let started = Instant::now();
    let envelope = hub.execute("acme", json!({"code": "while (true) {}"}));
    let took = started.elapsed();
    assert_eq!(envelope["status"], "failed", "{envelope}");
    assert_eq!(envelope["error"]["code"], "compute_limit", "{envelope}");
    eprintln!("while(true) stopped after {took:?}");
    assert_eq!(hub.rpc("acme", "ping", json!({})), json!({}));
    assert_eq!(hub.execute("acme", json!({"code": "return 2"}))["result"], 2);
}

#[test]
fn the_admin_endpoint_needs_its_token_and_refuses_unreviewed_origins() {
    let dir = temp();
    let hub = Workerd::start(dir.path());
    let (status, _) = crate::support::post(hub.port, "/t/acme/admin/load", Some("wrong"), "{}");
    assert_eq!(status, 401);
    let (status, _) = crate::support::post(hub.port, "/t/acme/admin/load", None, "{}");
    assert_eq!(status, 401);
    let counter = Upstream::counter();
    let manifest = counter.manifest("counter");
    let mut load = load_one("counter", &counter, &manifest, &[]);
    load["sources"][0]["reviewedOrigin"] = json!("http://127.0.0.2:1");
    let (status, text) = hub.load("acme", &load);
    assert_eq!(status, 400);
    assert!(text.contains("not on the reviewed origin"), "{text}");
}

#[test]
fn credentials_are_sealed_at_rest_scrubbed_and_never_follow_a_redirect_to_another_origin() {
    let counter = Upstream::counter();
    let manifest = counter.manifest("counter");
    let dir = temp();
    let hub = Workerd::start(dir.path());
    let secret = "s3cret-value-8f2d41";
    let mut load = load_one("counter", &counter, &manifest, &[]);
    load["sources"][0]["connections"] = json!([{"name": "work", "slots": ["authorization"]}]);
    load["secrets"] = json!([{"namespace": "counter", "connection": "work", "values": [["authorization", format!("Bearer {secret}")]]}]);
    loaded(&hub, "acme", &load);
    let envelope = hub.execute("acme", json!({"code": "return await counter.auth({})"}));
    assert_eq!(envelope["status"], "completed", "{envelope}");
    let shown = envelope["result"].to_string();
    assert!(shown.contains("[secret]") && !shown.contains(secret), "{shown}");
    assert_eq!(counter.calls(), json!({"auth": 1}), "the credential reached the upstream");
    for entry in walk(dir.path()) {
        let bytes = std::fs::read(&entry).unwrap();
        assert!(
            !bytes.windows(secret.len()).any(|w| w == secret.as_bytes()),
            "{} holds the secret",
            entry.display()
        );
    }
    // The same source behind a redirect to another origin: refused, nothing sent there.
    load["sources"][0]["url"] = json!(format!("{}/moved", counter.origin()));
    loaded(&hub, "acme", &load);
    let envelope = hub.execute("acme", json!({"code": "return await counter.auth({})"}));
    assert_eq!(envelope["status"], "failed", "{envelope}");
    assert!(envelope["error"]["message"].as_str().unwrap().contains("another origin"), "{envelope}");
    assert_eq!(counter.calls(), json!({"auth": 1}));
}

fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() { files.extend(walk(&path)) } else { files.push(path) }
    }
    files
}

#[test]
fn a_worker_without_its_secrets_still_serves_and_keeps_the_admin_endpoint_off() {
    let dir = temp();
    let hub = Workerd::start_with(dir.path(), &[]);
    assert_eq!(hub.execute("acme", json!({"code": "return 1"}))["result"], 1);
    let (status, text) = crate::support::post(hub.port, "/t/acme/admin/load", Some("anything"), "{}");
    assert_eq!(status, 403, "{text}");
    assert_eq!(hub.rpc("acme", "ping", json!({})), json!({}));
}

#[test]
fn an_access_token_set_in_the_environment_guards_the_mcp_endpoint() {
    let dir = temp();
    let hub = Workerd::start_with(dir.path(), &[("HUB_ACCESS_TOKEN", "test-access-token")]);
    let ping = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
    for wrong in [None, Some("wrong-token"), Some("")] {
        let (status, text) = crate::support::post(hub.port, "/t/acme/mcp", wrong, ping);
        assert_eq!(status, 401, "{wrong:?}: {text}");
    }
    let (status, text) = crate::support::post(hub.port, "/t/acme/mcp", Some("test-access-token"), ping);
    assert_eq!((status, text.as_str()), (200, r#"{"jsonrpc":"2.0","id":1,"result":{}}"#));
}

#[test]
fn the_typescript_sdk_client_connects_lists_and_executes() {
    let dir = temp();
    let hub = Workerd::start(dir.path());
    let out = std::process::Command::new("node")
        .arg(repo().join("local/tests/fixtures/http-measure.mjs"))
        .arg("3")
        .env("MCP_SDK_DIR", crate::support::packages().join("@modelcontextprotocol/sdk"))
        .env("MCP_URL", format!("http://127.0.0.1:{}/t/acme/mcp", hub.port))
        .env("MCP_TOKEN", "unused")
        .output()
        .expect("starting node: install Node.js");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let measured: Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!(measured["executeMs"]["n"], 3, "{measured}");
}

#[test]
fn an_upstream_that_answers_garbage_is_reported() {
    let CounterHub { hub, counter, mut load, dir: _dir } = counter_hub(Upstream::counter());
    load["sources"][0]["url"] = json!(format!("{}/nowhere", counter.origin()));
    loaded(&hub, "acme", &load);
    let envelope = hub.execute("acme", json!({"code": "return await counter.count({})"}));
    assert_eq!(envelope["status"], "failed", "{envelope}");
    assert!(envelope["error"]["message"].as_str().unwrap().contains("HTTP 404"), "{envelope}");
}

#[test]
fn an_upstream_that_hangs_past_the_timeout_is_refused_and_reported() {
    let CounterHub { hub, counter: _counter, mut load, dir: _dir } = counter_hub(Upstream::counter());
    load["upstreamTimeoutMs"] = json!(500);
    loaded(&hub, "acme", &load);
    let started = Instant::now();
    let envelope = hub.execute("acme", json!({"code": "return await counter.slow({ms: 10000})"}));
    assert!(started.elapsed() < Duration::from_secs(8), "the timeout did not fire: {:?}", started.elapsed());
    assert_eq!(envelope["status"], "failed", "{envelope}");
    assert!(envelope["error"]["message"].as_str().unwrap().contains("500 ms"), "{envelope}");
    assert_eq!(hub.rpc("acme", "ping", json!({})), json!({}));
}

#[test]
fn calls_reuse_a_sources_session_and_open_another_when_it_is_forgotten() {
    let CounterHub { hub, counter, load, dir: _dir } = counter_hub(Upstream::counter_with_sessions());
    let opened = |counter: &Upstream| counter.requests()["initialize"].as_u64().unwrap();
    let by_manifest = opened(&counter);
    loaded(&hub, "acme", &load);
    let three = "await counter.count({}); await counter.count({}); return await counter.count({})";
    assert_eq!(hub.execute("acme", json!({"code": three}))["result"], "3");
    assert_eq!(hub.execute("acme", json!({"code": "return await counter.count({})"}))["result"], "4");
    assert_eq!(
        opened(&counter),
        by_manifest + 1,
        "four calls in two runs, one session: {}",
        counter.requests()
    );
    // The source restarts and forgets the session: the hub opens another and the call runs once.
    counter.forget_sessions();
    assert_eq!(hub.execute("acme", json!({"code": "return await counter.count({})"}))["result"], "5");
    assert_eq!(opened(&counter), by_manifest + 2, "{}", counter.requests());
    assert_eq!(counter.calls(), json!({"count": 5}));
}

#[test]
fn a_source_without_sessions_is_initialized_once() {
    let CounterHub { hub, counter, load, dir: _dir } = counter_hub(Upstream::counter());
    loaded(&hub, "acme", &load);
    let before = counter.requests()["initialize"].as_u64().unwrap();
    for n in 1..=3 {
        assert_eq!(
            hub.execute("acme", json!({"code": "return await counter.count({})"}))["result"],
            n.to_string()
        );
    }
    assert_eq!(counter.requests()["initialize"].as_u64().unwrap(), before + 1, "{}", counter.requests());
    // A new load starts afresh.
    loaded(&hub, "acme", &load);
    assert_eq!(hub.execute("acme", json!({"code": "return await counter.count({})"}))["result"], "4");
    assert_eq!(counter.requests()["initialize"].as_u64().unwrap(), before + 2, "{}", counter.requests());
}

/// Nothing the hosted hub answers names a local command: a person using it may have no local
/// hub. Searches of an empty tenant, waiting calls, tool failures and store-side errors alike.
#[test]
fn hosted_answers_never_name_a_local_command() {
    let CounterHub { hub, counter, mut load, dir: _dir } = counter_hub(Upstream::counter());
    let mut answers = Vec::new();
    let empty = hub.rpc("empty", "tools/call", json!({"name": "search", "arguments": {"query": "anything"}}));
    assert!(empty.to_string().contains("admin/load"), "{empty}");
    answers.push(empty);
    answers.push(hub.execute("acme", json!({"resume": "run_0123456789abcdef"})));
    answers.push(hub.execute("acme", json!({"code": "return ("})));
    loaded(&hub, "acme", &load);
    let waiting = hub.execute("acme", json!({"code": "return await counter.write({text: 'hi'})"}));
    assert_eq!(waiting["status"], "awaiting_approval", "{waiting}");
    answers.push(waiting);
    // The source is gone: the tool failure's hint says where to look, in the hosted hub's words.
    let gone = free_port();
    load["sources"][0]["url"] = json!(format!("http://127.0.0.1:{gone}/mcp"));
    load["sources"][0]["reviewedOrigin"] = json!(format!("http://127.0.0.1:{gone}"));
    loaded(&hub, "acme", &load);
    let failed = hub.execute(
        "acme",
        json!({"code": "try { await counter.count({}) } catch (e) { return [e.code, e.message, e.hint] }"}),
    );
    answers.push(failed);
    drop(counter);
    for answer in &answers {
        let text = answer.to_string();
        assert!(!text.contains("capabilities hub"), "a hosted answer names a local command: {text}");
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

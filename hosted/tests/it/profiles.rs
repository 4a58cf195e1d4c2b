//! Named profiles on the hosted hub, in real workerd: a tenant loaded with two profiles, each
//! at its own MCP address. The code-mode one serves one namespace (search and describe show
//! nothing else, and code calling the other fails as unknown); the direct-mode one lists its
//! tools under direct names, runs a read, and its write waits for an admin approval. Runs are
//! bound to their profile; an unknown profile's address is a 404 that says which there are, and
//! a load whose profile tries to allow is refused. Then `hub push` carries a local profile and
//! the signed-in person reaches it at `/mcp/<profile>`.

use serde_json::{Value, json};

use crate::access::Hub;
use crate::push::Local;
use crate::support::{ADMIN_TOKEN, Upstream, Workerd, post, request};

/// One JSON-RPC request to `path`; the HTTP status and the `result` (or error, or body text).
fn rpc_at(hub: &Workerd, path: &str, method: &str, params: Value) -> (u16, Value) {
    let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
    let (status, text) = post(hub.port, path, None, &body.to_string());
    let answer: Value = serde_json::from_str(&text).unwrap_or(Value::String(text));
    let result = answer.get("result").or_else(|| answer.get("error")).cloned().unwrap_or(answer);
    (status, result)
}

fn call(hub: &Workerd, path: &str, name: &str, arguments: Value) -> Value {
    let (status, result) = rpc_at(hub, path, "tools/call", json!({ "name": name, "arguments": arguments }));
    assert_eq!(status, 200, "{name} at {path}: {result}");
    result
}

fn text(result: &Value) -> String {
    result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect()
}

/// Two sources over the one counter fixture (`counter` and `other`), and two profiles:
/// `reader` (code mode, `counter` only) and `tools` (direct mode, `other` only).
fn two_profiles(counter: &Upstream) -> Value {
    let mut policy = capabilities_core::policy::PolicyState::default();
    let mut source = |ns: &str| {
        let manifest = counter.manifest(ns);
        for tool in &manifest.tools {
            policy.reviewed.insert(manifest.address(tool).to_string(), tool.digest);
        }
        json!({
            "namespace": ns,
            "url": format!("{}/mcp", counter.origin()),
            "reviewedOrigin": counter.origin(),
            "manifest": manifest,
        })
    };
    let sources = [source("counter"), source("other")];
    json!({
        "sources": sources,
        "policy": policy,
        "profiles": [
            { "name": "reader", "serves": ["counter"], "rules": [{ "tool": "counter.slow", "effect": "deny" }] },
            { "name": "tools", "serves": ["other"], "mode": "direct" },
        ],
    })
}

#[test]
fn a_tenant_serves_a_code_profile_and_a_direct_profile_each_at_its_own_address() {
    let dir = tempfile::tempdir().unwrap();
    let hub = Workerd::start(dir.path());
    let counter = Upstream::counter();
    let (status, loaded) = hub.load("acme", &two_profiles(&counter));
    assert_eq!(status, 200, "{loaded}");
    let loaded: Value = serde_json::from_str(&loaded).unwrap();
    assert_eq!(loaded["profiles"], json!(["reader", "tools"]), "{loaded}");
    assert_eq!(loaded["warnings"], json!([]), "{loaded}");

    // The code-mode profile: only `counter`, at call time too.
    let reader = "/t/acme/mcp/reader";
    let (_, listed) = rpc_at(&hub, reader, "tools/list", json!({}));
    let names: Vec<&str> =
        listed["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["search", "describe", "execute"]);
    let found = text(&call(&hub, reader, "search", json!({ "query": "counts its calls" })));
    assert!(found.contains("counter.count") && !found.contains("other."), "{found}");
    let described = text(&call(&hub, reader, "describe", json!({ "targets": ["other"] })));
    assert!(!described.contains("declare const other"), "{described}");
    let everywhere = text(&call(&hub, "/t/acme/mcp", "search", json!({ "query": "counts its calls" })));
    assert!(everywhere.contains("other.count"), "the default profile serves both: {everywhere}");
    let counted = call(&hub, reader, "execute", json!({ "code": "return await counter.count({})" }));
    assert_eq!(counted["structuredContent"]["status"], "completed", "{counted}");
    let foreign = call(&hub, reader, "execute", json!({ "code": "return await other.count({})" }));
    let envelope = &foreign["structuredContent"];
    assert_eq!(envelope["status"], "failed", "{foreign}");
    assert!(envelope["error"]["message"].as_str().unwrap().contains("other"), "{foreign}");
    assert_eq!(counter.calls()["count"], 1, "only the served call reached the source");
    let denied = call(&hub, reader, "execute", json!({ "code": "return await counter.slow({ ms: 1 })" }));
    assert!(denied.to_string().contains("policy_denied"), "the profile's deny holds: {denied}");

    // A run is its profile's: another profile cannot resume it, in the words for a run that
    // never was.
    let waiting =
        call(&hub, reader, "execute", json!({ "code": "return await counter.write({ text: 'r' })" }));
    let run = waiting["structuredContent"]["runId"].as_str().unwrap().to_owned();
    assert_eq!(waiting["structuredContent"]["status"], "awaiting_approval", "{waiting}");
    let never = format!("{}ffff", &run[..run.len() - 4]);
    let from_default = hub.execute("acme", json!({ "resume": run }));
    let unknown = hub.execute("acme", json!({ "resume": never }));
    assert_eq!(
        from_default["error"]["message"].as_str().unwrap().replace(&run, "<run>"),
        unknown["error"]["message"].as_str().unwrap().replace(&never, "<run>"),
        "{from_default}"
    );

    // The direct-mode profile: its own tools, the same list on every request.
    let tools = "/t/acme/mcp/tools";
    let (_, init) = rpc_at(&hub, tools, "initialize", json!({ "protocolVersion": "2025-11-25" }));
    assert!(init["instructions"].as_str().unwrap().starts_with("Each tool here"), "{init}");
    let (_, listed) = rpc_at(&hub, tools, "tools/list", json!({}));
    let names: Vec<&str> =
        listed["tools"].as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["other_count", "other_slow", "other_write", "other_auth"], "{listed}");
    assert_eq!(rpc_at(&hub, tools, "tools/list", json!({})).1, listed, "the same list every time");
    let read = call(&hub, tools, "other_count", json!({}));
    assert_eq!(read["isError"], false, "{read}");
    assert_eq!(counter.calls()["count"], 2, "{read}");
    let unknown = call(&hub, tools, "counter_count", json!({}));
    assert!(text(&unknown).contains("there is no tool `counter_count` in this profile"), "{unknown}");

    // Its write waits for a person, who decides through the admin endpoint; the same call
    // made again continues that run and writes once.
    let asked = call(&hub, tools, "other_write", json!({ "text": "hi" }));
    assert_eq!(asked["isError"], true, "{asked}");
    assert!(text(&asked).contains("not called yet"), "{asked}");
    let again = call(&hub, tools, "other_write", json!({ "text": "hi" }));
    assert!(text(&again).contains("not called yet"), "{again}");
    let (status, pending) = request(hub.port, "GET", "/t/acme/admin/pending", Some(ADMIN_TOKEN), "");
    assert_eq!(status, 200, "{pending}");
    let pending: Value = serde_json::from_str(&pending).unwrap();
    let direct_run = pending
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["pending"][0]["address"] == "other.write")
        .unwrap_or_else(|| panic!("one run waits for other.write: {pending}"))["runId"]
        .clone();
    assert_eq!(pending.as_array().unwrap().len(), 2, "calling again asked nothing new: {pending}");
    let approve = json!({ "run": direct_run, "choice": "once" });
    let (status, text_) = post(hub.port, "/t/acme/admin/approve", Some(ADMIN_TOKEN), &approve.to_string());
    assert_eq!(status, 200, "{text_}");
    let wrote = call(&hub, tools, "other_write", json!({ "text": "hi" }));
    assert_eq!(wrote["isError"], false, "{wrote}");
    assert!(text(&wrote).contains("wrote hi"), "{wrote}");
    assert_eq!(counter.calls()["write"], 1, "the write ran once");

    // An unknown profile's address, and a load whose profile would loosen the policy.
    let (status, said) = rpc_at(&hub, "/t/acme/mcp/nope", "tools/list", json!({}));
    assert_eq!(status, 404);
    assert!(
        said.as_str()
            .unwrap()
            .contains("there is no profile `nope` on this hub; its profiles are default, reader, tools"),
        "{said}"
    );
    assert_eq!(rpc_at(&hub, "/t/acme/mcp/Bad%20Name", "tools/list", json!({})).0, 404);
    let mut loose = two_profiles(&counter);
    loose["profiles"][0]["rules"] = json!([{ "source": "counter", "effect": "allow" }]);
    let (status, refused) = hub.load("acme", &loose);
    assert_eq!(status, 400, "{refused}");
    assert!(refused.starts_with("profile `reader`: ") && refused.contains("can only tighten"), "{refused}");
    let mut twice = two_profiles(&counter);
    twice["profiles"][1]["name"] = json!("reader");
    let (status, refused) = hub.load("acme", &twice);
    assert_eq!((status, refused.as_str()), (400, "profile `reader` is sent twice; send each profile once"));
    let kept = call(&hub, reader, "execute", json!({ "code": "return 1" }));
    assert_eq!(kept["structuredContent"]["status"], "completed", "the refused loads changed nothing: {kept}");
}

#[test]
fn hub_push_carries_a_profile_and_the_signed_in_person_reaches_it() {
    let hub = Hub::start(&[]);
    let counter = Upstream::counter();
    let local = Local::new(&hub);
    local.ok(&["hub", "add", &format!("{}/mcp", counter.origin()), "--namespace", "counter", "--yes"]);
    local.ok(&["hub", "profiles", "create", "reader", "--serves", "counter.count"]);
    local.ok(&["hub", "login"]);
    let pushed = local.json(&["hub", "push", "--yes"]);
    assert_eq!(pushed["applied"], true, "{pushed}");
    assert_eq!(pushed["plan"]["profiles"], json!(["reader"]), "{pushed}");
    let (_, said, _) = local.run(&["hub", "push", "--yes"], "");
    assert!(said.contains("profiles reader (besides default)"), "{said}");

    let status = local.json(&["hub", "status"]);
    assert_eq!(status["profiles"][0]["name"], "reader", "{status}");
    assert_eq!(status["profiles"][0]["mode"], "code", "{status}");
    assert_eq!(status["profiles"][0]["serves"], json!(["counter.count"]), "{status}");
    assert!(status["profiles"][0]["url"].as_str().is_some_and(|u| u.ends_with("/mcp/reader")), "{status}");
    let said = local.ok(&["hub", "status"]);
    assert!(said.contains("profiles: default and 1\n  reader"), "{said}");
    assert!(said.contains("serves counter.count at "), "{said}");

    let token = local.access_token();
    let headers = vec![format!("authorization: Bearer {token}")];
    let at = |path: &str, code: &str| {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
            "params": { "name": "execute", "arguments": { "code": code } } });
        let (status, _, text) = hub.http("POST", path, &headers, &body.to_string());
        assert_eq!(status, 200, "{path}: {text}");
        serde_json::from_str::<Value>(&text).unwrap()["result"]["structuredContent"].clone()
    };
    let counted = at("/mcp/reader", "return await counter.count({})");
    assert_eq!(counted["status"], "completed", "{counted}");
    let write = at("/mcp/reader", "return await counter.write({ text: 'x' })");
    assert_eq!(write["status"], "failed", "the profile serves only counter.count: {write}");
    let default = at("/mcp", "return await counter.write({ text: 'x' })");
    assert_eq!(default["status"], "awaiting_approval", "the default profile serves it: {default}");
    let (status, _, text) = hub.http("POST", "/mcp/nope", &headers, "{}");
    assert_eq!(status, 404, "{text}");
    let (status, _, _) = hub.http("POST", "/mcp/reader", &[], "{}");
    assert_eq!(status, 401, "a profile's address needs the same sign-in");
}

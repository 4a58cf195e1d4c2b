//! Approvals on the hosted hub: a stateless client (the official TypeScript SDK v2 client pinned
//! to 2026-07-28) is handed the form in an `input_required` result, signed states count once and
//! forged ones never, and a person decides through the admin endpoint.

use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::hub::{load_one, loaded};
use crate::support::{ADMIN_TOKEN, SECRETS_KEY, Upstream, Workerd, packages, post, repo, request};

/// Writes once with the counter's write tool (which asks under the default policy).
const WRITE: &str = "return await counter.write({text: 'hi'})";

/// A workerd with tenant `tenant` serving `counter`, no rule allowing its write.
fn counter_hub(hub: &Workerd, tenant: &str, counter: &Upstream) {
    loaded(hub, tenant, &load_one("counter", counter, &counter.manifest("counter"), &[]));
}

/// The v2 client (local/tests/fixtures/mrtr-client.mjs) against `tenant`; `answer` is what the
/// person picks in each form it is handed.
fn stateless_client(hub: &Workerd, tenant: &str, calls: Value, answer: &str) -> Value {
    let client = packages().join("@modelcontextprotocol/client");
    assert!(
        client.join("dist/index.mjs").is_file(),
        "{} is missing: run `cd node && npm ci`",
        client.display()
    );
    let out = Command::new("node")
        .arg(repo().join("local/tests/fixtures/mrtr-client.mjs"))
        .arg(calls.to_string())
        .env("MCP_CLIENT_DIR", client)
        .env("MCP_URL", format!("http://127.0.0.1:{}/t/{tenant}/mcp", hub.port))
        // The Worker runs without HUB_ACCESS_TOKEN here; the fixture insists on a token.
        .env("MCP_TOKEN", "unused")
        .env("ANSWER", answer)
        .stderr(Stdio::inherit())
        .output()
        .expect("node starts");
    assert!(out.status.success(), "the client failed: {}", String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout).expect("the client prints one JSON object")
}

/// The admin endpoint's list of runs waiting for a person.
fn pending(hub: &Workerd, tenant: &str) -> Value {
    let (status, text) =
        request(hub.port, "GET", &format!("/t/{tenant}/admin/pending"), Some(ADMIN_TOKEN), "");
    assert_eq!(status, 200, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// `execute WRITE` over raw HTTP as a 2026-07-28 client that shows forms, with `retry`'s
/// fields (`requestState`, `inputResponses`) added; the JSON-RPC result.
fn stateless_call(hub: &Workerd, tenant: &str, retry: Value) -> Value {
    let mut params = json!({
        "name": "execute",
        "arguments": { "code": WRITE },
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" },
            "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
        },
    });
    if let (Some(params), Some(retry)) = (params.as_object_mut(), retry.as_object()) {
        params.extend(retry.clone());
    }
    hub.rpc(tenant, "tools/call", params)
}

fn writes(counter: &Upstream) -> u64 {
    counter.calls()["write"].as_u64().unwrap_or(0)
}

#[test]
fn a_stateless_client_is_handed_the_form_and_the_write_runs_once() {
    let dir = tempfile::tempdir().unwrap();
    let hub = Workerd::start(dir.path());
    for (answer, status, result, wrote) in [
        ("once", "completed", "wrote hi", 1),
        ("deny", "completed", "\"approval_denied\"", 0),
        ("dismiss", "awaiting_approval", "null", 0),
    ] {
        let counter = Upstream::counter();
        counter_hub(&hub, answer, &counter);
        let code = if answer == "deny" {
            "try { await counter.write({text: 'hi'}); return 'wrote' } catch (e) { return e.code }"
        } else {
            WRITE
        };
        let seen = stateless_client(
            &hub,
            answer,
            json!([{ "name": "execute", "arguments": { "code": code } }]),
            answer,
        );
        assert_eq!(seen["protocolVersion"], "2026-07-28", "{seen}");
        let prompts = seen["prompts"].as_array().expect("prompts");
        assert_eq!(prompts.len(), 1, "{answer}: one form for the one write: {seen}");
        let message = prompts[0]["message"].as_str().unwrap();
        assert!(message.starts_with("Allow this tool call?\nTool: counter.write\n"), "{message}");
        assert!(message.contains("\"text\": \"hi\""), "{message}");
        assert!(prompts[0]["meta"]["sh.capabilities/approvalState"].is_string(), "{seen}");
        let envelope = &seen["results"][0]["structuredContent"];
        assert_eq!(envelope["status"], status, "{answer}: {seen}");
        assert!(envelope["result"].to_string().contains(result), "{answer}: {envelope}");
        assert_eq!(writes(&counter), wrote, "{answer}: the write ran {wrote} time(s)");
        let waiting = pending(&hub, answer);
        match answer {
            "dismiss" => {
                assert_eq!(waiting[0]["runId"], envelope["runId"], "{waiting}");
                assert_eq!(
                    waiting[0]["pending"][0]["address"], "counter.write",
                    "nothing recorded: {waiting}"
                );
            }
            _ => assert_eq!(waiting, json!([]), "{answer}: {waiting}"),
        }
    }
}

#[test]
fn a_signed_state_counts_once_and_a_forged_one_never() {
    let dir = tempfile::tempdir().unwrap();
    let hub = Workerd::start(dir.path());
    let counter = Upstream::counter();
    counter_hub(&hub, "acme", &counter);
    let call = |retry: Value| stateless_call(&hub, "acme", retry);

    let asked = call(Value::Null);
    assert_eq!(asked["resultType"], "input_required", "{asked}");
    let state = asked["requestState"].as_str().expect("a signed state").to_owned();
    let (pending_id, form) = asked["inputRequests"].as_object().unwrap().iter().next().unwrap();
    assert_eq!(form["method"], "elicitation/create", "{asked}");
    assert_eq!(form["params"]["mode"], "form", "{asked}");
    let run_id = state.split('.').nth(1).unwrap().to_owned();
    let accept = json!({ pending_id.clone(): { "action": "accept", "content": { "choice": "once" } } });

    // Another run's state beside this one: the states of one round name one run.
    let other = call(Value::Null)["requestState"].as_str().expect("a second state").to_owned();
    // A state signed by another key, edited to name another call, mixed, or garbage: refused.
    let forged = format!("{}{}", &state[..state.len() - 4], "0000");
    let tampered = state.replacen(pending_id.as_str(), "p_000000000000", 1);
    for bad in [forged, tampered, format!("{state}~{other}"), "v1.garbage".to_owned(), String::new()] {
        let answer = call(json!({ "inputResponses": accept, "requestState": bad }));
        assert_eq!(answer["isError"], true, "{answer}");
        assert!(answer["content"][0]["text"].as_str().unwrap().contains("not recorded"), "{answer}");
    }
    assert_eq!(writes(&counter), 0, "nothing ran");
    let waiting = pending(&hub, "acme");
    assert!(
        waiting.as_array().unwrap().iter().any(|r| r["runId"] == run_id.as_str()),
        "nothing recorded: {waiting}"
    );

    let done = call(json!({ "inputResponses": accept, "requestState": state }));
    assert_eq!(done["structuredContent"]["status"], "completed", "{done}");
    assert_eq!(
        done["structuredContent"]["runId"],
        run_id.as_str(),
        "the retry resumed the run, not a new one"
    );
    assert_eq!(writes(&counter), 1);

    // The same state again: refused, and the code in the retried arguments does not run again.
    let again = call(json!({ "inputResponses": accept, "requestState": state }));
    assert_eq!(again["isError"], true, "{again}");
    assert!(again["content"][0]["text"].as_str().unwrap().contains("not recorded"), "{again}");
    assert_eq!(writes(&counter), 1);
}

#[test]
fn a_person_approves_through_the_admin_endpoint_and_the_resume_writes_once() {
    let dir = tempfile::tempdir().unwrap();
    let hub = Workerd::start(dir.path());
    let counter = Upstream::counter();
    counter_hub(&hub, "acme", &counter);
    // A client on 2025-11-25 cannot be handed a form: the run waits, as before.
    let paused = hub.execute("acme", json!({ "code": WRITE }));
    assert_eq!(paused["status"], "awaiting_approval", "{paused}");
    let run = paused["runId"].as_str().unwrap().to_owned();

    let approve = json!({ "run": run, "choice": "once" }).to_string();
    for token in [None, Some("wrong-token")] {
        let (status, _) = request(hub.port, "GET", "/t/acme/admin/pending", token, "");
        assert_eq!(status, 401, "pending with {token:?}");
        let (status, _) = post(hub.port, "/t/acme/admin/approve", token, &approve);
        assert_eq!(status, 401, "approve with {token:?}");
    }
    assert_eq!(writes(&counter), 0);
    let waiting = pending(&hub, "acme");
    assert_eq!(waiting[0]["runId"], run.as_str(), "{waiting}");
    assert_eq!(waiting[0]["pending"][0]["address"], "counter.write", "{waiting}");
    assert_eq!(waiting[0]["pending"][0]["call"], waiting[0]["pending"][0]["seq"], "{waiting}");

    for (body, status) in [
        (json!({ "run": run, "choice": "maybe" }), 400),
        (json!({ "run": "run_0000000000000000", "choice": "once" }), 404),
        (json!({ "run": run, "choice": "once", "call": 99 }), 409),
        (json!({ "choice": "once" }), 400),
    ] {
        let (got, text) = post(hub.port, "/t/acme/admin/approve", Some(ADMIN_TOKEN), &body.to_string());
        assert_eq!(got, status, "{body}: {text}");
    }
    let (status, text) = post(hub.port, "/t/acme/admin/approve", Some(ADMIN_TOKEN), &approve);
    assert_eq!(status, 200, "{text}");
    let decided: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(decided["decided"][0]["choice"], "once", "{decided}");
    assert_eq!(decided["allDecided"], true, "{decided}");
    assert_eq!(writes(&counter), 0, "deciding does not run the call; resuming does");
    assert_eq!(pending(&hub, "acme"), json!([]));
    // Deciding again finds nothing undecided.
    let (status, _) = post(hub.port, "/t/acme/admin/approve", Some(ADMIN_TOKEN), &approve);
    assert_eq!(status, 409);

    let resumed = hub.execute("acme", json!({ "resume": run }));
    assert_eq!(resumed["status"], "completed", "{resumed}");
    assert_eq!(writes(&counter), 1);
    let again = hub.execute("acme", json!({ "resume": run }));
    assert_eq!(again["status"], "completed", "{again}");
    assert_eq!(writes(&counter), 1, "exactly one upstream call");
}

#[test]
fn a_state_signed_before_the_approval_key_changed_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let counter = Upstream::counter();
    let secrets =
        |key| [("HUB_ADMIN_TOKEN", ADMIN_TOKEN), ("HUB_SECRETS_KEY", SECRETS_KEY), ("HUB_APPROVAL_KEY", key)];
    let hub = Workerd::start_with(dir.path(), &secrets("first-approval-key"));
    counter_hub(&hub, "acme", &counter);
    let asked = stateless_call(&hub, "acme", Value::Null);
    let state = asked["requestState"].as_str().expect("a signed state").to_owned();
    let pending_id = asked["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let accept = json!({ pending_id: { "action": "accept", "content": { "choice": "once" } } });
    hub.kill();

    let hub = Workerd::start_with(dir.path(), &secrets("second-approval-key"));
    let answer = stateless_call(&hub, "acme", json!({ "inputResponses": accept, "requestState": state }));
    assert_eq!(answer["isError"], true, "{answer}");
    assert!(answer["content"][0]["text"].as_str().unwrap().contains("not signed by this hub"), "{answer}");
    assert_eq!(writes(&counter), 0);
    // The run still waits, and an admin approval still decides it.
    let run = state.split('.').nth(1).unwrap();
    let (status, text) = post(
        hub.port,
        "/t/acme/admin/approve",
        Some(ADMIN_TOKEN),
        &json!({ "run": run, "choice": "once" }).to_string(),
    );
    assert_eq!(status, 200, "{text}");
    assert_eq!(hub.execute("acme", json!({ "resume": run }))["status"], "completed");
    assert_eq!(writes(&counter), 1);
}

//! MCP over streamable HTTP, stateless, answered with JSON: `initialize`, `ping`, `tools/list`,
//! `tools/call`, `resources/read` of handles, and the Skills extension (`skills/list`,
//! `skills/get`, `resources/directory/read`, `skill://` files by `resources/read`, the skills'
//! `SKILL.md` in `resources/list`; built in `skills`), with our own small JSON-RPC handling (rmcp's service layer needs tokio,
//! which does not run in a Worker). The tool definitions and instructions come from the core,
//! so `tools/list` is the local hub's, byte for byte.
//!
//! A profile in direct mode lists its own tools instead of the three (the core's `DirectTools`,
//! built once per profile, so every connection lists the same) and each call runs as the one
//! line of code it stands for, through the same engine.
//!
//! A client on the stateless revision (2026-07-28) that declares form elicitation in the
//! request's `_meta` gets a run that waits for a person as an `input_required` result, as from
//! the local hub: one form per undecided call and the signed states as `requestState`; the
//! retried call carries the answers, which the hub records before resuming the run its states
//! name (the code in the retried arguments does not run again). Other clients get the
//! `awaiting_approval` envelope, and a person decides through the admin endpoint.

use capabilities_core::handles;
use capabilities_core::limits::Limits;
use capabilities_core::ports::LocalBoxFuture;
use capabilities_core::record::HandleKind;
use capabilities_core::surface::direct;
use capabilities_core::surface::envelope::{Envelope, EnvelopeStatus};
use capabilities_core::surface::tools;
use serde_json::{Map, Value, json};

use crate::skills::{self, PushedSkill};

/// Protocol versions this endpoint speaks; the first is what a client asking for another gets.
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-11-25", "2026-07-28", "2025-06-18"];

/// What answers `tools/call`: one tenant's hub, as one request sees it.
pub trait Tenant {
    /// `search` or `describe`: text, or an error message for the model.
    fn lookup(&self, tool: &str, arguments: &Value) -> Result<String, String>;
    /// `execute`: a new run or a resumed one.
    fn execute<'a>(&'a self, request: tools::ExecuteRequest) -> LocalBoxFuture<'a, Envelope>;
    /// The `input_required` result asking about the undecided approvals of waiting run
    /// `run_id`, or `None` when there is nothing to ask; an error says why it could not ask.
    fn ask<'a>(&'a self, run_id: &'a str) -> LocalBoxFuture<'a, Result<Option<Value>, String>>;
    /// `resources/read` of a handle's URI: the result's `{ contents }`, or why there is none
    /// (the same words for an unknown handle and another tenant's).
    fn read_resource<'a>(&'a self, uri: &'a str) -> LocalBoxFuture<'a, Result<Value, String>> {
        Box::pin(async move { Err(format!("there is no handle `{uri}`")) })
    }
    /// The skill library served.
    fn skills(&self) -> &[PushedSkill] {
        &[]
    }
    /// The bytes of the skill file with this sha256.
    fn skill_file<'a>(&'a self, sha256: &'a str) -> LocalBoxFuture<'a, Result<Vec<u8>, String>> {
        Box::pin(async move { Err(format!("the hub has no skill file {sha256}")) })
    }
    /// In direct mode, the profile's tool definitions; `None` in code mode (the three tools).
    fn direct(&self) -> Option<&[Value]> {
        None
    }
    /// A direct-mode call of the tool listed as `name`: its run (a waiting run of the same call
    /// continued), or `None` when no tool has the name.
    fn call_direct<'a>(
        &'a self,
        _name: &'a str,
        _arguments: &'a Value,
    ) -> LocalBoxFuture<'a, Option<Envelope>> {
        Box::pin(async { None })
    }
    /// Records the answers of a retried call, each only with its signed state, and resumes the
    /// run the states name; says whether anything was recorded. Nothing is unless every state
    /// verifies.
    fn answer<'a>(
        &'a self,
        request_state: &'a str,
        responses: Option<&'a Map<String, Value>>,
    ) -> LocalBoxFuture<'a, Result<(Envelope, bool), String>>;
}

/// The revision from which a client can be handed forms in a result.
pub const STATELESS_VERSION: &str = "2026-07-28";
const META_VERSION: &str = "io.modelcontextprotocol/protocolVersion";
const META_CAPABILITIES: &str = "io.modelcontextprotocol/clientCapabilities";

/// Whether the `tools/call` params come from a client on the stateless revision that can show
/// a form (it declares form elicitation, or elicitation without naming a mode).
pub fn asks_inline(params: &Value) -> bool {
    let meta = &params["_meta"];
    let stateless = meta[META_VERSION].as_str().is_some_and(|v| v >= STATELESS_VERSION);
    let elicitation = &meta[META_CAPABILITIES]["elicitation"];
    let form =
        elicitation.is_object() && (elicitation.get("form").is_some() || elicitation.get("url").is_none());
    stateless && form
}

/// The answer to one HTTP body: a JSON-RPC response, or `None` for a notification or a
/// response from the client (HTTP 202, no body).
pub async fn handle(body: &[u8], tenant: &dyn Tenant, limits: &Limits) -> Option<Value> {
    let message: Value = match serde_json::from_slice(body) {
        Ok(message) => message,
        Err(err) => return Some(error(Value::Null, -32700, &format!("the body is not JSON: {err}"))),
    };
    let Some(object) = message.as_object() else {
        return Some(error(
            Value::Null,
            -32600,
            "send one JSON-RPC message as an object; batches are not accepted",
        ));
    };
    let id = object.get("id").cloned();
    let Some(method) = object.get("method").and_then(Value::as_str) else {
        // A response to something we never asked, or garbage: nothing to answer.
        return id.is_none().then(|| error(Value::Null, -32600, "a JSON-RPC request needs `method`"));
    };
    let id = id?;
    let params = object.get("params").cloned().unwrap_or(Value::Null);
    // On the stateless revision every result says what kind it is.
    let stateless = params["_meta"][META_VERSION].as_str().is_some_and(|v| v >= STATELESS_VERSION);
    let success = |id: Value, mut result: Value| {
        if let (true, Some(fields)) = (stateless, result.as_object_mut()) {
            fields.entry("resultType").or_insert_with(|| json!("complete"));
        }
        success(id, result)
    };
    Some(match method {
        "initialize" => success(id, initialize(&params, instructions(tenant))),
        "ping" => success(id, json!({})),
        "server/discover" => success(id, discover(instructions(tenant))),
        "tools/list" => match tenant.direct() {
            Some(listed) => success(id, json!({ "tools": listed })),
            None => success(id, json!({ "tools": tools::definitions(limits) })),
        },
        // Handles are resources a client reads from the links it was given, never listed; each
        // skill's `SKILL.md` is, as on the local hub.
        "resources/list" => success(id, json!({ "resources": skills::resources(tenant.skills()) })),
        "resources/templates/list" => success(id, json!({ "resourceTemplates": [] })),
        "skills/list" => success(id, skills::list(tenant.skills())),
        "skills/get" | "resources/directory/read" => {
            let uri = params.get("uri").and_then(Value::as_str).unwrap_or_default();
            let answer = match method {
                "skills/get" => skills::get(tenant.skills(), uri),
                _ => skills::directory(tenant.skills(), uri),
            };
            match answer {
                Ok(result) => success(id, result),
                Err(message) => error(id, -32602, &message),
            }
        }
        "resources/read" => match params.get("uri").and_then(Value::as_str) {
            Some(uri) if uri.starts_with(skills::SCHEME) => match read_skill_file(tenant, uri).await {
                Ok(result) => success(id, result),
                Err(message) => error(id, -32002, &message),
            },
            Some(uri) => match tenant.read_resource(uri).await {
                Ok(result) => success(id, result),
                Err(message) => error(id, -32002, &message),
            },
            None => error(id, -32602, "resources/read needs `uri`"),
        },
        "tools/call" => match call(&params, tenant, limits).await {
            Ok(result) => success(id, result),
            Err(message) => error(id, -32602, &message),
        },
        other => error(id, -32601, &format!("method `{other}` is not served here")),
    })
}

/// `resources/read` of a `skill://` URI: the file's bytes as text or base64.
async fn read_skill_file(tenant: &dyn Tenant, uri: &str) -> Result<Value, String> {
    let unknown = || format!("the hub has no skill file {uri}");
    let (skill, file) = skills::file(tenant.skills(), uri).ok_or_else(unknown)?;
    let bytes = tenant.skill_file(&file.sha256).await?;
    if !skills::matches(&file.sha256, &bytes) {
        return Err(format!("skill file {uri} is damaged in the hub's storage; push the hub again"));
    }
    Ok(skills::contents(uri, &format!("{}/{}", skill.name, file.path), &bytes))
}

/// What the hub declares it serves: tools, resources and the Skills extension (with
/// `resources/directory/read`).
fn capabilities() -> Value {
    json!({
        "extensions": { "io.modelcontextprotocol/skills": { "directoryRead": true } },
        "resources": {},
        "tools": {},
    })
}

/// The server instructions of the profile `tenant` serves.
fn instructions(tenant: &dyn Tenant) -> &'static str {
    match tenant.direct() {
        Some(_) => direct::INSTRUCTIONS,
        None => tools::INSTRUCTIONS,
    }
}

fn initialize(params: &Value, instructions: &str) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
    let version = PROTOCOL_VERSIONS.iter().find(|v| **v == asked).unwrap_or(&PROTOCOL_VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": capabilities(),
        "serverInfo": { "name": "capabilities", "version": env!("CARGO_PKG_VERSION") },
        "instructions": instructions
    })
}

/// What a client on the stateless revision learns instead of an `initialize` handshake.
fn discover(instructions: &str) -> Value {
    json!({
        "resultType": "complete",
        "supportedVersions": [STATELESS_VERSION],
        "capabilities": capabilities(),
        "instructions": instructions,
        "ttlMs": 0,
        "cacheScope": "private",
        "_meta": {
            "io.modelcontextprotocol/serverInfo": { "name": "capabilities", "version": env!("CARGO_PKG_VERSION") }
        }
    })
}

async fn call(params: &Value, tenant: &dyn Tenant, limits: &Limits) -> Result<Value, String> {
    let name = params.get("name").and_then(Value::as_str).ok_or("tools/call needs `name`")?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(arguments @ Value::Object(_)) => arguments.clone(),
        Some(_) => return Err("`arguments` must be an object".to_owned()),
    };
    if tenant.direct().is_some() {
        return Ok(call_direct(name, &arguments, params, tenant).await);
    }
    Ok(match name {
        tools::SEARCH | tools::DESCRIBE => match tenant.lookup(name, &arguments) {
            Ok(text) => text_result(text, false),
            Err(message) => text_result(message, true),
        },
        tools::EXECUTE => {
            let start: LocalBoxFuture<'_, Result<Envelope, Value>> = Box::pin(async {
                match tools::parse_execute(&arguments, limits) {
                    Ok(request) => Ok(tenant.execute(request).await),
                    Err(message) => Err(text_result(message, true)),
                }
            });
            match asks_inline(params) {
                true => inline(params, tenant, start, envelope_result).await,
                false => start.await.map_or_else(|refused| refused, |envelope| envelope_result(&envelope)),
            }
        }
        other => text_result(
            format!("there is no tool `{other}`: this server has `search`, `describe` and `execute`"),
            true,
        ),
    })
}

/// A call to one of a direct-mode profile's tools: its run's result as the tool's own.
async fn call_direct(name: &str, arguments: &Value, params: &Value, tenant: &dyn Tenant) -> Value {
    let bytes = arguments.to_string().len();
    if bytes > direct::MAX_ARGUMENT_BYTES {
        return text_result(
            format!(
                "the arguments are {bytes} bytes of JSON, over the limit of {} for one call",
                direct::MAX_ARGUMENT_BYTES
            ),
            true,
        );
    }
    let start: LocalBoxFuture<'_, Result<Envelope, Value>> = Box::pin(async {
        tenant.call_direct(name, arguments).await.ok_or_else(|| {
            text_result(
                format!("there is no tool `{name}` in this profile: tools/list names the tools it serves"),
                true,
            )
        })
    });
    match asks_inline(params) {
        true => inline(params, tenant, start, direct_result).await,
        false => start.await.map_or_else(|refused| refused, |envelope| direct_result(&envelope)),
    }
}

/// A call for a client that can be handed forms: a retried call (with `requestState`) records
/// its answers and resumes that run; otherwise `start` runs. A run waiting for a person comes
/// back as `input_required`; any other is answered in `shape`.
async fn inline<'a>(
    params: &Value,
    tenant: &dyn Tenant,
    start: LocalBoxFuture<'a, Result<Envelope, Value>>,
    shape: fn(&Envelope) -> Value,
) -> Value {
    let envelope = match params.get("requestState") {
        Some(state) => {
            let Some(state) = state.as_str() else {
                return text_result("`requestState` must be the string the hub sent".to_owned(), true);
            };
            match tenant.answer(state, params.get("inputResponses").and_then(Value::as_object)).await {
                // Every form was dismissed: the calls stay pending, and asking again at once
                // would only loop.
                Ok((envelope, false)) => return shape(&envelope),
                Ok((envelope, true)) => envelope,
                Err(message) => return text_result(message, true),
            }
        }
        None => match start.await {
            Ok(envelope) => envelope,
            Err(refused) => return refused,
        },
    };
    if envelope.status != EnvelopeStatus::AwaitingApproval {
        return shape(&envelope);
    }
    match tenant.ask(&envelope.run_id).await {
        Ok(Some(input_required)) => input_required,
        Ok(None) => shape(&envelope),
        Err(message) => {
            let mut envelope = envelope;
            envelope.notices.push(message);
            shape(&envelope)
        }
    }
}

fn text_result(text: String, is_error: bool) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": is_error })
}

/// The envelope as structured content plus its one-line text and a `resource_link` per handle
/// (or part of one); `isError` only for a failed run, as the local hub answers.
pub fn envelope_result(envelope: &Envelope) -> Value {
    let mut content = vec![json!({ "type": "text", "text": envelope.to_line() })];
    content.extend(resource_links(envelope));
    json!({
        "content": content,
        "structuredContent": envelope.to_value(),
        "isError": envelope.status == EnvelopeStatus::Failed
    })
}

/// A direct call's run as the tool's own result, with a `resource_link` per handle part, as the
/// local hub answers.
pub fn direct_result(envelope: &Envelope) -> Value {
    let mut result = direct::call_result(envelope);
    if let Some(content) = result["content"].as_array_mut() {
        content.extend(resource_links(envelope));
    }
    result
}

fn resource_links(envelope: &Envelope) -> impl Iterator<Item = Value> {
    envelope.resource_links().into_iter().map(|link| {
        json!({
            "type": "resource_link",
            "uri": link.uri,
            "name": link.name,
            "description": link.description,
            "mimeType": link.mime_type,
            "size": link.bytes,
        })
    })
}

/// A `resources/read` result holding one handle's text.
pub fn resource_contents(uri: &str, kind: HandleKind, text: String) -> Value {
    json!({ "contents": [{ "uri": uri, "mimeType": handles::mime_type(kind), "text": text }] })
}

fn success(id: Value, result: Value) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "result": result })
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "error": { "code": code, "message": message } })
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    struct Echo;

    impl Tenant for Echo {
        fn lookup(&self, tool: &str, arguments: &Value) -> Result<String, String> {
            Ok(format!("{tool} {arguments}"))
        }
        fn execute<'a>(&'a self, request: tools::ExecuteRequest) -> LocalBoxFuture<'a, Envelope> {
            Box::pin(async move {
                let mut envelope = Envelope::unknown_run(&format!("{request:?}"));
                if matches!(&request, tools::ExecuteRequest::Code(code) if code == "wait") {
                    envelope.run_id = "run_0123456789abcdef".to_owned();
                    envelope.status = EnvelopeStatus::AwaitingApproval;
                }
                envelope
            })
        }
        fn ask<'a>(&'a self, run_id: &'a str) -> LocalBoxFuture<'a, Result<Option<Value>, String>> {
            Box::pin(async move { Ok(Some(json!({ "resultType": "input_required", "asked": run_id }))) })
        }
        fn answer<'a>(
            &'a self,
            request_state: &'a str,
            _responses: Option<&'a Map<String, Value>>,
        ) -> LocalBoxFuture<'a, Result<(Envelope, bool), String>> {
            Box::pin(async move { Err(format!("not recorded: {request_state}")) })
        }
    }

    fn answer(body: &str) -> String {
        let out = futures_lite_block_on(handle(body.as_bytes(), &Echo, &Limits::DEFAULT));
        out.map_or("(no body)".to_owned(), |v| v.to_string())
    }

    /// The futures here never wait on anything, so one poll finishes them.
    fn futures_lite_block_on<F: std::future::Future>(future: F) -> F::Output {
        let waker = std::task::Waker::noop();
        let mut context = std::task::Context::from_waker(waker);
        let mut future = std::pin::pin!(future);
        match future.as_mut().poll(&mut context) {
            std::task::Poll::Ready(out) => out,
            std::task::Poll::Pending => panic!("the future waited"),
        }
    }

    #[test]
    fn messages() {
        expect![[r#"{"jsonrpc":"2.0","id":1,"result":{}}"#]]
            .assert_eq(&answer(r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#));
        expect!["(no body)"].assert_eq(&answer(r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#));
        expect![[r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"method `prompts/list` is not served here"}}"#]]
            .assert_eq(&answer(r#"{"jsonrpc":"2.0","id":2,"method":"prompts/list"}"#));
        expect![[r#"{"jsonrpc":"2.0","id":6,"error":{"code":-32002,"message":"there is no handle `capabilities://runs/x`"}}"#]]
            .assert_eq(&answer(r#"{"jsonrpc":"2.0","id":6,"method":"resources/read","params":{"uri":"capabilities://runs/x"}}"#));
        expect![[r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"send one JSON-RPC message as an object; batches are not accepted"}}"#]]
            .assert_eq(&answer("[]"));
        expect![[r#"{"jsonrpc":"2.0","id":3,"result":{"content":[{"type":"text","text":"execute needs `code` (JavaScript to run) or `resume` (the runId of a waiting run)"}],"isError":true}}"#]]
            .assert_eq(&answer(r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"execute"}}"#));
        let init = answer(
            r#"{"jsonrpc":"2.0","id":4,"method":"initialize","params":{"protocolVersion":"2026-07-28"}}"#,
        );
        assert!(init.contains(r#""protocolVersion":"2026-07-28""#), "{init}");
        let init = answer(
            r#"{"jsonrpc":"2.0","id":5,"method":"initialize","params":{"protocolVersion":"1999-01-01"}}"#,
        );
        assert!(init.contains(r#""protocolVersion":"2025-11-25""#), "{init}");
    }

    #[test]
    fn a_stateless_client_with_forms_is_asked_in_the_result() {
        let meta = |caps: Value| {
            json!({
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": caps,
            })
        };
        let call = |params: Value| {
            let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
            answer(&body.to_string())
        };
        let code = json!({"code": "wait"});
        // Forms declared: the waiting run comes back as the hub's question.
        expect![[r#"{"jsonrpc":"2.0","id":1,"result":{"resultType":"input_required","asked":"run_0123456789abcdef"}}"#]]
            .assert_eq(&call(json!({"name": "execute", "arguments": code, "_meta": meta(json!({"elicitation": {"form": {}}}))})));
        // A retried call goes to the recorder, never to a new run.
        expect![[r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"not recorded: v1.x"}],"isError":true,"resultType":"complete"}}"#]]
            .assert_eq(&call(json!({"name": "execute", "arguments": code, "requestState": "v1.x",
                "_meta": meta(json!({"elicitation": {}}))})));
        // Without forms, or on 2025-11-25, a state in the params means nothing.
        for params in [
            json!({"name": "execute", "arguments": code, "requestState": "v1.x", "_meta": meta(json!({"elicitation": {"url": {}}}))}),
            json!({"name": "execute", "arguments": code, "requestState": "v1.x"}),
        ] {
            let out = call(params);
            assert!(out.contains("awaiting_approval") && !out.contains("not recorded"), "{out}");
        }
        assert!(asks_inline(&json!({"_meta": meta(json!({"elicitation": {"form": {}, "url": {}}}))})));
        assert!(!asks_inline(&json!({"_meta": meta(json!({}))})));
        let old = json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2025-11-25",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}}}});
        assert!(!asks_inline(&old));
    }
}

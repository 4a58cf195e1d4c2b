//! MCP over streamable HTTP, stateless, answered with JSON: `initialize`, `ping`, `tools/list`
//! and `tools/call`, with our own small JSON-RPC handling (rmcp's service layer needs tokio,
//! which does not run in a Worker). The tool definitions and instructions come from the core,
//! so `tools/list` is the local hub's, byte for byte.

use capabilities_core::limits::Limits;
use capabilities_core::ports::LocalBoxFuture;
use capabilities_core::surface::envelope::Envelope;
use capabilities_core::surface::tools;
use serde_json::{Value, json};

/// Protocol versions this endpoint speaks; the first is what a client asking for another gets.
pub const PROTOCOL_VERSIONS: [&str; 3] = ["2025-11-25", "2026-07-28", "2025-06-18"];

/// What answers `tools/call`: the tenant's hub.
pub trait Hub {
    /// `search` or `describe`: text, or an error message for the model.
    fn lookup(&self, tool: &str, arguments: &Value) -> Result<String, String>;
    /// `execute`: a new run or a resumed one.
    fn execute<'a>(&'a self, request: tools::ExecuteRequest) -> LocalBoxFuture<'a, Envelope>;
}

/// The answer to one HTTP body: a JSON-RPC response, or `None` for a notification or a
/// response from the client (HTTP 202, no body).
pub async fn handle(body: &[u8], hub: &dyn Hub, limits: &Limits) -> Option<Value> {
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
    Some(match method {
        "initialize" => success(id, initialize(&params)),
        "ping" => success(id, json!({})),
        "tools/list" => success(id, json!({ "tools": tools::definitions(limits) })),
        "tools/call" => match call(&params, hub, limits).await {
            Ok(result) => success(id, result),
            Err(message) => error(id, -32602, &message),
        },
        other => error(id, -32601, &format!("method `{other}` is not served here")),
    })
}

fn initialize(params: &Value) -> Value {
    let asked = params.get("protocolVersion").and_then(Value::as_str).unwrap_or_default();
    let version = PROTOCOL_VERSIONS.iter().find(|v| **v == asked).unwrap_or(&PROTOCOL_VERSIONS[0]);
    json!({
        "protocolVersion": version,
        "capabilities": { "tools": {} },
        "serverInfo": { "name": "capabilities", "version": env!("CARGO_PKG_VERSION") },
        "instructions": tools::INSTRUCTIONS
    })
}

async fn call(params: &Value, hub: &dyn Hub, limits: &Limits) -> Result<Value, String> {
    let name = params.get("name").and_then(Value::as_str).ok_or("tools/call needs `name`")?;
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(arguments @ Value::Object(_)) => arguments.clone(),
        Some(_) => return Err("`arguments` must be an object".to_owned()),
    };
    Ok(match name {
        tools::SEARCH | tools::DESCRIBE => match hub.lookup(name, &arguments) {
            Ok(text) => text_result(text, false),
            Err(message) => text_result(message, true),
        },
        tools::EXECUTE => match tools::parse_execute(&arguments, limits) {
            Ok(request) => envelope_result(&hub.execute(request).await),
            Err(message) => text_result(message, true),
        },
        other => text_result(
            format!("there is no tool `{other}`: this server has `search`, `describe` and `execute`"),
            true,
        ),
    })
}

fn text_result(text: String, is_error: bool) -> Value {
    json!({ "content": [{ "type": "text", "text": text }], "isError": is_error })
}

/// The envelope as structured content plus its one-line text; `isError` only for a failed run,
/// as the local hub answers.
pub fn envelope_result(envelope: &Envelope) -> Value {
    json!({
        "content": [{ "type": "text", "text": envelope.to_line() }],
        "structuredContent": envelope.to_value(),
        "isError": envelope.status == "failed"
    })
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

    impl Hub for Echo {
        fn lookup(&self, tool: &str, arguments: &Value) -> Result<String, String> {
            Ok(format!("{tool} {arguments}"))
        }
        fn execute<'a>(&'a self, request: tools::ExecuteRequest) -> LocalBoxFuture<'a, Envelope> {
            Box::pin(async move { Envelope::unknown_run(&format!("{request:?}")) })
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
        expect![[r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32601,"message":"method `resources/list` is not served here"}}"#]]
            .assert_eq(&answer(r#"{"jsonrpc":"2.0","id":2,"method":"resources/list"}"#));
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
}

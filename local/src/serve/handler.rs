//! The MCP server handler: `tools/list` answers with the three definitions, `tools/call` sends
//! `search` and `describe` to the surface and `execute` to the engine. Nothing here changes
//! configuration or records a decision.

use anyhow::Result;
use capabilities_core::limits::Limits;
use capabilities_core::surface::envelope::Envelope;
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation, ListToolsResult,
    PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use std::sync::{Arc, Mutex};

use super::tools;
use crate::cli::Settings;
use crate::config::{ConfigStamp, config_stamp};
use crate::host::Host;
use crate::page::{ApprovalPages, Notifier};

/// The hub opened for a configuration stamp, if any.
type OpenHost = Option<(ConfigStamp, Arc<Host>)>;

/// Serves the three tools over one hub. Each call runs on a thread of its own, so the engine's
/// runtime (which is not `Send`) never meets the server's. The open hub is kept between calls —
/// its sources stay connected — and opened again when the configuration on disk changes, so
/// each call sees the current sources and policy.
#[derive(Clone)]
pub struct HubServer {
    settings: Settings,
    limits: Limits,
    host: Arc<Mutex<OpenHost>>,
    pages: ApprovalPages,
}

impl std::fmt::Debug for HubServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubServer").field("settings", &self.settings).finish_non_exhaustive()
    }
}

impl HubServer {
    pub fn new(settings: Settings) -> HubServer {
        let pages = ApprovalPages::new(settings.home.clone());
        HubServer { settings, limits: Limits::DEFAULT, host: Arc::new(Mutex::new(None)), pages }
    }

    /// The open hub, reopened if its configuration changed on disk since it was opened.
    fn host(&self) -> Result<Arc<Host>> {
        let stamp = config_stamp(&self.settings.home);
        let mut cached = self.host.lock().map_err(|_| anyhow::anyhow!("the hub's state is poisoned"))?;
        if let Some((seen, host)) = cached.as_ref()
            && *seen == stamp
        {
            return Ok(Arc::clone(host));
        }
        let host = Arc::new(Host::open(&self.settings)?);
        *cached = Some((config_stamp(&self.settings.home), Arc::clone(&host)));
        Ok(host)
    }

    /// Lets go of the open hub, so its sources stop once no call holds it.
    pub fn close(&self) {
        if let Ok(mut cached) = self.host.lock() {
            cached.take();
        }
    }

    /// Answers one `tools/call` for `name` with `arguments`.
    pub async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        let request = match name {
            tools::SEARCH => Request::Search(arguments),
            tools::DESCRIBE => Request::Describe(arguments),
            tools::EXECUTE => match parse_execute(&arguments, &self.limits) {
                Ok(request) => request,
                Err(message) => return error_text(message),
            },
            other => {
                return error_text(format!(
                    "there is no tool `{other}`: this server has `search`, `describe` and `execute`"
                ));
            }
        };
        let server = self.clone();
        match on_own_thread(move || answer(&*server.host()?, request)).await {
            Ok(Answer::Done(result)) => result,
            Ok(Answer::Envelope(mut envelope)) => {
                // This client cannot ask the person itself: the hub does, on its own page.
                if envelope.status == "awaiting_approval" {
                    envelope.notices.push(self.pages.notify(&envelope.run_id).await);
                }
                envelope_result(&envelope)
            }
            Err(err) => error_text(format!("{err:#}")),
        }
    }
}

/// One call, its arguments checked.
#[derive(Debug)]
enum Request {
    Search(Value),
    Describe(Value),
    Execute(String),
    Resume(String),
}

/// `execute` takes exactly one of `code` and `resume`, each a string.
fn parse_execute(arguments: &Value, limits: &Limits) -> Result<Request, String> {
    let field = |name: &str| -> Result<Option<String>, String> {
        match arguments.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(format!("`{name}` must be a string")),
        }
    };
    if let Some(extra) = arguments.as_object().and_then(|o| o.keys().find(|k| *k != "code" && *k != "resume"))
    {
        return Err(format!("execute takes `code` or `resume`, not `{extra}`"));
    }
    match (field("code")?, field("resume")?) {
        (Some(_), Some(_)) => {
            Err("send either `code` (a new run) or `resume` (a runId to continue), not both".to_owned())
        }
        (None, None) => {
            Err("execute needs `code` (JavaScript to run) or `resume` (the runId of a waiting run)"
                .to_owned())
        }
        (Some(code), None) if code.len() > limits.code_bytes => Err(format!(
            "`code` is {} bytes, over the limit of {}: split the work into smaller runs",
            code.len(),
            limits.code_bytes
        )),
        (Some(code), None) if code.trim().is_empty() => {
            Err("`code` is empty: send the body of an async function".to_owned())
        }
        (Some(code), None) => Ok(Request::Execute(code)),
        (None, Some(run_id)) => Ok(Request::Resume(run_id)),
    }
}

/// What a call produced: a finished answer, or a run's envelope.
enum Answer {
    Done(CallToolResult),
    Envelope(Envelope),
}

/// Answers `request` on the calling thread.
fn answer(host: &Host, request: Request) -> Result<Answer> {
    Ok(match request {
        Request::Search(args) => Answer::Done(text_result(host.surface().search(&args))),
        Request::Describe(args) => Answer::Done(text_result(host.surface().describe(&args))),
        Request::Execute(code) => Answer::Envelope(host.execute(&code)?),
        Request::Resume(run_id) => Answer::Envelope(host.resume(&run_id)?),
    })
}

/// Runs `work` on a new thread and waits for it without blocking the server's runtime.
async fn on_own_thread<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new().name("capabilities-call".to_owned()).spawn(move || {
        let _ = tx.send(work());
    })?;
    rx.await.map_err(|_| anyhow::anyhow!("the call stopped before answering; see the hub's log on stderr"))?
}

fn text_result(outcome: Result<String, String>) -> CallToolResult {
    match outcome {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(message) => error_text(message),
    }
}

fn error_text(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

/// The envelope as structured content plus one compact line of text. `isError` is set only for
/// a failed run: the call did not do what the code asked, and clients that look only at
/// `isError` should see that. Completed, waiting and cancelled runs are answers, not errors.
pub fn envelope_result(envelope: &Envelope) -> CallToolResult {
    let mut result = CallToolResult::structured(envelope.to_value());
    result.content = vec![ContentBlock::text(envelope.to_line())];
    result.is_error = Some(envelope.status == "failed");
    result
}

impl ServerHandler for HubServer {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("capabilities", env!("CARGO_PKG_VERSION")))
            .with_instructions(tools::INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        Ok(ListToolsResult::with_all_items(tools::definitions(&self.limits)))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        tools::definition(name, &self.limits)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        Ok(self.call(&request.name, arguments).await.into())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(arguments: Value, expect: expect_test::Expect) {
        let got = match parse_execute(&arguments, &Limits::DEFAULT) {
            Ok(request) => format!("{request:?}"),
            Err(message) => format!("error: {message}"),
        };
        expect.assert_eq(&got);
    }

    #[test]
    fn execute_arguments() {
        use expect_test::expect;
        use serde_json::json;
        check(json!({"code": "return 1"}), expect![[r#"Execute("return 1")"#]]);
        check(json!({"resume": "r1"}), expect![[r#"Resume("r1")"#]]);
        check(
            json!({"code": "1", "resume": "r1"}),
            expect!["error: send either `code` (a new run) or `resume` (a runId to continue), not both"],
        );
        check(
            json!({}),
            expect![
                "error: execute needs `code` (JavaScript to run) or `resume` (the runId of a waiting run)"
            ],
        );
        check(json!({"code": 7}), expect!["error: `code` must be a string"]);
        check(json!({"code": "  "}), expect!["error: `code` is empty: send the body of an async function"]);
        check(json!({"cmd": "x"}), expect!["error: execute takes `code` or `resume`, not `cmd`"]);
        check(
            json!({"code": "x".repeat(64 * 1024 + 1)}),
            expect![
                "error: `code` is 65537 bytes, over the limit of 65536: split the work into smaller runs"
            ],
        );
    }
}

//! The MCP server handler: `tools/list` answers with the three definitions, `tools/call` sends
//! `search` and `describe` to the surface and `execute` to the engine. When a run waits for
//! approval and the client declared form elicitation, the person is asked in the client's own
//! prompt; their answer goes to the recorder only with the state the hub signed for that call.
//! Nothing the model sends changes configuration or records a decision.

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use capabilities_core::approval::Channel;
use capabilities_core::limits::Limits;
use capabilities_core::surface::Surface;
use capabilities_core::surface::envelope::Envelope;
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, ElicitRequestParams, ElicitResult,
    Implementation, InputResponses, ListToolsResult, PaginatedRequestParams, ProgressNotificationParam,
    ProgressToken, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{ElicitationMode, Peer, RequestContext, RoleServer, ServiceError};
use serde_json::Value;

use std::sync::{Arc, Mutex};

use super::approvals::{self, Answer, ApprovalKey, KeyFile};
use super::{rounds, tools};
use crate::config::{ConfigStamp, config_stamp_after};
use crate::host::Host;
use crate::page::{ApprovalPages, Notifier};
use crate::platform::now_ms;
use crate::recorder;

/// How many times one `execute` asks, records and resumes before it answers `awaiting_approval`
/// anyway (a loop of writes with "once" asks on each).
const MAX_PROMPT_ROUNDS: usize = 20;

/// While a prompt is open, how often the client hears progress on the `execute` call (when it
/// sent a progress token), so a client that resets its timeout on progress keeps waiting.
const PROMPT_KEEPALIVE: Duration = Duration::from_secs(2);

/// The hub opened for a configuration stamp, if any.
type OpenHost = Option<(ConfigStamp, Arc<Host>)>;

/// Serves the three tools over one hub. Each call runs on a blocking thread of its own, so the
/// engine's runtime (which is not `Send`) never meets the server's. The open hub is kept between calls —
/// its sources stay connected — and opened again when the configuration on disk changes, so
/// each call sees the current sources and policy.
#[derive(Clone)]
pub struct HubServer {
    /// The hub's store.
    home: PathBuf,
    limits: Limits,
    host: Arc<Mutex<OpenHost>>,
    pages: ApprovalPages,
}

impl std::fmt::Debug for HubServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubServer").field("home", &self.home).finish_non_exhaustive()
    }
}

impl HubServer {
    /// Serves the hub whose store is at `home`.
    pub fn new(home: &Path) -> HubServer {
        let pages = ApprovalPages::new(home.to_owned());
        HubServer { home: home.to_owned(), limits: Limits::DEFAULT, host: Arc::new(Mutex::new(None)), pages }
    }

    /// The open hub, reopened if its configuration changed on disk since it was opened.
    fn host(&self) -> Result<Arc<Host>> {
        let mut cached = self.host.lock().map_err(|_| anyhow::anyhow!("the hub's state is poisoned"))?;
        let stamp = config_stamp_after(&self.home, cached.as_ref().map(|(seen, _)| seen));
        if let Some((seen, host)) = cached.as_ref()
            && *seen == stamp
        {
            return Ok(Arc::clone(host));
        }
        let host = Arc::new(Host::open_for_server(&self.home)?);
        *cached = Some((config_stamp_after(&self.home, Some(&stamp)), Arc::clone(&host)));
        Ok(host)
    }

    /// Lets go of the open hub, so its sources stop once no call holds it.
    pub fn close(&self) {
        if let Ok(mut cached) = self.host.lock() {
            cached.take();
        }
    }

    /// Answers one `tools/call` for `name` with `arguments`, for a client that cannot be asked.
    pub async fn call(&self, name: &str, arguments: Value) -> CallToolResult {
        self.call_with(name, arguments, None).await
    }

    /// Answers one `tools/call` for `name` with `arguments`; a run that waits for approval is
    /// put to the person through the request's peer when it declared form elicitation.
    pub async fn call_with(
        &self,
        name: &str,
        arguments: Value,
        context: Option<&RequestContext<RoleServer>>,
    ) -> CallToolResult {
        let request = match parse_call(name, arguments, &self.limits) {
            Ok(request) => request,
            Err(message) => return error_text(message),
        };
        let server = self.clone();
        match on_own_thread(move || answer(&*server.host()?, request)).await {
            Ok(Answered::Text(result)) => result,
            Ok(Answered::Run(envelope)) => match context {
                Some(context) if envelope.status == "awaiting_approval" && can_ask(&context.peer) => {
                    let prompter =
                        Prompter { peer: &context.peer, progress: context.meta.get_progress_token() };
                    envelope_result(&self.ask_person(&prompter, envelope).await)
                }
                _ => envelope_result(&self.tell_person(envelope).await),
            },
            Err(err) => error_text(format!("{err:#}")),
        }
    }

    /// A waiting run's envelope for a client that cannot ask the person: the hub asks on its
    /// own page instead, and says so.
    async fn tell_person(&self, mut envelope: Envelope) -> Envelope {
        if envelope.status == "awaiting_approval" {
            envelope.notices.push(self.pages.notify(&envelope.run_id).await);
        }
        envelope
    }

    /// Answers one `tools/call` from a client on the stateless revision that can show forms: a
    /// run waiting for a person comes back as `input_required`, and the retried call (carrying
    /// `request_state`) records the answers and resumes the run its state names — the code in
    /// the retried arguments is not run again.
    async fn call_inline(
        &self,
        name: &str,
        arguments: Value,
        responses: Option<InputResponses>,
        request_state: Option<String>,
    ) -> CallToolResponse {
        let envelope = match request_state {
            Some(state) => match self.record_round(state, responses).await {
                // Every form was dismissed: the calls stay pending, and asking again at once
                // would only loop.
                Ok((envelope, false)) => return envelope_result(&envelope).into(),
                Ok((envelope, true)) => envelope,
                Err(message) => return error_text(message).into(),
            },
            None => {
                let request = match parse_call(name, arguments, &self.limits) {
                    Ok(request) => request,
                    Err(message) => return error_text(message).into(),
                };
                let server = self.clone();
                match on_own_thread(move || answer(&*server.host()?, request)).await {
                    Ok(Answered::Text(result)) => return result.into(),
                    Ok(Answered::Run(envelope)) => envelope,
                    Err(err) => return error_text(format!("{err:#}")).into(),
                }
            }
        };
        if envelope.status != "awaiting_approval" {
            return envelope_result(&envelope).into();
        }
        let server = self.clone();
        let run_id = envelope.run_id.clone();
        let asked = on_own_thread(move || {
            let run = server.host()?.store().load_run_sync(&run_id).map_err(|e| anyhow::anyhow!("{e}"))?;
            let key = ApprovalKey::load_or_create(&server.home)?;
            let now = now_ms();
            let calls = run.map(|run| rounds::undecided(&run, now)).unwrap_or_default();
            if calls.is_empty() { Ok(None) } else { rounds::ask(&key, &run_id, &calls, now).map(Some) }
        })
        .await;
        match asked {
            Ok(Some(input_required)) => input_required.into(),
            Ok(None) => envelope_result(&envelope).into(),
            Err(err) => {
                eprintln!("warning: asking for approval in the client failed: {err:#}");
                envelope_result(&self.tell_person(envelope).await).into()
            }
        }
    }

    /// Records the answers a retried call carries, each only with its signed state, and resumes
    /// the run; says whether anything was recorded. Nothing is unless every state verifies.
    async fn record_round(
        &self,
        request_state: String,
        responses: Option<InputResponses>,
    ) -> Result<(Envelope, bool), String> {
        let server = self.clone();
        let (run_id, recorded) = on_own_thread(move || {
            let key = ApprovalKey::load_or_create(&server.home)?;
            let retry = rounds::read(&key, &request_state, responses.as_ref(), now_ms())
                .map_err(|err| anyhow::anyhow!("{err}"))?;
            let host = server.host()?;
            let store = host.store();
            for answered in &retry.answered {
                let claims = &answered.claims;
                // The recorder refuses a run that waits for nothing and a call it does not wait
                // for; the state must also name the call's place in the run.
                let run = store.load_run_sync(&retry.run_id).map_err(|e| anyhow::anyhow!("{e}"))?;
                let pending = run.and_then(|run| run.pending.into_iter().find(|p| p.id == claims.pending_id));
                if pending.is_some_and(|p| p.seq != claims.seq) {
                    anyhow::bail!("{}", approvals::StateError::Mismatch);
                }
                let decision = vec![(claims.pending_id.clone(), answered.choice)];
                recorder::record_checked(store, &retry.run_id, &decision, Channel::Elicitation, || {
                    approvals::consume_nonce(store, claims)
                })?;
            }
            Ok((retry.run_id, !retry.answered.is_empty()))
        })
        .await
        .map_err(|err| {
            format!(
                "the approval answer was not recorded: {err:#}; call execute with {{\"resume\": \"<runId>\"}} to be asked again"
            )
        })?;
        let server = self.clone();
        let envelope =
            on_own_thread(move || server.host()?.resume(&run_id)).await.map_err(|err| format!("{err:#}"))?;
        Ok((envelope, recorded))
    }

    /// Puts each undecided approval of the waiting run to the person through the client's
    /// prompt, records their answers and resumes; again while the resumed run asks anew.
    /// A dismissed prompt or a failed request leaves the call pending.
    async fn ask_person(&self, peer: &Prompter<'_>, mut envelope: Envelope) -> Envelope {
        for _ in 0..MAX_PROMPT_ROUNDS {
            if envelope.status != "awaiting_approval" {
                break;
            }
            let round = match self.ask_round(peer, &envelope.run_id).await {
                Ok(round) => round,
                Err(err) => {
                    eprintln!("warning: asking for approval in the client failed: {err:#}");
                    break;
                }
            };
            if round == Round::Unanswered {
                break;
            }
            let server = self.clone();
            let run_id = envelope.run_id.clone();
            match on_own_thread(move || server.host()?.resume(&run_id)).await {
                Ok(resumed) => envelope = resumed,
                Err(err) => {
                    eprintln!("warning: resuming run `{}` after approval failed: {err:#}", envelope.run_id);
                    break;
                }
            }
            if round == Round::Partly {
                break;
            }
        }
        envelope
    }

    /// One prompt for each undecided approval of run `run_id`, in order.
    async fn ask_round(&self, peer: &Prompter<'_>, run_id: &str) -> Result<Round> {
        // The hub is opened (and dropped) on a thread of its own each time, never here: the
        // last handle to a hub whose configuration changed shuts its sources down.
        let server = self.clone();
        let id = run_id.to_owned();
        let (run, key) = on_own_thread(move || {
            let run = server.host()?.store().load_run_sync(&id).map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok((run, ApprovalKey::load_or_create(&server.home)?))
        })
        .await?;
        let Some(run) = run else { return Ok(Round::Unanswered) };
        let now = now_ms();
        let undecided = rounds::undecided(&run, now);
        if undecided.is_empty() {
            return Ok(Round::Unanswered);
        }
        let mut recorded = false;
        let stopped = |recorded| if recorded { Round::Partly } else { Round::Unanswered };
        for pending in undecided {
            let expires_ms = pending.expires_ms.min(now_ms() + approvals::ASK_MS);
            let state = key.sign(run_id, &pending, approvals::nonce()?, expires_ms);
            let params = approvals::request(run_id, &pending, &state, expires_ms);
            let timeout = Duration::from_millis(expires_ms.saturating_sub(now_ms()));
            let reply = match peer.ask(params, timeout).await {
                Ok(reply) => reply,
                Err(err) => {
                    eprintln!("warning: the client did not answer the approval prompt: {err}");
                    return Ok(stopped(recorded));
                }
            };
            let Answer::Decided(choice) = approvals::answer(&reply) else { return Ok(stopped(recorded)) };
            // The answer counts only with the state signed for this call, unexpired, once.
            let claims = match key.verify_for(&state, run_id, &pending, now_ms()) {
                Ok(claims) => claims,
                Err(err) => {
                    eprintln!("warning: approval for `{}` not recorded: {err}", pending.address);
                    return Ok(stopped(recorded));
                }
            };
            let server = self.clone();
            let id = run_id.to_owned();
            let decision = vec![(pending.id.clone(), choice)];
            let written = on_own_thread(move || {
                let host = server.host()?;
                let store = host.store();
                recorder::record_checked(store, &id, &decision, Channel::Elicitation, || {
                    approvals::consume_nonce(store, &claims)
                })
            })
            .await;
            if let Err(err) = written {
                eprintln!("warning: approval for `{}` not recorded: {err:#}", pending.address);
                return Ok(stopped(recorded));
            }
            recorded = true;
        }
        Ok(Round::Decided)
    }
}

/// How one round of prompts ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Round {
    /// Every prompt got a decision, recorded.
    Decided,
    /// Some got one, then a prompt was dismissed.
    Partly,
    /// Nothing was recorded.
    Unanswered,
}

/// The client that asked, and the progress token of its `execute` call.
struct Prompter<'a> {
    peer: &'a Peer<RoleServer>,
    progress: Option<ProgressToken>,
}

impl Prompter<'_> {
    /// Sends one prompt and waits for the answer, telling the client the call is alive.
    async fn ask(
        &self,
        params: ElicitRequestParams,
        timeout: Duration,
    ) -> Result<ElicitResult, ServiceError> {
        let reply = self.peer.create_elicitation_with_timeout(params, Some(timeout));
        let Some(token) = &self.progress else { return reply.await };
        tokio::pin!(reply);
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + PROMPT_KEEPALIVE, PROMPT_KEEPALIVE);
        let mut beats = 0u32;
        loop {
            tokio::select! {
                answer = &mut reply => return answer,
                _ = tick.tick() => {
                    beats += 1;
                    let note = ProgressNotificationParam::new(token.clone(), f64::from(beats))
                        .with_message("waiting for a person to answer the approval prompt");
                    let _ = self.peer.notify_progress(note).await;
                }
            }
        }
    }
}

/// Whether the client declared that it can show a form to its person.
fn can_ask(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes().contains(&ElicitationMode::Form)
}

/// What a call produced: a text answer, or a run's envelope.
enum Answered {
    Text(CallToolResult),
    Run(Envelope),
}

/// One call, its arguments checked.
#[derive(Debug)]
enum Request {
    Search(Value),
    Describe(Value),
    Execute(String),
    Resume(String),
}

/// One `tools/call`: the tool's name and its arguments, checked.
fn parse_call(name: &str, arguments: Value, limits: &Limits) -> Result<Request, String> {
    match name {
        tools::SEARCH => Ok(Request::Search(arguments)),
        tools::DESCRIBE => Ok(Request::Describe(arguments)),
        tools::EXECUTE => parse_execute(&arguments, limits),
        other => {
            Err(format!("there is no tool `{other}`: this server has `search`, `describe` and `execute`"))
        }
    }
}

/// Takes one `tools/call` as far as it goes without a hub: the name and arguments are checked as
/// [`HubServer::call`] checks them, `search` and `describe` are answered from `surface`, and
/// `execute`'s code goes through the code pipeline but never reaches a sandbox. `resume`
/// answers with the run id it would load. The JSON-RPC fuzz target drives this.
pub fn dry_call(surface: &Surface, name: &str, arguments: Value) -> Result<String, String> {
    match parse_call(name, arguments, &surface.limits)? {
        Request::Search(args) => surface.search(&args),
        Request::Describe(args) => surface.describe(&args),
        Request::Execute(code) => capabilities_core::code::prepare(&code, surface.limits.code_bytes)
            .map(|prepared| prepared.body)
            .map_err(|err| err.to_string()),
        Request::Resume(run_id) => Ok(run_id),
    }
}

/// `execute` takes exactly one of `code` and `resume`, each a string (checked by the core).
fn parse_execute(arguments: &Value, limits: &Limits) -> Result<Request, String> {
    use capabilities_core::surface::tools::ExecuteRequest;
    match capabilities_core::surface::tools::parse_execute(arguments, limits)? {
        ExecuteRequest::Code(code) => Ok(Request::Execute(code)),
        ExecuteRequest::Resume(run_id) => Ok(Request::Resume(run_id)),
        other => Err(format!("execute cannot serve {other:?} here")),
    }
}

/// Answers `request` on the calling thread.
fn answer(host: &Host, request: Request) -> Result<Answered> {
    Ok(match request {
        Request::Search(args) => Answered::Text(text_result(host.surface().search(&args))),
        Request::Describe(args) => Answered::Text(text_result(host.surface().describe(&args))),
        Request::Execute(code) => Answered::Run(host.execute(&code)?),
        Request::Resume(run_id) => Answered::Run(host.resume(&run_id)?),
    })
}

/// Runs `work` on a thread of the server's blocking pool and waits for it without blocking the
/// server's runtime. The pool keeps its threads for a while, so a call seldom pays for starting
/// one (nor for the run runtime each thread keeps, see [`Host`]). Once the answer is handed
/// over, the thread frees the finished run's sandbox and prepares the next one
/// ([`crate::host::after_answer`]), off the caller's clock.
async fn on_own_thread<T: Send + 'static>(work: impl FnOnce() -> Result<T> + Send + 'static) -> Result<T> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    let task = tokio::task::spawn_blocking(move || {
        let _ = answer.send(work());
        crate::host::after_answer();
    });
    match answered.await {
        Ok(result) => result,
        Err(_) => {
            // The work panicked before answering: the task says so.
            let _ = task.await;
            Err(anyhow::anyhow!("the call stopped before answering; see the hub's log on stderr"))
        }
    }
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
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        if rounds::asks_inline(&context) {
            // Only a retried `execute` carries answers to record, as on the hosted hub; search
            // and describe ask nothing, so a state sent with them is not read.
            let request_state = request.request_state.filter(|_| request.name == tools::EXECUTE);
            return Ok(self
                .call_inline(&request.name, arguments, request.input_responses, request_state)
                .await);
        }
        Ok(self.call_with(&request.name, arguments, Some(&context)).await.into())
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
    fn dry_calls() {
        use capabilities_core::catalog::Catalog;
        use capabilities_core::policy::{CompiledPolicy, PolicyState};
        use expect_test::expect;
        use serde_json::json;
        let surface = Surface::new(
            Catalog::default(),
            CompiledPolicy::new(PolicyState::default()).unwrap(),
            Limits::DEFAULT,
        );
        let got: Vec<String> = [
            ("execute", json!({"code": "const x = 1\nx"})),
            ("execute", json!({"code": "import x from 'y'"})),
            ("execute", json!({"resume": "r1"})),
            ("describe", json!({})),
            ("fetch", json!({})),
        ]
        .into_iter()
        .map(|(name, args)| match dry_call(&surface, name, args) {
            Ok(text) => format!("ok: {text:?}"),
            Err(message) => format!("error: {message}"),
        })
        .collect();
        expect![[r#"
            ok: "const x = 1\nreturn x"
            error: `import` is not available: the code is the body of one async function, not a module (line 1, column 1)
            ok: "r1"
            error: describe takes `targets`: a list of 1 to 10 addresses (`github.createIssue`), namespaces (`github`) or type names (`github.Issue`)
            error: there is no tool `fetch`: this server has `search`, `describe` and `execute`"#]].assert_eq(&got.join("\n"));
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

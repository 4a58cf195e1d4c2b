//! The MCP server handler: `tools/list` answers with the three definitions, `tools/call` sends
//! `search` and `describe` to the surface and `execute` to the engine. A run that waits for a
//! person is put to them by `ask.rs`, in the client's own prompt when it can show one. Nothing
//! the model sends changes configuration or records a decision.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use anyhow::Result;
use capabilities_core::handles;
use capabilities_core::limits::Limits;
use capabilities_core::surface::Surface;
use capabilities_core::surface::direct;
use capabilities_core::surface::envelope::Envelope;
use capabilities_core::surface::envelope::EnvelopeStatus;
use rmcp::ErrorData as McpError;
use rmcp::handler::server::ServerHandler;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, GetSkillRequestParams,
    GetSkillResult, Implementation, ListResourcesResult, ListSkillsResult, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ReadResourceDirectoryRequestParams, ReadResourceDirectoryResult,
    ReadResourceRequestParams, ReadResourceResponse, ReadResourceResult, RequestId, Resource,
    ResourceContents, ServerCapabilities, ServerConfig, ServerResult, Tool,
};
use rmcp::service::{RequestContext, RoleServer};
use serde_json::Value;

use super::ask::{Prompter, can_ask};
use super::lines::AnswerNow;
use super::skills::{self, HubSkills};
use super::{rounds, tools};
use crate::config::{ConfigStamp, ConfigWatch, config_stamp_after};
use crate::host::Host;
use crate::page::ApprovalPages;

/// The hub opened for a configuration stamp, if any, and the watch that says when the
/// configuration must be stamped again.
#[derive(Default)]
struct OpenHost {
    open: Option<(ConfigStamp, Arc<Host>)>,
    /// Made with the first hub opened; `None` before, or where it cannot be relied on.
    watch: Option<ConfigWatch>,
}

/// Serves the three tools over one hub. Each call runs on a blocking thread, so the engine's
/// runtime (which is not `Send`) never meets the server's: over stdio the thread that read the
/// call, which the server's runtime leaves for the call's length; else one of the pool's. The
/// open hub is kept between calls — its sources stay connected — and opened again when the
/// configuration on disk changes, so each call sees the current sources and policy.
#[derive(Clone)]
pub struct HubServer {
    /// The hub's store.
    pub(super) home: PathBuf,
    /// The profile served: which sources and tools, and its rules over the hub's policy.
    pub(super) profile: String,
    pub(super) limits: Limits,
    host: Arc<Mutex<OpenHost>>,
    pub(super) pages: ApprovalPages,
    /// Whether the profile was in direct mode when serving started (for the instructions; the
    /// tools listed and called follow the profile as it is now).
    direct: bool,
    /// Direct calls waiting for a person, by tool name and arguments: the same call made again
    /// continues its run instead of asking anew.
    waiting: Arc<Mutex<HashMap<String, String>>>,
    /// The hub's skill library, served by the Skills extension.
    skills: Arc<HubSkills>,
    /// Where answers can be written from the thread that ran the call (stdio); `None` answers
    /// through rmcp.
    answers: Option<Arc<dyn AnswerNow>>,
}

impl std::fmt::Debug for HubServer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubServer").field("home", &self.home).finish_non_exhaustive()
    }
}

impl HubServer {
    /// Serves the hub whose store is at `home`.
    pub fn new(home: &Path) -> HubServer {
        HubServer::for_profile(home, crate::profiles::DEFAULT)
    }

    /// Serves profile `profile` of the hub whose store is at `home`.
    pub fn for_profile(home: &Path, profile: &str) -> HubServer {
        let pages = ApprovalPages::new(home.to_owned());
        let direct = crate::store::Store::open(home)
            .ok()
            .and_then(|store| crate::profiles::load(&store, profile).ok().flatten())
            .is_some_and(|p| p.mode == crate::profiles::Mode::Direct);
        HubServer {
            direct,
            home: home.to_owned(),
            profile: profile.to_owned(),
            limits: Limits::DEFAULT,
            host: Arc::new(Mutex::new(OpenHost::default())),
            pages,
            waiting: Arc::new(Mutex::new(HashMap::new())),
            skills: Arc::new(HubSkills::new(home.to_owned())),
            answers: None,
        }
    }

    /// Answers `tools/call` from the thread that ran it, written to `answers`.
    pub(super) fn answering_to(mut self, answers: Arc<dyn AnswerNow>) -> HubServer {
        self.answers = Some(answers);
        self
    }

    /// The open hub, reopened if its configuration changed on disk since it was opened.
    pub(super) fn host(&self) -> Result<Arc<Host>> {
        let mut cached = self.host.lock().map_err(|_| anyhow::anyhow!("the hub's state is poisoned"))?;
        let OpenHost { open, watch } = &mut *cached;
        // Nothing changed in the configuration's directories since the last look: no need to
        // stamp them. The watch is read before anything else is, so a change made after this
        // point is seen by the next call.
        let unchanged = watch.as_mut().is_some_and(|watch| !watch.changed());
        if unchanged && let Some((_, host)) = open.as_ref() {
            return Ok(Arc::clone(host));
        }
        let stamp = config_stamp_after(&self.home, open.as_ref().map(|(seen, _)| seen));
        if let Some((seen, host)) = open.as_mut()
            && *seen == stamp
        {
            // The same configuration, but keep the new stamp: a directory that has settled
            // since is then stamped record by record instead of listed on every call.
            *seen = stamp;
            return Ok(Arc::clone(host));
        }
        if watch.is_none() {
            // Begun before the configuration is read for the hub, so no change goes unseen.
            *watch = ConfigWatch::new(&self.home);
        }
        let host = Arc::new(Host::open_for_server(&self.home, &self.profile)?);
        *open = Some((config_stamp_after(&self.home, Some(&stamp)), Arc::clone(&host)));
        Ok(host)
    }

    /// Lets go of the open hub, so its sources stop once no call holds it.
    pub fn close(&self) {
        if let Ok(mut cached) = self.host.lock() {
            cached.open.take();
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
        let answered = match (context, in_place_runtime(), self.answers.clone()) {
            (Some(context), Some(runtime), Some(answers)) => {
                let client = Client::of(context, answers, runtime);
                match tokio::task::block_in_place(|| self.answer_in_place(name, arguments, &client)) {
                    InPlace::Sent => return CallToolResult::success(Vec::new()),
                    InPlace::Left(answered) => *answered,
                }
            }
            _ => {
                let server = self.clone();
                let name = name.to_owned();
                on_own_thread(move || server.answer(&*server.host()?, &name, arguments)).await
            }
        };
        match answered {
            Ok(Answered::Text(result)) => result,
            Ok(Answered::Run(envelope, shape)) => {
                let envelope = match context {
                    Some(context)
                        if envelope.status == EnvelopeStatus::AwaitingApproval && can_ask(&context.peer) =>
                    {
                        self.ask_person(&Prompter::new(context), envelope).await
                    }
                    _ => self.tell_person(envelope).await,
                };
                self.run_result(&envelope, &shape)
            }
            Err(err) => error_text(format!("{err:#}")),
        }
    }

    /// Answers one `tools/call` on the thread that read it, the server's runtime moved to another
    /// thread meanwhile, and writes the answer from here: no hand-off to a run thread and back,
    /// two wake-ups of an idle core fewer on every call. A run that waits for a person is left
    /// for the caller to put to them. Like [`on_own_thread`], frees the spent guest and
    /// prepares the next once the answer is out.
    fn answer_in_place(&self, name: &str, arguments: Value, client: &Client) -> InPlace {
        let records = crate::store::answer_first();
        let work = || self.answer(&*self.host()?, name, arguments);
        let answered = std::panic::catch_unwind(std::panic::AssertUnwindSafe(work))
            .unwrap_or_else(|_| Err(anyhow::anyhow!(STOPPED)));
        let result = match answered {
            Ok(Answered::Text(result)) => Ok(result),
            Ok(Answered::Run(envelope, shape)) if envelope.status != EnvelopeStatus::AwaitingApproval => {
                Ok(self.run_result(&envelope, &shape))
            }
            Err(err) => Ok(error_text(format!("{err:#}"))),
            waiting => Err(waiting),
        };
        let outcome = match result {
            Ok(result) => client.answer(result),
            Err(waiting) => InPlace::Left(Box::new(waiting)),
        };
        if matches!(outcome, InPlace::Sent) {
            // The client was most likely woken on this core, and would wait here while the
            // spent guest is freed: let it read its answer first.
            std::thread::yield_now();
        }
        // The records go to the writer threads once this core's work is done, so they do not
        // take the other core from the client either.
        crate::host::after_answer();
        drop(records);
        outcome
    }

    /// Answers one `tools/call` on the calling thread: a direct-mode tool when the profile is in
    /// direct mode, else one of the three.
    pub(super) fn answer(&self, host: &Host, name: &str, arguments: Value) -> Result<Answered> {
        if host.direct().is_none() {
            return match parse_call(name, arguments, &self.limits) {
                Ok(request) => answer(host, request),
                Err(message) => Ok(Answered::Text(error_text(message))),
            };
        }
        let bytes = serde_json::to_string(&arguments).map_or(0, |text| text.len());
        if bytes > direct::MAX_ARGUMENT_BYTES {
            return Ok(Answered::Text(error_text(format!(
                "the arguments are {bytes} bytes of JSON, over the limit of {} for one call",
                direct::MAX_ARGUMENT_BYTES
            ))));
        }
        let key = format!("{name}\0{}", capabilities_core::canonical::to_string(&arguments));
        let waiting = self.waiting.lock().ok().and_then(|w| w.get(&key).cloned());
        let envelope = match waiting {
            Some(run_id) => host.resume(&run_id)?,
            None => match host.call_direct(name, &arguments)? {
                Some(envelope) => envelope,
                None => {
                    return Ok(Answered::Text(error_text(format!(
                        "there is no tool `{name}` in this profile: tools/list names the tools it serves"
                    ))));
                }
            },
        };
        Ok(Answered::Run(envelope, Shape::Direct(key)))
    }

    /// A run's answer to the client in the shape it asked in; a direct call that still waits
    /// for a person is remembered, so calling it again continues the run.
    pub(super) fn run_result(&self, envelope: &Envelope, shape: &Shape) -> CallToolResult {
        match shape {
            Shape::Envelope => envelope_result(envelope),
            Shape::Direct(key) => {
                if let Ok(mut waiting) = self.waiting.lock() {
                    match envelope.status.is_waiting() {
                        true => waiting.insert(key.clone(), envelope.run_id.clone()),
                        false => waiting.remove(key),
                    };
                }
                direct_result(envelope)
            }
        }
    }

    /// The definitions `tools/list` answers with: the three tools, or in direct mode the
    /// profile's own.
    fn listed(&self) -> Result<Vec<Tool>> {
        let host = self.host()?;
        Ok(match host.direct() {
            Some(direct) => direct.definitions.clone(),
            None => tools::definitions(&self.limits),
        })
    }
}

/// The error of a call whose work panicked before it answered.
const STOPPED: &str = "the call stopped before answering; see the hub's log on stderr";

/// What answering in place left to do.
enum InPlace {
    /// The answer went to the client.
    Sent,
    /// What the call produced, for the caller to answer with.
    Left(Box<Result<Answered>>),
}

/// The client a `tools/call` came from, as its answer is written from the thread that ran it.
struct Client {
    id: RequestId,
    /// Whether the client speaks revision 2026-07-28 or later, which shapes results differently.
    newer: bool,
    answers: Arc<dyn AnswerNow>,
    runtime: tokio::runtime::Handle,
}

impl Client {
    fn of(
        context: &RequestContext<RoleServer>,
        answers: Arc<dyn AnswerNow>,
        runtime: tokio::runtime::Handle,
    ) -> Client {
        let newer = context
            .protocol_version()
            .is_some_and(|version| version.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
        Client { id: context.id.clone(), newer, answers, runtime }
    }

    /// Writes `result` as the answer, shaped for the client's revision as rmcp shapes the
    /// results it writes itself (`handler/server.rs`); when it cannot be written, the result
    /// is left for rmcp to write.
    fn answer(&self, result: CallToolResult) -> InPlace {
        let mut shaped = ServerResult::CallToolResult(result);
        if self.newer {
            shaped.fill_missing_cache_hints();
        } else {
            shaped.strip_result_type_for_legacy_peer();
            shaped.strip_non_object_output_for_legacy_peer();
        }
        if self.answers.answer_now(&self.id, &shaped, &self.runtime) {
            return InPlace::Sent;
        }
        let result = match shaped {
            ServerResult::CallToolResult(result) => result,
            _ => error_text("the answer could not be written"),
        };
        InPlace::Left(Box::new(Ok(Answered::Text(result))))
    }
}

/// The server's runtime when a call can be answered in place: one with worker threads that
/// can take over its tasks while this one runs the call (the stdio server's).
fn in_place_runtime() -> Option<tokio::runtime::Handle> {
    let runtime = tokio::runtime::Handle::try_current().ok()?;
    (runtime.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread).then_some(runtime)
}

/// How a run's envelope goes back: as the envelope (`execute`), or as the tool's own result
/// (a direct call, with its key among waiting calls).
pub(super) enum Shape {
    Envelope,
    Direct(String),
}

/// What a call produced: a text answer, or a run's envelope.
pub(super) enum Answered {
    Text(CallToolResult),
    Run(Envelope, Shape),
}

/// One call, its arguments checked.
#[derive(Debug)]
pub(super) enum Request {
    Search(Value),
    Describe(Value),
    Execute(String),
    Resume(String),
}

/// One `tools/call`: the tool's name and its arguments, checked.
pub(super) fn parse_call(name: &str, arguments: Value, limits: &Limits) -> Result<Request, String> {
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
pub(super) fn answer(host: &Host, request: Request) -> Result<Answered> {
    Ok(match request {
        Request::Search(args) => Answered::Text(text_result(host.surface().search(&args))),
        Request::Describe(args) => Answered::Text(text_result(host.surface().describe(&args))),
        Request::Execute(code) => Answered::Run(host.execute(&code)?, Shape::Envelope),
        Request::Resume(run_id) => Answered::Run(host.resume(&run_id)?, Shape::Envelope),
    })
}

/// Runs `work` on a thread of the server's blocking pool and waits for it without blocking the
/// server's runtime. The pool keeps its threads for a while, so a call seldom pays for starting
/// one (nor for the run runtime each thread keeps, see [`Host`]). Once the answer is handed
/// over, the thread frees the finished run's sandbox and prepares the next one
/// ([`crate::host::after_answer`]), off the caller's clock.
pub(super) async fn on_own_thread<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    let (answer, answered) = tokio::sync::oneshot::channel();
    let task = tokio::task::spawn_blocking(move || {
        // The run's last record goes to the writer threads once the answer has left.
        let records = crate::store::answer_first();
        let result = work();
        let ticket = super::sent::ticket();
        let _ = answer.send(result);
        if let Some(ticket) = ticket {
            super::sent::wait_sent(ticket);
        }
        drop(records);
        crate::host::after_answer();
    });
    match answered.await {
        Ok(result) => result,
        Err(_) => {
            // The work panicked before answering: the task says so.
            let _ = task.await;
            Err(anyhow::anyhow!(STOPPED))
        }
    }
}

fn text_result(outcome: Result<String, String>) -> CallToolResult {
    match outcome {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(message) => error_text(message),
    }
}

pub(super) fn error_text(message: impl Into<String>) -> CallToolResult {
    CallToolResult::error(vec![ContentBlock::text(message.into())])
}

/// The envelope as structured content plus one compact line of text, and a `resource_link` for
/// each handle (read whole with `resources/read`). `isError` is set only for a failed run: the
/// call did not do what the code asked, and clients that look only at `isError` should see
/// that. Completed, waiting and cancelled runs are answers, not errors.
pub fn envelope_result(envelope: &Envelope) -> CallToolResult {
    let mut result = CallToolResult::structured(envelope.to_value());
    result.content = vec![ContentBlock::text(envelope.to_line())];
    for link in envelope.resource_links() {
        result.content.push(ContentBlock::resource_link(
            Resource::new(link.uri, link.name)
                .with_description(link.description)
                .with_mime_type(link.mime_type)
                .with_size(link.bytes),
        ));
    }
    result.is_error = Some(envelope.status == EnvelopeStatus::Failed);
    result
}

/// A direct call's run as the tool's own result (see [`direct::call_result`]), with a
/// `resource_link` for each handle.
pub fn direct_result(envelope: &Envelope) -> CallToolResult {
    let mut result: CallToolResult = serde_json::from_value(direct::call_result(envelope))
        .unwrap_or_else(|err| error_text(format!("the tool's result cannot be sent: {err}")));
    for link in envelope.resource_links() {
        result.content.push(ContentBlock::resource_link(
            Resource::new(link.uri, link.name)
                .with_description(link.description)
                .with_mime_type(link.mime_type)
                .with_size(link.bytes),
        ));
    }
    result
}

/// `resources/read` of a handle's URI: the part of its text the URI names, for this profile's
/// runs only.
fn read_handle(host: &Host, uri: &str) -> Result<ReadResourceResult, McpError> {
    match host.read_handle(uri) {
        Ok((record, slice)) => Ok(ReadResourceResult::new(vec![ResourceContents::TextResourceContents {
            uri: uri.to_owned(),
            mime_type: Some(handles::mime_type(record.kind).to_owned()),
            text: slice.text,
            meta: None,
        }])),
        Err(failure) => {
            Err(McpError::resource_not_found(failure.message, Some(serde_json::json!({ "uri": uri }))))
        }
    }
}

impl ServerHandler for HubServer {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder()
            .enable_tools()
            .enable_resources()
            .enable_skills_with_directory_read()
            .build();
        ServerConfig::new(capabilities)
            .with_server_info(Implementation::new("capabilities", env!("CARGO_PKG_VERSION")))
            .with_instructions(if self.direct { direct::INSTRUCTIONS } else { tools::INSTRUCTIONS })
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, McpError> {
        let server = self.clone();
        match on_own_thread(move || server.listed()).await {
            Ok(listed) => Ok(ListToolsResult::with_all_items(listed)),
            Err(err) => Err(McpError::internal_error(format!("{err:#}"), None)),
        }
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        // Only the hub already open is looked at: this must not block.
        let cached = self.host.try_lock().ok()?.open.as_ref().map(|(_, host)| Arc::clone(host));
        match cached.as_deref().and_then(Host::direct) {
            Some(direct) => direct.definitions.iter().find(|t| t.name == name).cloned(),
            None => tools::definition(name, &self.limits),
        }
    }

    async fn read_resource(
        &self,
        request: ReadResourceRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceResponse, McpError> {
        if request.uri.starts_with(skills::SCHEME) {
            let catalog = self.skills.catalog()?;
            return catalog.read_resource(&request.uri).map(Into::into).ok_or_else(|| {
                McpError::resource_not_found(format!("the hub has no skill file {}", request.uri), None)
            });
        }
        let server = self.clone();
        let uri = request.uri;
        match on_own_thread(move || Ok(read_handle(&*server.host()?, &uri))).await {
            Ok(read) => read.map(Into::into),
            Err(err) => Err(McpError::internal_error(format!("{err:#}"), None)),
        }
    }

    async fn list_resources(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListResourcesResult, McpError> {
        // Handles are not listed: a run's answer names its own.
        Ok(ListResourcesResult::with_all_items(self.skills.catalog()?.resources()))
    }

    async fn list_skills(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListSkillsResult, McpError> {
        Ok(self.skills.catalog()?.list_skills())
    }

    async fn get_skill(
        &self,
        request: GetSkillRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<GetSkillResult, McpError> {
        self.skills.catalog()?.get_skill(&request.uri)
    }

    async fn read_resource_directory(
        &self,
        request: ReadResourceDirectoryRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<ReadResourceDirectoryResult, McpError> {
        self.skills.catalog()?.read_resource_directory(&request.uri)
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, McpError> {
        let arguments = Value::Object(request.arguments.unwrap_or_default());
        if rounds::asks_inline(&context) {
            // Only a retried `execute` (or direct call) carries answers to record, as on the
            // hosted hub; search and describe ask nothing, so a state sent with them is not read.
            let request_state = request
                .request_state
                .filter(|_| request.name != tools::SEARCH && request.name != tools::DESCRIBE);
            return Ok(Box::pin(self.call_inline(
                &request.name,
                arguments,
                request.input_responses,
                request_state,
            ))
            .await);
        }
        // Boxed: the call's state machine is about 9 KB (the prompts it may put to a person),
        // and rmcp moves the task holding it several times as it spawns it, each time a copy.
        Ok(Box::pin(self.call_with(&request.name, arguments, Some(&context))).await.into())
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
            crate::host::words(),
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

//! One started source: how a connection is made (stdio or streamable HTTP, with a start
//! timeout and a clear reason when it fails) and how a request goes over it.

use std::time::Duration;

use capabilities_core::address::Namespace;
use capabilities_core::ports::Credentials;
use rmcp::model::{ClientCapabilities, ClientConfig, ClientRequest, Implementation};
use rmcp::service::{ClientInitializeError, PeerRequestOptions, RunningService, ServiceError};
use rmcp::{RoleClient, ServiceExt};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::http::{self, Refusal, TapClient};
use super::lane::{Lane, LaneEnd};
use super::stderr::{StderrTail, scrub};
use super::stdio::{self, ServerProcess, StdioSpec};
use super::tap::RawTap;
use super::{HeaderSlot, SourceError, SourceSpec, SourceTransport};

/// One started source.
pub(super) struct Connection {
    service: RunningService<RoleClient, ClientConfig>,
    tap: RawTap,
    /// HTTP only: the source's last refusal of the credentials.
    refusal: Option<Refusal>,
    process: Option<ServerProcess>,
    /// Stdio only: calls made in place, straight over the server's pipes.
    lane: Option<Lane>,
    tail: Option<StderrTail>,
    /// SHA-256 over the spec and the credential values it started with.
    pub(super) fingerprint: [u8; 32],
    secrets: Vec<String>,
}

impl Connection {
    /// Whether it can take requests. A stdio server whose stdout has ended is gone even before
    /// its exit is seen, so the next request starts a new one rather than failing on this one.
    pub(super) fn alive(&self) -> bool {
        !self.service.is_closed()
            && self.process.as_ref().is_none_or(|p| p.exited().is_none())
            && self.lane.as_ref().is_none_or(|lane| !lane.is_closed())
    }

    /// Whether calls can be made in place ([`Connection::call_tool_in_place`]): a stdio server
    /// (its pipes open when [`Connection::alive`]).
    pub(super) fn has_lane(&self) -> bool {
        self.lane.is_some()
    }

    /// Process group of its stdio server.
    pub(super) fn process_group(&self) -> Option<i32> {
        self.process.as_ref().map(ServerProcess::process_group)
    }

    /// Why it is dead.
    pub(super) fn describe_end(&self) -> String {
        describe_end_of(self.process.as_ref())
    }

    /// What the source says about itself at `initialize` (its `instructions`), if anything.
    pub(super) fn instructions(&self) -> Option<String> {
        self.service.peer_info().and_then(|info| info.instructions.clone())
    }

    pub(super) fn kill(&self) {
        if let Some(process) = &self.process {
            process.kill();
        }
    }
}

impl Drop for Connection {
    fn drop(&mut self) {
        self.kill();
    }
}

impl Connection {
    /// Starts the source of `spec` and runs `initialize` within `timeout`. On failure the
    /// server is killed and the reason names what went wrong (not found, exited, wrote text
    /// that is not MCP, timed out), with its last stderr line when there is one.
    pub(super) async fn start(
        spec: &SourceSpec,
        credentials: &Credentials,
        timeout: Duration,
        tail: StderrTail,
    ) -> Result<Connection, SourceError> {
        let fingerprint = fingerprint(spec, credentials);
        let namespace = spec.namespace.as_str();
        Namespace::new(namespace)
            .map_err(|e| SourceError::Config { namespace: namespace.to_owned(), reason: e.to_string() })?;
        match &spec.transport {
            SourceTransport::Stdio { command, args, env, env_slots, cwd, isolation } => {
                let stdio_spec = StdioSpec {
                    command,
                    args,
                    env,
                    env_slots,
                    cwd: cwd.as_deref(),
                    isolation: isolation.as_ref(),
                };
                Connection::start_stdio(spec, &stdio_spec, credentials, timeout, tail, fingerprint).await
            }
            SourceTransport::Http { url, header_slots } => {
                Connection::start_http(namespace, url, header_slots, credentials, timeout, fingerprint).await
            }
            SourceTransport::OpenApi(_) => Err(SourceError::Config {
                namespace: namespace.to_owned(),
                reason:
                    "it is an HTTP API: its operations are called one request each, with no MCP connection"
                        .to_owned(),
            }),
        }
    }

    /// Spawns a stdio server and runs `initialize` over its pipes.
    async fn start_stdio(
        spec: &SourceSpec,
        stdio_spec: &StdioSpec<'_>,
        credentials: &Credentials,
        timeout: Duration,
        tail: StderrTail,
        fingerprint: [u8; 32],
    ) -> Result<Connection, SourceError> {
        let namespace = spec.namespace.as_str();
        let tap = RawTap::default();
        let secrets: Vec<String> = credentials
            .values
            .iter()
            .filter(|(slot, _)| stdio_spec.env_slots.contains(slot))
            .map(|(_, value)| value.clone())
            .collect();
        tail.add_secrets(secrets.iter().map(String::as_str));
        let command = stdio::command(stdio_spec, credentials)
            .map_err(|reason| SourceError::Start { namespace: namespace.to_owned(), reason })?;
        let (transport, process, lane) =
            stdio::spawn(command, tail.clone(), tap.clone()).await.map_err(|e| SourceError::Start {
                namespace: namespace.to_owned(),
                reason: format!("could not run `{}`: {e}", spec_command(spec)),
            })?;
        let started = tokio::time::timeout(timeout, client_config().serve(transport)).await;
        // Once the client gave up it dropped the server's stdin, and the server may exit
        // because of that: only an exit that caused the failure is reported.
        let failure = match started {
            Ok(Ok(service)) => {
                return Ok(Connection {
                    service,
                    tap,
                    refusal: None,
                    process: Some(process),
                    lane: Some(lane),
                    tail: Some(tail),
                    fingerprint,
                    secrets,
                });
            }
            Ok(Err(ClientInitializeError::ConnectionClosed(_))) => {
                // The server closed stdout: give it a moment so its exit status is known.
                let exit = process.wait_exit(Duration::from_millis(500)).await;
                StartFailure { error: Some("it closed its stdout".to_owned()), exit, timed_out: false }
            }
            Ok(Err(error @ ClientInitializeError::TransportError { .. })) => {
                // Sending `initialize` failed (a broken pipe): the server most likely exited
                // first, so its exit, once known, is the reason.
                let exit = process.wait_exit(Duration::from_millis(500)).await;
                StartFailure { error: Some(error.to_string()), exit, timed_out: false }
            }
            Ok(Err(error)) => {
                StartFailure { error: Some(error.to_string()), exit: process.exited(), timed_out: false }
            }
            Err(_) => StartFailure { error: None, exit: process.exited(), timed_out: true },
        };
        process.kill();
        // Let the stderr pump catch up with the server's last words.
        tokio::time::sleep(Duration::from_millis(20)).await;
        Err(explain_start_failure(namespace, &process, &tail, &secrets, failure, timeout))
    }

    /// Connects to a streamable HTTP endpoint and runs `initialize` there.
    async fn start_http(
        namespace: &str,
        url: &str,
        header_slots: &[HeaderSlot],
        credentials: &Credentials,
        timeout: Duration,
        fingerprint: [u8; 32],
    ) -> Result<Connection, SourceError> {
        let config_error = |reason: String| SourceError::Config { namespace: namespace.to_owned(), reason };
        let tap = RawTap::default();
        let url = http::check_url(url).map_err(config_error)?;
        let headers = http::credential_headers(header_slots, credentials).map_err(config_error)?;
        let secrets: Vec<String> = credentials.values.iter().map(|(_, value)| value.clone()).collect();
        let refusal = Refusal::default();
        let client = TapClient {
            http: http::client(timeout).map_err(config_error)?,
            tap: tap.clone(),
            refusal: refusal.clone(),
        };
        let mut config =
            rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig::with_uri(
                url.as_str(),
            );
        config.custom_headers = headers;
        let transport = rmcp::transport::StreamableHttpClientTransport::with_client(client, config);
        match tokio::time::timeout(timeout, client_config().serve(transport)).await {
            Ok(Ok(service)) => Ok(Connection {
                service,
                tap,
                refusal: Some(refusal),
                process: None,
                lane: None,
                tail: None,
                fingerprint,
                secrets,
            }),
            Ok(Err(_)) if let Some(challenge) = refusal.take() => Err(if challenge.status == 429 {
                SourceError::RateLimited {
                    namespace: namespace.to_owned(),
                    retry_after_s: challenge.header.and_then(|h| h.parse::<u64>().ok()),
                }
            } else {
                SourceError::AuthRequired {
                    namespace: namespace.to_owned(),
                    status: challenge.status,
                    challenge: challenge.header,
                }
            }),
            Ok(Err(error)) => Err(SourceError::Start {
                namespace: namespace.to_owned(),
                reason: format!("`initialize` at {url} failed: {}", scrub(&error.to_string(), &secrets)),
            }),
            Err(_) => Err(SourceError::Timeout {
                namespace: namespace.to_owned(),
                method: "initialize".to_owned(),
                ms: millis(timeout),
            }),
        }
    }

    /// Sends one request and returns its raw result.
    pub(super) async fn request(
        &self,
        namespace: &str,
        method: &str,
        request: ClientRequest,
        timeout: Duration,
    ) -> Result<Value, SourceError> {
        let mut options = PeerRequestOptions::no_options();
        options.timeout = Some(timeout);
        let fail = |error: ServiceError| self.service_error(namespace, method, timeout, error);
        let handle = self.service.peer().send_request_with_option(request, options).await.map_err(fail)?;
        let id = handle.id.clone();
        match handle.await_response().await {
            Ok(typed) => Ok(match self.tap.take(&id) {
                Some(raw) => raw,
                None => serde_json::to_value(&typed).map_err(|e| SourceError::Protocol {
                    namespace: namespace.to_owned(),
                    reason: e.to_string(),
                })?,
            }),
            Err(error) => {
                self.tap.take(&id);
                Err(fail(error))
            }
        }
    }

    /// Calls `tool` over the lane, on the caller's runtime: what [`Connection::request`] does
    /// for `tools/call`, with the same errors, without the hop to the pool's runtime.
    pub(super) async fn call_tool_in_place(
        &self,
        namespace: &str,
        tool: &str,
        arguments: Option<serde_json::Map<String, Value>>,
        timeout: Duration,
    ) -> Result<Value, SourceError> {
        let Some(lane) = &self.lane else { return Err(self.closed(namespace)) };
        let mut params = serde_json::Map::new();
        params.insert("name".to_owned(), Value::String(tool.to_owned()));
        if let Some(arguments) = arguments {
            params.insert("arguments".to_owned(), Value::Object(arguments));
        }
        let method = "tools/call";
        lane.request(method, Value::Object(params), timeout).await.map_err(|end| match end {
            LaneEnd::Refused { message, code } => SourceError::Refused {
                namespace: namespace.to_owned(),
                method: method.to_owned(),
                message: scrub(&message, &self.secrets),
                code,
            },
            LaneEnd::Timeout => SourceError::Timeout {
                namespace: namespace.to_owned(),
                method: method.to_owned(),
                ms: millis(timeout),
            },
            LaneEnd::Closed => self.closed(namespace),
            LaneEnd::Malformed => SourceError::Protocol {
                namespace: namespace.to_owned(),
                reason: format!("its answer to `{method}` is neither a result nor an error"),
            },
        })
    }

    /// Why a request got no answer once the connection closed: how the server ended, with its
    /// last stderr line.
    fn closed(&self, namespace: &str) -> SourceError {
        let last_words = (self.tail.as_ref())
            .and_then(StderrTail::last_line)
            .map(|line| format!("; its last stderr line: {line}"))
            .unwrap_or_default();
        SourceError::Unavailable {
            namespace: namespace.to_owned(),
            reason: format!("{}{last_words}", self.describe_end()),
        }
    }

    /// The source's refusal of the credentials or its rate limit, if the last failure was one.
    fn refused(&self, namespace: &str) -> Option<SourceError> {
        let challenge = self.refusal.as_ref()?.take()?;
        if challenge.status == 429 {
            // `Retry-After` in seconds; an HTTP date is not read.
            let retry_after_s = challenge.header.and_then(|h| h.parse::<u64>().ok());
            return Some(SourceError::RateLimited { namespace: namespace.to_owned(), retry_after_s });
        }
        Some(SourceError::AuthRequired {
            namespace: namespace.to_owned(),
            status: challenge.status,
            challenge: challenge.header,
        })
    }

    fn service_error(
        &self,
        namespace: &str,
        method: &str,
        timeout: Duration,
        error: ServiceError,
    ) -> SourceError {
        if let Some(refused) = self.refused(namespace) {
            return refused;
        }
        let namespace = namespace.to_owned();
        match error {
            ServiceError::McpError(data) => SourceError::Refused {
                namespace,
                method: method.to_owned(),
                message: scrub(&data.message, &self.secrets),
                code: Some(i64::from(data.code.0)),
            },
            ServiceError::Timeout { .. } => {
                SourceError::Timeout { namespace, method: method.to_owned(), ms: millis(timeout) }
            }
            ServiceError::UnexpectedResponse => SourceError::Protocol {
                namespace,
                reason: format!("its answer to `{method}` is not the kind of result `{method}` returns"),
            },
            ServiceError::TransportClosed | ServiceError::Cancelled { .. } => self.closed(&namespace),
            other => SourceError::Unavailable { namespace, reason: scrub(&other.to_string(), &self.secrets) },
        }
    }
}

/// How the hub introduces itself to sources. It offers no client capabilities (no sampling,
/// roots or elicitation): a source cannot reach back through the hub.
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("capabilities", env!("CARGO_PKG_VERSION")),
    )
}

/// How a stdio server's start ended, when it did not answer `initialize`.
struct StartFailure {
    /// What the client saw, if anything.
    error: Option<String>,
    /// The server's exit status, if it exited.
    exit: Option<String>,
    timed_out: bool,
}

/// The reason a stdio server did not start, once it was killed: text it wrote on stdout that is
/// not MCP, its exit, the error `initialize` ended with, or else the timeout; with its last
/// stderr line when there is one.
fn explain_start_failure(
    namespace: &str,
    process: &ServerProcess,
    tail: &StderrTail,
    secrets: &[String],
    failure: StartFailure,
    timeout: Duration,
) -> SourceError {
    let StartFailure { error, exit, timed_out } = failure;
    let noise = process.noise().map(|(first, lines)| (scrub(&first, secrets), lines));
    let last_words =
        tail.last_line().map(|line| format!("; its last stderr line: {line}")).unwrap_or_default();
    if let Some((first, lines)) = noise {
        let more = if lines > 1 { format!(" (and {} more such lines)", lines - 1) } else { String::new() };
        return SourceError::Protocol {
            namespace: namespace.to_owned(),
            reason: format!(
                "it wrote `{first}` to stdout{more}; a stdio server may write only MCP messages there{last_words}"
            ),
        };
    }
    let reason = match (exit, error) {
        (Some(status), _) if !timed_out => {
            format!("it exited ({status}) before answering `initialize`{last_words}")
        }
        (_, Some(error)) => format!("`initialize` failed: {}{last_words}", scrub(&error, secrets)),
        _ => {
            return SourceError::Timeout {
                namespace: namespace.to_owned(),
                method: "initialize".to_owned(),
                ms: millis(timeout),
            };
        }
    };
    SourceError::Start { namespace: namespace.to_owned(), reason }
}

fn describe_end_of(process: Option<&ServerProcess>) -> String {
    match process.and_then(ServerProcess::exited) {
        Some(status) => format!("the server exited ({status})"),
        None => "the connection closed".to_owned(),
    }
}

fn spec_command(spec: &SourceSpec) -> &str {
    match &spec.transport {
        SourceTransport::Stdio { command, .. } => command,
        SourceTransport::Http { url, .. } => url,
        SourceTransport::OpenApi(api) => &api.base_url,
    }
}

pub(super) fn fingerprint(spec: &SourceSpec, credentials: &Credentials) -> [u8; 32] {
    let mut hasher = Sha256::new();
    hasher.update(serde_json::to_vec(spec).unwrap_or_default());
    for (slot, value) in &credentials.values {
        hasher.update((slot.len() as u64).to_le_bytes());
        hasher.update(slot.as_bytes());
        hasher.update((value.len() as u64).to_le_bytes());
        hasher.update(value.as_bytes());
    }
    hasher.finalize().into()
}

fn millis(duration: Duration) -> u64 {
    u64::try_from(duration.as_millis()).unwrap_or(u64::MAX)
}

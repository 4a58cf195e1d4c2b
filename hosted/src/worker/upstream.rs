//! The `Upstream` and `Secrets` ports inside the Worker: MCP sources over streamable HTTP
//! through `fetch`, only to each source's reviewed origin, with a per-call timeout; credential
//! values opened from their sealed records only when a call resolves its connection.
//!
//! The first call to a source (per connection) opens an MCP session (initialize, initialized,
//! the call); later calls reuse it while the tenant's configuration stays loaded, and a source
//! that forgot the session (HTTP 404) gets a new one before the call is sent again — it never
//! ran the call it refused. Redirects are never followed by `fetch` itself:
//! one on the same origin is followed here (at most three), one to another origin is refused,
//! so a credential never leaves the reviewed origin.
//!
//! An OAuth connection's access token (slot `#oauth`, see `oauth`) goes out as
//! `Authorization: Bearer`. A source's 401 or 403 is [`UpstreamError::Unauthorized`] with its
//! `WWW-Authenticate` challenge, so the engine can ask [`Secrets::rejected`] for a refreshed
//! token and try once more.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::time::Duration;

use capabilities_core::address::Namespace;
use capabilities_core::ports::{
    BoxFuture, Credentials, Secrets, SecretsError, Upstream, UpstreamError, UpstreamRequest,
};
use futures_util::future::{Either, select};
use serde_json::{Value, json};
use worker::{Delay, Fetch, Headers, Method, Request, RequestInit, RequestRedirect};

use super::oauth::Refreshing;
use super::store::{SqlStore, seal_label};
use crate::records::{Connection, OAUTH_SLOT, Source};
use crate::seal::SealKey;
use crate::wire::{Origin, read_answer, redirect_target};

const MAX_REDIRECTS: usize = 3;
/// The longest `WWW-Authenticate` challenge kept.
const MAX_CHALLENGE: usize = 2048;
const PROTOCOL_VERSION: &str = "2025-11-25";

/// The tenant's sources, reached with `fetch`.
pub(crate) struct FetchUpstream {
    pub(crate) sources: Rc<Vec<Source>>,
    pub(crate) sessions: Rc<Sessions>,
}

/// The MCP sessions open with each source and connection: the session id the source gave, or
/// `None` for a source that gives none (it keeps no state, so it needs no new initialize).
/// Kept in memory with the loaded configuration, so a new load starts afresh.
#[derive(Default)]
pub(crate) struct Sessions(RefCell<HashMap<String, Option<String>>>);

impl Sessions {
    fn key(request: &UpstreamRequest<'_>) -> String {
        format!("{}\0{}", request.namespace, request.credentials.connection.as_deref().unwrap_or_default())
    }
}

impl Upstream for FetchUpstream {
    fn call<'a>(&'a self, request: UpstreamRequest<'a>) -> BoxFuture<'a, Result<Value, UpstreamError>> {
        Box::pin(async move {
            let Some(source) = self.sources.iter().find(|s| s.namespace == request.namespace.as_str()) else {
                return Err(UpstreamError::Unavailable(format!(
                    "`{}` is not a source of this hub; load it first",
                    request.namespace
                )));
            };
            let origin = source.endpoint().map_err(UpstreamError::Unavailable)?;
            let timeout = Delay::from(Duration::from_millis(request.timeout_ms));
            let call: BoxFuture<'_, Result<Value, UpstreamError>> = match (&source.api, request.http) {
                (Some(api), Some(operation)) => Box::pin(super::api::call(api, &origin, operation, &request)),
                (None, None) => Box::pin(call_tool(source, &origin, &request, &self.sessions)),
                _ => {
                    return Err(UpstreamError::Unavailable(format!(
                        "`{}`'s record and its tool disagree on whether it is an HTTP API; push it again",
                        request.namespace
                    )));
                }
            };
            match select(call, timeout).await {
                Either::Left((result, _)) => result,
                Either::Right(((), _)) => Err(UpstreamError::Timeout(request.timeout_ms)),
            }
        })
    }
}

async fn call_tool(
    source: &Source,
    origin: &Origin,
    request: &UpstreamRequest<'_>,
    sessions: &Sessions,
) -> Result<Value, UpstreamError> {
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": request.tool, "arguments": request.arguments }
    });
    let key = Sessions::key(request);
    let open = sessions.0.borrow().get(&key).cloned();
    if let Some(id) = open {
        let session = Session { source, origin, credentials: request.credentials, id };
        let reply = session.post(&call).await?;
        // 404 on a request carrying a session id: the source no longer knows the session and
        // did not run the call.
        if !(reply.status == 404 && session.id.is_some()) {
            let answer = reply.answer(request.credentials)?;
            return read_answer(&answer.content_type, &answer.body, 2);
        }
        sessions.0.borrow_mut().remove(&key);
    }
    let id = initialize(source, origin, request).await?;
    sessions.0.borrow_mut().insert(key, id.clone());
    let session = Session { source, origin, credentials: request.credentials, id };
    let answer = session.post(&call).await?.answer(request.credentials)?;
    read_answer(&answer.content_type, &answer.body, 2)
}

/// Opens a session with the source: initialize, then initialized; the session id it gave.
async fn initialize(
    source: &Source,
    origin: &Origin,
    request: &UpstreamRequest<'_>,
) -> Result<Option<String>, UpstreamError> {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "capabilities-hosted", "version": env!("CARGO_PKG_VERSION") }
        }
    });
    let session = Session { source, origin, credentials: request.credentials, id: None };
    let reply = session.post(&initialize).await?;
    let id = reply.session.clone();
    let answer = reply.answer(request.credentials)?;
    read_answer(&answer.content_type, &answer.body, 1)?;
    let session = Session { id, ..session };
    session
        .post(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
        .await?
        .answer(request.credentials)?;
    Ok(session.id)
}

struct Answer {
    content_type: String,
    body: String,
}

/// One HTTP answer from a source: its status, the session id it gave, if any, its
/// `WWW-Authenticate` challenge, if any, and the body.
struct Reply {
    status: u16,
    session: Option<String>,
    challenge: Option<String>,
    /// `Retry-After` in seconds, on a 429.
    retry_after: Option<u64>,
    answer: Answer,
}

impl Reply {
    /// The body of a successful answer; a 401 or 403 is the source refusing the credentials
    /// (said without the body, which a source may fill with what it was sent); another error
    /// status is reported with a short, scrubbed excerpt of what the source said.
    fn answer(self, credentials: &Credentials) -> Result<Answer, UpstreamError> {
        if self.status < 400 {
            return Ok(self.answer);
        }
        if self.status == 429 {
            return Err(UpstreamError::RateLimited { retry_after_s: self.retry_after });
        }
        if matches!(self.status, 401 | 403) {
            let scope = self.challenge.as_deref().is_some_and(|c| c.contains("insufficient_scope"));
            let message = if scope {
                format!("the source answered HTTP {}: the token lacks a scope it needs", self.status)
            } else {
                format!("the source answered HTTP {}", self.status)
            };
            return Err(UpstreamError::Unauthorized { message, challenge: self.challenge });
        }
        let mut shown: String = self.answer.body.chars().take(200).collect();
        for (_, value) in &credentials.values {
            shown = shown.replace(value.as_str(), "[secret]");
        }
        Err(UpstreamError::Unavailable(format!("the source answered HTTP {}: {shown}", self.status)))
    }
}

struct Session<'a> {
    source: &'a Source,
    origin: &'a Origin,
    credentials: &'a Credentials,
    id: Option<String>,
}

impl Session<'_> {
    /// POSTs one message, following same-origin redirects; what the source answered.
    async fn post(&self, message: &Value) -> Result<Reply, UpstreamError> {
        let unavailable = |e: worker::Error| UpstreamError::Unavailable(e.to_string());
        let mut url = self.source.url.clone();
        for _ in 0..=MAX_REDIRECTS {
            let headers = Headers::new();
            headers.set("content-type", "application/json").map_err(unavailable)?;
            headers.set("accept", "application/json, text/event-stream").map_err(unavailable)?;
            headers.set("mcp-protocol-version", PROTOCOL_VERSION).map_err(unavailable)?;
            if let Some(id) = &self.id {
                headers.set("mcp-session-id", id).map_err(unavailable)?;
            }
            for (slot, value) in &self.credentials.values {
                let (name, value) = match slot.as_str() {
                    OAUTH_SLOT => ("authorization", format!("Bearer {value}")),
                    _ => (slot.as_str(), value.clone()),
                };
                // The worker's text could quote the value: say only which header.
                headers.set(name, &value).map_err(|_| {
                    UpstreamError::Unavailable(format!(
                        "the value for header `{name}` is not a valid header value"
                    ))
                })?;
            }
            let mut init = RequestInit::new();
            init.with_method(Method::Post)
                .with_headers(headers)
                .with_redirect(RequestRedirect::Manual)
                .with_body(Some(message.to_string().into()));
            let request = Request::new_with_init(&url, &init).map_err(unavailable)?;
            let mut response = Fetch::Request(request).send().await.map_err(unavailable)?;
            let status = response.status_code();
            let header = |name: &str| response.headers().get(name).ok().flatten();
            if (300..400).contains(&status) {
                let location = header("location").unwrap_or_default();
                url = redirect_target(&url, &location, self.origin)
                    .map_err(|message| UpstreamError::Refused { message, status: None })?;
                continue;
            }
            let session = header("mcp-session-id").or_else(|| self.id.clone());
            let challenge =
                header("www-authenticate").map(|c| c.chars().take(MAX_CHALLENGE).collect::<String>());
            let retry_after = header("retry-after").and_then(|s| s.trim().parse::<u64>().ok());
            let content_type = header("content-type").unwrap_or_default();
            let body = response.text().await.map_err(unavailable)?;
            return Ok(Reply {
                status,
                session,
                challenge,
                retry_after,
                answer: Answer { content_type, body },
            });
        }
        Err(UpstreamError::Unavailable(format!("more than {MAX_REDIRECTS} redirects; not followed")))
    }
}

/// Credentials opened from the tenant's sealed records; an OAuth connection's refreshed when
/// they expire or the source refuses them (see `oauth`).
pub(crate) struct SealedSecrets {
    pub(crate) tenant: String,
    pub(crate) sources: Rc<Vec<Source>>,
    pub(crate) store: SqlStore,
    pub(crate) key: Option<SealKey>,
    pub(crate) refreshing: Rc<Refreshing>,
}

impl Secrets for SealedSecrets {
    fn resolve<'a>(
        &'a self,
        namespace: &'a Namespace,
        connection: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Credentials, SecretsError>> {
        Box::pin(async move {
            let namespace = namespace.as_str();
            let Some(connection) = self.connection(namespace, connection)? else {
                return Ok(Credentials::default());
            };
            match &connection.oauth {
                Some(client) => self.oauth_credentials(namespace, &connection.name, client, None).await,
                None => self.lookup(namespace, connection),
            }
        })
    }

    fn rejected<'a>(
        &'a self,
        namespace: &'a Namespace,
        rejected: &'a Credentials,
        challenge: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Credentials>, SecretsError>> {
        Box::pin(async move {
            let namespace = namespace.as_str();
            let Some(connection) = self.connection(namespace, rejected.connection.as_deref())? else {
                return Ok(None);
            };
            let Some(client) = &connection.oauth else { return Ok(None) };
            // A token that lacks a scope is not cured by a refresh: a person signs in for more.
            if challenge.is_some_and(|c| c.contains("insufficient_scope")) {
                return Ok(None);
            }
            let token = rejected.values.iter().find(|(slot, _)| slot == OAUTH_SLOT).map(|(_, v)| v.as_str());
            self.oauth_credentials(namespace, &connection.name, client, token).await.map(Some)
        })
    }
}

impl SealedSecrets {
    /// The connection a call uses; `None` for a source that has none and was asked for none.
    fn connection(&self, namespace: &str, named: Option<&str>) -> Result<Option<&Connection>, SecretsError> {
        let Some(source) = self.sources.iter().find(|s| s.namespace == namespace) else {
            return Err(SecretsError::Unavailable(format!("`{namespace}` is not a source of this hub")));
        };
        if source.connections.is_empty() && named.is_none() {
            return Ok(None);
        }
        match source.connection(named) {
            Some(connection) => Ok(Some(connection)),
            None => Err(SecretsError::UnknownConnection {
                namespace: namespace.to_owned(),
                connection: named.unwrap_or("(none chosen)").to_owned(),
                known: source.connections.iter().map(|c| c.name.clone()).collect(),
            }),
        }
    }

    pub(super) fn key(&self) -> Result<&SealKey, SecretsError> {
        self.key.as_ref().ok_or_else(|| {
            SecretsError::Unavailable("the HUB_SECRETS_KEY secret is not set on the Worker".to_owned())
        })
    }

    /// The values of a connection's declared slots (headers).
    fn lookup(&self, namespace: &str, connection: &Connection) -> Result<Credentials, SecretsError> {
        let sealed = self
            .store
            .sealed(namespace, &connection.name)
            .map_err(|e| SecretsError::Unavailable(e.to_string()))?;
        let missing: Vec<String> =
            connection.slots.iter().filter(|slot| !sealed.iter().any(|(s, _)| s == *slot)).cloned().collect();
        if !missing.is_empty() {
            return Err(SecretsError::Missing {
                namespace: namespace.to_owned(),
                connection: connection.name.clone(),
                slots: missing,
            });
        }
        let key = self.key()?;
        let mut values = Vec::new();
        for (slot, sealed) in sealed {
            let label = seal_label(&self.tenant, namespace, &connection.name, &slot);
            let plain = key.open(&label, &sealed).map_err(|e| SecretsError::Unavailable(e.to_string()))?;
            let value = String::from_utf8(plain)
                .map_err(|_| SecretsError::Unavailable(format!("the value of `{slot}` is not text")))?;
            values.push((slot, value));
        }
        Ok(Credentials { connection: Some(connection.name.clone()), values })
    }
}

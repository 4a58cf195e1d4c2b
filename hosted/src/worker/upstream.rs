//! The `Upstream` and `Secrets` ports inside the Worker: MCP sources over streamable HTTP
//! through `fetch`, only to each source's reviewed origin, with a per-call timeout; credential
//! values opened from their sealed records only when a call resolves its connection.
//!
//! Each call opens an MCP session of its own (initialize, initialized, the call), so nothing
//! about a source is kept between requests. Redirects are never followed by `fetch` itself:
//! one on the same origin is followed here (at most three), one to another origin is refused,
//! so a credential never leaves the reviewed origin.

use std::rc::Rc;
use std::time::Duration;

use capabilities_core::address::Namespace;
use capabilities_core::ports::{
    BoxFuture, Credentials, Secrets, SecretsError, Upstream, UpstreamError, UpstreamRequest,
};
use futures_util::future::{Either, select};
use serde_json::{Value, json};
use worker::{Delay, Fetch, Headers, Method, Request, RequestInit, RequestRedirect};

use super::store::{SqlStore, seal_label};
use crate::records::Source;
use crate::seal::SealKey;
use crate::wire::{Origin, read_answer, redirect_target};

const MAX_REDIRECTS: usize = 3;
const PROTOCOL_VERSION: &str = "2025-11-25";

/// The tenant's sources, reached with `fetch`.
pub(crate) struct FetchUpstream {
    pub(crate) sources: Rc<Vec<Source>>,
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
            let call = Box::pin(call_tool(source, &origin, &request));
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
) -> Result<Value, UpstreamError> {
    let initialize = json!({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": PROTOCOL_VERSION,
            "capabilities": {},
            "clientInfo": { "name": "capabilities-hosted", "version": env!("CARGO_PKG_VERSION") }
        }
    });
    let session = Session { source, origin, credentials: request.credentials, id: None };
    let (answer, id) = session.post(&initialize).await?;
    read_answer(&answer.content_type, &answer.body, 1)?;
    let session = Session { id, ..session };
    session.post(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" })).await?;
    let call = json!({
        "jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": { "name": request.tool, "arguments": request.arguments }
    });
    let (answer, _) = session.post(&call).await?;
    read_answer(&answer.content_type, &answer.body, 2)
}

struct Answer {
    content_type: String,
    body: String,
}

struct Session<'a> {
    source: &'a Source,
    origin: &'a Origin,
    credentials: &'a Credentials,
    id: Option<String>,
}

impl Session<'_> {
    /// POSTs one message; the answer and the session id the source gave, if any.
    async fn post(&self, message: &Value) -> Result<(Answer, Option<String>), UpstreamError> {
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
                headers.set(slot, value).map_err(unavailable)?;
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
            let content_type = header("content-type").unwrap_or_default();
            let body = response.text().await.map_err(unavailable)?;
            if status >= 400 {
                let mut shown: String = body.chars().take(200).collect();
                for (_, value) in &self.credentials.values {
                    shown = shown.replace(value.as_str(), "[secret]");
                }
                return Err(UpstreamError::Unavailable(format!(
                    "the source answered HTTP {status}: {shown}"
                )));
            }
            return Ok((Answer { content_type, body }, session));
        }
        Err(UpstreamError::Unavailable(format!("more than {MAX_REDIRECTS} redirects; not followed")))
    }
}

/// Credentials opened from the tenant's sealed records.
pub(crate) struct SealedSecrets {
    pub(crate) tenant: String,
    pub(crate) sources: Rc<Vec<Source>>,
    pub(crate) store: SqlStore,
    pub(crate) key: Option<SealKey>,
}

impl Secrets for SealedSecrets {
    fn resolve<'a>(
        &'a self,
        namespace: &'a Namespace,
        connection: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Credentials, SecretsError>> {
        Box::pin(async move { self.lookup(namespace.as_str(), connection) })
    }
}

impl SealedSecrets {
    fn lookup(&self, namespace: &str, named: Option<&str>) -> Result<Credentials, SecretsError> {
        let Some(source) = self.sources.iter().find(|s| s.namespace == namespace) else {
            return Err(SecretsError::Unavailable(format!("`{namespace}` is not a source of this hub")));
        };
        if source.connections.is_empty() && named.is_none() {
            return Ok(Credentials::default());
        }
        let Some(connection) = source.connection(named) else {
            return Err(SecretsError::UnknownConnection {
                namespace: namespace.to_owned(),
                connection: named.unwrap_or("(none chosen)").to_owned(),
                known: source.connections.iter().map(|c| c.name.clone()).collect(),
            });
        };
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
        let key = self.key.as_ref().ok_or_else(|| {
            SecretsError::Unavailable("the HUB_SECRETS_KEY secret is not set on the Worker".to_owned())
        })?;
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

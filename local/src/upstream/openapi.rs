//! HTTP API sources: one operation call as one request, with reqwest.
//!
//! Core builds the request ([`request::build`]) and shapes the answer ([`response::shape`]);
//! this file sends it. Redirects are followed only on the base URL's origin and only when they
//! keep the method (307, 308), so the credential never leaves the origin a person reviewed. The
//! body is read up to [`response::MAX_BODY_BYTES`] and a larger answer fails without being kept.
//! A 401 or 403 is `Unauthorized`: the engine asks the `Secrets` port once more (an OAuth
//! connection's refreshed token), else the call fails `auth_required`.

use std::time::Duration;

use capabilities_core::openapi::{HttpApi, HttpAuth, HttpOperation, request, response};
use capabilities_core::ports::{Credentials, UpstreamError};
use futures_util::StreamExt;
use serde_json::Value;

/// Sends one operation call and returns its `CallToolResult`.
pub(super) async fn call(
    client: &reqwest::Client,
    api: &HttpApi,
    operation: &HttpOperation,
    arguments: &Value,
    credentials: &Credentials,
    timeout: Duration,
) -> Result<Value, UpstreamError> {
    let credential = HttpAuth::credential(credentials);
    let built = request::build(api, operation, arguments, credential)
        .map_err(|error| UpstreamError::Refused { message: error.to_string(), status: Some(-32602) })?;
    let method = reqwest::Method::from_bytes(built.method.as_bytes())
        .map_err(|_| UpstreamError::Protocol(format!("`{}` is not an HTTP method", built.method)))?;
    let mut outgoing = client.request(method, &built.url).timeout(timeout);
    for (name, value) in &built.headers {
        let mut value =
            reqwest::header::HeaderValue::from_str(value).map_err(|_| UpstreamError::Refused {
                message: format!("header `{name}` holds characters a header cannot carry"),
                status: Some(-32602),
            })?;
        value.set_sensitive(true);
        outgoing = outgoing.header(name.as_str(), value);
    }
    if let Some(body) = built.body {
        outgoing = outgoing.body(body);
    }
    let ms = u64::try_from(timeout.as_millis()).unwrap_or(u64::MAX);
    let answer = outgoing.send().await.map_err(|error| failed(&error, ms))?;
    let status = answer.status().as_u16();
    let headers: Vec<(String, String)> = answer
        .headers()
        .iter()
        .filter_map(|(name, value)| Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned())))
        .collect();
    if let Some(length) = answer.content_length()
        && length > response::MAX_BODY_BYTES as u64
    {
        return Err(too_large());
    }
    let mut body = Vec::new();
    let mut chunks = answer.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|error| failed(&error, ms))?;
        if body.len() + chunk.len() > response::MAX_BODY_BYTES {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    response::shape(status, &headers, &body)
}

fn too_large() -> UpstreamError {
    UpstreamError::Protocol(format!(
        "the API's answer is larger than {} MiB; ask for less (a page size, a filter)",
        response::MAX_BODY_BYTES / (1024 * 1024)
    ))
}

fn failed(error: &reqwest::Error, ms: u64) -> UpstreamError {
    if error.is_timeout() {
        return UpstreamError::Timeout(ms);
    }
    // reqwest's message names the URL, whose query may hold a credential: only its kind.
    let kind = if error.is_connect() {
        "could not connect"
    } else if error.is_redirect() {
        "a redirect the hub does not follow"
    } else if error.is_body() || error.is_decode() {
        "the answer broke off"
    } else {
        "the request failed"
    };
    UpstreamError::Unavailable(format!("the API: {kind}"))
}

//! Streamable HTTP sources: the reqwest client (redirects stay on the reviewed origin), the
//! credential headers, and a client wrapper that copies raw results into the tap.
//!
//! Credentials ride as headers on requests to the source's URL only. rmcp sends every request
//! of a connection to that one URL, and the client follows a redirect only when it keeps the
//! origin and the method (307, 308); any other redirect ends the request. Response headers
//! never reach a result: the pool returns JSON bodies only.
//!
//! Every message is posted here rather than by rmcp's reqwest client: that client parses a JSON
//! body straight into rmcp's typed model (the raw answers to `tools/list` and `tools/call` are
//! kept in the tap), and it reports a 401 only when a challenge header comes with it. The GET
//! stream and session delete go through rmcp's client unchanged.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use capabilities_core::ports::Credentials;
use futures_util::StreamExt;
use futures_util::future::BoxFuture;
use futures_util::stream::BoxStream;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderName, HeaderValue};
use rmcp::model::{ClientJsonRpcMessage, JsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_client::{
    AuthRequiredError, InsufficientScopeError, StreamableHttpClient, StreamableHttpError,
    StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use serde_json::Value;
use sse_stream::{Error as SseError, Sse, SseStream};

use super::HeaderSlot;
use super::tap::RawTap;

const SESSION_HEADER: &str = "mcp-session-id";

/// Headers a credential slot may not take: the transport sets them itself.
const RESERVED: &[&str] = &[
    "accept",
    "content-type",
    "content-length",
    "host",
    "mcp-session-id",
    "mcp-protocol-version",
    "last-event-id",
];

/// Most redirects followed for one request (same origin, 307 or 308 only).
const MAX_REDIRECTS: usize = 5;

/// Largest SSE answer to a tapped request.
const MAX_SSE_BYTES: usize = 32 * 1024 * 1024;

/// Checks a source URL: http(s), and plain http only on loopback.
pub fn check_url(url: &str) -> Result<reqwest::Url, String> {
    let parsed = reqwest::Url::parse(url).map_err(|e| format!("its URL `{url}` does not parse: {e}"))?;
    match parsed.scheme() {
        "https" => Ok(parsed),
        "http" if is_loopback(&parsed) => Ok(parsed),
        "http" => Err(format!("its URL `{url}` is plain http to another machine; use https")),
        other => Err(format!("its URL `{url}` has scheme `{other}`; use https")),
    }
}

fn is_loopback(url: &reqwest::Url) -> bool {
    let Some(host) = url.host_str() else { return false };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost")
        || host.parse::<std::net::IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

/// The credential headers for one connection: `name: prefix + value` for each slot that has a
/// value. A slot without a value is left out.
pub(crate) fn credential_headers(
    slots: &[HeaderSlot],
    credentials: &Credentials,
) -> Result<HashMap<HeaderName, HeaderValue>, String> {
    let mut headers = HashMap::new();
    // An OAuth connection's access token: always the bearer token.
    if let Some((_, token)) = credentials.values.iter().find(|(slot, _)| slot == crate::oauth::tokens::SLOT) {
        let mut value = HeaderValue::from_str(&format!("Bearer {token}"))
            .map_err(|_| "the OAuth access token is not a valid header value".to_owned())?;
        value.set_sensitive(true);
        headers.insert(reqwest::header::AUTHORIZATION, value);
    }
    for slot in slots {
        let name = header_name(&slot.name)?;
        let Some((_, value)) =
            credentials.values.iter().find(|(known, _)| known.eq_ignore_ascii_case(&slot.name))
        else {
            continue;
        };
        let mut value = HeaderValue::from_str(&format!("{}{value}", slot.prefix))
            .map_err(|_| format!("the value for header `{}` is not a valid header value", slot.name))?;
        value.set_sensitive(true);
        headers.insert(name, value);
    }
    Ok(headers)
}

/// Checks a header slot's name.
pub(crate) fn header_name(name: &str) -> Result<HeaderName, String> {
    let parsed =
        HeaderName::from_bytes(name.as_bytes()).map_err(|_| format!("`{name}` is not a header name"))?;
    if RESERVED.contains(&parsed.as_str()) {
        return Err(format!("header `{name}` is set by the transport and cannot carry a credential"));
    }
    Ok(parsed)
}

/// The reqwest client for one source.
pub(crate) fn client(connect_timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .redirect(same_origin_redirects())
        .connect_timeout(connect_timeout)
        .pool_max_idle_per_host(0)
        .build()
        .map_err(|e| format!("could not build its HTTP client: {e}"))
}

/// The client HTTP API sources share: the same redirect rule, connections kept alive.
pub(crate) fn api_client(connect_timeout: Duration) -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .redirect(same_origin_redirects())
        .connect_timeout(connect_timeout)
        .build()
        .map_err(|e| format!("could not build the HTTP client: {e}"))
}

/// Follows 307 and 308 on the same origin (they keep method and body); stops at anything else,
/// so credentials and the session never reach another origin.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let keeps_body = matches!(
            attempt.status(),
            reqwest::StatusCode::TEMPORARY_REDIRECT | reqwest::StatusCode::PERMANENT_REDIRECT
        );
        let same_origin =
            attempt.previous().first().is_some_and(|first| first.origin() == attempt.url().origin());
        if !keeps_body || !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error(format!("more than {MAX_REDIRECTS} redirects"))
        } else {
            attempt.follow()
        }
    })
}

/// rmcp's reqwest client plus the tap, and what the source said when it refused the
/// connection's credentials.
#[derive(Clone)]
pub(crate) struct TapClient {
    pub(crate) http: reqwest::Client,
    pub(crate) tap: RawTap,
    pub(crate) refusal: Refusal,
}

/// The last 401 or 403 a source answered, with its `WWW-Authenticate` challenge, or 429 with
/// its `Retry-After`: rmcp reports only that a request failed, so the connection looks here to
/// tell a refused credential or a rate limit from any other failure.
#[derive(Clone, Default)]
pub(crate) struct Refusal(Arc<std::sync::Mutex<Option<Challenge>>>);

/// A source's refusal of the credentials it was sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Challenge {
    pub(crate) status: u16,
    /// The `WWW-Authenticate` header (401, 403) or `Retry-After` (429), when there was one.
    pub(crate) header: Option<String>,
}

impl Refusal {
    fn set(&self, challenge: Challenge) {
        *self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()) = Some(challenge);
    }

    /// The refusal, if one came since the last take.
    pub(crate) fn take(&self) -> Option<Challenge> {
        self.0.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).take()
    }
}

type HttpError = StreamableHttpError<reqwest::Error>;
type PostResult = Result<StreamableHttpPostResponse, HttpError>;

impl StreamableHttpClient for TapClient {
    type Error = reqwest::Error;

    fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = PostResult> + Send + '_ {
        self.post_message_with_response_limits(
            uri,
            message,
            session_id,
            auth_header,
            custom_headers,
            StreamableHttpResponseLimits::default(),
        )
    }

    fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> impl Future<Output = PostResult> + Send + '_ {
        let fut: BoxFuture<'_, PostResult> =
            Box::pin(self.post(uri, message, session_id, auth_header, custom_headers, limits));
        fut
    }

    fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<(), HttpError>> + Send + '_ {
        self.http.delete_session(uri, session_id, auth_header, custom_headers)
    }

    fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> impl Future<Output = Result<BoxStream<'static, Result<Sse, SseError>>, HttpError>> + Send + '_ {
        self.http.get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
    }

    fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> impl Future<Output = Result<BoxStream<'static, Result<Sse, SseError>>, HttpError>> + Send + '_ {
        self.http.get_stream_with_max_sse_event_size(
            uri,
            session_id,
            last_event_id,
            auth_header,
            custom_headers,
            max_sse_event_size,
        )
    }
}

impl TapClient {
    /// Posts a message. The raw answers to `tools/list` and `tools/call` go to the tap; a 401 or
    /// 403 is kept as the connection's refusal, whether or not it carries a challenge.
    async fn post(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> PostResult {
        let mut request = self.http.post(uri.as_ref()).header(ACCEPT, "text/event-stream, application/json");
        if let Some(token) = auth_header {
            request = request.bearer_auth(token);
        }
        for (name, value) in custom_headers {
            request = request.header(name, value);
        }
        let had_session = session_id.is_some();
        if let Some(session) = &session_id {
            request = request.header(SESSION_HEADER, session.as_ref());
        }
        let tapped = matches!(&message, JsonRpcMessage::Request(request)
            if matches!(request.request.method(), "tools/list" | "tools/call"));
        let response = request.json(&message).send().await?;
        let status = response.status();
        if matches!(status, reqwest::StatusCode::UNAUTHORIZED | reqwest::StatusCode::FORBIDDEN) {
            let header = response
                .headers()
                .get(reqwest::header::WWW_AUTHENTICATE)
                .and_then(|value| value.to_str().ok())
                .map(|value| super::stderr::shorten(value, 2048));
            self.refusal.set(Challenge { status: status.as_u16(), header: header.clone() });
            let header = header.unwrap_or_default();
            return Err(if status == reqwest::StatusCode::UNAUTHORIZED {
                StreamableHttpError::AuthRequired(AuthRequiredError::new(header))
            } else {
                StreamableHttpError::InsufficientScope(InsufficientScopeError::new(header, None))
            });
        }
        if status == reqwest::StatusCode::NOT_FOUND && had_session {
            return Err(StreamableHttpError::SessionExpired);
        }
        if matches!(status, reqwest::StatusCode::ACCEPTED | reqwest::StatusCode::NO_CONTENT) {
            return Ok(StreamableHttpPostResponse::Accepted);
        }
        let session = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned)
            .or_else(|| session_id.as_deref().map(str::to_owned));
        let content_type = response
            .headers()
            .get(CONTENT_TYPE)
            .and_then(|value| value.to_str().ok())
            .map(|value| value.split(';').next().unwrap_or_default().trim().to_ascii_lowercase());
        if status == reqwest::StatusCode::TOO_MANY_REQUESTS {
            let wait = response
                .headers()
                .get(reqwest::header::RETRY_AFTER)
                .and_then(|value| value.to_str().ok())
                .map(|value| super::stderr::shorten(value.trim(), 64));
            self.refusal.set(Challenge { status: 429, header: wait });
            return Err(StreamableHttpError::UnexpectedServerResponse("HTTP 429: too many requests".into()));
        }
        if !status.is_success() {
            let body =
                read_limited(response, limits.max_error_response_size.max(1024)).await.unwrap_or_default();
            if let Ok(error @ JsonRpcMessage::Error(_)) =
                serde_json::from_slice::<ServerJsonRpcMessage>(&body)
            {
                return Ok(StreamableHttpPostResponse::Json(error, session));
            }
            let text = String::from_utf8_lossy(&body);
            let text = super::stderr::shorten(text.trim(), 300);
            let detail = if status.is_redirection() {
                "a redirect the hub does not follow (another origin, or one that changes the method)"
                    .to_owned()
            } else {
                text
            };
            return Err(StreamableHttpError::UnexpectedServerResponse(
                format!("HTTP {status}: {detail}").into(),
            ));
        }
        match content_type.as_deref() {
            Some("text/event-stream") => {
                let bytes = response.bytes_stream().map(|chunk| chunk.map_err(std::io::Error::other)).scan(
                    Some(0usize),
                    |seen, chunk| {
                        let item = match (seen.as_mut(), chunk) {
                            (None, _) => None,
                            (Some(total), Ok(bytes)) if *total + bytes.len() > MAX_SSE_BYTES => {
                                *seen = None;
                                Some(Err(std::io::Error::other(format!(
                                    "the answer is larger than {MAX_SSE_BYTES} bytes"
                                ))))
                            }
                            (Some(total), Ok(bytes)) => {
                                *total += bytes.len();
                                Some(Ok(bytes))
                            }
                            (Some(_), Err(error)) => Some(Err(error)),
                        };
                        std::future::ready(item)
                    },
                );
                let events = SseStream::from_bytes_stream(bytes).boxed();
                Ok(StreamableHttpPostResponse::Sse(tap_sse(events, self.tap.clone()), session))
            }
            Some("application/json") => {
                let body = read_limited(response, limits.max_json_response_size).await?;
                let raw: Value = serde_json::from_slice(&body)?;
                if tapped {
                    self.tap.observe(&raw);
                }
                let message: ServerJsonRpcMessage = serde_json::from_value(raw)?;
                Ok(StreamableHttpPostResponse::Json(message, session))
            }
            other => Err(StreamableHttpError::UnexpectedContentType(other.map(str::to_owned))),
        }
    }
}

/// Reads a body of at most `max` bytes.
async fn read_limited(response: reqwest::Response, max: usize) -> Result<Vec<u8>, HttpError> {
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk?;
        if body.len() + chunk.len() > max {
            return Err(StreamableHttpError::ResponseBodyTooLarge { max_size: max });
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// Copies each SSE message's JSON into the tap on its way to rmcp.
fn tap_sse(
    events: BoxStream<'static, Result<Sse, SseError>>,
    tap: RawTap,
) -> BoxStream<'static, Result<Sse, SseError>> {
    events
        .inspect(move |event| {
            if let Ok(Sse { data: Some(data), .. }) = event
                && let Ok(message) = serde_json::from_str::<Value>(data)
            {
                tap.observe(&message);
            }
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_https_or_loopback() {
        assert!(check_url("https://mcp.example.com/mcp").is_ok());
        assert!(check_url("http://127.0.0.1:4790/mcp").is_ok());
        assert!(check_url("http://localhost:1/mcp").is_ok());
        assert!(check_url("http://[::1]:1/mcp").is_ok());
        assert_eq!(
            check_url("http://mcp.example.com/mcp").unwrap_err(),
            "its URL `http://mcp.example.com/mcp` is plain http to another machine; use https"
        );
        assert!(check_url("file:///etc/passwd").is_err());
        assert!(check_url("not a url").is_err());
    }

    #[test]
    fn credential_headers_take_the_prefix_and_skip_missing_values() {
        let credentials = Credentials {
            connection: Some("work".to_owned()),
            values: vec![("authorization".to_owned(), "tok".to_owned())],
        };
        let slots =
            [HeaderSlot::bearer(), HeaderSlot { name: "X-Api-Key".to_owned(), prefix: String::new() }];
        let headers = credential_headers(&slots, &credentials).unwrap();
        assert_eq!(headers.len(), 1);
        let value = &headers[&HeaderName::from_static("authorization")];
        assert_eq!(value.to_str().unwrap(), "Bearer tok");
        assert!(value.is_sensitive());
        assert!(header_name("Mcp-Session-Id").is_err());
        assert!(header_name("bad header").is_err());
    }
}

//! `capabilities hub serve --http`: the same three tools over streamable HTTP, for agents that
//! connect to a running hub instead of starting one. It listens on 127.0.0.1 only, at `/mcp`.
//!
//! Every request passes, in order: the [`Gate`] (Host, Origin, bearer token), the path, a cap
//! on the body's size, and a JSON-RPC parse; only then does rmcp's streamable HTTP service see
//! it. A refused request runs nothing and records nothing. rmcp answers `initialize` with
//! 2025-06-18 or 2025-11-25 (and the older revisions) as the client asks.

use std::convert::Infallible;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use anyhow::{Context, Result};
use bytes::{Bytes, BytesMut};
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::combinators::BoxBody;
use http_body_util::{BodyExt, Full};
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::{StreamableHttpServerConfig, StreamableHttpService};
use serde_json::json;
use tokio::net::TcpListener;
use tokio::signal::unix::{SignalKind, signal};
use tokio_util::sync::CancellationToken;

use super::gate::{Gate, Refusal};
use super::handler::HubServer;
use super::token::Token;
use crate::store::Store;

/// The port `--http` listens on unless `--port` says otherwise.
pub const DEFAULT_PORT: u16 = 4790;

/// The largest request body accepted; a bigger one gets 413 and the server carries on.
pub const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// The one path that serves MCP.
pub const ENDPOINT: &str = "/mcp";

/// How long open connections get to finish after a shutdown signal.
const DRAIN: Duration = Duration::from_secs(5);

/// How long a client may take to send a request's headers.
const HEADER_TIME: Duration = Duration::from_secs(10);

/// How much of an oversized body is read and dropped before answering 413, and for how long,
/// so the client sees the answer instead of a reset connection.
const DISCARD_BYTES: usize = 64 * 1024 * 1024;
const DISCARD_TIME: Duration = Duration::from_secs(10);

type Body = BoxBody<Bytes, Infallible>;

/// The running endpoint: the gate in front of rmcp's service.
struct Endpoint {
    gate: Gate,
    mcp: StreamableHttpService<HubServer, LocalSessionManager>,
}

/// Serves MCP over HTTP on 127.0.0.1:`port` (0 picks a free port) until SIGINT or SIGTERM.
/// Prints the URL on stderr once listening; the token is read from (or made in) the store.
pub async fn serve_http(home: &Path, port: u16, profile: &str) -> Result<()> {
    // Watch for signals before anyone learns the URL, so an early stop is still graceful.
    let mut terminate = signal(SignalKind::terminate()).context("watching for SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("watching for SIGINT")?;
    super::sent::count_messages();
    let store = Store::open(home)?;
    let (token, token_path) = Token::load_or_create(store.root())?;
    let listener =
        TcpListener::bind(SocketAddr::from((Ipv4Addr::LOCALHOST, port))).await.with_context(|| {
            format!("listening on 127.0.0.1:{port}: is a hub already serving there? pick another with --port")
        })?;
    let local = listener.local_addr().context("reading the address the server listens on")?;
    if !local.ip().is_loopback() {
        anyhow::bail!("refusing to serve on {local}: the hub serves HTTP on loopback only");
    }
    let gate = Gate::new(local.port(), token);
    let stop = CancellationToken::new();
    let config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(gate.hosts())
        .with_allowed_origins(gate.origins())
        .with_max_request_body_bytes(MAX_BODY_BYTES)
        .with_cancellation_token(stop.child_token());
    let handler = HubServer::for_profile(home, profile);
    let mcp = {
        let handler = handler.clone();
        StreamableHttpService::new(move || Ok(handler.clone()), Arc::default(), config)
    };
    let endpoint = Arc::new(Endpoint { gate, mcp });
    // One write: stderr is unbuffered, and `eprintln!` writes a line in pieces, so a script
    // reading the URL could see it cut short.
    let listening = format!(
        "serving on http://{local}{ENDPOINT}\nclients send `Authorization: Bearer <token>`; the token is in {}\n",
        token_path.display()
    );
    let _ = std::io::Write::write_all(&mut std::io::stderr(), listening.as_bytes());

    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(HEADER_TIME);
    loop {
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(err) => {
                    // Out of file descriptors and the like: wait a little rather than spin.
                    eprintln!("warning: accepting a connection failed: {err}");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                    continue;
                }
            },
            _ = terminate.recv() => break,
            _ = interrupt.recv() => break,
        };
        // Answers go out in several small writes (headers, then the event stream's chunks);
        // with Nagle's algorithm on, each one after the first waited for the client's delayed
        // ACK, about 40 ms a request. Should this fail, the answer is only slower.
        let _ = stream.set_nodelay(true);
        let endpoint = Arc::clone(&endpoint);
        let service = service_fn(move |request| {
            let endpoint = Arc::clone(&endpoint);
            async move { Ok::<_, Infallible>(endpoint.answer(request).await) }
        });
        let connection = graceful.watch(http.serve_connection(TokioIo::new(stream), service));
        tokio::spawn(async move {
            // A client that goes away mid-request is not the server's problem.
            let _ = connection.await;
        });
    }
    drop(listener);
    eprintln!("stopping: finishing open requests");
    stop.cancel();
    if tokio::time::timeout(DRAIN, graceful.shutdown()).await.is_err() {
        eprintln!("warning: requests still open after {}s were cut off", DRAIN.as_secs());
    }
    drop(endpoint);
    // Sources stop with the open hub: their processes are killed and reaped here.
    handler.close();
    Ok(())
}

impl Endpoint {
    async fn answer(&self, request: Request<Incoming>) -> Response<Body> {
        let (parts, body) = request.into_parts();
        if let Err(refusal) = self.gate.check(&parts.uri, &parts.headers) {
            return refused(refusal);
        }
        if parts.uri.path() != ENDPOINT {
            let message = format!("nothing is served at `{}`: MCP is at `{ENDPOINT}`", parts.uri.path());
            return Rejected::new(StatusCode::NOT_FOUND, INVALID_REQUEST, message).into_response();
        }
        let bytes = match read_body(body, &parts.headers).await {
            Ok(bytes) => bytes,
            Err(rejected) => return rejected.into_response(),
        };
        if parts.method == Method::POST {
            if let Err(rejected) = check_message(&bytes) {
                return rejected.into_response();
            }
        }
        let response = self.mcp.handle(Request::from_parts(parts, Full::new(bytes))).await;
        response.map(|body| Counted { body, done: false }.boxed())
    }
}

/// A response body that says when all of it has been handed to the connection (`sent.rs`):
/// the thread that answered waits for that before its records and the next sandbox take the
/// cores. Woken on that thread's core, the worker that writes the answer otherwise waited for
/// that work to finish, about 0.5 ms with the other core idle.
struct Counted {
    body: Body,
    done: bool,
}

impl hyper::body::Body for Counted {
    type Data = Bytes;
    type Error = Infallible;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> Poll<Option<Result<hyper::body::Frame<Bytes>, Infallible>>> {
        let this = &mut *self;
        let polled = Pin::new(&mut this.body).poll_frame(cx);
        let ended = match &polled {
            Poll::Ready(None) => true,
            Poll::Ready(Some(_)) => this.body.is_end_stream(),
            Poll::Pending => false,
        };
        if ended && !std::mem::replace(&mut this.done, true) {
            super::sent::message_sent();
        }
        polled
    }

    fn is_end_stream(&self) -> bool {
        self.body.is_end_stream()
    }

    fn size_hint(&self) -> hyper::body::SizeHint {
        self.body.size_hint()
    }
}

/// JSON-RPC's codes for a body that is not JSON and one that is not a JSON-RPC message.
const PARSE_ERROR: i32 = -32700;
const INVALID_REQUEST: i32 = -32600;
/// Codes in JSON-RPC's server range for requests refused by the gate.
const UNAUTHORIZED: i32 = -32001;
const FORBIDDEN: i32 = -32003;

/// The body, at most [`MAX_BODY_BYTES`] of it, else a 413 answer.
async fn read_body(body: Incoming, headers: &http::HeaderMap) -> Result<Bytes, Rejected> {
    let too_large = || {
        Rejected::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            INVALID_REQUEST,
            format!("the request body is over {MAX_BODY_BYTES} bytes: send smaller messages"),
        )
    };
    let declared =
        headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.parse::<u64>().ok());
    if declared.is_some_and(|len| len > MAX_BODY_BYTES as u64) {
        // A client waiting for `100 Continue` never sends the body; one that sends it anyway
        // has it read and dropped.
        if !headers.contains_key(header::EXPECT) {
            discard(body).await;
        }
        return Err(too_large());
    }
    let mut body = body;
    let mut collected = BytesMut::new();
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|err| {
            Rejected::new(
                StatusCode::BAD_REQUEST,
                INVALID_REQUEST,
                format!("reading the request body: {err}"),
            )
        })?;
        let Ok(data) = frame.into_data() else { continue };
        if collected.len() + data.len() > MAX_BODY_BYTES {
            discard(body).await;
            return Err(too_large());
        }
        collected.extend_from_slice(&data);
    }
    Ok(collected.freeze())
}

/// Reads and drops what is left of `body`, up to [`DISCARD_BYTES`] or [`DISCARD_TIME`], so a
/// client still sending it reads the answer rather than a reset connection.
async fn discard(mut body: Incoming) {
    let drain = async {
        let mut seen = 0;
        while seen < DISCARD_BYTES {
            match body.frame().await {
                Some(Ok(frame)) => seen += frame.data_ref().map_or(0, Bytes::len),
                _ => break,
            }
        }
    };
    let _ = tokio::time::timeout(DISCARD_TIME, drain).await;
}

/// One POSTed body as a JSON-RPC message: the parse every request passes before rmcp sees it
/// (the JSON-RPC fuzz target starts here).
pub fn parse_message(bytes: &[u8]) -> serde_json::Result<ClientJsonRpcMessage> {
    serde_json::from_slice(bytes)
}

/// A body that is not a JSON-RPC message gets a JSON-RPC error here, not rmcp's plain text.
fn check_message(bytes: &[u8]) -> Result<(), Rejected> {
    let Err(err) = parse_message(bytes) else {
        return Ok(());
    };
    Err(match err.classify() {
        serde_json::error::Category::Data => Rejected::new(
            StatusCode::BAD_REQUEST,
            INVALID_REQUEST,
            "the body is JSON but not a JSON-RPC request, notification or response".to_owned(),
        ),
        _ => Rejected::new(StatusCode::BAD_REQUEST, PARSE_ERROR, format!("the body is not JSON: {err}")),
    })
}

fn refused(refusal: Refusal) -> Response<Body> {
    let message = refusal.message().to_owned();
    let mut response = match refusal {
        Refusal::Token => Rejected::new(StatusCode::UNAUTHORIZED, UNAUTHORIZED, message),
        _ => Rejected::new(StatusCode::FORBIDDEN, FORBIDDEN, message),
    }
    .into_response();
    if refusal == Refusal::Token {
        response.headers_mut().insert(header::WWW_AUTHENTICATE, http::HeaderValue::from_static("Bearer"));
    }
    response
}

/// A request answered here with an HTTP error whose body is a JSON-RPC error without an id.
#[derive(Debug)]
struct Rejected {
    status: StatusCode,
    code: i32,
    message: String,
}

impl Rejected {
    fn new(status: StatusCode, code: i32, message: String) -> Rejected {
        Rejected { status, code, message }
    }

    fn into_response(self) -> Response<Body> {
        let error = json!({"code": self.code, "message": self.message});
        let body = json!({"jsonrpc": "2.0", "id": null, "error": error});
        let mut response = Response::new(Full::new(Bytes::from(body.to_string())).boxed());
        *response.status_mut() = self.status;
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, http::HeaderValue::from_static("application/json"));
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A response counts as sent once its whole body has been taken, not before.
    #[tokio::test]
    async fn a_response_counts_as_sent_once_its_body_is_taken() {
        super::super::sent::count_messages();
        let before = super::super::sent::ticket().unwrap();
        let mut counted = Counted { body: Full::new(Bytes::from_static(b"{}")).boxed(), done: false };
        assert_eq!(super::super::sent::ticket(), Some(before), "nothing taken yet");
        let frame = counted.frame().await.unwrap().unwrap();
        assert_eq!(frame.into_data().unwrap(), Bytes::from_static(b"{}"));
        assert_eq!(super::super::sent::ticket(), Some(before + 1));
        assert!(counted.frame().await.is_none());
        assert_eq!(super::super::sent::ticket(), Some(before + 1), "counted once");
    }
}

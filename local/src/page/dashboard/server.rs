//! The dashboard's loopback listener: `GET /open/<token>` spends a ticket and sets the cookie,
//! `GET /` shows the dashboard, `POST /decide` and `POST /review` act. Every request names the
//! address served in its Host header; every POST comes from the page's own origin, with the
//! cookie and the CSRF token of the one form it submits. Nothing is decided over GET.

use std::collections::VecDeque;
use std::convert::Infallible;
use std::net::Ipv4Addr;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use capabilities_core::approval::state::hmac_sha256;
use capabilities_core::approval::{Choice, page as html};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::{Board, RUNNING_FILE, Running, Verdict, render, spend_ticket, sweep_tickets};
use crate::page::random_hex;
use crate::page::server::{constant_time_eq, page};
use crate::platform::random_bytes;
use crate::store::write_atomic;

/// A form carries a few ids and a tool address; anything near this is not one.
const MAX_FORM_BYTES: usize = 8192;
/// Browsers that opened the page and are let in; the oldest go first.
const MAX_PASSES: usize = 32;

/// A dashboard bound to its port, ready to serve.
pub struct Dashboard {
    listener: TcpListener,
    shared: Arc<Shared>,
}

struct Shared {
    home: PathBuf,
    board: Arc<dyn Board>,
    port: u16,
    instance: String,
    /// Signs the CSRF tokens; never leaves the process.
    key: [u8; 32],
    /// Cookie values handed out for spent tickets.
    passes: Mutex<VecDeque<String>>,
}

impl Dashboard {
    /// Binds 127.0.0.1:`port` (0: any free port) for the store at `home`.
    pub async fn bind(home: PathBuf, board: Arc<dyn Board>, port: u16) -> std::io::Result<Dashboard> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await?;
        let port = listener.local_addr()?.port();
        let key = random_bytes::<32>().map_err(std::io::Error::other)?;
        sweep_tickets(&home);
        let shared = Shared {
            home,
            board,
            port,
            instance: random_hex::<16>(),
            key,
            passes: Mutex::new(VecDeque::new()),
        };
        Ok(Dashboard { listener, shared: Arc::new(shared) })
    }

    pub fn port(&self) -> u16 {
        self.shared.port
    }

    /// Records this dashboard in the store, so a later `hub dashboard` reuses it.
    pub fn record_running(&self) -> anyhow::Result<Running> {
        let running = Running {
            port: self.shared.port,
            pid: std::process::id(),
            instance: self.shared.instance.clone(),
        };
        write_atomic(&self.shared.home.join(RUNNING_FILE), &serde_json::to_vec_pretty(&running)?)?;
        Ok(running)
    }

    /// Serves until `stop` completes, then removes the store's record of it (if still its own).
    pub async fn serve(self, stop: impl Future<Output = ()>) {
        let Dashboard { listener, shared } = self;
        let accept = async {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                    continue;
                };
                let shared = shared.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let shared = shared.clone();
                        async move { Ok::<_, Infallible>(answer(&shared, request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
        };
        tokio::select! {
            () = accept => {}
            () = stop => {}
        }
        let path = shared.home.join(RUNNING_FILE);
        let ours = std::fs::read(&path)
            .ok()
            .and_then(|b| serde_json::from_slice::<Running>(&b).ok())
            .is_some_and(|r| r.instance == shared.instance);
        if ours {
            let _ = std::fs::remove_file(path);
        }
    }
}

async fn answer(shared: &Arc<Shared>, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let port = shared.port;
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    if host != Some(format!("127.0.0.1:{port}").as_str()) {
        return refused(StatusCode::FORBIDDEN, "This page is served only to this computer.");
    }
    let path = request.uri().path().to_owned();
    let method = request.method().clone();
    let reading = method == Method::GET || method == Method::HEAD;
    match path.as_str() {
        "/alive" if reading => text(&shared.instance),
        "/" if reading => match pass(shared, &request) {
            Some(pass) => show(shared, &pass).await,
            None => not_let_in(),
        },
        "/decide" | "/review" if method == Method::POST => {
            let origin = request.headers().get(header::ORIGIN).and_then(|h| h.to_str().ok());
            if origin != Some(format!("http://127.0.0.1:{port}").as_str()) {
                return refused(StatusCode::FORBIDDEN, "A decision must come from the dashboard itself.");
            }
            let Some(pass) = pass(shared, &request) else { return not_let_in() };
            let body = match Limited::new(request.into_body(), MAX_FORM_BYTES).collect().await {
                Ok(body) => body.to_bytes(),
                Err(_) => {
                    return refused(StatusCode::PAYLOAD_TOO_LARGE, "That form is larger than a decision.");
                }
            };
            let Some(form) = Form::parse(&body) else {
                return refused(StatusCode::BAD_REQUEST, "That form is not one the dashboard sends.");
            };
            if path == "/decide" {
                decide(shared, &pass, &form).await
            } else {
                review(shared, &pass, &form).await
            }
        }
        "/" | "/decide" | "/review" => {
            let allow = if path == "/" { "GET" } else { "POST" };
            let mut response =
                refused(StatusCode::METHOD_NOT_ALLOWED, "Open the dashboard, or send one of its forms.");
            response.headers_mut().insert(header::ALLOW, HeaderValue::from_static(allow));
            response
        }
        _ => match path.strip_prefix("/open/") {
            Some(token) if reading => open(shared, token),
            _ => page(StatusCode::NOT_FOUND, html::notice("Not found", "There is nothing here.")),
        },
    }
}

/// Spends a ticket: the browser gets a cookie and goes to the dashboard.
fn open(shared: &Shared, token: &str) -> Response<Full<Bytes>> {
    if !spend_ticket(&shared.home, &shared.instance, token) {
        return page(
            StatusCode::NOT_FOUND,
            html::notice(
                "This link does not open the dashboard",
                "Each address opens it once, within ten minutes. Run `capabilities hub dashboard` \
                 for a new one.",
            ),
        );
    }
    let value = random_hex::<32>();
    {
        let mut passes = shared.passes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        passes.push_back(value.clone());
        while passes.len() > MAX_PASSES {
            passes.pop_front();
        }
    }
    let mut response = page(StatusCode::SEE_OTHER, html::notice("Opening", "Opening the dashboard."));
    let headers = response.headers_mut();
    headers.insert(header::LOCATION, HeaderValue::from_static("/"));
    let cookie = format!("{}={value}; Path=/; HttpOnly; SameSite=Strict", cookie_name(shared.port));
    if let Ok(cookie) = HeaderValue::from_str(&cookie) {
        headers.insert(header::SET_COOKIE, cookie);
    }
    response
}

/// Cookies are not told apart by port; the name is.
fn cookie_name(port: u16) -> String {
    format!("capabilities-dashboard-{port}")
}

/// The request's cookie, when it is one this dashboard handed out.
fn pass(shared: &Shared, request: &Request<Incoming>) -> Option<String> {
    let name = cookie_name(shared.port);
    let sent: Vec<&str> = request
        .headers()
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|h| h.to_str().ok())
        .flat_map(|h| h.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .filter(|(k, _)| *k == name)
        .map(|(_, v)| v)
        .collect();
    let passes = shared.passes.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    sent.iter().find_map(|value| {
        // Compare with every pass, so the time taken says nothing about which matched.
        let mut found = None;
        for known in passes.iter() {
            if constant_time_eq(value.as_bytes(), known.as_bytes()) {
                found = Some(known.clone());
            }
        }
        found
    })
}

/// The CSRF token of the form that acts on `target` with `kind`, for the browser holding
/// `pass`.
fn csrf(shared: &Shared, pass: &str, kind: &str, target: &[&str]) -> String {
    let message = format!("{kind}\n{pass}\n{}", target.join("\n"));
    hex::encode(hmac_sha256(&shared.key, message.as_bytes()))
}

fn csrf_ok(shared: &Shared, pass: &str, kind: &str, target: &[&str], sent: Option<&str>) -> bool {
    let want = csrf(shared, pass, kind, target);
    constant_time_eq(sent.unwrap_or_default().as_bytes(), want.as_bytes())
}

async fn show(shared: &Arc<Shared>, pass: &str) -> Response<Full<Bytes>> {
    let board = shared.board.clone();
    let view = tokio::task::spawn_blocking(move || board.view()).await;
    match view {
        Ok(Ok(view)) => {
            let body = render::home(&view, &|kind, target| csrf(shared, pass, kind, target));
            page(StatusCode::OK, body)
        }
        Ok(Err(err)) => page(
            StatusCode::INTERNAL_SERVER_ERROR,
            html::notice("The hub could not be read", &format!("{err:#}")),
        ),
        Err(err) => page(
            StatusCode::INTERNAL_SERVER_ERROR,
            html::notice("The hub could not be read", &err.to_string()),
        ),
    }
}

async fn decide(shared: &Arc<Shared>, pass: &str, form: &Form) -> Response<Full<Bytes>> {
    let (run, call) = (form.get("run").unwrap_or_default(), form.get("call").unwrap_or_default());
    if !csrf_ok(shared, pass, "decide", &[run, call], form.get("csrf")) {
        return bad_csrf();
    }
    let Some(choice) = form.get("choice").and_then(Choice::parse) else {
        return refused(StatusCode::BAD_REQUEST, "Pick one of the four choices.");
    };
    let (board, run, call) = (shared.board.clone(), run.to_owned(), call.to_owned());
    let done = tokio::task::spawn_blocking(move || board.decide(&run, &call, choice)).await;
    outcome(done, "Not recorded")
}

async fn review(shared: &Arc<Shared>, pass: &str, form: &Form) -> Response<Full<Bytes>> {
    let (address, digest) = (form.get("address").unwrap_or_default(), form.get("digest").unwrap_or_default());
    if !csrf_ok(shared, pass, "review", &[address, digest], form.get("csrf")) {
        return bad_csrf();
    }
    let verdict = match form.get("verdict") {
        Some("approve") => Verdict::Approve,
        Some("reject") => Verdict::Reject,
        _ => return refused(StatusCode::BAD_REQUEST, "Approve or reject the tool."),
    };
    let (board, address, digest) = (shared.board.clone(), address.to_owned(), digest.to_owned());
    let done = tokio::task::spawn_blocking(move || board.review(&address, &digest, verdict)).await;
    outcome(done, "Not recorded")
}

fn outcome(
    done: Result<anyhow::Result<String>, tokio::task::JoinError>,
    failed: &str,
) -> Response<Full<Bytes>> {
    match done {
        Ok(Ok(message)) => page(StatusCode::OK, render::done("Recorded", &message)),
        Ok(Err(err)) => page(StatusCode::CONFLICT, render::done(failed, &format!("{err:#}"))),
        Err(err) => page(StatusCode::INTERNAL_SERVER_ERROR, render::done(failed, &err.to_string())),
    }
}

/// A submitted form: each field once.
struct Form(Vec<(String, String)>);

impl Form {
    fn parse(body: &[u8]) -> Option<Form> {
        let fields: Vec<(String, String)> =
            form_urlencoded::parse(body).map(|(k, v)| (k.into_owned(), v.into_owned())).collect();
        let mut names: Vec<&str> = fields.iter().map(|(k, _)| k.as_str()).collect();
        names.sort_unstable();
        let unique = names.windows(2).all(|w| w[0] != w[1]);
        unique.then_some(Form(fields))
    }

    fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str())
    }
}

fn refused(status: StatusCode, text: &str) -> Response<Full<Bytes>> {
    page(status, html::notice("Refused", text))
}

fn bad_csrf() -> Response<Full<Bytes>> {
    refused(
        StatusCode::FORBIDDEN,
        "This form does not belong to this dashboard. Reload the dashboard and decide again.",
    )
}

fn not_let_in() -> Response<Full<Bytes>> {
    page(
        StatusCode::FORBIDDEN,
        html::notice(
            "Open the dashboard with its link",
            "Run `capabilities hub dashboard`: it opens the dashboard in your browser, or prints an \
             address that opens it once.",
        ),
    )
}

/// The listener's identity, for a later `hub dashboard` deciding whether to reuse it.
fn text(body: &str) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body.to_owned())));
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain; charset=utf-8"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

//! The loopback listener behind the approval pages: `GET /p/<token>` shows a page, `POST
//! /p/<token>` decides it. Every request is checked before anything else: the Host header must
//! name the address served (DNS rebinding), a POST must come from the page's own origin and
//! carry the page's CSRF token, and a token decides once.

use std::convert::Infallible;
use std::net::Ipv4Addr;
use std::time::{Duration, Instant};

use bytes::Bytes;
use capabilities_core::approval::{Channel, Choice, page as html};
use capabilities_core::record::RunStatus;
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{self, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::TcpListener;

use super::{ApprovalPages, IDLE, Page};
use crate::platform::now_ms;
use crate::store::Store;

/// A decision form is a few dozen bytes; anything near this is not one.
const MAX_FORM_BYTES: usize = 4096;
/// How often an idle listener checks whether it can stop.
const IDLE_CHECK: Duration = Duration::from_secs(30);

/// The port the listener serves on, starting it if none runs.
pub(super) async fn ensure_listening(pages: &ApprovalPages) -> std::io::Result<u16> {
    if let Some(port) = pages.inner.lock().port {
        return Ok(port);
    }
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).await?;
    let port = listener.local_addr()?.port();
    {
        let mut state = pages.inner.lock();
        if let Some(running) = state.port {
            return Ok(running);
        }
        state.port = Some(port);
        state.last_activity = Some(Instant::now());
    }
    tokio::spawn(accept(pages.clone(), listener, port));
    Ok(port)
}

async fn accept(pages: ApprovalPages, listener: TcpListener, port: u16) {
    loop {
        match tokio::time::timeout(IDLE_CHECK, listener.accept()).await {
            Ok(Ok((stream, _))) => {
                let pages = pages.clone();
                tokio::spawn(async move {
                    let service = hyper::service::service_fn(move |request| {
                        let pages = pages.clone();
                        async move { Ok::<_, Infallible>(answer(&pages, port, request).await) }
                    });
                    let _ = hyper::server::conn::http1::Builder::new()
                        .serve_connection(TokioIo::new(stream), service)
                        .await;
                });
            }
            Ok(Err(_)) => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(_) => {
                if stop_if_idle(&pages) {
                    return;
                }
            }
        }
    }
}

/// Stops serving when no page waits for a person and nothing happened for [`IDLE`].
fn stop_if_idle(pages: &ApprovalPages) -> bool {
    let now = now_ms();
    let mut state = pages.inner.lock();
    let open = state.pages.values().any(|p| p.decided.is_none() && p.call.expires_ms > now);
    let quiet = state.last_activity.is_none_or(|at| at.elapsed() >= IDLE);
    if open || !quiet {
        return false;
    }
    state.port = None;
    state.pages.clear();
    true
}

async fn answer(pages: &ApprovalPages, port: u16, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let host = request.headers().get(header::HOST).and_then(|h| h.to_str().ok());
    if host != Some(format!("127.0.0.1:{port}").as_str()) {
        return page(
            StatusCode::FORBIDDEN,
            html::notice("Refused", "This page is served only to this computer."),
        );
    }
    let Some(token) = request.uri().path().strip_prefix("/p/").map(str::to_owned) else {
        return page(StatusCode::NOT_FOUND, html::notice("Not found", "There is nothing here."));
    };
    pages.inner.lock().last_activity = Some(Instant::now());
    match *request.method() {
        Method::GET | Method::HEAD => show(pages, &token).await,
        Method::POST => {
            let origin = request.headers().get(header::ORIGIN).and_then(|h| h.to_str().ok());
            if origin != Some(format!("http://127.0.0.1:{port}").as_str()) {
                return page(
                    StatusCode::FORBIDDEN,
                    html::notice("Refused", "A decision must come from the approval page itself."),
                );
            }
            let body = match Limited::new(request.into_body(), MAX_FORM_BYTES).collect().await {
                Ok(body) => body.to_bytes(),
                Err(_) => {
                    return page(
                        StatusCode::PAYLOAD_TOO_LARGE,
                        html::notice("Refused", "That form is larger than a decision."),
                    );
                }
            };
            decide(pages, &token, &body).await
        }
        _ => {
            let mut response = page(
                StatusCode::METHOD_NOT_ALLOWED,
                html::notice("Refused", "Open the page or send its form."),
            );
            response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, POST"));
            response
        }
    }
}

/// Where a page's call stands, read from the run itself (the CLI or another page may have
/// decided it meanwhile).
enum Standing {
    Open,
    /// Decided, here or elsewhere.
    Decided(Option<Choice>),
    Expired,
    /// The run moved on or is gone.
    Gone,
}

async fn standing(pages: &ApprovalPages, page: &Page) -> Standing {
    if let Some(choice) = page.decided {
        return Standing::Decided(Some(choice));
    }
    let home = pages.inner.home.clone();
    let run_id = page.run_id.clone();
    let run =
        tokio::task::spawn_blocking(move || Store::open(&home).ok()?.load_run_sync(&run_id).ok().flatten())
            .await
            .ok()
            .flatten();
    let Some(run) = run else { return Standing::Gone };
    if let Some(decision) = run.decisions.iter().find(|d| d.pending_id == page.call.id) {
        return Standing::Decided(Some(decision.choice));
    }
    let Some(call) = run.pending.iter().find(|p| p.id == page.call.id) else { return Standing::Gone };
    if run.status != RunStatus::AwaitingInput {
        return Standing::Gone;
    }
    if now_ms() >= call.expires_ms {
        return Standing::Expired;
    }
    Standing::Open
}

fn find(pages: &ApprovalPages, token: &str) -> Option<Page> {
    pages.inner.lock().pages.get(token).cloned()
}

async fn show(pages: &ApprovalPages, token: &str) -> Response<Full<Bytes>> {
    let Some(found) = find(pages, token) else { return unknown() };
    match standing(pages, &found).await {
        Standing::Open => page(StatusCode::OK, html::form(&found.call, &[("csrf", &found.csrf)], now_ms())),
        Standing::Decided(choice) => page(StatusCode::OK, html::already(&found.call, choice, None)),
        other => stale(&found, other),
    }
}

async fn decide(pages: &ApprovalPages, token: &str, body: &[u8]) -> Response<Full<Bytes>> {
    let Some(found) = find(pages, token) else { return unknown() };
    let form = parse_form(body);
    let csrf = form.iter().find(|(k, _)| *k == "csrf").map(|(_, v)| *v).unwrap_or_default();
    if !constant_time_eq(csrf.as_bytes(), found.csrf.as_bytes()) {
        return page(
            StatusCode::FORBIDDEN,
            html::notice(
                "Refused",
                "This form does not belong to this page. Reload the page and decide again.",
            ),
        );
    }
    let Some(choice) = form.iter().find(|(k, _)| *k == "choice").and_then(|(_, v)| Choice::parse(v)) else {
        return page(StatusCode::BAD_REQUEST, html::notice("Refused", "Pick one of the four choices."));
    };
    match standing(pages, &found).await {
        Standing::Open => {}
        other => return stale(&found, other),
    }
    // Claim the token before recording, so two submits cannot both decide.
    {
        let mut state = pages.inner.lock();
        match state.pages.get_mut(token) {
            Some(page) if page.decided.is_none() => page.decided = Some(choice),
            Some(page) => {
                let page = page.clone();
                drop(state);
                return stale(&page, Standing::Decided(page.decided));
            }
            None => return unknown(),
        }
    }
    let home = pages.inner.home.clone();
    let (run_id, call_id) = (found.run_id.clone(), found.call.id.clone());
    let recorded = tokio::task::spawn_blocking(move || {
        let store = Store::open(&home)?;
        crate::recorder::record(&store, &run_id, &[(call_id, choice)], Channel::Page)
    })
    .await
    .map_err(|e| anyhow::anyhow!("{e}"))
    .and_then(|r| r);
    match recorded {
        Ok(_) => page(StatusCode::OK, html::decided(&found.call, choice, None)),
        Err(err) => {
            if let Some(page) = pages.inner.lock().pages.get_mut(token) {
                page.decided = None;
            }
            page(
                StatusCode::CONFLICT,
                html::notice("Not recorded", &format!("The decision was not recorded: {err:#}.")),
            )
        }
    }
}

fn stale(found: &Page, standing: Standing) -> Response<Full<Bytes>> {
    match standing {
        Standing::Decided(choice) => page(StatusCode::CONFLICT, html::already(&found.call, choice, None)),
        Standing::Expired => page(
            StatusCode::GONE,
            html::notice(
                "This request expired",
                "Nothing was decided. The agent can run its code again to ask anew.",
            ),
        ),
        Standing::Gone | Standing::Open => page(
            StatusCode::GONE,
            html::notice("Nothing to decide", "The run no longer waits for this call."),
        ),
    }
}

fn unknown() -> Response<Full<Bytes>> {
    page(
        StatusCode::NOT_FOUND,
        html::notice(
            "This link does not open an approval",
            "It was never valid, or the hub that made it has stopped. \
             `capabilities hub runs --status awaiting_input` lists what waits for you.",
        ),
    )
}

/// `a=1&b=2` into pairs, values left as sent (the form's values are plain words and hex).
fn parse_form(body: &[u8]) -> Vec<(&str, &str)> {
    std::str::from_utf8(body).unwrap_or_default().split('&').filter_map(|pair| pair.split_once('=')).collect()
}

pub(super) fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// An HTML answer with headers that keep it to itself: no caching, no framing, nothing loaded
/// from anywhere, and no referrer beyond the page's own origin (the address holds the token;
/// `no-referrer` would also make the browser send `Origin: null` with the form).
pub(super) fn page(status: StatusCode, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    let fixed = [
        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
        (header::CACHE_CONTROL, "no-store"),
        (header::REFERRER_POLICY, "same-origin"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
        ),
    ];
    for (name, value) in fixed {
        headers.insert(name, HeaderValue::from_static(value));
    }
    response
}

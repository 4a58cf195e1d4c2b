//! The review inbox: the page where a person decides the calls their tenant's runs wait for,
//! behind their sign-in. It shows each call as the local approval page does (core's
//! `approval::page`) with the same four choices, and records through the one `recorder`
//! (channel `inbox`).
//!
//! `GET /inbox` without a valid inbox cookie goes to `/oauth/inbox`, which signs the person in
//! at the identity provider and sets the cookie (an inbox-only token: its resource is the
//! inbox's address). A decision is a form POST to `/inbox/decide` from the inbox's own origin
//! carrying the CSRF token, a MAC of the cookie under the hub's token key. The entry checks
//! all of that, then hands the request to the tenant's object (`inbox`, `inbox/decide`).

use capabilities_core::approval::page;
use capabilities_core::approval::rounds;
use capabilities_core::approval::{Channel, Choice};
use capabilities_core::ports::Clock;
use worker::{Env, Headers, Method, Request, Response, Result};

use super::access::{AccessConfig, INBOX_COOKIE, SCOPE_INBOX, cookie, html, local_error, now_s, same_origin};
use super::object::Hub;
use super::platform::WorkerClock;
use super::recorder;
use crate::access::token;
use crate::same_secret;

/// The header the entry hands the object the page's CSRF token in.
const CSRF_HEADER: &str = "x-hub-csrf";
/// The largest decision form accepted.
const MAX_FORM: usize = 4096;

/// `/inbox` and `/inbox/decide` at the Worker's entry.
pub(super) async fn entry(
    mut request: Request,
    env: &Env,
    config: &AccessConfig,
    path: &str,
) -> Result<Response> {
    let settings = &config.settings;
    let given = cookie(&request, INBOX_COOKIE);
    let claims = given
        .as_deref()
        .and_then(|c| token::verify(&config.key, c, &settings.at("/inbox"), now_s()).ok())
        .filter(|c| c.scope == SCOPE_INBOX);
    let (Some(claims), Some(given)) = (claims, given) else {
        if request.method() == Method::Get && path == "/inbox" {
            let headers = Headers::new();
            headers.set("location", &settings.at("/oauth/inbox"))?;
            headers.set("cache-control", "no-store")?;
            return Ok(Response::empty()?.with_status(302).with_headers(headers));
        }
        return local_error(
            401,
            "you are not signed in to the inbox (or the sign-in expired): open /inbox again",
        );
    };
    let csrf = config.key.tag(&format!("inbox-csrf|{given}"));
    let headers = Headers::new();
    headers.set(super::ACCOUNT_HEADER, &claims.account)?;
    headers.set(super::NAME_HEADER, &claims.name)?;
    match (request.method(), path) {
        (Method::Get, "/inbox") => {
            headers.set(CSRF_HEADER, &csrf)?;
            super::forward(&mut request, env, &claims.tenant, "inbox", headers).await
        }
        (Method::Post, "/inbox/decide") => {
            if !same_origin(&request, &settings.issuer) {
                return local_error(
                    403,
                    "the decision did not come from the inbox itself: nothing was decided",
                );
            }
            let body = request.bytes().await?;
            if body.len() > MAX_FORM {
                return local_error(413, "that form is larger than a decision: nothing was decided");
            }
            let posted =
                url::form_urlencoded::parse(&body).find(|(k, _)| k == "csrf").map(|(_, v)| v.into_owned());
            if !posted.is_some_and(|p| same_secret(&p, &csrf)) {
                return local_error(403, "the decision carries no valid CSRF token: nothing was decided");
            }
            headers.set("content-type", "application/x-www-form-urlencoded")?;
            let forwarded = Request::new_with_init(
                &format!("https://hub.internal/t/{}/inbox/decide", claims.tenant),
                worker::RequestInit::new()
                    .with_method(Method::Post)
                    .with_headers(headers)
                    .with_body(Some(worker::js_sys::Uint8Array::from(body.as_slice()).into())),
            )?;
            let stub = env.durable_object(super::HUB_BINDING)?.id_from_name(&claims.tenant)?.get_stub()?;
            stub.fetch_with_request(forwarded).await
        }
        (_, "/inbox") => Response::error("the inbox is read with GET", 405),
        _ => Response::error("a decision is taken only by the inbox's form (POST)", 405),
    }
}

impl Hub {
    /// The inbox page: every undecided call of the tenant's waiting runs, newest run first.
    pub(super) fn inbox(&self, account: &str, csrf: &str) -> Result<Response> {
        let now = WorkerClock.now_ms();
        let runs = self.store()?.waiting_runs().map_err(|e| worker::Error::RustError(e.to_string()))?;
        let mut body = format!(
            "<h1>Review inbox</h1>\n<p class=\"lead\">Signed in as {}. The calls below wait for your decision; \
             the agent continues a run when it resumes it.</p>",
            page::escape(account)
        );
        let mut count = 0;
        for run in &runs {
            for call in rounds::undecided(run, now) {
                count += 1;
                let fields = [("csrf", csrf), ("run", run.id.as_str()), ("call", call.id.as_str())];
                body.push_str(&format!(
                    "\n<section id=\"{id}\">\n<h2>{address} <small>(run <code>{run}</code>, call {seq})</small></h2>\n{card}\n{choices}\n</section>",
                    id = page::escape(&call.id),
                    address = page::escape(&call.address),
                    run = page::escape(&run.id),
                    seq = call.seq,
                    card = page::card(&call, now),
                    choices = page::choices(&fields, Some("/inbox/decide")),
                ));
            }
        }
        if count == 0 {
            body.push_str(
                "\n<p>Nothing waits for you. Reload this page when an agent says a call needs you.</p>",
            );
        }
        html(200, page::layout("Review inbox", &body))
    }

    /// A decision from the inbox's form (the entry checked its sign-in, origin and CSRF token).
    pub(super) async fn inbox_decide(&self, body: &[u8]) -> Result<Response> {
        let form: Vec<(String, String)> = url::form_urlencoded::parse(body).into_owned().collect();
        let field = |name: &str| form.iter().find(|(k, _)| k == name).map(|(_, v)| v.as_str());
        let (Some(run_id), Some(call_id)) = (field("run"), field("call")) else {
            return html(400, page::notice("Refused", "The form names no run and call."));
        };
        let Some(choice) = field("choice").and_then(Choice::parse) else {
            return html(400, page::notice("Refused", "Pick one of the four choices."));
        };
        let store = self.store()?;
        let now = WorkerClock.now_ms();
        let run = store.run_now(run_id).map_err(|e| worker::Error::RustError(e.to_string()))?;
        let Some(run) = run else {
            return html(404, page::notice("Not found", "This tenant has no such run."));
        };
        let Some(call) = rounds::undecided(&run, now).into_iter().find(|p| p.id == call_id) else {
            let before = run.decisions.iter().find(|d| d.pending_id == call_id).map(|d| d.choice);
            return match run.pending.iter().find(|p| p.id == call_id) {
                Some(call) => html(409, page::already(call, before, Some("/inbox"))),
                None => html(404, page::notice("Not found", "The run does not wait for that call.")),
            };
        };
        let decisions = [(call.id.clone(), choice)];
        match recorder::record_checked(&store, &run.id, &decisions, Channel::Inbox, now, |_| Ok(())).await {
            Ok(recorded) => {
                if recorded.policy_changed {
                    self.forget_loaded();
                }
                html(200, page::decided(&call, choice, Some("/inbox")))
            }
            Err(refused) => html(refused.status, page::notice("Not recorded", &refused.message)),
        }
    }
}

/// The CSRF token the entry handed over with a page request.
pub(super) fn csrf_of(request: &Request) -> String {
    request.headers().get(CSRF_HEADER).ok().flatten().unwrap_or_default()
}

//! OAuth connections inside the Worker: the access token a load brought (or the hub last
//! refreshed) while it is good; else a refresh at the connection's token endpoint through
//! `fetch`, the new token set sealed and stored in place of the old before it is used.
//!
//! A Durable Object runs one request at a time, but its awaits interleave: two runs may find
//! the same expired token at once. [`Refreshing`] lets one refresh per connection be in flight;
//! whoever waited reads the sealed tokens again once it is its turn, so a rotating
//! authorization server never sees the same refresh token twice (it would take that for a
//! replay and revoke the grant). A refused refresh keeps the refusal (`TokenSet::refused`), so
//! later calls fail at once with `auth_required` until a new load brings tokens.

use std::cell::RefCell;
use std::collections::HashMap;
use std::future::poll_fn;
use std::task::{Poll, Waker};
use std::time::Duration;

use capabilities_core::oauth::{
    self, MAX_TOKEN_RESPONSE_BYTES, OAuthClient, TokenError, TokenSet, sign_in_required,
};
use capabilities_core::ports::{
    BoxFuture, Clock, Credentials, Entropy, SecretsError, TokenEndpoint, TokenPost,
};
use futures_util::StreamExt;
use futures_util::future::{Either, select};
use worker::{
    AbortController, AbortSignal, Delay, Fetch, Headers, Method, Request, RequestInit, RequestRedirect,
    ResponseBody,
};

use super::platform::{WorkerClock, WorkerEntropy};
use super::store::seal_label;
use super::upstream::SealedSecrets;
use crate::records::{OAUTH_SLOT, check_token_endpoint, parse_tokens};

/// How long a token request may take.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// The connections whose tokens are being refreshed, each with the tasks waiting for their
/// turn. Kept with the loaded configuration, like the MCP sessions.
#[derive(Default)]
pub(crate) struct Refreshing(RefCell<HashMap<String, Vec<Waker>>>);

/// One connection's turn to refresh; the next waiter's starts when it drops.
pub(crate) struct Turn<'a> {
    refreshing: &'a Refreshing,
    key: String,
}

impl Refreshing {
    /// Waits until no one else refreshes `key`, then holds it.
    async fn turn(&self, key: String) -> Turn<'_> {
        poll_fn(|cx| {
            let mut held = self.0.borrow_mut();
            match held.get_mut(&key) {
                Some(waiting) => {
                    if !waiting.iter().any(|w| w.will_wake(cx.waker())) {
                        waiting.push(cx.waker().clone());
                    }
                    Poll::Pending
                }
                None => {
                    held.insert(key.clone(), Vec::new());
                    Poll::Ready(())
                }
            }
        })
        .await;
        Turn { refreshing: self, key }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        let waiting = self.refreshing.0.borrow_mut().remove(&self.key).unwrap_or_default();
        for waker in waiting {
            waker.wake();
        }
    }
}

impl SealedSecrets {
    /// Credentials of an OAuth connection. `rejected` is the access token the source just
    /// refused, if it did: then only another token will do.
    pub(super) async fn oauth_credentials(
        &self,
        namespace: &str,
        connection: &str,
        client: &OAuthClient,
        rejected: Option<&str>,
    ) -> Result<Credentials, SecretsError> {
        let good = |tokens: &TokenSet| {
            tokens.usable(WorkerClock.now_ms()) && Some(tokens.access_token.as_str()) != rejected
        };
        let (_, stored) = self.read_tokens(namespace, connection)?;
        if good(&stored) {
            return Ok(stored.credentials(connection));
        }
        let _turn = self.refreshing.turn(format!("{namespace}\0{connection}")).await;
        // Whoever held the turn before may have refreshed (or been refused) meanwhile.
        let (sealed, stored) = self.read_tokens(namespace, connection)?;
        if good(&stored) {
            return Ok(stored.credentials(connection));
        }
        match oauth::refresh(client, &stored, &FetchTokenEndpoint, WorkerClock.now_ms()).await {
            Ok(fresh) => {
                self.store_tokens(namespace, connection, &sealed, &fresh).await?;
                Ok(fresh.credentials(connection))
            }
            Err(TokenError::Refused(said)) => {
                let why = format!("the authorization server refused to refresh its token ({said})");
                self.store_tokens(namespace, connection, &sealed, &stored.refused(why.clone())).await?;
                Err(sign_in_required(namespace, connection, &why))
            }
            Err(TokenError::Failed(why)) => Err(SecretsError::Unavailable(format!(
                "refreshing the OAuth token of `{namespace}/{connection}` failed: {why}; the next call tries \
                 again"
            ))),
        }
    }

    /// The stored tokens, sealed as they are and opened; a connection with none, or whose
    /// refresh was refused, needs signing in.
    fn read_tokens(&self, namespace: &str, connection: &str) -> Result<(String, TokenSet), SecretsError> {
        let sealed = self
            .store
            .sealed_slot(namespace, connection, OAUTH_SLOT)
            .map_err(|e| SecretsError::Unavailable(e.to_string()))?
            .ok_or_else(|| sign_in_required(namespace, connection, "it has no tokens yet"))?;
        let label = seal_label(&self.tenant, namespace, connection, OAUTH_SLOT);
        let plain =
            self.key()?.open(&label, &sealed).map_err(|e| SecretsError::Unavailable(e.to_string()))?;
        let text = String::from_utf8(plain).map_err(|_| {
            SecretsError::Unavailable(format!("the tokens of `{namespace}/{connection}` are not text"))
        })?;
        let tokens = parse_tokens(&text).map_err(|why| {
            sign_in_required(namespace, connection, &format!("the stored tokens do not parse ({why})"))
        })?;
        if let Some(reason) = &tokens.needs_sign_in {
            return Err(sign_in_required(namespace, connection, reason));
        }
        Ok((sealed, tokens))
    }

    /// Seals `tokens` and stores them in place of `old` (the sealed value they were refreshed
    /// from), durably, before anyone uses them. A load that replaced the tokens meanwhile wins.
    async fn store_tokens(
        &self,
        namespace: &str,
        connection: &str,
        old: &str,
        tokens: &TokenSet,
    ) -> Result<(), SecretsError> {
        let label = seal_label(&self.tenant, namespace, connection, OAUTH_SLOT);
        let mut nonce = [0u8; 12];
        WorkerEntropy.fill(&mut nonce);
        let sealed = self.key()?.seal(&label, nonce, tokens.to_json().as_bytes());
        let unavailable = |e: capabilities_core::ports::StoreError| SecretsError::Unavailable(e.to_string());
        if !self
            .store
            .replace_sealed_now(namespace, connection, OAUTH_SLOT, old, &sealed)
            .map_err(unavailable)?
        {
            worker::console_warn!(
                "a load replaced the tokens of `{namespace}/{connection}` while they were refreshed; the loaded \
                 ones are kept"
            );
            return Ok(());
        }
        self.store.sync("secrets").await.map_err(unavailable)
    }
}

/// The token endpoint over the Worker's `fetch`: https (plain http to loopback only), no
/// redirect followed, [`TOKEN_TIMEOUT`], at most [`MAX_TOKEN_RESPONSE_BYTES`] read.
struct FetchTokenEndpoint;

impl TokenEndpoint for FetchTokenEndpoint {
    fn post<'a>(&'a self, request: &'a TokenPost) -> BoxFuture<'a, Result<(u16, Vec<u8>), String>> {
        Box::pin(async move {
            let controller = AbortController::default();
            let signal = controller.signal();
            let send = Box::pin(send(request, &signal));
            match select(send, Delay::from(TOKEN_TIMEOUT)).await {
                Either::Left((answer, _)) => answer,
                Either::Right(((), _)) => {
                    controller.abort();
                    Err(format!("no answer within {} s", TOKEN_TIMEOUT.as_secs()))
                }
            }
        })
    }
}

async fn send(post: &TokenPost, signal: &AbortSignal) -> Result<(u16, Vec<u8>), String> {
    check_token_endpoint(&post.url).map_err(|why| format!("the token endpoint: {why}"))?;
    // The worker's error texts name the URL at most, never the form.
    let failed = |e: worker::Error| e.to_string();
    let headers = Headers::new();
    headers.set("content-type", "application/x-www-form-urlencoded").map_err(failed)?;
    headers.set("accept", "application/json").map_err(failed)?;
    if let Some(authorization) = &post.authorization {
        headers
            .set("authorization", authorization)
            .map_err(|_| "the client's authorization is not a valid header value".to_owned())?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Post)
        .with_headers(headers)
        .with_redirect(RequestRedirect::Manual)
        .with_body(Some(post.body.clone().into()));
    let request = Request::new_with_init(&post.url, &init).map_err(failed)?;
    let mut response = Fetch::Request(request).send_with_signal(signal).await.map_err(failed)?;
    let status = response.status_code();
    let too_large = || format!("its answer is larger than {MAX_TOKEN_RESPONSE_BYTES} bytes");
    let mut body = Vec::new();
    match response.body() {
        ResponseBody::Empty => {}
        ResponseBody::Body(bytes) if bytes.len() > MAX_TOKEN_RESPONSE_BYTES => return Err(too_large()),
        ResponseBody::Body(bytes) => body.extend_from_slice(bytes),
        ResponseBody::Stream(_) => {
            let mut chunks = response.stream().map_err(failed)?;
            while let Some(chunk) = chunks.next().await {
                let chunk = chunk.map_err(failed)?;
                if body.len() + chunk.len() > MAX_TOKEN_RESPONSE_BYTES {
                    return Err(too_large());
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
    Ok((status, body))
}

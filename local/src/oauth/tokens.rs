//! Where an OAuth connection's tokens live, and the token endpoint the refresh posts to.
//!
//! A connection's [`TokenSet`] is one secret value, slot [`SLOT`] of the connection (keychain
//! account `<namespace>/<connection>/#oauth`); `#` is in no header or variable name, so it
//! never meets a static slot. The refresh lock is the lock file `locks/oauth-<ns>-<conn>.lock`.

use std::time::Duration;

use capabilities_core::oauth::{MAX_TOKEN_RESPONSE_BYTES, TokenSet};
use capabilities_core::ports::{BoxFuture, SecretsError, TokenEndpoint, TokenPost};
use futures_util::StreamExt;

use crate::secrets::{SecretStore, SlotKey};
use crate::store::{RecordLock, Store};
use crate::upstream::check_url;

/// The slot that holds a connection's tokens.
pub use capabilities_core::oauth::SLOT;

/// How long a token request may take.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(30);

/// The stored tokens of `namespace`/`connection`, if any.
pub fn read(
    secrets: &SecretStore,
    namespace: &str,
    connection: &str,
) -> Result<Option<TokenSet>, SecretsError> {
    let Some(text) = secrets.get(&SlotKey { namespace, connection, slot: SLOT })? else {
        return Ok(None);
    };
    TokenSet::from_json(&text).map(Some).map_err(|why| SecretsError::SignInRequired {
        namespace: namespace.to_owned(),
        connection: connection.to_owned(),
        reason: why,
    })
}

/// Replaces the stored tokens in one write, so a rotated refresh token is in place before the
/// old one is gone.
pub fn write(
    secrets: &SecretStore,
    namespace: &str,
    connection: &str,
    tokens: &TokenSet,
) -> Result<(), SecretsError> {
    secrets.set(&SlotKey { namespace, connection, slot: SLOT }, &tokens.to_json())
}

/// Deletes them; whether there were any.
pub fn forget(secrets: &SecretStore, namespace: &str, connection: &str) -> Result<bool, SecretsError> {
    secrets.delete(&SlotKey { namespace, connection, slot: SLOT })
}

/// Takes the refresh lock of one connection (blocking until no other process holds it).
pub fn lock(store: &Store, namespace: &str, connection: &str) -> Result<RecordLock, SecretsError> {
    store.lock(&format!("oauth-{namespace}-{connection}")).map_err(|e| {
        SecretsError::Unavailable(format!("the refresh lock of `{namespace}/{connection}`: {e}"))
    })
}

/// The token endpoint over reqwest: no redirects, a timeout, a bounded answer, https (plain
/// http on loopback only).
#[derive(Debug, Clone)]
pub struct HttpTokenEndpoint {
    client: reqwest::Client,
}

impl HttpTokenEndpoint {
    pub fn new() -> Result<HttpTokenEndpoint, String> {
        let client = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .timeout(TOKEN_TIMEOUT)
            .build()
            .map_err(|e| format!("could not build the token endpoint's HTTP client: {e}"))?;
        Ok(HttpTokenEndpoint { client })
    }

    async fn send(&self, post: &TokenPost) -> Result<(u16, Vec<u8>), String> {
        let url = check_url(&post.url).map_err(|why| format!("the token endpoint: {why}"))?;
        let mut request = self
            .client
            .post(url)
            .header(reqwest::header::CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header(reqwest::header::ACCEPT, "application/json")
            .body(post.body.clone());
        if let Some(authorization) = &post.authorization {
            let mut value =
                reqwest::header::HeaderValue::from_str(authorization).map_err(|e| e.to_string())?;
            value.set_sensitive(true);
            request = request.header(reqwest::header::AUTHORIZATION, value);
        }
        let response = request.send().await.map_err(|e| describe(&e))?;
        let status = response.status().as_u16();
        let mut body = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(|e| describe(&e))?;
            if body.len() + chunk.len() > MAX_TOKEN_RESPONSE_BYTES {
                return Err(format!("its answer is larger than {MAX_TOKEN_RESPONSE_BYTES} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((status, body))
    }
}

fn describe(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        format!("no answer within {} s", TOKEN_TIMEOUT.as_secs())
    } else if error.is_connect() {
        "could not connect".to_owned()
    } else {
        // reqwest's text names the URL, never the form.
        error.to_string()
    }
}

impl TokenEndpoint for HttpTokenEndpoint {
    fn post<'a>(&'a self, request: &'a TokenPost) -> BoxFuture<'a, Result<(u16, Vec<u8>), String>> {
        Box::pin(self.send(request))
    }
}

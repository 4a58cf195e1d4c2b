//! The local hub's link to a hosted hub (`hub login`, `push`, `status`, `logout`): which hub a
//! person signed in to and as whom (`hosted.json` in the store, no secret in it), the sign-in's
//! tokens in the keychain like an OAuth connection's (account `#hosted/login/#oauth`; `#` is in
//! no namespace, so it never meets a source), and the HTTP calls to the hub's push API with a
//! token refreshed when it ran out.

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};
use capabilities_core::oauth::{self, OAuthClient, TokenError, TokenSet};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::{read_json, write_json};
use crate::oauth::tokens::{HttpTokenEndpoint, SLOT};
use crate::platform::now_ms;
use crate::secrets::{SecretStore, SlotKey};
use crate::store::Store;
use crate::upstream::check_url;

/// The hosted hub `hub login` signs in to unless told otherwise.
pub const DEFAULT_HUB: &str = "https://hub.capabilities.sh";
/// The environment variable that names another one.
pub const HUB_ENV: &str = "CAPABILITIES_HUB_URL";
/// The scopes `hub login` asks for: `/mcp` and the push API.
pub const SCOPES: [&str; 2] = ["mcp", "hub:admin"];

const RECORD: &str = "hosted.json";
const NAMESPACE: &str = "#hosted";
const CONNECTION: &str = "login";
/// How long a call to the hosted hub may take (a push of many sources included).
const TIMEOUT: Duration = Duration::from_secs(60);
/// The most a hosted hub's answer may be.
const MAX_ANSWER: usize = 8 * 1024 * 1024;

fn key() -> SlotKey<'static> {
    SlotKey { namespace: NAMESPACE, connection: CONNECTION, slot: SLOT }
}

/// `hosted.json`: the hub signed in to, the client it signed in as, and who that was.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Login {
    /// The hub's origin, `https://hub.capabilities.sh`.
    pub hub: String,
    pub client: OAuthClient,
    #[serde(default)]
    pub account: Option<String>,
    #[serde(default)]
    pub tenant: Option<String>,
    pub signed_in_ms: u64,
}

/// The hub's origin from what a person typed: https (http only on loopback), no path.
pub fn hub_origin(given: Option<&str>) -> Result<String> {
    let env = std::env::var(HUB_ENV).ok().filter(|v| !v.trim().is_empty());
    let given = given.map(str::to_owned).or(env).unwrap_or_else(|| DEFAULT_HUB.to_owned());
    let url = check_url(given.trim()).map_err(|why| anyhow!("the hosted hub: {why}"))?;
    if !matches!(url.path(), "" | "/" | "/mcp") || url.query().is_some() {
        bail!("name the hosted hub by its origin, such as {DEFAULT_HUB} (not `{given}`)");
    }
    Ok(url.origin().ascii_serialization())
}

pub fn read_login(store: &Store) -> Result<Option<Login>> {
    read_json(store, RECORD)
}

pub fn write_login(store: &Store, login: &Login) -> Result<()> {
    write_json(store, RECORD, login)
}

/// Stores a sign-in's tokens (replacing any).
fn write_tokens(secrets: &SecretStore, tokens: &TokenSet) -> Result<()> {
    secrets.set(&key(), &tokens.to_json()).map_err(|e| anyhow!("storing the hosted hub's tokens: {e}"))
}

/// Forgets the sign-in: the record and the tokens. The tokens it had, for revoking.
pub fn forget(store: &Store, secrets: &SecretStore) -> Result<Option<TokenSet>> {
    let tokens = secrets.get(&key()).ok().flatten().and_then(|t| TokenSet::from_json(&t).ok());
    secrets.delete(&key()).map_err(|e| anyhow!("deleting the hosted hub's tokens: {e}"))?;
    match std::fs::remove_file(store.root().join(RECORD)) {
        Ok(()) => {}
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => {}
        Err(err) => return Err(err).context("removing hosted.json"),
    }
    Ok(tokens)
}

/// An HTTP client for the hosted hub: no redirects, a timeout.
pub fn http_client() -> Result<reqwest::Client> {
    reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .connect_timeout(Duration::from_secs(10))
        .timeout(TIMEOUT)
        .build()
        .context("building the HTTP client")
}

/// A signed-in link to the hosted hub.
pub struct Hosted {
    pub login: Login,
    store: Store,
    secrets: SecretStore,
    http: reqwest::Client,
}

/// What the hosted hub answered: its status and JSON body.
pub struct Answer {
    pub status: u16,
    pub body: Value,
}

impl Hosted {
    /// The link `hub login` made, or an error that says to run it.
    pub fn open(store: &Store) -> Result<Hosted> {
        let Some(login) = read_login(store)? else {
            bail!("not signed in to a hosted hub: run `capabilities hub login` first");
        };
        Ok(Hosted { login, store: store.clone(), secrets: SecretStore::open(store)?, http: http_client()? })
    }

    /// Stores a new sign-in's tokens (replacing any).
    pub fn keep_tokens(&self, tokens: &TokenSet) -> Result<()> {
        write_tokens(&self.secrets, tokens)
    }

    /// Where the tokens are kept, in words.
    pub fn kept_in(&self) -> String {
        self.secrets.describe()
    }

    /// A usable access token: the stored one, or a refreshed one (stored before use).
    async fn token(&self) -> Result<String> {
        let _lock = self.store.lock("oauth-hosted-login").map_err(|e| anyhow!("{e}"))?;
        let stored = self
            .secrets
            .get(&key())?
            .map(|t| TokenSet::from_json(&t))
            .transpose()
            .map_err(|why| {
                anyhow!("the stored sign-in is unreadable ({why}): run `capabilities hub login` again")
            })?
            .ok_or_else(|| anyhow!("the hosted hub's tokens are gone: run `capabilities hub login` again"))?;
        if stored.usable(now_ms()) {
            return Ok(stored.access_token);
        }
        let endpoint = HttpTokenEndpoint::new().map_err(|e| anyhow!(e))?;
        match oauth::refresh(&self.login.client, &stored, &endpoint, now_ms()).await {
            Ok(fresh) => {
                write_tokens(&self.secrets, &fresh)?;
                Ok(fresh.access_token)
            }
            Err(TokenError::Refused(why)) => {
                bail!(
                    "the hosted hub refused to refresh the sign-in ({why}): run `capabilities hub login` again"
                )
            }
            Err(TokenError::Failed(why)) => {
                bail!("refreshing the sign-in at {} failed: {why}", self.login.hub)
            }
        }
    }

    /// One request to the hub's `path` with the sign-in's token; a GET without `body`.
    pub async fn call(&self, path: &str, body: Option<&Value>) -> Result<Answer> {
        let token = self.token().await?;
        let url = format!("{}{path}", self.login.hub);
        let mut request = match body {
            Some(body) => self.http.post(&url).json(body),
            None => self.http.get(&url),
        };
        let mut value = reqwest::header::HeaderValue::from_str(&format!("Bearer {token}"))?;
        value.set_sensitive(true);
        request = request.header(reqwest::header::AUTHORIZATION, value);
        let response = request.send().await.map_err(|e| anyhow!("{} did not answer: {e}", self.login.hub))?;
        let status = response.status().as_u16();
        let bytes = response.bytes().await.map_err(|e| anyhow!("reading {url}'s answer: {e}"))?;
        if bytes.len() > MAX_ANSWER {
            bail!("{url} answered with more than {MAX_ANSWER} bytes");
        }
        let body = serde_json::from_slice(&bytes)
            .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).trim().to_owned()));
        Ok(Answer { status, body })
    }

    /// [`Hosted::call`], with any status but 200 turned into an error that quotes the hub.
    pub async fn ok(&self, path: &str, body: Option<&Value>) -> Result<Value> {
        let answer = self.call(path, body).await?;
        if answer.status != 200 {
            bail!("{} answered HTTP {}: {}", self.login.hub, answer.status, said(&answer.body));
        }
        Ok(answer.body)
    }
}

/// What an answer says in words: its `error`, or the text.
pub fn said(body: &Value) -> String {
    match body {
        Value::String(text) => text.clone(),
        other => other["error"].as_str().map(str::to_owned).unwrap_or_else(|| other.to_string()),
    }
}

/// A current-thread runtime for one command.
pub fn runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the async runtime")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hub_is_named_by_its_origin() {
        assert_eq!(hub_origin(Some("https://hub.example.com/")).unwrap(), "https://hub.example.com");
        assert_eq!(hub_origin(Some("https://hub.example.com/mcp")).unwrap(), "https://hub.example.com");
        assert_eq!(hub_origin(Some("http://127.0.0.1:8787")).unwrap(), "http://127.0.0.1:8787");
        assert!(hub_origin(Some("http://hub.example.com")).is_err());
        assert!(hub_origin(Some("https://hub.example.com/t/acme/mcp")).is_err());
    }
}

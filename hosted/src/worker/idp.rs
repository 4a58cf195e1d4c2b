//! The identity provider a person signs in with, as the operator configured it: GitHub, or any
//! OpenID Connect provider (discovered from its issuer). The hub is an ordinary OAuth client
//! of it: authorization code with PKCE S256, the code exchanged at its token endpoint over
//! TLS, the person read from its userinfo endpoint (GitHub: `/user`), so no ID token needs
//! verifying (OIDC Core §3.1.3.7 lets a client that talks to the token endpoint directly
//! rely on TLS).
//!
//! Settings: `HUB_IDP` (`github` or `oidc`), `HUB_IDP_ISSUER` (oidc), `HUB_IDP_CLIENT_ID` and
//! the secret `HUB_IDP_CLIENT_SECRET` (optional for a public client at an OIDC provider).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use url::form_urlencoded;
use worker::{Env, Headers, Method, Request, RequestInit, RequestRedirect};

use super::http::fetch_limited;
use super::platform::secret_text;

const TIMEOUT: Duration = Duration::from_secs(10);
const MAX_ANSWER: usize = 64 * 1024;

enum Kind {
    Oidc { issuer: String },
    GitHub,
}

pub(crate) struct Idp {
    kind: Kind,
    client_id: String,
    client_secret: Option<String>,
}

/// Who signed in: a stable account key and a name to show.
pub(crate) struct Person {
    pub(crate) account: String,
    pub(crate) name: String,
}

struct Endpoints {
    authorize: String,
    token: String,
    userinfo: String,
}

/// https, or http on a loopback host (a provider on this machine, in tests and development).
fn check_url(url: &str, what: &str) -> Result<(), String> {
    let parsed =
        url::Url::parse(url).map_err(|e| format!("the identity provider's {what} is not a URL ({e})"))?;
    let loopback = parsed.host().is_some_and(|h| crate::access::client::is_loopback_host(&h));
    if parsed.scheme() == "https" || (parsed.scheme() == "http" && loopback) {
        Ok(())
    } else {
        Err(format!("the identity provider's {what} must be https"))
    }
}

impl Idp {
    /// The configured provider; `None` when `HUB_IDP` is unset.
    pub(crate) fn from_env(env: &Env) -> Option<Result<Idp, String>> {
        let kind = secret_text(env, "HUB_IDP")?;
        Some((|| {
            let client_id = secret_text(env, "HUB_IDP_CLIENT_ID").ok_or("HUB_IDP_CLIENT_ID is not set")?;
            let client_secret = secret_text(env, "HUB_IDP_CLIENT_SECRET");
            let kind = match kind.as_str() {
                "github" => {
                    if client_secret.is_none() {
                        return Err("HUB_IDP_CLIENT_SECRET is not set (GitHub needs it)".to_owned());
                    }
                    Kind::GitHub
                }
                "oidc" => {
                    let issuer = secret_text(env, "HUB_IDP_ISSUER").ok_or("HUB_IDP_ISSUER is not set")?;
                    check_url(&issuer, "issuer")?;
                    Kind::Oidc { issuer }
                }
                other => return Err(format!("HUB_IDP is `{other}`: it is `github` or `oidc`")),
            };
            Ok(Idp { kind, client_id, client_secret })
        })())
    }

    async fn endpoints(&self) -> Result<Endpoints, String> {
        let issuer = match &self.kind {
            Kind::GitHub => {
                return Ok(Endpoints {
                    authorize: "https://github.com/login/oauth/authorize".into(),
                    token: "https://github.com/login/oauth/access_token".into(),
                    userinfo: "https://api.github.com/user".into(),
                });
            }
            Kind::Oidc { issuer } => issuer,
        };
        let url = format!("{}/.well-known/openid-configuration", issuer.trim_end_matches('/'));
        let doc =
            get_json(&url, None).await.map_err(|e| format!("the identity provider's discovery: {e}"))?;
        if doc.get("issuer").and_then(Value::as_str) != Some(issuer.as_str()) {
            return Err("the identity provider's discovery names another issuer".into());
        }
        let field = |name: &str| -> Result<String, String> {
            let url = doc.get(name).and_then(Value::as_str).ok_or(format!("its discovery has no {name}"))?;
            check_url(url, name)?;
            Ok(url.to_owned())
        };
        Ok(Endpoints {
            authorize: field("authorization_endpoint")?,
            token: field("token_endpoint")?,
            userinfo: field("userinfo_endpoint")?,
        })
    }

    /// Where the person's browser goes to sign in.
    pub(crate) async fn authorize_url(
        &self,
        redirect_uri: &str,
        state: &str,
        challenge: &str,
    ) -> Result<String, String> {
        let endpoints = self.endpoints().await?;
        let scope = match self.kind {
            Kind::GitHub => "read:user",
            Kind::Oidc { .. } => "openid",
        };
        let query = form_urlencoded::Serializer::new(String::new())
            .append_pair("response_type", "code")
            .append_pair("client_id", &self.client_id)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("scope", scope)
            .append_pair("state", state)
            .append_pair("code_challenge", challenge)
            .append_pair("code_challenge_method", "S256")
            .finish();
        let sep = if endpoints.authorize.contains('?') { '&' } else { '?' };
        Ok(format!("{}{sep}{query}", endpoints.authorize))
    }

    /// Exchanges the provider's code and reads who signed in.
    pub(crate) async fn person(
        &self,
        code: &str,
        redirect_uri: &str,
        verifier: &str,
    ) -> Result<Person, String> {
        let endpoints = self.endpoints().await?;
        let mut form = form_urlencoded::Serializer::new(String::new());
        form.append_pair("grant_type", "authorization_code")
            .append_pair("code", code)
            .append_pair("redirect_uri", redirect_uri)
            .append_pair("code_verifier", verifier);
        let headers = Headers::new();
        let failed = |e: worker::Error| e.to_string();
        headers.set("content-type", "application/x-www-form-urlencoded").map_err(failed)?;
        headers.set("accept", "application/json").map_err(failed)?;
        match (&self.kind, &self.client_secret) {
            (Kind::GitHub, secret) => {
                form.append_pair("client_id", &self.client_id);
                form.append_pair("client_secret", secret.as_deref().unwrap_or_default());
            }
            (Kind::Oidc { .. }, Some(secret)) => {
                let enc = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
                let basic = STANDARD.encode(format!("{}:{}", enc(&self.client_id), enc(secret)));
                headers.set("authorization", &format!("Basic {basic}")).map_err(failed)?;
            }
            (Kind::Oidc { .. }, None) => {
                form.append_pair("client_id", &self.client_id);
            }
        }
        let mut init = RequestInit::new();
        init.with_method(Method::Post)
            .with_headers(headers)
            .with_redirect(RequestRedirect::Manual)
            .with_body(Some(form.finish().into()));
        let request = Request::new_with_init(&endpoints.token, &init).map_err(failed)?;
        let answer = fetch_limited(request, TIMEOUT, MAX_ANSWER)
            .await
            .map_err(|e| format!("the identity provider's token endpoint: {e}"))?;
        let tokens: Value = serde_json::from_slice(&answer.body).unwrap_or(Value::Null);
        let Some(access) =
            tokens.get("access_token").and_then(Value::as_str).filter(|_| answer.status == 200)
        else {
            let why = tokens.get("error").and_then(Value::as_str).unwrap_or("no access token");
            return Err(format!("the identity provider refused the sign-in ({why}, HTTP {})", answer.status));
        };
        let user = get_json(&endpoints.userinfo, Some(access))
            .await
            .map_err(|e| format!("the identity provider's user endpoint: {e}"))?;
        match &self.kind {
            Kind::GitHub => {
                let id = user.get("id").and_then(Value::as_u64).ok_or("GitHub's /user has no id")?;
                let login = user.get("login").and_then(Value::as_str).unwrap_or_default();
                Ok(Person { account: format!("github|{id}"), name: format!("{login} (GitHub)") })
            }
            Kind::Oidc { issuer } => {
                let sub = user
                    .get("sub")
                    .and_then(Value::as_str)
                    .filter(|s| !s.is_empty())
                    .ok_or("userinfo has no sub")?;
                let name = ["email", "preferred_username", "name"]
                    .iter()
                    .find_map(|k| user.get(*k).and_then(Value::as_str))
                    .unwrap_or(sub);
                Ok(Person { account: format!("oidc|{issuer}|{sub}"), name: name.to_owned() })
            }
        }
    }
}

async fn get_json(url: &str, bearer: Option<&str>) -> Result<Value, String> {
    let failed = |e: worker::Error| e.to_string();
    let headers = Headers::new();
    headers.set("accept", "application/json").map_err(failed)?;
    headers.set("user-agent", "capabilities-hub").map_err(failed)?;
    if let Some(token) = bearer {
        headers.set("authorization", &format!("Bearer {token}")).map_err(failed)?;
    }
    let mut init = RequestInit::new();
    init.with_method(Method::Get).with_headers(headers).with_redirect(RequestRedirect::Manual);
    let request = Request::new_with_init(url, &init).map_err(failed)?;
    let answer = fetch_limited(request, TIMEOUT, MAX_ANSWER).await?;
    if answer.status != 200 {
        return Err(format!("HTTP {}", answer.status));
    }
    serde_json::from_slice(&answer.body).map_err(|e| format!("not JSON ({e})"))
}

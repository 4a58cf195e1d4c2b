//! The `Access` Durable Object: the hub's authorization server. One object (named `access`)
//! holds every client, sign-in in progress, authorization code, refresh token family and
//! account, in its SQLite storage, so a code or a refresh token is spent exactly once even
//! when two requests race (no await between reading a code or token and spending it).
//!
//! Routes (the Worker's entry forwards them): `POST /oauth/register`, `GET /oauth/authorize`
//! (checks the request, then sends the person to the identity provider), `GET /oauth/callback`
//! (the provider's answer: the account, its tenant, the consent page), `POST /oauth/consent`
//! (the person's decision: CSRF token, the sign-in's cookie, same origin), `POST /oauth/token`,
//! `POST /oauth/revoke`, and `GET /admin/accounts` for the operator.
//!
//! Secrets (codes, refresh tokens, client secrets, sign-in ids, CSRF tokens) are stored only as
//! SHA-256 digests (`access::token::digest`).

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use capabilities_core::ports::Entropy;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use worker::{
    DurableObject, Env, Headers, Method, Request, RequestInit, RequestRedirect, Response, Result,
    SqlStorageValue, State, durable_object,
};

use super::http::fetch_limited;
use super::idp::Idp;
use super::platform::{WorkerEntropy, secret_text};
use crate::access::client::{self, Client, check_document, check_registration, document_url};
use crate::access::grant::{self, Code, Family, TokenError, token_error, token_response};
use crate::access::request::{self, AuthRequest, Refusal, error_redirect, redirect_to};
use crate::access::token::{Claims, TokenKey, digest, pkce_challenge, secret, sign};
use crate::access::{CODE_TTL_S, FAMILY_TTL_S, SIGN_IN_TTL_S, Settings, page};
use crate::same_secret;

/// The Durable Object namespace binding of the authorization server.
pub(crate) const ACCESS_BINDING: &str = "ACCESS";
/// The one object's name.
pub(crate) const ACCESS_OBJECT: &str = "access";
const COOKIE: &str = "hub_signin";
/// The review inbox's cookie: an inbox-only token (see `inbox_cookie`).
pub(crate) const INBOX_COOKIE: &str = "hub_inbox";
/// How long the inbox stays signed in, in seconds.
const INBOX_TTL_S: u64 = 3600;
/// The client and scope an inbox token names.
const INBOX_CLIENT: &str = "inbox";
pub(crate) const SCOPE_INBOX: &str = "inbox";
const TOKEN_KEY_LABEL: &str = "capabilities-hosted access tokens v1";

const SCHEMA: [&str; 6] = [
    "CREATE TABLE IF NOT EXISTS clients (id TEXT PRIMARY KEY, record TEXT NOT NULL, fetched_s INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS signins (digest TEXT PRIMARY KEY, record TEXT NOT NULL, expires_s INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS codes (digest TEXT PRIMARY KEY, record TEXT NOT NULL, used INTEGER NOT NULL, \
     expires_s INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS families (id TEXT PRIMARY KEY, record TEXT NOT NULL, revoked INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS refresh (digest TEXT PRIMARY KEY, family TEXT NOT NULL, used INTEGER NOT NULL)",
    "CREATE TABLE IF NOT EXISTS accounts (account TEXT PRIMARY KEY, tenant TEXT NOT NULL UNIQUE, name TEXT NOT NULL, \
     created_s INTEGER NOT NULL)",
];

/// What the access code needs from the Worker's settings.
pub(crate) struct AccessConfig {
    pub(crate) settings: Settings,
    pub(crate) key: TokenKey,
}

/// The access settings: `None` when `HUB_PUBLIC_URL` is unset (then only the operator's
/// `/t/<tenant>/…` paths are served).
pub(crate) fn access_config(env: &Env) -> Option<std::result::Result<AccessConfig, String>> {
    let public = secret_text(env, "HUB_PUBLIC_URL")?;
    Some((|| {
        let mut settings = Settings::new(&public)?;
        if let Some(ttl) = secret_text(env, "HUB_ACCESS_TTL_S") {
            settings.access_ttl_s = ttl
                .parse()
                .ok()
                .filter(|t| (1..=3600).contains(t))
                .ok_or("HUB_ACCESS_TTL_S is a number of seconds from 1 to 3600")?;
        }
        settings.loopback_documents =
            secret_text(env, "HUB_TEST_LOOPBACK_CLIENT_DOCUMENTS").as_deref() == Some("1");
        let key = match (secret_text(env, "HUB_TOKEN_KEY"), secret_text(env, "HUB_SECRETS_KEY")) {
            (Some(key), _) => TokenKey::derive(&key, TOKEN_KEY_LABEL),
            (None, Some(key)) => TokenKey::derive(&key, TOKEN_KEY_LABEL),
            (None, None) => {
                return Err("set the HUB_TOKEN_KEY (or HUB_SECRETS_KEY) secret to sign access tokens".into());
            }
        };
        Ok(AccessConfig { settings, key })
    })())
}

/// Whether a form POST comes from the hub's own page: its `Origin` (or, without one,
/// `Sec-Fetch-Site: same-origin`).
pub(crate) fn same_origin(request: &Request, issuer: &str) -> bool {
    let headers = request.headers();
    match headers.get("origin").ok().flatten() {
        Some(origin) => origin == issuer,
        None => headers.get("sec-fetch-site").ok().flatten().as_deref() == Some("same-origin"),
    }
}

pub(crate) fn now_s() -> u64 {
    (worker::js_sys::Date::now() / 1000.0) as u64
}

fn random() -> [u8; 32] {
    let mut bytes = [0u8; 32];
    WorkerEntropy.fill(&mut bytes);
    bytes
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// A sign-in in progress, from the authorization request to the person's decision.
#[derive(Serialize, Deserialize)]
struct SignIn {
    request: AuthRequest,
    /// The PKCE verifier of the hub's own request to the identity provider.
    idp_verifier: String,
    /// The digest of the cookie set in the browser that started it.
    browser: String,
    /// Filled once the identity provider answered.
    account: Option<String>,
    name: Option<String>,
    tenant: Option<String>,
    csrf: Option<String>,
    /// A sign-in to the review inbox (no client, no consent).
    #[serde(default)]
    inbox: bool,
}

#[durable_object]
pub struct Access {
    state: State,
    env: Env,
}

impl DurableObject for Access {
    fn new(state: State, env: Env) -> Self {
        Access { state, env }
    }

    async fn fetch(&self, mut request: Request) -> Result<Response> {
        let config = match access_config(&self.env) {
            Some(Ok(config)) => config,
            Some(Err(why)) => return Response::error(why, 503),
            None => return Response::error("sign-in is off: the operator set no HUB_PUBLIC_URL", 404),
        };
        for statement in SCHEMA {
            self.state.storage().sql().exec(statement, None)?;
        }
        let path = request.path();
        let method = request.method();
        let access = Server { object: self, config };
        match (method, path.as_str()) {
            (Method::Post, "/oauth/register") => access.register(&request.bytes().await?),
            (Method::Get, "/oauth/authorize") => access.authorize(&request).await,
            (Method::Get, "/oauth/callback") => access.callback(&request).await,
            (Method::Get, "/oauth/inbox") => access.inbox_sign_in().await,
            (Method::Post, "/oauth/consent") => {
                let body = request.bytes().await?;
                access.consent(&request, &body).await
            }
            (_, "/oauth/consent") => {
                Response::error("a decision is taken only by the consent page's form (POST)", 405)
            }
            (Method::Post, "/oauth/token") => {
                let body = request.bytes().await?;
                access.token(&request, &body).await
            }
            (Method::Post, "/oauth/revoke") => {
                let body = request.bytes().await?;
                access.revoke(&request, &body).await
            }
            (Method::Get, "/admin/accounts") => access.accounts(),
            (_, "/oauth/register" | "/oauth/token" | "/oauth/revoke") => Response::error("POST only", 405),
            _ => Response::error("not found", 404),
        }
    }
}

struct Server<'a> {
    object: &'a Access,
    config: AccessConfig,
}

fn form(body: &[u8]) -> Vec<(String, String)> {
    url::form_urlencoded::parse(body).into_owned().collect()
}

pub(crate) fn html(status: u16, text: String) -> Result<Response> {
    html_posting_to(status, text, None)
}

/// A page whose form may end up at `also` (an origin) as well as the hub: browsers hold a
/// form's redirects to `form-action` too, so the consent page names the client's redirect
/// origin, or the 303 back to the client would be blocked.
fn html_posting_to(status: u16, text: String, also: Option<&str>) -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", "text/html; charset=utf-8")?;
    headers.set("cache-control", "no-store")?;
    let also = also.map(|origin| format!(" {origin}")).unwrap_or_default();
    headers.set(
        "content-security-policy",
        &format!(
            "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'{also}; frame-ancestors 'none'"
        ),
    )?;
    headers.set("x-frame-options", "DENY")?;
    Ok(Response::from_html(text)?.with_status(status).with_headers(headers))
}

pub(crate) fn local_error(status: u16, message: &str) -> Result<Response> {
    html(status, page::error(message))
}

fn redirect(to: &str, status: u16, cookie: Option<String>) -> Result<Response> {
    let headers = Headers::new();
    headers.set("location", to)?;
    headers.set("cache-control", "no-store")?;
    if let Some(cookie) = cookie {
        headers.set("set-cookie", &cookie)?;
    }
    Ok(Response::empty()?.with_status(status).with_headers(headers))
}

fn json_answer(status: u16, body: &Value) -> Result<Response> {
    let headers = Headers::new();
    headers.set("content-type", "application/json")?;
    headers.set("cache-control", "no-store")?;
    headers.set("pragma", "no-cache")?;
    Ok(Response::from_json(body)?.with_status(status).with_headers(headers))
}

fn token_refusal(err: &TokenError) -> Result<Response> {
    let response = json_answer(err.status, &err.body())?;
    if err.status == 401 {
        response.headers().set("www-authenticate", "Basic realm=\"capabilities hub\"")?;
    }
    Ok(response)
}

pub(crate) fn cookie(request: &Request, name: &str) -> Option<String> {
    let header = request.headers().get("cookie").ok()??;
    header.split(';').find_map(|c| c.trim().strip_prefix(&format!("{name}=")).map(str::to_owned))
}

fn one<'a>(pairs: &'a [(String, String)], name: &str) -> Option<&'a str> {
    request::param(pairs, name).ok().flatten()
}

impl Server<'_> {
    fn sql(&self) -> worker::SqlStorage {
        self.object.state.storage().sql()
    }

    fn exec(&self, query: &str, bindings: Vec<SqlStorageValue>) -> Result<()> {
        self.sql().exec(query, bindings).map(drop)
    }

    fn rows<T: for<'de> Deserialize<'de>>(
        &self,
        query: &str,
        bindings: Vec<SqlStorageValue>,
    ) -> Result<Vec<T>> {
        self.sql().exec(query, bindings)?.to_array::<T>()
    }

    fn settings(&self) -> &Settings {
        &self.config.settings
    }

    // ---- clients ---------------------------------------------------------------------------

    fn register(&self, body: &[u8]) -> Result<Response> {
        let mut client = match check_registration(body) {
            Ok(client) => client,
            Err(bad) => {
                return json_answer(
                    400,
                    &json!({ "error": bad.error, "error_description": bad.description }),
                );
            }
        };
        client.id = format!("hub_c.{}", URL_SAFE_NO_PAD.encode(&random()[..16]));
        let secret = (client.auth != client::AuthMethod::None).then(|| secret("hub_cs", random()));
        client.secret_digest = secret.as_deref().map(digest);
        let record = serde_json::to_string(&client).expect("clients serialize");
        self.exec(
            "INSERT INTO clients (id, record, fetched_s) VALUES (?, ?, 0)",
            vec![client.id.as_str().into(), record.into()],
        )?;
        let mut answer = json!({
            "client_id": client.id,
            "client_id_issued_at": now_s(),
            "client_name": client.name,
            "redirect_uris": client.redirect_uris,
            "token_endpoint_auth_method": client.auth.as_str(),
            "grant_types": ["authorization_code", "refresh_token"],
            "response_types": ["code"],
        });
        if let Some(secret) = secret {
            answer["client_secret"] = json!(secret);
            answer["client_secret_expires_at"] = json!(0);
        }
        json_answer(201, &answer)
    }

    /// The client `id` names: a registered one, or the one its metadata document describes
    /// (fetched, checked and kept for [`client::DOCUMENT_CACHE_S`]; a failed fetch keeps nothing).
    async fn client(&self, id: &str) -> std::result::Result<Client, String> {
        #[derive(Deserialize)]
        struct Row {
            record: String,
            fetched_s: i64,
        }
        let rows: Vec<Row> = self
            .rows("SELECT record, fetched_s FROM clients WHERE id = ?", vec![id.into()])
            .map_err(|e| e.to_string())?;
        let document = document_url(id, self.settings().loopback_documents);
        let fresh = |row: &Row| {
            document.is_none() || now_s().saturating_sub(row.fetched_s as u64) < client::DOCUMENT_CACHE_S
        };
        if let Some(row) = rows.iter().find(|r| fresh(r)) {
            return serde_json::from_str(&row.record).map_err(|e| e.to_string());
        }
        let Some(url) = document else {
            return Err(format!(
                "`{id}` is not a client of this hub: register it, or use a client ID metadata document"
            ));
        };
        let url = url?;
        let headers = Headers::new();
        headers.set("accept", "application/json").map_err(|e| e.to_string())?;
        let mut init = RequestInit::new();
        init.with_method(Method::Get).with_headers(headers).with_redirect(RequestRedirect::Manual);
        let fetch = Request::new_with_init(&url, &init).map_err(|e| e.to_string())?;
        let timeout = Duration::from_millis(client::DOCUMENT_TIMEOUT_MS);
        let answer = fetch_limited(fetch, timeout, client::MAX_DOCUMENT)
            .await
            .map_err(|e| format!("the client's metadata document could not be read: {e}"))?;
        if answer.status != 200 {
            return Err(format!(
                "the client's metadata document answered HTTP {} (redirects are not followed)",
                answer.status
            ));
        }
        let client = check_document(id, &answer.body)?;
        let record = serde_json::to_string(&client).expect("clients serialize");
        self.exec(
            "INSERT OR REPLACE INTO clients (id, record, fetched_s) VALUES (?, ?, ?)",
            vec![id.into(), record.into(), (now_s() as i64).into()],
        )
        .map_err(|e| e.to_string())?;
        Ok(client)
    }

    /// The client a token or revocation request is from, authenticated as it registered.
    async fn authenticate(
        &self,
        request: &Request,
        pairs: &[(String, String)],
    ) -> std::result::Result<Client, TokenError> {
        let basic = request.headers().get("authorization").ok().flatten().and_then(|h| {
            let encoded = h.strip_prefix("Basic ")?;
            let text = String::from_utf8(STANDARD.decode(encoded.trim()).ok()?).ok()?;
            let (id, secret) = text.split_once(':')?;
            let decode = |s: &str| {
                url::form_urlencoded::parse(format!("x={s}").as_bytes()).next().map(|(_, v)| v.into_owned())
            };
            Some((decode(id)?, decode(secret)?))
        });
        let posted_secret = one(pairs, "client_secret");
        let (id, given_secret, method) = match (&basic, one(pairs, "client_id")) {
            (Some((id, secret)), other) => {
                if other.is_some_and(|o| o != id) {
                    return Err(token_error(
                        "invalid_request",
                        "client_id differs from the Basic credentials",
                    ));
                }
                (id.clone(), Some(secret.clone()), client::AuthMethod::ClientSecretBasic)
            }
            (None, Some(id)) if posted_secret.is_some() => {
                (id.to_owned(), posted_secret.map(str::to_owned), client::AuthMethod::ClientSecretPost)
            }
            (None, Some(id)) => (id.to_owned(), None, client::AuthMethod::None),
            (None, None) => return Err(token_error("invalid_client", "the request names no client_id")),
        };
        let client = self.client(&id).await.map_err(|e| token_error("invalid_client", e))?;
        if client.auth != method {
            return Err(token_error(
                "invalid_client",
                format!("this client authenticates with {}, not {}", client.auth.as_str(), method.as_str()),
            ));
        }
        if let (Some(expected), Some(given)) = (&client.secret_digest, &given_secret) {
            if !same_secret(&digest(given), expected) {
                return Err(token_error("invalid_client", "the client secret is wrong"));
            }
        }
        Ok(client)
    }

    // ---- the person signs in ---------------------------------------------------------------

    async fn authorize(&self, request: &Request) -> Result<Response> {
        let pairs: Vec<(String, String)> = request.url()?.query_pairs().into_owned().collect();
        let client_id = match request::client_id(&pairs) {
            Ok(id) => id.to_owned(),
            Err(why) => return local_error(400, &why),
        };
        let client = match self.client(&client_id).await {
            Ok(client) => client,
            Err(why) => return local_error(400, &why),
        };
        let checked = match request::check(&pairs, &client, self.settings()) {
            Ok(checked) => checked,
            Err(Refusal::Local(why)) => return local_error(400, &why),
            Err(Refusal::Redirect { redirect_uri, state, error, description }) => {
                let to = error_redirect(
                    &redirect_uri,
                    state.as_deref(),
                    error,
                    &description,
                    &self.settings().issuer,
                );
                return redirect(&to, 302, None);
            }
        };
        self.start_sign_in(checked, false).await
    }

    /// `GET /oauth/inbox`: a person opening the review inbox signs in at the identity
    /// provider; the callback sets the inbox's cookie instead of asking for consent (the inbox
    /// is the hub's own page, not a client).
    async fn inbox_sign_in(&self) -> Result<Response> {
        let inbox = self.settings().at("/inbox");
        let request = AuthRequest {
            client_id: INBOX_CLIENT.to_owned(),
            redirect_uri: inbox.clone(),
            state: None,
            challenge: String::new(),
            scope: SCOPE_INBOX.to_owned(),
            resource: inbox,
        };
        self.start_sign_in(request, true).await
    }

    /// Sends the person to the identity provider for `request`, with a cookie that ties the
    /// answer to this browser.
    async fn start_sign_in(&self, checked: AuthRequest, inbox: bool) -> Result<Response> {
        let idp = match Idp::from_env(&self.object.env) {
            Some(Ok(idp)) => idp,
            Some(Err(why)) => return local_error(503, &format!("the hub's sign-in is misconfigured: {why}")),
            None => return local_error(503, "the operator has configured no identity provider (HUB_IDP)"),
        };
        let id = secret("hub_si", random());
        let browser = secret("hub_br", random());
        let verifier = URL_SAFE_NO_PAD.encode(random());
        let to = match idp
            .authorize_url(&self.settings().at("/oauth/callback"), &id, &pkce_challenge(&verifier))
            .await
        {
            Ok(to) => to,
            Err(why) => return local_error(502, &why),
        };
        let signin = SignIn {
            request: checked,
            idp_verifier: verifier,
            browser: digest(&browser),
            account: None,
            name: None,
            tenant: None,
            csrf: None,
            inbox,
        };
        let now = now_s() as i64;
        self.exec("DELETE FROM signins WHERE expires_s < ?", vec![now.into()])?;
        self.exec(
            "INSERT INTO signins (digest, record, expires_s) VALUES (?, ?, ?)",
            vec![
                digest(&id).into(),
                serde_json::to_string(&signin)?.into(),
                (now + SIGN_IN_TTL_S as i64).into(),
            ],
        )?;
        let secure = if self.settings().issuer.starts_with("https://") { "; Secure" } else { "" };
        let cookie = format!(
            "{COOKIE}={browser}; Path=/oauth; HttpOnly; SameSite=Lax; Max-Age={SIGN_IN_TTL_S}{secure}"
        );
        redirect(&to, 302, Some(cookie))
    }

    fn signin(&self, id: &str) -> Result<Option<SignIn>> {
        #[derive(Deserialize)]
        struct Row {
            record: String,
        }
        let rows: Vec<Row> = self.rows(
            "SELECT record FROM signins WHERE digest = ? AND expires_s >= ?",
            vec![digest(id).into(), (now_s() as i64).into()],
        )?;
        Ok(rows.first().and_then(|r| serde_json::from_str(&r.record).ok()))
    }

    async fn callback(&self, request: &Request) -> Result<Response> {
        let pairs: Vec<(String, String)> = request.url()?.query_pairs().into_owned().collect();
        let Some(id) = one(&pairs, "state") else {
            return local_error(400, "the identity provider's answer has no state");
        };
        let Some(signin) = self.signin(id)? else {
            return local_error(400, "this sign-in is unknown or expired: start again from the application");
        };
        let browser = cookie(request, COOKIE).map(|c| digest(&c));
        if !browser.is_some_and(|b| same_secret(&b, &signin.browser)) {
            return local_error(
                400,
                "this sign-in was started in another browser: start again from the application",
            );
        }
        if signin.account.is_some() {
            return local_error(
                400,
                "this sign-in already came back from the identity provider: start again from the application",
            );
        }
        let back = |error: &str, description: &str| {
            error_redirect(
                &signin.request.redirect_uri,
                signin.request.state.as_deref(),
                error,
                description,
                &self.settings().issuer,
            )
        };
        if one(&pairs, "error").is_some() && signin.inbox {
            self.exec("DELETE FROM signins WHERE digest = ?", vec![digest(id).into()])?;
            return local_error(
                403,
                "the sign-in at the identity provider was refused: the inbox stays closed",
            );
        }
        if one(&pairs, "error").is_some() {
            self.exec("DELETE FROM signins WHERE digest = ?", vec![digest(id).into()])?;
            return redirect(
                &back("access_denied", "the sign-in at the identity provider was refused"),
                302,
                None,
            );
        }
        let Some(code) = one(&pairs, "code") else {
            return local_error(400, "the identity provider's answer has no code");
        };
        let idp = match Idp::from_env(&self.object.env) {
            Some(Ok(idp)) => idp,
            _ => return local_error(503, "the operator has configured no identity provider (HUB_IDP)"),
        };
        let person =
            match idp.person(code, &self.settings().at("/oauth/callback"), &signin.idp_verifier).await {
                Ok(person) => person,
                Err(why) => return local_error(502, &why),
            };
        // Awaited: read the sign-in again, another request may have finished it meanwhile.
        let Some(mut signin) = self.signin(id)?.filter(|s| s.account.is_none()) else {
            return local_error(400, "this sign-in was already used: start again from the application");
        };
        let tenant = self.tenant_of(&person.account, &person.name)?;
        if signin.inbox {
            self.exec("DELETE FROM signins WHERE digest = ?", vec![digest(id).into()])?;
            return self.inbox_cookie(&person.account, &person.name, &tenant);
        }
        let csrf = secret("hub_csrf", random());
        signin.account = Some(person.account);
        signin.name = Some(person.name.clone());
        signin.tenant = Some(tenant);
        signin.csrf = Some(digest(&csrf));
        self.exec(
            "UPDATE signins SET record = ? WHERE digest = ?",
            vec![serde_json::to_string(&signin)?.into(), digest(id).into()],
        )?;
        let client = match self.client(&signin.request.client_id).await {
            Ok(client) => client,
            Err(why) => return local_error(400, &why),
        };
        let back =
            url::Url::parse(&signin.request.redirect_uri).ok().map(|u| u.origin().ascii_serialization());
        html_posting_to(
            200,
            page::consent(
                &client,
                &signin.request.redirect_uri,
                &signin.request.scope,
                &person.name,
                id,
                &csrf,
            ),
            back.as_deref().filter(|o| *o != "null"),
        )
    }

    /// The signed-in inbox: a cookie holding a token for the inbox only (its resource is the
    /// inbox's address, so it opens nothing else), then the inbox itself.
    fn inbox_cookie(&self, account: &str, name: &str, tenant: &str) -> Result<Response> {
        let now = now_s();
        let claims = Claims {
            tenant: tenant.to_owned(),
            account: account.to_owned(),
            name: name.to_owned(),
            client: INBOX_CLIENT.to_owned(),
            scope: SCOPE_INBOX.to_owned(),
            resource: self.settings().at("/inbox"),
            family: String::new(),
            iat: now,
            exp: now + INBOX_TTL_S,
        };
        let token = sign(&self.config.key, &claims);
        let secure = if self.settings().issuer.starts_with("https://") { "; Secure" } else { "" };
        let cookie = format!(
            "{INBOX_COOKIE}={token}; Path=/inbox; HttpOnly; SameSite=Lax; Max-Age={INBOX_TTL_S}{secure}"
        );
        let spent = format!("{COOKIE}=; Path=/oauth; HttpOnly; SameSite=Lax; Max-Age=0");
        let headers = Headers::new();
        headers.set("location", &self.settings().at("/inbox"))?;
        headers.set("cache-control", "no-store")?;
        headers.append("set-cookie", &cookie)?;
        headers.append("set-cookie", &spent)?;
        Ok(Response::empty()?.with_status(303).with_headers(headers))
    }

    /// The tenant `account` owns, made on its first sign-in.
    fn tenant_of(&self, account: &str, name: &str) -> Result<String> {
        #[derive(Deserialize)]
        struct Row {
            tenant: String,
        }
        let rows: Vec<Row> =
            self.rows("SELECT tenant FROM accounts WHERE account = ?", vec![account.into()])?;
        if let Some(row) = rows.first() {
            self.exec("UPDATE accounts SET name = ? WHERE account = ?", vec![name.into(), account.into()])?;
            return Ok(row.tenant.clone());
        }
        let tenant = format!("p-{}", hex(&random()[..8]));
        self.exec(
            "INSERT INTO accounts (account, tenant, name, created_s) VALUES (?, ?, ?, ?)",
            vec![account.into(), tenant.as_str().into(), name.into(), (now_s() as i64).into()],
        )?;
        Ok(tenant)
    }

    fn same_origin(&self, request: &Request) -> bool {
        same_origin(request, &self.settings().issuer)
    }

    async fn consent(&self, request: &Request, body: &[u8]) -> Result<Response> {
        if !self.same_origin(request) {
            return local_error(
                403,
                "the decision did not come from this hub's own page: nothing was decided",
            );
        }
        let pairs = form(body);
        let (Some(id), Some(csrf)) = (one(&pairs, "signin"), one(&pairs, "csrf")) else {
            return local_error(403, "the decision carries no CSRF token: nothing was decided");
        };
        let Some(signin) = self.signin(id)? else {
            return local_error(400, "this sign-in is unknown or expired: start again from the application");
        };
        let browser = cookie(request, COOKIE).map(|c| digest(&c));
        let csrf_ok = signin.csrf.as_deref().is_some_and(|c| same_secret(&digest(csrf), c));
        if !csrf_ok || !browser.is_some_and(|b| same_secret(&b, &signin.browser)) {
            return local_error(
                403,
                "the decision's CSRF token or browser does not match this sign-in: nothing was decided",
            );
        }
        let (Some(account), Some(tenant)) = (signin.account.clone(), signin.tenant.clone()) else {
            return local_error(400, "this sign-in has not been through the identity provider");
        };
        self.exec("DELETE FROM signins WHERE digest = ?", vec![digest(id).into()])?;
        let issuer = &self.settings().issuer;
        let request = signin.request;
        let spent = Some(format!("{COOKIE}=; Path=/oauth; HttpOnly; SameSite=Lax; Max-Age=0"));
        if one(&pairs, "decision") != Some("allow") {
            let to = error_redirect(
                &request.redirect_uri,
                request.state.as_deref(),
                "access_denied",
                "the person refused",
                issuer,
            );
            return redirect(&to, 303, spent);
        }
        let code = secret("hub_ac", random());
        let now = now_s();
        let family = format!("f-{}", hex(&random()[..12]));
        let name = signin.name.clone().unwrap_or_default();
        let record =
            Code { request: request.clone(), tenant, account, name, expires_s: now + CODE_TTL_S, family };
        self.exec("DELETE FROM codes WHERE expires_s < ?", vec![(now as i64 - 3600).into()])?;
        self.exec(
            "INSERT INTO codes (digest, record, used, expires_s) VALUES (?, ?, 0, ?)",
            vec![
                digest(&code).into(),
                serde_json::to_string(&record)?.into(),
                (record.expires_s as i64).into(),
            ],
        )?;
        let mut params = vec![("code", code.as_str())];
        if let Some(state) = request.state.as_deref() {
            params.push(("state", state));
        }
        params.push(("iss", issuer));
        redirect(&redirect_to(&request.redirect_uri, &params), 303, spent)
    }

    // ---- tokens ----------------------------------------------------------------------------

    async fn token(&self, request: &Request, body: &[u8]) -> Result<Response> {
        let pairs = form(body);
        if let Some(dup) =
            ["grant_type", "code", "refresh_token", "code_verifier", "redirect_uri", "client_id", "resource"]
                .iter()
                .find(|n| request::param(&pairs, n).is_err())
        {
            return token_refusal(&token_error(
                "invalid_request",
                format!("`{dup}` is given more than once"),
            ));
        }
        let client = match self.authenticate(request, &pairs).await {
            Ok(client) => client,
            Err(err) => return token_refusal(&err),
        };
        let answer = match one(&pairs, "grant_type") {
            Some("authorization_code") => self.redeem_code(&client, &pairs),
            Some("refresh_token") => self.refresh(&client, &pairs),
            Some(other) => Err(token_error(
                "unsupported_grant_type",
                format!("grant_type `{other}`: this hub takes authorization_code and refresh_token"),
            )),
            None => Err(token_error("invalid_request", "the request names no grant_type")),
        };
        match answer {
            Ok(tokens) => {
                self.object.state.storage().sync().await?;
                json_answer(200, &tokens)
            }
            Err(err) => {
                self.object.state.storage().sync().await?;
                token_refusal(&err)
            }
        }
    }

    /// Issues a new refresh token in `family` and an access token for it.
    fn issue(&self, family: &Family, scope: &str) -> std::result::Result<Value, TokenError> {
        let internal = |e: worker::Error| token_error("server_error", e.to_string());
        let refresh = secret("hub_rt", random());
        self.exec(
            "INSERT INTO refresh (digest, family, used) VALUES (?, ?, 0)",
            vec![digest(&refresh).into(), family.id.as_str().into()],
        )
        .map_err(internal)?;
        let now = now_s();
        let claims = Claims {
            tenant: family.tenant.clone(),
            account: family.account.clone(),
            name: family.name.clone(),
            client: family.client_id.clone(),
            scope: scope.to_owned(),
            resource: family.resource.clone(),
            family: family.id.clone(),
            iat: now,
            exp: now + self.settings().access_ttl_s,
        };
        let access = sign(&self.config.key, &claims);
        Ok(token_response(&access, self.settings().access_ttl_s, &refresh, scope))
    }

    fn revoke_family(&self, family: &str) -> Result<()> {
        self.exec("UPDATE families SET revoked = 1 WHERE id = ?", vec![family.into()])?;
        self.exec("DELETE FROM refresh WHERE family = ?", vec![family.into()])
    }

    fn redeem_code(
        &self,
        client: &Client,
        pairs: &[(String, String)],
    ) -> std::result::Result<Value, TokenError> {
        #[derive(Deserialize)]
        struct Row {
            record: String,
            used: i64,
        }
        let internal = |e: worker::Error| token_error("server_error", e.to_string());
        let code =
            one(pairs, "code").ok_or_else(|| token_error("invalid_request", "the request names no code"))?;
        let rows: Vec<Row> = self
            .rows("SELECT record, used FROM codes WHERE digest = ?", vec![digest(code).into()])
            .map_err(internal)?;
        let Some(row) = rows.first() else {
            return Err(token_error("invalid_grant", "the code is unknown or expired"));
        };
        let record: Code =
            serde_json::from_str(&row.record).map_err(|e| token_error("server_error", e.to_string()))?;
        if row.used != 0 {
            self.revoke_family(&record.family).map_err(internal)?;
            return Err(token_error(
                "invalid_grant",
                "the code was already used: the tokens it gave are revoked",
            ));
        }
        let now = now_s();
        grant::redeem(
            &record,
            &client.id,
            one(pairs, "redirect_uri"),
            one(pairs, "code_verifier"),
            one(pairs, "resource"),
            now,
        )?;
        self.exec("UPDATE codes SET used = 1 WHERE digest = ?", vec![digest(code).into()])
            .map_err(internal)?;
        let family = Family {
            id: record.family.clone(),
            client_id: client.id.clone(),
            tenant: record.tenant,
            account: record.account,
            name: record.name,
            scope: record.request.scope.clone(),
            resource: record.request.resource,
            expires_s: now + FAMILY_TTL_S,
        };
        self.exec(
            "INSERT INTO families (id, record, revoked) VALUES (?, ?, 0)",
            vec![
                family.id.as_str().into(),
                serde_json::to_string(&family).expect("families serialize").into(),
            ],
        )
        .map_err(internal)?;
        self.issue(&family, &family.scope)
    }

    fn family(&self, id: &str) -> Result<Option<(Family, bool)>> {
        #[derive(Deserialize)]
        struct Row {
            record: String,
            revoked: i64,
        }
        let rows: Vec<Row> =
            self.rows("SELECT record, revoked FROM families WHERE id = ?", vec![id.into()])?;
        Ok(rows.first().and_then(|r| Some((serde_json::from_str(&r.record).ok()?, r.revoked != 0))))
    }

    fn refresh(&self, client: &Client, pairs: &[(String, String)]) -> std::result::Result<Value, TokenError> {
        #[derive(Deserialize)]
        struct Row {
            family: String,
            used: i64,
        }
        let internal = |e: worker::Error| token_error("server_error", e.to_string());
        let token = one(pairs, "refresh_token")
            .ok_or_else(|| token_error("invalid_request", "the request names no refresh_token"))?;
        let rows: Vec<Row> = self
            .rows("SELECT family, used FROM refresh WHERE digest = ?", vec![digest(token).into()])
            .map_err(internal)?;
        let Some(row) = rows.first() else {
            return Err(token_error(
                "invalid_grant",
                "the refresh token is unknown or revoked: sign in again",
            ));
        };
        let Some((family, revoked)) = self.family(&row.family).map_err(internal)? else {
            return Err(token_error("invalid_grant", "the refresh token's sign-in is gone: sign in again"));
        };
        if revoked {
            return Err(token_error("invalid_grant", "this sign-in was revoked: sign in again"));
        }
        if row.used != 0 {
            self.revoke_family(&family.id).map_err(internal)?;
            return Err(token_error(
                "invalid_grant",
                "the refresh token was already used, so another party may hold it: this sign-in is revoked; sign in again",
            ));
        }
        let scope =
            grant::refresh(&family, &client.id, one(pairs, "scope"), one(pairs, "resource"), now_s())?;
        self.exec("UPDATE refresh SET used = 1 WHERE digest = ?", vec![digest(token).into()])
            .map_err(internal)?;
        self.issue(&family, &scope)
    }

    async fn revoke(&self, request: &Request, body: &[u8]) -> Result<Response> {
        let pairs = form(body);
        let client = match self.authenticate(request, &pairs).await {
            Ok(client) => client,
            Err(err) => return token_refusal(&err),
        };
        let Some(token) = one(&pairs, "token") else {
            return token_refusal(&token_error("invalid_request", "the request names no token"));
        };
        #[derive(Deserialize)]
        struct Row {
            family: String,
        }
        let mut family_id: Option<String> = None;
        if token.starts_with("hub_at.") {
            // An access token names its family; one past its expiry still says which.
            if let Some(claims) = peek(&self.config.key, token) {
                family_id = Some(claims.family);
            }
        } else {
            let rows: Vec<Row> =
                self.rows("SELECT family FROM refresh WHERE digest = ?", vec![digest(token).into()])?;
            family_id = rows.first().map(|r| r.family.clone());
        }
        if let Some(id) = family_id {
            if let Some((family, _)) = self.family(&id)? {
                if family.client_id == client.id {
                    self.revoke_family(&id)?;
                    self.object.state.storage().sync().await?;
                }
            }
        }
        // RFC 7009: unknown tokens are answered the same way.
        json_answer(200, &json!({}))
    }

    fn accounts(&self) -> Result<Response> {
        #[derive(Deserialize, Serialize)]
        struct Row {
            account: String,
            tenant: String,
            name: String,
            created_s: i64,
        }
        let rows: Vec<Row> =
            self.rows("SELECT account, tenant, name, created_s FROM accounts ORDER BY created_s", vec![])?;
        json_answer(200, &json!({ "accounts": rows }))
    }
}

/// The claims of an access token this hub signed, whatever its expiry (for revocation).
fn peek(key: &TokenKey, token: &str) -> Option<Claims> {
    let (body, _) = token.strip_prefix("hub_at.")?.split_once('.')?;
    let json = URL_SAFE_NO_PAD.decode(body).ok()?;
    let claims: Claims = serde_json::from_slice(&json).ok()?;
    crate::access::token::verify(key, token, &claims.resource, claims.iat).ok()
}

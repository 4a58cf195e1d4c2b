//! OAuth connections: what a hub keeps of one (the client it signed in as, its tokens) and the
//! refresh of its access token, the part of OAuth every hub runs on its own (the local hub after
//! `hub auth`, the hosted hub after a push). Signing in needs a person and a browser and stays
//! with the local hub; refreshing needs neither, so it lives here over the [`TokenEndpoint`]
//! port and runs natively and inside the Worker alike.
//!
//! Tokens are connection secrets: a [`TokenSet`] is stored whole as one secret value, and its
//! `Debug` shows none of them. Whoever holds one keeps other processes out while it refreshes
//! (the local hub takes a lock file; a Durable Object is one thread), reads the stored set again
//! once it holds the lock, and stores a rotated refresh token before it lets go.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::ports::{Credentials, SecretsError, TokenEndpoint, TokenPost};
use crate::scrub::Scrubber;

/// The slot an OAuth connection's tokens are stored under, and the one its access token rides
/// in as [`Credentials`] (each host's HTTP client sends it as `Authorization: Bearer`). `#` is
/// in no header or variable name, so it never meets a static slot.
pub const SLOT: &str = "#oauth";

/// Largest token endpoint answer read; a host stops reading beyond it.
pub const MAX_TOKEN_RESPONSE_BYTES: usize = 64 * 1024;

/// A refresh starts this long before the access token expires, at most; a quarter of a short
/// lifetime otherwise (but a second at least, up to half the lifetime: `expires_in` counts whole
/// seconds, and a JWT's `exp` too, so a token may end up to a second before the hub's record
/// says), so a token valid for seconds is still used before it is replaced.
pub const REFRESH_MARGIN_MS: u64 = 60_000;

/// How the client proves itself at the token endpoint (RFC 6749 §2.3, RFC 7591's names).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClientAuth {
    /// A public client: its `client_id` in the form, no secret.
    #[default]
    None,
    /// `Authorization: Basic` with the id and secret.
    ClientSecretBasic,
    /// The id and secret in the form.
    ClientSecretPost,
}

impl ClientAuth {
    pub fn as_str(self) -> &'static str {
        match self {
            ClientAuth::None => "none",
            ClientAuth::ClientSecretBasic => "client_secret_basic",
            ClientAuth::ClientSecretPost => "client_secret_post",
        }
    }
}

/// The client a connection signed in as, and where it refreshes: none of it secret, so it lives
/// in the connection's record. The client secret, if any, is in the [`TokenSet`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OAuthClient {
    /// The authorization server's issuer identifier, as checked at sign-in.
    pub issuer: String,
    pub token_endpoint: String,
    pub client_id: String,
    #[serde(default)]
    pub client_auth: ClientAuth,
    /// How the client id was obtained: `given`, `metadata-document` or `registered`.
    pub registration: String,
    /// The protected resource the tokens are for (RFC 8707), sent with every token request.
    pub resource: String,
    /// The scopes asked for at sign-in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
}

/// A connection's tokens, stored whole as one secret value.
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenSet {
    #[serde(default)]
    pub access_token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token was issued, as this hub's clock read it.
    #[serde(default)]
    pub issued_ms: u64,
    /// When it expires; `None` when the server did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_ms: Option<u64>,
    /// The scopes granted, when the server said.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub scopes: Vec<String>,
    /// The client's secret, for a confidential client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// Set when the server refused a refresh: the connection needs a person to sign in again,
    /// and this says why. No token is kept then.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_sign_in: Option<String>,
    /// Scopes a source asked for (403 `insufficient_scope`) that the tokens lack: the next
    /// sign-in asks for them too. The tokens stay good for what they cover.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub wanted_scopes: Vec<String>,
}

impl fmt::Debug for TokenSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenSet")
            .field("access_token", &(!self.access_token.is_empty()).then_some("[secret]"))
            .field("refresh_token", &self.refresh_token.as_ref().map(|_| "[secret]"))
            .field("issued_ms", &self.issued_ms)
            .field("expires_ms", &self.expires_ms)
            .field("scopes", &self.scopes)
            .field("client_secret", &self.client_secret.as_ref().map(|_| "[secret]"))
            .field("needs_sign_in", &self.needs_sign_in)
            .field("wanted_scopes", &self.wanted_scopes)
            .finish()
    }
}

impl TokenSet {
    /// Whether the access token can be sent now: present, not refused, and not about to expire.
    pub fn usable(&self, now_ms: u64) -> bool {
        self.needs_sign_in.is_none() && !self.access_token.is_empty() && !self.expiring(now_ms)
    }

    /// Whether the access token expires within the refresh margin.
    pub fn expiring(&self, now_ms: u64) -> bool {
        let Some(expires) = self.expires_ms else { return false };
        let lifetime = expires.saturating_sub(self.issued_ms);
        let margin = REFRESH_MARGIN_MS.min((lifetime / 4).max(1_000)).min(lifetime / 2);
        now_ms.saturating_add(margin) >= expires
    }

    /// The credentials a call on `connection` sends: the access token in [`SLOT`].
    pub fn credentials(&self, connection: &str) -> Credentials {
        Credentials {
            connection: Some(connection.to_owned()),
            values: vec![(SLOT.to_owned(), self.access_token.clone())],
        }
    }

    /// Every secret value in the set, for the scrubber.
    pub fn secrets(&self) -> Vec<&str> {
        let mut values = vec![self.access_token.as_str()];
        values.extend(self.refresh_token.as_deref());
        values.extend(self.client_secret.as_deref());
        values.retain(|value| !value.is_empty());
        values
    }

    /// The set after a refused refresh: no tokens, the client secret kept (the client is still
    /// registered), and why a person must sign in again.
    pub fn refused(&self, why: String) -> TokenSet {
        TokenSet {
            client_secret: self.client_secret.clone(),
            needs_sign_in: Some(why),
            ..TokenSet::default()
        }
    }

    pub fn from_json(text: &str) -> Result<TokenSet, String> {
        serde_json::from_str(text).map_err(|e| format!("the stored tokens do not parse ({e})"))
    }

    /// The scopes a `WWW-Authenticate` challenge names (`scope="a b"`), if it is an
    /// `insufficient_scope` one.
    pub fn challenge_scopes(challenge: &str) -> Vec<String> {
        if !challenge.contains("insufficient_scope") {
            return Vec::new();
        }
        let Some(at) = challenge.find("scope=") else { return Vec::new() };
        let rest = &challenge[at + "scope=".len()..];
        let value = match rest.strip_prefix('"') {
            Some(quoted) => quoted.split('"').next().unwrap_or(""),
            None => rest.split([',', ' ']).next().unwrap_or(""),
        };
        value.split_whitespace().map(str::to_owned).collect()
    }

    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// A connection that needs a person to sign in again, and why.
pub fn sign_in_required(namespace: &str, connection: &str, reason: &str) -> SecretsError {
    SecretsError::SignInRequired {
        namespace: namespace.to_owned(),
        connection: connection.to_owned(),
        reason: reason.to_owned(),
    }
}

/// Why a token request produced no tokens.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TokenError {
    /// The authorization server refused the grant (revoked, expired, `invalid_grant`, an
    /// unknown client): only a person signing in again helps.
    #[error("the authorization server refused the refresh: {0}")]
    Refused(String),
    /// It did not answer, or answered something that is not a token response; the tokens
    /// stay as they are and a later call tries again.
    #[error("the token endpoint failed: {0}")]
    Failed(String),
}

/// The refresh request for `tokens`: a form post to the token endpoint with the refresh token,
/// the resource and the client's authentication.
pub fn refresh_request(client: &OAuthClient, tokens: &TokenSet) -> Result<TokenPost, TokenError> {
    let Some(refresh_token) = tokens.refresh_token.as_deref().filter(|t| !t.is_empty()) else {
        return Err(TokenError::Refused("the server gave no refresh token at sign-in".to_owned()));
    };
    let mut form = form_urlencoded::Serializer::new(String::new());
    form.append_pair("grant_type", "refresh_token");
    form.append_pair("refresh_token", refresh_token);
    form.append_pair("resource", &client.resource);
    let mut basic = None;
    match (client.client_auth, tokens.client_secret.as_deref()) {
        (ClientAuth::ClientSecretBasic, Some(secret)) => {
            basic = Some(basic_credentials(&client.client_id, secret));
        }
        (ClientAuth::ClientSecretPost, Some(secret)) => {
            form.append_pair("client_id", &client.client_id);
            form.append_pair("client_secret", secret);
        }
        _ => {
            form.append_pair("client_id", &client.client_id);
        }
    }
    Ok(TokenPost { url: client.token_endpoint.clone(), authorization: basic, body: form.finish() })
}

/// `Basic base64(urlencode(id) ":" urlencode(secret))`, as RFC 6749 §2.3.1 has it.
fn basic_credentials(id: &str, secret: &str) -> String {
    use base64::Engine as _;
    let encode = |s: &str| form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>();
    let pair = format!("{}:{}", encode(id), encode(secret));
    format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(pair))
}

/// Reads a token endpoint's answer to a refresh of `previous`: the new set (the old refresh
/// token kept when no new one came), or why there is none. Every secret of `previous` is
/// scrubbed from the error texts, which quote the server.
pub fn read_refresh(
    status: u16,
    body: &[u8],
    previous: &TokenSet,
    now_ms: u64,
) -> Result<TokenSet, TokenError> {
    let scrubber = Scrubber::new(previous.secrets()).ok();
    let scrub = |text: String| match &scrubber {
        Some(scrubber) => scrubber.scrub_str(&text).into_owned(),
        None => text,
    };
    read_refresh_inner(status, body, previous, now_ms).map_err(|error| match error {
        TokenError::Refused(why) => TokenError::Refused(scrub(why)),
        TokenError::Failed(why) => TokenError::Failed(scrub(why)),
    })
}

fn read_refresh_inner(
    status: u16,
    body: &[u8],
    previous: &TokenSet,
    now_ms: u64,
) -> Result<TokenSet, TokenError> {
    if body.len() > MAX_TOKEN_RESPONSE_BYTES {
        return Err(TokenError::Failed(format!(
            "its answer is larger than {MAX_TOKEN_RESPONSE_BYTES} bytes"
        )));
    }
    let json: Option<Value> = serde_json::from_slice(body).ok();
    if !(200..300).contains(&status) {
        let error = json.as_ref().and_then(|j| j.get("error")).and_then(Value::as_str).map(short);
        let description =
            json.as_ref().and_then(|j| j.get("error_description")).and_then(Value::as_str).map(short);
        let said = match (&error, &description) {
            (Some(error), Some(description)) => format!("`{error}`: {description}"),
            (Some(error), None) => format!("`{error}`"),
            _ => format!("HTTP {status}"),
        };
        // RFC 6749 §5.2: these say the grant or the client is no longer good.
        let refused = matches!(
            error.as_deref(),
            Some("invalid_grant" | "invalid_client" | "unauthorized_client" | "invalid_scope")
        );
        return Err(if refused && (400..500).contains(&status) {
            TokenError::Refused(said)
        } else {
            TokenError::Failed(said)
        });
    }
    let Some(Value::Object(fields)) = json else {
        return Err(TokenError::Failed("its answer is not a JSON object".to_owned()));
    };
    let access_token = match fields.get("access_token") {
        Some(Value::String(token)) if !token.is_empty() && !token.contains(['\r', '\n', '\0']) => token,
        Some(Value::String(_)) => {
            return Err(TokenError::Failed("its `access_token` is empty or not one line".to_owned()));
        }
        _ => return Err(TokenError::Failed("its answer has no `access_token`".to_owned())),
    };
    match fields.get("token_type").and_then(Value::as_str) {
        Some(kind) if kind.eq_ignore_ascii_case("bearer") => {}
        Some(kind) => {
            return Err(TokenError::Failed(format!(
                "its token type is `{}`, and the hub sends only bearer tokens",
                short(kind)
            )));
        }
        None => return Err(TokenError::Failed("its answer has no `token_type`".to_owned())),
    }
    let expires_in = match fields.get("expires_in") {
        None | Some(Value::Null) => None,
        Some(Value::Number(n)) => n.as_u64(),
        Some(Value::String(s)) => s.parse::<u64>().ok(),
        Some(_) => None,
    };
    let refresh_token = match fields.get("refresh_token") {
        Some(Value::String(token)) if !token.is_empty() => Some(token.clone()),
        _ => previous.refresh_token.clone(),
    };
    let scopes = match fields.get("scope").and_then(Value::as_str) {
        Some(scope) => scope.split_whitespace().map(str::to_owned).collect(),
        None => previous.scopes.clone(),
    };
    Ok(TokenSet {
        access_token: access_token.clone(),
        refresh_token,
        issued_ms: now_ms,
        expires_ms: expires_in.map(|s| now_ms.saturating_add(s.saturating_mul(1000))),
        scopes,
        client_secret: previous.client_secret.clone(),
        needs_sign_in: None,
        wanted_scopes: previous.wanted_scopes.clone(),
    })
}

/// A server's words, cut short and kept to one line.
fn short(text: &str) -> String {
    let line: String = text.chars().filter(|c| !c.is_control()).take(200).collect();
    line
}

/// Refreshes `tokens` at the token endpoint: the new set to store, or why there is none. The
/// caller holds the connection's refresh lock and has read `tokens` under it.
pub async fn refresh(
    client: &OAuthClient,
    tokens: &TokenSet,
    endpoint: &dyn TokenEndpoint,
    now_ms: u64,
) -> Result<TokenSet, TokenError> {
    let post = refresh_request(client, tokens)?;
    let (status, body) = endpoint.post(&post).await.map_err(TokenError::Failed)?;
    read_refresh(status, &body, tokens, now_ms)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn client(auth: ClientAuth) -> OAuthClient {
        OAuthClient {
            issuer: "https://as.example".into(),
            token_endpoint: "https://as.example/token".into(),
            client_id: "hub client".into(),
            client_auth: auth,
            registration: "registered".into(),
            resource: "https://mcp.example/mcp".into(),
            scopes: vec!["mcp:tools".into()],
        }
    }

    fn tokens() -> TokenSet {
        TokenSet {
            access_token: "at-one-1234".into(),
            refresh_token: Some("rt-one-1234".into()),
            issued_ms: 1_000,
            expires_ms: Some(5_000),
            scopes: vec!["mcp:tools".into()],
            client_secret: Some("s3cret:&=".into()),
            needs_sign_in: None,
            wanted_scopes: Vec::new(),
        }
    }

    #[test]
    fn a_short_lived_token_is_refreshed_in_its_last_quarter() {
        let t = tokens();
        assert!(t.usable(1_000));
        assert!(t.usable(3_999));
        assert!(!t.usable(4_000));
        let long = TokenSet { issued_ms: 0, expires_ms: Some(3_600_000), ..tokens() };
        assert!(long.usable(3_539_999));
        assert!(!long.usable(3_540_000));
        let forever = TokenSet { expires_ms: None, ..tokens() };
        assert!(forever.usable(u64::MAX));
        assert!(!tokens().refused("revoked".into()).usable(0));
        // Two seconds: the last whole second is given up, since the server counts in seconds.
        let short = TokenSet { issued_ms: 0, expires_ms: Some(2_000), ..tokens() };
        assert!(short.usable(999));
        assert!(!short.usable(1_000));
    }

    #[test]
    fn refresh_requests_carry_the_resource_and_the_client_auth() {
        let basic = refresh_request(&client(ClientAuth::ClientSecretBasic), &tokens()).unwrap();
        assert_eq!(
            basic.body,
            "grant_type=refresh_token&refresh_token=rt-one-1234&resource=https%3A%2F%2Fmcp.example%2Fmcp"
        );
        // RFC 6749 §2.3.1: id and secret are form-encoded before base64.
        assert_eq!(basic.authorization.as_deref(), Some("Basic aHViK2NsaWVudDpzM2NyZXQlM0ElMjYlM0Q="));
        let post = refresh_request(&client(ClientAuth::ClientSecretPost), &tokens()).unwrap();
        assert!(post.authorization.is_none());
        assert!(post.body.ends_with("&client_id=hub+client&client_secret=s3cret%3A%26%3D"), "{}", post.body);
        let public = TokenSet { client_secret: None, ..tokens() };
        let none = refresh_request(&client(ClientAuth::None), &public).unwrap();
        assert!(none.body.ends_with("&client_id=hub+client"));
        let no_refresh = TokenSet { refresh_token: None, ..tokens() };
        assert!(matches!(
            refresh_request(&client(ClientAuth::None), &no_refresh),
            Err(TokenError::Refused(_))
        ));
    }

    #[test]
    fn a_refresh_answer_is_checked_before_it_replaces_anything() {
        let old = tokens();
        let ok = br#"{"access_token":"at-two-1234","token_type":"Bearer","expires_in":5,"refresh_token":"rt-two-1234"}"#;
        let new = read_refresh(200, ok, &old, 10_000).unwrap();
        assert_eq!(new.access_token, "at-two-1234");
        assert_eq!(new.refresh_token.as_deref(), Some("rt-two-1234"));
        assert_eq!((new.issued_ms, new.expires_ms), (10_000, Some(15_000)));
        assert_eq!(new.scopes, old.scopes);
        assert_eq!(new.client_secret, old.client_secret);
        // No new refresh token: the old one stays.
        let kept =
            read_refresh(200, br#"{"access_token":"at-3-12345","token_type":"bearer"}"#, &old, 0).unwrap();
        assert_eq!(kept.refresh_token, old.refresh_token);
        assert_eq!(kept.expires_ms, None);

        let failed = |status, body: &[u8]| read_refresh(status, body, &old, 0).unwrap_err();
        assert_eq!(
            failed(200, br#"{"access_token":"x-123456","token_type":"mac"}"#),
            TokenError::Failed("its token type is `mac`, and the hub sends only bearer tokens".into())
        );
        assert_eq!(
            failed(200, br#"{"token_type":"bearer"}"#),
            TokenError::Failed("its answer has no `access_token`".into())
        );
        assert_eq!(failed(200, b"<html>"), TokenError::Failed("its answer is not a JSON object".into()));
        assert!(matches!(failed(200, &vec![b' '; MAX_TOKEN_RESPONSE_BYTES + 1]), TokenError::Failed(_)));
        assert_eq!(
            failed(400, br#"{"error":"invalid_grant","error_description":"grant request is invalid"}"#),
            TokenError::Refused("`invalid_grant`: grant request is invalid".into())
        );
        assert_eq!(failed(503, b"busy"), TokenError::Failed("HTTP 503".into()));
        // A server that quotes the refresh token back never gets it into an error text.
        assert_eq!(
            failed(400, br#"{"error":"invalid_grant","error_description":"rt-one-1234 is revoked"}"#),
            TokenError::Refused("`invalid_grant`: [secret] is revoked".into())
        );
    }

    #[test]
    fn debug_shows_no_token() {
        let text = format!("{:?}", tokens());
        for secret in tokens().secrets() {
            assert!(!text.contains(secret), "{text}");
        }
    }
}

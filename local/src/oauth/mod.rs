//! OAuth connections to remote MCP servers (the MCP authorization spec, OAuth 2.1).
//!
//! Signing in ([`sign_in`]) runs rmcp's `auth` module: protected resource metadata from the
//! server's 401 challenge or its well-known paths, the authorization server's metadata with its
//! `issuer` checked, PKCE S256, `resource` on every request, `iss` on the redirect, and the
//! client identity in the spec's order (the person's client id, a client ID metadata document,
//! dynamic registration). The person's side is here: a loopback redirect on a free port
//! ([`callback`]), the system browser or `$BROWSER` ([`browser`]), a five-minute wait.
//!
//! Tokens ([`tokens`]) are one secret value per connection in the keychain (or its fallback
//! file), read when a call resolves its connection, refreshed with core's [`capabilities_core::
//! oauth::refresh`] under a lock file so that of several hub processes exactly one refreshes a
//! connection at a time and the others read what it stored.

pub mod api;
mod browser;
mod callback;
pub mod flow;
pub mod tokens;

use std::time::Duration;

use capabilities_core::oauth::{ClientAuth, OAuthClient, TokenSet};
use rmcp::transport::auth::{
    AuthError, AuthorizationManager, AuthorizationMetadata, AuthorizationRequest, AuthorizationSession,
};

use crate::platform::now_ms;
use crate::upstream::check_url;

/// Where the hub's client ID metadata document is published, used when the authorization server
/// takes such documents and the person names no other (`--client-metadata-url`).
pub const DEFAULT_CLIENT_METADATA_URL: &str = "https://capabilities.sh/oauth/client-metadata.json";

/// The environment variable that names another client ID metadata document.
pub const CLIENT_METADATA_ENV: &str = "CAPABILITIES_CLIENT_METADATA_URL";

/// How long a sign-in waits for the browser to come back.
pub const SIGN_IN_TIMEOUT: Duration = Duration::from_secs(300);

/// The name the hub registers under.
const CLIENT_NAME: &str = "capabilities";

/// How a person signs in.
#[derive(Debug, Clone, Default)]
pub struct SignInOptions {
    /// A client registered with the authorization server beforehand.
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    /// The client ID metadata document's URL; [`DEFAULT_CLIENT_METADATA_URL`] when `None`.
    pub client_metadata_url: Option<String>,
    /// Print the URL instead of opening a browser.
    pub no_browser: bool,
    pub timeout: Option<Duration>,
    /// Scopes to ask for instead of the ones the server's challenge or metadata name (a step-up
    /// asks for what it had and what the server wants now).
    pub scopes: Vec<String>,
}

/// A finished sign-in: the client (for the connection's record) and its tokens (secret).
#[derive(Debug)]
pub struct SignedIn {
    pub client: OAuthClient,
    pub tokens: TokenSet,
}

/// Signs in to the MCP server at `url`, starting from its 401 challenge when there was one.
/// Nothing is stored here: the caller stores the tokens, then the record.
pub async fn sign_in(
    url: &str,
    challenge: Option<&str>,
    options: &SignInOptions,
) -> Result<SignedIn, String> {
    let base = check_url(url)?;
    let manager = AuthorizationManager::new(base.as_str()).await.map_err(|e| explain(&e))?;
    let resolution = manager.resolve_metadata_from_challenge(challenge).await.map_err(|e| explain(&e))?;
    let discovered = resolution.source.is_discovered();
    authorize(manager, &base, resolution.metadata, discovered, challenge, options).await
}

/// The sign-in itself, once the authorization server's metadata is known: the client identity,
/// the browser, the code exchange. `base` is the resource the tokens are for (`resource` on
/// every request, unless the protected resource's metadata named another).
async fn authorize(
    mut manager: AuthorizationManager,
    base: &reqwest::Url,
    metadata: AuthorizationMetadata,
    discovered: bool,
    challenge: Option<&str>,
    options: &SignInOptions,
) -> Result<SignedIn, String> {
    check_metadata(&metadata, discovered)?;
    manager.set_metadata(metadata.clone());

    let listener = callback::Listener::bind().await?;
    let redirect_uri = listener.redirect_uri();
    let mut request =
        AuthorizationRequest::new(&redirect_uri).with_client_name(CLIENT_NAME).with_initial_scope_selection();
    if let Some(challenge) = challenge {
        request = request.with_challenge(challenge);
    }
    if !options.scopes.is_empty() {
        request = request.with_scopes(options.scopes.clone());
    }
    let takes_documents = metadata
        .additional_fields
        .get("client_id_metadata_document_supported")
        .and_then(serde_json::Value::as_bool)
        .unwrap_or(false);
    let (registration, client_secret) = if let Some(id) = &options.client_id {
        request = request.with_preregistered_client(id);
        if let Some(secret) = &options.client_secret {
            request = request.with_client_secret(secret);
        }
        ("given", options.client_secret.clone())
    } else if takes_documents {
        let document = options.client_metadata_url.clone().unwrap_or_else(client_metadata_url);
        request = request.with_client_metadata_url(document);
        ("metadata-document", None)
    } else if metadata.registration_endpoint.is_none() {
        return Err(no_client_identity(&metadata));
    } else {
        // Registered here rather than inside rmcp's session, which keeps a registered client's
        // secret to itself; refreshing later needs it.
        let scopes = if options.scopes.is_empty() {
            manager.select_initial_scopes(&[]).await
        } else {
            options.scopes.clone()
        };
        let scopes: Vec<&str> = scopes.iter().map(String::as_str).collect();
        let registered = manager
            .register_client(CLIENT_NAME, &redirect_uri, &scopes)
            .await
            .map_err(|e| format!("dynamic client registration failed: {}", explain(&e)))?;
        request = request.with_preregistered_client(&registered.client_id);
        if let Some(secret) = &registered.client_secret {
            request = request.with_client_secret(secret);
        }
        ("registered", registered.client_secret.clone())
    };
    let session = AuthorizationSession::new(manager, request).await.map_err(|(_, e)| explain(&e))?;
    let auth_url = session.get_authorization_url().to_owned();
    let resource = query_value(&auth_url, "resource").unwrap_or_else(|| base.to_string());
    let scopes: Vec<String> = query_value(&auth_url, "scope")
        .map(|s| s.split_whitespace().map(str::to_owned).collect())
        .unwrap_or_default();
    let client_id = query_value(&auth_url, "client_id").unwrap_or_default();

    let state = query_value(&auth_url, "state").unwrap_or_default();
    let timeout = options.timeout.unwrap_or(SIGN_IN_TIMEOUT);
    browser::show(&auth_url, options.no_browser, &callback::in_words(timeout));
    let (redirect, browser) = listener.wait(timeout, &state).await?;
    let issued_ms = now_ms();
    let exchanged = match session.handle_callback_url(&redirect).await {
        Ok(response) => token_set(&response, client_secret, issued_ms),
        Err(e) => Err(explain(&e)),
    };
    browser.finish(exchanged.is_ok()).await;
    let tokens = exchanged?;
    let client_auth = match tokens.client_secret {
        None => ClientAuth::None,
        Some(_) if posts_secret(&metadata) => ClientAuth::ClientSecretPost,
        Some(_) => ClientAuth::ClientSecretBasic,
    };
    let client = OAuthClient {
        issuer: metadata.issuer.clone().unwrap_or_default(),
        token_endpoint: metadata.token_endpoint.clone(),
        client_id,
        client_auth,
        registration: registration.to_owned(),
        resource,
        scopes,
    };
    Ok(SignedIn { client, tokens })
}

/// What to do when the authorization server offers the hub no way to a client id.
fn no_client_identity(metadata: &AuthorizationMetadata) -> String {
    let issuer = metadata.issuer.as_deref().unwrap_or(&metadata.authorization_endpoint);
    format!(
        "the authorization server {issuer} offers no dynamic client registration and takes no client ID \
         metadata documents, so the hub cannot get a client id by itself; nothing was stored. Register a \
         client there (a public client with PKCE, redirect URI `http://127.0.0.1/callback` on any port, \
         as RFC 8252 has native apps do) and pass `--client-id ID` (its secret at the prompt, or with \
         `--client-secret-stdin`)"
    )
}

/// The client ID metadata document the environment names, or the project's.
fn client_metadata_url() -> String {
    std::env::var(CLIENT_METADATA_ENV)
        .ok()
        .filter(|url| !url.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_CLIENT_METADATA_URL.to_owned())
}

/// What rmcp checks is not all the hub asks: every endpoint https (plain http on loopback
/// only), and PKCE with S256 advertised by any server that published its metadata.
fn check_metadata(metadata: &AuthorizationMetadata, discovered: bool) -> Result<(), String> {
    let endpoints = [
        ("authorization endpoint", Some(&metadata.authorization_endpoint)),
        ("token endpoint", Some(&metadata.token_endpoint)),
        ("registration endpoint", metadata.registration_endpoint.as_ref()),
    ];
    for (what, url) in endpoints {
        let Some(url) = url else { continue };
        check_url(url)
            .map_err(|why| format!("the authorization server's {what}: {why}; nothing was stored"))?;
    }
    if discovered {
        let methods = metadata.code_challenge_methods_supported.as_deref().unwrap_or_default();
        if !methods.iter().any(|m| m == "S256") {
            return Err(format!(
                "the authorization server {} does not offer PKCE with S256 (its metadata lists {:?}), which \
                 OAuth 2.1 requires; nothing was stored. Ask the server's operator to enable it",
                metadata.issuer.as_deref().unwrap_or("?"),
                methods
            ));
        }
    }
    Ok(())
}

/// Whether the client sends its secret in the form: when the server takes only that.
fn posts_secret(metadata: &AuthorizationMetadata) -> bool {
    let methods = metadata.additional_fields.get("token_endpoint_auth_methods_supported");
    let has = |name: &str| {
        methods.and_then(|m| m.as_array()).is_some_and(|list| list.iter().any(|m| m.as_str() == Some(name)))
    };
    has("client_secret_post") && !has("client_secret_basic")
}

/// The tokens of a code exchange's answer, checked like a refresh's.
fn token_set(
    response: &rmcp::transport::auth::OAuthTokenResponse,
    client_secret: Option<String>,
    issued_ms: u64,
) -> Result<TokenSet, String> {
    let raw = serde_json::to_vec(response).map_err(|e| e.to_string())?;
    let empty = TokenSet { client_secret, ..TokenSet::default() };
    capabilities_core::oauth::read_refresh(200, &raw, &empty, issued_ms)
        .map_err(|e| format!("the authorization server's token answer is unusable: {e}; nothing was stored"))
}

fn query_value(url: &str, name: &str) -> Option<String> {
    let url = reqwest::Url::parse(url).ok()?;
    url.query_pairs().find(|(key, _)| key == name).map(|(_, value)| value.into_owned())
}

/// rmcp's error, in the hub's words where they say more.
fn explain(error: &AuthError) -> String {
    match error {
        AuthError::PkceUnsupported => {
            "the authorization server does not offer PKCE with S256, which OAuth 2.1 requires; nothing \
             was stored"
                .to_owned()
        }
        AuthError::AuthorizationServerMismatch { expected_issuer, received_issuer } => format!(
            "the authorization server named itself `{received_issuer}` where `{expected_issuer}` was \
             expected (in its metadata, or as `iss` on the redirect), so the answer may not come from the \
             server it claims; nothing was stored"
        ),
        AuthError::TokenExchangeFailed(said) if said.contains("missing field `access_token`") => {
            "the authorization server's token answer has no `access_token`; nothing was stored".to_owned()
        }
        AuthError::TokenExchangeFailed(said) if said.contains("Request failed") => {
            "the authorization server's token endpoint gave no usable answer (none within 30 seconds, or \
             one too large to read); nothing was stored. Try again later"
                .to_owned()
        }
        other => format!("{other}; nothing was stored"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The document the site publishes names itself at the URL the hub signs in with.
    #[test]
    fn the_published_client_metadata_document_is_the_default() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../site/oauth/client-metadata.json");
        let document: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!(document["client_id"], DEFAULT_CLIENT_METADATA_URL);
        assert_eq!(document["token_endpoint_auth_method"], "none");
        assert_eq!(document["redirect_uris"], serde_json::json!(["http://127.0.0.1/callback"]));
    }

    #[test]
    fn a_secret_is_posted_only_where_basic_is_not_offered() {
        let metadata = |methods: serde_json::Value| -> AuthorizationMetadata {
            serde_json::from_value(serde_json::json!({
                "authorization_endpoint": "https://as.example/authorize",
                "token_endpoint": "https://as.example/token",
                "token_endpoint_auth_methods_supported": methods,
            }))
            .unwrap()
        };
        assert!(posts_secret(&metadata(serde_json::json!(["client_secret_post"]))));
        assert!(!posts_secret(&metadata(serde_json::json!(["client_secret_basic", "client_secret_post"]))));
        assert!(!posts_secret(&metadata(serde_json::Value::Null)));
    }
}

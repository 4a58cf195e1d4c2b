//! Signing in to an HTTP API whose OpenAPI document declares OAuth 2.0 (the authorization code
//! flow) or OpenID Connect: the same sign-in as an MCP server's ([`super::authorize`], rmcp's
//! `auth` module), with the authorization server's metadata taken from the document instead of
//! a 401 challenge.
//!
//! - `oauth2`: the flow's `authorizationUrl` and `tokenUrl`. The server's own metadata (RFC 8414
//!   or OpenID discovery at the token URL's origin, `issuer` checked by rmcp) is used too when it
//!   names the same two endpoints: it says whether the server registers clients, takes PKCE with
//!   S256 and sends `iss` back. Without it, a person passes `--client-id`.
//! - `openIdConnect`: the discovery document at `openIdConnectUrl`, its `issuer` checked against
//!   the URL it was read from (OpenID Connect Discovery §4.3).
//!
//! The tokens are for the API's base URL (`resource`), fixed when the source was added; the
//! bearer goes only there.

use std::time::Duration;

use capabilities_core::openapi::document::{Document, SecurityScheme};
use futures_util::StreamExt;
use rmcp::transport::auth::{AuthorizationManager, AuthorizationMetadata};

use super::{SignInOptions, SignedIn, authorize, explain};
use crate::upstream::check_url;

/// The largest discovery document read.
const MAX_DISCOVERY_BYTES: usize = 256 * 1024;

/// How long reading the discovery document may take.
const DISCOVERY_TIMEOUT: Duration = Duration::from_secs(10);

/// Where a document's sign-in goes, checked before anything is asked or stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Plan {
    /// `oauth2` with an authorization code flow.
    Code { scheme: String, authorization_url: String, token_url: String },
    /// `openIdConnect`: the discovery document's URL.
    OpenIdConnect { scheme: String, url: String },
}

impl Plan {
    /// The scheme's name in the document.
    pub fn scheme(&self) -> &str {
        match self {
            Plan::Code { scheme, .. } | Plan::OpenIdConnect { scheme, .. } => scheme,
        }
    }

    /// One line for people.
    pub fn describe(&self) -> String {
        match self {
            Plan::Code { scheme, authorization_url, .. } => {
                format!("OAuth 2.0 scheme `{scheme}`, signing in at {authorization_url}")
            }
            Plan::OpenIdConnect { scheme, url } => {
                format!("OpenID Connect scheme `{scheme}`, discovered at {url}")
            }
        }
    }
}

/// The sign-in `document` asks for, checked: an authorization code flow (the only one the hub
/// runs), endpoints on https (plain http on loopback only). `None` when it declares no OAuth
/// 2.0 or OpenID Connect scheme.
pub fn plan(document: &Document) -> Option<Result<Plan, String>> {
    let (name, scheme) = document.sign_in_scheme()?;
    Some(plan_for(name, scheme))
}

fn plan_for(name: &str, scheme: &SecurityScheme) -> Result<Plan, String> {
    let endpoint = |what: &str, url: &str| {
        check_url(url).map(|_| ()).map_err(|why| {
            format!("the document's OAuth scheme `{name}`: its {what}: {why}; nothing was added")
        })
    };
    match scheme {
        SecurityScheme::OAuth2 { code_flow: Some(flow), .. } => {
            endpoint("authorization URL", &flow.authorization_url)?;
            endpoint("token URL", &flow.token_url)?;
            Ok(Plan::Code {
                scheme: name.to_owned(),
                authorization_url: flow.authorization_url.clone(),
                token_url: flow.token_url.clone(),
            })
        }
        SecurityScheme::OAuth2 { flows, .. } => Err(format!(
            "the document's OAuth scheme `{name}` declares {}, and the hub signs in only with the \
             authorization code flow (with PKCE), which needs both an `authorizationUrl` and a \
             `tokenUrl`; nothing was added. Get a token another way and pass `--auth bearer`",
            if flows.is_empty() {
                "no flow".to_owned()
            } else {
                format!(
                    "only the {} flow{}",
                    flows.iter().map(|f| format!("`{f}`")).collect::<Vec<_>>().join(", "),
                    if flows.len() == 1 { "" } else { "s" }
                )
            }
        )),
        SecurityScheme::OpenIdConnect { url } => {
            endpoint("OpenID Connect discovery URL", url)?;
            Ok(Plan::OpenIdConnect { scheme: name.to_owned(), url: url.clone() })
        }
        other => Err(format!("the document's scheme `{name}` ({other:?}) is not one a person signs in for")),
    }
}

/// The scopes to ask for: the person's (`--scope`), else those the operations ask of the scheme.
pub fn scopes(document: &Document, plan: &Plan, chosen: &[String]) -> Vec<String> {
    if !chosen.is_empty() {
        return chosen.to_vec();
    }
    document.scopes_asked(plan.scheme()).to_vec()
}

/// Signs in for the API at `base_url` as `plan` says. Nothing is stored here.
pub async fn sign_in(base_url: &str, plan: &Plan, options: &SignInOptions) -> Result<SignedIn, String> {
    let base = check_url(base_url).map_err(|why| format!("the API's base URL: {why}"))?;
    let (metadata, discovered) = metadata(plan).await?;
    let manager = AuthorizationManager::new(base.as_str()).await.map_err(|e| explain(&e))?;
    authorize(manager, &base, metadata, discovered, None, options).await
}

/// The authorization server's metadata for `plan`, and whether the server published it.
async fn metadata(plan: &Plan) -> Result<(AuthorizationMetadata, bool), String> {
    match plan {
        Plan::Code { authorization_url, token_url, .. } => {
            if let Some(published) = published(token_url).await
                && same_endpoint(&published.authorization_endpoint, authorization_url)
                && same_endpoint(&published.token_endpoint, token_url)
            {
                return Ok((published, true));
            }
            let metadata: AuthorizationMetadata = serde_json::from_value(serde_json::json!({
                "authorization_endpoint": authorization_url,
                "token_endpoint": token_url,
                "response_types_supported": ["code"],
            }))
            .map_err(|e| e.to_string())?;
            Ok((metadata, false))
        }
        Plan::OpenIdConnect { url, .. } => Ok((discover(url).await?, true)),
    }
}

/// The metadata the server at `token_url`'s origin publishes (RFC 8414, else OpenID discovery;
/// rmcp checks its `issuer`), if any.
async fn published(token_url: &str) -> Option<AuthorizationMetadata> {
    let mut origin = reqwest::Url::parse(token_url).ok()?;
    origin.set_path("/");
    origin.set_query(None);
    origin.set_fragment(None);
    let manager = AuthorizationManager::new(origin.as_str()).await.ok()?;
    let resolution = manager.resolve_metadata().await.ok()?;
    resolution.source.is_discovered().then_some(resolution.metadata)
}

fn same_endpoint(a: &str, b: &str) -> bool {
    match (reqwest::Url::parse(a), reqwest::Url::parse(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// Reads the OpenID Connect discovery document at `url` (no redirects, bounded) and checks that
/// its `issuer` is the one the URL names.
async fn discover(url: &str) -> Result<AuthorizationMetadata, String> {
    let fail = |why: String| {
        format!("reading the OpenID Connect discovery document {url}: {why}; nothing was added")
    };
    let parsed = check_url(url).map_err(fail)?;
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(DISCOVERY_TIMEOUT)
        .build()
        .map_err(|e| fail(e.to_string()))?;
    let response =
        client.get(parsed.clone()).header(reqwest::header::ACCEPT, "application/json").send().await.map_err(
            |e| {
                fail(if e.is_timeout() { "no answer within 10 s".into() } else { "could not connect".into() })
            },
        )?;
    let status = response.status();
    if !status.is_success() {
        return Err(fail(format!("it answered HTTP {status}")));
    }
    let mut body = Vec::new();
    let mut chunks = response.bytes_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(|_| fail("the answer broke off".into()))?;
        if body.len() + chunk.len() > MAX_DISCOVERY_BYTES {
            return Err(fail(format!("it is larger than {} KiB", MAX_DISCOVERY_BYTES / 1024)));
        }
        body.extend_from_slice(&chunk);
    }
    let metadata: AuthorizationMetadata = serde_json::from_slice(&body)
        .map_err(|e| fail(format!("it is not OpenID provider metadata ({e})")))?;
    let expected = expected_issuer(&parsed);
    match metadata.issuer.as_deref() {
        Some(issuer) if same_issuer(issuer, &expected) => Ok(metadata),
        Some(issuer) => Err(format!(
            "the OpenID Connect discovery document {url} names its issuer `{issuer}` where `{expected}` was \
             expected, so it may not come from the server it claims; nothing was added"
        )),
        None => {
            Err(format!("the OpenID Connect discovery document {url} names no issuer; nothing was added"))
        }
    }
}

/// The issuer a discovery URL stands for: the URL without `/.well-known/openid-configuration`.
fn expected_issuer(url: &reqwest::Url) -> String {
    let mut issuer = url.clone();
    issuer.set_query(None);
    issuer.set_fragment(None);
    let path = url.path();
    let stripped = path.strip_suffix("/.well-known/openid-configuration").unwrap_or(path);
    issuer.set_path(stripped);
    issuer.to_string().trim_end_matches('/').to_owned()
}

fn same_issuer(said: &str, expected: &str) -> bool {
    said.trim_end_matches('/') == expected.trim_end_matches('/')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_issuer_is_what_the_discovery_url_names() {
        let at = |u: &str| expected_issuer(&reqwest::Url::parse(u).unwrap());
        assert_eq!(at("https://id.example/.well-known/openid-configuration"), "https://id.example");
        assert_eq!(
            at("https://id.example/tenant/.well-known/openid-configuration"),
            "https://id.example/tenant"
        );
        assert!(same_issuer("https://id.example/", "https://id.example"));
        assert!(!same_issuer("https://evil.example", "https://id.example"));
    }

    #[test]
    fn only_an_authorization_code_flow_on_https_signs_in() {
        let read = |text: &str| {
            capabilities_core::openapi::document::read(text.as_bytes(), &Default::default()).unwrap()
        };
        let doc = |scheme: &str| {
            read(&format!("openapi: 3.1.0\npaths: {{}}\ncomponents:\n  securitySchemes:\n    o: {scheme}\n"))
        };
        let implicit = doc(
            "{type: oauth2, flows: {implicit: {authorizationUrl: 'https://a/x', scopes: {}}, password: {tokenUrl: 'https://a/t', scopes: {}}}}",
        );
        let err = plan(&implicit).unwrap().unwrap_err();
        assert!(err.contains("only the `implicit`, `password` flows"), "{err}");
        let plain = doc(
            "{type: oauth2, flows: {authorizationCode: {authorizationUrl: 'https://a/x', tokenUrl: 'http://as.example.com/token', scopes: {}}}}",
        );
        let err = plan(&plain).unwrap().unwrap_err();
        assert!(err.contains("token URL: its URL `http://as.example.com/token` is plain http"), "{err}");
        let loopback = doc(
            "{type: oauth2, flows: {authorizationCode: {authorizationUrl: 'http://127.0.0.1:9/auth', tokenUrl: 'http://127.0.0.1:9/token', scopes: {}}}}",
        );
        assert!(matches!(plan(&loopback), Some(Ok(Plan::Code { .. }))));
        let oidc = doc(
            "{type: openIdConnect, openIdConnectUrl: 'https://id.example/.well-known/openid-configuration'}",
        );
        assert!(matches!(plan(&oidc), Some(Ok(Plan::OpenIdConnect { .. }))));
        assert_eq!(plan(&doc("{type: http, scheme: bearer}")), None);
    }
}

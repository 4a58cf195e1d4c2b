//! Who may use the hosted hub's single `/mcp` address: the hub is its own OAuth 2.1
//! authorization server and the resource server in front of `/mcp` (MCP authorization,
//! 2026-07-28). Everything here is plain Rust, unit-tested natively; the Worker's `access`
//! Durable Object stores what these functions decide and `worker/mod.rs` checks tokens.
//!
//! - `token` — access tokens (HMAC-signed claims naming account, tenant, client, scope and the
//!   exact resource), the random codes, refresh tokens and client secrets that are stored only
//!   as SHA-256 digests, PKCE S256.
//! - `client` — registered clients (dynamic registration) and client ID metadata documents:
//!   which URLs may be fetched and what a document must say; redirect URIs matched exactly.
//! - `request` — the authorization request: what is refused on a local page (unknown client,
//!   unregistered redirect URI: never redirected) and what goes back to the client with `iss`.
//! - `grant` — authorization codes and refresh token families: single use, bound to client,
//!   redirect URI and PKCE verifier; a reused one revokes its family.
//! - `metadata` — protected resource and authorization server metadata, the `WWW-Authenticate`
//!   challenges.
//! - `page` — the consent page and the error page, plain HTML that needs no JavaScript.

pub mod client;
pub mod grant;
pub mod metadata;
pub mod page;
pub mod request;
pub mod token;

/// The scope `/mcp` needs.
pub const SCOPE_MCP: &str = "mcp";
/// The scope the admin API will take from a signed-in person (`hub push`, later); `/mcp`
/// answers a token with only this one 403 `insufficient_scope`.
pub const SCOPE_ADMIN: &str = "hub:admin";
/// Every scope the hub grants.
pub const SCOPES: [&str; 2] = [SCOPE_MCP, SCOPE_ADMIN];

/// How long an access token lives, unless the operator says shorter (or longer, up to an hour).
pub const ACCESS_TTL_S: u64 = 300;
/// How long a refresh token family lives from its sign-in, in seconds (30 days).
pub const FAMILY_TTL_S: u64 = 30 * 24 * 3600;
/// How long an authorization code lives, in seconds.
pub const CODE_TTL_S: u64 = 60;
/// How long a sign-in may take from the authorization request to the person's decision.
pub const SIGN_IN_TTL_S: u64 = 600;

/// The operator's settings for access, read once per request from the Worker's environment.
#[derive(Clone, Debug)]
pub struct Settings {
    /// The hub's public origin and issuer, without a trailing slash: `https://hub.capabilities.sh`.
    pub issuer: String,
    pub access_ttl_s: u64,
    /// Tests only (`HUB_TEST_LOOPBACK_CLIENT_DOCUMENTS`): a client ID metadata document on
    /// `https://127.0.0.1:<port>/…` (127.0.0.0/8 only) is fetched over plain HTTP. Off by default.
    pub loopback_documents: bool,
}

impl Settings {
    /// Settings from the public URL (`HUB_PUBLIC_URL`): https, or http on a loopback host; an
    /// origin only (no path, query or fragment).
    pub fn new(public_url: &str) -> Result<Settings, String> {
        let url = url::Url::parse(public_url.trim_end_matches('/'))
            .map_err(|e| format!("HUB_PUBLIC_URL is not a URL ({e})"))?;
        let loopback = url.host().is_some_and(|h| client::is_loopback_host(&h));
        if url.scheme() != "https" && !(url.scheme() == "http" && loopback) {
            return Err("HUB_PUBLIC_URL must be https (http only on a loopback host)".into());
        }
        if url.path() != "/"
            || url.query().is_some()
            || url.fragment().is_some()
            || !url.username().is_empty()
        {
            return Err("HUB_PUBLIC_URL must be an origin, with no path, query or user".into());
        }
        let issuer = url.as_str().trim_end_matches('/').to_owned();
        Ok(Settings { issuer, access_ttl_s: ACCESS_TTL_S, loopback_documents: false })
    }

    /// The one protected resource: the `/mcp` address, exactly.
    pub fn resource(&self) -> String {
        format!("{}/mcp", self.issuer)
    }

    /// One of the hub's own addresses: `path` starts with `/`.
    pub fn at(&self, path: &str) -> String {
        format!("{}{path}", self.issuer)
    }
}

/// Parses a space-separated scope; an empty one is `mcp`. Unknown scopes are refused.
pub fn parse_scope(scope: Option<&str>) -> Result<String, String> {
    let mut wanted: Vec<&str> = scope.unwrap_or_default().split(' ').filter(|s| !s.is_empty()).collect();
    if wanted.is_empty() {
        wanted.push(SCOPE_MCP);
    }
    if let Some(unknown) = wanted.iter().find(|s| !SCOPES.contains(s)) {
        return Err(format!("unknown scope `{unknown}`: this hub grants {}", SCOPES.join(", ")));
    }
    let mut granted: Vec<&str> = SCOPES.iter().copied().filter(|s| wanted.contains(s)).collect();
    granted.dedup();
    Ok(granted.join(" "))
}

/// Whether the space-separated `scope` holds `wanted`.
pub fn has_scope(scope: &str, wanted: &str) -> bool {
    scope.split(' ').any(|s| s == wanted)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_public_url_is_an_origin() {
        let settings = Settings::new("https://hub.capabilities.sh/").unwrap();
        assert_eq!(settings.issuer, "https://hub.capabilities.sh");
        assert_eq!(settings.resource(), "https://hub.capabilities.sh/mcp");
        assert_eq!(Settings::new("http://127.0.0.1:8787").unwrap().resource(), "http://127.0.0.1:8787/mcp");
        for bad in ["http://hub.example", "https://hub.example/x", "https://hub.example?a=1", "nope"] {
            assert!(Settings::new(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn scopes_are_known_ones() {
        assert_eq!(parse_scope(None).unwrap(), "mcp");
        assert_eq!(parse_scope(Some("hub:admin mcp mcp")).unwrap(), "mcp hub:admin");
        assert!(parse_scope(Some("mcp openid")).unwrap_err().contains("openid"));
        assert!(has_scope("mcp hub:admin", "mcp"));
        assert!(!has_scope("hub:admin", "mcp"));
    }
}

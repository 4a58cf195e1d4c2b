//! What an admin load carries and what the tenant's object keeps: HTTP sources with the origin
//! a person reviewed, their manifests and connections, the policy, and credential values (kept
//! only sealed). A load replaces the tenant's whole configuration.
//!
//! A load may carry named profiles (core's `profile::Profile`, the local hub's record): each is
//! served at its own MCP address, checked here as the local hub checks it; a pattern that
//! matches no tool loaded is a warning, not a refusal (its source may be one left out).
//!
//! An OAuth connection carries the client it signed in as (from the local hub's record); its
//! tokens are one secret value in slot [`OAUTH_SLOT`], the whole `TokenSet` as JSON, exactly
//! what the local hub stores. The hub refreshes them itself and stores the new set sealed.

use capabilities_core::address::Namespace;
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::manifest::Manifest;
use capabilities_core::oauth::{OAuthClient, TokenSet};
use capabilities_core::policy::PolicyState;
use capabilities_core::profile::{DEFAULT, Profile};
use serde::{Deserialize, Serialize};

use crate::wire::{Origin, origin_of};

/// The slot of an OAuth connection's tokens (the local hub's name for it). `#` is in no header
/// name, so it never meets a declared slot; its value goes out as `Authorization: Bearer`.
pub use capabilities_core::oauth::SLOT as OAUTH_SLOT;

/// One connection of a source: its name, the headers it fills, and for an OAuth connection the
/// client it signed in as.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connection {
    pub name: String,
    #[serde(default)]
    pub slots: Vec<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub oauth: Option<OAuthClient>,
}

/// An HTTP MCP source of a tenant.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Source {
    pub namespace: String,
    /// The streamable HTTP endpoint.
    pub url: String,
    /// The origin a person reviewed; requests and credentials go nowhere else.
    pub reviewed_origin: String,
    pub manifest: Manifest,
    #[serde(default)]
    pub connections: Vec<Connection>,
    #[serde(default)]
    pub default_connection: Option<String>,
    /// An HTTP API described by OpenAPI: `url` is its base URL, and its tools are operations
    /// called one request each; `None` for an MCP source.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub api: Option<capabilities_core::openapi::HttpApi>,
}

/// Credential values for one connection, as an admin load sends them (never stored in clear).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SecretValues {
    pub namespace: String,
    pub connection: String,
    /// Slot (header name) → value.
    pub values: Vec<(String, String)>,
}

impl std::fmt::Debug for SecretValues {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let slots: Vec<&str> = self.values.iter().map(|(s, _)| s.as_str()).collect();
        f.debug_struct("SecretValues")
            .field("namespace", &self.namespace)
            .field("connection", &self.connection)
            .field("slots", &slots)
            .finish()
    }
}

/// The body of `POST /t/<tenant>/admin/load`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Load {
    #[serde(default)]
    pub sources: Vec<Source>,
    #[serde(default)]
    pub policy: PolicyState,
    #[serde(default)]
    pub secrets: Vec<SecretValues>,
    /// A lower per-call upstream timeout for this tenant, in ms (never above the default).
    #[serde(default, rename = "upstreamTimeoutMs", skip_serializing_if = "Option::is_none")]
    pub upstream_timeout_ms: Option<u64>,
    /// Named profiles besides the built-in `default`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub profiles: Vec<Profile>,
}

/// The most profiles one load or push may carry.
pub const MAX_PROFILES: usize = 100;

/// A tenant's own limits: the defaults, lowered where its load asked.
pub fn tenant_limits(upstream_timeout_ms: Option<u64>) -> capabilities_core::limits::Limits {
    let mut limits = capabilities_core::limits::Limits::DEFAULT;
    if let Some(ms) = upstream_timeout_ms {
        limits.upstream_timeout_ms = limits.upstream_timeout_ms.min(ms.max(1));
    }
    limits
}

/// Why a load was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    #[error("source `{0}`: not a valid namespace (lowercase letters, digits, `_`)")]
    Namespace(String),
    #[error("source `{namespace}`: its manifest is for `{manifest}`; send the manifest of this source")]
    ManifestMismatch { namespace: String, manifest: String },
    #[error("source `{namespace}`: {reason}")]
    Url { namespace: String, reason: String },
    #[error("source `{0}` is sent twice; send each namespace once")]
    Duplicate(String),
    #[error("secrets for `{namespace}/{connection}`: no such connection; add it to the source first")]
    UnknownConnection { namespace: String, connection: String },
    #[error("secrets for `{namespace}/{connection}`: slot `{slot}` is not one the connection declares")]
    UnknownSlot { namespace: String, connection: String, slot: String },
    #[error(
        "secrets for `{namespace}/{connection}`: slot `#oauth` holds OAuth tokens, and this connection has no \
         `oauth` client; send the connection's `oauth` record with it"
    )]
    NotOAuth { namespace: String, connection: String },
    #[error(
        "secrets for `{namespace}/{connection}`: the `#oauth` value is not a token set ({reason}); send the \
         stored value whole"
    )]
    Tokens { namespace: String, connection: String, reason: String },
    #[error("source `{namespace}`, connection `{connection}`: its OAuth token endpoint {reason}")]
    TokenEndpoint { namespace: String, connection: String, reason: String },
    #[error("profile `{name}`: {reason}")]
    Profile { name: String, reason: String },
    #[error("profile `{0}` is sent twice; send each profile once")]
    DuplicateProfile(String),
    #[error("profile `default` is built in (every source, the policy as it is); send only the others")]
    DefaultProfile,
    #[error("a load carries at most {MAX_PROFILES} profiles")]
    TooManyProfiles,
}

impl Load {
    /// Checks every record: namespaces, manifests matching their source, URLs on their
    /// reviewed origin (https, or http only to loopback), OAuth token endpoints on https (or
    /// http to loopback), secrets only for declared slots, and `#oauth` only for an OAuth
    /// connection and only a token set that parses.
    pub fn check(&self) -> Result<(), LoadError> {
        let mut seen = std::collections::BTreeSet::new();
        for source in &self.sources {
            let ns = &source.namespace;
            Namespace::new(ns).map_err(|_| LoadError::Namespace(ns.clone()))?;
            if !seen.insert(ns.clone()) {
                return Err(LoadError::Duplicate(ns.clone()));
            }
            if source.manifest.namespace.as_str() != ns {
                return Err(LoadError::ManifestMismatch {
                    namespace: ns.clone(),
                    manifest: source.manifest.namespace.to_string(),
                });
            }
            source.endpoint().map_err(|reason| LoadError::Url { namespace: ns.clone(), reason })?;
            for connection in &source.connections {
                if let Some(client) = &connection.oauth {
                    check_token_endpoint(&client.token_endpoint).map_err(|reason| {
                        LoadError::TokenEndpoint {
                            namespace: ns.clone(),
                            connection: connection.name.clone(),
                            reason,
                        }
                    })?;
                }
            }
        }
        self.check_profiles()?;
        for secret in &self.secrets {
            let connection = self
                .sources
                .iter()
                .find(|s| s.namespace == secret.namespace)
                .and_then(|s| s.connections.iter().find(|c| c.name == secret.connection))
                .ok_or_else(|| LoadError::UnknownConnection {
                    namespace: secret.namespace.clone(),
                    connection: secret.connection.clone(),
                })?;
            for (slot, value) in &secret.values {
                if slot == OAUTH_SLOT {
                    if connection.oauth.is_none() {
                        return Err(LoadError::NotOAuth {
                            namespace: secret.namespace.clone(),
                            connection: secret.connection.clone(),
                        });
                    }
                    parse_tokens(value).map_err(|reason| LoadError::Tokens {
                        namespace: secret.namespace.clone(),
                        connection: secret.connection.clone(),
                        reason,
                    })?;
                } else if !connection.slots.contains(slot) {
                    return Err(LoadError::UnknownSlot {
                        namespace: secret.namespace.clone(),
                        connection: secret.connection.clone(),
                        slot: slot.clone(),
                    });
                }
            }
        }
        Ok(())
    }
}

impl Load {
    /// Checks the profiles as the local hub checks them: names, patterns, rules that only
    /// tighten (an overlay that allows is refused), each name once, `default` never.
    fn check_profiles(&self) -> Result<(), LoadError> {
        if self.profiles.len() > MAX_PROFILES {
            return Err(LoadError::TooManyProfiles);
        }
        let mut seen = std::collections::BTreeSet::new();
        for profile in &self.profiles {
            if profile.name == DEFAULT {
                return Err(LoadError::DefaultProfile);
            }
            profile
                .check()
                .map_err(|err| LoadError::Profile { name: profile.name.clone(), reason: err.to_string() })?;
            if !seen.insert(profile.name.as_str()) {
                return Err(LoadError::DuplicateProfile(profile.name.clone()));
            }
        }
        Ok(())
    }

    /// What a person should hear about a checked load that is still stored: each profile's
    /// pattern that matches no tool of the load.
    pub fn warnings(&self) -> Vec<String> {
        let all = catalog(&self.sources);
        self.profiles
            .iter()
            .flat_map(|profile| {
                profile.unmatched(&all).into_iter().map(|pattern| {
                    format!(
                        "profile `{}` serves `{pattern}`, which matches no tool sent to the hosted hub",
                        profile.name
                    )
                })
            })
            .collect()
    }
}

/// Checks where a connection refreshes its tokens: https, or plain http only to loopback (as a
/// source's URL). The form carries the refresh token, so it goes nowhere in clear.
pub fn check_token_endpoint(url: &str) -> Result<Origin, String> {
    let origin = origin_of(url)?;
    if origin.scheme == "http" && !origin.is_loopback() {
        return Err(format!("{origin} is plain http to another machine; use https"));
    }
    Ok(origin)
}

/// A stored `#oauth` value as a token set. Why not is said without quoting the value: serde's
/// own text would quote what it found, which may be a token.
pub fn parse_tokens(value: &str) -> Result<TokenSet, String> {
    serde_json::from_str(value).map_err(|err| {
        let what = match err.classify() {
            serde_json::error::Category::Syntax | serde_json::error::Category::Eof => "not JSON",
            serde_json::error::Category::Data => "JSON of another shape",
            serde_json::error::Category::Io => "unreadable",
        };
        format!("it is {what}, at line {} column {}", err.line(), err.column())
    })
}

impl Source {
    /// The endpoint's origin, checked against the reviewed one.
    pub fn endpoint(&self) -> Result<Origin, String> {
        let origin = origin_of(&self.url)?;
        let reviewed = origin_of(&self.reviewed_origin)?;
        if origin != reviewed {
            return Err(format!(
                "its URL is on {origin}, not on the reviewed origin {reviewed}; review the new origin first"
            ));
        }
        if origin.scheme == "http" && !origin.is_loopback() {
            return Err(format!("{origin} is plain http to another machine; use https"));
        }
        Ok(origin)
    }

    /// The connection a call uses: the named one, else the default, else the only one.
    pub fn connection(&self, named: Option<&str>) -> Option<&Connection> {
        let name = named.or(self.default_connection.as_deref());
        match name {
            Some(name) => self.connections.iter().find(|c| c.name == name),
            None if self.connections.len() == 1 => self.connections.first(),
            None => None,
        }
    }
}

/// The catalog the surface serves from a tenant's sources.
pub fn catalog(sources: &[Source]) -> Catalog {
    Catalog::new(
        sources
            .iter()
            .map(|s| SourceView {
                manifest: s.manifest.clone(),
                connections: s.connections.iter().map(|c| c.name.clone()).collect(),
                default_connection: s.default_connection.clone(),
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn source(url: &str, reviewed: &str) -> Source {
        let tools = vec![json!({"name": "echo", "inputSchema": {"type": "object"}})];
        let (manifest, _) = Manifest::from_tools_list(Namespace::new("everything").unwrap(), &tools);
        Source {
            namespace: "everything".to_owned(),
            url: url.to_owned(),
            reviewed_origin: reviewed.to_owned(),
            manifest,
            connections: vec![Connection {
                name: "work".to_owned(),
                slots: vec!["Authorization".to_owned()],
                oauth: None,
            }],
            default_connection: None,
            api: None,
        }
    }

    fn check(load: Load) -> String {
        match load.check() {
            Ok(()) => "ok".to_owned(),
            Err(err) => err.to_string(),
        }
    }

    #[test]
    fn loads_are_checked() {
        use expect_test::expect;
        let ok = || Load {
            sources: vec![source("http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080")],
            ..Load::default()
        };
        expect!["ok"].assert_eq(&check(ok()));
        expect!["source `everything`: its URL is on https://evil.example:443, not on the reviewed origin https://mcp.example:443; review the new origin first"]
            .assert_eq(&check(Load { sources: vec![source("https://evil.example/mcp", "https://mcp.example")], ..Load::default() }));
        expect!["source `everything`: http://mcp.example:80 is plain http to another machine; use https"]
            .assert_eq(&check(Load {
                sources: vec![source("http://mcp.example/mcp", "http://mcp.example")],
                ..Load::default()
            }));
        let mut load = ok();
        load.secrets = vec![SecretValues {
            namespace: "everything".to_owned(),
            connection: "work".to_owned(),
            values: vec![("Cookie".to_owned(), "x".to_owned())],
        }];
        expect!["secrets for `everything/work`: slot `Cookie` is not one the connection declares"]
            .assert_eq(&check(load.clone()));
        assert!(!format!("{:?}", load.secrets[0]).contains("\"x\""), "values never print");
        load.secrets[0].connection = "home".to_owned();
        expect!["secrets for `everything/home`: no such connection; add it to the source first"]
            .assert_eq(&check(load));
    }

    fn client(token_endpoint: &str) -> OAuthClient {
        OAuthClient {
            issuer: "https://as.example".to_owned(),
            token_endpoint: token_endpoint.to_owned(),
            client_id: "hub-client".to_owned(),
            client_auth: Default::default(),
            registration: "registered".to_owned(),
            resource: "http://127.0.0.1:8080/mcp".to_owned(),
            scopes: vec!["mcp:tools".to_owned()],
        }
    }

    /// A load with one OAuth connection `default` (refreshing at `token_endpoint`) and the
    /// `#oauth` value `tokens`.
    fn oauth_load(token_endpoint: &str, tokens: &str) -> Load {
        let mut source = source("http://127.0.0.1:8080/mcp", "http://127.0.0.1:8080");
        source.connections.push(Connection {
            name: "default".to_owned(),
            slots: Vec::new(),
            oauth: Some(client(token_endpoint)),
        });
        Load {
            sources: vec![source],
            secrets: vec![SecretValues {
                namespace: "everything".to_owned(),
                connection: "default".to_owned(),
                values: vec![(OAUTH_SLOT.to_owned(), tokens.to_owned())],
            }],
            ..Load::default()
        }
    }

    #[test]
    fn oauth_connections_are_checked() {
        use expect_test::expect;
        let tokens = TokenSet {
            access_token: "at-1234567890".to_owned(),
            refresh_token: Some("rt-1234567890".to_owned()),
            issued_ms: 1,
            expires_ms: Some(3_001),
            ..TokenSet::default()
        }
        .to_json();
        for endpoint in ["https://as.example/token", "http://127.0.0.1:9/token", "http://localhost:9/token"] {
            expect!["ok"].assert_eq(&check(oauth_load(endpoint, &tokens)));
        }
        // The record round-trips; a connection without a client says nothing of `oauth`.
        let load = oauth_load("https://as.example/token", &tokens);
        let text = serde_json::to_string(&load.sources[0]).unwrap();
        let back: Source = serde_json::from_str(&text).unwrap();
        assert_eq!(back, load.sources[0]);
        assert!(!serde_json::to_string(&load.sources[0].connections[0]).unwrap().contains("oauth"));
        expect!["source `everything`, connection `default`: its OAuth token endpoint http://as.example:80 is plain http to another machine; use https"]
            .assert_eq(&check(oauth_load("http://as.example/token", &tokens)));
        expect!["source `everything`, connection `default`: its OAuth token endpoint `ftp://as.example/token` is not http or https"]
            .assert_eq(&check(oauth_load("ftp://as.example/token", &tokens)));
        // Tokens that do not parse are refused without being quoted back.
        let secret = "rt-do-not-echo-1234";
        let not_json = check(oauth_load("https://as.example/token", secret));
        expect!["secrets for `everything/default`: the `#oauth` value is not a token set (it is not JSON, at line 1 column 1); send the stored value whole"]
            .assert_eq(&not_json);
        let wrong = check(oauth_load("https://as.example/token", &format!(r#"{{"issuedMs": "{secret}"}}"#)));
        expect!["secrets for `everything/default`: the `#oauth` value is not a token set (it is JSON of another shape, at line 1 column 34); send the stored value whole"]
            .assert_eq(&wrong);
        assert!(!wrong.contains(secret), "{wrong}");
        // `#oauth` only for a connection with a client.
        let mut load = oauth_load("https://as.example/token", &tokens);
        load.secrets[0].connection = "work".to_owned();
        expect!["secrets for `everything/work`: slot `#oauth` holds OAuth tokens, and this connection has no `oauth` client; send the connection's `oauth` record with it"]
            .assert_eq(&check(load));
        assert!(
            !format!("{:?}", oauth_load("https://as.example/token", &tokens).secrets[0])
                .contains("at-1234567890")
        );
    }
}

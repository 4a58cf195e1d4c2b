//! What an admin load carries and what the tenant's object keeps: HTTP sources with the origin
//! a person reviewed, their manifests and connections, the policy, and credential values (kept
//! only sealed). A load replaces the tenant's whole configuration.

use capabilities_core::address::Namespace;
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::manifest::Manifest;
use capabilities_core::policy::PolicyState;
use serde::{Deserialize, Serialize};

use crate::wire::{Origin, origin_of};

/// One connection of a source: its name and the headers it fills.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Connection {
    pub name: String,
    #[serde(default)]
    pub slots: Vec<String>,
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
}

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
}

impl Load {
    /// Checks every record: namespaces, manifests matching their source, URLs on their
    /// reviewed origin (https, or http only to loopback), secrets only for declared slots.
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
        }
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
            if let Some((slot, _)) = secret.values.iter().find(|(slot, _)| !connection.slots.contains(slot)) {
                return Err(LoadError::UnknownSlot {
                    namespace: secret.namespace.clone(),
                    connection: secret.connection.clone(),
                    slot: slot.clone(),
                });
            }
        }
        Ok(())
    }
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
            }],
            default_connection: None,
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
}

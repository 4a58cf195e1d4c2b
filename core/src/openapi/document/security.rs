//! A document's security schemes and servers, every version in one shape.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

use super::refs::{Fault, Refs, child};
use super::{DocumentError, Server, ServerVariable, Version};
use crate::openapi::HttpAuth;

/// How an API wants its callers to prove who they are.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SecurityScheme {
    /// A key in a header, query parameter or cookie (`type: apiKey`).
    ApiKey { name: String, location: ApiKeyLocation },
    /// `Authorization: Bearer <token>` (`type: http`, `scheme: bearer`).
    Bearer,
    /// HTTP basic (`type: http`, `scheme: basic`; 2.0's `type: basic`).
    Basic,
    /// OAuth 2.0, its flows' endpoints and scopes (name → description) together.
    OAuth2 {
        authorization_url: Option<String>,
        token_url: Option<String>,
        refresh_url: Option<String>,
        scopes: BTreeMap<String, String>,
        /// The flows it declares, in 3.x's words (`authorizationCode`, `implicit`, `password`,
        /// `clientCredentials`; 2.0's `accessCode` is `authorizationCode`, `application`
        /// `clientCredentials`).
        flows: Vec<String>,
        /// The authorization code flow's own endpoints, when it declares that flow with both.
        code_flow: Option<CodeFlow>,
    },
    /// OpenID Connect discovery (`openIdConnectUrl`).
    OpenIdConnect { url: String },
    /// Anything else (HTTP digest, mutual TLS, a scheme that says too little), in words.
    Other(String),
}

/// The endpoints of an OAuth 2.0 authorization code flow, as the document gives them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodeFlow {
    pub authorization_url: String,
    pub token_url: String,
}

/// Where an API key goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApiKeyLocation {
    Header,
    Query,
    Cookie,
}

impl SecurityScheme {
    /// How a static credential for this scheme is sent: an API key where it belongs, a bearer
    /// token, basic. `None` for OAuth 2.0 and OpenID Connect, whose tokens come from a sign-in
    /// (a person may still send one as `bearer`), and for schemes this hub cannot send.
    pub fn auth(&self) -> Option<HttpAuth> {
        match self {
            SecurityScheme::ApiKey { name, location } => Some(match location {
                ApiKeyLocation::Header => HttpAuth::Header { name: name.clone(), prefix: String::new() },
                ApiKeyLocation::Query => HttpAuth::Query { name: name.clone() },
                ApiKeyLocation::Cookie => HttpAuth::Cookie { name: name.clone() },
            }),
            SecurityScheme::Bearer => Some(HttpAuth::bearer()),
            SecurityScheme::Basic => Some(HttpAuth::Basic),
            SecurityScheme::OAuth2 { .. }
            | SecurityScheme::OpenIdConnect { .. }
            | SecurityScheme::Other(_) => None,
        }
    }

    /// Whether a person signs in for this scheme's tokens (OAuth 2.0 or OpenID Connect).
    pub fn signs_in(&self) -> bool {
        matches!(self, SecurityScheme::OAuth2 { .. } | SecurityScheme::OpenIdConnect { .. })
    }
}

/// The document's schemes by name; one that cannot be read is `Other` saying why.
pub(super) fn schemes(
    refs: &Refs<'_>,
    version: Version,
) -> Result<BTreeMap<String, SecurityScheme>, DocumentError> {
    let section =
        if version == Version::Swagger2 { "/securityDefinitions" } else { "/components/securitySchemes" };
    let mut out = BTreeMap::new();
    let Some(Value::Object(entries)) = refs.at(section) else { return Ok(out) };
    for (name, entry) in entries {
        let scheme = match refs.follow(entry, &child(section, name)) {
            Ok((Value::Object(m), _)) => scheme(m),
            Ok(_) => SecurityScheme::Other("a security scheme that is not an object".into()),
            Err(Fault::Skip(why)) => SecurityScheme::Other(why),
            Err(Fault::Fatal(e)) => return Err(e),
        };
        out.insert(name.clone(), scheme);
    }
    Ok(out)
}

fn scheme(m: &Map<String, Value>) -> SecurityScheme {
    let text = |key: &str| m.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty());
    let kind = text("type").unwrap_or("");
    match kind {
        "apiKey" => {
            let location = match text("in") {
                Some("header") => ApiKeyLocation::Header,
                Some("query") => ApiKeyLocation::Query,
                Some("cookie") => ApiKeyLocation::Cookie,
                other => return SecurityScheme::Other(format!("an API key in `{}`", other.unwrap_or("?"))),
            };
            match text("name") {
                Some(name) => SecurityScheme::ApiKey { name: name.to_owned(), location },
                None => SecurityScheme::Other("an API key without a name".into()),
            }
        }
        "http" => match text("scheme").map(str::to_ascii_lowercase).as_deref() {
            Some("bearer") => SecurityScheme::Bearer,
            Some("basic") => SecurityScheme::Basic,
            other => SecurityScheme::Other(format!("HTTP `{}` authentication", other.unwrap_or("?"))),
        },
        "basic" => SecurityScheme::Basic,
        "oauth2" => oauth2(m),
        "openIdConnect" => match text("openIdConnectUrl") {
            Some(url) => SecurityScheme::OpenIdConnect { url: url.to_owned() },
            None => SecurityScheme::Other("OpenID Connect without a discovery URL".into()),
        },
        "mutualTLS" => SecurityScheme::Other("mutual TLS".into()),
        other => SecurityScheme::Other(format!("a `{other}` security scheme")),
    }
}

/// 3.x's `flows` (or 2.0's one flow) folded together: the first authorization and token URL
/// any flow gives, and every scope; the authorization code flow's endpoints kept apart.
fn oauth2(m: &Map<String, Value>) -> SecurityScheme {
    let mut flows: Vec<(&str, &Map<String, Value>)> = Vec::new();
    if let Some(Value::Object(by_kind)) = m.get("flows") {
        for kind in ["authorizationCode", "implicit", "clientCredentials", "password"] {
            if let Some(Value::Object(flow)) = by_kind.get(kind) {
                flows.push((kind, flow));
            }
        }
    } else {
        let kind = match m.get("flow").and_then(Value::as_str).map(str::trim) {
            Some("accessCode") => "authorizationCode",
            Some("application") => "clientCredentials",
            Some("implicit") => "implicit",
            Some("password") => "password",
            _ => "",
        };
        flows.push((kind, m));
    }
    let url = |flow: &Map<String, Value>, key: &str| {
        flow.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty()).map(str::to_owned)
    };
    let first = |key: &str| flows.iter().find_map(|(_, f)| url(f, key));
    let mut scopes = BTreeMap::new();
    for (_, flow) in &flows {
        if let Some(Value::Object(listed)) = flow.get("scopes") {
            for (scope, about) in listed {
                scopes.entry(scope.clone()).or_insert_with(|| about.as_str().unwrap_or_default().to_owned());
            }
        }
    }
    let code_flow = flows.iter().find(|(kind, _)| *kind == "authorizationCode").and_then(|(_, flow)| {
        Some(CodeFlow {
            authorization_url: url(flow, "authorizationUrl")?,
            token_url: url(flow, "tokenUrl")?,
        })
    });
    SecurityScheme::OAuth2 {
        authorization_url: first("authorizationUrl"),
        token_url: first("tokenUrl"),
        refresh_url: first("refreshUrl"),
        scopes,
        flows: flows
            .iter()
            .filter(|(kind, _)| !kind.is_empty())
            .map(|(kind, _)| (*kind).to_owned())
            .collect(),
        code_flow,
    }
}

/// Adds the scopes each scheme of a `security` list is asked for to `into`, each once, in
/// order (a scheme asked for with no scopes is still listed).
pub(super) fn requirement_scopes(security: Option<&Value>, into: &mut BTreeMap<String, Vec<String>>) {
    let Some(Value::Array(requirements)) = security else { return };
    for requirement in requirements {
        let Value::Object(m) = requirement else { continue };
        for (name, scopes) in m {
            let listed = into.entry(name.clone()).or_default();
            for scope in scopes.as_array().into_iter().flatten().filter_map(Value::as_str) {
                let scope = scope.trim();
                if !scope.is_empty() && !listed.iter().any(|s| s == scope) {
                    listed.push(scope.to_owned());
                }
            }
        }
    }
}

/// The scheme names a `security` list requires, in order, each once.
pub(super) fn requirement_names(security: Option<&Value>) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    if let Some(Value::Array(requirements)) = security {
        for requirement in requirements {
            if let Value::Object(m) = requirement {
                for name in m.keys() {
                    if !names.contains(name) {
                        names.push(name.clone());
                    }
                }
            }
        }
    }
    names
}

/// 3.x `servers`.
pub(super) fn servers(value: Option<&Value>) -> Vec<Server> {
    let Some(Value::Array(entries)) = value else { return Vec::new() };
    let text = |m: &Map<String, Value>, key: &str| match m.get(key) {
        Some(Value::String(s)) => Some(s.trim().to_owned()),
        Some(Value::Number(n)) => Some(n.to_string()),
        Some(Value::Bool(b)) => Some(b.to_string()),
        _ => None,
    };
    let mut out = Vec::new();
    for entry in entries {
        let Value::Object(m) = entry else { continue };
        let Some(url) = text(m, "url").filter(|u| !u.is_empty()) else { continue };
        let mut variables = BTreeMap::new();
        if let Some(Value::Object(vars)) = m.get("variables") {
            for (name, var) in vars {
                let Value::Object(var) = var else { continue };
                let values: Vec<String> = match var.get("enum") {
                    Some(Value::Array(vs)) => vs
                        .iter()
                        .filter_map(|v| match v {
                            Value::String(s) => Some(s.clone()),
                            Value::Number(n) => Some(n.to_string()),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                let default = text(var, "default").or_else(|| values.first().cloned()).unwrap_or_default();
                let description = text(var, "description").filter(|d| !d.is_empty());
                variables.insert(name.clone(), ServerVariable { default, values, description });
            }
        }
        let description = text(m, "description").filter(|d| !d.is_empty());
        out.push(Server { url, description, variables });
    }
    out
}

/// 2.0's servers: each of `schemes` (https when none) with `host` and `basePath`; only
/// `basePath` (relative to the document) when there is no host.
pub(super) fn swagger_servers(top: &Map<String, Value>) -> Vec<Server> {
    let host = top.get("host").and_then(Value::as_str).map(str::trim).filter(|h| !h.is_empty());
    let base = top.get("basePath").and_then(Value::as_str).map(str::trim).unwrap_or("");
    let server = |url: String| Server { url, description: None, variables: BTreeMap::new() };
    let Some(host) = host else {
        return if base.is_empty() { Vec::new() } else { vec![server(base.to_owned())] };
    };
    let mut schemes: Vec<&str> = match top.get("schemes") {
        Some(Value::Array(listed)) => {
            listed.iter().filter_map(Value::as_str).filter(|s| matches!(*s, "http" | "https")).collect()
        }
        _ => Vec::new(),
    };
    if schemes.is_empty() {
        schemes.push("https");
    }
    let base = if base == "/" { "" } else { base };
    schemes.into_iter().map(|scheme| server(format!("{scheme}://{host}{base}"))).collect()
}

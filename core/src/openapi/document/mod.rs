//! Reading an OpenAPI document (Swagger 2.0, OpenAPI 3.0, 3.1) into tool records, one per
//! operation, each with its [`HttpOperation`](crate::openapi::HttpOperation).
//!
//! No maintained crate reads all three versions (oas3 reads 3.1 only, openapiv3 3.0 only, and
//! none turns 2.0 or 3.0 into 3.1), so the document is walked as one `serde_json::Value` and
//! every version is normalised into one model here. [`read`] parses the bytes (JSON, or YAML
//! through serde-saphyr with its budget on), checks the version, and turns each operation into
//! a [`ToolRecord`]: its parameters and body become one input object, its first successful
//! response the `body` of a `{ status, headers, body }` output, every schema JSON Schema
//! 2020-12 (`schema.rs`), with the component schemas a tool uses under its own `$defs` so a
//! cyclic schema stays a reference (`refs.rs`). An operation that cannot be read is left out
//! and named in [`Document::problems`]; a document that cannot be read at all is a
//! [`DocumentError`].
//!
//! Everything is bounded: the bytes, the nesting (128 levels, as serde_json allows), the YAML
//! aliases, the operations, and the schema nodes one tool may carry.

mod operations;
mod parse;
mod refs;
mod schema;
mod security;

use std::collections::BTreeMap;

use serde_json::Value;

use crate::manifest::{ToolRecord, json_kind};
use crate::openapi::HttpAuth;

pub use security::{ApiKeyLocation, CodeFlow, SecurityScheme};

/// How much [`read`] takes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReadOptions {
    /// The largest document read, in bytes. Default 32 MiB (GitHub's is about 13 MB).
    pub max_bytes: usize,
    /// The most operations read. Default 5,000 (GitHub's REST API has about 1,100).
    pub max_operations: usize,
}

impl Default for ReadOptions {
    fn default() -> Self {
        ReadOptions { max_bytes: 32 * 1024 * 1024, max_operations: 5_000 }
    }
}

/// An OpenAPI document, read.
#[derive(Debug, Clone, PartialEq)]
pub struct Document {
    /// The version the document declares: `2.0`, `3.0.3`, `3.1.0`, ….
    pub version: String,
    /// `info.title`; empty when the document has none.
    pub title: String,
    /// `info.description`: what the API says about itself (the source's description).
    pub description: Option<String>,
    /// Where the API is served, in the document's order. 3.x `servers` as written (a URL may be
    /// relative to where the document was read from, or hold `{variables}`); 2.0's built from
    /// `schemes`, `host` and `basePath` (https when no scheme is given). Empty when the
    /// document names none.
    pub servers: Vec<Server>,
    /// The document's security schemes by name (3.x `components.securitySchemes`, 2.0
    /// `securityDefinitions`).
    pub security_schemes: BTreeMap<String, SecurityScheme>,
    /// The schemes the document-level `security` names, in order, each once.
    pub security: Vec<String>,
    /// The scopes the operations ask of each scheme (their own `security`, else the
    /// document's), each once, in order; a scheme asked for without scopes has an empty list.
    pub security_scopes: BTreeMap<String, Vec<String>>,
    /// One record per operation, in document order, each with `http: Some(..)`. Names are
    /// unique: the `operationId`, else `"{method} {path}"` (lowercase method).
    pub operations: Vec<ToolRecord>,
    /// What was left out or changed, one line each naming the operation and why.
    pub problems: Vec<String>,
}

impl Document {
    /// How the source's credential is sent by default: the first scheme of the document-level
    /// `security` that [`SecurityScheme::auth`] maps, else the first scheme it maps in name
    /// order; `None` when none maps (or there are none).
    pub fn default_auth(&self) -> Option<HttpAuth> {
        self.security
            .iter()
            .filter_map(|name| self.security_schemes.get(name))
            .chain(self.security_schemes.values())
            .find_map(SecurityScheme::auth)
    }

    /// The scheme a person signs in for (OAuth 2.0 or OpenID Connect), with its name: the first
    /// the document-level `security` names, else the first the operations ask for, else the
    /// first in name order; `None` when the document has none.
    pub fn sign_in_scheme(&self) -> Option<(&str, &SecurityScheme)> {
        let named = |name: &String| self.security_schemes.get_key_value(name).filter(|(_, s)| s.signs_in());
        self.security
            .iter()
            .find_map(named)
            .or_else(|| self.security_scopes.keys().find_map(named))
            .or_else(|| self.security_schemes.iter().find(|(_, s)| s.signs_in()))
            .map(|(name, scheme)| (name.as_str(), scheme))
    }

    /// The scopes the operations ask of scheme `name`, in order.
    pub fn scopes_asked(&self, name: &str) -> &[String] {
        self.security_scopes.get(name).map_or(&[], Vec::as_slice)
    }
}

/// One server an API is served from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// As written: `https://{region}.example.com/v1`, `/api/v3`.
    pub url: String,
    pub description: Option<String>,
    /// The `{variables}` of the URL, by name.
    pub variables: BTreeMap<String, ServerVariable>,
}

/// A server URL's variable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerVariable {
    pub default: String,
    /// The values it may take; empty when any is allowed.
    pub values: Vec<String>,
    pub description: Option<String>,
}

/// Why a document cannot be read at all. (An operation that cannot be read is left out and
/// named in [`Document::problems`] instead.)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DocumentError {
    #[error(
        "the document is {size} bytes, more than the {limit} read: give a smaller document or raise the limit"
    )]
    TooLarge { size: usize, limit: usize },
    #[error("the document is not valid JSON ({0}): fix it, or give it as YAML")]
    Json(String),
    #[error("the document is not valid YAML ({0}): fix it, or give it as JSON")]
    Yaml(String),
    #[error(
        "the YAML expands its aliases too far ({0}), as an alias bomb does: give the document without anchors and aliases"
    )]
    Aliases(String),
    #[error("the document nests deeper than {limit} levels: no OpenAPI document needs that many")]
    TooDeep { limit: usize },
    #[error("the document is {kind}, not an object: give an OpenAPI document (JSON or YAML)")]
    NotAnObject { kind: &'static str },
    #[error(
        "the document has neither an `openapi` nor a `swagger` field: give an OpenAPI 3.x or Swagger 2.0 document"
    )]
    NoVersion,
    #[error("OpenAPI version `{0}` is not read here: give an OpenAPI 3.0, 3.1 or Swagger 2.0 document")]
    UnknownVersion(String),
    #[error(
        "the document has {count} operations, more than the {limit} read: split the API into several sources or raise the limit"
    )]
    TooManyOperations { count: usize, limit: usize },
    #[error(
        "`$ref` `{reference}` at `{location}` points outside the document: bundle the document into one file first (for example with `redocly bundle`)"
    )]
    ExternalRef { reference: String, location: String },
    #[error("`$ref` `{reference}` at `{location}` points to nothing in the document: fix the reference")]
    MissingRef { reference: String, location: String },
    #[error("`{location}` is {found}, not {expected}: fix the document")]
    Malformed { location: String, found: &'static str, expected: &'static str },
}

/// The version families read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Version {
    Swagger2,
    OpenApi30,
    /// 3.1 and later 3.x: JSON Schema 2020-12 schemas.
    OpenApi31,
}

/// Reads an OpenAPI document: JSON when its first non-blank character is `{`, else YAML.
///
/// Returns the document with one [`ToolRecord`] per readable operation; operations that cannot
/// be read are named in [`Document::problems`]. Never panics; every limit in `options` and the
/// module's own bounds is an error, not a hang.
pub fn read(bytes: &[u8], options: &ReadOptions) -> Result<Document, DocumentError> {
    let root = parse::parse(bytes, options.max_bytes)?;
    let Value::Object(top) = &root else {
        return Err(DocumentError::NotAnObject { kind: json_kind(&root) });
    };
    let (version, version_text) = version(top)?;
    let info = top.get("info").and_then(Value::as_object);
    let text = |key: &str| info.and_then(|i| i.get(key)).and_then(Value::as_str).map(str::trim);
    let title = text("title").unwrap_or_default().to_owned();
    let description = text("description").filter(|d| !d.is_empty()).map(str::to_owned);
    let refs = refs::Refs::new(&root);
    let servers = match version {
        Version::Swagger2 => security::swagger_servers(top),
        _ => security::servers(top.get("servers")),
    };
    let security_schemes = security::schemes(&refs, version)?;
    let security = security::requirement_names(top.get("security"));
    let read = operations::read_all(&refs, version, options.max_operations)?;
    Ok(Document {
        version: version_text,
        title,
        description,
        servers,
        security_schemes,
        security,
        security_scopes: read.scopes,
        operations: read.operations,
        problems: read.problems,
    })
}

fn version(top: &serde_json::Map<String, Value>) -> Result<(Version, String), DocumentError> {
    // YAML may write an unquoted `2.0` or `3.0` as a number.
    let text = |v: &Value| match v {
        Value::String(s) => Some(s.trim().to_owned()),
        Value::Number(n) => Some(n.to_string()),
        _ => None,
    };
    if let Some(raw) = top.get("openapi") {
        let found = text(raw).ok_or(DocumentError::Malformed {
            location: "/openapi".into(),
            found: json_kind(raw),
            expected: "a version string",
        })?;
        let mut parts = found.split('.');
        let family = match (parts.next(), parts.next()) {
            (Some("3"), Some("0")) => Version::OpenApi30,
            (Some("3"), Some(minor)) if minor.parse::<u32>().is_ok_and(|m| m >= 1) => Version::OpenApi31,
            _ => return Err(DocumentError::UnknownVersion(found)),
        };
        return Ok((family, found));
    }
    if let Some(raw) = top.get("swagger") {
        let found = text(raw).unwrap_or_else(|| json_kind(raw).to_owned());
        return match found.as_str() {
            "2.0" | "2" => Ok((Version::Swagger2, "2.0".to_owned())),
            _ => Err(DocumentError::UnknownVersion(found)),
        };
    }
    Err(DocumentError::NoVersion)
}

#[cfg(test)]
mod tests;

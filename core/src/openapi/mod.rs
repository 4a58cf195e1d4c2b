//! HTTP APIs described by OpenAPI as sources: the portable half both hubs run.
//!
//! An API's operations are tools like any other: each is a [`ToolRecord`](crate::manifest::ToolRecord)
//! whose `http` field, an [`HttpOperation`], says how a call becomes a request. The operation is
//! part of the tool's contract, so a changed path or method asks a person again like a changed
//! schema does. The source itself is an [`HttpApi`]: the base URL fixed when a person added it and
//! how its credential is sent.
//!
//! [`request::build`] turns a call's arguments into a request (path parameters percent-encoded,
//! the URL kept under the base); [`response::shape`] turns the answer into what the guest sees:
//! `{ status, headers, body }` with an allowlist of headers and the body parsed by its type.
//! Reading documents (OpenAPI 3.0, 3.1, Swagger 2.0) is native only, in `document` behind the
//! `openapi-document` feature; the Worker only ever sees the operations a push sends.

pub mod request;
pub mod response;

use serde::{Deserialize, Serialize};

/// How one operation is called. Everything here is pinned with the tool's contract.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpOperation {
    /// Upper case: `GET`, `POST`, …
    pub method: String,
    /// The path template under the base URL, as the document writes it: `/pets/{petId}`.
    pub path: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub parameters: Vec<HttpParameter>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<HttpBody>,
    /// Whether the call carries the source's credential; `false` for `security: []`.
    #[serde(default = "yes", skip_serializing_if = "is_true")]
    pub authenticated: bool,
}

fn yes() -> bool {
    true
}

fn is_true(b: &bool) -> bool {
    *b
}

impl HttpOperation {
    /// GET, HEAD and OPTIONS read; every other method may write.
    pub fn reads(&self) -> bool {
        matches!(self.method.as_str(), "GET" | "HEAD" | "OPTIONS")
    }
}

/// One parameter: where it goes on the wire and which field of the input object holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpParameter {
    /// Its name on the wire.
    pub name: String,
    #[serde(rename = "in")]
    pub location: ParameterLocation,
    /// The input object's field; the wire name unless it collided with another.
    pub argument: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub style: Option<ParameterStyle>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub explode: Option<bool>,
}

impl HttpParameter {
    /// The style OpenAPI defaults to for the parameter's location.
    pub fn effective_style(&self) -> ParameterStyle {
        self.style.unwrap_or(match self.location {
            ParameterLocation::Path | ParameterLocation::Header => ParameterStyle::Simple,
            ParameterLocation::Query | ParameterLocation::Cookie => ParameterStyle::Form,
        })
    }

    /// `explode` as OpenAPI defaults it: true for `form`, false otherwise.
    pub fn effective_explode(&self) -> bool {
        self.explode.unwrap_or(self.effective_style() == ParameterStyle::Form)
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ParameterLocation {
    Path,
    Query,
    Header,
    Cookie,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum ParameterStyle {
    Simple,
    Label,
    Matrix,
    Form,
    SpaceDelimited,
    PipeDelimited,
    DeepObject,
}

/// The request body: its media type and which input fields make it up.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpBody {
    /// The media type sent, e.g. `application/json`, `application/x-www-form-urlencoded`,
    /// `multipart/form-data`.
    pub media_type: String,
    pub shape: BodyShape,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub required: bool,
}

/// How the input object holds the body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum BodyShape {
    /// An object body whose properties are fields of the input object, beside the parameters.
    Fields { fields: Vec<BodyField> },
    /// Any other body (an array, a string, a schema with no fixed properties), whole, in one
    /// input field (`body`, suffixed if a parameter has that name).
    Whole { argument: String },
}

/// One property of an object body and the input field that holds it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BodyField {
    pub name: String,
    pub argument: String,
}

/// An HTTP API source: where requests go and how its credential is sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct HttpApi {
    /// The base every operation's path is joined to, fixed when the source was added (server
    /// variables filled in). Credentials go to its origin only.
    pub base_url: String,
    /// Where the document was read from (a URL or a file path), for `hub refresh`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub document: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth: Option<HttpAuth>,
}

/// How the connection's credential (slot [`HttpAuth::slot`]) goes on an authenticated request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase", deny_unknown_fields)]
pub enum HttpAuth {
    /// A header: `name: prefix + value` (`Authorization: Bearer …`, `X-Api-Key: …`).
    Header {
        name: String,
        #[serde(default, skip_serializing_if = "String::is_empty")]
        prefix: String,
    },
    /// A query parameter.
    Query { name: String },
    /// A cookie.
    Cookie { name: String },
    /// HTTP basic: the value is `user:password`.
    Basic,
}

impl HttpAuth {
    /// The credential slot the value is kept in.
    pub const SLOT: &'static str = "credential";

    /// `Authorization: Bearer <value>`.
    pub fn bearer() -> HttpAuth {
        HttpAuth::Header { name: "Authorization".to_owned(), prefix: "Bearer ".to_owned() }
    }

    /// How a person would write it after `--auth`: `bearer`, `basic`, `header:X-Api-Key`,
    /// `query:api_key`, `cookie:session`.
    pub fn parse(raw: &str) -> Result<HttpAuth, String> {
        let named = |kind: &str, name: &str| -> Result<String, String> {
            let name = name.trim();
            if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.".contains(&b)) {
                return Err(format!("`{kind}:` needs a name of letters, digits, `-`, `_` or `.`"));
            }
            Ok(name.to_owned())
        };
        match raw.split_once(':') {
            None if raw.eq_ignore_ascii_case("bearer") => Ok(HttpAuth::bearer()),
            None if raw.eq_ignore_ascii_case("basic") => Ok(HttpAuth::Basic),
            Some(("header", name)) => {
                Ok(HttpAuth::Header { name: named("header", name)?, prefix: String::new() })
            }
            Some(("query", name)) => Ok(HttpAuth::Query { name: named("query", name)? }),
            Some(("cookie", name)) => Ok(HttpAuth::Cookie { name: named("cookie", name)? }),
            _ => Err(format!(
                "`{raw}` is not a way to send a credential; use bearer, basic, header:NAME, query:NAME or cookie:NAME"
            )),
        }
    }

    /// One line for people: "a bearer token", "header `X-Api-Key`", …
    pub fn describe(&self) -> String {
        match self {
            HttpAuth::Header { name, prefix }
                if name.eq_ignore_ascii_case("authorization") && prefix == "Bearer " =>
            {
                "a bearer token".to_owned()
            }
            HttpAuth::Header { name, .. } => format!("header `{name}`"),
            HttpAuth::Query { name } => format!("query parameter `{name}`"),
            HttpAuth::Cookie { name } => format!("cookie `{name}`"),
            HttpAuth::Basic => "HTTP basic (`user:password`)".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn auth_is_written_the_way_a_person_types_it() {
        assert_eq!(HttpAuth::parse("bearer").unwrap(), HttpAuth::bearer());
        assert_eq!(HttpAuth::parse("basic").unwrap(), HttpAuth::Basic);
        assert_eq!(
            HttpAuth::parse("header:X-Api-Key").unwrap(),
            HttpAuth::Header { name: "X-Api-Key".into(), prefix: String::new() }
        );
        assert_eq!(HttpAuth::parse("query:api_key").unwrap(), HttpAuth::Query { name: "api_key".into() });
        assert!(HttpAuth::parse("header:").is_err());
        assert!(HttpAuth::parse("header:a b").is_err());
        assert!(HttpAuth::parse("token").unwrap_err().contains("bearer, basic"));
    }

    #[test]
    fn methods_that_read() {
        let op = |m: &str| HttpOperation {
            method: m.into(),
            path: "/".into(),
            parameters: vec![],
            body: None,
            authenticated: true,
        };
        assert!(op("GET").reads() && op("HEAD").reads() && op("OPTIONS").reads());
        assert!(!op("POST").reads() && !op("DELETE").reads() && !op("PATCH").reads());
    }
}

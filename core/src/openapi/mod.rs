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

#[cfg(feature = "openapi-document")]
pub mod document;
pub mod request;
pub mod response;

use serde::{Deserialize, Serialize};

pub use crate::operation::{
    BodyField, BodyShape, HttpBody, HttpOperation, HttpParameter, ParameterLocation, ParameterStyle,
};

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

    /// The value a call's `credentials` hold for an API source: its static slot, or an OAuth
    /// connection's access token (slot [`crate::oauth::SLOT`]), which goes the way `auth` says
    /// (a source that signs in says `Authorization: Bearer`).
    pub fn credential(credentials: &crate::ports::Credentials) -> Option<&str> {
        credentials
            .values
            .iter()
            .find(|(slot, _)| slot == HttpAuth::SLOT || slot == crate::oauth::SLOT)
            .map(|(_, value)| value.as_str())
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
}

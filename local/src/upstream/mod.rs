//! MCP sources: the native adapter of the core's `Upstream` port, over the rmcp client.
//!
//! A [`SourceSpec`] says how to reach one source: a local command spoken to over stdio, or a
//! streamable HTTP endpoint. The [`SourcePool`] starts each source lazily, keeps one connection
//! per (namespace, connection name), lists tools exactly as the source sent them and makes tool
//! calls with a per-call timeout. [`PooledUpstream`] is the port itself: it drives the pool's
//! calls on the runtime the connections live on.
//!
//! Credentials reach a source only as it starts (stdio: environment variables named by
//! `env_slots`) or on each request to the reviewed URL's origin (HTTP: headers named by
//! `header_slots`). Nothing else from the hub's environment or from a response's headers
//! crosses over.
//!
//! Process hygiene for stdio sources (see `stdio.rs`): every server runs in a process group of
//! its own under a tiny `sh` supervisor; dropping the pool, removing a source, or the server
//! exiting kills the whole group with SIGKILL, and on Linux the supervisor takes the group down
//! when the hub dies, even by SIGKILL.

mod connection;
mod http;
mod isolation;
mod lane;
mod openapi;
mod pool;
mod pooled;
mod spawner;
mod stderr;
mod stdio;
mod stdout;
mod tap;

use std::collections::BTreeMap;

use capabilities_core::openapi::HttpApi;
use serde::{Deserialize, Serialize};

pub use http::check_url;
pub use isolation::{Isolation, MISSING_BWRAP, find_bwrap};
pub use pool::{HealthState, PoolOptions, SourceHealth, SourcePool};
pub use pooled::PooledUpstream;

/// How to reach one source. Stored as JSON, one file per namespace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SourceSpec {
    pub namespace: String,
    pub transport: SourceTransport,
}

/// The two ways a source speaks MCP.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase", deny_unknown_fields)]
#[non_exhaustive]
pub enum SourceTransport {
    /// A local command; MCP over its stdin and stdout.
    Stdio {
        command: String,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        args: Vec<String>,
        /// Plain, non-secret environment values (for example a data file's path).
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        env: BTreeMap<String, String>,
        /// Names of the environment variables that carry credentials; their values come from
        /// the connection at start.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        env_slots: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        cwd: Option<String>,
        /// Run inside bubblewrap, with what it may reach; unisolated when `None`.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        isolation: Option<Isolation>,
    },
    /// A streamable HTTP endpoint.
    Http {
        url: String,
        /// Headers that carry credentials; values come from the connection on every request.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        header_slots: Vec<HeaderSlot>,
    },
    /// An HTTP API described by an OpenAPI document: its operations are in the manifest, each
    /// tool's `http` field saying how it is called.
    #[serde(rename = "openapi")]
    OpenApi(HttpApi),
}

/// One credential header of an HTTP source: `name: prefix + value`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HeaderSlot {
    pub name: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub prefix: String,
}

impl HeaderSlot {
    /// `Authorization: Bearer <value>`, the usual slot.
    pub fn bearer() -> HeaderSlot {
        HeaderSlot { name: "Authorization".to_owned(), prefix: "Bearer ".to_owned() }
    }
}

/// Why a source could not be listed or called.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SourceError {
    #[error("no source is registered under `{0}`; add it with `capabilities hub add`")]
    UnknownSource(String),
    #[error("source `{namespace}` is misconfigured: {reason}")]
    Config { namespace: String, reason: String },
    #[error("source `{namespace}` did not start: {reason}")]
    Start { namespace: String, reason: String },
    #[error("source `{namespace}` did not answer `{method}` within {ms} ms")]
    Timeout { namespace: String, method: String, ms: u64 },
    #[error("source `{namespace}` answered something that is not MCP: {reason}")]
    Protocol { namespace: String, reason: String },
    #[error("source `{namespace}` is unavailable: {reason}")]
    Unavailable { namespace: String, reason: String },
    #[error("source `{namespace}` refused `{method}`: {message}")]
    Refused { namespace: String, method: String, message: String, code: Option<i64> },
    #[error("source `{namespace}` lists more than {limit} tools; the hub stops there")]
    TooManyTools { namespace: String, limit: usize },
    /// An HTTP source answered 401 or 403: it wants credentials (OAuth, when its challenge or
    /// its metadata says so) or does not take the ones it was sent.
    #[error("source `{namespace}` does not take the credentials it was sent (HTTP {status})")]
    AuthRequired { namespace: String, status: u16, challenge: Option<String> },
    /// An HTTP source answered 429.
    #[error("source `{namespace}` is rate limiting calls")]
    RateLimited { namespace: String, retry_after_s: Option<u64> },
}

impl From<SourceError> for capabilities_core::ports::UpstreamError {
    fn from(error: SourceError) -> Self {
        use capabilities_core::ports::UpstreamError;
        match error {
            SourceError::Timeout { ms, .. } => UpstreamError::Timeout(ms),
            SourceError::Protocol { .. } | SourceError::TooManyTools { .. } => {
                UpstreamError::Protocol(error.to_string())
            }
            SourceError::Refused { message, code, .. } => UpstreamError::Refused { message, status: code },
            SourceError::RateLimited { retry_after_s, .. } => UpstreamError::RateLimited { retry_after_s },
            SourceError::AuthRequired { status, challenge, .. } => {
                let message = match status {
                    403 => "the source answered HTTP 403: the token lacks a scope it needs".to_owned(),
                    _ => format!("the source answered HTTP {status}"),
                };
                UpstreamError::Unauthorized { message, challenge }
            }
            SourceError::UnknownSource(_)
            | SourceError::Config { .. }
            | SourceError::Start { .. }
            | SourceError::Unavailable { .. } => UpstreamError::Unavailable(error.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    #[test]
    fn specs_round_trip_as_json() {
        let stdio = SourceSpec {
            namespace: "memory".to_owned(),
            transport: SourceTransport::Stdio {
                command: "node".to_owned(),
                args: vec!["server.js".to_owned()],
                env: BTreeMap::from([("MEMORY_FILE_PATH".to_owned(), "/tmp/m.jsonl".to_owned())]),
                env_slots: vec!["API_KEY".to_owned()],
                cwd: None,
                isolation: None,
            },
        };
        let http = SourceSpec {
            namespace: "remote".to_owned(),
            transport: SourceTransport::Http {
                url: "https://mcp.example.com/mcp".to_owned(),
                header_slots: vec![HeaderSlot::bearer()],
            },
        };
        let api = SourceSpec {
            namespace: "petstore".to_owned(),
            transport: SourceTransport::OpenApi(HttpApi {
                base_url: "https://petstore.example.com/v3".to_owned(),
                document: Some("https://petstore.example.com/openapi.json".to_owned()),
                auth: Some(capabilities_core::openapi::HttpAuth::Header {
                    name: "api_key".to_owned(),
                    prefix: String::new(),
                }),
            }),
        };
        let text = serde_json::to_string_pretty(&[&stdio, &http, &api]).unwrap();
        expect![[r#"
            [
              {
                "namespace": "memory",
                "transport": {
                  "type": "stdio",
                  "command": "node",
                  "args": [
                    "server.js"
                  ],
                  "env": {
                    "MEMORY_FILE_PATH": "/tmp/m.jsonl"
                  },
                  "env_slots": [
                    "API_KEY"
                  ]
                }
              },
              {
                "namespace": "remote",
                "transport": {
                  "type": "http",
                  "url": "https://mcp.example.com/mcp",
                  "header_slots": [
                    {
                      "name": "Authorization",
                      "prefix": "Bearer "
                    }
                  ]
                }
              },
              {
                "namespace": "petstore",
                "transport": {
                  "type": "openapi",
                  "baseUrl": "https://petstore.example.com/v3",
                  "document": "https://petstore.example.com/openapi.json",
                  "auth": {
                    "kind": "header",
                    "name": "api_key"
                  }
                }
              }
            ]"#]]
        .assert_eq(&text);
        let back: Vec<SourceSpec> = serde_json::from_str(&text).unwrap();
        assert_eq!(back, vec![stdio, http, api]);
        let unknown = r#"{"namespace":"x","transport":{"type":"openapi","baseUrl":"https://a","extra":1}}"#;
        assert!(serde_json::from_str::<SourceSpec>(unknown).is_err());
    }

    #[test]
    fn errors_map_to_the_port() {
        use capabilities_core::ports::UpstreamError;
        let e = SourceError::Timeout { namespace: "x".into(), method: "tools/call".into(), ms: 5 };
        assert_eq!(UpstreamError::from(e), UpstreamError::Timeout(5));
        let e = SourceError::Refused {
            namespace: "x".into(),
            method: "tools/call".into(),
            message: "no".into(),
            code: Some(-32602),
        };
        assert_eq!(
            UpstreamError::from(e),
            UpstreamError::Refused { message: "no".into(), status: Some(-32602) }
        );
    }
}

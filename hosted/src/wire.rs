//! The HTTP side of calling an upstream source (MCP over streamable HTTP), as plain Rust that
//! is unit-tested natively: the origin a request goes to (a source's credential goes only to
//! its reviewed origin), where a redirect may go (the same origin only), and the JSON-RPC
//! answer in a response body, sent as JSON or as server-sent events. `worker::upstream` does
//! the fetching with these.

use std::fmt;

use capabilities_core::ports::UpstreamError;
use serde_json::Value;

/// Scheme, host and port: where a request goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    pub scheme: String,
    pub host: String,
    pub port: u16,
}

impl Origin {
    pub fn is_loopback(&self) -> bool {
        matches!(self.host.as_str(), "127.0.0.1" | "localhost" | "[::1]")
    }
}

impl fmt::Display for Origin {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}://{}:{}", self.scheme, self.host, self.port)
    }
}

/// The origin of an absolute http(s) URL.
pub fn origin_of(url: &str) -> Result<Origin, String> {
    let parsed = url::Url::parse(url).map_err(|err| format!("`{url}` is not a URL ({err})"))?;
    let scheme = parsed.scheme().to_owned();
    if scheme != "http" && scheme != "https" {
        return Err(format!("`{url}` is not http or https"));
    }
    let host = match parsed.host() {
        Some(url::Host::Domain(name)) => name.to_ascii_lowercase(),
        Some(url::Host::Ipv4(ip)) => ip.to_string(),
        Some(url::Host::Ipv6(ip)) => format!("[{ip}]"),
        None => return Err(format!("`{url}` has no host")),
    };
    let port = parsed.port_or_known_default().unwrap_or(if scheme == "https" { 443 } else { 80 });
    Ok(Origin { scheme, host, port })
}

/// Where a redirect from `from` (a URL on `origin`) to `location` may go: the target URL when
/// it stays on the same origin, else why not.
pub fn redirect_target(from: &str, location: &str, origin: &Origin) -> Result<String, String> {
    let base = url::Url::parse(from).map_err(|err| format!("`{from}` is not a URL ({err})"))?;
    let target =
        base.join(location).map_err(|err| format!("the redirect to `{location}` is not a URL ({err})"))?;
    let target_origin = origin_of(target.as_str())?;
    if &target_origin != origin {
        return Err(format!(
            "the source redirected to {target_origin}, another origin than the reviewed {origin}; not followed"
        ));
    }
    Ok(target.to_string())
}

/// The JSON-RPC answer with `id` in a response body: plain JSON, or the `data:` of
/// server-sent events. A JSON-RPC error becomes [`UpstreamError::Refused`].
pub fn read_answer(content_type: &str, body: &str, id: i64) -> Result<Value, UpstreamError> {
    let messages: Vec<Value> = if content_type.starts_with("text/event-stream") {
        events(body).filter_map(|data| serde_json::from_str(&data).ok()).collect()
    } else {
        match serde_json::from_str::<Value>(body) {
            Ok(Value::Array(items)) => items,
            Ok(value) => vec![value],
            Err(err) => return Err(UpstreamError::Protocol(format!("the answer is not JSON: {err}"))),
        }
    };
    let Some(message) = messages.into_iter().find(|m| m.get("id").and_then(Value::as_i64) == Some(id)) else {
        return Err(UpstreamError::Protocol(format!("no answer to request {id} in the response")));
    };
    if let Some(error) = message.get("error") {
        return Err(UpstreamError::Refused {
            message: error.get("message").and_then(Value::as_str).unwrap_or("no message").to_owned(),
            status: error.get("code").and_then(Value::as_i64),
        });
    }
    message
        .get("result")
        .cloned()
        .ok_or_else(|| UpstreamError::Protocol(format!("the answer to request {id} has no result")))
}

/// The data of each server-sent event in `body`, multi-line data joined.
fn events(body: &str) -> impl Iterator<Item = String> + '_ {
    body.split("\n\n").filter_map(|event| {
        let data: Vec<&str> = event
            .lines()
            .filter_map(|line| line.strip_prefix("data:").map(|d| d.strip_prefix(' ').unwrap_or(d)))
            .collect();
        (!data.is_empty()).then(|| data.join("\n"))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use expect_test::expect;

    #[test]
    fn origins() {
        let origin = origin_of("http://127.0.0.1:8080/mcp").unwrap();
        assert!(origin.is_loopback());
        expect!["http://127.0.0.1:8080"].assert_eq(&origin.to_string());
        expect!["https://mcp.example:443"]
            .assert_eq(&origin_of("https://MCP.example/x").unwrap().to_string());
        expect!["`ftp://x/` is not http or https"].assert_eq(&origin_of("ftp://x/").unwrap_err());
    }

    #[test]
    fn redirects_stay_on_the_origin() {
        let origin = origin_of("http://127.0.0.1:8080").unwrap();
        expect!["http://127.0.0.1:8080/other"]
            .assert_eq(&redirect_target("http://127.0.0.1:8080/mcp", "/other", &origin).unwrap());
        expect!["the source redirected to http://localhost:8080, another origin than the reviewed http://127.0.0.1:8080; not followed"]
            .assert_eq(&redirect_target("http://127.0.0.1:8080/mcp", "http://localhost:8080/mcp", &origin).unwrap_err());
    }

    #[test]
    fn answers() {
        let sse = "event: message\ndata: {\"jsonrpc\":\"2.0\",\"method\":\"notifications/progress\"}\n\n\
                   event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":2,\"result\":{\"content\":[]}}\n\n";
        expect![[r#"{"content":[]}"#]]
            .assert_eq(&read_answer("text/event-stream", sse, 2).unwrap().to_string());
        let json = r#"{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"bad"}}"#;
        expect![[r#"Refused { message: "bad", status: Some(-32602) }"#]]
            .assert_eq(&format!("{:?}", read_answer("application/json", json, 2).unwrap_err()));
        expect![[r#"Protocol("the answer is not JSON: expected value at line 1 column 1")"#]]
            .assert_eq(&format!("{:?}", read_answer("application/json", "<html>", 2).unwrap_err()));
        expect![[r#"Protocol("no answer to request 3 in the response")"#]]
            .assert_eq(&format!("{:?}", read_answer("text/event-stream", sse, 3).unwrap_err()));
    }
}

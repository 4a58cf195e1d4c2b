//! An HTTP answer → what the guest sees: `{ status, headers, body }`.
//!
//! Only an allowlist of headers crosses (content type, `Link`, `Location`, caching validators,
//! rate-limit and paging headers): cookies and anything else a server sets never reach the
//! guest. JSON bodies are parsed (a body that says JSON and is not fails, with a preview), text
//! stays text, anything else is named by type and size. A non-2xx answer is an
//! [`UpstreamError`]: 401/403 ask for credentials, 429 says how long to wait, the rest carry
//! the status and a preview of what the server said.

use serde_json::{Map, Value, json};

use crate::ports::UpstreamError;

/// Longest preview of an error answer's body.
const PREVIEW_CHARS: usize = 300;

/// The most bytes of an answer's body a hub reads; larger answers fail without being kept.
pub const MAX_BODY_BYTES: usize = 16 * 1024 * 1024;

/// Whether a response header may reach the guest.
pub fn header_allowed(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(
        name.as_str(),
        "content-type"
            | "content-length"
            | "content-range"
            | "link"
            | "location"
            | "etag"
            | "last-modified"
            | "retry-after"
            | "x-total-count"
            | "x-total"
            | "x-total-pages"
            | "x-page"
            | "x-per-page"
            | "x-next-page"
            | "x-prev-page"
            | "x-next-cursor"
    ) || name.starts_with("x-ratelimit-")
        || name.starts_with("ratelimit")
        || name.starts_with("x-rate-limit-")
}

/// The answer as a `CallToolResult` whose structured content is `{ status, headers, body }`.
pub fn shape(status: u16, headers: &[(String, String)], body: &[u8]) -> Result<Value, UpstreamError> {
    let content_type = headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case("content-type"))
        .map(|(_, v)| v.split(';').next().unwrap_or_default().trim().to_ascii_lowercase());
    if !(200..300).contains(&status) {
        return Err(refusal(status, headers, body));
    }
    let parsed = match content_type.as_deref() {
        _ if body.is_empty() => Value::Null,
        Some(ct) if ct == "application/json" || ct.ends_with("+json") => match serde_json::from_slice(body) {
            Ok(value) => value,
            Err(error) => {
                return Err(UpstreamError::Protocol(format!(
                    "the API said its answer is {ct} but it is not JSON ({error}): {}",
                    preview(body)
                )));
            }
        },
        Some(ct) if is_text(ct) => Value::String(String::from_utf8_lossy(body).into_owned()),
        None => match serde_json::from_slice(body) {
            Ok(value) => value,
            Err(_) => Value::String(String::from_utf8_lossy(body).into_owned()),
        },
        Some(ct) => Value::String(format!("[{} bytes of {ct}, not shown]", body.len())),
    };
    let mut kept = Map::new();
    for (name, value) in headers {
        if header_allowed(name) {
            let name = name.to_ascii_lowercase();
            match kept.get_mut(&name) {
                Some(Value::String(existing)) => {
                    existing.push_str(", ");
                    existing.push_str(value);
                }
                _ => {
                    kept.insert(name, Value::String(value.clone()));
                }
            }
        }
    }
    Ok(json!({
        "content": [],
        "structuredContent": { "status": status, "headers": kept, "body": parsed },
    }))
}

fn is_text(content_type: &str) -> bool {
    content_type.starts_with("text/")
        || content_type.ends_with("+xml")
        || matches!(content_type, "application/xml" | "application/javascript" | "application/x-ndjson")
}

fn refusal(status: u16, headers: &[(String, String)], body: &[u8]) -> UpstreamError {
    let header =
        |name: &str| headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
    match status {
        401 | 403 => UpstreamError::Unauthorized {
            message: format!("the API answered HTTP {status}: {}", preview(body)),
            challenge: header("www-authenticate"),
        },
        429 => UpstreamError::RateLimited {
            retry_after_s: header("retry-after").and_then(|v| v.trim().parse().ok()),
        },
        _ if (300..400).contains(&status) => UpstreamError::Refused {
            message: format!(
                "the API answered HTTP {status}, a redirect the hub does not follow (to another origin, or it changes the method)"
            ),
            status: Some(i64::from(status)),
        },
        _ => {
            let text = preview(body);
            let message = if text.is_empty() {
                format!("the API answered HTTP {status}")
            } else {
                format!("the API answered HTTP {status}: {text}")
            };
            UpstreamError::Refused { message, status: Some(i64::from(status)) }
        }
    }
}

/// The start of a body, on one line.
fn preview(body: &[u8]) -> String {
    let text = String::from_utf8_lossy(&body[..body.len().min(PREVIEW_CHARS * 4)]);
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= PREVIEW_CHARS {
        return flat;
    }
    let cut: String = flat.chars().take(PREVIEW_CHARS).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(a, b)| ((*a).to_owned(), (*b).to_owned())).collect()
    }

    #[test]
    fn answers_become_status_headers_and_body() {
        let headers = h(&[
            ("Content-Type", "application/json; charset=utf-8"),
            ("Link", "<https://api.example.com/pets?page=2>; rel=\"next\""),
            ("Set-Cookie", "session=secret"),
            ("X-RateLimit-Remaining", "59"),
        ]);
        let result = shape(200, &headers, br#"[{"id":1}]"#).unwrap();
        assert_eq!(
            result["structuredContent"],
            json!({
                "status": 200,
                "headers": {
                    "content-type": "application/json; charset=utf-8",
                    "link": "<https://api.example.com/pets?page=2>; rel=\"next\"",
                    "x-ratelimit-remaining": "59",
                },
                "body": [{ "id": 1 }],
            })
        );
        let text = shape(200, &h(&[("content-type", "text/plain")]), b"hello").unwrap();
        assert_eq!(text["structuredContent"]["body"], "hello");
        let binary = shape(200, &h(&[("content-type", "image/png")]), &[0x89, 0x50]).unwrap();
        assert_eq!(binary["structuredContent"]["body"], "[2 bytes of image/png, not shown]");
        assert_eq!(shape(204, &[], b"").unwrap()["structuredContent"]["body"], Value::Null);
    }

    #[test]
    fn a_lying_content_type_fails_with_a_preview() {
        let err = shape(200, &h(&[("content-type", "application/json")]), b"<html>oops</html>").unwrap_err();
        let UpstreamError::Protocol(message) = err else { panic!("{err:?}") };
        assert!(message.contains("not JSON") && message.ends_with("<html>oops</html>"), "{message}");
    }

    #[test]
    fn failures_carry_the_status_and_what_to_do() {
        let err = shape(404, &h(&[("content-type", "application/json")]), br#"{"message": "Not Found"}"#)
            .unwrap_err();
        assert_eq!(
            err,
            UpstreamError::Refused {
                message: r#"the API answered HTTP 404: {"message": "Not Found"}"#.into(),
                status: Some(404)
            }
        );
        assert_eq!(
            shape(429, &h(&[("Retry-After", "7")]), b"").unwrap_err(),
            UpstreamError::RateLimited { retry_after_s: Some(7) }
        );
        assert!(matches!(
            shape(401, &h(&[("WWW-Authenticate", "Bearer")]), b"").unwrap_err(),
            UpstreamError::Unauthorized { challenge: Some(_), .. }
        ));
        let long = "x".repeat(10_000);
        let UpstreamError::Refused { message, .. } = shape(500, &[], long.as_bytes()).unwrap_err() else {
            panic!()
        };
        assert!(message.len() < 400);
    }
}

//! HTTP API sources inside the Worker: one operation call as one `fetch`.
//!
//! Core builds the request and shapes the answer, exactly as the local hub does; this file
//! sends it. The request's URL must be on the source's reviewed origin, redirects are followed
//! here only on that origin and only when they keep the method (307, 308), and the body is read
//! up to core's limit, so a credential never leaves the origin and a huge answer is never kept.

use capabilities_core::openapi::{HttpApi, HttpAuth, HttpOperation, request, response};
use capabilities_core::ports::{UpstreamError, UpstreamRequest};
use futures_util::StreamExt;
use serde_json::Value;
use wasm_bindgen::JsValue;
use worker::{Fetch, Headers, Method, Request, RequestInit, RequestRedirect};

use crate::wire::{Origin, origin_of, redirect_target};

const MAX_REDIRECTS: usize = 3;

pub(super) async fn call(
    api: &HttpApi,
    origin: &Origin,
    operation: &HttpOperation,
    call: &UpstreamRequest<'_>,
) -> Result<Value, UpstreamError> {
    let unavailable = |e: worker::Error| UpstreamError::Unavailable(format!("the API: {e}"));
    // A static key, or an OAuth connection's access token.
    let credential = HttpAuth::credential(call.credentials);
    let built = request::build(api, operation, call.arguments, credential)
        .map_err(|error| UpstreamError::Refused { message: error.to_string(), status: Some(-32602) })?;
    if &origin_of(&built.url).map_err(UpstreamError::Unavailable)? != origin {
        return Err(UpstreamError::Unavailable(format!(
            "the request would leave the reviewed origin {origin}"
        )));
    }
    let mut url = built.url.clone();
    for _ in 0..=MAX_REDIRECTS {
        let headers = Headers::new();
        for (name, value) in &built.headers {
            // The runtime's text could quote the value: say only which header.
            headers.set(name, value).map_err(|_| UpstreamError::Refused {
                message: format!("header `{name}` holds characters a header cannot carry"),
                status: Some(-32602),
            })?;
        }
        let mut init = RequestInit::new();
        init.with_method(Method::from(built.method.clone()))
            .with_headers(headers)
            .with_redirect(RequestRedirect::Manual);
        if let Some(body) = &built.body {
            init.with_body(Some(JsValue::from(js_sys::Uint8Array::from(body.as_slice()))));
        }
        let outgoing = Request::new_with_init(&url, &init).map_err(unavailable)?;
        let mut answer = Fetch::Request(outgoing).send().await.map_err(unavailable)?;
        let status = answer.status_code();
        let headers: Vec<(String, String)> = answer.headers().entries().collect();
        let header =
            |name: &str| headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.clone());
        if matches!(status, 307 | 308) {
            let location = header("location").unwrap_or_default();
            url = redirect_target(&url, &location, origin)
                .map_err(|message| UpstreamError::Refused { message, status: Some(i64::from(status)) })?;
            continue;
        }
        if header("content-length")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .is_some_and(|n| n > response::MAX_BODY_BYTES as u64)
        {
            return Err(too_large());
        }
        let mut body = Vec::new();
        let mut chunks = answer.stream().map_err(unavailable)?;
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.map_err(unavailable)?;
            if body.len() + chunk.len() > response::MAX_BODY_BYTES {
                return Err(too_large());
            }
            body.extend_from_slice(&chunk);
        }
        return response::shape(status, &headers, &body);
    }
    Err(UpstreamError::Unavailable(format!(
        "the API redirected more than {MAX_REDIRECTS} times; not followed"
    )))
}

fn too_large() -> UpstreamError {
    UpstreamError::Protocol(format!(
        "the API's answer is larger than {} MiB; ask for less (a page size, a filter)",
        response::MAX_BODY_BYTES / (1024 * 1024)
    ))
}

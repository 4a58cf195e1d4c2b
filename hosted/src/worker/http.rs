//! Outbound requests the access code makes (the identity provider, client ID metadata
//! documents): never a redirect followed, a deadline, and at most so many bytes read.

use std::time::Duration;

use futures_util::StreamExt;
use futures_util::future::{Either, select};
use worker::{AbortController, Delay, Fetch, Request, ResponseBody};

/// What came back: the status and at most `max` bytes of body.
pub(crate) struct Answer {
    pub(crate) status: u16,
    pub(crate) body: Vec<u8>,
}

/// Sends `request` (built with `RequestRedirect::Manual`); gives up after `timeout`, or once
/// the body passes `max` bytes.
pub(crate) async fn fetch_limited(request: Request, timeout: Duration, max: usize) -> Result<Answer, String> {
    let controller = AbortController::default();
    let signal = controller.signal();
    let send = Box::pin(async {
        let failed = |e: worker::Error| e.to_string();
        let mut response = Fetch::Request(request).send_with_signal(&signal).await.map_err(failed)?;
        let status = response.status_code();
        let too_large = || format!("the answer is larger than {max} bytes");
        let declared = response.headers().get("content-length").ok().flatten();
        if declared.and_then(|l| l.parse::<usize>().ok()).is_some_and(|l| l > max) {
            return Err(too_large());
        }
        let mut body = Vec::new();
        match response.body() {
            ResponseBody::Empty => {}
            ResponseBody::Body(bytes) if bytes.len() > max => return Err(too_large()),
            ResponseBody::Body(bytes) => body.extend_from_slice(bytes),
            ResponseBody::Stream(_) => {
                let mut chunks = response.stream().map_err(failed)?;
                while let Some(chunk) = chunks.next().await {
                    let chunk = chunk.map_err(failed)?;
                    if body.len() + chunk.len() > max {
                        return Err(too_large());
                    }
                    body.extend_from_slice(&chunk);
                }
            }
        }
        Ok(Answer { status, body })
    });
    match select(send, Delay::from(timeout)).await {
        Either::Left((answer, _)) => answer,
        Either::Right(((), _)) => {
            controller.abort();
            Err(format!("no answer within {} s", timeout.as_secs_f32()))
        }
    }
}

//! The loopback redirect (RFC 8252 §7.3): a listener on 127.0.0.1 at a free port that waits for
//! the browser to come back from the authorization server with a code, or with its refusal.
//! Requests for other paths (a browser's favicon) get a 404 and the wait goes on.

use std::net::Ipv4Addr;
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};

/// The path the redirect comes back to.
const PATH: &str = "/callback";

/// Most bytes of a request head read.
const MAX_HEAD_BYTES: usize = 16 * 1024;

pub(super) struct Listener {
    listener: TcpListener,
    port: u16,
}

impl Listener {
    pub(super) async fn bind() -> Result<Listener, String> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .map_err(|e| format!("could not listen on 127.0.0.1 for the sign-in's redirect: {e}"))?;
        let port = listener.local_addr().map_err(|e| e.to_string())?.port();
        Ok(Listener { listener, port })
    }

    pub(super) fn redirect_uri(&self) -> String {
        format!("http://127.0.0.1:{}{PATH}", self.port)
    }

    /// Waits for the redirect; the URL it came back to, and the browser's request, answered once
    /// the caller knows how the sign-in ended. A refusal (`error=`) or a `state` other than
    /// `state` ends the wait with the reason.
    pub(super) async fn wait(&self, timeout: Duration, state: &str) -> Result<(String, Browser), String> {
        let waited = tokio::time::timeout(timeout, async {
            loop {
                let Ok((stream, _)) = self.listener.accept().await else { continue };
                if let Some(result) = self.answer(stream, state).await {
                    return result;
                }
            }
        })
        .await;
        waited.unwrap_or_else(|_| {
            Err(format!(
                "nobody finished signing in within {}; nothing was stored. Run the command again to sign in",
                in_words(timeout)
            ))
        })
    }

    /// Reads one request; `None` when it was not the redirect (answered with a 404).
    async fn answer(&self, mut stream: TcpStream, state: &str) -> Option<Result<(String, Browser), String>> {
        let head = read_head(&mut stream).await?;
        let target = head.lines().next()?.strip_prefix("GET ")?.split(' ').next()?.to_owned();
        if target.split('?').next() != Some(PATH) {
            respond(&mut stream, "404 Not Found", "Not found.").await;
            return None;
        }
        let url = format!("http://127.0.0.1:{}{target}", self.port);
        let parsed = reqwest::Url::parse(&url).ok()?;
        let value = |name: &str| parsed.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
        let result = if value("state").as_deref() != Some(state) {
            Err("the browser came back with a `state` that is not the one this sign-in sent, so the \
                 answer may not be yours; nothing was stored. Run the command again to sign in"
                .to_owned())
        } else if let Some(error) = value("error") {
            let described =
                value("error_description").map(|d| format!(" ({})", one_line(&d))).unwrap_or_default();
            Err(if error == "access_denied" {
                format!("signing in was refused at the authorization server{described}; nothing was stored")
            } else {
                format!(
                    "the authorization server answered `{}`{described}; nothing was stored",
                    one_line(&error)
                )
            })
        } else if value("code").is_none() {
            Err("the browser came back without an authorization code; nothing was stored".to_owned())
        } else {
            Ok(url)
        };
        match result {
            Ok(url) => Some(Ok((url, Browser { stream }))),
            Err(why) => {
                Browser { stream }.finish(false).await;
                Some(Err(why))
            }
        }
    }
}

/// The browser's request for the redirect, waiting for its page until the code is exchanged.
pub(super) struct Browser {
    stream: TcpStream,
}

impl Browser {
    /// Tells the browser how the sign-in ended.
    pub(super) async fn finish(mut self, signed_in: bool) {
        let page = if signed_in {
            "Signed in. You can close this tab and go back to the terminal."
        } else {
            "Signing in did not finish. The terminal says why."
        };
        respond(&mut self.stream, "200 OK", page).await;
    }
}

/// `5 minutes`, `90 seconds`.
pub(super) fn in_words(duration: Duration) -> String {
    let secs = duration.as_secs();
    match secs {
        1 => "1 second".to_owned(),
        s if s < 120 => format!("{s} seconds"),
        s => format!("{} minutes", s / 60),
    }
}

fn one_line(text: &str) -> String {
    text.chars().filter(|c| !c.is_control()).take(200).collect()
}

async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::new();
    let mut buf = [0u8; 2048];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        if head.len() > MAX_HEAD_BYTES {
            return None;
        }
        let read = tokio::time::timeout(Duration::from_secs(10), stream.read(&mut buf)).await.ok()?.ok()?;
        if read == 0 {
            break;
        }
        head.extend_from_slice(&buf[..read]);
    }
    String::from_utf8(head).ok()
}

async fn respond(stream: &mut TcpStream, status: &str, text: &str) {
    let body = format!("<!doctype html><meta charset=utf-8><title>capabilities</title><p>{text}</p>");
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\n\
         Cache-Control: no-store\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    let _ = stream.write_all(response.as_bytes()).await;
    let _ = stream.shutdown().await;
}

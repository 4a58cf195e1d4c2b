//! The pooled upstream: the core's `Upstream` port over a [`SourcePool`]. A call to an MCP
//! source whose server runs over stdio now is made on the run's own runtime, over the server's
//! lane; any other MCP call is driven on the long-lived runtime the sources' connections live
//! on (which starts servers and keeps HTTP connections); a request to an HTTP API is made on
//! the run's own runtime.

use std::time::Duration;

use capabilities_core::ports::{BoxFuture, Upstream, UpstreamError, UpstreamRequest};
use serde_json::Value;

use super::SourcePool;

/// The source pool, driven on the host's long-lived runtime whatever runtime the run uses.
pub struct PooledUpstream {
    pool: SourcePool,
    handle: tokio::runtime::Handle,
}

impl PooledUpstream {
    /// Calls go to `pool`, on the runtime of `handle`.
    pub fn new(pool: SourcePool, handle: tokio::runtime::Handle) -> PooledUpstream {
        PooledUpstream { pool, handle }
    }

    pub fn pool(&self) -> &SourcePool {
        &self.pool
    }
}

impl Upstream for PooledUpstream {
    fn call<'a>(&'a self, request: UpstreamRequest<'a>) -> BoxFuture<'a, Result<Value, UpstreamError>> {
        let timeout = Duration::from_millis(request.timeout_ms);
        // On a run thread, to a stdio server running now: written and answered right here.
        if request.http.is_none()
            && tokio::runtime::Handle::try_current().is_ok()
            && let Some(call) = self.pool.call_tool_in_place(
                request.namespace.as_str(),
                request.tool,
                request.arguments,
                request.credentials,
                timeout,
            )
        {
            return Box::pin(async move { call.await.map_err(UpstreamError::from) });
        }
        let pool = self.pool.clone();
        let namespace = request.namespace.to_string();
        let tool = request.tool.to_owned();
        let arguments = request.arguments.clone();
        let credentials = request.credentials.clone();
        if let Some(operation) = request.http.cloned() {
            // A request shares no connection with other runs: on a run thread's own runtime it
            // is made right there, without a hop to the pool's runtime and back (two thread
            // wake-ups: about 0.2 ms of a call to an API on loopback).
            if tokio::runtime::Handle::try_current().is_ok() {
                return Box::pin(async move {
                    // The run thread drives its runtime only while a run goes on, so a kept-alive
                    // connection the API closed meanwhile still looks open. One turn of the
                    // runtime's I/O driver lets its task see the close before the request picks a
                    // connection, as a runtime always running would have.
                    tokio::task::yield_now().await;
                    pool.call_operation(&namespace, &operation, &arguments, &credentials, timeout, true).await
                });
            }
            let task = self.handle.spawn(async move {
                pool.call_operation(&namespace, &operation, &arguments, &credentials, timeout, false).await
            });
            return Box::pin(async move {
                task.await.unwrap_or_else(|err| {
                    Err(UpstreamError::Unavailable(format!("the call to the source stopped: {err}")))
                })
            });
        }
        let task = self
            .handle
            .spawn(async move { pool.call_tool(&namespace, &tool, &arguments, &credentials, timeout).await });
        Box::pin(async move {
            match task.await {
                Ok(result) => result.map_err(UpstreamError::from),
                Err(err) => Err(UpstreamError::Unavailable(format!("the call to the source stopped: {err}"))),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Write};
    use std::net::TcpListener;
    use std::time::Duration;

    use capabilities_core::address::Namespace;
    use capabilities_core::openapi::HttpApi;
    use capabilities_core::operation::HttpOperation;
    use capabilities_core::ports::{Credentials, Upstream, UpstreamRequest};

    use super::*;
    use crate::upstream::{SourceSpec, SourceTransport};

    /// Answers each request on a kept-alive connection, then closes the connection once it has
    /// been idle for 50 ms, as servers do (Node's default is five seconds).
    fn closing_api() -> u16 {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                std::thread::spawn(move || {
                    let mut stream = stream;
                    stream.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
                    let mut reader = BufReader::new(stream.try_clone().unwrap());
                    loop {
                        let mut line = String::new();
                        // Idle too long, or closed: the connection ends.
                        if reader.read_line(&mut line).map_or(true, |n| n == 0) {
                            return;
                        }
                        while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                            line.clear();
                        }
                        let body = br#"{"ok":true}"#;
                        let head = format!(
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
                            body.len()
                        );
                        let _ = stream.write_all(head.as_bytes());
                        let _ = stream.write_all(body);
                    }
                });
            }
        });
        port
    }

    #[test]
    fn a_run_thread_never_sends_on_a_connection_the_api_closed_while_it_was_idle() {
        let port = closing_api();
        let pool = SourcePool::default();
        pool.register(SourceSpec {
            namespace: "api".to_owned(),
            transport: SourceTransport::OpenApi(HttpApi {
                base_url: format!("http://127.0.0.1:{port}"),
                document: None,
                auth: None,
            }),
        });
        let sources =
            tokio::runtime::Builder::new_multi_thread().worker_threads(1).enable_all().build().unwrap();
        let upstream = PooledUpstream::new(pool, sources.handle().clone());
        // As a run thread: its own runtime, driven only while a run goes on.
        let run = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let namespace = Namespace::new("api").unwrap();
        let operation = HttpOperation {
            method: "GET".to_owned(),
            path: "/thing".to_owned(),
            parameters: Vec::new(),
            body: None,
            authenticated: false,
        };
        let credentials = Credentials::default();
        let arguments = serde_json::json!({});
        for round in 0..3 {
            let request = UpstreamRequest {
                namespace: &namespace,
                tool: "getThing",
                http: Some(&operation),
                arguments: &arguments,
                credentials: &credentials,
                timeout_ms: 5_000,
            };
            // Asked inside the run's runtime, as the engine asks.
            let answer = run.block_on(async { upstream.call(request).await });
            assert!(answer.is_ok(), "round {round}: {answer:?}");
            // Idle between runs, long enough for the API to close the kept-alive connection.
            std::thread::sleep(Duration::from_millis(200));
        }
    }
}

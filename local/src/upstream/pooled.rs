//! The pooled upstream: the core's `Upstream` port over a [`SourcePool`]. A call to an MCP
//! source is driven on the long-lived runtime the sources' connections live on, whatever
//! runtime the run uses; a request to an HTTP API is made on the run's own runtime.

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
        let pool = self.pool.clone();
        let namespace = request.namespace.to_string();
        let tool = request.tool.to_owned();
        let arguments = request.arguments.clone();
        let credentials = request.credentials.clone();
        let timeout = Duration::from_millis(request.timeout_ms);
        if let Some(operation) = request.http.cloned() {
            // A request shares no connection with other runs: on a run thread's own runtime it
            // is made right there, without a hop to the pool's runtime and back (two thread
            // wake-ups: about 0.2 ms of a call to an API on loopback).
            if tokio::runtime::Handle::try_current().is_ok() {
                return Box::pin(async move {
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

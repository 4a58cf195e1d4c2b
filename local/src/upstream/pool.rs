//! The source pool: one lazily started connection per (namespace, connection name), tool
//! listing with pagination, tool calls with a per-call timeout, and health.
//!
//! A connection is started by the first request that needs it and kept while it lives. A
//! request that finds it dead, or finds that the spec or the credential values changed, starts
//! a new one, once; a start that fails is reported (and shown by [`SourcePool::health`]) and
//! the next request tries again. Sources never wait on each other.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capabilities_core::ports::Credentials;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, ClientRequest, ListToolsRequest, PaginatedRequestParams,
};
use serde_json::Value;

use super::connection::{Connection, fingerprint};
use super::stderr::StderrTail;
use super::{SourceError, SourceSpec};

/// Limits of the pool. The per-call timeout comes with each call.
#[derive(Debug, Clone)]
pub struct PoolOptions {
    /// How long a source may take to start and answer `initialize`.
    pub start_timeout: Duration,
    /// How long one page of `tools/list` may take.
    pub list_timeout: Duration,
    /// Most tools taken from one source.
    pub max_tools: usize,
    /// Most `tools/list` pages followed for one source.
    pub max_pages: usize,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            start_timeout: Duration::from_secs(30),
            list_timeout: Duration::from_secs(30),
            max_tools: 10_000,
            max_pages: 1_000,
        }
    }
}

/// What [`SourcePool::health`] reports for one source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SourceHealth {
    pub state: HealthState,
    /// The last few kilobytes the source wrote to stderr (stdio only), credentials scrubbed.
    pub stderr_tail: String,
}

#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HealthState {
    /// Registered, not started yet (sources start on first use).
    NotStarted,
    /// Running with this many live connections.
    Running { connections: usize },
    /// The last start failed, or the server exited; the next request tries again.
    Failed { reason: String },
}

/// MCP sources, behind the core's `Upstream` port through [`PooledUpstream`](super::PooledUpstream).
/// Cheap to clone; the servers are killed when the last clone drops, when their source is
/// removed, or on [`SourcePool::shutdown`].
#[derive(Clone)]
pub struct SourcePool {
    inner: Arc<Inner>,
}

struct Inner {
    options: PoolOptions,
    specs: Mutex<HashMap<String, SourceSpec>>,
    slots: Mutex<HashMap<SlotKey, Slot>>,
    /// Per namespace: why it last failed (cleared by a good start).
    failures: Mutex<HashMap<String, String>>,
    tails: Mutex<HashMap<String, StderrTail>>,
    /// The client HTTP API sources share (kept-alive connections; same-origin redirects).
    api_client: std::sync::OnceLock<Result<reqwest::Client, String>>,
}

thread_local! {
    /// This thread's client for HTTP API calls made in place, with the connect timeout it was
    /// built for.
    static THREAD_CLIENT: std::cell::RefCell<Option<(Duration, reqwest::Client)>> =
        const { std::cell::RefCell::new(None) };
}

/// A client for HTTP API calls made on this thread's runtime. Its kept-alive connections are
/// driven by the runtime that opened them, and a run thread drives its runtime only while it
/// runs, so no other thread may use them: each thread has its own client.
fn thread_client(connect_timeout: Duration) -> Result<reqwest::Client, String> {
    THREAD_CLIENT.with(|cell| {
        let mut kept = cell.borrow_mut();
        if let Some((timeout, client)) = kept.as_ref()
            && *timeout == connect_timeout
        {
            return Ok(client.clone());
        }
        let client = super::http::api_client(connect_timeout)?;
        *kept = Some((connect_timeout, client.clone()));
        Ok(client)
    })
}

type SlotKey = (String, Option<String>);
type Slot = Arc<tokio::sync::Mutex<Option<Arc<Connection>>>>;

impl Drop for Inner {
    fn drop(&mut self) {
        kill_all(&self.slots, |_| true);
    }
}

impl Default for SourcePool {
    fn default() -> Self {
        SourcePool::new(PoolOptions::default())
    }
}

impl SourcePool {
    pub fn new(options: PoolOptions) -> SourcePool {
        SourcePool {
            inner: Arc::new(Inner {
                options,
                specs: Mutex::default(),
                slots: Mutex::default(),
                failures: Mutex::default(),
                tails: Mutex::default(),
                api_client: std::sync::OnceLock::new(),
            }),
        }
    }

    /// A pool that knows these sources.
    pub fn with_sources(options: PoolOptions, specs: impl IntoIterator<Item = SourceSpec>) -> SourcePool {
        let pool = SourcePool::new(options);
        for spec in specs {
            pool.register(spec);
        }
        pool
    }

    /// Adds or replaces a source. A running connection with an older spec is replaced on its
    /// next use.
    pub fn register(&self, spec: SourceSpec) {
        lock(&self.inner.specs).insert(spec.namespace.clone(), spec);
    }

    /// Forgets a source and kills its servers now. Returns whether it was known.
    pub fn remove(&self, namespace: &str) -> bool {
        let known = lock(&self.inner.specs).remove(namespace).is_some();
        let killed = kill_all(&self.inner.slots, |key| key.0 == namespace);
        lock(&self.inner.failures).remove(namespace);
        lock(&self.inner.tails).remove(namespace);
        known || killed > 0
    }

    /// Kills every server; later requests start them again.
    pub fn shutdown(&self) {
        kill_all(&self.inner.slots, |_| true);
    }

    /// The registered namespaces, sorted.
    pub fn namespaces(&self) -> Vec<String> {
        let mut names: Vec<String> = lock(&self.inner.specs).keys().cloned().collect();
        names.sort();
        names
    }

    /// Process groups of the running stdio servers of `namespace` (for diagnostics and tests).
    pub fn process_groups(&self, namespace: &str) -> Vec<i32> {
        let slots: Vec<Slot> = lock(&self.inner.slots)
            .iter()
            .filter(|(key, _)| key.0 == namespace)
            .map(|(_, s)| s.clone())
            .collect();
        slots
            .iter()
            .filter_map(|slot| slot.try_lock().ok().and_then(|c| c.as_ref().and_then(|c| c.process_group())))
            .collect()
    }

    /// The tools of `spec`'s source, each exactly as the source sent it, across every page.
    pub async fn list_tools(
        &self,
        spec: &SourceSpec,
        credentials: &Credentials,
    ) -> Result<Vec<Value>, SourceError> {
        let connection = self.connection(spec, credentials).await?;
        let namespace = spec.namespace.as_str();
        let options = &self.inner.options;
        let mut tools = Vec::new();
        let mut cursor: Option<String> = None;
        let mut seen_cursors = std::collections::HashSet::new();
        for _ in 0..options.max_pages {
            let params = cursor.clone().map(|c| PaginatedRequestParams::default().with_cursor(Some(c)));
            let request = ClientRequest::ListToolsRequest(ListToolsRequest {
                method: Default::default(),
                params,
                extensions: Default::default(),
            });
            let page = connection.request(namespace, "tools/list", request, options.list_timeout).await?;
            let Some(entries) = page.get("tools").and_then(Value::as_array) else {
                return Err(SourceError::Protocol {
                    namespace: namespace.to_owned(),
                    reason: "its `tools/list` answer has no `tools` array".to_owned(),
                });
            };
            if tools.len() + entries.len() > options.max_tools {
                return Err(SourceError::TooManyTools {
                    namespace: namespace.to_owned(),
                    limit: options.max_tools,
                });
            }
            tools.extend(entries.iter().cloned());
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if !next.is_empty() => {
                    if !seen_cursors.insert(next.to_owned()) {
                        return Err(SourceError::Protocol {
                            namespace: namespace.to_owned(),
                            reason: format!("its `tools/list` pages loop (cursor `{next}` came twice)"),
                        });
                    }
                    cursor = Some(next.to_owned());
                }
                _ => return Ok(tools),
            }
        }
        Err(SourceError::Protocol {
            namespace: namespace.to_owned(),
            reason: format!("its `tools/list` has more than {} pages", options.max_pages),
        })
    }

    /// The source's `initialize` instructions, from the connection `list_tools` left open.
    pub async fn instructions(&self, spec: &SourceSpec, credentials: &Credentials) -> Option<String> {
        self.connection(spec, credentials).await.ok()?.instructions()
    }

    /// Calls `tool` on a registered source; the raw `CallToolResult` (a result with `isError`
    /// is a result, not an error).
    pub async fn call_tool(
        &self,
        namespace: &str,
        tool: &str,
        arguments: &Value,
        credentials: &Credentials,
        timeout: Duration,
    ) -> Result<Value, SourceError> {
        let spec = lock(&self.inner.specs)
            .get(namespace)
            .cloned()
            .ok_or_else(|| SourceError::UnknownSource(namespace.to_owned()))?;
        let arguments = tool_arguments(namespace, tool, arguments)?;
        let connection = self.connection(&spec, credentials).await?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        if let Some(arguments) = arguments {
            params = params.with_arguments(arguments);
        }
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        connection.request(namespace, "tools/call", request, timeout).await
    }

    /// The call of `tool` made in place, on the caller's runtime, when its source's server is
    /// running now with these credentials and can take it there (a stdio server's lane): no
    /// hop to the pool's runtime. `None` when the call should go through [`SourcePool::call_tool`]
    /// (the server not started yet or being started, exited, restarted for new credentials, or
    /// not over stdio).
    pub fn call_tool_in_place(
        &self,
        namespace: &str,
        tool: &str,
        arguments: &Value,
        credentials: &Credentials,
        timeout: Duration,
    ) -> Option<impl Future<Output = Result<Value, SourceError>> + use<>> {
        let connection = {
            let specs = lock(&self.inner.specs);
            let fingerprint = fingerprint(specs.get(namespace)?, credentials);
            let key = (namespace.to_owned(), credentials.connection.clone());
            let slot = lock(&self.inner.slots).get(&key)?.clone();
            // A slot being started or restarted is locked: that call goes through the pool.
            let guard = slot.try_lock().ok()?;
            let connection = guard.as_ref()?;
            (connection.alive() && connection.fingerprint == fingerprint && connection.has_lane())
                .then(|| Arc::clone(connection))?
        };
        let arguments = tool_arguments(namespace, tool, arguments);
        let (namespace, tool) = (namespace.to_owned(), tool.to_owned());
        Some(async move { connection.call_tool_in_place(&namespace, &tool, arguments?, timeout).await })
    }

    /// Calls one operation of an HTTP API source: a request, no connection to keep. With
    /// `here`, on a client of this thread's own (see [`thread_client`]), else on the client the
    /// pool shares, whose connections live on the runtime the pool runs on.
    pub async fn call_operation(
        &self,
        namespace: &str,
        operation: &capabilities_core::openapi::HttpOperation,
        arguments: &Value,
        credentials: &Credentials,
        timeout: Duration,
        here: bool,
    ) -> Result<Value, capabilities_core::ports::UpstreamError> {
        use capabilities_core::ports::UpstreamError;
        let spec = lock(&self.inner.specs).get(namespace).cloned();
        let Some(SourceSpec { transport: super::SourceTransport::OpenApi(api), .. }) = spec else {
            return Err(UpstreamError::Unavailable(match spec {
                None => SourceError::UnknownSource(namespace.to_owned()).to_string(),
                Some(_) => format!("source `{namespace}` is not an HTTP API, but its tool is an operation"),
            }));
        };
        let client = if here {
            thread_client(self.inner.options.start_timeout)
        } else {
            self.inner
                .api_client
                .get_or_init(|| super::http::api_client(self.inner.options.start_timeout))
                .clone()
        }
        .map_err(UpstreamError::Unavailable)?;
        super::openapi::call(&client, &api, operation, arguments, credentials, timeout).await
    }

    /// How a source is doing, with its stderr tail. `None` for a namespace the pool never saw.
    pub fn health(&self, namespace: &str) -> Option<SourceHealth> {
        let registered = lock(&self.inner.specs).contains_key(namespace);
        let slots: Vec<Slot> = lock(&self.inner.slots)
            .iter()
            .filter(|(key, _)| key.0 == namespace)
            .map(|(_, s)| s.clone())
            .collect();
        let failure = lock(&self.inner.failures).get(namespace).cloned();
        if !registered && slots.is_empty() && failure.is_none() {
            return None;
        }
        let mut live = 0;
        let mut exited = None;
        for slot in &slots {
            let Ok(guard) = slot.try_lock() else {
                continue; // starting right now
            };
            if let Some(connection) = guard.as_ref() {
                if connection.alive() {
                    live += 1;
                } else {
                    exited = Some(connection.describe_end());
                }
            }
        }
        let state = if live > 0 {
            HealthState::Running { connections: live }
        } else if let Some(reason) = exited.or(failure) {
            HealthState::Failed { reason }
        } else {
            HealthState::NotStarted
        };
        Some(SourceHealth { state, stderr_tail: self.stderr_tail(namespace) })
    }

    /// The last few kilobytes of the source's stderr, credentials scrubbed.
    pub fn stderr_tail(&self, namespace: &str) -> String {
        lock(&self.inner.tails).get(namespace).map(StderrTail::text).unwrap_or_default()
    }

    fn tail(&self, namespace: &str) -> StderrTail {
        lock(&self.inner.tails).entry(namespace.to_owned()).or_default().clone()
    }

    /// The live connection for this spec and these credentials, started if need be.
    async fn connection(
        &self,
        spec: &SourceSpec,
        credentials: &Credentials,
    ) -> Result<Arc<Connection>, SourceError> {
        let key = (spec.namespace.clone(), credentials.connection.clone());
        let fingerprint = fingerprint(spec, credentials);
        let slot = lock(&self.inner.slots).entry(key).or_default().clone();
        let mut guard = slot.lock().await;
        if let Some(connection) = guard.as_ref()
            && connection.alive()
            && connection.fingerprint == fingerprint
        {
            return Ok(Arc::clone(connection));
        }
        if let Some(old) = guard.take() {
            old.kill();
        }
        let started = Connection::start(
            spec,
            credentials,
            self.inner.options.start_timeout,
            self.tail(&spec.namespace),
        )
        .await;
        match started {
            Ok(connection) => {
                let connection = Arc::new(connection);
                *guard = Some(Arc::clone(&connection));
                lock(&self.inner.failures).remove(&spec.namespace);
                Ok(connection)
            }
            Err(error) => {
                lock(&self.inner.failures).insert(spec.namespace.clone(), error.to_string());
                Err(error)
            }
        }
    }
}

/// A call's arguments as `tools/call` sends them: an object, or none.
fn tool_arguments(
    namespace: &str,
    tool: &str,
    arguments: &Value,
) -> Result<Option<serde_json::Map<String, Value>>, SourceError> {
    match arguments {
        Value::Object(map) => Ok(Some(map.clone())),
        Value::Null => Ok(None),
        _ => Err(SourceError::Refused {
            namespace: namespace.to_owned(),
            method: "tools/call".to_owned(),
            message: format!("the arguments for `{tool}` must be an object"),
            code: None,
        }),
    }
}

/// Kills and forgets the connections whose key matches; returns how many there were.
fn kill_all(slots: &Mutex<HashMap<SlotKey, Slot>>, matches: impl Fn(&SlotKey) -> bool) -> usize {
    let removed: Vec<Slot> = {
        let mut slots = lock(slots);
        let keys: Vec<SlotKey> = slots.keys().filter(|key| matches(key)).cloned().collect();
        keys.iter().filter_map(|key| slots.remove(key)).collect()
    };
    let mut count = 0;
    for slot in removed {
        // A slot that is starting right now is locked; its start finishes into a slot nobody
        // holds any more, and the connection dies with it.
        if let Ok(mut guard) = slot.try_lock()
            && let Some(connection) = guard.take()
        {
            connection.kill();
            count += 1;
        }
    }
    count
}

/// A lock of the pool's state; a panic elsewhere does not make the state unreadable.
pub(super) fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

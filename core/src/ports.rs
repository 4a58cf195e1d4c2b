//! Ports: the traits through which the pure core reaches the world. Each host (the native
//! binary, the Cloudflare Worker) supplies adapters; tests use the in-memory fakes.
//!
//! Who drives whom: the run engine drives every port. A port never calls back into the engine.
//! Futures are `Send` natively and not on wasm32, where Workers futures are `!Send`; the
//! [`MaybeSend`] alias switches on the target, never on a feature.

use std::fmt;
use std::future::Future;
use std::pin::Pin;

use serde_json::Value;

use crate::address::Namespace;
use crate::run::{JournalEntry, RunRecord};

#[cfg(not(target_arch = "wasm32"))]
mod send {
    /// `Send` natively; nothing on wasm32.
    pub trait MaybeSend: Send {}
    impl<T: Send + ?Sized> MaybeSend for T {}
    /// `Sync` natively; nothing on wasm32.
    pub trait MaybeSync: Sync {}
    impl<T: Sync + ?Sized> MaybeSync for T {}
}

#[cfg(target_arch = "wasm32")]
mod send {
    /// `Send` natively; nothing on wasm32.
    pub trait MaybeSend {}
    impl<T: ?Sized> MaybeSend for T {}
    /// `Sync` natively; nothing on wasm32.
    pub trait MaybeSync {}
    impl<T: ?Sized> MaybeSync for T {}
}

pub use send::{MaybeSend, MaybeSync};

/// A boxed future that is `Send` where the target has threads.
#[cfg(not(target_arch = "wasm32"))]
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
/// A boxed future that is `Send` where the target has threads.
#[cfg(target_arch = "wasm32")]
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// A boxed future that never needs to be `Send` (the sandbox holds a JS runtime).
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Wall-clock time in milliseconds since the Unix epoch, for records and expiry. The run's
/// guest clock is logical and does not come from here.
pub trait Clock: MaybeSend + MaybeSync {
    fn now_ms(&self) -> u64;
}

/// Unpredictable bytes, for run ids, seeds and nonces.
pub trait Entropy: MaybeSend + MaybeSync {
    fn fill(&self, buf: &mut [u8]);
}

/// Credential values resolved for one upstream request. They exist only for the duration of
/// that request; `Debug` never prints them.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Credentials {
    /// The connection the values belong to (`None` for a source that needs none).
    pub connection: Option<String>,
    /// Slot name (an environment variable or a header) and its value.
    pub values: Vec<(String, String)>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let slots: Vec<&str> = self.values.iter().map(|(slot, _)| slot.as_str()).collect();
        f.debug_struct("Credentials").field("connection", &self.connection).field("slots", &slots).finish()
    }
}

/// Why credentials could not be resolved.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SecretsError {
    /// The source needs a credential that nobody has entered yet.
    #[error("connection `{connection}` of `{namespace}` has no value for {slots:?}")]
    Missing { namespace: String, connection: String, slots: Vec<String> },
    /// Code asked for a connection the source does not have.
    #[error("`{namespace}` has no connection named `{connection}`; it has {known:?}")]
    UnknownConnection { namespace: String, connection: String, known: Vec<String> },
    /// The keychain (or its fallback) could not be read.
    #[error("the secret store is unavailable: {0}")]
    Unavailable(String),
}

/// Where credential values live. Resolved only at the moment of an upstream request.
pub trait Secrets: MaybeSend + MaybeSync {
    /// Resolves the values of `connection` (or the source's default when `None`).
    fn resolve<'a>(
        &'a self,
        namespace: &'a Namespace,
        connection: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Credentials, SecretsError>>;
}

/// One upstream tool call.
#[derive(Debug, Clone)]
pub struct UpstreamRequest<'a> {
    pub namespace: &'a Namespace,
    /// The source's own name for the tool.
    pub tool: &'a str,
    pub arguments: &'a Value,
    pub credentials: &'a Credentials,
    pub timeout_ms: u64,
}

/// Why an upstream call produced no result. A tool that answered with `isError` is not an
/// error here: its result comes back and the engine turns it into a `ToolError`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpstreamError {
    #[error("the call took longer than {0} ms")]
    Timeout(u64),
    #[error("the source is unavailable: {0}")]
    Unavailable(String),
    #[error("the source answered something that is not MCP: {0}")]
    Protocol(String),
    #[error("the source refused the call: {message}")]
    Refused { message: String, status: Option<i64> },
}

/// Upstream sources. Returns the raw MCP `CallToolResult` JSON.
pub trait Upstream: MaybeSend + MaybeSync {
    fn call<'a>(&'a self, request: UpstreamRequest<'a>) -> BoxFuture<'a, Result<Value, UpstreamError>>;
}

/// Why the store failed. Records it cannot parse are named, never dropped silently.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("record `{0}` is corrupt: {1}")]
    Corrupt(String, String),
    #[error("store I/O failed on `{0}`: {1}")]
    Io(String, String),
    #[error("record `{0}` is locked by another process")]
    Locked(String),
}

/// Where runs and their journals live.
///
/// Contract: `append_journal` returns only once the entry is durable; a reader after a crash
/// sees every acknowledged entry, in order, and at most one torn trailing line, which it
/// ignores.
pub trait RunStore: MaybeSend + MaybeSync {
    fn save_run<'a>(&'a self, run: &'a RunRecord) -> BoxFuture<'a, Result<(), StoreError>>;
    fn load_run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<RunRecord>, StoreError>>;
    fn append_journal<'a>(
        &'a self,
        id: &'a str,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    fn read_journal<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<JournalEntry>, StoreError>>;
}

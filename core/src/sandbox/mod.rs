//! The sandbox port: what the run engine hands a sandbox driver for one attempt, what the
//! guest's bridge calls look like, and how an attempt ends.
//!
//! A driver runs the prepared code until it returns, throws, hits a limit, or the engine asks
//! it to suspend. Every way out of the guest goes through [`Bridge`]; the driver itself decides
//! nothing about tools. Arguments and results cross the boundary as JSON.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::limits::Limits;
use crate::ports::LocalBoxFuture;

#[cfg(feature = "quickjs")]
pub mod quickjs;

/// One namespace as the guest sees it: a frozen global whose members are these identifiers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestNamespace {
    pub name: String,
    pub tools: Vec<String>,
}

/// Everything a driver needs for one attempt. The same attempt (same body, seed and clock
/// origin) must make the guest read the same `Date`, `Math.random` and `crypto` values.
#[derive(Debug, Clone, PartialEq)]
pub struct Attempt {
    /// The body of an async function, as the code pipeline prepared it.
    pub body: String,
    pub namespaces: Vec<GuestNamespace>,
    /// Seeds `Math.random`, `crypto.randomUUID` and `crypto.getRandomValues`.
    pub seed: u64,
    /// What `Date.now()` returns when the run starts, in ms since the epoch. The guest clock
    /// then advances only by timers, deterministically.
    pub clock_origin_ms: f64,
    pub limits: Limits,
    /// Bytes of console output kept; the rest is dropped and marked truncated.
    pub log_budget_bytes: usize,
}

/// A call the guest made through the bridge. `seq` counts calls in the order the guest issued
/// them within the attempt, from 0.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuestCall {
    pub seq: u32,
    /// `namespace.tool`, exactly as the guest named it (already checked against the prelude's
    /// namespaces, but the engine checks again).
    pub address: String,
    /// The guest's arguments, as JSON (`undefined` becomes `{}`).
    pub args: Value,
    /// Per-call options (`{ connection: "work" }`), as JSON.
    pub options: Value,
}

/// An expected tool failure as the guest sees it: a `ToolError`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolFailure {
    /// A stable code such as `approval_denied`, `policy_denied`, `upstream_error`, `timeout`.
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
    /// The upstream status, if it had one (HTTP status or JSON-RPC error code).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<i64>,
    #[serde(default)]
    pub retryable: bool,
}

/// The host's answer to one bridge call.
#[derive(Debug, Clone, PartialEq)]
pub enum GuestReply {
    /// The call's result: its promise resolves with this value.
    Ok(Value),
    /// The call failed: its promise rejects with a `ToolError`.
    Err(ToolFailure),
    /// The run must pause (a person must decide, or a connection is missing): the driver
    /// delivers nothing more to the guest, lets calls already in flight settle, and ends the
    /// attempt with [`AttemptEnd::Suspended`].
    Suspend,
}

/// The host side of the guest's only way out. Implemented by the run engine, which runs on the
/// same thread as the driver, so nothing here needs to be `Send`.
pub trait Bridge {
    /// A tool call. Calls may be in flight concurrently; the driver polls their futures.
    fn call(&self, call: GuestCall) -> LocalBoxFuture<'_, GuestReply>;
    /// `hub.search(query, { namespace, limit })` from inside code: the same text `search` gives.
    fn search(&self, args: Value) -> Result<String, String>;
    /// `hub.describe(target)` from inside code: the same text `describe` gives.
    fn describe(&self, args: Value) -> Result<String, String>;
}

/// Which budget an attempt ran out of.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LimitKind {
    /// Guest execution time (`computeMs`).
    Compute,
    /// The attempt's wall-clock ceiling (`wallMs`).
    Wall,
    /// The guest heap (`memoryBytes`).
    Memory,
    /// The native stack (deep recursion).
    Stack,
}

/// An uncaught exception in the guest, made plain.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestError {
    /// `TypeError`, `ToolError`, … or `Thrown` for a non-Error value.
    pub name: String,
    pub message: String,
    /// For a `ToolError`: its code.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stack: Option<String>,
}

/// How an attempt ended.
#[derive(Debug, Clone, PartialEq)]
pub enum AttemptEnd {
    /// The code returned. `None` is `undefined`.
    Completed(Option<Value>),
    /// The returned value cannot be sent back as JSON (a function, a cycle, a BigInt, …).
    Unserializable(String),
    /// An exception escaped the code.
    Threw(GuestError),
    /// The engine asked to pause; in-flight calls have settled.
    Suspended,
    /// A budget ran out.
    Limit(LimitKind),
    /// The code awaits something that can never settle (no calls in flight, no timers).
    Stalled,
    /// The host cancelled the attempt.
    Cancelled,
    /// The driver itself failed; a bug, reported rather than panicked on.
    Internal(String),
}

/// What one attempt produced.
#[derive(Debug, Clone, PartialEq)]
pub struct AttemptReport {
    pub end: AttemptEnd,
    /// Console lines, within the log budget.
    pub logs: Vec<String>,
    pub logs_truncated: bool,
    /// Calls the guest issued in this attempt.
    pub calls_issued: u32,
}

/// A sandbox driver. Its future holds a JS runtime, so it is never required to be `Send`; a
/// native host runs it on a thread of its own.
pub trait Sandbox {
    fn run<'a>(&'a self, attempt: Attempt, bridge: &'a dyn Bridge) -> LocalBoxFuture<'a, AttemptReport>;
}

//! Ports: the traits through which the pure core reaches the world. Each host (the native
//! binary, the Cloudflare Worker) supplies adapters; tests use the in-memory fakes.
//!
//! Who drives whom: the run engine drives every port. A port never calls back into the engine,
//! except the sandbox, which the engine hands a [`Bridge`] for the length of one attempt.
//! Futures are `Send` natively and not on wasm32, where Workers futures are `!Send`; the
//! [`MaybeSend`] alias switches on the target, never on a feature.
//!
//! Every port trait is defined here, with the types that cross it; a tidy test holds that line.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::address::{Namespace, ToolAddress};
use crate::limits::Limits;
use crate::manifest::Tool;
use crate::record::{JournalEntry, RunId, RunRecord, ToolFailure};
pub use crate::send::{BoxFuture, LocalBoxFuture, MaybeSend, MaybeSync};

/// Wall-clock time in milliseconds since the Unix epoch, for records and expiry. The run's
/// guest clock is logical and does not come from here.
pub trait Clock: MaybeSend + MaybeSync {
    fn now_ms(&self) -> u64;
}

/// Unpredictable bytes, for run ids, seeds and nonces.
pub trait Entropy: MaybeSend + MaybeSync {
    fn fill(&self, buf: &mut [u8]);
}

/// Credential values resolved for one upstream request. They never reach the sandbox, a
/// journal or a log, and `Debug` never prints them; a host may keep them in its own memory
/// between requests (the local hub keeps what it read from the keychain).
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
    /// An OAuth connection whose tokens the authorization server no longer takes: a person
    /// must sign in again.
    #[error("connection `{connection}` of `{namespace}` needs signing in again: {reason}")]
    SignInRequired { namespace: String, connection: String, reason: String },
}

/// Where credential values live. Resolved only at the moment of an upstream request.
pub trait Secrets: MaybeSend + MaybeSync {
    /// Resolves the values of `connection` (or the source's default when `None`).
    fn resolve<'a>(
        &'a self,
        namespace: &'a Namespace,
        connection: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Credentials, SecretsError>>;

    /// The source refused `rejected` as not (or no longer) valid: credentials worth one more
    /// try (an OAuth connection's refreshed token, or one another process stored meanwhile),
    /// `None` when there are none and the call fails as it is.
    fn rejected<'a>(
        &'a self,
        namespace: &'a Namespace,
        rejected: &'a Credentials,
        challenge: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Credentials>, SecretsError>> {
        let _ = (namespace, rejected, challenge);
        Box::pin(async { Ok(None) })
    }
}

/// One form post to an OAuth token endpoint.
#[derive(Clone, PartialEq, Eq)]
pub struct TokenPost {
    pub url: String,
    /// An `Authorization` header value (client authentication), when the client sends one.
    pub authorization: Option<String>,
    /// `application/x-www-form-urlencoded`.
    pub body: String,
}

impl fmt::Debug for TokenPost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TokenPost").field("url", &self.url).finish_non_exhaustive()
    }
}

/// An OAuth token endpoint, reached over the host's HTTP client. The host follows no
/// redirect, gives up after its timeout, and reads at most
/// [`crate::oauth::MAX_TOKEN_RESPONSE_BYTES`] of the answer (more is an error).
pub trait TokenEndpoint: MaybeSend + MaybeSync {
    /// Posts the form; the status and body, or why there is no answer.
    fn post<'a>(&'a self, request: &'a TokenPost) -> BoxFuture<'a, Result<(u16, Vec<u8>), String>>;
}

/// One upstream tool call.
#[derive(Debug, Clone)]
pub struct UpstreamRequest<'a> {
    pub namespace: &'a Namespace,
    /// The source's own name for the tool.
    pub tool: &'a str,
    /// For an HTTP API's operation: how the call becomes a request (from the pinned contract).
    pub http: Option<&'a crate::operation::HttpOperation>,
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
    /// The source answered HTTP 401 (or 403 for the token): it does not take the connection's
    /// credentials. Never reaches the hub's own client as an HTTP status.
    /// The source answered HTTP 429: too many calls; it may say how long to wait.
    #[error("the source is rate limiting calls")]
    RateLimited { retry_after_s: Option<u64> },
    #[error("the source does not take the connection's credentials: {message}")]
    Unauthorized {
        message: String,
        /// Its `WWW-Authenticate` challenge (which may name the scopes it wants).
        challenge: Option<String>,
    },
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
/// Contract: `append_journal` returns only once the entry is durable, and with it every entry
/// appended before it; a reader after a crash sees every acknowledged entry, in order, and at
/// most one torn trailing line, which it ignores.
pub trait RunStore: MaybeSend + MaybeSync {
    fn save_run<'a>(&'a self, run: &'a RunRecord) -> BoxFuture<'a, Result<(), StoreError>>;
    fn load_run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<RunRecord>, StoreError>>;
    fn append_journal<'a>(
        &'a self,
        id: &'a str,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    fn read_journal<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<JournalEntry>, StoreError>>;
    /// Appends `entry` without waiting for it to be durable: it is by the time the run's next
    /// `append_journal` or `save_run` returns (group commit). A call's outcome goes this way,
    /// since whatever depends on it leaves the hub only after one of those two: the next call's
    /// request, or the answer. A crash before then leaves the call without an outcome, which a
    /// resume reports and never repeats. Hosts without a cheaper way make it durable at once.
    fn append_journal_deferred<'a>(
        &'a self,
        id: &'a str,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.append_journal(id, entry)
    }
    /// The id for the next new run, when the store made its journal ready ahead (created, and
    /// its name durable) so the run's first durable write is only its own line. Each id is
    /// handed out once; `None` lets the engine draw one.
    fn take_prepared_run(&self) -> Option<RunId> {
        None
    }
}

/// Bytes of one blob from an offset, and the blob's whole length in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobBytes {
    pub bytes: Vec<u8>,
    pub total: u64,
}

/// Where the text behind a run's handles lives (`crate::handles`): written once, read in slices.
///
/// Contract: `put` returns once the text is durable and whole, so a reader never sees part of
/// it; `read` returns the bytes of `[offset, offset + len)` clipped to the blob, with its length,
/// or `None` when there is no such blob. Both take the run id and the handle as
/// `handles::Handle::parse` checked them, so either is safe as a file name. The engine checks
/// that the run exists, is the reader's profile's and lists the handle before it reads; the host
/// removes a run's blobs when it removes the run.
pub trait Blobs: MaybeSend + MaybeSync {
    fn put<'a>(
        &'a self,
        run: &'a str,
        handle: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>>;
    fn read<'a>(
        &'a self,
        run: &'a str,
        handle: &'a str,
        offset: u64,
        len: u64,
    ) -> BoxFuture<'a, Result<Option<BlobBytes>, StoreError>>;
}

/// Where a host keeps its skills' files, for `hub.skill` inside code. The surface checks the
/// name and path against the library it was given before it asks, so `path` is always one of
/// that skill's own files (`/`-separated, no `..`).
pub trait SkillFiles: MaybeSend + MaybeSync + fmt::Debug {
    fn read<'a>(&'a self, skill: &'a str, path: &'a str) -> BoxFuture<'a, Result<Vec<u8>, StoreError>>;
}

/// What policy says about a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Effect {
    Allow,
    Ask,
    Deny,
}

impl fmt::Display for Effect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Effect::Allow => "allow",
            Effect::Ask => "ask",
            Effect::Deny => "deny",
        })
    }
}

/// What policy says about one call, with the reason a person reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    pub effect: Effect,
    pub reason: String,
}

/// The hub's policy as the engine consults it: rules, pinned contracts and reviews together.
pub trait PolicyView {
    fn decide(&self, address: &ToolAddress, connection: Option<&str>, tool: &Tool) -> Verdict;
}

/// `hub.search` and `hub.describe` from inside code.
pub trait Lookup {
    fn search(&self, args: Value) -> Result<String, String>;
    fn describe(&self, args: Value) -> Result<String, String>;
    /// `hub.skill(name, path)` from inside code: the text of one file of one of the hub's
    /// skills (`SKILL.md` when no path is given), or why there is none. Checked against the
    /// library with `surface::skills::request`; only a file the library lists is read.
    fn skill(&self, args: Value) -> LocalBoxFuture<'_, Result<Value, ToolFailure>> {
        let _ = args;
        Box::pin(async { Err(no_skills()) })
    }
}

// The sandbox port: what the run engine hands a sandbox driver for one attempt, what the
// guest's bridge calls look like, and how an attempt ends.

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
    /// The run this attempt belongs to, so a host can stop it from outside.
    pub run_id: String,
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
    /// `hub.read(handle, { offset, limit })` from inside code: one slice of a handle's text
    /// (`crate::handles::Slice` as JSON), or why there is none.
    fn read(&self, args: Value) -> LocalBoxFuture<'_, Result<Value, ToolFailure>> {
        let _ = args;
        Box::pin(async {
            Err(ToolFailure {
                code: "unknown_handle".to_owned(),
                message: "this hub keeps no handles".to_owned(),
                hint: None,
                status: None,
                retryable: false,
            })
        })
    }
    /// `hub.skill(name, path)` from inside code: see [`Lookup::skill`].
    fn skill(&self, args: Value) -> LocalBoxFuture<'_, Result<Value, ToolFailure>> {
        let _ = args;
        Box::pin(async { Err(no_skills()) })
    }
}

/// What `hub.skill` answers on a host that hands code no skills.
fn no_skills() -> ToolFailure {
    ToolFailure {
        code: "unknown_skill".to_owned(),
        message: "this hub has no skills to read".to_owned(),
        hint: None,
        status: None,
        retryable: false,
    }
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
    /// For a `ToolError`: the hub's hint for the next step, when it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
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

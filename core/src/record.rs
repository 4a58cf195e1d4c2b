//! Run records: what the store keeps of a run — its record, the journal's lines, each call's
//! outcome — and the pure functions over them (the replay digest, folding a journal into calls).
//!
//! A leaf: the engine, the approval recorder, the surface and every host read these types, and
//! this module imports none of them.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::canonical;
use crate::manifest::ContractDigest;
use crate::pending::{Choice, DecisionRecord, PendingCall, PendingKind};

/// A run's id: `run_` and 16 lowercase hex digits. Ids come back from the model on resume, so
/// only a [`RunId::parse`]d one ever names a record or a path.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct RunId(String);

impl RunId {
    /// The id made from eight unpredictable bytes.
    pub fn from_bytes(bytes: [u8; 8]) -> RunId {
        RunId(format!("run_{}", hex::encode(bytes)))
    }

    /// `raw` as a run id, if it has the shape of one.
    pub fn parse(raw: &str) -> Option<RunId> {
        RunId::is_valid(raw).then(|| RunId(raw.to_owned()))
    }

    /// Whether `raw` has the shape of a run id.
    pub fn is_valid(raw: &str) -> bool {
        raw.len() == 20
            && raw.starts_with("run_")
            && raw[4..].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl std::ops::Deref for RunId {
    type Target = str;

    fn deref(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for RunId {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl PartialEq<str> for RunId {
    fn eq(&self, other: &str) -> bool {
        self.0 == other
    }
}

impl PartialEq<&str> for RunId {
    fn eq(&self, other: &&str) -> bool {
        self.0 == *other
    }
}

impl PartialEq<String> for RunId {
    fn eq(&self, other: &String) -> bool {
        &self.0 == other
    }
}

impl TryFrom<String> for RunId {
    type Error = String;

    fn try_from(raw: String) -> Result<RunId, String> {
        if RunId::is_valid(&raw) { Ok(RunId(raw)) } else { Err(format!("`{raw}` is not a run id")) }
    }
}

impl From<RunId> for String {
    fn from(id: RunId) -> String {
        id.0
    }
}

/// Where a run is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Running,
    AwaitingInput,
    Completed,
    Failed,
    Cancelled,
    Expired,
}

impl RunStatus {
    pub fn is_final(self) -> bool {
        matches!(self, RunStatus::Completed | RunStatus::Failed | RunStatus::Cancelled | RunStatus::Expired)
    }

    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::AwaitingInput => "awaiting_input",
            RunStatus::Completed => "completed",
            RunStatus::Failed => "failed",
            RunStatus::Cancelled => "cancelled",
            RunStatus::Expired => "expired",
        }
    }
}

/// A failure of the run as a whole, as the envelope reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunError {
    pub code: String,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
}

impl RunError {
    pub fn new(code: &str, message: impl Into<String>, hint: Option<&str>) -> RunError {
        RunError { code: code.to_owned(), message: message.into(), hint: hint.map(str::to_owned) }
    }
}

/// What the last attempt left for the envelope.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct RunOutput {
    /// The returned value; absent for `undefined` or when the run did not complete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    #[serde(default)]
    pub logs: Vec<String>,
    #[serde(default)]
    pub logs_truncated: bool,
    /// Result or logs too large to return inline, kept whole as handles (`crate::handles`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handles: Vec<HandleRecord>,
}

/// What a handle holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum HandleKind {
    /// The run's result, as JSON text.
    Result,
    /// The run's console lines, joined with newlines.
    Logs,
}

impl HandleKind {
    pub fn as_str(self) -> &'static str {
        match self {
            HandleKind::Result => "result",
            HandleKind::Logs => "logs",
        }
    }
}

/// One handle a run made: its id (which names the run), what it holds and its size in bytes
/// of UTF-8 text. The text itself is in the host's blob store, scrubbed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HandleRecord {
    pub handle: String,
    pub kind: HandleKind,
    pub bytes: u64,
}

/// The stored record of a run (`runs/<id>.json`). The journal lives beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    pub id: RunId,
    pub status: RunStatus,
    pub created_ms: u64,
    pub updated_ms: u64,
    /// The prepared code (the body the sandbox runs), so a resume needs nothing else.
    pub body: String,
    pub notices: Vec<String>,
    /// For each line of `body`, the line of the model's text it came from, so an error raised
    /// while running points at what the model wrote.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub lines: Vec<u32>,
    pub seed: u64,
    pub clock_origin_ms: u64,
    pub attempts: u32,
    /// Calls that went past the journal, over all attempts (what `maxCalls` counts).
    pub live_calls: u32,
    #[serde(default)]
    pub pending: Vec<PendingCall>,
    #[serde(default)]
    pub decisions: Vec<DecisionRecord>,
    #[serde(default)]
    pub output: RunOutput,
    /// The profile that started the run; only the same profile resumes or cancels it.
    #[serde(default = "default_profile", skip_serializing_if = "is_default_profile")]
    pub profile: String,
}

/// The profile a run belongs to when its record names none.
pub const DEFAULT_PROFILE: &str = "default";

fn default_profile() -> String {
    DEFAULT_PROFILE.to_owned()
}

fn is_default_profile(profile: &str) -> bool {
    profile == DEFAULT_PROFILE
}

impl RunRecord {
    /// A tool that a person allowed "for this run" (or "always", which covers the run too), at
    /// the contract they saw.
    pub fn allowed_for_run(&self, address: &str, contract: &ContractDigest) -> bool {
        self.decisions.iter().any(|d| {
            matches!(d.choice, Choice::Run | Choice::Always)
                && d.address == address
                && &d.contract == contract
        })
    }

    /// The approvals the run waits for that nobody has decided yet.
    pub fn undecided(&self) -> impl Iterator<Item = &PendingCall> {
        self.pending.iter().filter(|p| {
            p.kind == PendingKind::Approval && !self.decisions.iter().any(|d| d.pending_id == p.id)
        })
    }

    /// Whether an undecided approval of the run is past its expiry at `now_ms`.
    pub fn has_expired_wait(&self, now_ms: u64) -> bool {
        self.undecided().next().is_some() && self.pending.iter().any(|p| now_ms >= p.expires_ms)
    }
}

/// One line of a run's journal (`runs/<id>.journal.jsonl`).
///
/// `Call` is written (durably) before the upstream request leaves; `Outcome` after it settles.
/// A `Call` without an `Outcome` means the hub stopped while the call was in flight: the call
/// is never made again, and the guest gets an `outcome_unknown` error instead.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum JournalEntry {
    Call {
        seq: u32,
        address: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        connection: Option<String>,
        digest: String,
        at_ms: u64,
    },
    Outcome {
        seq: u32,
        #[serde(flatten)]
        outcome: CallOutcome,
        ms: u64,
    },
}

impl JournalEntry {
    pub fn seq(&self) -> u32 {
        match self {
            JournalEntry::Call { seq, .. } | JournalEntry::Outcome { seq, .. } => *seq,
        }
    }
}

/// What a call returned to the guest, scrubbed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "status", rename_all = "snake_case")]
pub enum CallOutcome {
    Ok { value: Value },
    Err { failure: ToolFailure },
}

impl CallOutcome {
    pub fn is_ok(&self) -> bool {
        matches!(self, CallOutcome::Ok { .. })
    }
}

/// The digest that identifies a call for replay: its address, connection and arguments in
/// canonical JSON.
pub fn call_digest(address: &str, connection: Option<&str>, args: &Value) -> String {
    // The canonical form of `{"address", "args", "connection"}` (members already in canonical
    // order), written in place: every call pays for this, and cloning `args` into an object
    // first cost more than the hash.
    let mut canonical = String::with_capacity(64);
    canonical.push_str("{\"address\":");
    canonical::write_string(address, &mut canonical);
    canonical.push_str(",\"args\":");
    canonical::write_value(args, &mut canonical);
    canonical.push_str(",\"connection\":");
    match connection {
        Some(name) => canonical::write_string(name, &mut canonical),
        None => canonical.push_str("null"),
    }
    canonical.push('}');
    // Into a buffer: `hex::encode` builds the text a character at a time.
    let mut text = [0u8; 64];
    hex::encode_to_slice(Sha256::digest(canonical.as_bytes()), &mut text).expect("32 bytes are 64 digits");
    std::str::from_utf8(&text).expect("hex digits are ASCII").to_owned()
}

/// A call as the journal knows it, gathered from its entries.
#[derive(Debug, Clone, PartialEq)]
pub struct JournaledCall {
    pub seq: u32,
    pub address: String,
    pub digest: String,
    pub outcome: Option<CallOutcome>,
    pub ms: u64,
}

/// Folds journal lines into calls by sequence number. Later duplicates of a line (a retried
/// append) are ignored.
pub fn fold_journal(entries: &[JournalEntry]) -> BTreeMap<u32, JournaledCall> {
    let mut calls = BTreeMap::new();
    for entry in entries {
        match entry {
            JournalEntry::Call { seq, address, digest, .. } => {
                calls.entry(*seq).or_insert_with(|| JournaledCall {
                    seq: *seq,
                    address: address.clone(),
                    digest: digest.clone(),
                    outcome: None,
                    ms: 0,
                });
            }
            JournalEntry::Outcome { seq, outcome, ms } => {
                if let Some(call) = calls.get_mut(seq)
                    && call.outcome.is_none()
                {
                    call.outcome = Some(outcome.clone());
                    call.ms = *ms;
                }
            }
        }
    }
    calls
}

/// The calls of a journal as the envelope lists them, in order.
pub fn call_summaries(entries: &[JournalEntry]) -> Vec<CallSummary> {
    fold_journal(entries).into_values().map(|c| c.summary()).collect()
}

impl JournaledCall {
    /// The call as the envelope lists it.
    pub fn summary(&self) -> CallSummary {
        CallSummary {
            address: self.address.clone(),
            ok: self.outcome.as_ref().is_some_and(CallOutcome::is_ok),
            ms: self.ms,
        }
    }
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

/// One call the run made, for the envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CallSummary {
    pub address: String,
    pub ok: bool,
    pub ms: u64,
}

/// What the engine reports of one `execute`, `resume` or `cancel`, for the surface to render
/// as an envelope.
#[derive(Debug, Clone, PartialEq)]
#[expect(
    clippy::large_enum_variant,
    reason = "one report per execute, nearly always a run: boxing it saves nothing"
)]
pub enum RunReport {
    /// The run as it was stored after this step, with the calls its journal holds.
    Run { record: RunRecord, calls: Vec<CallSummary> },
    /// `resume` or `cancel` named a run the store does not hold.
    UnknownRun(String),
    /// The store could not be read or written.
    StoreFailed { run_id: String, message: String },
}

impl RunReport {
    /// The run's id as the caller gave it or the engine made it.
    pub fn run_id(&self) -> &str {
        match self {
            RunReport::Run { record, .. } => record.id.as_str(),
            RunReport::UnknownRun(id) | RunReport::StoreFailed { run_id: id, .. } => id,
        }
    }

    /// The stored run, when there is one.
    pub fn record(&self) -> Option<&RunRecord> {
        match self {
            RunReport::Run { record, .. } => Some(record),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    /// The digest is written in place for speed; it must stay the digest of the canonical
    /// object, or journals written before would diverge on resume.
    #[test]
    fn call_digest_is_the_digest_of_the_canonical_object() {
        let cases = [
            ("notes.list", None, json!({})),
            (
                "notes.add",
                Some("work"),
                json!({"text": "a \"quoted\"\nline", "z": 1, "a": [1.5, null, true]}),
            ),
            ("a.b", Some("ünïcode"), json!({"é": {"y": 2, "x": 1}, "\u{1}": "\u{7f}"})),
            ("a.b", None, json!([1, 2, 3])),
        ];
        for (address, connection, args) in cases {
            let object = json!({"address": address, "connection": connection, "args": args});
            let expected = hex::encode(Sha256::digest(canonical::to_string(&object).as_bytes()));
            assert_eq!(call_digest(address, connection, &args), expected, "{object}");
        }
    }
}

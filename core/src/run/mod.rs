//! Runs: one `execute` request's lifecycle — its record, its journal, and the engine that
//! drives sandbox attempts, decides every call and replays the journal on resume.
//!
//! A run can take several attempts. Each attempt re-runs the code from the start with the same
//! seed and clock; calls the journal already holds return their recorded outcome without
//! touching upstream, so a resumed run never repeats a call.

mod engine;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::approval::{DecisionRecord, PendingCall};
use crate::canonical;
use crate::sandbox::ToolFailure;
pub use engine::{Engine, Lookup, PolicyView, Verdict};

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
}

/// The stored record of a run (`runs/<id>.json`). The journal lives beside it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRecord {
    pub id: String,
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
}

impl RunRecord {
    /// A tool that a person allowed "for this run" (or "always", which covers the run too), at
    /// the contract they saw.
    pub fn allowed_for_run(&self, address: &str, contract: &crate::manifest::ContractDigest) -> bool {
        use crate::approval::Choice;
        self.decisions.iter().any(|d| {
            matches!(d.choice, Choice::Run | Choice::Always)
                && d.address == address
                && &d.contract == contract
        })
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
    hex::encode(Sha256::digest(canonical.as_bytes()))
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
pub fn fold_journal(entries: &[JournalEntry]) -> std::collections::BTreeMap<u32, JournaledCall> {
    let mut calls = std::collections::BTreeMap::new();
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

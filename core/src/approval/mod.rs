//! Approvals: calls waiting for a person, the four choices, and the ONE function that records a
//! decision.
//!
//! Nothing reachable from MCP calls [`record_decision`]; only host code that handles a person's
//! input does (the CLI, the approval page, an elicitation answer checked against state the hub
//! signed). A test over the source tree holds that line.

pub mod rounds;
pub mod state;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::manifest::ContractDigest;
use crate::run::RunRecord;

/// A person's answer to one pending call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Choice {
    /// This call runs.
    Once,
    /// This tool runs for the rest of the run.
    Run,
    /// A policy rule pinned to the tool's current contract.
    Always,
    /// The call fails with `approval_denied` inside the code.
    Deny,
}

impl Choice {
    pub fn parse(raw: &str) -> Option<Choice> {
        match raw {
            "once" => Some(Choice::Once),
            "run" => Some(Choice::Run),
            "always" => Some(Choice::Always),
            "deny" => Some(Choice::Deny),
            _ => None,
        }
    }
}

/// Where a decision came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Channel {
    Cli,
    Page,
    Elicitation,
    Dashboard,
}

/// What a run waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PendingKind {
    /// A person must decide a call.
    Approval,
    /// A connection needs a credential first (`hub auth`).
    Connection,
}

/// One call waiting for a person.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingCall {
    pub id: String,
    pub kind: PendingKind,
    pub seq: u32,
    pub address: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connection: Option<String>,
    /// The first sentence of what the tool says it does.
    pub summary: String,
    /// Why it asks, in words a person reads.
    pub reason: String,
    /// The arguments, redacted and capped.
    pub preview: String,
    pub call_digest: String,
    pub contract: ContractDigest,
    pub created_ms: u64,
    pub expires_ms: u64,
}

/// A recorded decision.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DecisionRecord {
    pub pending_id: String,
    pub choice: Choice,
    pub channel: Channel,
    pub seq: u32,
    pub address: String,
    pub call_digest: String,
    pub contract: ContractDigest,
    pub at_ms: u64,
}

/// Why a decision was not recorded.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DecisionError {
    #[error("run `{run}` has no pending call `{pending}`")]
    UnknownPending { run: String, pending: String },
    #[error("pending call `{0}` was already decided")]
    AlreadyDecided(String),
    #[error("pending call `{0}` expired before a decision")]
    Expired(String),
    #[error("pending call `{0}` waits for a credential, not a decision: run `capabilities hub auth`")]
    NotAnApproval(String),
    #[error("run `{0}` is not waiting for a decision")]
    NotWaiting(String),
}

/// A decision that also asks the host to persist a policy rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlwaysRule {
    pub address: String,
    pub contract: ContractDigest,
}

/// Records a person's decision on one pending call of `run`. The only function that does.
///
/// Returns the rule to persist when the choice is [`Choice::Always`].
pub fn record_decision(
    run: &mut RunRecord,
    pending_id: &str,
    choice: Choice,
    channel: Channel,
    now_ms: u64,
) -> Result<Option<AlwaysRule>, DecisionError> {
    if run.status != crate::run::RunStatus::AwaitingInput {
        return Err(DecisionError::NotWaiting(run.id.clone()));
    }
    let pending = run.pending.iter().find(|p| p.id == pending_id).ok_or_else(|| {
        DecisionError::UnknownPending { run: run.id.clone(), pending: pending_id.to_owned() }
    })?;
    if pending.kind != PendingKind::Approval {
        return Err(DecisionError::NotAnApproval(pending_id.to_owned()));
    }
    if run.decisions.iter().any(|d| d.pending_id == pending_id) {
        return Err(DecisionError::AlreadyDecided(pending_id.to_owned()));
    }
    if now_ms >= pending.expires_ms {
        return Err(DecisionError::Expired(pending_id.to_owned()));
    }
    let record = DecisionRecord {
        pending_id: pending_id.to_owned(),
        choice,
        channel,
        seq: pending.seq,
        address: pending.address.clone(),
        call_digest: pending.call_digest.clone(),
        contract: pending.contract,
        at_ms: now_ms,
    };
    let rule = (choice == Choice::Always)
        .then(|| AlwaysRule { address: pending.address.clone(), contract: pending.contract });
    run.decisions.push(record);
    run.updated_ms = now_ms;
    Ok(rule)
}

/// Whether every approval the run waits for has a decision.
pub fn all_decided(run: &RunRecord) -> bool {
    run.pending
        .iter()
        .filter(|p| p.kind == PendingKind::Approval)
        .all(|p| run.decisions.iter().any(|d| d.pending_id == p.id))
}

/// Keys whose values are never shown to a person or the model, whatever they hold.
const SENSITIVE_KEYS: &[&str] = &[
    "password",
    "passwd",
    "secret",
    "token",
    "apikey",
    "api_key",
    "authorization",
    "cookie",
    "credential",
    "private_key",
];

/// The arguments as a person sees them in an approval: sensitive-looking keys masked, the
/// whole capped at `max_bytes` (on a character boundary, marked with `…`).
pub fn preview_arguments(args: &Value, max_bytes: usize) -> String {
    let redacted = redact(args);
    let text = serde_json::to_string_pretty(&redacted).unwrap_or_else(|_| "{}".to_owned());
    if text.len() <= max_bytes {
        return text;
    }
    let mut end = max_bytes.saturating_sub(3);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

fn redact(value: &Value) -> Value {
    match value {
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let lower = k.to_ascii_lowercase().replace('-', "_");
                    if SENSITIVE_KEYS.iter().any(|s| lower.contains(s)) {
                        (k.clone(), Value::String("[redacted]".to_owned()))
                    } else {
                        (k.clone(), redact(v))
                    }
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(redact).collect()),
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::json;

    use super::*;

    #[test]
    fn previews_mask_sensitive_keys_and_cap() {
        let args =
            json!({"title": "hi", "apiKey": "abc", "nested": {"Authorization": "Bearer x", "ok": [1, 2]}});
        expect![[r#"
            {
              "title": "hi",
              "apiKey": "[redacted]",
              "nested": {
                "Authorization": "[redacted]",
                "ok": [
                  1,
                  2
                ]
              }
            }"#]]
        .assert_eq(&preview_arguments(&args, 4096));
        let long = json!({"text": "é".repeat(5000)});
        let p = preview_arguments(&long, 100);
        assert!(p.len() <= 100 && p.ends_with('…'));
    }
}

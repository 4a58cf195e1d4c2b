//! Approvals: calls waiting for a person, the four choices, and the ONE function that records a
//! decision.
//!
//! Nothing reachable from MCP calls [`record_decision`]; only host code that handles a person's
//! input does (the CLI, the approval page, an elicitation answer checked against state the hub
//! signed). A test over the source tree holds that line.

pub mod page;
pub mod rounds;
pub mod state;

use serde_json::Value;

use crate::manifest::ContractDigest;
pub use crate::pending::{Channel, Choice, DecisionRecord, PendingCall, PendingKind};
use crate::record::{RunRecord, RunStatus};

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
    #[error("pending call `{0}` waits for a credential, not a decision")]
    NotAnApproval(String),
    #[error("run `{0}` is not waiting for a decision")]
    NotWaiting(String),
}

/// A decision that also asks the host to persist a policy rule.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlwaysRule {
    pub address: String,
    pub contract: ContractDigest,
    /// The connection the call was made on; the rule covers that one.
    pub connection: Option<String>,
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
    if run.status != RunStatus::AwaitingInput {
        return Err(DecisionError::NotWaiting(run.id.to_string()));
    }
    let pending = run.pending.iter().find(|p| p.id == pending_id).ok_or_else(|| {
        DecisionError::UnknownPending { run: run.id.to_string(), pending: pending_id.to_owned() }
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
    let rule = (choice == Choice::Always).then(|| AlwaysRule {
        address: pending.address.clone(),
        contract: pending.contract,
        connection: pending.connection.clone(),
    });
    run.decisions.push(record);
    run.updated_ms = now_ms;
    Ok(rule)
}

/// Whether every approval the run waits for has a decision.
pub fn all_decided(run: &RunRecord) -> bool {
    run.undecided().next().is_none()
}

/// What recording a person's answers did to a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Recorded {
    /// The calls decided, with the choice made for each, in the order given.
    pub decided: Vec<(PendingCall, Choice)>,
    /// Rules to add to the policy for "always" choices.
    pub rules: Vec<AlwaysRule>,
    /// Whether every approval the run waits for now has a decision, so it can resume.
    pub all_decided: bool,
}

/// Records every one of a person's `decisions` (pending call id, choice) on `run` at `now_ms`,
/// through [`record_decision`]. On an error the caller must not save `run`: either every
/// decision is recorded or none is. Each hub's recorder holds the run's lock around this, then
/// saves the run and adds the rules to its policy.
pub fn record_all(
    run: &mut RunRecord,
    decisions: &[(String, Choice)],
    channel: Channel,
    now_ms: u64,
) -> Result<Recorded, DecisionError> {
    let mut decided = Vec::with_capacity(decisions.len());
    let mut rules = Vec::new();
    for (pending_id, choice) in decisions {
        if let Some(rule) = record_decision(run, pending_id, *choice, channel, now_ms)? {
            rules.push(rule);
        }
        // `record_decision` found the call, so it is there.
        if let Some(pending) = run.pending.iter().find(|p| &p.id == pending_id) {
            decided.push((pending.clone(), *choice));
        }
    }
    Ok(Recorded { decided, rules, all_decided: all_decided(run) })
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

//! Calls waiting for a person and the decisions people made on them: the data a run record
//! holds about asking. A leaf, so the run record, the approval recorder and the surface share
//! these types without importing one another.

use serde::{Deserialize, Serialize};

use crate::manifest::ContractDigest;

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
    /// The hosted hub's admin endpoint (stored as `dashboard` by earlier versions).
    #[serde(alias = "dashboard")]
    Admin,
    /// The hosted hub's review inbox, behind the person's sign-in.
    Inbox,
}

/// What a run waits for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PendingKind {
    /// A person must decide a call.
    Approval,
    /// A connection needs a credential first.
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

//! `capabilities hub runs show <id> --receipts`: one receipt per call of a run, built from its
//! journal (what was called, when, how it ended), its decisions, and what the store says about
//! the source now (the lock file's package, or its URL or command; the tool's contract digest).
//! There is no second log: a receipt is a reading of the journal.
//!
//! The input digest is the journal's call digest (SHA-256 over the canonical address,
//! arguments and connection); the output digest is SHA-256 over the canonical JSON of the
//! outcome as it was journaled, scrubbed.

use std::fmt::Write as _;

use capabilities_core::canonical;
use capabilities_core::pending::Choice;
use capabilities_core::record::{CallOutcome, JournalEntry, RunRecord};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::config::HubConfig;
use crate::packages::PackageLock;
use crate::store::Store;
use crate::upstream::SourceTransport;

/// One call's receipt.
pub(super) struct Receipt {
    seq: u32,
    address: String,
    connection: Option<String>,
    /// Who answered, as the store names it now.
    source: Value,
    contract: Option<String>,
    input: String,
    output: Option<String>,
    at_ms: u64,
    ms: Option<u64>,
    decision: String,
    status: String,
}

/// The receipts of `record`'s calls, in journal order.
pub(super) fn build(store: &Store, record: &RunRecord, journal: &[JournalEntry]) -> Vec<Receipt> {
    let config = HubConfig::load(store);
    let lock = crate::packages::load(store).unwrap_or_default();
    let mut receipts: Vec<Receipt> = Vec::new();
    for entry in journal {
        match entry {
            JournalEntry::Call { seq, address, connection, digest, at_ms } => {
                let decision = match record.decisions.iter().find(|d| d.seq == *seq) {
                    Some(d) => match d.choice {
                        Choice::Once => "allowed once by a person",
                        Choice::Run => "allowed for the run by a person",
                        Choice::Always => "allowed always by a person",
                        Choice::Deny => "denied by a person",
                    }
                    .to_owned(),
                    None => "by policy, no person asked".to_owned(),
                };
                let (source, contract) = identity(&config, &lock, address);
                receipts.push(Receipt {
                    seq: *seq,
                    address: address.clone(),
                    connection: connection.clone(),
                    source,
                    contract,
                    input: format!("sha256:{digest}"),
                    output: None,
                    at_ms: *at_ms,
                    ms: None,
                    decision,
                    status: "unknown: the hub stopped while it was in flight".to_owned(),
                });
            }
            JournalEntry::Outcome { seq, outcome, ms } => {
                let Some(receipt) = receipts.iter_mut().rev().find(|r| r.seq == *seq) else { continue };
                let value = serde_json::to_value(outcome).unwrap_or(Value::Null);
                let digest = Sha256::digest(canonical::to_string(&value).as_bytes());
                receipt.output = Some(format!("sha256:{}", hex::encode(digest)));
                receipt.ms = Some(*ms);
                receipt.status = match outcome {
                    CallOutcome::Ok { .. } => "ok".to_owned(),
                    CallOutcome::Err { failure } => format!("failed: {}", failure.code),
                };
            }
        }
    }
    receipts
}

/// The source of `address` as the store describes it now, and the tool's contract digest.
fn identity(config: &HubConfig, lock: &PackageLock, address: &str) -> (Value, Option<String>) {
    let namespace = address.split('.').next().unwrap_or(address);
    let Some((record, manifest, _)) = config.sources.iter().find(|(r, _, _)| r.spec.namespace == namespace)
    else {
        return (json!({ "kind": "removed", "namespace": namespace }), None);
    };
    let contract = manifest.as_ref().and_then(|m| {
        m.tools.iter().find(|t| m.address(t).to_string() == address).map(|t| t.digest.to_string())
    });
    let source = match (lock.packages.get(namespace), &record.spec.transport) {
        (Some(p), _) => json!({
            "kind": "package",
            "package": p.reference(),
            "integrity": p.integrity,
            "signatures": p.signatures.status.as_str(),
            "provenance": p.provenance.status.as_str(),
        }),
        (None, SourceTransport::Http { url, .. }) => json!({ "kind": "http", "url": url }),
        (None, SourceTransport::OpenApi(api)) => json!({ "kind": "api", "url": api.base_url }),
        (None, _) => json!({
            "kind": "command",
            "command": crate::sources::command_line(&record.spec).unwrap_or_default(),
        }),
    };
    (source, contract)
}

impl Receipt {
    pub(super) fn to_json(&self) -> Value {
        json!({
            "seq": self.seq,
            "address": self.address,
            "connection": self.connection,
            "source": self.source,
            "contract": self.contract,
            "input": self.input,
            "output": self.output,
            "atMs": self.at_ms,
            "ms": self.ms,
            "decision": self.decision,
            "status": self.status,
        })
    }

    pub(super) fn render(&self) -> String {
        let mut text = String::new();
        let on = self.connection.as_deref().map(|c| format!(" (connection {c})")).unwrap_or_default();
        let _ = writeln!(text, "  #{} {}{on}: {}", self.seq, self.address, self.status);
        let field = |key: &str| self.source.get(key).and_then(Value::as_str).unwrap_or("");
        let source = match field("kind") {
            "package" => format!(
                "{} {} (signatures {}, provenance {})",
                field("package"),
                field("integrity"),
                field("signatures"),
                field("provenance")
            ),
            "http" | "api" => field("url").to_owned(),
            "command" => format!("command {}", field("command")),
            _ => "a source removed since".to_owned(),
        };
        let _ = writeln!(text, "      source    {source}");
        if let Some(contract) = &self.contract {
            let _ = writeln!(text, "      contract  {contract}");
        }
        let _ = writeln!(text, "      input     {}", self.input);
        let _ = writeln!(text, "      output    {}", self.output.as_deref().unwrap_or("none"));
        let took = self.ms.map(|ms| format!(", {ms} ms")).unwrap_or_default();
        let _ = writeln!(
            text,
            "      at        {}{took}; {}",
            capabilities_core::approval::state::utc_time(self.at_ms),
            self.decision
        );
        text
    }
}

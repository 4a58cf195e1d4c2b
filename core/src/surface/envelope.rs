//! The envelope `execute` returns: where the run stands, its result or error, logs, the calls it
//! made and what it waits for — with result and logs held to one inline budget.

use serde::Serialize;
use serde_json::Value;

use crate::handles;
use crate::limits::Limits;
use crate::pending::PendingKind;
pub use crate::record::CallSummary;
use crate::record::{HandleKind, HandleRecord, RunError, RunRecord, RunReport, RunStatus};
use crate::wording::HostWords;

/// Calls listed in one envelope; the rest are counted in a notice.
pub const MAX_LISTED_CALLS: usize = 100;

/// Something the run waits for, as the model sees it. Never a URL or a token.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PendingSummary {
    pub id: String,
    pub kind: PendingKind,
    pub address: String,
    pub summary: String,
    pub message: String,
}

/// Which channels were cut to fit the inline budget.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct Truncated {
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub result: bool,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub logs: bool,
}

/// A result or logs kept whole because they did not fit inline: read them in slices with
/// `hub.read(handle, { offset, limit })` from code, or whole at `uri` as an MCP resource.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct HandleSummary {
    pub handle: String,
    pub kind: HandleKind,
    /// Length of the kept text in bytes (UTF-8): JSON for a result, lines joined by `\n` for logs.
    pub bytes: u64,
    pub uri: String,
}

impl HandleSummary {
    fn of(record: &HandleRecord) -> HandleSummary {
        HandleSummary {
            handle: record.handle.clone(),
            kind: record.kind,
            bytes: record.bytes,
            uri: handles::uri(&record.handle),
        }
    }

    /// The notice that tells the model what the handle holds and how to read it.
    fn notice(&self, limits: &Limits) -> String {
        let what = match self.kind {
            HandleKind::Result => "the result is",
            HandleKind::Logs => "the logs are",
        };
        format!(
            "{what} {} bytes, over the {} returned inline: the whole is handle {}; read it in a later execute \
             with hub.read(\"{}\", {{ offset: 0, limit: 1048576 }}) (bytes; `next` is the next offset)",
            self.bytes, limits.inline_result_bytes, self.handle, self.handle
        )
    }
}

/// A handle (or a part of one) as an MCP `resource_link` content item.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceLink {
    pub uri: String,
    pub name: String,
    pub description: String,
    pub mime_type: &'static str,
    /// The length in bytes of what the link reads (the part, when the handle has parts).
    pub bytes: u64,
}

/// Where a run stands, as the envelope says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum EnvelopeStatus {
    Completed,
    Failed,
    AwaitingApproval,
    AwaitingConnection,
    Cancelled,
    Running,
}

impl EnvelopeStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            EnvelopeStatus::Completed => "completed",
            EnvelopeStatus::Failed => "failed",
            EnvelopeStatus::AwaitingApproval => "awaiting_approval",
            EnvelopeStatus::AwaitingConnection => "awaiting_connection",
            EnvelopeStatus::Cancelled => "cancelled",
            EnvelopeStatus::Running => "running",
        }
    }

    /// Whether the run waits for a person (a decision or a credential).
    pub fn is_waiting(self) -> bool {
        matches!(self, EnvelopeStatus::AwaitingApproval | EnvelopeStatus::AwaitingConnection)
    }
}

impl PartialEq<&str> for EnvelopeStatus {
    fn eq(&self, other: &&str) -> bool {
        self.as_str() == *other
    }
}

impl PartialEq<str> for EnvelopeStatus {
    fn eq(&self, other: &str) -> bool {
        self.as_str() == other
    }
}

impl std::fmt::Display for EnvelopeStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The result of `execute`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Envelope {
    pub run_id: String,
    pub status: EnvelopeStatus,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<RunError>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub logs: Vec<String>,
    pub calls: Vec<CallSummary>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<PendingSummary>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub truncated: Option<Truncated>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub handles: Vec<HandleSummary>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub notices: Vec<String>,
}

impl Envelope {
    /// The envelope of what the engine reported, in the host's words.
    pub fn render(report: RunReport, limits: &Limits, words: &HostWords) -> Envelope {
        match report {
            RunReport::Run { record, calls } => Envelope::from_run(&record, calls, limits, words),
            RunReport::UnknownRun(run_id) => Envelope::unknown_run(&run_id),
            RunReport::StoreFailed { run_id, message } => Envelope::store_failure(&run_id, &message, words),
        }
    }

    /// The envelope of `run`; a waiting call's message names where a person can decide without
    /// a prompt.
    pub fn from_run(
        run: &RunRecord,
        mut calls: Vec<CallSummary>,
        limits: &Limits,
        words: &HostWords,
    ) -> Envelope {
        let later = words.decide(&run.id);
        let mut notices = run.notices.clone();
        if calls.len() > MAX_LISTED_CALLS {
            let hidden = calls.len() - MAX_LISTED_CALLS;
            calls.drain(..hidden);
            notices.push(format!("{hidden} earlier calls are not listed"));
        }
        let status = match run.status {
            RunStatus::Completed => EnvelopeStatus::Completed,
            RunStatus::Failed | RunStatus::Expired => EnvelopeStatus::Failed,
            RunStatus::Cancelled => EnvelopeStatus::Cancelled,
            RunStatus::Running => EnvelopeStatus::Running,
            RunStatus::AwaitingInput => {
                if run.pending.iter().any(|p| p.kind == PendingKind::Approval) {
                    EnvelopeStatus::AwaitingApproval
                } else {
                    EnvelopeStatus::AwaitingConnection
                }
            }
        };
        let pending = run
            .pending
            .iter()
            .map(|p| PendingSummary {
                id: p.id.clone(),
                kind: p.kind,
                address: p.address.clone(),
                summary: p.summary.clone(),
                message: match p.kind {
                    PendingKind::Approval => format!(
                        "needs a person's approval ({}). Tell the user; they can decide in the prompt or page \
                         the hub gave them, or with {later}. Then call execute with {{\"resume\": \"{}\"}}.",
                        p.reason, run.id
                    ),
                    PendingKind::Connection => format!(
                        "{}. Tell the user, then call execute with {{\"resume\": \"{}\"}}. Never ask for the credential in chat.",
                        p.reason, run.id
                    ),
                },
            })
            .collect();
        let (result, logs, truncated) =
            fit_budget(run.output.result.as_ref(), &run.output.logs, limits.inline_result_bytes);
        let handles: Vec<HandleSummary> = run.output.handles.iter().map(HandleSummary::of).collect();
        let kept = |kind| handles.iter().any(|h| h.kind == kind);
        let truncated = Truncated {
            result: truncated.result || kept(HandleKind::Result),
            logs: truncated.logs || run.output.logs_truncated || kept(HandleKind::Logs),
        };
        notices.extend(handles.iter().map(|h| h.notice(limits)));
        Envelope {
            run_id: run.id.to_string(),
            status,
            result,
            error: run.output.error.clone(),
            logs,
            calls,
            pending,
            truncated: (truncated.result || truncated.logs).then_some(truncated),
            handles,
            notices,
        }
    }

    pub fn unknown_run(run_id: &str) -> Envelope {
        Envelope::failure(
            run_id,
            RunError::new(
                "unknown_run",
                format!("there is no run `{}`", clip(run_id, 80)),
                Some("resume takes the runId of an earlier execute; runs are kept for 7 days"),
            ),
        )
    }

    pub fn store_failure(run_id: &str, message: &str, words: &HostWords) -> Envelope {
        Envelope::failure(
            run_id,
            RunError::new(
                "store_failed",
                format!("the hub could not read or write its store: {message}"),
                Some(&format!("the user can run {}", words.diagnose)),
            ),
        )
    }

    pub fn failure(run_id: &str, error: RunError) -> Envelope {
        Envelope {
            run_id: run_id.to_owned(),
            status: EnvelopeStatus::Failed,
            result: None,
            error: Some(error),
            logs: Vec::new(),
            calls: Vec::new(),
            pending: Vec::new(),
            truncated: None,
            handles: Vec::new(),
            notices: Vec::new(),
        }
    }

    /// The MCP `resource_link`s of the handles, for the content beside the envelope's text: one
    /// per handle, or one per part of a handle too large for one `resources/read`.
    pub fn resource_links(&self) -> Vec<ResourceLink> {
        let mut links = Vec::new();
        for h in &self.handles {
            let parts = handles::part_uris(&h.handle, h.bytes);
            let count = parts.len();
            for (i, uri) in parts.into_iter().enumerate() {
                let from = i as u64 * handles::RESOURCE_PART_BYTES;
                let bytes = h.bytes.saturating_sub(from).min(handles::RESOURCE_PART_BYTES);
                let part = if count > 1 { format!("part {} of {count} of ", i + 1) } else { String::new() };
                let description =
                    format!("{part}the {} of run {} ({} bytes)", h.kind.as_str(), self.run_id, h.bytes);
                let name =
                    if count > 1 { format!("{} ({}/{count})", h.handle, i + 1) } else { h.handle.clone() };
                links.push(ResourceLink {
                    uri,
                    name,
                    description,
                    mime_type: handles::mime_type(h.kind),
                    bytes,
                });
            }
        }
        links
    }

    /// The envelope as JSON.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// One compact line of JSON, the text form clients that ignore structured content read.
    pub fn to_line(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// Fits result and logs into `budget` bytes of JSON together (see [`handles::fit`]).
fn fit_budget(
    result: Option<&Value>,
    logs: &[String],
    budget: usize,
) -> (Option<Value>, Vec<String>, Truncated) {
    let json = result.map(|v| serde_json::to_string(v).unwrap_or_default());
    let fit = handles::fit(json.as_deref(), logs, budget, None);
    let truncated = Truncated { result: fit.result_cut, logs: fit.logs_cut };
    let result = match fit.preview {
        Some(preview) => Some(Value::String(preview)),
        None => result.cloned(),
    };
    (result, fit.logs, truncated)
}

fn clip(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        return s.to_owned();
    }
    let cut: String = s.chars().take(max_chars).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn budget_is_shared_and_marked() {
        let big = json!({"text": "x".repeat(40_000)});
        let logs: Vec<String> = (0..1000).map(|i| format!("line {i}")).collect();
        let (result, kept, t) = fit_budget(Some(&big), &logs, 24 * 1024);
        assert!(t.result && t.logs);
        let total =
            serde_json::to_string(&result).unwrap().len() + kept.iter().map(|l| l.len() + 3).sum::<usize>();
        assert!(total <= 24 * 1024, "{total}");
        let (result, kept, t) = fit_budget(Some(&json!(1)), &["a".to_owned()], 24 * 1024);
        assert_eq!((result, kept.len(), t), (Some(json!(1)), 1, Truncated::default()));
    }

    #[test]
    fn the_budget_holds_for_text_that_grows_when_escaped() {
        // Quotes double and control characters grow sixfold once written as JSON strings.
        for text in ["\"".repeat(50_000), "\u{1}".repeat(50_000), "é\\".repeat(20_000)] {
            let result = json!({"text": text});
            let logs: Vec<String> = (0..200).map(|i| format!("{i} {}", &text[..300])).collect();
            let (result, kept, t) = fit_budget(Some(&result), &logs, 24 * 1024);
            assert!(t.result && t.logs);
            let written =
                serde_json::to_string(&result).unwrap().len() + serde_json::to_string(&kept).unwrap().len();
            assert!(written <= 24 * 1024, "{written} bytes written for a 24 KiB budget");
            assert!(written > 20 * 1024, "the budget is used, not wasted: {written}");
        }
    }
}

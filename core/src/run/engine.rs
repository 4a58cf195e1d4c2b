//! The run engine: starts and resumes runs, and implements the sandbox bridge where every tool
//! call is decided, journaled and replayed.
//!
//! Per call, in order: replay (a journaled call returns its recorded outcome) → policy (deny
//! never touches a credential) → approval (ask without a standing decision pauses the run) →
//! secret resolution → upstream → scrub → journal → result into the guest.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::poll_fn;
use std::task::{Poll, Waker};

use serde_json::Value;

use super::{
    CallOutcome, JournalEntry, JournaledCall, RunError, RunOutput, RunRecord, RunStatus, call_digest,
    fold_journal,
};
use crate::address::ToolAddress;
use crate::approval::{self, Choice, PendingCall, PendingKind};
use crate::catalog::Catalog;
use crate::limits::Limits;
use crate::manifest::Tool;
use crate::policy::Effect;
use crate::ports::{
    Clock, Credentials, Entropy, RunStore, Secrets, SecretsError, Upstream, UpstreamError, UpstreamRequest,
};
use crate::sandbox::{
    Attempt, AttemptEnd, Bridge, GuestCall, GuestNamespace, GuestReply, LimitKind, Sandbox, ToolFailure,
};
use crate::scrub::Scrubber;
use crate::surface::envelope::{CallSummary, Envelope};
use crate::upstream::tool_result_value;

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
}

/// Everything a run needs, borrowed for the length of one `execute` or `resume`.
pub struct Engine<'a> {
    pub catalog: &'a Catalog,
    pub policy: &'a dyn PolicyView,
    pub lookup: &'a dyn Lookup,
    pub sandbox: &'a dyn Sandbox,
    pub upstream: &'a dyn Upstream,
    pub secrets: &'a dyn Secrets,
    pub store: &'a dyn RunStore,
    pub clock: &'a dyn Clock,
    pub entropy: &'a dyn Entropy,
    pub limits: Limits,
    /// How a person decides on a waiting run without a prompt, given its id, for the envelope's
    /// message: a CLI command locally, the admin endpoint on hosted.
    pub decide_later: &'a dyn Fn(&str) -> String,
}

impl Engine<'_> {
    /// Starts a run of `code`.
    pub async fn execute(&self, code: &str) -> Envelope {
        let now = self.clock.now_ms();
        let id = self.new_run_id();
        let mut seed_bytes = [0u8; 8];
        self.entropy.fill(&mut seed_bytes);
        let mut run = RunRecord {
            id,
            status: RunStatus::Running,
            created_ms: now,
            updated_ms: now,
            body: String::new(),
            notices: Vec::new(),
            lines: Vec::new(),
            seed: u64::from_le_bytes(seed_bytes),
            clock_origin_ms: now,
            attempts: 0,
            live_calls: 0,
            pending: Vec::new(),
            decisions: Vec::new(),
            output: RunOutput::default(),
        };
        match crate::code::prepare(code, self.limits.code_bytes) {
            Ok(prepared) => {
                run.body = prepared.body;
                run.notices = prepared.notices;
                run.lines = prepared.lines.to_vec();
            }
            Err(err) => {
                run.status = RunStatus::Failed;
                run.output.error = Some(code_error(&err));
                return self.finish(run, Vec::new()).await;
            }
        }
        // The attempt saves the record before the code runs; saving here too would only cost
        // another synced write.
        self.attempt(run).await
    }

    /// Continues a run after a person decided, or returns where it stands.
    pub async fn resume(&self, run_id: &str) -> Envelope {
        let run = match self.store.load_run(run_id).await {
            Ok(Some(run)) => run,
            Ok(None) => return Envelope::unknown_run(run_id),
            Err(err) => return Envelope::store_failure(run_id, &err.to_string()),
        };
        let now = self.clock.now_ms();
        match run.status {
            status if status.is_final() => self.envelope(&run).await,
            RunStatus::AwaitingInput => {
                let waiting = run.pending.iter().any(|p| {
                    p.kind == PendingKind::Approval && !run.decisions.iter().any(|d| d.pending_id == p.id)
                });
                if run.pending.iter().any(|p| now >= p.expires_ms) && waiting {
                    let mut run = run;
                    run.status = RunStatus::Expired;
                    run.output.error = Some(RunError::new(
                        "approval_expired",
                        "nobody decided the pending call in time",
                        Some("start the task again with a new execute"),
                    ));
                    return self.finish(run, Vec::new()).await;
                }
                if waiting {
                    return self.envelope(&run).await;
                }
                self.attempt(run).await
            }
            // A run left `running` by a hub that stopped: replay makes another attempt safe.
            _ => self.attempt(run).await,
        }
    }

    /// Cancels a run that has not ended. Calls already made stay made.
    pub async fn cancel(&self, run_id: &str) -> Envelope {
        match self.store.load_run(run_id).await {
            Ok(Some(mut run)) => {
                if !run.status.is_final() {
                    run.status = RunStatus::Cancelled;
                    run.pending.clear();
                    run.output.error = Some(RunError::new("cancelled", "the run was cancelled", None));
                    return self.finish(run, Vec::new()).await;
                }
                self.envelope(&run).await
            }
            Ok(None) => Envelope::unknown_run(run_id),
            Err(err) => Envelope::store_failure(run_id, &err.to_string()),
        }
    }

    fn new_run_id(&self) -> String {
        let mut bytes = [0u8; 8];
        self.entropy.fill(&mut bytes);
        format!("run_{}", hex::encode(bytes))
    }

    async fn attempt(&self, mut run: RunRecord) -> Envelope {
        let journal = match self.store.read_journal(&run.id).await {
            Ok(entries) => fold_journal(&entries),
            Err(err) => return Envelope::store_failure(&run.id, &err.to_string()),
        };
        run.attempts += 1;
        run.status = RunStatus::Running;
        let old_pending = std::mem::take(&mut run.pending);
        run.updated_ms = self.clock.now_ms();
        if let Err(err) = self.store.save_run(&run).await {
            return Envelope::store_failure(&run.id, &err.to_string());
        }
        let attempt = Attempt {
            body: run.body.clone(),
            namespaces: self
                .catalog
                .sources
                .iter()
                .map(|s| GuestNamespace {
                    name: s.manifest.namespace.to_string(),
                    tools: s.manifest.tools.iter().map(|t| t.ident.clone()).collect(),
                })
                .collect(),
            seed: run.seed,
            clock_origin_ms: run.clock_origin_ms as f64,
            limits: self.limits,
            log_budget_bytes: self.limits.inline_result_bytes,
        };
        let bridge = AttemptBridge {
            engine: self,
            run_id: run.id.clone(),
            calls: RefCell::new(CallList::from_journal(&journal)),
            run: RefCell::new(run),
            journal,
            old_pending,
            failure: RefCell::new(None),
            in_flight: Cell::new(0),
            waiters: RefCell::new(VecDeque::new()),
            secret_values: RefCell::new(Vec::new()),
        };
        let report = self.sandbox.run(attempt, &bridge).await;
        let AttemptBridge { run, failure, secret_values, calls, .. } = bridge;
        let mut run = run.into_inner();
        let secret_values = secret_values.into_inner();
        run.output =
            RunOutput { logs: report.logs, logs_truncated: report.logs_truncated, ..RunOutput::default() };
        if let Some(error) = failure.into_inner() {
            run.status = RunStatus::Failed;
            run.pending.clear();
            run.output.error = Some(error);
        } else {
            match report.end {
                AttemptEnd::Completed(value) => {
                    run.status = RunStatus::Completed;
                    run.output.result = value;
                }
                AttemptEnd::Suspended if !run.pending.is_empty() => run.status = RunStatus::AwaitingInput,
                AttemptEnd::Suspended => {
                    run.status = RunStatus::Failed;
                    run.output.error =
                        Some(RunError::new("internal", "the attempt paused with nothing pending", None));
                }
                AttemptEnd::Unserializable(what) => {
                    run.status = RunStatus::Failed;
                    run.output.error = Some(RunError::new(
                        "result_not_serializable",
                        format!("the returned value cannot be sent back as JSON: {what}"),
                        Some("return plain data: objects, arrays, strings, numbers, booleans, null"),
                    ));
                }
                AttemptEnd::Threw(err) => {
                    run.status = RunStatus::Failed;
                    let code = err.code.clone().unwrap_or_else(|| "uncaught_error".to_owned());
                    let hint = match code.as_str() {
                        "approval_denied" => {
                            Some("a person denied this call; do not retry it, tell the user")
                        }
                        "policy_denied" => {
                            Some("policy forbids this tool; pick another or ask the user to change policy")
                        }
                        _ => {
                            Some("catch errors around calls that may fail, or fix the code and run it again")
                        }
                    };
                    let at = thrown_at(err.stack.as_deref(), &run.lines)
                        .map(|line| format!(" (line {line})"))
                        .unwrap_or_default();
                    run.output.error =
                        Some(RunError::new(&code, format!("{}: {}{at}", err.name, err.message), hint));
                }
                AttemptEnd::Limit(kind) => {
                    run.status = RunStatus::Failed;
                    run.output.error = Some(limit_error(kind, &self.limits));
                }
                AttemptEnd::Stalled => {
                    run.status = RunStatus::Failed;
                    run.output.error = Some(RunError::new(
                        "stalled",
                        "the code waits on a promise that can never settle",
                        Some("make sure every promise you await is resolved or rejected"),
                    ));
                }
                AttemptEnd::Cancelled => {
                    run.status = RunStatus::Cancelled;
                    run.output.error = Some(RunError::new("cancelled", "the run was cancelled", None));
                }
                AttemptEnd::Internal(message) => {
                    run.status = RunStatus::Failed;
                    run.output.error = Some(RunError::new("internal", message, None));
                }
            }
        }
        if run.status != RunStatus::AwaitingInput {
            run.pending.clear();
        }
        self.finish_with(run, secret_values, Some(calls.into_inner().into_summaries())).await
    }

    /// Scrubs, saves and reports a run.
    async fn finish(&self, run: RunRecord, secret_values: Vec<String>) -> Envelope {
        self.finish_with(run, secret_values, None).await
    }

    /// [`Engine::finish`] with the run's calls when the caller already knows them.
    async fn finish_with(
        &self,
        mut run: RunRecord,
        secret_values: Vec<String>,
        calls: Option<Vec<CallSummary>>,
    ) -> Envelope {
        if !secret_values.is_empty() {
            match Scrubber::new(&secret_values) {
                Ok(scrubber) => {
                    if let Some(result) = run.output.result.as_mut() {
                        scrubber.scrub_json(result);
                    }
                    for line in &mut run.output.logs {
                        *line = scrubber.scrub_str(line).into_owned();
                    }
                    if let Some(error) = run.output.error.as_mut() {
                        error.message = scrubber.scrub_str(&error.message).into_owned();
                    }
                }
                // Calls refuse such values before they leave; should one get here anyway,
                // nothing the run produced is shown.
                Err(_) => {
                    run.output.result = None;
                    run.output.logs.clear();
                    run.output.error = Some(RunError::new(
                        "credential_unusable",
                        "the run's output was withheld: a credential it used cannot be scrubbed",
                        Some("set a longer value with `capabilities hub auth`"),
                    ));
                    if run.status == RunStatus::Completed {
                        run.status = RunStatus::Failed;
                    }
                }
            }
        }
        run.updated_ms = self.clock.now_ms();
        if let Err(err) = self.store.save_run(&run).await {
            return Envelope::store_failure(&run.id, &err.to_string());
        }
        match calls {
            Some(calls) => Envelope::from_run(&run, calls, &self.limits, &(self.decide_later)(&run.id)),
            None => self.envelope(&run).await,
        }
    }

    async fn envelope(&self, run: &RunRecord) -> Envelope {
        let calls = match self.store.read_journal(&run.id).await {
            Ok(entries) => fold_journal(&entries)
                .into_values()
                .map(|c| CallSummary {
                    address: c.address,
                    ok: c.outcome.as_ref().is_some_and(CallOutcome::is_ok),
                    ms: c.ms,
                })
                .collect(),
            Err(_) => Vec::new(),
        };
        Envelope::from_run(run, calls, &self.limits, &(self.decide_later)(&run.id))
    }
}

fn code_error(err: &crate::code::CodeError) -> RunError {
    let code = match err.kind {
        crate::code::CodeErrorKind::Syntax => "syntax_error".to_owned(),
        kind => format!("code_{}", kind.as_str()),
    };
    RunError { code, message: err.to_string(), hint: Some(err.hint.clone()) }
}

fn limit_error(kind: LimitKind, limits: &Limits) -> RunError {
    match kind {
        LimitKind::Compute => RunError::new(
            "compute_limit",
            format!("the code ran for more than {} ms of compute", limits.compute_ms),
            Some("look for an endless loop, or do less work per execute"),
        ),
        LimitKind::Wall => RunError::new(
            "wall_limit",
            format!("the attempt took longer than {} ms", limits.wall_ms),
            Some("split the work into several execute calls"),
        ),
        LimitKind::Memory => RunError::new(
            "memory_limit",
            format!("the code used more than {} bytes of memory", limits.memory_bytes),
            Some("process less data at once"),
        ),
        LimitKind::Stack => RunError::new(
            "stack_limit",
            "the code recursed too deeply",
            Some("replace deep recursion with a loop"),
        ),
    }
}

/// The engine's side of one attempt.
struct AttemptBridge<'e, 'a> {
    engine: &'e Engine<'a>,
    run: RefCell<RunRecord>,
    journal: BTreeMap<u32, JournaledCall>,
    /// Pending calls of the previous attempt, so a repeated ask keeps its id.
    old_pending: Vec<PendingCall>,
    /// A failure that ends the run whatever the guest does (divergence, a store failure).
    failure: RefCell<Option<RunError>>,
    in_flight: Cell<usize>,
    waiters: RefCell<VecDeque<Waker>>,
    /// Credential values resolved in this attempt, to scrub the final result and logs again.
    secret_values: RefCell<Vec<String>>,
    run_id: String,
    /// The journal's calls as the envelope lists them, kept as entries are appended so the
    /// end of an attempt need not read the journal back.
    calls: RefCell<CallList>,
}

/// The calls of a journal in order, folded the way [`fold_journal`] folds them: the first
/// line for a call and its first outcome count.
#[derive(Default)]
struct CallList(BTreeMap<u32, (CallSummary, bool)>);

impl CallList {
    fn from_journal(journal: &BTreeMap<u32, JournaledCall>) -> CallList {
        CallList(
            journal
                .values()
                .map(|c| {
                    let ok = c.outcome.as_ref().is_some_and(CallOutcome::is_ok);
                    (c.seq, (CallSummary { address: c.address.clone(), ok, ms: c.ms }, c.outcome.is_some()))
                })
                .collect(),
        )
    }

    fn note(&mut self, entry: &JournalEntry) {
        match entry {
            JournalEntry::Call { seq, address, .. } => {
                self.0
                    .entry(*seq)
                    .or_insert_with(|| (CallSummary { address: address.clone(), ok: false, ms: 0 }, false));
            }
            JournalEntry::Outcome { seq, outcome, ms } => {
                if let Some((summary, settled)) = self.0.get_mut(seq)
                    && !*settled
                {
                    summary.ok = outcome.is_ok();
                    summary.ms = *ms;
                    *settled = true;
                }
            }
        }
    }

    fn into_summaries(self) -> Vec<CallSummary> {
        self.0.into_values().map(|(summary, _)| summary).collect()
    }
}

fn failure(code: &str, message: impl Into<String>, hint: Option<&str>) -> ToolFailure {
    ToolFailure {
        code: code.to_owned(),
        message: message.into(),
        hint: hint.map(str::to_owned),
        status: None,
        retryable: false,
    }
}

impl AttemptBridge<'_, '_> {
    fn fail_run(&self, error: RunError) -> GuestReply {
        self.failure.borrow_mut().get_or_insert(error);
        GuestReply::Suspend
    }

    async fn acquire(&self) {
        let max = self.engine.limits.max_concurrent.max(1);
        poll_fn(|cx| {
            if self.in_flight.get() < max {
                self.in_flight.set(self.in_flight.get() + 1);
                Poll::Ready(())
            } else {
                self.waiters.borrow_mut().push_back(cx.waker().clone());
                Poll::Pending
            }
        })
        .await;
    }

    fn release(&self) {
        self.in_flight.set(self.in_flight.get() - 1);
        if let Some(waker) = self.waiters.borrow_mut().pop_front() {
            waker.wake();
        }
    }

    async fn journal(&self, entry: JournalEntry) -> Result<(), RunError> {
        self.journal_ref(&entry).await
    }

    /// Appends `entry` to the run's journal and keeps the envelope's call list in step with it.
    async fn journal_ref(&self, entry: &JournalEntry) -> Result<(), RunError> {
        self.engine.store.append_journal(&self.run_id, entry).await.map_err(|err| {
            RunError::new(
                "store_failed",
                format!("the journal could not be written: {err}"),
                Some("run `capabilities hub doctor`"),
            )
        })?;
        self.calls.borrow_mut().note(entry);
        Ok(())
    }

    async fn settle(&self, seq: u32, outcome: CallOutcome, ms: u64) -> GuestReply {
        let entry = JournalEntry::Outcome { seq, outcome, ms };
        if let Err(err) = self.journal_ref(&entry).await {
            return self.fail_run(err);
        }
        match entry {
            JournalEntry::Outcome { outcome: CallOutcome::Ok { value }, .. } => GuestReply::Ok(value),
            JournalEntry::Outcome { outcome: CallOutcome::Err { failure }, .. } => GuestReply::Err(failure),
            JournalEntry::Call { .. } => unreachable!("built as an outcome above"),
        }
    }

    /// Journals a call that ends without reaching upstream (policy or a person said no).
    async fn refuse(
        &self,
        call: &GuestCall,
        connection: Option<&str>,
        digest: &str,
        failure: ToolFailure,
    ) -> GuestReply {
        let entry = JournalEntry::Call {
            seq: call.seq,
            address: call.address.clone(),
            connection: connection.map(str::to_owned),
            digest: digest.to_owned(),
            at_ms: self.engine.clock.now_ms(),
        };
        if let Err(err) = self.journal(entry).await {
            return self.fail_run(err);
        }
        self.settle(call.seq, CallOutcome::Err { failure }, 0).await
    }

    fn add_pending(&self, pending: PendingCall) -> GuestReply {
        let mut run = self.run.borrow_mut();
        if !run.pending.iter().any(|p| p.seq == pending.seq) {
            run.pending.push(pending);
        }
        GuestReply::Suspend
    }

    fn pending_id(&self, seq: u32, digest: &str) -> String {
        if let Some(old) = self.old_pending.iter().find(|p| p.seq == seq && p.call_digest == digest) {
            return old.id.clone();
        }
        let mut bytes = [0u8; 6];
        self.engine.entropy.fill(&mut bytes);
        format!("p_{}", hex::encode(bytes))
    }

    async fn handle(&self, call: GuestCall) -> GuestReply {
        let engine = self.engine;
        let Ok(address) = ToolAddress::parse(&call.address) else {
            return GuestReply::Err(failure(
                "unknown_tool",
                format!("`{}` is not a tool address", call.address),
                None,
            ));
        };
        let Some(source) = engine.catalog.source(&address.namespace) else {
            return GuestReply::Err(failure(
                "unknown_tool",
                format!("there is no namespace `{}`", address.namespace),
                None,
            ));
        };
        let Some(tool) = source.manifest.tool(&address.tool) else {
            return GuestReply::Err(failure(
                "unknown_tool",
                format!("`{address}` does not exist"),
                Some("use search to find the right tool"),
            ));
        };
        let requested = match call.options.get("connection") {
            None | Some(Value::Null) => None,
            Some(Value::String(name)) => Some(name.clone()),
            Some(_) => {
                return GuestReply::Err(failure("bad_options", "`connection` must be a string", None));
            }
        };
        if let Some(name) = &requested {
            if !source.connections.contains(name) {
                return GuestReply::Err(failure(
                    "unknown_connection",
                    format!("`{}` has no connection named `{name}`", address.namespace),
                    Some(&format!("known connections: {}", source.connections.join(", "))),
                ));
            }
        }
        let connection = requested.or_else(|| source.default_connection.clone());
        let digest = call_digest(&call.address, connection.as_deref(), &call.args);

        // Replay: a journaled call never goes upstream again.
        if let Some(recorded) = self.journal.get(&call.seq) {
            if recorded.address != call.address || recorded.digest != digest {
                let what = if recorded.address == call.address {
                    format!("`{}` with other arguments or connection than the journal holds", call.address)
                } else {
                    format!("`{}` where the journal holds `{}`", call.address, recorded.address)
                };
                return self.fail_run(RunError::new(
                    "divergence",
                    format!("on resume, call #{} was {what}", call.seq + 1),
                    Some("the code must make the same calls in the same order on every attempt; start a new execute"),
                ));
            }
            return match &recorded.outcome {
                Some(CallOutcome::Ok { value }) => GuestReply::Ok(value.clone()),
                Some(CallOutcome::Err { failure }) => GuestReply::Err(failure.clone()),
                None => {
                    let unknown = failure(
                        "outcome_unknown",
                        format!("the hub stopped while `{}` was in flight; it is not repeated", call.address),
                        Some("check the upstream for the effect before trying again"),
                    );
                    self.settle(call.seq, CallOutcome::Err { failure: unknown }, 0).await
                }
            };
        }

        {
            let run = self.run.borrow();
            if run.live_calls >= engine.limits.max_calls {
                drop(run);
                return self.fail_run(RunError::new(
                    "max_calls",
                    format!("the run made more than {} tool calls", engine.limits.max_calls),
                    Some("do the work in batches over several execute calls"),
                ));
            }
        }

        // Policy first: a denied call never touches a credential.
        let verdict = engine.policy.decide(&address, connection.as_deref(), tool);
        if verdict.effect == Effect::Deny {
            let denied = failure(
                "policy_denied",
                format!("policy denies `{address}`: {}", verdict.reason),
                Some("pick another tool, or ask the user to change the policy"),
            );
            return self.refuse(&call, connection.as_deref(), &digest, denied).await;
        }
        if verdict.effect == Effect::Ask {
            let decision = {
                let run = self.run.borrow();
                if run.allowed_for_run(&call.address, &tool.digest) {
                    Some(Choice::Run)
                } else {
                    run.decisions
                        .iter()
                        .find(|d| d.seq == call.seq && d.call_digest == digest && d.contract == tool.digest)
                        .map(|d| d.choice)
                }
            };
            match decision {
                Some(Choice::Deny) => {
                    let denied = failure(
                        "approval_denied",
                        format!("a person denied `{address}`"),
                        Some("do not retry this call; tell the user what you wanted to do"),
                    );
                    return self.refuse(&call, connection.as_deref(), &digest, denied).await;
                }
                Some(_) => {}
                None => {
                    let now = engine.clock.now_ms();
                    return self.add_pending(PendingCall {
                        id: self.pending_id(call.seq, &digest),
                        kind: PendingKind::Approval,
                        seq: call.seq,
                        address: call.address.clone(),
                        connection: connection.clone(),
                        summary: tool.record.first_sentence(),
                        reason: verdict.reason,
                        preview: approval::preview_arguments(
                            &call.args,
                            engine.limits.approval_preview_bytes,
                        ),
                        call_digest: digest,
                        contract: tool.digest,
                        created_ms: now,
                        expires_ms: now + engine.limits.approval_ttl_ms,
                    });
                }
            }
        }

        // Only now is a secret resolved.
        let credentials = match engine.secrets.resolve(&address.namespace, connection.as_deref()).await {
            Ok(credentials) => credentials,
            Err(SecretsError::Missing { connection: name, slots, .. }) => {
                let now = engine.clock.now_ms();
                return self.add_pending(PendingCall {
                    id: self.pending_id(call.seq, &digest),
                    kind: PendingKind::Connection,
                    seq: call.seq,
                    address: call.address.clone(),
                    connection: Some(name.clone()),
                    summary: tool.record.first_sentence(),
                    reason: format!(
                        "connection `{name}` needs {}; run `capabilities hub auth {} --connection {name}`",
                        slots.join(", "),
                        address.namespace
                    ),
                    preview: String::new(),
                    call_digest: digest,
                    contract: tool.digest,
                    created_ms: now,
                    expires_ms: now + engine.limits.approval_ttl_ms,
                });
            }
            Err(err) => {
                return GuestReply::Err(failure(
                    "credentials_unavailable",
                    err.to_string(),
                    Some("run `capabilities hub doctor`"),
                ));
            }
        };
        // A value the scrubber cannot match safely (too short) could come back in a result
        // unscrubbed: refuse the call rather than send it.
        if !credentials.values.is_empty() {
            if let Err(err) = Scrubber::new(credentials.values.iter().map(|(_, v)| v)) {
                return GuestReply::Err(failure(
                    "credential_unusable",
                    format!("a credential of `{}` cannot be kept out of results: {err}", address.namespace),
                    Some("set a longer value with `capabilities hub auth`"),
                ));
            }
        }
        self.secret_values.borrow_mut().extend(credentials.values.iter().map(|(_, v)| v.clone()));

        self.acquire().await;
        let reply =
            self.call_upstream(&call, &address, tool, connection.as_deref(), &digest, &credentials).await;
        self.release();
        reply
    }

    async fn call_upstream(
        &self,
        call: &GuestCall,
        address: &ToolAddress,
        tool: &Tool,
        connection: Option<&str>,
        digest: &str,
        credentials: &Credentials,
    ) -> GuestReply {
        let engine = self.engine;
        let started = engine.clock.now_ms();
        let intent = JournalEntry::Call {
            seq: call.seq,
            address: call.address.clone(),
            connection: connection.map(str::to_owned),
            digest: digest.to_owned(),
            at_ms: started,
        };
        if let Err(err) = self.journal(intent).await {
            return self.fail_run(err);
        }
        self.run.borrow_mut().live_calls += 1;
        let request = UpstreamRequest {
            namespace: &address.namespace,
            tool: &tool.record.name,
            arguments: &call.args,
            credentials,
            timeout_ms: engine.limits.upstream_timeout_ms,
        };
        let raw = engine.upstream.call(request).await;
        let ms = engine.clock.now_ms().saturating_sub(started);
        let mut outcome = match raw {
            Ok(result) => match tool_result_value(result) {
                Ok(value) => CallOutcome::Ok { value },
                Err(failure) => CallOutcome::Err { failure },
            },
            Err(err) => CallOutcome::Err { failure: upstream_failure(&err) },
        };
        let values: Vec<&String> = credentials.values.iter().map(|(_, v)| v).collect();
        if !values.is_empty() {
            if let Ok(scrubber) = Scrubber::new(values) {
                match &mut outcome {
                    CallOutcome::Ok { value } => scrubber.scrub_json(value),
                    CallOutcome::Err { failure } => {
                        failure.message = scrubber.scrub_str(&failure.message).into_owned();
                    }
                }
            }
        }
        if let CallOutcome::Err { failure } = &mut outcome {
            failure.message = format!("{address}: {}", failure.message);
        }
        self.settle(call.seq, outcome, ms).await
    }
}

fn upstream_failure(err: &UpstreamError) -> ToolFailure {
    match err {
        UpstreamError::Timeout(ms) => ToolFailure {
            code: "timeout".to_owned(),
            message: format!("no answer within {ms} ms"),
            hint: Some("try again later or with a smaller request".to_owned()),
            status: None,
            retryable: true,
        },
        UpstreamError::Unavailable(why) => ToolFailure {
            code: "source_unavailable".to_owned(),
            message: why.clone(),
            hint: Some("the user can run `capabilities hub doctor`".to_owned()),
            status: None,
            retryable: true,
        },
        UpstreamError::Protocol(why) => ToolFailure {
            code: "upstream_protocol".to_owned(),
            message: why.clone(),
            hint: None,
            status: None,
            retryable: false,
        },
        UpstreamError::Refused { message, status } => ToolFailure {
            code: "upstream_error".to_owned(),
            message: message.clone(),
            hint: None,
            status: *status,
            retryable: false,
        },
    }
}

impl Bridge for AttemptBridge<'_, '_> {
    fn call(&self, call: GuestCall) -> crate::ports::LocalBoxFuture<'_, GuestReply> {
        Box::pin(self.handle(call))
    }

    fn search(&self, args: Value) -> Result<String, String> {
        self.engine.lookup.search(args)
    }

    fn describe(&self, args: Value) -> Result<String, String> {
        self.engine.lookup.describe(args)
    }
}

/// The line of the model's text where a thrown error was raised: the innermost frame of the
/// run's own code in the guest's stack, mapped back through the code pipeline's line map. The
/// stack is the guest's to forge, which at worst names a wrong line.
fn thrown_at(stack: Option<&str>, lines: &[u32]) -> Option<u32> {
    const MODULE: &str = "code.js:";
    let stack = stack?;
    let start = stack.find(MODULE)? + MODULE.len();
    let digits: &str = &stack[start..][..stack[start..].bytes().take_while(u8::is_ascii_digit).count()];
    let body_line: u32 = digits.parse().ok()?;
    lines.get(usize::try_from(body_line.checked_sub(1)?).ok()?).copied()
}

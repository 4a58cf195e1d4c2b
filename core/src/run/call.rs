//! The per-call path: the engine's side of the sandbox bridge for one attempt. Each call the
//! guest makes is resolved to a tool, replayed from the journal if it holds the call, gated by
//! policy and a person, given its credentials, sent upstream and settled:
//!
//! resolve → replay → gate (policy, then approval) → credentials → upstream → scrub → journal.
//!
//! The call line goes to the journal (durably) before the request leaves, and the outcome line
//! after it settles; a call that policy or a person refuses is journaled too. A denied call
//! never touches a credential.

use std::cell::{Cell, RefCell};
use std::collections::{BTreeMap, VecDeque};
use std::future::poll_fn;
use std::task::{Poll, Waker};

use serde_json::Value;

use super::Engine;
use super::failures;
use crate::address::ToolAddress;
use crate::approval;
use crate::catalog::{Catalog, SourceView};
use crate::manifest::Tool;
use crate::pending::{Choice, PendingCall, PendingKind};
use crate::ports::{
    Bridge, Credentials, Effect, GuestCall, GuestReply, LocalBoxFuture, SecretsError, UpstreamError,
    UpstreamRequest,
};
use crate::record::{
    CallOutcome, CallSummary, JournalEntry, JournaledCall, RunError, RunRecord, ToolFailure, call_digest,
};
use crate::scrub::Scrubber;
use crate::typegen::signature_line;
use crate::upstream::tool_result_value;
use crate::validate::Checked;

/// The engine's side of one attempt.
pub(super) struct AttemptBridge<'e, 'a> {
    pub(super) engine: &'e Engine<'a>,
    pub(super) run: RefCell<RunRecord>,
    pub(super) journal: BTreeMap<u32, JournaledCall>,
    /// Pending calls of the previous attempt, so a repeated ask keeps its id.
    pub(super) old_pending: Vec<PendingCall>,
    /// A failure that ends the run whatever the guest does (divergence, a store failure).
    pub(super) failure: RefCell<Option<RunError>>,
    pub(super) in_flight: Cell<usize>,
    pub(super) waiters: RefCell<VecDeque<Waker>>,
    /// Credential values resolved in this attempt, to scrub the final result and logs again.
    pub(super) secret_values: RefCell<Vec<String>>,
    pub(super) run_id: String,
    /// The journal's calls as the envelope lists them, kept as entries are appended so the
    /// end of an attempt need not read the journal back.
    pub(super) calls: RefCell<CallList>,
}

/// The calls of a journal in order, folded the way [`crate::record::fold_journal`] folds them: the first
/// line for a call and its first outcome count.
#[derive(Default)]
pub(super) struct CallList(BTreeMap<u32, (CallSummary, bool)>);

impl CallList {
    pub(super) fn from_journal(journal: &BTreeMap<u32, JournaledCall>) -> CallList {
        CallList(journal.values().map(|c| (c.seq, (c.summary(), c.outcome.is_some()))).collect())
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

    pub(super) fn into_summaries(self) -> Vec<CallSummary> {
        self.0.into_values().map(|(summary, _)| summary).collect()
    }
}

/// What a call resolved to.
struct Target<'e> {
    address: ToolAddress,
    tool: &'e Tool,
    connection: Option<String>,
    digest: String,
}

/// Why `raw` names no tool of `catalog`.
fn unknown_tool(catalog: &Catalog, raw: &str) -> ToolFailure {
    let Ok(address) = ToolAddress::parse(raw) else {
        return failures::failure("unknown_tool", format!("`{raw}` is not a tool address"), None);
    };
    if catalog.source(&address.namespace).is_none() {
        return failures::failure(
            "unknown_tool",
            format!("there is no namespace `{}`", address.namespace),
            None,
        );
    }
    failures::failure(
        "unknown_tool",
        format!("`{address}` does not exist"),
        Some("use search to find the right tool"),
    )
}

/// The connection a call asked for in its options, checked against the source's.
fn requested_connection(
    call: &GuestCall,
    address: &ToolAddress,
    source: &SourceView,
) -> Result<Option<String>, ToolFailure> {
    let requested = match call.options.get("connection") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::String(name)) => name.clone(),
        Some(_) => return Err(failures::failure("bad_options", "`connection` must be a string", None)),
    };
    if !source.connections.contains(&requested) {
        return Err(failures::failure(
            "unknown_connection",
            format!("`{}` has no connection named `{requested}`", address.namespace),
            Some(&format!("known connections: {}", source.connections.join(", "))),
        ));
    }
    Ok(Some(requested))
}

impl<'e> AttemptBridge<'e, '_> {
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
        let engine = self.engine;
        engine
            .store
            .append_journal(&self.run_id, entry)
            .await
            .map_err(|err| failures::journal_failed(&err, engine.words))?;
        self.calls.borrow_mut().note(entry);
        Ok(())
    }

    async fn settle(&self, seq: u32, outcome: CallOutcome, ms: u64) -> GuestReply {
        let entry = JournalEntry::Outcome { seq, outcome, ms };
        // Durable with the next call's intent or the run's record, before either leaves.
        let engine = self.engine;
        if let Err(err) = engine.store.append_journal_deferred(&self.run_id, &entry).await {
            return self.fail_run(failures::journal_failed(&err, engine.words));
        }
        self.calls.borrow_mut().note(&entry);
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

    /// One call, all the way: resolve → replay → gate → credentials → upstream.
    async fn handle(&self, call: GuestCall) -> GuestReply {
        let target = match self.resolve(&call) {
            Ok(target) => target,
            Err(failure) => return GuestReply::Err(failure),
        };
        // Replay: a journaled call never goes upstream again.
        if let Some(recorded) = self.journal.get(&call.seq) {
            return self.replay(&call, &target, recorded).await;
        }
        // Arguments the tool's contract refuses never reach policy, a person or the source.
        match self.engine.catalog.check(&target.address, &call.args) {
            Checked::Valid => {}
            Checked::Invalid(problems) => {
                let signature = signature_line(&target.address, target.tool);
                return GuestReply::Err(failures::arguments_refused(&call.address, &problems, &signature));
            }
            Checked::Unchecked(why) => {
                let notice = format!("`{}` was called without checking its arguments: {why}", call.address);
                let mut run = self.run.borrow_mut();
                if !run.notices.contains(&notice) {
                    run.notices.push(notice);
                }
            }
        }
        if self.run.borrow().live_calls >= self.engine.limits.max_calls {
            return self.fail_run(failures::max_calls(&self.engine.limits));
        }
        if let Some(reply) = self.gate(&call, &target).await {
            return reply;
        }
        // Only now is a secret resolved.
        let credentials = match self.credentials(&call, &target).await {
            Ok(credentials) => credentials,
            Err(reply) => return reply,
        };
        self.acquire().await;
        let reply = self
            .call_upstream(
                &call,
                &target.address,
                target.tool,
                target.connection.as_deref(),
                &target.digest,
                &credentials,
            )
            .await;
        self.release();
        reply
    }

    /// The tool a call names, on the connection it asked for (or the source's default), with
    /// the digest that identifies the call for replay.
    fn resolve(&self, call: &GuestCall) -> Result<Target<'e>, ToolFailure> {
        // The catalog holds only valid namespaces and tool names, so an address that names one
        // of its tools needs no parsing; the others are parsed to say what is wrong.
        let found = call.address.split_once('.').and_then(|(namespace, name)| {
            let source = self.engine.catalog.source_named(namespace)?;
            Some((source, name, source.manifest.tool(name)?))
        });
        let Some((source, name, tool)) = found else {
            return Err(unknown_tool(self.engine.catalog, &call.address));
        };
        let address = ToolAddress::new(source.manifest.namespace.clone(), name);
        let connection =
            requested_connection(call, &address, source)?.or_else(|| source.default_connection.clone());
        let digest = call_digest(&call.address, connection.as_deref(), &call.args);
        Ok(Target { address, tool, connection, digest })
    }

    /// A call the journal already holds: its recorded outcome, or `outcome_unknown` for one the
    /// hub lost in flight; a different call in its place fails the run.
    async fn replay(&self, call: &GuestCall, target: &Target<'_>, recorded: &JournaledCall) -> GuestReply {
        if recorded.address != call.address || recorded.digest != target.digest {
            let what = if recorded.address == call.address {
                format!("`{}` with other arguments or connection than the journal holds", call.address)
            } else {
                format!("`{}` where the journal holds `{}`", call.address, recorded.address)
            };
            return self.fail_run(failures::divergence(call.seq, &what));
        }
        match &recorded.outcome {
            Some(CallOutcome::Ok { value }) => GuestReply::Ok(value.clone()),
            Some(CallOutcome::Err { failure }) => GuestReply::Err(failure.clone()),
            None => {
                let unknown = failures::outcome_unknown(&call.address);
                self.settle(call.seq, CallOutcome::Err { failure: unknown }, 0).await
            }
        }
    }

    /// Policy, then a person: `None` lets the call go on; otherwise the reply that ends it here
    /// (refused and journaled, or waiting for a decision).
    async fn gate(&self, call: &GuestCall, target: &Target<'_>) -> Option<GuestReply> {
        let engine = self.engine;
        let Target { address, tool, connection, digest } = target;
        let verdict = engine.policy.decide(address, connection.as_deref(), tool);
        match verdict.effect {
            Effect::Allow => None,
            Effect::Deny => {
                let denied = failures::policy_denied(&address.to_string(), &verdict.reason);
                Some(self.refuse(call, connection.as_deref(), digest, denied).await)
            }
            Effect::Ask => match self.standing_decision(call, target) {
                Some(Choice::Deny) => {
                    let denied = failures::approval_denied(&address.to_string());
                    Some(self.refuse(call, connection.as_deref(), digest, denied).await)
                }
                Some(_) => None,
                None => {
                    let now = engine.clock.now_ms();
                    Some(self.add_pending(PendingCall {
                        id: self.pending_id(call.seq, digest),
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
                        call_digest: digest.clone(),
                        contract: tool.digest,
                        created_ms: now,
                        expires_ms: now + engine.limits.approval_ttl_ms,
                    }))
                }
            },
        }
    }

    /// A person's decision that covers this call: "for this run" (or "always") on the tool at
    /// this contract, or a decision on this very call.
    fn standing_decision(&self, call: &GuestCall, target: &Target<'_>) -> Option<Choice> {
        let run = self.run.borrow();
        if run.allowed_for_run(&call.address, &target.tool.digest) {
            return Some(Choice::Run);
        }
        run.decisions
            .iter()
            .find(|d| d.seq == call.seq && d.call_digest == target.digest && d.contract == target.tool.digest)
            .map(|d| d.choice)
    }

    /// The call's credentials, resolved only now; a missing one makes the run wait for it.
    /// Values the scrubber cannot match safely are refused before anything is sent.
    async fn credentials(&self, call: &GuestCall, target: &Target<'_>) -> Result<Credentials, GuestReply> {
        let engine = self.engine;
        let Target { address, tool, connection, digest } = target;
        let namespace = address.namespace.as_str();
        let credentials = match engine.secrets.resolve(&address.namespace, connection.as_deref()).await {
            Ok(credentials) => credentials,
            Err(SecretsError::Missing { connection: name, slots, .. }) => {
                let now = engine.clock.now_ms();
                return Err(self.add_pending(PendingCall {
                    id: self.pending_id(call.seq, digest),
                    kind: PendingKind::Connection,
                    seq: call.seq,
                    address: call.address.clone(),
                    connection: Some(name.clone()),
                    summary: tool.record.first_sentence(),
                    reason: failures::connection_reason(namespace, &name, &slots, engine.words),
                    preview: String::new(),
                    call_digest: digest.clone(),
                    contract: tool.digest,
                    created_ms: now,
                    expires_ms: now + engine.limits.approval_ttl_ms,
                }));
            }
            Err(SecretsError::SignInRequired { connection: name, reason, .. }) => {
                return Err(GuestReply::Err(failures::auth_required(
                    namespace,
                    &name,
                    &reason,
                    engine.words,
                )));
            }
            Err(err) => {
                return Err(GuestReply::Err(failures::credentials_unavailable(&err, engine.words)));
            }
        };
        self.keep_scrubbable(namespace, credentials)
    }

    /// Credentials the scrubber can keep out of results, remembered for the run's scrub.
    fn keep_scrubbable(&self, namespace: &str, credentials: Credentials) -> Result<Credentials, GuestReply> {
        let engine = self.engine;
        // A value the scrubber cannot match safely (too short) could come back in a result
        // unscrubbed: refuse the call rather than send it.
        if !credentials.values.is_empty() {
            if let Err(err) = Scrubber::cached(credentials.values.iter().map(|(_, v)| v)) {
                return Err(GuestReply::Err(failures::credential_unusable(namespace, &err, engine.words)));
            }
        }
        self.secret_values.borrow_mut().extend(credentials.values.iter().map(|(_, v)| v.clone()));
        Ok(credentials)
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
            http: tool.record.http.as_ref(),
            arguments: &call.args,
            credentials,
            timeout_ms: engine.limits.upstream_timeout_ms,
        };
        let mut raw = engine.upstream.call(request).await;
        // Credentials the source refused get one more try when the connection has better ones
        // (an OAuth token refreshed); the refused call did nothing, so nothing repeats.
        let retried;
        let mut credentials = credentials;
        if let Err(UpstreamError::Unauthorized { challenge, .. }) = &raw {
            let namespace = address.namespace.as_str();
            let challenge = challenge.clone();
            match engine.secrets.rejected(&address.namespace, credentials, challenge.as_deref()).await {
                Ok(Some(fresh)) => match self.keep_scrubbable(namespace, fresh) {
                    Ok(fresh) => {
                        retried = fresh;
                        credentials = &retried;
                        let request = UpstreamRequest {
                            namespace: &address.namespace,
                            tool: &tool.record.name,
                            http: tool.record.http.as_ref(),
                            arguments: &call.args,
                            credentials,
                            timeout_ms: engine.limits.upstream_timeout_ms,
                        };
                        raw = engine.upstream.call(request).await;
                    }
                    Err(reply) => return reply,
                },
                Ok(None) => {}
                Err(SecretsError::SignInRequired { reason, .. }) => {
                    raw = Err(UpstreamError::Unauthorized { message: reason, challenge: None });
                }
                Err(err) => raw = Err(UpstreamError::Unavailable(err.to_string())),
            }
        }
        let ms = engine.clock.now_ms().saturating_sub(started);
        let mut outcome = match raw {
            Ok(result) => match tool_result_value(result) {
                Ok(value) => CallOutcome::Ok { value },
                Err(failure) => CallOutcome::Err { failure },
            },
            Err(err) => {
                let namespace = address.namespace.as_str();
                let name = credentials.connection.as_deref().unwrap_or("default");
                CallOutcome::Err { failure: failures::upstream_failure(&err, namespace, name, engine.words) }
            }
        };
        let values: Vec<&String> = credentials.values.iter().map(|(_, v)| v).collect();
        if !values.is_empty() {
            if let Ok(scrubber) = Scrubber::cached(values) {
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

impl Bridge for AttemptBridge<'_, '_> {
    fn call(&self, call: GuestCall) -> LocalBoxFuture<'_, GuestReply> {
        Box::pin(self.handle(call))
    }

    fn search(&self, args: Value) -> Result<String, String> {
        self.engine.lookup.search(args)
    }

    fn describe(&self, args: Value) -> Result<String, String> {
        self.engine.lookup.describe(args)
    }

    fn read(&self, args: Value) -> LocalBoxFuture<'_, Result<Value, ToolFailure>> {
        Box::pin(async move {
            let request = crate::handles::parse_read(&args)?;
            let slice =
                crate::handles::read(self.engine.store, self.engine.blobs, self.engine.profile, &request)
                    .await?;
            Ok(serde_json::to_value(slice).unwrap_or(Value::Null))
        })
    }

    fn skill(&self, args: Value) -> LocalBoxFuture<'_, Result<Value, ToolFailure>> {
        self.engine.lookup.skill(args)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::address::Namespace;
    use crate::manifest::Manifest;
    use serde_json::json;

    #[test]
    fn an_address_outside_the_catalog_says_what_is_wrong_with_it() {
        let tools = [json!({ "name": "list", "inputSchema": { "type": "object" } })];
        let (manifest, _) = Manifest::from_tools_list(Namespace::new("notes").unwrap(), &tools);
        let catalog =
            Catalog::new(vec![SourceView { manifest, connections: Vec::new(), default_connection: None }]);
        let message = |raw: &str| unknown_tool(&catalog, raw).message;
        assert_eq!(message("Notes.list"), "`Notes.list` is not a tool address");
        assert_eq!(message("notes.list.x"), "`notes.list.x` is not a tool address");
        assert_eq!(message("tasks.list"), "there is no namespace `tasks`");
        assert_eq!(message("notes.add"), "`notes.add` does not exist");
    }
}

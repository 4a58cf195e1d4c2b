//! The run engine's lifecycle: starts a run, resumes or cancels one, makes one sandbox attempt
//! and finishes the run with its output scrubbed and saved. Each step returns a [`RunReport`];
//! the surface turns it into the envelope the model reads.
//!
//! The per-call path the guest's calls take during an attempt is in `call.rs`.

use std::cell::{Cell, RefCell};
use std::collections::VecDeque;

use super::call::{AttemptBridge, CallList};
use super::failures::{self, Ended};
use crate::catalog::Catalog;
use crate::limits::Limits;
use crate::ports::{
    Attempt, Blobs, Clock, Entropy, GuestNamespace, Lookup, PolicyView, RunStore, Sandbox, Secrets, Upstream,
};
use crate::record::{
    CallSummary, RunId, RunOutput, RunRecord, RunReport, RunStatus, call_summaries, fold_journal,
};
use crate::scrub::Scrubber;
use crate::wording::HostWords;

/// Everything a run needs, borrowed for the length of one `execute` or `resume`.
pub struct Engine<'a> {
    pub catalog: &'a Catalog,
    pub policy: &'a dyn PolicyView,
    pub lookup: &'a dyn Lookup,
    pub sandbox: &'a dyn Sandbox,
    pub upstream: &'a dyn Upstream,
    pub secrets: &'a dyn Secrets,
    pub store: &'a dyn RunStore,
    /// Where results and logs too large for the envelope are kept as handles.
    pub blobs: &'a dyn Blobs,
    pub clock: &'a dyn Clock,
    pub entropy: &'a dyn Entropy,
    pub limits: Limits,
    /// How this hub names where a person acts, for hints and waiting calls.
    pub words: &'a HostWords,
    /// The profile serving: a run it did not start is unknown to it.
    pub profile: &'a str,
}

impl Engine<'_> {
    /// Starts a run of `code`.
    pub async fn execute(&self, code: &str) -> RunReport {
        let now = self.clock.now_ms();
        let id = self.store.take_prepared_run().unwrap_or_else(|| {
            let mut id_bytes = [0u8; 8];
            self.entropy.fill(&mut id_bytes);
            RunId::from_bytes(id_bytes)
        });
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
            profile: self.profile.to_owned(),
        };
        match crate::code::prepare(code, self.limits.code_bytes) {
            Ok(prepared) => {
                run.body = prepared.body;
                run.notices = prepared.notices;
                run.lines = prepared.lines.to_vec();
            }
            Err(err) => {
                run.status = RunStatus::Failed;
                run.output.error = Some(failures::code_error(&err));
                return self.finish(run, Vec::new(), None).await;
            }
        }
        // The attempt saves the record before the code runs; saving here too would only cost
        // another synced write.
        self.attempt(run).await
    }

    /// Continues a run after a person decided, or returns where it stands.
    pub async fn resume(&self, run_id: &str) -> RunReport {
        let run = match self.store.load_run(run_id).await {
            Ok(Some(run)) if run.profile == self.profile => run,
            Ok(_) => return RunReport::UnknownRun(run_id.to_owned()),
            Err(err) => return store_failed(run_id, &err),
        };
        match run.status {
            status if status.is_final() => self.report(run).await,
            RunStatus::AwaitingInput => {
                if run.has_expired_wait(self.clock.now_ms()) {
                    let mut run = run;
                    run.status = RunStatus::Expired;
                    run.output.error = Some(failures::approval_expired());
                    return self.finish(run, Vec::new(), None).await;
                }
                if run.undecided().next().is_some() {
                    return self.report(run).await;
                }
                self.attempt(run).await
            }
            // A run left `running` by a hub that stopped: replay makes another attempt safe.
            _ => self.attempt(run).await,
        }
    }

    /// Cancels a run that has not ended. Calls already made stay made.
    pub async fn cancel(&self, run_id: &str) -> RunReport {
        match self.store.load_run(run_id).await {
            Ok(Some(mut run)) if run.profile == self.profile => {
                if !run.status.is_final() {
                    run.status = RunStatus::Cancelled;
                    run.pending.clear();
                    run.output.error = Some(failures::cancelled());
                    return self.finish(run, Vec::new(), None).await;
                }
                self.report(run).await
            }
            Ok(_) => RunReport::UnknownRun(run_id.to_owned()),
            Err(err) => store_failed(run_id, &err),
        }
    }

    async fn attempt(&self, mut run: RunRecord) -> RunReport {
        // Only attempts write journal lines: a run before its first has none to read.
        let entries = match run.attempts {
            0 => Ok(Vec::new()),
            _ => self.store.read_journal(&run.id).await,
        };
        let journal = match entries {
            Ok(entries) => fold_journal(&entries),
            Err(err) => return store_failed(&run.id, &err),
        };
        run.attempts += 1;
        run.status = RunStatus::Running;
        let old_pending = std::mem::take(&mut run.pending);
        run.updated_ms = self.clock.now_ms();
        if let Err(err) = self.store.save_run(&run).await {
            return store_failed(&run.id, &err);
        }
        let attempt = Attempt {
            run_id: run.id.to_string(),
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
            // Logs past the inline budget are kept as a handle, up to this.
            log_budget_bytes: crate::handles::LOG_CAPTURE_BYTES,
        };
        let bridge = AttemptBridge {
            engine: self,
            run_id: run.id.to_string(),
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
        run.output =
            RunOutput { logs: report.logs, logs_truncated: report.logs_truncated, ..RunOutput::default() };
        // A failure the engine met (divergence, a store failure) wins over how the guest ended.
        let ended = match failure.into_inner() {
            Some(error) => Ended::Failed(error),
            None => {
                let namespaces: Vec<&str> =
                    self.catalog.sources.iter().map(|s| s.manifest.namespace.as_str()).collect();
                let signature = |address: &str| {
                    let address = crate::address::ToolAddress::parse(address).ok()?;
                    let tool = self.catalog.tool(&address)?;
                    Some(crate::typegen::signature_line(&address, tool))
                };
                failures::attempt_end(
                    report.end,
                    !run.pending.is_empty(),
                    &self.limits,
                    &run.lines,
                    &namespaces,
                    &signature,
                    self.words,
                )
            }
        };
        match ended {
            Ended::Completed(value) => {
                run.status = RunStatus::Completed;
                run.output.result = value;
            }
            Ended::Waiting => run.status = RunStatus::AwaitingInput,
            Ended::Failed(error) => {
                run.status = RunStatus::Failed;
                run.output.error = Some(error);
            }
            Ended::Cancelled(error) => {
                run.status = RunStatus::Cancelled;
                run.output.error = Some(error);
            }
        }
        if run.status != RunStatus::AwaitingInput {
            run.pending.clear();
        }
        self.finish(run, secret_values.into_inner(), Some(calls.into_inner().into_summaries())).await
    }

    /// Scrubs, saves and reports a run, with its calls when the caller already knows them.
    async fn finish(
        &self,
        mut run: RunRecord,
        secret_values: Vec<String>,
        calls: Option<Vec<CallSummary>>,
    ) -> RunReport {
        if !secret_values.is_empty() {
            match Scrubber::cached(&secret_values) {
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
                    run.output.error = Some(failures::output_withheld(self.words));
                    if run.status == RunStatus::Completed {
                        run.status = RunStatus::Failed;
                    }
                }
            }
        }
        // Only scrubbed text is ever kept as a handle.
        crate::handles::spill(&mut run, self.blobs, self.entropy, self.limits.inline_result_bytes).await;
        run.updated_ms = self.clock.now_ms();
        if let Err(err) = self.store.save_run(&run).await {
            return store_failed(&run.id, &err);
        }
        match calls {
            Some(calls) => RunReport::Run { record: run, calls },
            None => self.report(run).await,
        }
    }

    /// The report of a stored run, with the calls its journal holds.
    async fn report(&self, run: RunRecord) -> RunReport {
        let calls = match self.store.read_journal(&run.id).await {
            Ok(entries) => call_summaries(&entries),
            Err(_) => Vec::new(),
        };
        RunReport::Run { record: run, calls }
    }
}

fn store_failed(run_id: &str, err: &dyn std::fmt::Display) -> RunReport {
    RunReport::StoreFailed { run_id: run_id.to_owned(), message: err.to_string() }
}

//! Asking a person about a run that waits for them, the three ways the server can: in the
//! client's own prompt (form elicitation) during the `execute` call, as `input_required` rounds
//! for a client on the stateless revision, and otherwise on the hub's own approval page, whose
//! address the answer carries. An answer goes to the recorder only with the state the hub
//! signed for that call.

use std::time::Duration;

use anyhow::Result;
use capabilities_core::approval::Channel;
use capabilities_core::surface::envelope::Envelope;
use capabilities_core::surface::envelope::EnvelopeStatus;
use rmcp::model::{
    CallToolResponse, ElicitRequestParams, ElicitResult, InputResponses, ProgressNotificationParam,
    ProgressToken,
};
use rmcp::service::{ElicitationMode, Peer, RequestContext, RoleServer, ServiceError};
use serde_json::Value;

use super::approvals::{self, Answer, ApprovalKey, KeyFile};
use super::handler::{Answered, HubServer, Shape, error_text, on_own_thread};
use super::rounds;
use crate::page::Notifier;
use crate::platform::now_ms;
use crate::recorder;

/// How many times one `execute` asks, records and resumes before it answers `awaiting_approval`
/// anyway (a loop of writes with "once" asks on each).
const MAX_PROMPT_ROUNDS: usize = 20;

/// While a prompt is open, how often the client hears progress on the `execute` call (when it
/// sent a progress token), so a client that resets its timeout on progress keeps waiting.
const PROMPT_KEEPALIVE: Duration = Duration::from_secs(2);

impl HubServer {
    /// A waiting run's envelope for a client that cannot ask the person: the hub asks on its
    /// own page instead, and says so.
    pub(super) async fn tell_person(&self, mut envelope: Envelope) -> Envelope {
        if envelope.status == EnvelopeStatus::AwaitingApproval {
            envelope.notices.push(self.pages.notify(&envelope.run_id).await);
        }
        envelope
    }

    /// Answers one `tools/call` from a client on the stateless revision that can show forms: a
    /// run waiting for a person comes back as `input_required`, and the retried call (carrying
    /// `request_state`) records the answers and resumes the run its state names — the code in
    /// the retried arguments is not run again.
    pub(super) async fn call_inline(
        &self,
        name: &str,
        arguments: Value,
        responses: Option<InputResponses>,
        request_state: Option<String>,
    ) -> CallToolResponse {
        let (envelope, shape) = match request_state {
            Some(state) => match self.record_round(state, responses).await {
                // Every form was dismissed: the calls stay pending, and asking again at once
                // would only loop.
                Ok((envelope, shape, false)) => return self.run_result(&envelope, &shape).into(),
                Ok((envelope, shape, true)) => (envelope, shape),
                Err(message) => return error_text(message).into(),
            },
            None => {
                let server = self.clone();
                let name = name.to_owned();
                match on_own_thread(move || server.answer(&*server.host()?, &name, arguments)).await {
                    Ok(Answered::Text(result)) => return result.into(),
                    Ok(Answered::Run(envelope, shape)) => (envelope, shape),
                    Err(err) => return error_text(format!("{err:#}")).into(),
                }
            }
        };
        if envelope.status != EnvelopeStatus::AwaitingApproval {
            return self.run_result(&envelope, &shape).into();
        }
        let server = self.clone();
        let run_id = envelope.run_id.clone();
        let asked = on_own_thread(move || {
            let run = server.host()?.store().load_run_sync(&run_id).map_err(|e| anyhow::anyhow!("{e}"))?;
            let key = ApprovalKey::load_or_create(&server.home)?;
            let now = now_ms();
            let calls = run.map(|run| rounds::undecided(&run, now)).unwrap_or_default();
            if calls.is_empty() { Ok(None) } else { rounds::ask(&key, &run_id, &calls, now).map(Some) }
        })
        .await;
        match asked {
            Ok(Some(input_required)) => input_required.into(),
            Ok(None) => self.run_result(&envelope, &shape).into(),
            Err(err) => {
                eprintln!("warning: asking for approval in the client failed: {err:#}");
                self.run_result(&self.tell_person(envelope).await, &shape).into()
            }
        }
    }

    /// Records the answers a retried call carries, each only with its signed state, and resumes
    /// the run; says whether anything was recorded. Nothing is unless every state verifies.
    async fn record_round(
        &self,
        request_state: String,
        responses: Option<InputResponses>,
    ) -> Result<(Envelope, Shape, bool), String> {
        let server = self.clone();
        let (run_id, recorded) = on_own_thread(move || {
            let key = ApprovalKey::load_or_create(&server.home)?;
            let retry = rounds::read(&key, &request_state, responses.as_ref(), now_ms())
                .map_err(|err| anyhow::anyhow!("{err}"))?;
            let host = server.host()?;
            let store = host.store();
            for answered in &retry.answered {
                let claims = &answered.claims;
                // The recorder refuses a run that waits for nothing and a call it does not wait
                // for; the state must also name the call's place in the run.
                let run = store.load_run_sync(&retry.run_id).map_err(|e| anyhow::anyhow!("{e}"))?;
                capabilities_core::approval::rounds::check_claims(run.as_ref(), claims)
                    .map_err(|err| anyhow::anyhow!("{err}"))?;
                let decision = vec![(claims.pending_id.clone(), answered.choice)];
                recorder::record_checked(store, &retry.run_id, &decision, Channel::Elicitation, || {
                    approvals::consume_nonce(store, claims)
                })?;
            }
            Ok((retry.run_id, !retry.answered.is_empty()))
        })
        .await
        .map_err(|err| {
            format!(
                "the approval answer was not recorded: {err:#}; call execute with {{\"resume\": \"<runId>\"}} to be asked again"
            )
        })?;
        let server = self.clone();
        let (envelope, shape) = on_own_thread(move || {
            let host = server.host()?;
            let envelope = host.resume(&run_id)?;
            // A direct call's retry carries the state, not necessarily the same arguments: it
            // answers as the tool, and is not remembered as waiting under them.
            let shape = match host.direct() {
                Some(_) => Shape::Direct(format!("\0round {run_id}")),
                None => Shape::Envelope,
            };
            Ok((envelope, shape))
        })
        .await
        .map_err(|err| format!("{err:#}"))?;
        Ok((envelope, shape, recorded))
    }

    /// Puts each undecided approval of the waiting run to the person through the client's
    /// prompt, records their answers and resumes; again while the resumed run asks anew.
    /// A dismissed prompt or a failed request leaves the call pending.
    pub(super) async fn ask_person(&self, peer: &Prompter<'_>, mut envelope: Envelope) -> Envelope {
        for _ in 0..MAX_PROMPT_ROUNDS {
            if envelope.status != EnvelopeStatus::AwaitingApproval {
                break;
            }
            let round = match self.ask_round(peer, &envelope.run_id).await {
                Ok(round) => round,
                Err(err) => {
                    eprintln!("warning: asking for approval in the client failed: {err:#}");
                    break;
                }
            };
            if round == PromptOutcome::Unanswered {
                break;
            }
            let server = self.clone();
            let run_id = envelope.run_id.clone();
            match on_own_thread(move || server.host()?.resume(&run_id)).await {
                Ok(resumed) => envelope = resumed,
                Err(err) => {
                    eprintln!("warning: resuming run `{}` after approval failed: {err:#}", envelope.run_id);
                    break;
                }
            }
            if round == PromptOutcome::Partly {
                break;
            }
        }
        envelope
    }

    /// One prompt for each undecided approval of run `run_id`, in order.
    async fn ask_round(&self, peer: &Prompter<'_>, run_id: &str) -> Result<PromptOutcome> {
        // The hub is opened (and dropped) on a thread of its own each time, never here: the
        // last handle to a hub whose configuration changed shuts its sources down.
        let server = self.clone();
        let id = run_id.to_owned();
        let (run, key) = on_own_thread(move || {
            let run = server.host()?.store().load_run_sync(&id).map_err(|e| anyhow::anyhow!("{e}"))?;
            Ok((run, ApprovalKey::load_or_create(&server.home)?))
        })
        .await?;
        let Some(run) = run else { return Ok(PromptOutcome::Unanswered) };
        let now = now_ms();
        let undecided = rounds::undecided(&run, now);
        if undecided.is_empty() {
            return Ok(PromptOutcome::Unanswered);
        }
        let mut recorded = false;
        let stopped = |recorded| if recorded { PromptOutcome::Partly } else { PromptOutcome::Unanswered };
        for pending in undecided {
            let expires_ms = pending.expires_ms.min(now_ms() + approvals::ASK_MS);
            let state = key.sign(run_id, &pending, approvals::nonce()?, expires_ms);
            let params = approvals::request(run_id, &pending, &state, expires_ms);
            let timeout = Duration::from_millis(expires_ms.saturating_sub(now_ms()));
            let reply = match peer.ask(params, timeout).await {
                Ok(reply) => reply,
                Err(err) => {
                    eprintln!("warning: the client did not answer the approval prompt: {err}");
                    return Ok(stopped(recorded));
                }
            };
            let Answer::Decided(choice) = approvals::answer(&reply) else { return Ok(stopped(recorded)) };
            // The answer counts only with the state signed for this call, unexpired, once.
            let claims = match key.verify_for(&state, run_id, &pending, now_ms()) {
                Ok(claims) => claims,
                Err(err) => {
                    eprintln!("warning: approval for `{}` not recorded: {err}", pending.address);
                    return Ok(stopped(recorded));
                }
            };
            let server = self.clone();
            let id = run_id.to_owned();
            let decision = vec![(pending.id.clone(), choice)];
            let written = on_own_thread(move || {
                let host = server.host()?;
                let store = host.store();
                recorder::record_checked(store, &id, &decision, Channel::Elicitation, || {
                    approvals::consume_nonce(store, &claims)
                })
            })
            .await;
            if let Err(err) = written {
                eprintln!("warning: approval for `{}` not recorded: {err:#}", pending.address);
                return Ok(stopped(recorded));
            }
            recorded = true;
        }
        Ok(PromptOutcome::Decided)
    }
}

/// How one round of prompts ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum PromptOutcome {
    /// Every prompt got a decision, recorded.
    Decided,
    /// Some got one, then a prompt was dismissed.
    Partly,
    /// Nothing was recorded.
    Unanswered,
}

/// The client that asked, and the progress token of its `execute` call.
pub(super) struct Prompter<'a> {
    peer: &'a Peer<RoleServer>,
    progress: Option<ProgressToken>,
}

impl Prompter<'_> {
    /// The client of `context`, with its call's progress token.
    pub(super) fn new<'a>(context: &'a RequestContext<RoleServer>) -> Prompter<'a> {
        Prompter { peer: &context.peer, progress: context.meta.get_progress_token() }
    }

    /// Sends one prompt and waits for the answer, telling the client the call is alive.
    async fn ask(
        &self,
        params: ElicitRequestParams,
        timeout: Duration,
    ) -> Result<ElicitResult, ServiceError> {
        let reply = self.peer.create_elicitation_with_timeout(params, Some(timeout));
        let Some(token) = &self.progress else { return reply.await };
        tokio::pin!(reply);
        let mut tick =
            tokio::time::interval_at(tokio::time::Instant::now() + PROMPT_KEEPALIVE, PROMPT_KEEPALIVE);
        let mut beats = 0u32;
        loop {
            tokio::select! {
                answer = &mut reply => return answer,
                _ = tick.tick() => {
                    beats += 1;
                    let note = ProgressNotificationParam::new(token.clone(), f64::from(beats))
                        .with_message("waiting for a person to answer the approval prompt");
                    let _ = self.peer.notify_progress(note).await;
                }
            }
        }
    }
}

/// Whether the client declared that it can show a form to its person.
pub(super) fn can_ask(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes().contains(&ElicitationMode::Form)
}

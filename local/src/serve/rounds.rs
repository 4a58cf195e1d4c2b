//! Approvals for clients on the stateless revision (2026-07-28), which the hub cannot send a
//! request in the middle of a call. A run that waits for a person comes back as an
//! `input_required` result holding one form per undecided call and the states the hub signed for
//! them; the client shows the forms, then sends the same `tools/call` again with the answers and
//! the states. An answer counts only with the state signed for its call, unexpired, once.

use capabilities_core::approval::{Choice, PendingCall, PendingKind};
use capabilities_core::run::RunRecord;
use rmcp::model::{
    ElicitRequest, ElicitResult, InputRequest, InputRequests, InputRequiredResult, InputResponses,
    ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleServer};

use super::approvals::{self, Answer, ApprovalKey, Claims, StateError};

/// Joins the states of one round into the one `requestState` the client echoes. Signed states
/// are made of letters, digits, `_` and `.`, never this.
const SEPARATOR: char = '~';

/// The most calls one round asks about (a run holds at most `maxConcurrent` waiting calls; this
/// only bounds what a forged state can make the hub verify).
const MAX_STATES: usize = 64;

/// Whether the request comes from a client on the stateless revision that can show a form.
pub fn asks_inline(context: &RequestContext<RoleServer>) -> bool {
    let stateless =
        context.protocol_version().is_some_and(|v| v.as_str() >= ProtocolVersion::V_2026_07_28.as_str());
    let form = context
        .client_capabilities()
        .and_then(|caps| caps.elicitation)
        .is_some_and(|e| e.form.is_some() || e.url.is_none());
    stateless && form
}

/// The approvals of `run` still waiting for a person at `now_ms`, in order.
pub fn undecided(run: &RunRecord, now_ms: u64) -> Vec<PendingCall> {
    run.pending
        .iter()
        .filter(|p| {
            p.kind == PendingKind::Approval
                && p.expires_ms > now_ms
                && !run.decisions.iter().any(|d| d.pending_id == p.id)
        })
        .cloned()
        .collect()
}

/// The `input_required` result asking about `calls` of `run_id`: one form per call, keyed by the
/// call's pending id, and the signed states of the round as `requestState`.
pub fn ask(
    key: &ApprovalKey,
    run_id: &str,
    calls: &[PendingCall],
    now_ms: u64,
) -> anyhow::Result<InputRequiredResult> {
    let mut requests = InputRequests::new();
    let mut states = Vec::with_capacity(calls.len());
    for pending in calls.iter().take(MAX_STATES) {
        let expires_ms = pending.expires_ms.min(now_ms + approvals::ASK_MS);
        let state = key.sign(run_id, pending, approvals::nonce()?, expires_ms);
        let params = approvals::request(run_id, pending, &state, expires_ms);
        requests.insert(pending.id.clone(), InputRequest::Elicitation(ElicitRequest::new(params)));
        states.push(state);
    }
    Ok(InputRequiredResult::new(Some(requests), Some(states.join(&SEPARATOR.to_string()))))
}

/// One answered call of a retried request.
#[derive(Debug)]
pub struct Answered {
    pub claims: Claims,
    pub choice: Choice,
}

/// What a retried request carries: the run its states name, and each call the person decided
/// (a dismissed form, or a call with no answer, stays pending).
#[derive(Debug)]
pub struct Retry {
    pub run_id: String,
    pub answered: Vec<Answered>,
}

/// Reads a retried request: every state must verify and name the same run.
pub fn read(
    key: &ApprovalKey,
    request_state: &str,
    responses: Option<&InputResponses>,
    now_ms: u64,
) -> Result<Retry, StateError> {
    let states: Vec<&str> = request_state.split(SEPARATOR).collect();
    if states.len() > MAX_STATES {
        return Err(StateError::Malformed);
    }
    let mut run_id: Option<String> = None;
    let mut answered = Vec::new();
    for state in states {
        let claims = key.verify(state, now_ms)?;
        match &run_id {
            Some(id) if *id != claims.run_id => return Err(StateError::Mismatch),
            Some(_) => {}
            None => run_id = Some(claims.run_id.clone()),
        }
        let reply = responses
            .and_then(|r| r.get(&claims.pending_id))
            .and_then(|value| serde_json::from_value::<ElicitResult>(value.clone()).ok());
        if let Some(Answer::Decided(choice)) = reply.as_ref().map(approvals::answer) {
            answered.push(Answered { claims, choice });
        }
    }
    Ok(Retry { run_id: run_id.ok_or(StateError::Malformed)?, answered })
}

#[cfg(test)]
mod tests {
    use super::approvals::tests::NOW;
    use super::*;
    use serde_json::json;

    const RUN: &str = "run_0123456789abcdef";

    fn pending(id: &str, seq: u32) -> PendingCall {
        PendingCall { expires_ms: NOW + 60_000, ..approvals::tests::pending(id, seq, "{}") }
    }

    fn responses(pairs: &[(&str, serde_json::Value)]) -> InputResponses {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), v.clone())).collect()
    }

    #[test]
    fn a_round_asks_once_per_call_and_reads_back_the_answers() {
        let key = ApprovalKey::from_bytes([7; 32]);
        let calls = [pending("p_000000000001", 0), pending("p_000000000002", 1)];
        let asked = ask(&key, RUN, &calls, NOW).unwrap();
        let requests = asked.input_requests.as_ref().unwrap();
        assert_eq!(requests.keys().collect::<Vec<_>>(), ["p_000000000001", "p_000000000002"]);
        let state = asked.request_state.unwrap();

        let answers = responses(&[
            ("p_000000000001", json!({"action": "accept", "content": {"choice": "once"}})),
            ("p_000000000002", json!({"action": "cancel"})),
        ]);
        let retry = read(&key, &state, Some(&answers), NOW + 1).unwrap();
        assert_eq!(retry.run_id, RUN);
        assert_eq!(retry.answered.len(), 1, "a dismissed form decides nothing");
        assert_eq!(retry.answered[0].claims.pending_id, "p_000000000001");
        assert_eq!(retry.answered[0].choice, Choice::Once);
    }

    #[test]
    fn forged_mixed_or_expired_states_count_for_nothing() {
        let key = ApprovalKey::from_bytes([7; 32]);
        let other = ApprovalKey::from_bytes([8; 32]);
        let calls = [pending("p_000000000001", 0)];
        let state = ask(&key, RUN, &calls, NOW).unwrap().request_state.unwrap();
        let forged = ask(&other, RUN, &calls, NOW).unwrap().request_state.unwrap();
        let elsewhere = ask(&key, "run_fedcba9876543210", &calls, NOW).unwrap().request_state.unwrap();
        let answers =
            responses(&[("p_000000000001", json!({"action": "accept", "content": {"choice": "always"}}))]);

        assert_eq!(read(&key, &forged, Some(&answers), NOW).unwrap_err(), StateError::BadSignature);
        assert_eq!(
            read(&key, &format!("{state}~{elsewhere}"), Some(&answers), NOW).unwrap_err(),
            StateError::Mismatch
        );
        assert_eq!(read(&key, &state, Some(&answers), NOW + 61_000).unwrap_err(), StateError::Expired);
        assert_eq!(read(&key, "", Some(&answers), NOW).unwrap_err(), StateError::Malformed);
        let many = vec![state.as_str(); MAX_STATES + 1].join("~");
        assert_eq!(read(&key, &many, Some(&answers), NOW).unwrap_err(), StateError::Malformed);
    }
}

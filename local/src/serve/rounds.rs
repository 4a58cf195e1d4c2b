//! Approval rounds in rmcp's types, for clients on the stateless revision (2026-07-28). The
//! rounds themselves, and how a client answers them, are the core's
//! (`capabilities_core::approval::rounds`); this module tells from rmcp's request context
//! whether a client takes them ([`asks_inline`]), turns a round into rmcp's `input_required`
//! result ([`ask`]) and reads a retried call's answers back ([`read`]). `ask.rs` drives them.

use capabilities_core::approval::PendingCall;
use capabilities_core::approval::rounds::{self as core_rounds};
pub use capabilities_core::approval::rounds::{Answered, Retry, undecided};
use rmcp::model::{
    ElicitRequest, ElicitRequestParams, ElicitResult, InputRequest, InputRequests, InputRequiredResult,
    InputResponses, ProtocolVersion,
};
use rmcp::service::{RequestContext, RoleServer};

use super::approvals::{self, Answer, ApprovalKey, StateError};
use crate::host::later;

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

/// The `input_required` result asking about `calls` of `run_id`: one form per call, keyed by the
/// call's pending id, and the signed states of the round as `requestState`.
pub fn ask(
    key: &ApprovalKey,
    run_id: &str,
    calls: &[PendingCall],
    now_ms: u64,
) -> anyhow::Result<InputRequiredResult> {
    let mut nonces = Vec::with_capacity(calls.len());
    for _ in calls.iter().take(core_rounds::MAX_STATES) {
        nonces.push(approvals::nonce()?);
    }
    let mut nonces = nonces.into_iter();
    let round = core_rounds::ask(key, run_id, calls, now_ms, &later(run_id), &mut || {
        nonces.next().unwrap_or_default()
    });
    to_rmcp(round)
}

/// The core's round in rmcp's types.
fn to_rmcp(round: core_rounds::Round) -> anyhow::Result<InputRequiredResult> {
    let mut requests = InputRequests::new();
    for (id, form) in capabilities_core::surface::approval::forms(&round) {
        let params: ElicitRequestParams = serde_json::from_value(form)?;
        requests.insert(id, InputRequest::Elicitation(ElicitRequest::new(params)));
    }
    Ok(InputRequiredResult::new(Some(requests), Some(round.request_state)))
}

/// Reads a retried request: every state must verify and name the same run.
pub fn read(
    key: &ApprovalKey,
    request_state: &str,
    responses: Option<&InputResponses>,
    now_ms: u64,
) -> Result<Retry, StateError> {
    let reply = |id: &str| {
        responses
            .and_then(|r| r.get(id))
            .and_then(|value| serde_json::from_value::<ElicitResult>(value.clone()).ok())
            .map_or(Answer::Undecided, |reply| approvals::answer(&reply))
    };
    core_rounds::read(key, request_state, reply, now_ms)
}

#[cfg(test)]
mod tests {
    use super::approvals::tests::NOW;
    use super::*;
    use capabilities_core::approval::Choice;
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
    fn the_wire_is_the_cores_so_the_hosted_hub_sends_the_same() {
        let key = ApprovalKey::from_bytes([7; 32]);
        let calls = [pending("p_000000000001", 0), pending("p_000000000002", 1)];
        let mut n = 0u8;
        let round = core_rounds::ask(&key, RUN, &calls, NOW, &later(RUN), &mut || {
            n += 1;
            [n; 16]
        });
        let ours = serde_json::to_value(to_rmcp(round.clone()).unwrap()).unwrap();
        assert_eq!(ours, capabilities_core::surface::approval::input_required(&round));
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
        let many = vec![state.as_str(); core_rounds::MAX_STATES + 1].join("~");
        assert_eq!(read(&key, &many, Some(&answers), NOW).unwrap_err(), StateError::Malformed);
    }
}

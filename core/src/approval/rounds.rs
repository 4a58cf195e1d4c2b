//! Approvals for clients on the stateless revision (2026-07-28), which a hub cannot send a
//! request in the middle of a call. A run that waits for a person comes back as an
//! `input_required` result holding one form per undecided call and the states signed for them;
//! the client shows the forms, then sends the same `tools/call` again with the answers and the
//! states. An answer counts only with the state signed for its call, unexpired, once (the host
//! spends the nonce).

use serde_json::{Map, Value};

use super::state::{self, Answer, ApprovalKey, Claims, NONCE_BYTES, StateError};
use super::{Choice, PendingCall};
use crate::record::RunRecord;

/// Joins the states of one round into the one `requestState` the client echoes. Signed states
/// are made of letters, digits, `_` and `.`, never this.
pub const SEPARATOR: char = '~';

/// The most calls one round asks about (a run holds at most `maxConcurrent` waiting calls; this
/// only bounds what a forged state can make the hub verify).
pub const MAX_STATES: usize = 64;

/// The approvals of `run` still waiting for a person at `now_ms`, in order.
pub fn undecided(run: &RunRecord, now_ms: u64) -> Vec<PendingCall> {
    run.undecided().filter(|p| p.expires_ms > now_ms).cloned().collect()
}

/// Whether an answer's signed state names its call's place in `run`: a state for a pending id
/// the run holds at another `seq` is refused. The recorder refuses the rest (a run that waits
/// for nothing, a call it does not wait for), so a run or call not found passes here.
pub fn check_claims(run: Option<&RunRecord>, claims: &Claims) -> Result<(), StateError> {
    let pending = run.and_then(|run| run.pending.iter().find(|p| p.id == claims.pending_id));
    match pending {
        Some(p) if p.seq != claims.seq => Err(StateError::Mismatch),
        _ => Ok(()),
    }
}

/// One round of questions: for each undecided call, the state signed for it and when its prompt
/// closes; the states joined into the one `requestState` the client echoes. The surface turns
/// it into the `input_required` result on the wire.
#[derive(Debug, Clone, PartialEq)]
pub struct Round {
    pub run_id: String,
    /// Where the person decides once a prompt has closed.
    pub later: String,
    pub asks: Vec<Ask>,
    pub request_state: String,
}

/// One call a round asks about.
#[derive(Debug, Clone, PartialEq)]
pub struct Ask {
    pub pending: PendingCall,
    /// The state signed for this call.
    pub state: String,
    pub closes_ms: u64,
}

/// The round asking about `calls` of `run_id` at `now_ms`, each state with a fresh nonce from
/// `nonce`; `later` says where the person decides once a prompt has closed.
pub fn ask(
    key: &ApprovalKey,
    run_id: &str,
    calls: &[PendingCall],
    now_ms: u64,
    later: &str,
    nonce: &mut dyn FnMut() -> [u8; NONCE_BYTES],
) -> Round {
    let mut asks = Vec::with_capacity(calls.len());
    let mut states = Vec::with_capacity(calls.len());
    for pending in calls.iter().take(MAX_STATES) {
        let closes_ms = pending.expires_ms.min(now_ms + state::ASK_MS);
        let signed = key.sign(run_id, pending, nonce(), closes_ms);
        asks.push(Ask { pending: pending.clone(), state: signed.clone(), closes_ms });
        states.push(signed);
    }
    Round {
        run_id: run_id.to_owned(),
        later: later.to_owned(),
        asks,
        request_state: states.join(&SEPARATOR.to_string()),
    }
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

/// Reads a retried request: every state must verify and name the same run; `reply` reads the
/// answer the client sent for a pending id.
pub fn read(
    key: &ApprovalKey,
    request_state: &str,
    reply: impl Fn(&str) -> Answer,
    now_ms: u64,
) -> Result<Retry, StateError> {
    let states: Vec<&str> = request_state.split(SEPARATOR).collect();
    if states.len() > MAX_STATES {
        return Err(StateError::Malformed);
    }
    let mut run_id: Option<String> = None;
    let mut answered = Vec::new();
    for signed in states {
        let claims = key.verify(signed, now_ms)?;
        match &run_id {
            Some(id) if *id != claims.run_id => return Err(StateError::Mismatch),
            Some(_) => {}
            None => run_id = Some(claims.run_id.clone()),
        }
        if let Answer::Decided(choice) = reply(&claims.pending_id) {
            answered.push(Answered { claims, choice });
        }
    }
    Ok(Retry { run_id: run_id.ok_or(StateError::Malformed)?, answered })
}

/// [`read`] with the client's `inputResponses` as JSON.
pub fn read_json(
    key: &ApprovalKey,
    request_state: &str,
    responses: Option<&Map<String, Value>>,
    now_ms: u64,
) -> Result<Retry, StateError> {
    read(
        key,
        request_state,
        |id| responses.and_then(|r| r.get(id)).map_or(Answer::Undecided, state::answer_value),
        now_ms,
    )
}

#[cfg(test)]
mod tests {
    use super::super::state::tests::{NOW, pending as call};
    use super::*;
    use serde_json::json;

    const RUN: &str = "run_0123456789abcdef";

    fn pending(id: &str, seq: u32) -> PendingCall {
        PendingCall { expires_ms: NOW + 60_000, ..call(id, seq, "{}") }
    }

    fn counter() -> impl FnMut() -> [u8; NONCE_BYTES] {
        let mut n = 0u8;
        move || {
            n += 1;
            [n; NONCE_BYTES]
        }
    }

    fn responses(value: Value) -> Map<String, Value> {
        value.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn a_round_asks_once_per_call_and_reads_back_the_answers() {
        let key = ApprovalKey::from_bytes([7; 32]);
        let calls = [pending("p_000000000001", 0), pending("p_000000000002", 1)];
        let asked = ask(&key, RUN, &calls, NOW, "later", &mut counter());
        let wire = crate::surface::approval::input_required(&asked);
        assert_eq!(wire["resultType"], "input_required");
        let ids: Vec<&String> = wire["inputRequests"].as_object().unwrap().keys().collect();
        assert_eq!(ids, ["p_000000000001", "p_000000000002"]);
        assert_eq!(wire["inputRequests"]["p_000000000001"]["method"], "elicitation/create");
        assert_eq!(asked.request_state.matches(SEPARATOR).count(), 1);

        let answers = responses(json!({
            "p_000000000001": {"action": "accept", "content": {"choice": "once"}},
            "p_000000000002": {"action": "cancel"},
        }));
        let retry = read_json(&key, &asked.request_state, Some(&answers), NOW + 1).unwrap();
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
        let state = ask(&key, RUN, &calls, NOW, "", &mut counter()).request_state;
        let forged = ask(&other, RUN, &calls, NOW, "", &mut counter()).request_state;
        let elsewhere = ask(&key, "run_fedcba9876543210", &calls, NOW, "", &mut counter()).request_state;
        let answers =
            responses(json!({"p_000000000001": {"action": "accept", "content": {"choice": "always"}}}));
        let read = |state: &str, now| read_json(&key, state, Some(&answers), now).map(|r| r.run_id);

        assert_eq!(read(&forged, NOW).unwrap_err(), StateError::BadSignature);
        assert_eq!(read(&format!("{state}~{elsewhere}"), NOW).unwrap_err(), StateError::Mismatch);
        assert_eq!(read(&state, NOW + 61_000).unwrap_err(), StateError::Expired);
        assert_eq!(read("", NOW).unwrap_err(), StateError::Malformed);
        let many = vec![state.as_str(); MAX_STATES + 1].join("~");
        assert_eq!(read(&many, NOW).unwrap_err(), StateError::Malformed);
    }
}

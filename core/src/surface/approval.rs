//! Approvals on the wire: the `elicitation/create` form a client shows a person for one waiting
//! call, and the `input_required` result that carries a round of them to clients on the
//! stateless revision (2026-07-28). What the forms say and how answers are read is
//! [`crate::approval::state`]'s; only their MCP shape is here.

use serde_json::{Map, Value, json};

use crate::approval::rounds::Round;
use crate::approval::state::{STATE_META, message};
use crate::pending::PendingCall;

/// The four choices, as the prompt offers them.
const CHOICES: [(&str, &str); 4] = [
    ("once", "Allow once"),
    ("run", "Allow for the rest of this run"),
    ("always", "Always allow (a policy rule pinned to this tool's contract)"),
    ("deny", "Deny"),
];

/// The params of the `elicitation/create` form for `pending` of run `run_id`, carrying `state`
/// in `_meta`; the prompt closes at `closes_ms`. `later` says where else the person can decide
/// once the prompt has closed.
pub fn form(run_id: &str, pending: &PendingCall, state: &str, closes_ms: u64, later: &str) -> Value {
    let one_of: Vec<Value> =
        CHOICES.iter().map(|(value, title)| json!({ "const": value, "title": title })).collect();
    json!({
        "_meta": { STATE_META: state },
        "mode": "form",
        "message": message(run_id, pending, closes_ms, later),
        "requestedSchema": {
            "type": "object",
            "properties": {
                "choice": {
                    "type": "string",
                    "title": "Decision",
                    "description": "What may this call do?",
                    "oneOf": one_of,
                }
            },
            "required": ["choice"],
        },
    })
}

/// The forms of `round`, keyed by each call's pending id.
pub fn forms(round: &Round) -> Vec<(String, Value)> {
    round
        .asks
        .iter()
        .map(|ask| {
            (
                ask.pending.id.clone(),
                form(&round.run_id, &ask.pending, &ask.state, ask.closes_ms, &round.later),
            )
        })
        .collect()
}

/// The `input_required` result of `round`.
pub fn input_required(round: &Round) -> Value {
    let requests: Map<String, Value> = forms(round)
        .into_iter()
        .map(|(id, params)| (id, json!({ "method": "elicitation/create", "params": params })))
        .collect();
    json!({
        "resultType": "input_required",
        "inputRequests": requests,
        "requestState": round.request_state,
    })
}

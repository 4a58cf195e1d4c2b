//! The raw-result tap: JSON-RPC results exactly as a source sent them, keyed by request id.
//!
//! rmcp parses every response into its typed model, which drops fields it does not know (a
//! tool's `execution`, unknown annotation hints, extra result fields). The transports copy each
//! result's raw JSON here on the way in; the pool takes it back by the id of the request it
//! sent. The tap is bounded: results nobody takes (the initialize answer, late answers to
//! timed-out calls) fall off the front.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use serde_json::Value;

/// How many untaken results the tap keeps.
const CAPACITY: usize = 64;

#[derive(Clone, Default)]
pub(crate) struct RawTap {
    results: Arc<Mutex<VecDeque<(Value, Value)>>>,
}

impl RawTap {
    /// Records `message` if it is a JSON-RPC result (an object with `id` and `result`).
    pub(crate) fn observe(&self, message: &Value) {
        let Some(object) = message.as_object() else { return };
        let (Some(id), Some(result)) = (object.get("id"), object.get("result")) else { return };
        self.record(id.clone(), result.clone());
    }

    fn record(&self, id: Value, result: Value) {
        let mut results = self.results.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        results.retain(|(known, _)| *known != id);
        if results.len() >= CAPACITY {
            results.pop_front();
        }
        results.push_back((id, result));
    }

    /// Takes the raw result of the request with this id, if it came in.
    pub(crate) fn take(&self, id: &rmcp::model::RequestId) -> Option<Value> {
        let id = serde_json::to_value(id).ok()?;
        let mut results = self.results.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let at = results.iter().position(|(known, _)| *known == id)?;
        results.remove(at).map(|(_, result)| result)
    }
}

#[cfg(test)]
mod tests {
    use rmcp::model::{NumberOrString, RequestId};
    use serde_json::json;

    use super::*;

    #[test]
    fn takes_results_by_id_once() {
        let tap = RawTap::default();
        tap.observe(&json!({"jsonrpc": "2.0", "id": 3, "result": {"tools": [], "extra": 1}}));
        tap.observe(&json!({"jsonrpc": "2.0", "method": "notifications/progress"}));
        tap.observe(&json!({"jsonrpc": "2.0", "id": "a", "error": {"code": 1, "message": "x"}}));
        let three: RequestId = NumberOrString::Number(3);
        assert_eq!(tap.take(&three), Some(json!({"tools": [], "extra": 1})));
        assert_eq!(tap.take(&three), None);
        assert_eq!(tap.take(&NumberOrString::String("a".into())), None);
    }

    #[test]
    fn forgets_the_oldest_beyond_capacity() {
        let tap = RawTap::default();
        for id in 0..(CAPACITY as i64 + 1) {
            tap.observe(&json!({"id": id, "result": {}}));
        }
        assert_eq!(tap.take(&NumberOrString::Number(0)), None);
        assert_eq!(tap.take(&NumberOrString::Number(CAPACITY as i64)), Some(json!({})));
    }
}

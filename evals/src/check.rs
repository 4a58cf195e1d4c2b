//! Success checks: predicates over the fixtures' final state, never over the model's text.

use serde_json::{Map, Value};

use crate::task::Check;

/// `None` when the check holds, otherwise what was wrong.
pub fn failure(check: &Check, state: &Value) -> Option<String> {
    let Some(records) = state.get(&check.collection).and_then(Value::as_array) else {
        return Some(format!("{} has no collection `{}`", check.source, check.collection));
    };
    let matching: Vec<&Value> = records.iter().filter(|r| selects(&check.filter, r)).collect();
    let passing = matching.iter().filter(|r| satisfies(&check.expect, r)).count();
    let ok = match check.count {
        Some(n) => passing == n,
        None => passing > 0,
    };
    if ok {
        return None;
    }
    Some(format!(
        "{}.{} where {}: {} records match, {} satisfy {} (wanted {})",
        check.source,
        check.collection,
        Value::Object(check.filter.clone()),
        matching.len(),
        passing,
        Value::Object(check.expect.clone()),
        check.count.map_or_else(|| "at least 1".to_owned(), |n| n.to_string()),
    ))
}

fn selects(filter: &Map<String, Value>, record: &Value) -> bool {
    filter.iter().all(|(key, want)| record.get(key).unwrap_or(&Value::Null) == want)
}

/// Each expectation is `{"eq": v}`, `{"has": v}` (an array holds v), `{"lacks": v}`, or
/// `{"contains": [..]}` (text holds every string, ignoring case).
fn satisfies(expect: &Map<String, Value>, record: &Value) -> bool {
    expect.iter().all(|(key, test)| {
        let field = record.get(key).unwrap_or(&Value::Null);
        let Some(test) = test.as_object() else { return false };
        test.iter().all(|(op, arg)| match op.as_str() {
            "eq" => field == arg,
            "has" => field.as_array().is_some_and(|a| a.contains(arg)),
            "lacks" => !field.as_array().is_some_and(|a| a.contains(arg)),
            "contains" => {
                let text = match field {
                    Value::String(s) => s.to_lowercase(),
                    other => other.to_string().to_lowercase(),
                };
                arg.as_array().is_some_and(|words| {
                    words.iter().all(|w| w.as_str().is_some_and(|w| text.contains(&w.to_lowercase())))
                })
            }
            _ => false,
        })
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(value: Value) -> Check {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn checks_read_records() {
        let state = json!({"issues": [
            {"id": 1, "labels": ["bug"], "title": "Login Fails"},
            {"id": 2, "labels": [], "title": "Other"}
        ]});
        let has = check(
            json!({"source": "t", "collection": "issues", "where": {"id": 1}, "expect": {"labels": {"has": "bug"}, "title": {"contains": ["login", "FAILS"]}}}),
        );
        assert_eq!(failure(&has, &state), None);
        let none = check(
            json!({"source": "t", "collection": "issues", "where": {"id": 2}, "expect": {"labels": {"has": "bug"}}}),
        );
        assert!(failure(&none, &state).is_some());
        let count = check(
            json!({"source": "t", "collection": "issues", "expect": {"labels": {"lacks": "bug"}}, "count": 1}),
        );
        assert_eq!(failure(&count, &state), None);
        let missing = check(json!({"source": "t", "collection": "nope"}));
        assert!(failure(&missing, &state).unwrap().contains("no collection"));
    }
}

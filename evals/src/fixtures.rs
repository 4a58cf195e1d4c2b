//! The fixture sources both modes work against (the servers in `evals/fixtures/servers/`), and
//! the person's standing policy over them, shared by the local (`modes`) and hosted (`hosted`)
//! runs.

use serde_json::{Value, json};

/// The fixture sources, in the order they are added to the hub.
pub const SOURCES: [&str; 5] = ["tracker", "chat", "calendar", "docs", "crm"];

/// Writes the person's standing policy: everyday writes to the tracker, chat and docs run
/// without asking; calendar and CRM writes, and anything destructive, ask.
const ALLOWED_SOURCES: [&str; 3] = ["tracker", "chat", "docs"];
const ASKING_TOOLS: [&str; 4] =
    ["tracker.deleteIssue", "chat.deleteMessage", "chat.archiveChannel", "docs.deleteDocument"];

/// The rules of that policy, as the policy file holds them.
pub(crate) fn rules() -> Value {
    let mut rules: Vec<Value> =
        ALLOWED_SOURCES.iter().map(|s| json!({"source": s, "effect": "allow"})).collect();
    rules.extend(ASKING_TOOLS.iter().map(|t| json!({"tool": t, "effect": "ask"})));
    Value::Array(rules)
}

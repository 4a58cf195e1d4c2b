//! The fixture sources both modes work against (the servers in `evals/fixtures/servers/`), and
//! the person's standing policy over them, shared by the local (`modes`) and hosted (`hosted`)
//! runs.

use serde_json::{Value, json};

/// The fixture MCP sources, in the order they are added to the hub.
pub const SOURCES: [&str; 5] = ["tracker", "chat", "calendar", "docs", "crm"];

/// The fixture HTTP API source (`servers/store.mjs`, described by `store.openapi.json`).
pub const STORE: &str = "store";

/// Every fixture namespace, MCP and HTTP API.
pub const NAMESPACES: [&str; 6] = ["tracker", "chat", "calendar", "docs", "crm", STORE];

/// Writes the person's standing policy: everyday writes to the tracker, chat, docs and the
/// store run without asking; calendar and CRM writes, money going back, and anything
/// destructive ask.
const ALLOWED_SOURCES: [&str; 4] = ["tracker", "chat", "docs", STORE];
const ASKING_TOOLS: [&str; 8] = [
    "tracker.deleteIssue",
    "chat.deleteMessage",
    "chat.archiveChannel",
    "docs.deleteDocument",
    "store.refundOrder",
    "store.cancelOrder",
    "store.deleteProduct",
    "store.deleteCoupon",
];

/// The rules of that policy, as the policy file holds them.
pub(crate) fn rules() -> Value {
    let mut rules: Vec<Value> =
        ALLOWED_SOURCES.iter().map(|s| json!({"source": s, "effect": "allow"})).collect();
    rules.extend(ASKING_TOOLS.iter().map(|t| json!({"tool": t, "effect": "ask"})));
    Value::Array(rules)
}

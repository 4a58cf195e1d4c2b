//! The fixed surface every host serves: the three tool definitions (`search`, `describe`,
//! `execute`) as MCP JSON, the server instructions, and the check of `execute`'s arguments.
//! Local and hosted both take them from here, so the two never drift apart.

use serde_json::{Value, json};

use crate::limits::Limits;

pub const SEARCH: &str = "search";
pub const DESCRIBE: &str = "describe";
pub const EXECUTE: &str = "execute";

/// Targets one `describe` call takes at most.
pub const MAX_DESCRIBE_TARGETS: usize = 10;

/// What the server tells the model once, at initialize.
pub const INSTRUCTIONS: &str = "\
The user's tools (MCP servers and APIs) are reachable only through code.
1. `search` for the task to find tool addresses.
2. `describe` the tools you will call to get their exact types.
3. `execute` JavaScript that calls them; chain many calls in one run.
Approvals and credentials are handled by the user outside the chat.";

const SEARCH_DESCRIPTION: &str = "\
Find the user's tools by the task at hand, e.g. \"open pull requests\" or \"send an email\". \
Lists tool addresses with a one-line TypeScript signature each, most relevant first; `[asks]` \
marks tools that wait for the user's approval. Pass `namespace` to stay in one source, with an \
empty query to list it. Call `describe` before writing code.";

const DESCRIBE_DESCRIPTION: &str = "\
Exact TypeScript declarations to write `execute` code against. A target is a tool address \
(`github.createIssue`), a namespace (`github`) or a type named in an earlier declaration \
(`github.Issue`).";

const EXECUTE_DESCRIPTION: &str = "\
Run JavaScript as the body of an async function; TypeScript types are stripped. Each source is \
a global object of async functions: `return await github.createIssue({ owner, repo, title })`. \
`return` only what you need and use `Promise.all` for independent calls. There is no network, \
file system or import. If a call needs the user's approval or a connection, `status` says so: \
tell the user, and after they decide call again with `{\"resume\": runId}`. Never ask for \
passwords or tokens in the chat.";

/// The three tools as `tools/list` entries, in the order it returns them.
pub fn definitions(limits: &Limits) -> Vec<Value> {
    vec![search(limits), describe(), execute(limits)]
}

fn read_only() -> Value {
    json!({ "readOnlyHint": true, "idempotentHint": true, "openWorldHint": false })
}

fn search(limits: &Limits) -> Value {
    json!({
        "name": SEARCH,
        "description": SEARCH_DESCRIPTION,
        "inputSchema": super::search::input_schema(limits),
        "annotations": read_only()
    })
}

fn describe() -> Value {
    json!({
        "name": DESCRIBE,
        "description": DESCRIBE_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "targets": {
                    "type": "array",
                    "items": { "type": "string" },
                    "minItems": 1,
                    "maxItems": MAX_DESCRIBE_TARGETS
                }
            },
            "required": ["targets"],
            "additionalProperties": false
        },
        "annotations": read_only()
    })
}

fn execute(limits: &Limits) -> Value {
    json!({
        "name": EXECUTE,
        "description": EXECUTE_DESCRIPTION,
        "inputSchema": {
            "type": "object",
            "properties": {
                "code": {
                    "type": "string",
                    "maxLength": limits.code_bytes,
                    "description": "The code to run. Send this or `resume`, not both."
                },
                "resume": {
                    "type": "string",
                    "description": "The runId of a run to continue after the user decided."
                }
            },
            "additionalProperties": false
        },
        "outputSchema": envelope_schema(),
        "annotations": { "readOnlyHint": false, "openWorldHint": true }
    })
}

/// The JSON Schema of the envelope `execute` returns as structured content.
pub fn envelope_schema() -> Value {
    let string = json!({ "type": "string" });
    let strings = json!({ "type": "array", "items": { "type": "string" } });
    json!({
        "type": "object",
        "properties": {
            "runId": string,
            "status": {
                "type": "string",
                "enum": ["completed", "failed", "awaiting_approval", "awaiting_connection", "cancelled"]
            },
            "result": {},
            "error": {
                "type": "object",
                "properties": { "code": string, "message": string, "hint": string },
                "required": ["code", "message"]
            },
            "logs": strings,
            "calls": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "address": string,
                        "ok": { "type": "boolean" },
                        "ms": { "type": "integer" }
                    },
                    "required": ["address", "ok", "ms"]
                }
            },
            "pending": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "id": string,
                        "kind": { "type": "string", "enum": ["approval", "connection"] },
                        "address": string,
                        "summary": string,
                        "message": string
                    },
                    "required": ["id", "kind", "summary"]
                }
            },
            "truncated": {
                "type": "object",
                "properties": { "result": { "type": "boolean" }, "logs": { "type": "boolean" } }
            },
            "handles": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "handle": string,
                        "kind": { "type": "string", "enum": ["result", "logs"] },
                        "bytes": { "type": "integer" },
                        "uri": string
                    },
                    "required": ["handle", "kind", "bytes", "uri"]
                }
            },
            "notices": strings
        },
        "required": ["runId", "status", "calls"]
    })
}

/// The whole fixed surface as the model meets it: the definitions and the instructions.
pub fn surface_json(limits: &Limits) -> Value {
    json!({ "tools": definitions(limits), "instructions": INSTRUCTIONS })
}

/// What one `execute` call asks for, its arguments checked.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ExecuteRequest {
    /// A new run of this code.
    Code(String),
    /// Continue the run with this id.
    Resume(String),
}

/// `execute` takes exactly one of `code` and `resume`, each a string.
pub fn parse_execute(arguments: &Value, limits: &Limits) -> Result<ExecuteRequest, String> {
    let field = |name: &str| -> Result<Option<String>, String> {
        match arguments.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(text)) => Ok(Some(text.clone())),
            Some(_) => Err(format!("`{name}` must be a string")),
        }
    };
    if let Some(extra) = arguments.as_object().and_then(|o| o.keys().find(|k| *k != "code" && *k != "resume"))
    {
        return Err(format!("execute takes `code` or `resume`, not `{extra}`"));
    }
    match (field("code")?, field("resume")?) {
        (Some(_), Some(_)) => {
            Err("send either `code` (a new run) or `resume` (a runId to continue), not both".to_owned())
        }
        (None, None) => {
            Err("execute needs `code` (JavaScript to run) or `resume` (the runId of a waiting run)"
                .to_owned())
        }
        (Some(code), None) if code.len() > limits.code_bytes => Err(format!(
            "`code` is {} bytes, over the limit of {}: split the work into smaller runs",
            code.len(),
            limits.code_bytes
        )),
        (Some(code), None) if code.trim().is_empty() => {
            Err("`code` is empty: send the body of an async function".to_owned())
        }
        (Some(code), None) => Ok(ExecuteRequest::Code(code)),
        (None, Some(run_id)) => Ok(ExecuteRequest::Resume(run_id)),
    }
}

//! The fixed surface the hub serves: the three tool definitions (`search`, `describe`,
//! `execute`) and the server instructions, built here and nowhere else.

use std::sync::Arc;

use capabilities_core::limits::Limits;
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

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

/// The three tools, in the order `tools/list` returns them.
pub fn definitions(limits: &Limits) -> Vec<Tool> {
    vec![search(limits), describe(), execute(limits)]
}

/// The definition named `name`, if it is one of the three.
pub fn definition(name: &str, limits: &Limits) -> Option<Tool> {
    definitions(limits).into_iter().find(|t| t.name == name)
}

fn search(limits: &Limits) -> Tool {
    Tool::new(SEARCH, SEARCH_DESCRIPTION, object(capabilities_core::surface::search::input_schema(limits)))
        .with_annotations(ToolAnnotations::new().read_only(true).idempotent(true).open_world(false))
}

fn describe() -> Tool {
    let schema = json!({
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
    });
    Tool::new(DESCRIBE, DESCRIBE_DESCRIPTION, object(schema))
        .with_annotations(ToolAnnotations::new().read_only(true).idempotent(true).open_world(false))
}

fn execute(limits: &Limits) -> Tool {
    let input = json!({
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
    });
    Tool::new(EXECUTE, EXECUTE_DESCRIPTION, object(input))
        .with_raw_output_schema(Arc::new(object(envelope_schema())))
        .with_annotations(ToolAnnotations::new().read_only(false).open_world(true))
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
            "notices": strings
        },
        "required": ["runId", "status", "calls"]
    })
}

/// The whole fixed surface as the model meets it: the definitions and the instructions.
pub fn surface_json(limits: &Limits) -> Value {
    json!({ "tools": definitions(limits), "instructions": INSTRUCTIONS })
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fixed_surface_fits_its_token_budget() {
        let limits = Limits::DEFAULT;
        let text = serde_json::to_string(&surface_json(&limits)).unwrap();
        let tokens = capabilities_core::tokens::count(&text);
        eprintln!("fixed surface: {tokens} tokens");
        assert!(tokens <= limits.surface_tokens.min(1500), "the fixed surface is {tokens} tokens");
    }

    #[test]
    fn exactly_three_tools() {
        let names: Vec<String> = definitions(&Limits::DEFAULT).iter().map(|t| t.name.to_string()).collect();
        assert_eq!(names, ["search", "describe", "execute"]);
        assert!(definition("execute", &Limits::DEFAULT).is_some_and(|t| t.output_schema.is_some()));
        assert!(definition("hub", &Limits::DEFAULT).is_none());
    }
}

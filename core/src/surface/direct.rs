//! Direct mode: a profile that lists each of its tools as an MCP tool of its own, for clients
//! and models that do better with plain tools than with code. The names follow MCP's advice
//! for tool names (`[a-zA-Z0-9_-]`, at most 64 characters; we keep to 50, since harnesses put
//! a prefix of their own in front) and depend only on the tools' addresses, so every process
//! and every connection serving the profile lists the same names.
//!
//! A direct call is still a run: [`call_code`] is the one line of code the call stands for, so
//! policy, approvals, contract pinning, scrubbing and the journal treat it exactly as they treat
//! `execute`. [`call_result`] turns the run's envelope back into a tool result.

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use super::envelope::{Envelope, EnvelopeStatus};
use crate::address::ToolAddress;
use crate::catalog::Catalog;
use crate::limits::Limits;
use crate::manifest::Tool;

/// The longest name listed. MCP allows 64; harnesses prefix names with their own
/// (`mcp__capabilities__`), and some refuse the whole name past 64.
pub const MAX_NAME: usize = 50;

/// The largest arguments a direct call takes, as JSON. In code mode they would be part of the
/// code, whose limit is far smaller; here they are all a call has.
pub const MAX_ARGUMENT_BYTES: usize = 1024 * 1024;

/// A direct call's result goes back whole up to this size (the source would have returned it
/// whole); past it, the client gets the preview and a handle, as `execute` does.
pub const INLINE_RESULT_BYTES: usize = 1024 * 1024;

/// The limits a direct call runs under: the host's, with room for the arguments in the code and
/// for the result inline.
pub fn limits(base: Limits) -> Limits {
    Limits {
        code_bytes: base.code_bytes.max(MAX_ARGUMENT_BYTES + 4096),
        inline_result_bytes: base.inline_result_bytes.max(INLINE_RESULT_BYTES),
        ..base
    }
}

/// Hex digits of the address's SHA-256 that make a shortened or colliding name unique.
const HASH_DIGITS: usize = 8;

/// The server instructions of a direct-mode profile.
pub const INSTRUCTIONS: &str = "Each tool here is a tool of one of the person's sources, called through their hub \
(capabilities): its policy decides each call, a call that writes may wait for the person to approve it, \
and every call is kept in the hub's run history. When a result says a call waits for a person, call the same \
tool again with the same arguments once they have decided.";

/// How a profile in direct mode names its tools.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Naming {
    /// `<namespace>_<tool name>`: unique across sources, and what a person reading a harness's
    /// tool list can tell apart.
    #[default]
    Prefixed,
    /// The source's own tool names, for a profile serving one source; a name two sources share
    /// is listed prefixed for each of them.
    Bare,
}

/// The tools of a direct-mode profile under their listed names.
#[derive(Debug, Clone, Default)]
pub struct DirectTools {
    /// Listed name and address, in the catalog's order.
    listed: Vec<(String, ToolAddress)>,
    by_name: BTreeMap<String, usize>,
}

impl DirectTools {
    /// Names every tool of `catalog` that `listed` lets through (policy hides denied tools).
    pub fn new(catalog: &Catalog, naming: Naming, listed: impl Fn(&ToolAddress) -> bool) -> DirectTools {
        let tools: Vec<(ToolAddress, &Tool)> = catalog.tools().filter(|(a, _)| listed(a)).collect();
        // First choice of each tool; a bare name that another source shares falls back to the
        // prefixed one for every tool that has it.
        let mut first: Vec<String> = tools.iter().map(|(a, t)| natural(a, t, naming)).collect();
        if naming == Naming::Bare {
            let shared = shared(&first);
            for (i, (address, tool)) in tools.iter().enumerate() {
                if shared[i] {
                    first[i] = natural(address, tool, Naming::Prefixed);
                }
            }
        }
        // Names still shared (after folding characters or cutting to length) all take a hash of
        // their address, so no tool keeps a name another could have claimed first.
        let mut names: Vec<String> = shared(&first)
            .into_iter()
            .zip(first.iter().zip(&tools))
            .map(|(shared, (name, (address, _)))| match shared {
                true => hashed(name, address, HASH_DIGITS),
                false => name.clone(),
            })
            .collect();
        // A hashed name equal to another tool's own name is astronomically rare; a longer hash
        // settles it, and an index past that, so the listing never holds a name twice.
        let mut seen = BTreeMap::new();
        for (i, name) in names.iter_mut().enumerate() {
            if seen.contains_key(name.as_str()) {
                let longer = hashed(&first[i], &tools[i].0, 2 * HASH_DIGITS);
                *name = if seen.contains_key(longer.as_str()) { format!("{longer}{i}") } else { longer };
            }
            seen.insert(name.clone(), i);
        }
        let listed: Vec<(String, ToolAddress)> =
            names.into_iter().zip(tools).map(|(name, (address, _))| (name, address)).collect();
        let by_name = listed.iter().enumerate().map(|(i, (name, _))| (name.clone(), i)).collect();
        DirectTools { listed, by_name }
    }

    /// The tool listed as `name`.
    pub fn address(&self, name: &str) -> Option<&ToolAddress> {
        self.by_name.get(name).map(|&i| &self.listed[i].1)
    }

    /// Listed names with their addresses, in listing order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &ToolAddress)> {
        self.listed.iter().map(|(name, address)| (name.as_str(), address))
    }

    pub fn len(&self) -> usize {
        self.listed.len()
    }

    pub fn is_empty(&self) -> bool {
        self.listed.is_empty()
    }

    /// The MCP tool definitions, in listing order: the source's own title, description, input
    /// and output schemas and annotations, under the listed name.
    pub fn definitions(&self, catalog: &Catalog) -> Vec<Value> {
        self.iter()
            .filter_map(|(name, address)| Some(definition(name, address, catalog.tool(address)?)))
            .collect()
    }
}

/// One tool's MCP definition under `name`.
fn definition(name: &str, address: &ToolAddress, tool: &Tool) -> Value {
    let record = &tool.record;
    let mut out = Map::new();
    out.insert("name".into(), Value::String(name.to_owned()));
    if let Some(title) = &record.title {
        out.insert("title".into(), Value::String(title.clone()));
    }
    let description = match record.description.trim().is_empty() {
        true => format!("{address} (through capabilities)"),
        false => record.description.clone(),
    };
    out.insert("description".into(), Value::String(description));
    // MCP requires an object schema; a source that declared something else gets the loosest.
    let input = match &record.input_schema {
        schema @ Value::Object(map) if map.get("type").is_none_or(|t| t == "object") => schema.clone(),
        _ => json!({ "type": "object" }),
    };
    out.insert("inputSchema".into(), input);
    if let Some(schema @ Value::Object(map)) = &record.output_schema
        && map.get("type").is_some_and(|t| t == "object")
    {
        out.insert("outputSchema".into(), schema.clone());
    }
    let annotations = serde_json::to_value(&record.annotations).unwrap_or(Value::Null);
    if annotations.as_object().is_some_and(|a| !a.is_empty()) {
        out.insert("annotations".into(), annotations);
    }
    Value::Object(out)
}

/// The code a direct call to `address` with `arguments` runs: one awaited call, the arguments
/// parsed from JSON text (an object literal would give `__proto__` a meaning of its own).
pub fn call_code(address: &ToolAddress, arguments: &Value) -> String {
    let text = serde_json::to_string(arguments).unwrap_or_else(|_| "{}".to_owned());
    let literal = serde_json::to_string(&text).unwrap_or_else(|_| "\"{}\"".to_owned());
    format!("return await {}.{}(JSON.parse({literal}))", address.namespace, address.tool)
}

/// The run's envelope as an MCP `CallToolResult`: the tool's own content blocks when it
/// returned some, its text, or its structured value beside the same as JSON text. A run that
/// failed, was cancelled or still waits is an error result that says why and what to do.
pub fn call_result(envelope: &Envelope) -> Value {
    let mut notes: Vec<String> = envelope.notices.clone();
    let (content, structured, is_error) = match envelope.status {
        EnvelopeStatus::Completed => {
            let value = envelope.result.clone().unwrap_or(Value::Null);
            let truncated = envelope.truncated.as_ref().is_some_and(|t| t.result);
            match value {
                Value::Array(blocks) if !truncated && !blocks.is_empty() && blocks.iter().all(is_content) => {
                    (blocks, None, false)
                }
                Value::String(text) => (vec![text_block(text)], None, false),
                Value::Object(map) if !truncated => {
                    let text = serde_json::to_string(&map).unwrap_or_default();
                    (vec![text_block(text)], Some(Value::Object(map)), false)
                }
                other => (vec![text_block(serde_json::to_string(&other).unwrap_or_default())], None, false),
            }
        }
        EnvelopeStatus::AwaitingApproval | EnvelopeStatus::AwaitingConnection => {
            let waits: Vec<String> = envelope.pending.iter().map(|p| p.message.clone()).collect();
            let text = format!(
                "not called yet: {} (run {}). Once a person has decided, call this tool again with the \
                 same arguments: it continues the same run and does not ask again.",
                if waits.is_empty() { "the call waits for a person".to_owned() } else { waits.join("; ") },
                envelope.run_id
            );
            (vec![text_block(text)], None, true)
        }
        EnvelopeStatus::Failed | EnvelopeStatus::Cancelled | EnvelopeStatus::Running => {
            let text = match &envelope.error {
                Some(error) => match &error.hint {
                    Some(hint) => format!("{}: {} ({hint})", error.code, error.message),
                    None => format!("{}: {}", error.code, error.message),
                },
                None => format!("the call did not finish (run {} is {})", envelope.run_id, envelope.status),
            };
            (vec![text_block(text)], None, true)
        }
    };
    let mut content = content;
    for handle in &envelope.handles {
        notes.push(format!(
            "the whole {} is {} bytes, kept as handle {} at {}",
            handle.kind.as_str(),
            handle.bytes,
            handle.handle,
            handle.uri
        ));
    }
    content.extend(notes.into_iter().map(text_block));
    let mut result = json!({ "content": content, "isError": is_error });
    if let Some(structured) = structured {
        result["structuredContent"] = structured;
    }
    result
}

/// Whether `value` is an MCP content block the client can show as it is.
fn is_content(value: &Value) -> bool {
    let kind = value.get("type").and_then(Value::as_str);
    matches!(kind, Some("text" | "image" | "audio" | "resource" | "resource_link"))
}

fn text_block(text: String) -> Value {
    json!({ "type": "text", "text": text })
}

/// The name a tool would have with nothing in the way: its source's name for it, folded to
/// `[a-zA-Z0-9_-]`, prefixed by its namespace unless bare, cut to [`MAX_NAME`].
fn natural(address: &ToolAddress, tool: &Tool, naming: Naming) -> String {
    let own = fold(&tool.record.name);
    let own = if own.is_empty() { fold(&address.tool) } else { own };
    let name = match naming {
        Naming::Prefixed => format!("{}_{own}", fold(address.namespace.as_str())),
        Naming::Bare => own,
    };
    match name.len() > MAX_NAME {
        true => hashed(&name, address, HASH_DIGITS),
        false => name,
    }
}

/// `name` cut so that `_` and the first `digits` hex digits of the address's SHA-256 fit in
/// [`MAX_NAME`].
fn hashed(name: &str, address: &ToolAddress, digits: usize) -> String {
    let digest = hex::encode(Sha256::digest(address.to_string().as_bytes()));
    let keep = MAX_NAME - 1 - digits;
    // `name` is ASCII after folding, so any byte is a character boundary.
    let head = &name[..name.len().min(keep)];
    format!("{head}_{}", &digest[..digits])
}

fn fold(raw: &str) -> String {
    raw.chars().map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' }).collect()
}

/// For each name, whether another in `names` is the same.
fn shared(names: &[String]) -> Vec<bool> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for name in names {
        *counts.entry(name.as_str()).or_insert(0) += 1;
    }
    names.iter().map(|name| counts[name.as_str()] > 1).collect()
}

#[cfg(test)]
mod tests;

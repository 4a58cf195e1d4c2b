//! Fuzz target: typegen on any JSON Schema a source might list.
//!
//! The input is JSON: an array is a tool list (entries that are not tools become the input and
//! output schemas of a made-up tool), anything else is one tool's schema. Every signature is one
//! line, and every `describe` answer parses as a TypeScript declaration file and keeps to its
//! token budget.

#![no_main]

use capabilities_core::address::Namespace;
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::limits::Limits;
use capabilities_core::manifest::Manifest;
use capabilities_core::policy::{CompiledPolicy, PolicyState};
use capabilities_core::surface::Surface;
use capabilities_core::typegen::signature_line;
use libfuzzer_sys::fuzz_target;
use oxc::allocator::Allocator;
use oxc::parser::Parser;
use oxc::span::SourceType;
use serde_json::{Value, json};

/// `schema` as a tool entry, unless it already looks like one.
fn entry(i: usize, schema: Value) -> Value {
    if schema.get("name").is_some_and(Value::is_string) {
        return schema;
    }
    json!({"name": format!("tool_{i}"), "description": "A tool.", "inputSchema": schema, "outputSchema": schema})
}

fn assert_declarations(text: &str, budget: usize) {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, text, SourceType::d_ts()).parse();
    assert!(
        parsed.diagnostics.is_empty(),
        "describe's answer does not parse: {:?}\n{text}",
        parsed.diagnostics
    );
    let tokens = capabilities_core::tokens::count(text);
    assert!(tokens <= budget, "describe's answer is {tokens} tokens, over its budget of {budget}\n{text}");
}

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    let entries: Vec<Value> = match value {
        Value::Array(items) => items.into_iter().take(16).enumerate().map(|(i, v)| entry(i, v)).collect(),
        other => vec![entry(0, other)],
    };
    let namespace = Namespace::new("fz").expect("a namespace");
    let (manifest, _problems) = Manifest::from_tools_list(namespace, &entries);
    let catalog =
        Catalog::new(vec![SourceView { manifest, connections: Vec::new(), default_connection: None }]);
    let mut state = PolicyState::default();
    let mut addresses = Vec::new();
    for (address, tool) in catalog.tools() {
        let line = signature_line(&address, tool);
        assert!(!line.contains('\n'), "a signature spans lines: {line:?}");
        state.reviewed.insert(address.to_string(), tool.digest);
        addresses.push(address.to_string());
    }
    let limits = Limits::DEFAULT;
    let surface = Surface::new(catalog, CompiledPolicy::new(state).expect("a policy"), limits, capabilities::host::words());
    let mut targets = vec!["fz".to_owned()];
    targets.extend(addresses.iter().take(9).cloned());
    for targets in [vec!["fz".to_owned()], targets] {
        match surface.describe(&json!({ "targets": targets })) {
            Ok(text) => assert_declarations(&text, limits.describe_tokens),
            Err(message) => assert!(!addresses.is_empty() || !message.is_empty()),
        }
    }
    let _ = surface.search(&json!({"query": "tool"}));
});

//! Direct mode's names, definitions, call code and results.

use expect_test::expect;
use serde_json::{Value, json};

use super::*;
use crate::address::Namespace;
use crate::catalog::SourceView;
use crate::manifest::Manifest;
use crate::surface::envelope::Envelope;

fn catalog(sources: &[(&str, &[Value])]) -> Catalog {
    Catalog::new(
        sources
            .iter()
            .map(|(namespace, tools)| SourceView {
                manifest: Manifest::from_tools_list(Namespace::new(namespace).unwrap(), tools).0,
                connections: Vec::new(),
                default_connection: None,
            })
            .collect(),
    )
}

fn tool(name: &str) -> Value {
    json!({ "name": name, "description": format!("does {name}"), "inputSchema": { "type": "object" } })
}

fn names(catalog: &Catalog, naming: Naming) -> String {
    let tools = DirectTools::new(catalog, naming, |_| true);
    tools.iter().map(|(name, address)| format!("{name} <- {address}\n")).collect()
}

#[test]
fn names_are_folded_prefixed_and_short() {
    let long = "a_tool_name_that_goes_on_and_on_well_past_what_any_harness_shows";
    let c = catalog(&[
        ("memory", &[tool("read_graph"), tool("create.entities"), tool(long)]),
        ("github", &[tool("repos/get"), tool("repos-get")]),
    ]);
    expect![[r#"
        github_repos_get <- github.reposGet_4b1f
        github_repos-get <- github.reposGet
        memory_read_graph <- memory.readGraph
        memory_create_entities <- memory.createEntities
        memory_a_tool_name_that_goes_on_and_on_we_088199bb <- memory.aToolNameThatGoesOnAndOnWellPastWhatAnyHarnessShows
    "#]]
    .assert_eq(&names(&c, Naming::Prefixed));
    for (name, _) in DirectTools::new(&c, Naming::Prefixed, |_| true).iter() {
        assert!(
            name.len() <= MAX_NAME && name.bytes().all(|b| b.is_ascii_alphanumeric() || b"_-".contains(&b))
        );
    }
}

#[test]
fn shared_names_take_a_hash_and_bare_names_fall_back_to_prefixed() {
    let c = catalog(&[("a", &[tool("x.y"), tool("x_y"), tool("search")]), ("b", &[tool("search")])]);
    expect![[r#"
        a_x_y_f165171b <- a.xY
        a_x_y_e1b79866 <- a.xY_f906
        a_search <- a.search
        b_search <- b.search
    "#]]
    .assert_eq(&names(&c, Naming::Prefixed));
    expect![[r#"
        a_x_y_f165171b <- a.xY
        a_x_y_e1b79866 <- a.xY_f906
        a_search <- a.search
        b_search <- b.search
    "#]]
    .assert_eq(&names(&c, Naming::Bare));
    let one = catalog(&[("conformance", &[tool("test_image_content"), tool("json_schema_2020_12_tool")])]);
    expect![[r#"
        test_image_content <- conformance.testImageContent
        json_schema_2020_12_tool <- conformance.jsonSchema202012Tool
    "#]]
    .assert_eq(&names(&one, Naming::Bare));
}

#[test]
fn the_same_tools_get_the_same_names_whatever_else_is_listed() {
    let alone = catalog(&[("memory", &[tool("read_graph")])]);
    let crowded = catalog(&[("aaa", &[tool("z")]), ("memory", &[tool("read_graph")]), ("zzz", &[tool("q")])]);
    let name = |c: &Catalog| {
        DirectTools::new(c, Naming::Prefixed, |_| true)
            .iter()
            .find(|(_, a)| a.namespace.as_str() == "memory")
            .map(|(n, _)| n.to_owned())
    };
    assert_eq!(name(&alone), name(&crowded));
    let hidden = DirectTools::new(&crowded, Naming::Prefixed, |a| a.namespace.as_str() != "zzz");
    assert_eq!(hidden.len(), 2);
    assert!(hidden.address("zzz_q").is_none());
}

#[test]
fn definitions_keep_the_sources_schemas() {
    let schema = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "$defs": { "n": { "type": "integer" } },
        "properties": { "a": { "$ref": "#/$defs/n" } },
        "additionalProperties": false,
    });
    let c = catalog(&[(
        "s",
        &[
            json!({ "name": "t", "description": "", "inputSchema": schema, "annotations": { "readOnlyHint": true } }),
        ],
    )]);
    let tools = DirectTools::new(&c, Naming::Bare, |_| true);
    let defs = tools.definitions(&c);
    assert_eq!(defs[0]["inputSchema"], schema);
    assert_eq!(defs[0]["annotations"], json!({ "readOnlyHint": true }));
    assert_eq!(defs[0]["description"], "s.t (through capabilities)");
    assert_eq!(tools.address("t").unwrap().to_string(), "s.t");
}

#[test]
fn call_code_passes_arguments_as_json_text() {
    let address = ToolAddress::parse("memory.readGraph").unwrap();
    let code = call_code(&address, &json!({ "__proto__": { "x": 1 }, "q": "a\"b\u{2028}</script>" }));
    expect![[
        r#"return await memory.readGraph(JSON.parse("{\"__proto__\":{\"x\":1},\"q\":\"a\\\"b </script>\"}"))"#
    ]]
    .assert_eq(&code);
}

fn envelope(value: Value) -> Envelope {
    serde_json::from_value::<EnvelopeIn>(value).unwrap().into()
}

/// Enough of an envelope to build one in a test.
#[derive(serde::Deserialize)]
struct EnvelopeIn {
    status: String,
    result: Option<Value>,
    error: Option<crate::record::RunError>,
}

impl From<EnvelopeIn> for Envelope {
    fn from(e: EnvelopeIn) -> Envelope {
        let mut out = match e.error {
            Some(error) => Envelope::failure("run_1", error),
            None => Envelope::unknown_run("run_1"),
        };
        out.status = match e.status.as_str() {
            "completed" => EnvelopeStatus::Completed,
            "failed" => EnvelopeStatus::Failed,
            _ => EnvelopeStatus::AwaitingApproval,
        };
        out.result = e.result;
        if out.status != EnvelopeStatus::Failed {
            out.error = None;
        }
        out
    }
}

#[test]
fn results_come_back_as_the_tool_gave_them() {
    let image = json!([{ "type": "image", "data": "iVBOR", "mimeType": "image/png" }, { "type": "text", "text": "a pixel" }]);
    let got = call_result(&envelope(json!({ "status": "completed", "result": image })));
    assert_eq!(got, json!({ "content": image, "isError": false }));
    let got = call_result(&envelope(json!({ "status": "completed", "result": { "n": 1 } })));
    assert_eq!(
        got,
        json!({ "content": [{ "type": "text", "text": "{\"n\":1}" }], "isError": false, "structuredContent": { "n": 1 } })
    );
    let got = call_result(&envelope(json!({ "status": "completed", "result": "plain" })));
    assert_eq!(got["content"][0]["text"], "plain");
    let got = call_result(&envelope(
        json!({ "status": "failed", "error": { "code": "tool_error", "message": "boom", "hint": "try x" } }),
    ));
    assert_eq!(
        got,
        json!({ "content": [{ "type": "text", "text": "tool_error: boom (try x)" }], "isError": true })
    );
    let got = call_result(&envelope(json!({ "status": "awaiting_approval" })));
    assert_eq!(got["isError"], true);
    assert!(
        got["content"][0]["text"].as_str().unwrap().contains("call this tool again with the same arguments")
    );
}

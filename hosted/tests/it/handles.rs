//! Large results as handles on the hosted hub, in real workerd: a 10 MB result completes with a
//! preview, a handle and `resource_link`s; a later `execute` reads it back in slices with
//! `hub.read`, `resources/read` of the links returns it whole, in parts kept in the tenant's
//! SQLite; another tenant meets the same "no handle" as for one that never was.

use serde_json::{Value, json};

use crate::support::Workerd;

const TEN_MB: usize = 10 * 1024 * 1024;

fn code(text: &str) -> Value {
    json!({ "code": text })
}

#[test]
fn a_ten_megabyte_result_is_a_handle_read_back_by_code_and_as_resources_in_its_tenant_only() {
    let dir = tempfile::tempdir().unwrap();
    let hub = Workerd::start(dir.path());
    let init = hub.rpc("acme", "initialize", json!({ "protocolVersion": "2025-11-25" }));
    assert_eq!(init["capabilities"]["resources"], json!({}), "{init}");

    let result = hub.rpc(
        "acme",
        "tools/call",
        json!({ "name": "execute", "arguments": code(&format!("return 'x'.repeat({TEN_MB})")) }),
    );
    let envelope = &result["structuredContent"];
    assert_eq!(envelope["status"], json!("completed"), "{envelope}");
    assert_eq!(envelope["truncated"], json!({ "result": true }));
    let handle = envelope["handles"][0]["handle"].as_str().unwrap().to_owned();
    assert_eq!(envelope["handles"][0]["bytes"], json!(TEN_MB + 2));
    assert!(envelope["result"].as_str().unwrap().contains(&handle), "the preview names the handle");
    let links: Vec<&str> = result["content"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["type"] == json!("resource_link"))
        .map(|c| c["uri"].as_str().unwrap())
        .collect();
    assert_eq!(links.len(), 3, "{}", result["content"]);

    // resources/read of the links, in order: the whole text.
    let mut whole = String::new();
    for uri in &links {
        let read = hub.rpc("acme", "resources/read", json!({ "uri": uri }));
        assert_eq!(read["contents"][0]["mimeType"], json!("application/json"), "{read:.300}");
        whole.push_str(read["contents"][0]["text"].as_str().unwrap());
    }
    assert_eq!(whole.len(), TEN_MB + 2);
    assert!(whole == format!("\"{}\"", "x".repeat(TEN_MB)), "the parts join into the result's JSON");

    // hub.read in a later execute: eleven slices of at most 1 MiB, the same value.
    let read = hub.execute(
        "acme",
        code(&format!(
            r#"let offset = 0, text = "", slices = 0;
               for (;;) {{
                 const s = await hub.read("{handle}", {{ offset, limit: 1048576 }});
                 text += s.text; offset = s.next; slices++;
                 if (s.eof) break;
               }}
               const past = await hub.read("{handle}", {{ offset: 1e12 }});
               return {{ slices, same: JSON.parse(text) === "x".repeat({TEN_MB}), past: [past.text, past.eof] }}"#
        )),
    );
    assert_eq!(read["result"], json!({ "slices": 11, "same": true, "past": ["", true] }), "{read}");

    // Another tenant: the handle and its URIs are unknown, in the words for one that never was.
    let never = format!("{}00000000000000000000000000000000", &handle[..19]);
    let foreign = hub.execute(
        "globex",
        code(&format!(
            r#"const tryRead = async (h) => {{ try {{ await hub.read(h); return "read"; }} catch (e) {{ return e.code + ": " + e.message; }} }};
               return [await tryRead("{handle}"), await tryRead("{never}")]"#
        )),
    );
    assert_eq!(
        foreign["result"],
        json!([
            format!("unknown_handle: there is no handle `{handle}`"),
            format!("unknown_handle: there is no handle `{never}`"),
        ])
    );
    // (A long URI is shown cut at 120 characters, as any is.)
    let shown = |uri: &str| format!("there is no handle `{}`", uri.chars().take(120).collect::<String>());
    let read = hub.rpc("globex", "resources/read", json!({ "uri": links[0] }));
    assert_eq!(read, json!({ "code": -32002, "message": shown(links[0]) }));
    let made_up = links[0].replace(&handle, &never);
    assert_eq!(
        hub.rpc("acme", "resources/read", json!({ "uri": made_up })),
        json!({ "code": -32002, "message": shown(&made_up) })
    );
}

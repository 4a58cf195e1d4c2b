//! Large results and logs as handles through the engine: a 10 MB result completes with a preview
//! and a handle, a later run reads it back in slices with `hub.read`, the kept text is scrubbed,
//! and a handle is unknown to another profile.

use capabilities_core::run::Engine;
use capabilities_core::surface::envelope::Envelope;
use expect_test::expect;
use serde_json::json;

use super::{Hub, WORK_SECRET, woken_block_on};

const TEN_MB: usize = 10 * 1024 * 1024;

#[test]
fn a_ten_megabyte_result_completes_with_a_handle_read_back_in_slices() {
    let hub = Hub::new();
    let big = hub.execute(&format!("return 'x'.repeat({TEN_MB})"));
    assert_eq!(big.status, "completed", "{:?}", big.error);
    assert!(big.truncated.as_ref().is_some_and(|t| t.result && !t.logs));
    let [handle] = big.handles.as_slice() else { panic!("one handle: {:?}", big.handles) };
    assert_eq!((handle.kind.as_str(), handle.bytes), ("result", TEN_MB as u64 + 2));
    assert!(big.to_line().len() < 26 * 1024, "the envelope stays inline: {}", big.to_line().len());
    assert!(
        big.notices.iter().any(|n| n.contains(&handle.handle) && n.contains("hub.read")),
        "{:?}",
        big.notices
    );
    // The record keeps the preview, not the 10 MB.
    let record = serde_json::to_string(&hub.run(&big.run_id)).unwrap();
    assert!(record.len() < 64 * 1024, "{}", record.len());

    // A later run reads the whole back, 1 MiB at a time, and checks it.
    let read = hub.execute(&format!(
        r#"let offset = 0, text = "", slices = 0;
           for (;;) {{
             const s = await hub.read("{}", {{ offset, limit: 1048576 }});
             text += s.text; offset = s.next; slices++;
             if (s.eof) break;
           }}
           const value = JSON.parse(text);
           return {{ slices, length: value.length, same: value === "x".repeat({TEN_MB}) }}"#,
        handle.handle
    ));
    assert_eq!(
        read.result,
        Some(json!({ "slices": 11, "length": TEN_MB, "same": true })),
        "{:?}",
        read.error
    );
}

#[test]
fn bad_reads_are_tool_errors_and_past_the_end_is_empty() {
    let hub = Hub::new();
    let big = hub.execute("return 'y'.repeat(100000)");
    let handle = &big.handles[0].handle;
    let out = hub.execute(&format!(
        r#"const h = "{handle}";
           const tryRead = async (h, o) => {{
             try {{ const s = await hub.read(h, o); return [s.text.length, s.offset, s.next, s.eof]; }}
             catch (e) {{ return [e.name, e.code, e.address, e.message]; }}
           }};
           return [
             await tryRead(h, {{ offset: 1e9 }}),
             await tryRead(h, {{ offset: 99990, limit: 1e12 }}),
             await tryRead(h, {{ limit: -1 }}),
             await tryRead(h.replace(/.$/, "0"), {{}}),
             await tryRead(42),
           ]"#
    ));
    expect![[r#"
        [
          [
            0,
            100002,
            100002,
            true
          ],
          [
            12,
            99990,
            100002,
            true
          ],
          [
            "ToolError",
            "invalid_arguments",
            "hub.read",
            "hub.read's `limit` is -1: it takes a whole number of bytes from 1"
          ],
          [
            "ToolError",
            "unknown_handle",
            "hub.read",
            "there is no handle `h_157d487cbd7c3199_3f75dd7e2868a0dd377dd5762060a8d0`"
          ],
          [
            "ToolError",
            "invalid_arguments",
            "hub.read",
            "hub.read takes a handle string: hub.read(\"h_…\", { offset, limit })"
          ]
        ]"#]]
    .assert_eq(&serde_json::to_string_pretty(&out.result).unwrap());
}

#[test]
fn another_profile_cannot_read_a_handle() {
    let hub = Hub::new();
    let big = hub.execute("return 'z'.repeat(100000)");
    let handle = &big.handles[0].handle;
    let code = format!(
        r#"try {{ await hub.read("{handle}"); return "read"; }} catch (e) {{ return e.code + ": " + e.message; }}"#
    );
    let work = Engine { profile: "work", ..hub.engine() };
    let report = woken_block_on(work.execute(&code));
    let foreign = Envelope::render(report, &hub.limits, &hub.surface.words);
    let unknown = hub.execute(
        r#"try { await hub.read("h_157d487cbd7c3199_00000000000000000000000000000000"); return "read"; }
           catch (e) { return e.code + ": " + e.message.replace(/`.*`/, "`…`"); }"#,
    );
    assert_eq!(foreign.result, Some(json!(format!("unknown_handle: there is no handle `{handle}`"))));
    assert_eq!(unknown.result, Some(json!("unknown_handle: there is no handle `…`")));
}

#[test]
fn kept_text_is_scrubbed_before_it_is_stored() {
    let hub = Hub::new();
    let big = hub.execute(
        r#"const me = await chat.whoami();
           for (let i = 0; i < 2000; i++) console.log(i, me.token);
           return { token: me.token, pad: "p".repeat(50000) }"#,
    );
    assert_eq!(big.status, "completed", "{:?}", big.error);
    let kinds: Vec<&str> = big.handles.iter().map(|h| h.kind.as_str()).collect();
    assert_eq!(kinds, ["result", "logs"]);
    for handle in &big.handles {
        let text = hub.blobs.text(&big.run_id, &handle.handle).expect("kept");
        assert!(!text.contains(WORK_SECRET), "{} holds the secret", handle.kind.as_str());
        assert!(text.contains("[secret]"), "{}", &text[..80]);
    }
}

//! The census at the top level: `capabilities list` answers across the hub (its sources and
//! skills) and every harness found on the machine (whether it points at the hub, the servers it
//! still runs itself, the skills in its folders), reading and changing nothing;
//! `capabilities doctor` checks the same places as `hub doctor`.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

fn run(dir: &Path, args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_capabilities"))
        .args(args)
        .env("HOME", dir.join("home"))
        .env("CAPABILITIES_HOME", dir.join("hub"))
        .env("CAPABILITIES_KEYCHAIN", "file")
        .env("NO_COLOR", "1")
        .current_dir(dir)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    (out.status.code().unwrap_or(-1), text(&out.stdout), text(&out.stderr))
}

#[test]
fn list_answers_across_the_hub_and_the_harnesses_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("home");
    std::fs::create_dir_all(home.join(".cursor")).unwrap();
    std::fs::create_dir_all(home.join(".claude/skills/triage")).unwrap();
    let cursor = r#"{"mcpServers":{"memory":{"command":"npx","args":["-y","@modelcontextprotocol/server-memory"]},"old":{"command":"x","disabled":true}}}"#;
    std::fs::write(home.join(".cursor/mcp.json"), cursor).unwrap();
    std::fs::write(home.join(".claude.json"), "{}").unwrap();
    std::fs::write(
        home.join(".claude/skills/triage/SKILL.md"),
        "---\nname: triage\ndescription: Sort issues.\n---\n",
    )
    .unwrap();

    // Before there is a hub: the harnesses alone.
    let (code, out, err) = run(dir.path(), &["--json", "list"]);
    assert_eq!(code, 0, "{err}");
    let census: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(census["hub"], Value::Null, "{census}");

    let (code, _, err) = run(dir.path(), &["hub", "init"]);
    assert_eq!(code, 0, "{err}");
    let (code, _, err) = run(dir.path(), &["hub", "connect", "--client", "claude-code"]);
    assert_eq!(code, 0, "{err}");
    let before = std::fs::read(home.join(".cursor/mcp.json")).unwrap();
    let (code, out, err) = run(dir.path(), &["--json", "list"]);
    assert_eq!(code, 0, "{err}");
    let census: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(census["hub"]["sources"], json!([]), "{census}");
    let row = |id: &str| {
        census["harnesses"]
            .as_array()
            .unwrap()
            .iter()
            .find(|h| h["harness"] == id)
            .cloned()
            .unwrap_or_default()
    };
    assert_eq!(row("claude-code")["state"], "connected", "{census}");
    assert_eq!(row("claude-code")["skills"], 1, "{census}");
    assert_eq!(row("cursor")["state"], "not connected", "{census}");
    assert_eq!(
        row("cursor")["servers"],
        json!([{ "name": "memory", "scope": "user", "off": false }, { "name": "old", "scope": "user", "off": true }]),
        "{census}"
    );
    assert_eq!(std::fs::read(home.join(".cursor/mcp.json")).unwrap(), before, "the census reads only");

    let (_, text, _) = run(dir.path(), &["list"]);
    assert!(text.contains("Cursor (") && text.contains("its own servers: memory, old (off)"), "{text}");
    assert!(text.contains("point the others at the hub with `capabilities hub connect`"), "{text}");
    let (code, doctor, err) = run(dir.path(), &["doctor"]);
    assert_eq!(code, 0, "{err}");
    assert!(doctor.contains("claude-code: connected"), "{doctor}");
}

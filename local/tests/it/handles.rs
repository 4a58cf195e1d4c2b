//! Large results as handles through the real binary and the official TypeScript SDK client: a
//! 10 MB result completes with a preview, `truncated`, a handle and a `resource_link`; a later
//! `execute` reads it back in slices with `hub.read`, and `resources/read` of the link returns
//! it whole. Another profile, a changed URI and a pruned run all meet the same "no handle".
//!
//! Needs Node.js on PATH and `cd node && npm ci` at the repository root.

use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use expect_test::expect;
use serde_json::{Value, json};

use crate::support::{packages, repo};

const TEN_MB: usize = 10 * 1024 * 1024;

struct Hub {
    dir: tempfile::TempDir,
}

impl Hub {
    /// A hub with the memory server as source `memory` and a second profile, `other`.
    fn new() -> Hub {
        let hub = Hub { dir: tempfile::tempdir().unwrap() };
        let server = packages().join("server-memory/dist/index.js");
        let env = format!("MEMORY_FILE_PATH={}", hub.dir.path().join("memory.jsonl").display());
        let added = hub.run(&[
            "add",
            "--namespace",
            "memory",
            "--env",
            &env,
            "--yes",
            "--",
            "node",
            server.to_str().unwrap(),
        ]);
        assert_eq!(added.status.code(), Some(0), "{}", String::from_utf8_lossy(&added.stderr));
        let created = hub.run(&["profiles", "create", "other", "--serves", "memory.*"]);
        assert_eq!(created.status.code(), Some(0), "{}", String::from_utf8_lossy(&created.stderr));
        hub
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    fn run(&self, args: &[&str]) -> Output {
        Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .arg("hub")
            .args(args)
            .env("CAPABILITIES_HOME", self.home())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap()
    }

    /// The SDK client's steps against `hub serve --stdio [--profile <profile>]`.
    fn client(&self, profile: Option<&str>, steps: Value) -> Value {
        let mut command = Command::new("node");
        command
            .arg(repo().join("local/tests/fixtures/handles-client.mjs"))
            .arg(steps.to_string())
            .env("MCP_SDK_DIR", packages().join("sdk"))
            .env("CAPABILITIES_BIN", env!("CARGO_BIN_EXE_capabilities"))
            .env("CAPABILITIES_HOME", self.home())
            .stderr(Stdio::inherit());
        if let Some(profile) = profile {
            command.env("CAPABILITIES_PROFILE", profile);
        }
        let out = command.output().expect("node starts");
        assert!(out.status.success(), "the client failed: {}", String::from_utf8_lossy(&out.stdout));
        serde_json::from_slice(&out.stdout).expect("the client prints one JSON object")
    }
}

fn execute(code: &str) -> Value {
    json!({ "tool": "execute", "arguments": { "code": code } })
}

/// Run ids and handles replaced by fixed words, so a snapshot holds across runs.
fn anonymous(text: &str, run: &str, handle: &str) -> String {
    text.replace(handle, "h_…").replace(run, "run_…")
}

const READ_ALL: &str = r#"let offset = 0, text = "", slices = 0;
    for (;;) {
      const s = await hub.read("$handle", { offset, limit: 1048576 });
      text += s.text; offset = s.next; slices++;
      if (s.eof) break;
    }
    const value = JSON.parse(text);
    return { slices, length: value.length, onlyX: value === "x".repeat(10485760) }"#;

#[test]
fn a_ten_megabyte_result_is_a_handle_read_back_by_code_and_as_a_resource() {
    let hub = Hub::new();
    let seen = hub.client(
        None,
        json!([
            execute(&format!("return 'x'.repeat({TEN_MB})")),
            { "links": true },
            { "resource": "$link" },
            { "resource": "$linkx" },
            execute(READ_ALL),
            execute(r#"try { await hub.read("$handle", { limit: -1 }) } catch (e) { return e.code + ": " + e.message }"#),
        ]),
    );
    assert_eq!(seen["capabilities"]["resources"], json!({}), "the server declares resources");
    let steps = seen["steps"].as_array().unwrap();
    let big = &steps[0];
    let envelope = &big["structured"];
    let run = envelope["runId"].as_str().unwrap();
    let handle = envelope["handles"][0]["handle"].as_str().unwrap();
    let shown = anonymous(&serde_json::to_string_pretty(big).unwrap(), run, handle);
    expect![[r#"
        {
          "isError": false,
          "content": [
            {
              "type": "text"
            },
            {
              "type": "resource_link",
              "uri": "capabilities://runs/run_…/handles/h_…?offset=0&limit=4194304",
              "name": "h_… (1/3)",
              "mimeType": "application/json",
              "size": 4194304,
              "description": "part 1 of 3 of the result of run run_… (10485762 bytes)"
            },
            {
              "type": "resource_link",
              "uri": "capabilities://runs/run_…/handles/h_…?offset=4194304&limit=4194304",
              "name": "h_… (2/3)",
              "mimeType": "application/json",
              "size": 4194304,
              "description": "part 2 of 3 of the result of run run_… (10485762 bytes)"
            },
            {
              "type": "resource_link",
              "uri": "capabilities://runs/run_…/handles/h_…?offset=8388608&limit=4194304",
              "name": "h_… (3/3)",
              "mimeType": "application/json",
              "size": 2097154,
              "description": "part 3 of 3 of the result of run run_… (10485762 bytes)"
            }
          ],
          "structured": {
            "runId": "run_…",
            "status": "completed",
            "result": "\"xxxxxxxxxxxxxxxxxxx…xx… [result cut at 24358 of 10485762 bytes; the whole is handle h_…: hub.read(\"h_…\", { offset, limit })]",
            "calls": [],
            "truncated": {
              "result": true
            },
            "handles": [
              {
                "handle": "h_…",
                "kind": "result",
                "bytes": 10485762,
                "uri": "capabilities://runs/run_…/handles/h_…"
              }
            ],
            "notices": [
              "the result is 10485762 bytes, over the 24576 returned inline: the whole is handle h_…; read it in a later execute with hub.read(\"h_…\", { offset: 0, limit: 1048576 }) (bytes; `next` is the next offset)"
            ]
          }
        }"#]]
    .assert_eq(&shown);

    // resources/read of the links, in order: the whole text, in parts the SDK client buffers.
    assert_eq!(steps[1], json!({ "parts": 3, "length": TEN_MB + 2, "onlyX": true }));
    // The first part alone: 4 MiB of the text, as JSON.
    let first = &steps[2]["contents"][0];
    assert_eq!(
        (first["length"].clone(), first["mimeType"].clone()),
        (json!(4 * 1024 * 1024), json!("application/json"))
    );
    // A URI that is not one of the handle's: the same answer as any unknown resource.
    let changed = steps[3]["thrown"].as_str().unwrap();
    assert!(changed.contains("there is no handle"), "{changed}");
    // hub.read in a later execute: eleven slices of at most 1 MiB, the same value.
    assert_eq!(steps[4]["structured"]["result"], json!({ "slices": 11, "length": TEN_MB, "onlyX": true }));
    assert_eq!(
        steps[5]["structured"]["result"],
        json!("invalid_arguments: hub.read's `limit` is -1: it takes a whole number of bytes from 1")
    );

    // On disk: the scrubbed text under blobs/<run>/<handle>, mode 600; the record holds only
    // the preview.
    let blob = hub.home().join("blobs").join(run).join(handle);
    let meta = std::fs::metadata(&blob).unwrap();
    assert_eq!((meta.len(), meta.permissions().mode() & 0o777), (TEN_MB as u64 + 2, 0o600));
    let record = std::fs::metadata(hub.home().join("runs").join(format!("{run}.json"))).unwrap();
    assert!(record.len() < 64 * 1024, "the run record is {} bytes", record.len());

    // Another profile of the same hub: the handle and its URI are unknown to it, in the same
    // words as a handle that never was.
    let other = hub.client(
        Some("other"),
        json!([
            { "resource": format!("capabilities://runs/{run}/handles/{handle}") },
            execute(&format!(r#"try {{ await hub.read("{handle}") }} catch (e) {{ return e.code + ": " + e.message }}"#)),
        ]),
    );
    let other = other["steps"].as_array().unwrap();
    assert_eq!(
        other[0]["thrown"].as_str().unwrap().replace(handle, "h_…").replace(run, "run_…"),
        "MCP error -32002: there is no handle `capabilities://runs/run_…/handles/h_…`"
    );
    assert_eq!(
        other[1]["structured"]["result"],
        json!(format!("unknown_handle: there is no handle `{handle}`"))
    );

    // The run ages out: pruned with its record when the store next opens, and unknown after.
    let week_ago = SystemTime::now() - Duration::from_secs(8 * 24 * 60 * 60);
    for path in [
        hub.home().join("runs").join(format!("{run}.json")),
        hub.home().join("runs").join(format!("{run}.journal.jsonl")),
        hub.home().join("blobs").join(run),
    ] {
        File::open(&path).unwrap().set_modified(week_ago).unwrap();
    }
    let after = hub.run(&[
        "exec",
        &format!(r#"try {{ await hub.read("{handle}") }} catch (e) {{ return e.code }}"#),
        "--json",
    ]);
    let after: Value = serde_json::from_slice(&after.stdout).unwrap();
    assert_eq!(after["result"], json!("unknown_handle"));
    assert!(!hub.home().join("blobs").join(run).exists(), "the run's blobs went with it");
}

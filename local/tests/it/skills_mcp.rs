//! The Skills extension on `hub serve --stdio`, through the official TypeScript SDK client: the
//! server declares `io.modelcontextprotocol/skills`; `skills/list` and `skills/get` show a skill
//! added with `hub skills add` (its files with their sha256 digests), `resources/read` returns
//! its files, `resources/directory/read` its folders; a skill added while the server runs is
//! listed without a restart; an unknown or escaping URI is an error, never a file outside.
//! Inside code, `hub.skill(name, path)` reads a skill's own files and nothing else.
//!
//! Needs Node.js on PATH and `cd node && npm ci` at the repository root.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::support::{packages, repo};

fn write_skill(dir: &Path, name: &str, description: &str) {
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {description}\n---\nRead scripts/run.sh first.\n"),
    )
    .unwrap();
    std::fs::write(dir.join("scripts/run.sh"), "#!/bin/sh\necho release\n").unwrap();
}

struct Hub {
    dir: tempfile::TempDir,
}

impl Hub {
    fn home(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    fn add(&self, dir: &Path) {
        let out = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .args(["hub", "skills", "add"])
            .arg(dir)
            .env("CAPABILITIES_HOME", self.home())
            .env("CAPABILITIES_KEYCHAIN", "file")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    fn client(&self, steps: Value) -> Value {
        let out = Command::new("node")
            .arg(repo().join("local/tests/fixtures/skills-client.mjs"))
            .arg(steps.to_string())
            .env("MCP_SDK_DIR", packages().join("sdk"))
            .env("CAPABILITIES_BIN", env!("CARGO_BIN_EXE_capabilities"))
            .env("CAPABILITIES_HOME", self.home())
            .env("CAPABILITIES_KEYCHAIN", "file")
            .stderr(Stdio::inherit())
            .output()
            .expect("node starts");
        assert!(out.status.success(), "the client failed: {}", String::from_utf8_lossy(&out.stdout));
        serde_json::from_slice(&out.stdout).expect("the client prints one JSON object")
    }
}

fn sha256(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

#[test]
fn skills_are_listed_got_and_read_over_the_extension() {
    let hub = Hub { dir: tempfile::tempdir().unwrap() };
    let work = hub.dir.path().join("work");
    write_skill(
        &work.join("release-notes"),
        "release-notes",
        "Write release notes from merged pull requests.",
    );
    hub.add(&work.join("release-notes"));

    let uri = "skill://release-notes/SKILL.md";
    let out = hub.client(json!([
        { "method": "skills/list" },
        { "method": "skills/get", "params": { "uri": uri } },
        { "method": "resources/read", "params": { "uri": uri } },
        { "method": "resources/read", "params": { "uri": "skill://release-notes/scripts/run.sh" } },
        { "method": "resources/directory/read", "params": { "uri": "skill://release-notes/scripts" } },
        { "method": "skills/get", "params": { "uri": "skill://nothing-here/SKILL.md" } },
        { "method": "resources/read", "params": { "uri": "skill://release-notes/../../hub.json" } },
        { "method": "resources/read", "params": { "uri": "skill://release-notes/%2e%2e/%2e%2e/skills.lock.json" } },
    ]));
    let extensions = &out["capabilities"]["extensions"];
    assert!(extensions.get("io.modelcontextprotocol/skills").is_some(), "{}", out["capabilities"]);
    let steps = out["steps"].as_array().unwrap();

    let listed = steps[0]["skills"].as_array().unwrap();
    assert_eq!(listed.len(), 1, "{}", steps[0]);
    assert_eq!(listed[0]["uri"], uri);
    assert_eq!(listed[0]["frontmatter"]["name"], "release-notes");
    assert_eq!(listed[0]["frontmatter"]["description"], "Write release notes from merged pull requests.");
    let skill_md = std::fs::read(work.join("release-notes/SKILL.md")).unwrap();
    let script = std::fs::read(work.join("release-notes/scripts/run.sh")).unwrap();
    let files = listed[0]["resources"].as_array().unwrap();
    let digest_of = |u: &str| files.iter().find(|f| f["uri"] == u).map(|f| f["digest"].clone());
    assert_eq!(digest_of(uri), Some(json!(sha256(&skill_md))), "{}", steps[0]);
    assert_eq!(
        digest_of("skill://release-notes/scripts/run.sh"),
        Some(json!(sha256(&script))),
        "{}",
        steps[0]
    );

    assert_eq!(steps[1]["skill"]["uri"], uri, "{}", steps[1]);
    assert_eq!(steps[2]["contents"][0]["text"], String::from_utf8(skill_md).unwrap(), "{}", steps[2]);
    assert_eq!(steps[3]["contents"][0]["text"], String::from_utf8(script).unwrap(), "{}", steps[3]);
    assert!(steps[4].to_string().contains("run.sh"), "{}", steps[4]);
    for (i, step) in steps.iter().enumerate().skip(5) {
        assert!(step.get("thrown").is_some(), "step {i} should fail: {step}");
    }

    // Added while the server runs: its next `skills/list` has it.
    write_skill(&work.join("triage"), "triage", "Triage new issues by label.");
    let triage = work.join("triage");
    let out = hub.client(json!([
        { "method": "skills/list" },
        { "run": ["hub", "skills", "add", triage.to_str().unwrap()] },
        { "method": "skills/list" },
    ]));
    let names = |step: &Value| -> Vec<String> {
        step["skills"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|s| s["frontmatter"]["name"].as_str())
            .map(str::to_owned)
            .collect()
    };
    assert_eq!(names(&out["steps"][0]), ["release-notes"]);
    assert_eq!(names(&out["steps"][2]), ["release-notes", "triage"]);
}

#[test]
fn search_finds_a_skill_and_describe_reads_it() {
    let hub = Hub { dir: tempfile::tempdir().unwrap() };
    let work = hub.dir.path().join("work");
    write_skill(
        &work.join("release-notes"),
        "release-notes",
        "Write release notes from merged pull requests.",
    );
    hub.add(&work.join("release-notes"));
    let call = |name: &str, arguments: Value| json!({ "method": "tools/call", "params": { "name": name, "arguments": arguments } });
    let out = hub.client(json!([
        call("search", json!({ "query": "writing release notes" })),
        call("describe", json!({ "targets": ["skill:release-notes"] })),
        call("describe", json!({ "targets": ["skill:nope"] })),
        call("search", json!({ "query": "calendar" })),
        call("execute", json!({ "code": r#"
            const md = await hub.skill("release-notes");
            const script = await hub.skill("release-notes", "scripts/run.sh");
            const refused = [];
            for (const [name, path] of [["release-notes", "../../config.json"], ["release-notes", "/etc/passwd"], ["nope", undefined]]) {
              try { await hub.skill(name, path); refused.push("read"); } catch (e) { refused.push(e.code); }
            }
            return { md: md.includes("Read scripts/run.sh first."), script, refused };
        "# })),
    ]));
    let text = |i: usize| out["steps"][i]["content"][0]["text"].as_str().unwrap_or_default().to_owned();
    assert!(
        text(0).contains("skill:release-notes — Write release notes from merged pull requests."),
        "{}",
        text(0)
    );
    let described = text(1);
    assert!(
        described.contains("scripts/run.sh (") && described.contains("Read scripts/run.sh first."),
        "{described}"
    );
    assert_eq!(out["steps"][2]["isError"], true, "{}", out["steps"][2]);
    assert!(text(2).contains("its skills are release-notes"), "{}", text(2));
    assert!(!text(3).contains("skill:"), "{}", text(3));
    assert!(described.contains("hub.skill(\"release-notes\", path)"), "{described}");
    let ran = &out["steps"][4]["structuredContent"];
    assert_eq!(ran["status"], "completed", "{ran}");
    assert_eq!(
        ran["result"],
        json!({ "md": true, "script": "#!/bin/sh\necho release\n",
                "refused": ["unknown_file", "unknown_file", "unknown_skill"] }),
        "{ran}"
    );
}

#[test]
fn a_hub_without_skills_lists_none() {
    let hub = Hub { dir: tempfile::tempdir().unwrap() };
    let out = hub.client(json!([{ "method": "skills/list" }]));
    assert_eq!(out["steps"][0]["skills"], json!([]), "{out}");
}

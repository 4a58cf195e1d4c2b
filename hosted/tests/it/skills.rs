//! Skills on the hosted hub, in real workerd: `hub skills add` then `hub push` carries the skill
//! library (its files in parts, one of them over a part's size), and the hosted `/mcp` answers
//! `skills/list`, `skills/get`, `resources/read` of `skill://` files, `resources/directory/read`
//! and `resources/list` as the local `hub serve --stdio` does for the same store — both read with
//! the official TypeScript SDK client, the answers compared whole — and `search` and
//! `describe("skill:…")` give the same text; code reads a file with `hub.skill`. A second push with one skill changed and one
//! removed says so in its plan and the hosted answers follow. Hostile pushes (paths with `..`
//! or absolute, a digest that does not match, a bad name, bytes that do not match their
//! sha256, an apply before the bytes arrived) are refused and change nothing. The SDK client
//! also reaches a profile's address `/mcp/<profile>` with the sign-in's bearer token and lists
//! and calls its tools there.

use std::path::Path;
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::access::Hub;
use crate::push::Local;
use crate::support::{Upstream, packages, repo};

fn write_skill(dir: &Path, name: &str, description: &str, body: &str) {
    std::fs::create_dir_all(dir.join("scripts")).unwrap();
    std::fs::create_dir_all(dir.join("assets")).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!(
            "---\nname: {name}\ndescription: {description}\nlicense: MIT\nmetadata:\n  owner: docs\n  tags: [a, b]\n---\n{body}\n"
        ),
    )
    .unwrap();
    std::fs::write(dir.join("scripts/run.sh"), "#!/bin/sh\necho release\n").unwrap();
    std::fs::write(dir.join("assets/logo.png"), [0x89, b'P', b'N', b'G', 0, 1, 2, 255]).unwrap();
    std::fs::write(dir.join("read me.txt"), "spaces in a name\n").unwrap();
}

/// The steps both clients run: the extension's methods over the whole library, errors too.
fn steps() -> Value {
    let read = |uri: &str| json!({ "method": "resources/read", "params": { "uri": uri } });
    json!([
        { "method": "skills/list" },
        { "method": "skills/get", "params": { "uri": "skill://release-notes/SKILL.md" } },
        { "method": "skills/get", "params": { "uri": "skill://triage/SKILL.md" } },
        { "method": "resources/list" },
        read("skill://release-notes/SKILL.md"),
        read("skill://release-notes/scripts/run.sh"),
        read("skill://release-notes/assets/logo.png"),
        read("skill://release-notes/read%20me.txt"),
        read("skill://release-notes/data/big.txt"),
        read("skill://triage/SKILL.md"),
        { "method": "resources/directory/read", "params": { "uri": "skill://release-notes" } },
        { "method": "resources/directory/read", "params": { "uri": "skill://release-notes/scripts" } },
        { "method": "skills/get", "params": { "uri": "skill://nothing-here/SKILL.md" } },
        { "method": "resources/directory/read", "params": { "uri": "skill://release-notes/nope" } },
        read("skill://release-notes/../../hub.json"),
        read("skill://release-notes/%2e%2e/%2e%2e/skills.lock.json"),
        { "method": "tools/call", "params": { "name": "search", "arguments": { "query": "release notes" } } },
        { "method": "tools/call", "params": { "name": "describe", "arguments": { "targets": ["skill:release-notes"] } } },
        { "method": "tools/call", "params": { "name": "describe", "arguments": { "targets": ["skill:nope"] } } },
    ])
}

fn node() -> Command {
    let mut command = Command::new(packages().join(".bin/node"));
    command.env("MCP_SDK_DIR", packages().join("@modelcontextprotocol/sdk")).stderr(Stdio::inherit());
    command
}

fn printed(out: std::process::Output, what: &str) -> Value {
    assert!(out.status.success(), "{what} failed: {}", String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| panic!("{what} printed no JSON ({e})"))
}

/// The local hub's answers: `hub serve --stdio` on `local`'s store, through the SDK client.
fn local_answers(local: &Local, steps: &Value) -> Value {
    let out = node()
        .arg(repo().join("local/tests/fixtures/skills-client.mjs"))
        .arg(steps.to_string())
        .env("CAPABILITIES_BIN", crate::support::target_dir().join("debug/capabilities"))
        .env("CAPABILITIES_HOME", local.home())
        .env("CAPABILITIES_KEYCHAIN", "file")
        .output()
        .unwrap();
    printed(out, "skills-client.mjs")
}

/// The hosted hub's answers at `url`, through the SDK client with the sign-in's token.
fn hosted_answers(url: &str, token: &str, steps: &Value) -> Value {
    let args = json!({ "url": url, "token": token, "steps": steps });
    let out = node()
        .arg(repo().join("hosted/tests/fixtures/sdk-bearer.mjs"))
        .arg(args.to_string())
        .output()
        .unwrap();
    printed(out, "sdk-bearer.mjs")
}

/// Both hubs' answers, step by step, must be the same JSON (for `search` and `describe`, the
/// same text: the two hubs wrap a tool's result each its own way).
fn assert_same(steps: &Value, local: &Value, hosted: &Value) {
    let (l, h) = (local["steps"].as_array().unwrap(), hosted["steps"].as_array().unwrap());
    assert_eq!(l.len(), h.len());
    for (i, (l, h)) in l.iter().zip(h).enumerate() {
        if steps[i]["method"] == "tools/call" {
            assert_eq!(text(l), text(h), "step {i}: {l}\n{h}");
            assert_eq!(l["isError"], h["isError"], "step {i}: {l}\n{h}");
            assert!(!text(l).is_empty(), "step {i}: {l}");
        } else {
            assert_eq!(l, h, "step {i}: the local hub answered\n{l}\nand the hosted one\n{h}");
        }
    }
}

fn text(result: &Value) -> String {
    result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect()
}

/// A change made to a pushed skill's JSON.
type Edit<'a> = dyn Fn(&mut Value) + 'a;

fn push_raw(hub: &Hub, token: &str, path: &str, body: &Value) -> (u16, Value) {
    let (status, _, text) =
        hub.http("POST", path, &[format!("authorization: Bearer {token}")], &body.to_string());
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

#[test]
fn hub_push_carries_the_skills_and_the_hosted_hub_serves_them_as_the_local_one_does() {
    let hub = Hub::start(&[]);
    let counter = Upstream::counter();
    let local = Local::new(&hub);
    let work = tempfile::tempdir().unwrap();
    let notes = work.path().join("release-notes");
    write_skill(
        &notes,
        "release-notes",
        "Write release notes from merged pull requests.",
        "Read scripts/run.sh first.",
    );
    // Over one part (1 MiB), so its bytes go in several parts and uploads.
    std::fs::create_dir_all(notes.join("data")).unwrap();
    std::fs::write(notes.join("data/big.txt"), "release notes line\n".repeat(150_000)).unwrap();
    let triage = work.path().join("triage");
    write_skill(&triage, "triage", "Triage new issues by label.", "Label each new issue.");
    local.ok(&["hub", "skills", "add", notes.to_str().unwrap()]);
    local.ok(&["hub", "skills", "add", triage.to_str().unwrap()]);
    local.ok(&["hub", "add", &format!("{}/mcp", counter.origin()), "--namespace", "counter", "--yes"]);
    local.ok(&["hub", "profiles", "create", "reader", "--serves", "counter.count"]);
    local.ok(&["hub", "login"]);

    let (ok, said, told) = local.run(&["hub", "push", "--dry-run"], "");
    assert!(ok, "{said}\n{told}");
    assert!(told.contains("add skills release-notes, triage"), "{told}");
    assert!(told.contains("add profile reader"), "{told}");
    let pushed = local.json(&["hub", "push", "--yes"]);
    assert_eq!(pushed["applied"], true, "{pushed}");
    let (status, said) = {
        let (status, _, text) =
            hub.http("GET", "/hub/status", &[format!("authorization: Bearer {}", local.access_token())], "");
        (status, serde_json::from_str::<Value>(&text).unwrap_or(Value::String(text)))
    };
    assert_eq!(status, 200, "{said}");
    assert_eq!(said["skills"][1]["name"], "triage", "{said}");
    assert_eq!(said["skills"][0]["files"], 5, "{said}");
    assert_eq!(pushed["plan"]["skills"]["added"], json!(["release-notes", "triage"]), "{pushed}");
    let told = local.ok(&["hub", "status"]);
    assert!(told.contains("\nskills: release-notes, triage\n"), "{told}");
    assert_eq!(pushed["plan"]["profileChanges"]["added"], json!(["reader"]), "{pushed}");

    // The same answers, byte for byte once parsed, on the default address and a profile's.
    let token = local.access_token();
    let steps = steps();
    let here = local_answers(&local, &steps);
    let there = hosted_answers(&hub.mcp(), &token, &steps);
    assert_eq!(
        there["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        here["capabilities"]["extensions"]["io.modelcontextprotocol/skills"],
        "{}",
        there["capabilities"]
    );
    assert_same(&steps, &here, &there);
    let listed = &there["steps"][0]["skills"];
    assert_eq!(listed.as_array().map(Vec::len), Some(2), "{listed}");
    assert_eq!(listed[0]["frontmatter"]["metadata"]["tags"], json!(["a", "b"]), "{listed}");
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(local.home().join("skills.lock.json")).unwrap())
            .unwrap();
    let files = &lock["skills"]["release-notes"]["files"];
    let digest_of = |uri: &str| {
        listed[0]["resources"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["uri"] == uri)
            .map(|r| r["digest"].clone())
    };
    assert_eq!(
        digest_of("skill://release-notes/data/big.txt"),
        Some(json!(format!("sha256:{}", files["data/big.txt"].as_str().unwrap())))
    );
    assert_eq!(there["steps"][6]["contents"][0]["blob"], "iVBORwABAv8=", "{}", there["steps"][6]);
    assert!(
        text(&there["steps"][16]).contains("skill:release-notes — Write release notes"),
        "{}",
        there["steps"][16]
    );
    assert!(text(&there["steps"][17]).contains("data/big.txt (2850000 bytes)"), "{}", there["steps"][17]);
    for i in 12..=15 {
        assert!(there["steps"][i].get("thrown").is_some(), "step {i} should fail: {}", there["steps"][i]);
    }
    // Code reads a skill's file with `hub.skill`, from the tenant's storage.
    let code = "return [await hub.skill('release-notes', 'scripts/run.sh'), (await hub.skill('release-notes')).length]";
    let read = hosted_answers(
        &hub.mcp(),
        &token,
        &json!([{ "callTool": { "name": "execute", "arguments": { "code": code } } }]),
    );
    let result = &read["steps"][0]["structuredContent"];
    assert_eq!(result["status"], "completed", "{read}");
    assert_eq!(result["result"], json!(["#!/bin/sh\necho release\n", 167]), "{read}");
    let profile =
        hosted_answers(&format!("{}/reader", hub.mcp()), &token, &json!([{ "method": "skills/list" }]));
    assert_eq!(profile["steps"][0], there["steps"][0], "a profile serves the same skills");

    // Hostile pushes: refused, nothing stored.
    let plan = push_raw(&hub, &token, "/hub/push", &json!({})).1;
    let skill = |edit: &Edit<'_>| {
        let mut skill = json!({
            "name": "evil",
            "digest": "",
            "description": "Looks harmless.",
            "frontmatter": { "name": "evil", "description": "Looks harmless." },
            "files": [
                { "path": "SKILL.md", "sha256": "a".repeat(64), "size": 3 },
                { "path": "x.txt", "sha256": "b".repeat(64), "size": 3 },
            ],
        });
        edit(&mut skill);
        if skill["digest"] == "" {
            let files = skill["files"].as_array().unwrap();
            let pairs: Vec<(&str, &str)> =
                files.iter().map(|f| (f["path"].as_str().unwrap(), f["sha256"].as_str().unwrap())).collect();
            skill["digest"] = json!(capabilities_hosted::skills::skill_digest(pairs));
        }
        json!({ "skills": [skill] })
    };
    let cases: [(&str, &Edit<'_>); 6] = [
        ("is not a file path inside a skill", &|s| s["files"][1]["path"] = json!("../../x.txt")),
        ("is not a file path inside a skill", &|s| s["files"][1]["path"] = json!("/etc/passwd")),
        ("is not a file path inside a skill", &|s| s["files"][1]["path"] = json!("a/./../x")),
        ("does not match its files", &|s| s["digest"] = json!(format!("sha256:{}", "c".repeat(64)))),
        ("is not a skill name", &|s| {
            s["name"] = json!("Evil_Name");
            s["frontmatter"]["name"] = json!("Evil_Name");
        }),
        ("its front matter's `name` must be `evil`", &|s| s["frontmatter"]["name"] = json!("other")),
    ];
    for (said, edit) in cases {
        let (status, refused) = push_raw(&hub, &token, "/hub/push", &skill(edit));
        assert_eq!(status, 400, "{refused}");
        let refused = refused["error"].as_str().unwrap_or_default().to_owned();
        assert!(refused.contains(said) && refused.contains("nothing was recorded"), "{said}: {refused}");
    }
    let bytes = b"abc";
    let sha = capabilities_hosted::skills::hex(&<sha2::Sha256 as sha2::Digest>::digest(bytes));
    let mut part = capabilities_hosted::skills::parts(bytes).remove(0);
    part.sha256 = "d".repeat(64);
    let (status, refused) = push_raw(&hub, &token, "/hub/push/files", &json!({ "parts": [part] }));
    assert_eq!(status, 400, "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("do not match that sha256"), "{refused}");
    let mut short = capabilities_hosted::skills::parts(bytes).remove(0);
    short.size = 4;
    let (status, refused) = push_raw(&hub, &token, "/hub/push/files", &json!({ "parts": [short] }));
    assert_eq!(status, 400, "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("does not match the file's size"), "{refused}");
    // A well-formed push whose bytes never arrived is not applied.
    let unsent = skill(&|s| {
        s["files"] = json!([{ "path": "SKILL.md", "sha256": sha, "size": 3 }]);
    });
    let (status, planned) = push_raw(&hub, &token, "/hub/push", &unsent);
    assert_eq!(status, 200, "{planned}");
    assert_eq!(planned["missing"], json!([sha]), "{planned}");
    let mut apply = unsent.clone();
    apply["apply"] = planned["hash"].clone();
    let (status, refused) = push_raw(&hub, &token, "/hub/push", &apply);
    assert_eq!(status, 409, "{refused}");
    assert!(
        refused["error"].as_str().unwrap().contains("have not arrived; nothing was applied"),
        "{refused}"
    );
    assert_eq!(plan["plan"]["skills"]["removed"], json!(["release-notes", "triage"]), "{plan}");
    let after = hosted_answers(&hub.mcp(), &token, &steps);
    assert_same(&steps, &here, &after);

    // One skill changed, one removed: the plan says so, and the hosted answers follow.
    let before = lock["skills"]["release-notes"]["digest"].as_str().unwrap().to_owned();
    write_skill(
        &notes,
        "release-notes",
        "Write release notes from merged pull requests.",
        "Now read the changelog.",
    );
    local.ok(&["hub", "skills", "add", notes.to_str().unwrap(), "--replace"]);
    local.ok(&["hub", "skills", "remove", "triage"]);
    let lock: Value =
        serde_json::from_str(&std::fs::read_to_string(local.home().join("skills.lock.json")).unwrap())
            .unwrap();
    let now = lock["skills"]["release-notes"]["digest"].as_str().unwrap().to_owned();
    let (ok, said, told) = local.run(&["hub", "push", "--dry-run"], "");
    assert!(ok, "{said}\n{told}");
    assert!(
        told.contains(&format!("change skill release-notes: {} → {}", &before[..19], &now[..19])),
        "{told}"
    );
    assert!(told.contains("remove skill triage"), "{told}");
    let pushed = local.json(&["hub", "push", "--yes"]);
    assert_eq!(pushed["applied"], true, "{pushed}");
    let skills = &pushed["plan"]["skills"];
    assert_eq!(
        skills["changed"],
        json!([{ "name": "release-notes", "from": before, "to": now }]),
        "{pushed}"
    );
    assert_eq!(skills["removed"], json!(["triage"]), "{pushed}");
    assert_eq!(skills["added"], json!([]), "{pushed}");
    assert_eq!(
        pushed["plan"]["profileChanges"],
        json!({ "added": [], "changed": [], "removed": [] }),
        "{pushed}"
    );
    let here = local_answers(&local, &steps);
    let there = hosted_answers(&hub.mcp(), &token, &steps);
    assert_same(&steps, &here, &there);
    assert!(there["steps"][2].get("thrown").is_some(), "triage is gone: {}", there["steps"][2]);
    assert!(
        there["steps"][4]["contents"][0]["text"].as_str().unwrap().contains("Now read the changelog."),
        "{}",
        there["steps"][4]
    );
}

#[test]
fn the_typescript_sdk_client_lists_and_calls_tools_at_a_profiles_address_with_the_bearer_token() {
    let hub = Hub::start(&[]);
    let counter = Upstream::counter();
    let local = Local::new(&hub);
    local.ok(&["hub", "add", &format!("{}/mcp", counter.origin()), "--namespace", "counter", "--yes"]);
    local.ok(&["hub", "profiles", "create", "reader", "--serves", "counter.count"]);
    local.ok(&["hub", "login"]);
    let pushed = local.json(&["hub", "push", "--yes"]);
    assert_eq!(pushed["plan"]["profileChanges"]["added"], json!(["reader"]), "{pushed}");
    let token = local.access_token();

    // The TypeScript SDK on the profile's address: its tools listed and called.
    let tools = hosted_answers(
        &format!("{}/reader", hub.mcp()),
        &token,
        &json!([
            { "listTools": true },
            { "callTool": { "name": "search", "arguments": { "query": "count calls" } } },
            { "callTool": { "name": "execute", "arguments": { "code": "return await counter.count({})" } } },
            { "callTool": { "name": "execute", "arguments": { "code": "return await counter.write({ text: 'x' })" } } },
        ]),
    );
    let names: Vec<&str> =
        tools["steps"][0]["tools"].as_array().unwrap().iter().filter_map(|t| t["name"].as_str()).collect();
    assert_eq!(names, ["search", "describe", "execute"], "{}", tools["steps"][0]);
    assert!(text(&tools["steps"][1]).contains("counter.count"), "{}", tools["steps"][1]);
    assert_eq!(tools["steps"][2]["structuredContent"]["status"], "completed", "{}", tools["steps"][2]);
    assert_eq!(
        tools["steps"][3]["structuredContent"]["status"], "failed",
        "the profile serves only counter.count"
    );
    // The profile's skills are the tenant's (none pushed here), and an unknown profile's
    // address turns the client away.
    let skills =
        hosted_answers(&format!("{}/reader", hub.mcp()), &token, &json!([{ "method": "skills/list" }]));
    assert_eq!(skills["steps"][0], json!({ "skills": [] }), "{skills}");
    let args = json!({ "url": format!("{}/nope", hub.mcp()), "token": token, "steps": [] });
    let out = node()
        .arg(repo().join("hosted/tests/fixtures/sdk-bearer.mjs"))
        .arg(args.to_string())
        .output()
        .unwrap();
    assert!(!out.status.success(), "the SDK client connected to an unknown profile");
}

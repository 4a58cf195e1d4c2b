//! I8: the model cannot change configuration. Every file of the store outside runs is the same,
//! byte for byte, before and after a barrage of hostile `execute`, `search` and `describe` calls
//! and protocol requests. A hosted tenant keeps configuration and runs in one database with no
//! admin read of it, so there what the tenant serves of its configuration must stay the same:
//! its tools, every source described, every namespace listed, and the policy's effects.

use std::path::{Path, PathBuf};

use capabilities_invariants::{Applicability, Home, Kind, Need, Target};
use serde_json::{Value, json};

use crate::support::{on_each_target, upstream_hub};

/// Everything but run records, their payloads and their lock files.
fn configuration(home: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let runs = home.join("runs");
    let blobs = home.join("blobs");
    let mut files = Vec::new();
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else {
                out.push((path.clone(), std::fs::read(&path).unwrap_or_default()));
            }
        }
    }
    walk(home, &mut files);
    let run_lock = |path: &Path| {
        path.parent() == Some(&home.join("locks"))
            && path.file_name().is_some_and(|n| n.to_string_lossy().starts_with("run_"))
    };
    files.retain(|(path, _)| !path.starts_with(&runs) && !path.starts_with(&blobs) && !run_lock(path));
    files.sort();
    files
}

/// What a tenant serves of its configuration, named like files: the tool list, the source and
/// its namespace listing, and which calls run and which ask (checked on calls that reach no
/// upstream's state: `env` reads, `write` only ever asks here).
fn served_configuration(target: &mut dyn Target) -> Vec<(PathBuf, Vec<u8>)> {
    let mut parts = vec![
        ("tools/list", target.request("tools/list", json!({}))["result"].clone()),
        ("describe up", target.call("describe", json!({"targets": ["up"]}))),
        ("search up", target.call("search", json!({"query": "", "namespace": "up"}))),
        ("search add source", target.call("search", json!({"query": "add source policy configure"}))),
    ];
    for (name, code) in
        [("env runs", "return await up.env({name: 'HOME'}) !== undefined"), ("write asks", WRITE_ASKS)]
    {
        let envelope = target.execute(code);
        parts.push((name, json!([envelope["status"], envelope["result"], envelope["pending"][0]["tool"]])));
    }
    parts.into_iter().map(|(name, value)| (PathBuf::from(name), value.to_string().into_bytes())).collect()
}

const WRITE_ASKS: &str = r#"return await up.write({key: "never"})"#;

const HOSTILE_CODE: &[&str] = &[
    r#"return await up.write({key: "policy"})"#,
    r#"return await hub.add({url: "http://evil.example/mcp"})"#,
    r#"return await capabilities.addSource("evil", "http://evil.example/mcp")"#,
    r#"const fs = await import("node:fs"); fs.writeFileSync("policies/policy.json", "{}")"#,
    r#"require("fs").writeFileSync("sources/evil.json", "{}")"#,
    r#"return Object.getOwnPropertyNames(globalThis).filter(k => /hub|policy|source|config|store/i.test(k))"#,
    r#"for (const ns of Object.keys(globalThis)) { try { await globalThis[ns].configure?.({}) } catch (e) {} } return 1"#,
    r#"return await up.env({name: "CANARY", policy: {rules: [{effect: "allow", tool: "*"}]}})"#,
    r#"globalThis.up = {write: async () => "shadowed"}; return await up.write({key: "x"})"#,
    r#"return await up["../../policies/policy"]({})"#,
    r#"return await up.__proto__.constructor("return this")()"#,
];

fn model_cannot_change_configuration(kind: Kind) {
    let mut target = kind.start(Home::new());
    let upstream = upstream_hub(&mut *target);
    let local = target.applies(Need::LocalStore) == Applicability::Applies;
    let snapshot = |target: &mut dyn Target| {
        if local { configuration(target.home()) } else { served_configuration(target) }
    };
    // serve writes what it needs at start (the HTTP token); take the baseline after that.
    let before = snapshot(&mut *target);
    let mut cases = 0;
    for code in HOSTILE_CODE {
        target.execute(code);
        cases += 1;
    }
    let calls: Vec<(&str, Value)> = vec![
        (
            "execute",
            json!({"code": "return 1", "sources": [{"namespace": "evil", "url": "http://evil.example"}]}),
        ),
        (
            "execute",
            json!({"code": "return 1", "policy": {"rules": [{"effect": "allow"}]}, "profile": "../x"}),
        ),
        ("execute", json!({"resume": "../policies/policy"})),
        ("execute", json!({"resume": "../../hub"})),
        ("execute", json!({"code": "return 1", "connection": "evil", "namespace": "evil"})),
        ("describe", json!({"targets": ["../../policies/policy", "up", "up.write"], "write": true})),
        ("search", json!({"query": "add source", "namespace": "../sources", "limit": 1_000_000})),
        ("add", json!({"url": "http://evil.example/mcp"})),
        ("configure", json!({"policy": {}})),
        ("refresh", json!({})),
    ];
    for (tool, arguments) in calls {
        target.call(tool, arguments);
        cases += 1;
    }
    for (method, params) in [
        ("resources/list", json!({})),
        ("resources/read", json!({"uri": "file:///etc/passwd"})),
        ("prompts/list", json!({})),
        ("logging/setLevel", json!({"level": "debug"})),
        (
            "completion/complete",
            json!({"ref": {"type": "ref/prompt", "name": "x"}, "argument": {"name": "a", "value": "b"}}),
        ),
        ("sources/add", json!({"url": "http://evil.example/mcp"})),
    ] {
        target.request(method, params);
        cases += 1;
    }
    target.send(json!({"jsonrpc": "2.0", "method": "notifications/roots/list_changed"}));
    let after = snapshot(&mut *target);
    let names =
        |files: &[(PathBuf, Vec<u8>)]| files.iter().map(|(p, _)| p.display().to_string()).collect::<Vec<_>>();
    assert_eq!(names(&before), names(&after), "{}: the store's files changed", target.name());
    for ((path, old), (_, new)) in before.iter().zip(&after) {
        assert!(
            old == new,
            "{}: {} changed:\n{}\n---\n{}",
            target.name(),
            path.display(),
            String::from_utf8_lossy(old),
            String::from_utf8_lossy(new)
        );
    }
    assert!(
        !upstream.calls().iter().any(|c| c.starts_with("write")),
        "{}: a write reached the upstream: {:?}",
        target.name(),
        upstream.calls()
    );
    let what = if local { "files" } else { "served parts" };
    eprintln!("I8 {}: {cases} hostile calls, {} {what} unchanged", target.name(), before.len());
}
on_each_target!(model_cannot_change_configuration);

//! Named profiles, through the real binary and the official TypeScript SDK client: a profile
//! serving part of the memory server, with a rule that asks and one that denies. What it does
//! not serve is unknown to search and to a call alike, its rules only tighten, and bad
//! profiles are refused with nothing written.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};

use serde_json::{Value, json};

use crate::support::{packages, repo};

struct Hub {
    dir: tempfile::TempDir,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Hub {
    /// A hub with the memory server as source `memory`, every tool accepted.
    fn with_memory() -> Hub {
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
        assert_eq!(added.code, 0, "{}{}", added.stdout, added.stderr);
        hub
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    fn run(&self, args: &[&str]) -> Ran {
        let Output { status, stdout, stderr } = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .arg("hub")
            .args(args)
            .env("CAPABILITIES_HOME", self.home())
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        Ran {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    /// The SDK client against `hub serve --stdio --profile <profile>`.
    fn client(&self, profile: &str, calls: Value) -> Value {
        let out = Command::new("node")
            .arg(repo().join("local/tests/fixtures/serve-client.mjs"))
            .arg(calls.to_string())
            .env("MCP_SDK_DIR", packages().join("sdk"))
            .env("CAPABILITIES_BIN", env!("CARGO_BIN_EXE_capabilities"))
            .env("CAPABILITIES_HOME", self.home())
            .env("CAPABILITIES_PROFILE", profile)
            .stderr(Stdio::inherit())
            .output()
            .expect("node starts");
        assert!(out.status.success(), "the client failed: {}", String::from_utf8_lossy(&out.stdout));
        serde_json::from_slice(&out.stdout).expect("the client prints one JSON object")
    }
}

fn execute(code: &str) -> Value {
    json!({ "name": "execute", "arguments": { "code": code } })
}

#[test]
fn a_profile_serves_only_its_tools_and_only_tightens() {
    let hub = Hub::with_memory();
    let created = hub.run(&[
        "profiles",
        "create",
        "reader",
        "--serves",
        "memory.read*,memory.searchNodes,memory.createEntities",
        "--ask",
        "memory.readGraph",
        "--deny",
        "memory.searchNodes",
    ]);
    assert_eq!(created.code, 0, "{}{}", created.stdout, created.stderr);
    assert!(created.stdout.contains("created profile `reader`: 3 tools"), "{}", created.stdout);

    let shown: Value =
        serde_json::from_str(&hub.run(&["--json", "profiles", "show", "reader"]).stdout).unwrap();
    assert_eq!(
        shown["tools"],
        json!(["memory.createEntities", "memory.readGraph", "memory.searchNodes"]),
        "{shown}"
    );
    let listed = hub.run(&["profiles", "list"]).stdout;
    assert!(listed.starts_with("default  serves *\nreader  serves memory.read*"), "{listed}");

    let seen = hub.client(
        "reader",
        json!([
            { "name": "search", "arguments": { "query": "delete entities" } },
            { "name": "search", "arguments": { "query": "search nodes" } },
            execute("try { await memory.deleteEntities({ entityNames: ['a'] }) } catch (e) { return e.message }"),
            execute("return await memory.readGraph({})"),
            execute("try { await memory.searchNodes({ query: 'a' }) } catch (e) { return e.code }"),
        ]),
    );
    assert_eq!(seen["tools"].as_array().unwrap().len(), 3, "the same three tools: {}", seen["tools"]);
    let text = |i: usize| seen["results"][i]["text"].as_str().unwrap_or_default().to_owned();
    assert!(!text(0).contains("deleteEntities"), "a tool it does not serve is not found: {}", text(0));
    assert!(!text(1).contains("memory.searchNodes"), "a denied tool is hidden: {}", text(1));
    assert!(text(2).contains("no tool \\\"deleteEntities\\\""), "nor can it be called: {}", text(2));
    let read: Value = serde_json::from_str(&text(3)).unwrap();
    assert_eq!(read["status"], "awaiting_approval", "the profile's ask holds over a read: {read}");
    let denied: Value = serde_json::from_str(&text(4)).unwrap();
    assert_eq!(denied["result"], "policy_denied", "{denied}");

    // The same hub through the default profile: everything, the hub's policy as it is.
    let everything = hub.run(&["--json", "exec", "return await memory.readGraph({})"]);
    assert_eq!(everything.code, 0, "{}{}", everything.stdout, everything.stderr);
    let through = hub.run(&["--json", "exec", "--profile", "reader", "return await memory.readGraph({})"]);
    assert_eq!(through.code, 4, "asks: {}", through.stdout);

    // A run belongs to the profile that started it: a person's decision at the terminal
    // resumes it there (the profile's deny still holds), and the default profile cannot
    // resume it.
    let code = "await memory.readGraph({}); try { await memory.searchNodes({ query: 'a' }) } catch (e) { return e.code }";
    let paused = hub.run(&["--json", "exec", "--profile", "reader", code]);
    let id = serde_json::from_str::<Value>(&paused.stdout).unwrap()["runId"].as_str().unwrap().to_owned();
    let resumed = hub.client("default", json!([{ "name": "execute", "arguments": { "resume": id } }]));
    let text = resumed["results"][0]["text"].as_str().unwrap_or_default();
    assert!(
        text.contains("unknown_run") || text.contains("no run"),
        "another profile cannot resume it: {text}"
    );
    let approved = hub.run(&["--json", "approve", &id, "--choice", "once"]);
    let envelope: Value = serde_json::from_str(&approved.stdout).unwrap();
    assert_eq!(envelope["result"], "policy_denied", "resumed as `reader`: {envelope}");

    // Edits: --serves replaces, rules add; default stays built in.
    let edited = hub.run(&["profiles", "edit", "reader", "--serves", "memory", "--clear-rules"]);
    assert_eq!(edited.code, 0, "{}", edited.stderr);
    assert!(edited.stdout.contains("9 tools"), "{}", edited.stdout);
    assert_eq!(hub.run(&["profiles", "edit", "default", "--serves", "memory"]).code, 2);
    assert_eq!(hub.run(&["profiles", "remove", "default"]).code, 2);
    assert_eq!(hub.run(&["profiles", "remove", "reader"]).code, 0);
    let gone = hub.run(&["serve", "--stdio", "--profile", "reader"]);
    assert_eq!(gone.code, 2, "{}", gone.stderr);
    assert!(
        gone.stderr.contains("there is no profile `reader`; the profiles are default"),
        "{}",
        gone.stderr
    );
}

#[test]
fn bad_profiles_are_refused_with_nothing_written() {
    let hub = Hub::with_memory();
    let cases: &[(&[&str], &str)] = &[
        (&["create", "Bad Name", "--serves", "memory"], "not a profile name"),
        (
            &["create", "p", "--serves", "github"],
            "`github` matches no tool of the hub; its sources are memory",
        ),
        (&["create", "p"], "say what `p` serves"),
        (&["create", "p", "--serves", "../etc"], "not a pattern"),
        (&["create", "p", "--serves", "memory", "--deny", "Not A Source"], "is not a namespace"),
        (&["create", "default", "--serves", "memory"], "exists already"),
    ];
    for (args, said) in cases {
        let mut all = vec!["profiles"];
        all.extend_from_slice(args);
        let out = hub.run(&all);
        assert_eq!(out.code, 2, "{args:?}: {}{}", out.stdout, out.stderr);
        assert!(out.stderr.contains(said), "{args:?}: {}", out.stderr);
    }
    assert!(!hub.home().join("profiles").read_dir().unwrap().any(|_| true), "nothing written");
    assert_eq!(hub.run(&["profiles", "create", "p", "--serves", "memory"]).code, 0);
    let twice = hub.run(&["profiles", "create", "p", "--serves", "memory"]);
    assert!(twice.stderr.contains("profile `p` exists already"), "{}", twice.stderr);
    // A profile file edited by hand to loosen is refused where it is used.
    std::fs::write(
        hub.home().join("profiles/p.json"),
        r#"{"name":"p","serves":["memory"],"rules":[{"source":"memory","effect":"allow"}]}"#,
    )
    .unwrap();
    let loose = hub.run(&["exec", "--profile", "p", "return 1"]);
    assert_ne!(loose.code, 0);
    assert!(loose.stderr.contains("can only tighten"), "{}", loose.stderr);
}

/// `hub connect --profile` writes an entry serving that profile, and doctor counts it as
/// connected; a profile that does not exist is refused before any file is touched.
#[test]
fn a_harness_is_connected_with_its_own_profile() {
    let hub = Hub::with_memory();
    assert_eq!(hub.run(&["profiles", "create", "reader", "--serves", "memory.read*"]).code, 0);
    let user = hub.dir.path().join("user");
    std::fs::create_dir_all(user.join(".cursor")).unwrap();
    std::fs::write(user.join(".cursor/mcp.json"), "{\n  \"mcpServers\": {}\n}\n").unwrap();
    let connect = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .arg("hub")
            .args(args)
            .env("CAPABILITIES_HOME", hub.home())
            .env("HOME", &user)
            .env("NO_COLOR", "1")
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, stderr) = connect(&["connect", "--client", "cursor", "--profile", "nope"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("there is no profile `nope`"), "{stderr}");
    assert!(!std::fs::read_to_string(user.join(".cursor/mcp.json")).unwrap().contains("capabilities"));
    let (code, out, stderr) = connect(&["connect", "--client", "cursor", "--profile", "reader"]);
    assert_eq!(code, 0, "{out}{stderr}");
    let file: Value =
        serde_json::from_str(&std::fs::read_to_string(user.join(".cursor/mcp.json")).unwrap()).unwrap();
    let args = &file["mcpServers"]["capabilities"]["args"];
    assert_eq!(args, &json!(["hub", "serve", "--stdio", "--profile", "reader"]), "{file}");
    let (_, doctor, _) = connect(&["--json", "doctor"]);
    let doctor: Value = serde_json::from_str(&doctor).unwrap();
    let cursor =
        doctor["checks"].as_array().unwrap().iter().find(|c| c["name"] == "cursor").cloned().unwrap();
    assert_eq!(cursor["ok"], true, "an entry serving an existing profile is connected: {cursor}");
}

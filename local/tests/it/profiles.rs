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

impl Hub {
    /// The SDK client of `elicit-client.mjs` against profile `profile`, answering approval
    /// prompts with `answers` (`None`: a client that cannot be asked).
    fn elicit(&self, profile: &str, calls: &Value, answers: Option<&[&str]>) -> std::process::Child {
        Command::new("node")
            .arg(repo().join("local/tests/fixtures/elicit-client.mjs"))
            .arg(calls.to_string())
            .arg(json!(answers).to_string())
            .env("MCP_SDK_DIR", packages().join("sdk"))
            .env("CAPABILITIES_BIN", env!("CARGO_BIN_EXE_capabilities"))
            .env("CAPABILITIES_HOME", self.home())
            .env("CAPABILITIES_PROFILE", profile)
            // The approval page's browser: nothing opens.
            .env("BROWSER", "true")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("node starts")
    }

    fn runs(&self) -> Vec<Value> {
        let listed: Value = serde_json::from_str(&self.run(&["--json", "runs"]).stdout).unwrap();
        listed["runs"].as_array().cloned().unwrap_or_default()
    }
}

fn finished(child: std::process::Child) -> Value {
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "the client failed: {}", String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout).expect("the client prints one JSON object")
}

fn direct(name: &str, arguments: Value) -> Value {
    json!({ "name": name, "arguments": arguments })
}

/// A direct-mode profile lists the memory server's own tools under stable names with their own
/// schemas; each call is a run of the hub, decided by its policy, that answers as the tool.
#[test]
fn direct_mode_lists_each_tool_and_calls_it_through_the_hub() {
    let hub = Hub::with_memory();
    let created = hub.run(&["profiles", "create", "plain", "--serves", "memory", "--mode", "direct"]);
    assert_eq!(created.code, 0, "{}{}", created.stdout, created.stderr);
    let listed = hub.run(&["profiles", "show", "plain"]).stdout;
    assert!(listed.contains("plain  serves memory  (direct)"), "{listed}");
    assert!(
        listed.lines().any(|l| l.split_whitespace().eq(["memory_read_graph", "memory.readGraph"])),
        "{listed}"
    );

    let seen = hub.client(
        "plain",
        json!([
            direct("memory_read_graph", json!({})),
            direct(
                "memory_create_entities",
                json!({ "entities": [{ "name": "a", "entityType": "t", "observations": [] }] })
            ),
            direct("execute", json!({ "code": "return 1" })),
            direct("memory_search_nodes", json!({ "query": 5 })),
        ]),
    );
    let tools = seen["tools"].as_array().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names.len(), 9, "{names:?}");
    assert!(names.contains(&"memory_read_graph") && names.contains(&"memory_create_entities"), "{names:?}");
    assert!(names.iter().all(|n| n.len() <= 50 && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')));
    let manifest: Value =
        serde_json::from_str(&std::fs::read_to_string(hub.home().join("manifests/memory.json")).unwrap())
            .unwrap();
    let create =
        manifest["tools"].as_array().unwrap().iter().find(|t| t["ident"] == "createEntities").unwrap();
    let listed = tools.iter().find(|t| t["name"] == "memory_create_entities").unwrap();
    assert_eq!(listed["inputSchema"], create["record"]["inputSchema"], "the schema passes through unchanged");
    assert!(
        seen["instructions"].as_str().unwrap().contains("call the same tool again"),
        "{}",
        seen["instructions"]
    );

    let results = &seen["results"];
    assert_eq!(results[0]["isError"], false, "{}", results[0]);
    assert_eq!(results[0]["structuredContent"], json!({ "entities": [], "relations": [] }), "{}", results[0]);
    assert_eq!(results[1]["isError"], true, "a write waits for a person: {}", results[1]);
    assert!(results[1]["text"].as_str().unwrap().contains("call this tool again"), "{}", results[1]);
    assert!(
        results[2]["text"].as_str().unwrap().contains("there is no tool `execute` in this profile"),
        "direct mode serves only the profile's tools: {}",
        results[2]
    );
    assert!(results[3]["text"].as_str().unwrap().contains("invalid_arguments"), "{}", results[3]);

    // Every call was a run of this profile, in the run history.
    let runs = hub.runs();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert!(runs.iter().all(|r| r["profile"] == "plain"), "{runs:?}");

    // The same names in another process, and the same after an unrelated source arrives.
    let again = hub.client("plain", json!([]));
    assert_eq!(again["tools"], seen["tools"]);
}

/// Approvals reach a direct call on every channel: the client's own prompt, and a person at
/// the terminal while the client waits; the call made again continues the same run, and the
/// write happens once.
#[test]
fn direct_calls_are_approved_in_the_client_or_from_the_terminal() {
    let hub = Hub::with_memory();
    assert_eq!(hub.run(&["profiles", "create", "plain", "--serves", "memory", "--mode", "direct"]).code, 0);
    let entity =
        |name: &str| json!({ "entities": [{ "name": name, "entityType": "t", "observations": [] }] });

    let asked = finished(hub.elicit(
        "plain",
        &json!([direct("memory_create_entities", entity("asked"))]),
        Some(&["once"]),
    ));
    assert_eq!(asked["results"][0]["isError"], false, "{asked}");
    assert_eq!(asked["elicitations"].as_array().unwrap().len(), 1, "{asked}");

    let go = hub.dir.path().join("go");
    let calls = json!([
        direct("memory_create_entities", entity("later")),
        { "waitFor": go.display().to_string() },
        direct("memory_create_entities", entity("later")),
    ]);
    let client = hub.elicit("plain", &calls, None);
    let waiting = (0..200)
        .find_map(|_| {
            std::thread::sleep(std::time::Duration::from_millis(100));
            hub.runs().into_iter().find(|r| r["status"] == "awaiting_input")
        })
        .expect("the call waits for a person");
    let id = waiting["id"].as_str().unwrap().to_owned();
    let approved = hub.run(&["--json", "approve", &id, "--choice", "once"]);
    assert_eq!(approved.code, 0, "{}{}", approved.stdout, approved.stderr);
    std::fs::write(&go, "").unwrap();
    let seen = finished(client);
    assert_eq!(seen["results"][0]["isError"], true, "{seen}");
    assert_eq!(seen["results"][1]["isError"], false, "the same call continues the run: {seen}");
    let memory = std::fs::read_to_string(hub.dir.path().join("memory.jsonl")).unwrap();
    assert_eq!(memory.matches(r#""name":"later""#).count(), 1, "written once: {memory}");
    assert_eq!(hub.runs().len(), 2, "no third run");
}

//! Import, connect, disconnect and rollback against realistic harness configs in a temporary
//! `HOME`, with the real memory server as every imported source, and the harnesses' own CLIs
//! (`claude mcp list`, `codex mcp list`, pinned in node/package.json) reading what `connect`
//! wrote. Also `doctor` on a healthy and a broken hub, and `call`.
//!
//! Needs Node.js and `cd node && npm ci` at the repository root; fails (never skips) without.

use std::path::PathBuf;
use std::process::{Command, Stdio};

use expect_test::expect;
use serde_json::Value;

use crate::support::{packages, repo};

/// One machine: a HOME with harness configs, and a hub store beside it.
struct Machine {
    dir: tempfile::TempDir,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// (fixture, path under HOME)
const FIXTURES: &[(&str, &str)] = &[
    ("claude.json", ".claude.json"),
    ("codex.toml", ".codex/config.toml"),
    ("cursor.json", ".cursor/mcp.json"),
    ("claude_desktop_config.json", ".config/Claude/claude_desktop_config.json"),
    ("antigravity.json", ".gemini/antigravity/mcp_config.json"),
    ("hermes.yaml", ".hermes/config.yaml"),
];

fn memory_server() -> PathBuf {
    packages().join("server-memory/dist/index.js")
}

/// A harness's own CLI from node/node_modules/.bin.
fn harness_cli(name: &str) -> PathBuf {
    let path = repo().join("node/node_modules/.bin").join(name);
    assert!(path.exists(), "{} is missing: run `cd node && npm ci` at the repository root", path.display());
    path
}

impl Machine {
    fn new() -> Machine {
        let machine = Machine { dir: tempfile::tempdir().unwrap() };
        std::fs::create_dir_all(machine.home()).unwrap();
        machine
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn hub(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    /// Lays out every fixture under HOME, with paths filled in, plus a skill for Claude Code.
    fn with_harnesses(self) -> Machine {
        let fixtures = repo().join("local/tests/fixtures/harness");
        for (fixture, target) in FIXTURES {
            let text = std::fs::read_to_string(fixtures.join(fixture)).unwrap();
            let text = text
                .replace("@MEMORY_SERVER@", memory_server().to_str().unwrap())
                .replace("@HOME@", self.home().to_str().unwrap());
            let path = self.home().join(target);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, text).unwrap();
        }
        let skill = self.home().join(".claude/skills/release-notes/SKILL.md");
        std::fs::create_dir_all(skill.parent().unwrap()).unwrap();
        std::fs::write(
            skill,
            "---\nname: release-notes\ndescription: Write release notes.\n---\nWrite release notes.\n",
        )
        .unwrap();
        self
    }

    /// Every harness file's bytes (as text, so a difference reads well).
    fn snapshot(&self) -> Vec<(String, String)> {
        FIXTURES
            .iter()
            .map(|(_, target)| {
                let bytes = std::fs::read(self.home().join(target)).unwrap();
                (target.to_string(), String::from_utf8(bytes).unwrap())
            })
            .collect()
    }

    fn run(&self, args: &[&str]) -> Ran {
        let out = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .args(args)
            .env("HOME", self.home())
            .env("CAPABILITIES_HOME", self.hub())
            // The keychain is tested in `secrets`; here credentials go to the hub's file.
            .env("CAPABILITIES_KEYCHAIN", "file")
            .env("NO_COLOR", "1")
            .current_dir(self.home())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        self.ran(out)
    }

    fn cli(&self, name: &str, args: &[&str]) -> Ran {
        let out = Command::new(harness_cli(name))
            .args(args)
            .env("HOME", self.home())
            .env_remove("CAPABILITIES_HOME")
            .current_dir(self.home())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        self.ran(out)
    }

    fn ran(&self, out: std::process::Output) -> Ran {
        let bin = std::fs::canonicalize(env!("CARGO_BIN_EXE_capabilities")).unwrap();
        let clean = |bytes: &[u8]| {
            String::from_utf8_lossy(bytes)
                .replace(bin.to_str().unwrap(), "$BIN")
                .replace(memory_server().to_str().unwrap(), "$MEMORY")
                .replace(self.home().to_str().unwrap(), "$HOME")
                .replace(self.hub().to_str().unwrap(), "$HUB")
        };
        Ran { code: out.status.code().unwrap_or(-1), stdout: clean(&out.stdout), stderr: clean(&out.stderr) }
    }

    fn read(&self, target: &str) -> String {
        std::fs::read_to_string(self.home().join(target)).unwrap()
    }

    fn json(&self, target: &str) -> Value {
        serde_json::from_str(&self.read(target)).unwrap()
    }
}

fn ok(ran: &Ran) -> &Ran {
    assert_eq!(ran.code, 0, "stdout:\n{}\nstderr:\n{}", ran.stdout, ran.stderr);
    ran
}

/// Backup set names carry the time (`20261129T231935.045Z`); tests see them as `<set>`.
fn without_sets(text: &str) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(at) = rest.find(|c: char| c.is_ascii_digit()) {
        let candidate = &rest[at..];
        let is_set = candidate.len() >= 20
            && candidate.as_bytes()[8] == b'T'
            && candidate.as_bytes()[15] == b'.'
            && candidate.as_bytes()[19] == b'Z';
        out.push_str(&rest[..at]);
        if is_set {
            out.push_str("<set>");
            rest = &candidate[20..];
        } else {
            out.push_str(&candidate[..1]);
            rest = &candidate[1..];
        }
    }
    out.push_str(rest);
    out
}

#[test]
fn import_merges_duplicates_and_leaves_the_harness_files_alone() {
    let machine = Machine::new().with_harnesses();
    let before = machine.snapshot();
    let ran = machine.run(&["hub", "import", "--yes"]);
    ok(&ran);
    expect![[r#"
        read claude-code: 3 servers
        read codex: 2 servers
        read cursor: 1 server
        read claude-desktop: 1 server
        read antigravity: 1 server
        read hermes: 2 servers

        to import:
          memory  MEMORY_FILE_PATH=$HOME/memory-claude.jsonl node $MEMORY
            from claude-code (user) memory, claude-code (project $HOME/code/app) notes, codex (user) memory, claude-desktop (user) memory, hermes (user) memory
          old_remote  https://mcp.example.com/mcp
            from claude-code (user) old-remote
            `https://mcp.example.com/sse` is an SSE endpoint; the hub tries its streamable HTTP endpoint
          memory_2  MEMORY_FILE_PATH=$HOME/memory-cursor.jsonl node $MEMORY --cursor
            from cursor (user) memory
            credentials in plain text: API_TOKEN
          docs  https://docs.example.com/mcp
            from antigravity (user) docs
            `https://docs.example.com/sse` is an SSE endpoint; the hub tries its streamable HTTP endpoint
        skipped codex (user) switched_off: turned off in its harness
        skipped hermes (user) github: turned off in its harness

        skills to import:
          release-notes  Write release notes.
            1 file, sha256:1bc08e7b3b68, from claude-code ~/.claude/skills/release-notes
        added skill `release-notes`
        added `memory` with 9 tools
        added `memory_2` with 9 tools
    "#]].assert_eq(&ran.stdout);
    assert!(!ran.stderr.contains("needs its credential"), "the credential was copied: {}", ran.stderr);
    let connections = ok(&machine.run(&["hub", "connections", "memory_2", "--json"])).stdout.clone();
    assert!(connections.contains("API_TOKEN"), "{connections}");
    assert!(!connections.contains("plaintext-cursor-token"), "{connections}");
    let kept = std::fs::read_to_string(machine.hub().join("secrets.json")).unwrap();
    assert!(kept.contains("plaintext-cursor-token"), "the value moved into the hub's secret store");
    assert!(!ran.stdout.contains("plaintext-cursor-token") && !ran.stderr.contains("plaintext-cursor-token"));
    assert_eq!(machine.snapshot(), before, "import changed a harness file");

    let list: Value = serde_json::from_str(&ok(&machine.run(&["hub", "list", "--json"])).stdout).unwrap();
    let rows: Vec<String> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            format!(
                "{} {} tools, {} unreviewed, connections {}",
                r["namespace"], r["tools"], r["unreviewed"], r["connections"]
            )
        })
        .collect();
    expect![[r#"
        [
            "\"memory\" 9 tools, 0 unreviewed, connections []",
            "\"memory_2\" 9 tools, 0 unreviewed, connections [\"default\"]",
        ]
    "#]]
    .assert_debug_eq(&rows);
    let stored = std::fs::read_to_string(machine.hub().join("connections/memory_2.json")).unwrap();
    assert!(!stored.contains("plaintext-cursor-token"), "a credential reached the store: {stored}");

    // The remote servers did not answer (no such hosts here): they are named, left out, and do
    // not fail the import.
    assert!(ran.stderr.contains("`old_remote` was not added: its server did not answer; add it later with `capabilities hub add https://mcp.example.com/mcp`"), "{}", ran.stderr);

    // A second import finds everything else in the hub already and offers only those two again.
    let again = ok(&machine.run(&["hub", "import", "--yes"])).stdout.clone();
    let proposed: Vec<&str> = again
        .lines()
        .filter(|l| l.starts_with("  ") && !l.starts_with("    "))
        .map(|l| l.split_whitespace().next().unwrap_or(""))
        .collect();
    assert_eq!(proposed, ["old_remote", "docs"], "{again}");
    assert!(again.contains("already in the hub as `memory`"), "{again}");
}

#[test]
fn connect_writes_one_entry_the_real_harness_clis_list_and_rollback_restores_bytes() {
    let machine = Machine::new().with_harnesses();
    let before = machine.snapshot();
    let init = machine.run(&["hub", "init", "--import", "--yes"]);
    ok(&init);
    // `init --import` imports only and says how to connect; connecting twice changes nothing the
    // second time.
    assert!(init.stderr.contains("`capabilities hub connect`"), "{}", init.stderr);
    assert!(machine.json(".claude.json")["mcpServers"].get("capabilities").is_none());
    ok(&machine.run(&["hub", "connect"]));
    let again = machine.run(&["hub", "connect"]);
    ok(&again);
    expect![[r#"
        unchanged claude-code: $HOME/.claude.json
          already connected
        unchanged codex: $HOME/.codex/config.toml
          already connected
        unchanged cursor: $HOME/.cursor/mcp.json
          already connected
        unchanged claude-desktop: $HOME/.config/Claude/claude_desktop_config.json
          already connected
        manual antigravity: $HOME/.gemini/antigravity/mcp_config.json
          Antigravity is read by the hub but not written; add this to $HOME/.gemini/antigravity/mcp_config.json:
          {
            "mcpServers": {
              "capabilities": {
                "command": "$HUB/bin/capabilities",
                "args": [
                  "hub",
                  "serve",
                  "--stdio",
                  "--profile",
                  "default"
                ],
                "env": {
                  "CAPABILITIES_HOME": "$HUB"
                }
              }
            }
          }
        unchanged hermes: $HOME/.hermes/config.yaml
          already connected
        unchanged claude-code: $HOME/.claude/skills
          1 skill already in place
        unchanged codex: $HOME/.agents/skills
          1 skill already in place
        unchanged cursor: $HOME/.cursor/skills
          1 skill already in place
        unchanged antigravity: $HOME/.gemini/antigravity/skills
          1 skill already in place
        unchanged hermes: $HOME/.hermes/skills
          1 skill already in place
    "#]].assert_eq(&without_sets(&again.stdout));

    // The entry runs the hub's link to the binary, which survives its upgrades (`install.rs`).
    let bin = machine.hub().join("bin/capabilities");
    let claude = machine.json(".claude.json");
    assert_eq!(claude["mcpServers"]["capabilities"]["command"], bin.to_str().unwrap());
    assert_eq!(claude["numStartups"], 42, "unrelated keys survive");
    assert_eq!(
        claude["projects"][machine.home().join("code/app").to_str().unwrap()]["hasTrustDialogAccepted"],
        true
    );
    let codex = machine.read(".codex/config.toml");
    assert!(
        codex.starts_with(
            "# Codex settings, edited by hand.\nmodel = \"gpt-5-codex\"   # the default model\n"
        ),
        "{codex}"
    );
    assert!(codex.contains("# The memory server, shared with Claude Code.\n[mcp_servers.memory]"), "{codex}");
    assert!(codex.contains("[mcp_servers.capabilities]"), "{codex}");
    assert!(
        machine
            .read(".config/Claude/claude_desktop_config.json")
            .contains("\n    \"globalShortcut\": \"Alt+Space\",\n")
    );
    assert_eq!(machine.snapshot()[4], before[4], "read-only harnesses are never written");
    let hermes = machine.read(".hermes/config.yaml");
    assert!(hermes.starts_with(&before[5].1), "Hermes's YAML keeps its comments and entries:\n{hermes}");
    assert!(hermes.contains("\n  capabilities:\n    command: "), "{hermes}");

    let rolled = machine.run(&["rollback"]);
    ok(&rolled);
    expect![[r#"
        rolled back `connect` (set <set>):
          restored claude-code: $HOME/.claude.json
          restored codex: $HOME/.codex/config.toml
          restored cursor: $HOME/.cursor/mcp.json
          restored claude-desktop: $HOME/.config/Claude/claude_desktop_config.json
          restored hermes: $HOME/.hermes/config.yaml
          removed hermes: $HOME/.hermes/skills/release-notes (the hub had created it)
          removed antigravity: $HOME/.gemini/antigravity/skills/release-notes (the hub had created it)
          removed cursor: $HOME/.cursor/skills/release-notes (the hub had created it)
          removed codex: $HOME/.agents/skills/release-notes (the hub had created it)
    "#]]
    .assert_eq(&without_sets(&rolled.stdout));
    assert_eq!(machine.snapshot(), before, "rollback restores every file byte for byte");

    // Connected again, the harnesses' own CLIs see the entry; Claude Code starts the hub to
    // check it.
    ok(&machine.run(&["hub", "connect"]));
    let listed = ok(&machine.cli("claude", &["mcp", "list"])).stdout.clone();
    let line = listed.lines().find(|l| l.starts_with("capabilities:")).unwrap_or_else(|| panic!("{listed}"));
    assert!(line.contains("Connected"), "{listed}");
    let codex_list: Value =
        serde_json::from_str(&ok(&machine.cli("codex", &["mcp", "list", "--json"])).stdout).unwrap();
    let ours = codex_list
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "capabilities")
        .expect("codex lists capabilities");
    assert_eq!(ours["enabled"], true);
    assert_eq!(ours["transport"]["command"], "$HUB/bin/capabilities");

    // Claude Code rewrote its file meanwhile: rollback refuses it rather than lose that.
    let refused = machine.run(&["rollback"]);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert!(
        refused
            .stdout
            .contains("refused claude-code: $HOME/.claude.json: it was edited since the hub wrote it")
    );
    assert!(machine.json(".claude.json")["mcpServers"].get("capabilities").is_some(), "nothing clobbered");
    assert!(refused.stdout.contains("capabilities rollback --keep-edits"), "{}", refused.stdout);

    // `--keep-edits` puts back only the server entries of the file Claude Code rewrote; the
    // files nobody touched come back byte for byte.
    let merged = machine.run(&["rollback", "--keep-edits"]);
    ok(&merged);
    assert!(merged.stdout.contains("restored the MCP servers of claude-code"), "{}", merged.stdout);
    let claude = machine.json(".claude.json");
    let original: Value = serde_json::from_str(&before[0].1).unwrap();
    assert_eq!(claude["mcpServers"], original["mcpServers"]);
    assert!(claude.get("firstStartTime").is_some(), "what Claude Code wrote stays");
    assert_eq!(machine.snapshot()[1..], before[1..]);
    assert!(!machine.home().join(".pi").exists());
}

#[test]
fn replace_turns_imported_entries_off_and_disconnect_removes_ours() {
    let machine = Machine::new().with_harnesses();
    let before = machine.snapshot();
    ok(&machine.run(&["hub", "import", "--yes", "--from", "claude-code", "--from", "codex"]));
    let ran = machine.run(&["hub", "connect", "--replace", "--client", "claude-code", "--client", "codex"]);
    ok(&ran);
    expect![[r#"
        connected claude-code: $HOME/.claude.json
          wrote the `capabilities` entry; turned off memory, notes
        connected codex: $HOME/.codex/config.toml
          wrote the `capabilities` entry; turned off memory
        unchanged claude-code: $HOME/.claude/skills
          1 skill already in place
        skills codex: $HOME/.agents/skills
          placed 1 skill: release-notes
        backed up the files it changed under $HUB/backups/<set>; undo with `capabilities rollback`
    "#]]
    .assert_eq(&without_sets(&ran.stdout));
    let claude = machine.json(".claude.json");
    let project = &claude["projects"][machine.home().join("code/app").to_str().unwrap()];
    assert_eq!(claude["capabilitiesDisabledMcpServers"]["memory"]["command"], "node");
    assert!(claude["mcpServers"].get("memory").is_none());
    assert!(claude["mcpServers"].get("old-remote").is_some(), "entries the hub did not import stay");
    assert!(project["capabilitiesDisabledMcpServers"].get("notes").is_some());
    let codex_list: Value =
        serde_json::from_str(&ok(&machine.cli("codex", &["mcp", "list", "--json"])).stdout).unwrap();
    let enabled: Vec<String> =
        codex_list.as_array().unwrap().iter().map(|s| format!("{} {}", s["name"], s["enabled"])).collect();
    expect![[r#"
        [
            "\"capabilities\" true",
            "\"memory\" false",
            "\"switched_off\" false",
        ]
    "#]]
    .assert_debug_eq(&enabled);

    let after_connect = machine.snapshot();
    let ran = machine.run(&["hub", "disconnect"]);
    ok(&ran);
    expect![[r#"
        disconnected claude-code: $HOME/.claude.json
          removed the `capabilities` entry
        disconnected codex: $HOME/.codex/config.toml
          removed the `capabilities` entry
        skills codex: $HOME/.agents/skills
          removed 1 skill: release-notes
        backed up the files it changed under $HUB/backups/<set>; undo with `capabilities rollback`
    "#]]
    .assert_eq(&without_sets(&ran.stdout));
    assert!(machine.json(".claude.json")["mcpServers"].get("capabilities").is_none());
    assert!(!machine.read(".codex/config.toml").contains("[mcp_servers.capabilities]"));

    ok(&machine.run(&["rollback"]));
    assert_eq!(machine.snapshot(), after_connect, "the first rollback undoes disconnect");
    ok(&machine.run(&["rollback"]));
    assert_eq!(machine.snapshot(), before, "the second undoes connect --replace");
    let nothing = ok(&machine.run(&["rollback"])).stderr.clone();
    assert!(nothing.contains("nothing to roll back"), "{nothing}");

    // Claude Code itself no longer lists a parked entry, and keeps it in its file.
    ok(&machine.run(&["hub", "connect", "--replace", "--client", "claude-code"]));
    let listed = ok(&machine.cli("claude", &["mcp", "list"])).stdout.clone();
    assert!(!listed.lines().any(|l| l.starts_with("memory:")), "{listed}");
    assert!(listed.lines().any(|l| l.starts_with("capabilities:") && l.contains("Connected")), "{listed}");
    assert!(machine.json(".claude.json")["capabilitiesDisabledMcpServers"].get("memory").is_some());
    ok(&machine.run(&["rollback", "--keep-edits"]));
    let claude = machine.json(".claude.json");
    assert!(claude.get("capabilitiesDisabledMcpServers").is_none());
    assert_eq!(
        claude["mcpServers"].as_object().unwrap().keys().collect::<Vec<_>>(),
        ["memory", "old-remote"]
    );
}

#[test]
fn rollback_refuses_a_file_edited_since_connect() {
    let machine = Machine::new().with_harnesses();
    ok(&machine.run(&["hub", "connect", "--client", "cursor"]));
    let path = machine.home().join(".cursor/mcp.json");
    std::fs::write(&path, "{\"mcpServers\": {}}\n").unwrap();
    let ran = machine.run(&["rollback"]);
    assert_eq!(ran.code, 1);
    expect![[r#"
        did not roll back `connect` (set <set>); nothing was changed:
          refused cursor: $HOME/.cursor/mcp.json: it was edited since the hub wrote it
        to put back only the MCP server entries and keep those edits, run `capabilities rollback --keep-edits`; the copies are under $HUB/backups/<set>
    "#]]
    .assert_eq(&without_sets(&ran.stdout));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "{\"mcpServers\": {}}\n", "nothing clobbered");
    // Keeping the edits puts the servers back as they were before connect.
    ok(&machine.run(&["rollback", "--keep-edits"]));
    let servers = machine.json(".cursor/mcp.json")["mcpServers"].clone();
    assert_eq!(servers.as_object().unwrap().keys().collect::<Vec<_>>(), ["memory"]);
}

#[test]
fn doctor_reports_a_healthy_hub_then_a_source_that_does_not_start() {
    let machine = Machine::new();
    ok(&machine.run(&["hub", "init"]));
    let memory_file = machine.dir.path().join("memory.jsonl");
    let env = format!("MEMORY_FILE_PATH={}", memory_file.display());
    ok(&machine.run(&[
        "hub",
        "add",
        "--yes",
        "--namespace",
        "memory",
        "--env",
        &env,
        "--",
        "node",
        memory_server().to_str().unwrap(),
    ]));
    let healthy = machine.run(&["hub", "doctor"]);
    ok(&healthy);
    expect![[r#"
        store
          ok   permissions: $HUB: directories 700, files 600
          ok   schema: schema version 1 (this build writes 1)
          ok   records: 1 source record(s) readable
          ok   runs: 0 run record(s) and their journals readable
        sources
          ok   memory: started; lists 9 tool(s), 9 in the manifest
          ok   schemas: every tool's input schema can be checked before a call
        isolation
          ok   memory: unisolated: runs as you, with your files and network
        secrets
          ok   keychain: $HUB/secrets.json (CAPABILITIES_KEYCHAIN=file)
        all good
    "#]]
    .assert_eq(&healthy.stdout);

    // A direct call: a read runs, a write waits for a person.
    let read = machine.run(&["hub", "call", "memory.readGraph", "{}"]);
    ok(&read);
    assert!(read.stdout.starts_with("completed"), "{}", read.stdout);
    let write = machine.run(&["hub", "call", "memory.createEntities", r#"{"entities": []}"#]);
    assert_eq!(write.code, 4, "{}", write.stdout);
    assert!(write.stdout.starts_with("awaiting_approval"), "{}", write.stdout);
    assert_eq!(machine.run(&["hub", "call", "memory", "{}"]).code, 2);

    let record = r#"{"spec": {"namespace": "broken", "transport": {"type": "stdio", "command": "/nonexistent/mcp-server"}}, "addedMs": 0}"#;
    std::fs::write(machine.hub().join("sources/broken.json"), record).unwrap();
    let broken = machine.run(&["hub", "doctor", "--json", "--timeout", "5"]);
    assert_eq!(broken.code, 1, "{}", broken.stdout);
    let report: Value = serde_json::from_str(&broken.stdout).unwrap();
    let failed: Vec<String> = report["checks"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["ok"] == false)
        .map(|c| format!("{}: {} / next: {}", c["name"], c["detail"], c["fix"]))
        .collect();
    expect![[r#"
        [
            "\"permissions\": \"$HUB/sources/broken.json is 644, not 600\" / next: \"any hub command repairs these modes; check who else could read the files meanwhile\"",
            "\"broken\": \"source `broken` did not start: command `/nonexistent/mcp-server` does not exist or is not executable\" / next: \"check its command or URL with `capabilities hub list`, then `capabilities hub refresh broken`\"",
        ]
    "#]].assert_debug_eq(&failed);
}

#[test]
fn servers_added_with_the_harness_clis_are_imported_by_init_and_connected_by_connect() {
    let machine = Machine::new();
    let memory = memory_server();
    let memory = memory.to_str().unwrap();
    let data = format!("MEMORY_FILE_PATH={}", machine.dir.path().join("memory.jsonl").display());
    ok(&machine.cli("claude", &["mcp", "add", "-s", "user", "memory", "-e", &data, "--", "node", memory]));
    ok(&machine.cli("codex", &["mcp", "add", "memory", "--env", &data, "--", "node", memory]));
    let codex_before = machine.read(".codex/config.toml");

    let ran = machine.run(&["hub", "init", "--import", "--yes"]);
    ok(&ran);
    assert!(ran.stdout.contains("added `memory` with 9 tools"), "{}", ran.stdout);
    assert!(ran.stdout.contains("from claude-code (user) memory, codex (user) memory"), "{}", ran.stdout);
    assert!(
        ran.stderr.lines().last().is_some_and(|l| l.contains("`capabilities hub connect --replace`")),
        "{}",
        ran.stderr
    );
    ok(&machine.run(&["hub", "connect"]));

    let listed = ok(&machine.cli("claude", &["mcp", "list"])).stdout.clone();
    let line = listed.lines().find(|l| l.starts_with("capabilities:")).unwrap_or_else(|| panic!("{listed}"));
    assert!(line.contains("Connected"), "{listed}");
    let codex: Value =
        serde_json::from_str(&ok(&machine.cli("codex", &["mcp", "list", "--json"])).stdout).unwrap();
    assert!(
        codex.as_array().unwrap().iter().any(|s| s["name"] == "capabilities" && s["enabled"] == true),
        "{codex}"
    );

    ok(&machine.run(&["rollback", "--keep-edits"]));
    assert_eq!(machine.read(".codex/config.toml"), codex_before);
    assert!(machine.json(".claude.json")["mcpServers"].get("capabilities").is_none());
}

#[test]
fn a_malformed_harness_file_is_reported_and_the_others_still_work() {
    let machine = Machine::new().with_harnesses();
    let cursor = machine.home().join(".cursor/mcp.json");
    std::fs::write(&cursor, "{\"mcpServers\": {\"memory\": ").unwrap();
    let ran = machine.run(&["hub", "import", "--yes", "--from", "cursor", "--from", "claude-desktop"]);
    ok(&ran);
    assert!(
        ran.stdout.contains("problem: $HOME/.cursor/mcp.json (Cursor) could not be read"),
        "{}",
        ran.stdout
    );
    assert!(ran.stdout.contains("added `memory` with 9 tools"), "{}", ran.stdout);
    let connect = machine.run(&["hub", "connect", "--client", "cursor", "--client", "claude-desktop"]);
    assert_eq!(connect.code, 1, "{}", connect.stdout);
    assert!(connect.stdout.contains("failed cursor: $HOME/.cursor/mcp.json"), "{}", connect.stdout);
    assert!(connect.stdout.contains("connected claude-desktop"), "{}", connect.stdout);
    assert_eq!(std::fs::read_to_string(&cursor).unwrap(), "{\"mcpServers\": {\"memory\": ", "left as it was");
}

//! Native install of the hub's skills, through the binary, into real harness folders under a
//! temporary `HOME`: `hub connect` places each skill in every harness's own skill folder (a link
//! for Claude Code, copies elsewhere, Codex's first folder only), leaves a person's own skill of
//! the same name alone and reports it; the real Codex CLI shows its model the placed skill;
//! `hub skills sync` updates and removes what the hub placed; `disconnect` takes it back;
//! `rollback` leaves every folder byte for byte as it was, and refuses a placed file edited
//! since; a read-only harness folder fails that harness alone. The real `claude` CLI (pinned in
//! node/package.json) shows in its debug log the skills it loaded.

use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::repo;

struct Machine {
    dir: tempfile::TempDir,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Every harness with a skills column that `connect` writes.
const CLIENTS: &str = "claude-code,codex,cursor,gemini-cli,copilot-cli,opencode";

impl Machine {
    /// A home where each harness is installed (its folder exists) and Claude Code has a file.
    fn new() -> Machine {
        let machine = Machine { dir: tempfile::tempdir().unwrap() };
        for dir in [".codex", ".cursor", ".gemini", ".copilot", ".config/opencode"] {
            std::fs::create_dir_all(machine.home().join(dir)).unwrap();
        }
        std::fs::write(machine.home().join(".claude.json"), "{\n  \"numStartups\": 3\n}\n").unwrap();
        machine
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn hub(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    fn work(&self) -> PathBuf {
        self.dir.path().join("work")
    }

    fn run(&self, args: &[&str]) -> Ran {
        let out = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .args(args)
            .env("HOME", self.home())
            .env("CAPABILITIES_HOME", self.hub())
            .env("CAPABILITIES_KEYCHAIN", "file")
            .env("NO_COLOR", "1")
            .current_dir(self.home())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).replace(self.home().to_str().unwrap(), "$HOME"),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn json(&self, args: &[&str]) -> Value {
        let ran = self.run(args);
        serde_json::from_str(&ran.stdout).unwrap_or_else(|e| panic!("{e}: {}\n{}", ran.stdout, ran.stderr))
    }

    /// Adds a skill to the hub from `work/<name>`.
    fn add(&self, name: &str, body: &str, extra: &[(&str, &str)]) -> PathBuf {
        let dir = skill(&self.work().join(name), name, body, extra);
        ok(self.run(&["hub", "skills", "add", dir.to_str().unwrap(), "--replace"]));
        dir
    }

    /// Every folder, file (mode and bytes) and link under HOME.
    fn tree(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        walk(&self.home(), &self.home(), &mut out);
        out
    }
}

fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        let rel = path.strip_prefix(root).unwrap().display().to_string();
        let meta = std::fs::symlink_metadata(&path).unwrap();
        if meta.file_type().is_symlink() {
            out.insert(rel, format!("link {}", std::fs::read_link(&path).unwrap().display()));
        } else if meta.is_dir() {
            out.insert(rel, format!("dir {:o}", meta.mode() & 0o7777));
            walk(root, &path, out);
        } else {
            let bytes = std::fs::read(&path).unwrap();
            out.insert(rel, format!("file {:o} {}", meta.mode() & 0o7777, String::from_utf8_lossy(&bytes)));
        }
    }
}

fn ok(ran: Ran) -> Ran {
    assert_eq!(ran.code, 0, "stdout:\n{}\nstderr:\n{}", ran.stdout, ran.stderr);
    ran
}

fn skill(dir: &Path, name: &str, body: &str, extra: &[(&str, &str)]) -> PathBuf {
    let _ = std::fs::remove_dir_all(dir);
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(
        dir.join("SKILL.md"),
        format!("---\nname: {name}\ndescription: {name} for the tests.\n---\n{body}\n"),
    )
    .unwrap();
    for (path, text) in extra {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        if text.starts_with("#!") {
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
    }
    dir.to_owned()
}

/// `harness action path` for each step, sorted.
fn steps(value: &Value) -> Vec<String> {
    let mut rows: Vec<String> = value["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            format!(
                "{} {} {}",
                s["harness"].as_str().unwrap(),
                s["action"].as_str().unwrap(),
                s["path"].as_str().unwrap()
            )
        })
        .collect();
    rows.sort();
    rows
}

/// The detail of the skills step (its path is a skill folder) of `harness` doing `action`.
fn detail<'a>(value: &'a Value, harness: &str, action: &str) -> &'a str {
    value["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| {
            s["harness"] == harness
                && s["action"] == action
                && s["path"].as_str().is_some_and(|p| p.contains("skills"))
        })
        .and_then(|s| s["detail"].as_str())
        .unwrap_or_else(|| panic!("no `{action}` step for {harness}: {value:#}"))
}

#[test]
fn connect_places_skills_in_every_harness_folder_and_rollback_restores_every_folder() {
    let machine = Machine::new();
    let home = machine.home();
    // A person's own skills: one named like the hub's in Cursor's folder, one of another name in
    // Claude Code's, and one in Codex's older folder.
    skill(&home.join(".cursor/skills/release-notes"), "release-notes", "Mine, not the hub's.", &[]);
    skill(&home.join(".claude/skills/mine"), "mine", "My own.", &[]);
    skill(&home.join(".codex/skills/old-one"), "old-one", "Old.", &[]);
    machine.add(
        "release-notes",
        "List each change with its PR.",
        &[("scripts/collect.sh", "#!/bin/sh\necho notes\n")],
    );
    machine.add("triage", "Sort the issues.", &[]);
    let before = machine.tree();

    let connected = machine.json(&["--json", "hub", "connect", "--client", CLIENTS]);
    let rows: Vec<String> = steps(&connected).into_iter().filter(|r| !r.contains(" connected ")).collect();
    assert_eq!(
        rows,
        [
            "claude-code skills $HOME/.claude/skills",
            "codex skills $HOME/.agents/skills",
            "copilot-cli skills $HOME/.copilot/skills",
            "cursor conflict $HOME/.cursor/skills/release-notes",
            "cursor skills $HOME/.cursor/skills",
            "gemini-cli skills $HOME/.gemini/skills",
            "opencode skills $HOME/.config/opencode/skills",
        ],
        "{connected:#}"
    );
    let conflict = detail(&connected, "cursor", "conflict");
    assert!(
        conflict.contains("a skill of yours named `release-notes`") && conflict.contains("never overwrites"),
        "{conflict}"
    );
    assert_eq!(detail(&connected, "cursor", "skills"), "placed 1 skill: triage");
    assert!(detail(&connected, "codex", "skills").starts_with("placed 2 skills: release-notes, triage"));

    // Claude Code follows links: its folder links to the hub's one copy.
    let link = std::fs::read_link(home.join(".claude/skills/release-notes")).unwrap();
    assert_eq!(link, machine.hub().join("skills/release-notes").canonicalize().unwrap());
    // Every other harness has its own copy, byte for byte, the script still executable.
    let hub_md = std::fs::read(machine.hub().join("skills/release-notes/SKILL.md")).unwrap();
    for dir in [".agents/skills", ".gemini/skills", ".copilot/skills", ".config/opencode/skills"] {
        let placed = home.join(dir).join("release-notes");
        assert!(!std::fs::symlink_metadata(&placed).unwrap().file_type().is_symlink());
        assert_eq!(std::fs::read(placed.join("SKILL.md")).unwrap(), hub_md, "{dir}");
        let mode = std::fs::metadata(placed.join("scripts/collect.sh")).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o755, "{dir}");
        assert!(home.join(dir).join("triage/SKILL.md").is_file(), "{dir}");
    }
    // Codex gets each skill once, in its first folder; the person's own skills stay as they were.
    assert!(!home.join(".codex/skills/release-notes").exists());
    let now = machine.tree();
    let theirs = ".cursor/skills/release-notes/SKILL.md";
    assert_eq!(now[theirs], before[theirs]);
    assert!(home.join(".claude/skills/mine/SKILL.md").is_file());
    // No temporary folder is left beside the skills.
    assert!(!now.keys().any(|k| k.contains(".capabilities-")), "{now:#?}");

    // Connecting again changes nothing, and says so.
    let again = machine.json(&["--json", "hub", "connect", "--client", CLIENTS]);
    assert_eq!(detail(&again, "gemini-cli", "unchanged"), "2 skills already in place");
    assert!(again["backup"].is_null(), "{again:#}");

    let rolled = machine.json(&["--json", "rollback"]);
    assert_eq!(rolled["rolledBack"], true, "{rolled:#}");
    assert_eq!(machine.tree(), before);
}

#[test]
fn sync_updates_and_removes_what_the_hub_placed_and_disconnect_takes_it_back() {
    let machine = Machine::new();
    let home = machine.home();
    machine.add("alpha", "First.", &[]);
    machine.add("beta", "Second.", &[("notes.md", "beta notes\n")]);
    let before = machine.tree();
    ok(machine.run(&["hub", "connect", "--client", "codex,cursor"]));
    let placed = machine.tree();

    // The hub's alpha changes and beta leaves the hub; the person edits Cursor's beta.
    machine.add("alpha", "First, reworded.", &[("more.md", "more\n")]);
    ok(machine.run(&["hub", "skills", "remove", "beta"]));
    std::fs::write(home.join(".cursor/skills/beta/notes.md"), "my notes\n").unwrap();
    let synced = machine.json(&["--json", "hub", "skills", "sync"]);
    assert_eq!(detail(&synced, "codex", "skills"), "updated 1 skill: alpha; removed 1 skill: beta");
    assert_eq!(detail(&synced, "cursor", "skills"), "updated 1 skill: alpha");
    let kept = detail(&synced, "cursor", "conflict");
    assert!(kept.contains("changed since the hub placed it (notes.md edited)"), "{kept}");
    assert!(
        std::fs::read_to_string(home.join(".agents/skills/alpha/SKILL.md")).unwrap().contains("reworded")
    );
    assert!(home.join(".agents/skills/alpha/more.md").is_file());
    assert!(!home.join(".agents/skills/beta").exists());
    assert_eq!(std::fs::read_to_string(home.join(".cursor/skills/beta/notes.md")).unwrap(), "my notes\n");

    // Disconnect takes back what the hub placed, and only that.
    let disconnected =
        machine.json(&["--json", "hub", "disconnect", "--client", "codex", "--client", "cursor"]);
    assert_eq!(detail(&disconnected, "codex", "skills"), "removed 1 skill: alpha");
    assert!(!home.join(".agents/skills/alpha").exists());
    assert!(!home.join(".cursor/skills/alpha").exists());
    assert!(home.join(".cursor/skills/beta/notes.md").is_file());

    // Rolling back the disconnect, then the sync, then the connect, gives each state back.
    ok(machine.run(&["rollback"]));
    assert!(home.join(".agents/skills/alpha/more.md").is_file());
    // The sync's set: Cursor's beta was never touched by it, so rolling it back works, and
    // brings the old alpha and Codex's beta back.
    ok(machine.run(&["rollback"]));
    assert!(!home.join(".agents/skills/alpha/more.md").exists());
    assert!(home.join(".agents/skills/beta/notes.md").is_file());
    // The connect's set: Cursor's beta was edited since the hub placed it, so rollback refuses.
    let refused = machine.run(&["rollback"]);
    assert_eq!(refused.code, 1, "{}", refused.stdout);
    assert!(
        refused.stdout.contains("refused cursor: $HOME/.cursor/skills/beta: the skill `beta` was edited since the hub placed it (notes.md edited)"),
        "{}",
        refused.stdout
    );
    let mut expected = placed.clone();
    expected.insert(".cursor/skills/beta/notes.md".into(), "file 644 my notes\n".into());
    assert_eq!(machine.tree(), expected);
    // With --keep-edits the rest goes, and the edited file stays in its folder.
    let kept = ok(machine.run(&["rollback", "--keep-edits"]));
    assert!(kept.stdout.contains("kept cursor: $HOME/.cursor/skills/beta"), "{}", kept.stdout);
    let mut expected = before.clone();
    for (path, what) in [
        (".cursor/skills", "dir 755"),
        (".cursor/skills/beta", "dir 755"),
        (".cursor/skills/beta/notes.md", "file 644 my notes\n"),
    ] {
        expected.insert(path.into(), what.into());
    }
    assert_eq!(machine.tree(), expected);
}

#[test]
fn a_read_only_harness_folder_fails_that_harness_alone_with_nothing_placed() {
    let machine = Machine::new();
    let home = machine.home();
    machine.add("alpha", "First.", &[]);
    let folder = home.join(".cursor/skills");
    std::fs::create_dir_all(&folder).unwrap();
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o555)).unwrap();
    let ran = machine.run(&["--json", "hub", "connect", "--client", "cursor,gemini-cli"]);
    std::fs::set_permissions(&folder, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(ran.code, 1, "{}", ran.stdout);
    let value: Value = serde_json::from_str(&ran.stdout).unwrap();
    let failed = detail(&value, "cursor", "failed");
    assert!(
        failed.contains("$HOME/.cursor/skills is read-only: make it writable (`chmod u+w")
            && failed.contains("nothing was placed there"),
        "{failed}"
    );
    assert_eq!(std::fs::read_dir(&folder).unwrap().count(), 0);
    assert_eq!(detail(&value, "gemini-cli", "skills"), "placed 1 skill: alpha");
    assert!(home.join(".gemini/skills/alpha/SKILL.md").is_file());
}

#[test]
fn claude_code_loads_the_skill_the_hub_linked_beside_a_person_s_own() {
    let claude = repo().join("node/node_modules/.bin/claude");
    assert!(
        claude.exists(),
        "{} is missing: run `cd node && npm ci` at the repository root",
        claude.display()
    );
    let machine = Machine::new();
    let home = machine.home();
    skill(&home.join(".claude/skills/mine"), "mine", "My own.", &[]);
    machine.add("release-notes", "List each change with its PR.", &[]);
    ok(machine.run(&["hub", "connect", "--client", "claude-code"]));

    // Claude Code has no offline listing of its skills; its debug log counts those it loaded
    // before it first calls the API, which here answers nowhere.
    let log = machine.dir.path().join("claude-debug.log");
    let mut child = Command::new(&claude)
        .args(["-p", "hi", "--debug-file"])
        .arg(&log)
        .env("HOME", &home)
        .env("ANTHROPIC_API_KEY", "sk-test-offline")
        .env("ANTHROPIC_BASE_URL", "http://127.0.0.1:9")
        .env("DISABLE_AUTOUPDATER", "1")
        .env("CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC", "1")
        .current_dir(&home)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let start = Instant::now();
    let line = loop {
        let text = std::fs::read_to_string(&log).unwrap_or_default();
        if let Some(line) = text.lines().find(|l| l.contains("unique skills")) {
            break line.to_owned();
        }
        if start.elapsed() > Duration::from_secs(60) || child.try_wait().unwrap().is_some() {
            let _ = child.kill();
            panic!("claude logged no skills within a minute:\n{text}");
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let _ = child.kill();
    let _ = child.wait();
    assert!(line.contains("Loaded 2 unique skills") && line.contains("user: 2"), "{line}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.contains(&format!("user={}", home.join(".claude/skills").display())), "{text}");
}

#[test]
fn codex_shows_its_model_the_skill_the_hub_placed() {
    let codex = repo().join("node/node_modules/.bin/codex");
    assert!(codex.exists(), "{} is missing: run `cd node && npm ci` at the repository root", codex.display());
    let machine = Machine::new();
    let home = machine.home();
    machine.add("release-notes", "List each change with its PR.", &[]);
    ok(machine.run(&["hub", "connect", "--client", "codex"]));

    // `codex debug prompt-input` renders what the model would be given, offline: its skills
    // list names each skill it loaded with its description and file.
    let out = Command::new(&codex)
        .args(["debug", "prompt-input"])
        .env("HOME", &home)
        .env("CODEX_HOME", home.join(".codex"))
        .current_dir(&home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let prompt = String::from_utf8_lossy(&out.stdout);
    // Its skills list ends the instructions; show that part when the skill is not in it.
    let list = prompt.find("</skills_instructions>").map_or("no skills list at all".to_owned(), |at| {
        prompt[..at].chars().rev().take(600).collect::<Vec<_>>().into_iter().rev().collect()
    });
    assert!(
        list.contains("- release-notes: release-notes for the tests. (file: ")
            && list.contains("/release-notes/SKILL.md)"),
        "codex does not show the placed skill: {list}"
    );
}

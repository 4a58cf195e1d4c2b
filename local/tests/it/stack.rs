//! Stacks for real: two machines (temporary homes, each with its own hub), one bare git
//! repository on disk as the remote, the system `git`. Machine A pushes its sources (a
//! command with a credential slot, the memory server installed verified and isolated from the
//! registry), a skill, a profile and its policy; machine B pulls them through the same steps as
//! `hub add` and calls a tool. No secret value reaches the repository; a push over commits not
//! pulled is refused; a stack edited to pin other bytes is refused source by source. And
//! `stack install` / `uninstall` from a static registry index in a directory: a skill pinned to
//! a commit, an npm package whose integrity the index gets wrong.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use super::support::{packages, repo};

const MEMORY: &str = "@modelcontextprotocol/server-memory";
const MEMORY_VERSION: &str = "2026.8.31";
const MEMORY_INTEGRITY: &str =
    "sha512-ljj/3S4aGjxdNSQWw6gucKKGnTLdBPWxzapyY/MT2tOVyZwvxChvevXSLPwx59nKJAlVpUVW+cOlnVRXRwiqMQ==";
const SECRET: &str = "tok-7c1f0e5a9b3d";

struct Machine {
    dir: tempfile::TempDir,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Ran {
    fn ok(self) -> Ran {
        assert_eq!(self.code, 0, "{}{}", self.stdout, self.stderr);
        self
    }
}

impl Machine {
    fn new() -> Machine {
        for tool in ["git", "npm", "node", "bwrap"] {
            let found = Command::new("sh").arg("-c").arg(format!("command -v {tool}")).output().unwrap();
            assert!(found.status.success(), "`{tool}` is not on PATH: install it");
        }
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

    fn run(&self, args: &[&str]) -> Ran {
        self.run_with(args, None)
    }

    fn run_with(&self, args: &[&str], stdin: Option<&str>) -> Ran {
        let mut child = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .args(args)
            .env("HOME", self.home())
            .env("CAPABILITIES_HOME", self.hub())
            .env("CAPABILITIES_KEYCHAIN", "file")
            .env("npm_config_cache", self.dir.path().join("npm-cache"))
            .env("NO_COLOR", "1")
            .env_remove("CAPABILITIES_REGISTRY")
            .env_remove("FIXTURE_TOKEN")
            .current_dir(self.dir.path())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        if let Some(text) = stdin {
            use std::io::Write;
            child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
        }
        drop(child.stdin.take());
        let out = child.wait_with_output().unwrap();
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    fn exec(&self, code: &str) -> Value {
        let ran = self.run(&["--json", "hub", "exec", code]).ok();
        let envelope: Value = serde_json::from_str(&ran.stdout).unwrap();
        envelope["result"].clone()
    }

    fn file(&self, relative: &str) -> Value {
        serde_json::from_str(&std::fs::read_to_string(self.hub().join(relative)).unwrap()).unwrap()
    }

    /// Every byte under the hub, for looking for a value that must not be there.
    fn all_bytes(dir: &Path) -> Vec<u8> {
        let mut out = Vec::new();
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() && !path.is_symlink() {
                out.extend(Machine::all_bytes(&path));
            } else if path.is_file() {
                out.extend(std::fs::read(&path).unwrap());
            }
        }
        out
    }
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"])
        .args(args)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn bare_remote(dir: &Path) -> PathBuf {
    let remote = dir.join("stack.git");
    std::fs::create_dir_all(&remote).unwrap();
    git(&remote, &["init", "--quiet", "--bare"]);
    remote
}

fn write_skill(dir: &Path, name: &str, body: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("SKILL.md"), format!("---\nname: {name}\ndescription: {body}\n---\n\n{body}\n"))
        .unwrap();
}

/// Machine A's hub: the fixture server with credential slot `FIXTURE_TOKEN` (filled), the memory
/// server installed from the registry, a skill, a profile.
fn machine_a(work: &Path) -> Machine {
    let a = Machine::new();
    let sdk = packages().join("sdk");
    let script = repo().join("local/tests/fixtures/fixture-server.mjs");
    let sdk_env = format!("MCP_SDK_DIR={}", sdk.display());
    a.run(&[
        "hub",
        "add",
        "--yes",
        "--namespace",
        "fixture",
        "--env",
        &sdk_env,
        "--env",
        "FIXTURE_TOKEN",
        "--",
        "node",
        script.to_str().unwrap(),
    ])
    .ok();
    a.run_with(&["hub", "auth", "fixture", "--stdin"], Some(&format!("{SECRET}\n"))).ok();
    let memory_file = format!("MEMORY_FILE_PATH={}/state/memory/memory.jsonl", a.hub().display());
    a.run(&["hub", "add", &format!("npm:{MEMORY}@{MEMORY_VERSION}"), "--env", &memory_file, "--yes"]).ok();
    write_skill(
        &work.join("release-notes"),
        "release-notes",
        "Write release notes from merged pull requests.",
    );
    a.run(&["hub", "skills", "add", work.join("release-notes").to_str().unwrap()]).ok();
    a.run(&["hub", "profiles", "create", "reader", "--serves", "memory"]).ok();
    a
}

#[test]
fn a_stack_pushed_from_one_home_is_pulled_into_another_without_its_secrets() {
    let work = tempfile::tempdir().unwrap();
    let remote = bare_remote(work.path());
    let a = machine_a(work.path());

    let pulled_early = a.run(&["stack", "pull"]);
    assert_eq!(pulled_early.code, 1);
    assert!(pulled_early.stderr.contains("capabilities stack init"), "{}", pulled_early.stderr);

    let linked = a.run(&["stack", "init", remote.to_str().unwrap()]).ok();
    assert!(linked.stderr.contains("holds no stack yet"), "{}", linked.stderr);
    let pushed = a.run(&["--json", "stack", "push"]).ok();
    let report: Value = serde_json::from_str(&pushed.stdout).unwrap();
    assert_eq!(report["sources"], serde_json::json!(["fixture", "memory"]), "{report}");
    assert_eq!(report["skills"], serde_json::json!(["release-notes"]));
    assert_eq!(report["changed"], true);

    // What the repository holds: names and pins, paths made portable, never the value.
    let stack: Value =
        serde_json::from_str(&git(&remote, &["show", "main:capabilities-stack.json"])).unwrap();
    let memory = &stack["sources"]["memory"];
    assert_eq!(memory["package"]["name"], MEMORY);
    assert_eq!(memory["package"]["version"], MEMORY_VERSION);
    assert_eq!(memory["package"]["integrity"], MEMORY_INTEGRITY);
    assert_eq!(memory["isolated"], true);
    assert_eq!(memory["env"]["MEMORY_FILE_PATH"], "${CAPABILITIES_HOME}/state/memory/memory.jsonl");
    assert_eq!(stack["sources"]["fixture"]["connections"][0]["slots"], serde_json::json!(["FIXTURE_TOKEN"]));
    assert!(stack["policy"]["reviewed"]["memory.readGraph"].is_string(), "{stack}");
    assert_eq!(stack["profiles"]["reader"]["serves"], serde_json::json!(["memory"]));
    let tree = git(&remote, &["ls-tree", "-r", "--name-only", "main"]);
    assert_eq!(tree, "capabilities-stack.json\nskills/release-notes/SKILL.md");
    let everything = git(&remote, &["log", "-p", "--all"]);
    assert!(!everything.contains(SECRET), "a secret reached the repository");
    assert!(!everything.contains(a.hub().to_str().unwrap()), "a path of machine A reached the repository");

    // Pushing again with nothing changed makes no commit.
    let again = a.run(&["stack", "push"]).ok();
    assert!(again.stdout.contains("holds this hub's configuration already"), "{}", again.stdout);
    assert_eq!(git(&remote, &["rev-list", "--count", "main"]), "1");

    // Machine B: link, look, then apply.
    let b = Machine::new();
    let linked = b.run(&["stack", "init", remote.to_str().unwrap()]).ok();
    assert!(linked.stderr.contains("stack pull"), "{}", linked.stderr);
    let dry = b.run(&["stack", "pull", "--dry-run"]).ok();
    assert!(
        dry.stderr
            .contains("source `memory`: add — npm @modelcontextprotocol/server-memory@2026.8.31, isolated"),
        "{}",
        dry.stderr
    );
    assert!(dry.stderr.contains("source `fixture`: add"), "{}", dry.stderr);
    assert!(dry.stderr.contains("skill `release-notes`: add"), "{}", dry.stderr);
    assert!(!b.hub().join("sources/memory.json").exists(), "a dry run applied something");
    let refused = b.run(&["stack", "pull"]);
    assert_eq!(refused.code, 2, "{}", refused.stderr);
    assert!(refused.stderr.contains("pass `--yes`"), "{}", refused.stderr);

    let pulled = b.run(&["stack", "pull", "--yes"]).ok();
    assert!(pulled.stdout.contains("applied the stack at"), "{}", pulled.stdout);
    // The secret was not carried: B is told how to fill it.
    assert!(
        pulled.stderr.contains("capabilities hub auth fixture --connection default"),
        "{}",
        pulled.stderr
    );
    assert!(!Machine::all_bytes(&b.hub()).windows(SECRET.len()).any(|w| w == SECRET.as_bytes()));

    // The package was installed on B, checked against the pin, isolated in B's own store.
    let lock = b.file("packages.lock.json");
    assert_eq!(lock["packages"]["memory"]["integrity"], MEMORY_INTEGRITY);
    let source = b.file("sources/memory.json");
    let transport = &source["spec"]["transport"];
    assert_eq!(transport["isolation"]["state"], b.hub().join("state/memory").to_str().unwrap());
    assert_eq!(
        transport["env"]["MEMORY_FILE_PATH"],
        format!("{}/state/memory/memory.jsonl", b.hub().display())
    );
    // Contracts reviewed on A decide B's tools: a read runs without a review on B.
    assert_eq!(b.exec("return (await memory.readGraph({})).entities.length"), 0);
    let skill = b.run(&["--json", "hub", "skills", "list"]).ok();
    assert!(skill.stdout.contains("\"release-notes\""), "{}", skill.stdout);
    let profile = b.run(&["--json", "hub", "profiles", "show", "reader"]).ok();
    assert!(profile.stdout.contains("memory"), "{}", profile.stdout);

    // A second pull has nothing to do.
    let noop = b.run(&["stack", "pull"]).ok();
    assert!(noop.stderr.contains("source `memory`: same"), "{}", noop.stderr);

    // B changes something and pushes; A's push is refused until A pulls.
    b.run(&["hub", "skills", "remove", "release-notes"]).ok();
    b.run(&["stack", "push", "-m", "drop the release notes skill"]).ok();
    assert_eq!(git(&remote, &["log", "-1", "--format=%s", "main"]), "drop the release notes skill");
    let stale = a.run(&["stack", "push"]);
    assert_eq!(stale.code, 1, "{}", stale.stderr);
    assert!(stale.stderr.contains("run `capabilities stack pull` first"), "{}", stale.stderr);
    let caught_up = a.run(&["stack", "pull", "--yes"]).ok();
    assert!(caught_up.stderr.contains("source `fixture`: same"), "{}", caught_up.stderr);
    a.run(&["stack", "push"]).ok();

    // A stored value written into the configuration in plain text is never pushed.
    let sdk_env = format!("MCP_SDK_DIR={}", packages().join("sdk").display());
    let leak_env = format!("LEAKED={SECRET}");
    let script = repo().join("local/tests/fixtures/fixture-server.mjs");
    a.run(&[
        "hub",
        "add",
        "--yes",
        "--namespace",
        "leak",
        "--env",
        &sdk_env,
        "--env",
        &leak_env,
        "--",
        "node",
        script.to_str().unwrap(),
    ])
    .ok();
    let leaked = a.run(&["stack", "push"]);
    assert_eq!(leaked.code, 1, "{}{}", leaked.stdout, leaked.stderr);
    assert!(
        leaked.stderr.contains("the stored value of fixture/default/FIXTURE_TOKEN appears"),
        "{}",
        leaked.stderr
    );
    assert!(!git(&remote, &["log", "-p", "--all"]).contains(SECRET));
}

#[test]
fn a_stack_edited_to_pin_other_bytes_is_refused_and_the_rest_applies() {
    let work = tempfile::tempdir().unwrap();
    let remote = bare_remote(work.path());
    // The edited stack, committed straight to the repository: the memory server pinned with
    // another integrity, and a skill whose files do not match its digest.
    let edit = work.path().join("edit");
    git(work.path(), &["clone", "--quiet", remote.to_str().unwrap(), edit.to_str().unwrap()]);
    let stack = serde_json::json!({
        "version": 1,
        "sources": {
            "memory": {
                "package": {"registry": "npm", "name": MEMORY, "version": MEMORY_VERSION,
                            "integrity": "sha512-AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=="},
                "isolated": true
            }
        },
        "skills": {"notes": "sha256:0000000000000000000000000000000000000000000000000000000000000000"},
        "profiles": {"reader": {"name": "reader", "serves": ["memory"]}}
    });
    std::fs::write(edit.join("capabilities-stack.json"), serde_json::to_string_pretty(&stack).unwrap())
        .unwrap();
    write_skill(&edit.join("skills/notes"), "notes", "Take notes.");
    git(&edit, &["add", "--all"]);
    git(&edit, &["commit", "--quiet", "-m", "edited by hand"]);
    git(&edit, &["push", "--quiet", "origin", "HEAD:refs/heads/main"]);

    let b = Machine::new();
    b.run(&["stack", "init", remote.to_str().unwrap()]).ok();
    let pulled = b.run(&["stack", "pull", "--yes"]);
    assert_eq!(pulled.code, 1, "{}{}", pulled.stdout, pulled.stderr);
    assert!(pulled.stderr.contains("not the sha512-AAAA"), "{}", pulled.stderr);
    assert!(pulled.stderr.contains("differ from the digest the stack records"), "{}", pulled.stderr);
    assert!(pulled.stderr.contains("saved profile `reader`"), "{}", pulled.stderr);
    // Nothing of the refused parts is left.
    assert!(!b.hub().join("sources/memory.json").exists());
    assert!(!b.hub().join("skills/notes").exists());
    let lock: Value = serde_json::from_str(
        &std::fs::read_to_string(b.hub().join("packages.lock.json")).unwrap_or("{}".into()),
    )
    .unwrap();
    assert!(lock["packages"].get("memory").is_none(), "{lock}");
    // And because not everything applied, a push would drop them: it is refused.
    let push = b.run(&["stack", "push"]);
    assert_eq!(push.code, 1);
    assert!(push.stderr.contains("stack pull` first"), "{}", push.stderr);

    // A stack file that is not one.
    std::fs::write(edit.join("capabilities-stack.json"), "{\"version\": 9}").unwrap();
    git(&edit, &["commit", "--quiet", "-am", "from the future"]);
    git(&edit, &["push", "--quiet", "origin", "HEAD:refs/heads/main"]);
    let future = b.run(&["stack", "pull", "--yes"]);
    assert_eq!(future.code, 1);
    assert!(future.stderr.contains("has version 9"), "{}", future.stderr);
}

#[test]
fn install_and_uninstall_one_capability_from_a_registry_index() {
    let work = tempfile::tempdir().unwrap();
    // A skill in a git repository, pinned by commit.
    let skills = work.path().join("skills-repo");
    std::fs::create_dir_all(&skills).unwrap();
    git(&skills, &["init", "--quiet"]);
    write_skill(&skills.join("triage"), "triage", "Triage new issues by label.");
    git(&skills, &["add", "--all"]);
    git(&skills, &["commit", "--quiet", "-m", "triage"]);
    let commit = git(&skills, &["rev-parse", "HEAD"]);
    let registry = work.path().join("registry");
    std::fs::create_dir_all(&registry).unwrap();
    let index = serde_json::json!({
        "version": 1,
        "capabilities": [
            {"slug": "triage", "description": "Issue triage", "git": format!("file://{}", skills.display()),
             "commit": commit, "path": "triage"},
            {"slug": "memory-wrong", "npm": MEMORY, "version": MEMORY_VERSION,
             "integrity": "sha512-BBBB"},
            {"slug": "floating", "npm": MEMORY, "version": "latest"}
        ]
    });
    std::fs::write(registry.join("index.json"), index.to_string()).unwrap();
    let registry = registry.to_str().unwrap();

    let m = Machine::new();
    let missing = m.run(&["stack", "install", "triage"]);
    assert_eq!(missing.code, 1);
    assert!(missing.stderr.contains("--registry"), "{}", missing.stderr);
    let unknown = m.run(&["stack", "install", "triag", "--registry", registry]);
    assert!(unknown.stderr.contains("has no `triag`; it has triage"), "{}", unknown.stderr);

    let installed = m.run(&["--registry", registry, "stack", "install", "triage", "--yes"]).ok();
    assert!(installed.stdout.contains("added skill `triage`"), "{}", installed.stdout);
    let lock = m.file("stack.lock.json");
    assert_eq!(lock["triage"]["pin"], commit.as_str());
    assert_eq!(lock["triage"]["kind"], "skill");
    let again = m.run(&["stack", "install", "triage", "--yes", "--registry", registry]);
    assert_eq!(again.code, 2);
    assert!(again.stderr.contains("installed already"), "{}", again.stderr);

    let wrong = m.run(&["stack", "install", "memory-wrong", "--yes", "--registry", registry]);
    assert_eq!(wrong.code, 1, "{}", wrong.stderr);
    assert!(wrong.stderr.contains("not the sha512-BBBB the index pins: refused"), "{}", wrong.stderr);
    assert!(!m.hub().join("sources/memory-wrong.json").exists());
    let floating = m.run(&["stack", "install", "floating", "--yes", "--registry", registry]);
    assert!(floating.stderr.contains("not an exact version"), "{}", floating.stderr);

    let by_name = m.run(&["stack", "uninstall", "triage", "--yes"]).ok();
    assert!(by_name.stdout.contains("removed skill `triage`"), "{}", by_name.stdout);
    assert!(!m.hub().join("skills/triage").exists());
    assert_eq!(m.file("stack.lock.json"), serde_json::json!({}));
    let gone = m.run(&["stack", "uninstall", "triage", "--yes"]);
    assert!(gone.stderr.contains("was not installed with `capabilities stack install`"), "{}", gone.stderr);
}

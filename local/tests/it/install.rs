//! The npm packages in `npm/`, packed with the real npm around the binary these tests built
//! (stripped, as `cargo xtask dist` ships it) and installed offline into a fresh prefix and
//! HOME: the installed `capabilities` runs the demo, `npx` finds it, `hub connect` made by it
//! writes an entry Claude Code's own `claude mcp list` shows connected, and that entry keeps
//! working through a reinstall. Then the binary outside npm: the entry runs the hub's link
//! `<hub>/bin/capabilities`, doctor says what to do once the binary behind it is gone, and the
//! binary run from its new place makes the entry work again. Needs Node.js, npm, `strip` and
//! `cd node && npm ci`; fails (never skips) without.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

use crate::support::repo;

struct Machine {
    dir: tempfile::TempDir,
}

struct Ran {
    code: i32,
    out: String,
}

fn ok(ran: Ran) -> String {
    assert_eq!(ran.code, 0, "{}", ran.out);
    ran.out
}

impl Machine {
    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn home(&self) -> PathBuf {
        self.path("home")
    }

    fn prefix(&self) -> PathBuf {
        self.path("prefix")
    }

    /// A command in this machine: its own HOME (the hub at its default place inside it), npm's
    /// cache and global prefix inside it, and that prefix's bin first on PATH.
    fn command(&self, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let home = self.home();
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut dirs = vec![self.prefix().join("bin")];
        dirs.extend(std::env::split_paths(&path));
        let mut command = Command::new("timeout");
        command
            .arg("240")
            .arg(program)
            .env("PATH", std::env::join_paths(dirs).unwrap())
            .env("HOME", &home)
            .env("XDG_CONFIG_HOME", home.join(".config"))
            .env("XDG_DATA_HOME", home.join(".local/share"))
            .env("XDG_STATE_HOME", home.join(".local/state"))
            .env("XDG_CACHE_HOME", home.join(".cache"))
            .env("npm_config_cache", self.path("npm-cache"))
            .env("npm_config_prefix", self.prefix())
            .env("npm_config_update_notifier", "false")
            .env("npm_config_audit", "false")
            .env("npm_config_fund", "false")
            .env("CAPABILITIES_KEYCHAIN", "file")
            .env("NO_COLOR", "1")
            .env_remove("CAPABILITIES_HOME")
            .env_remove("CAPABILITIES_LAUNCHER")
            .current_dir(&home)
            .stdin(Stdio::null());
        command
    }

    fn run(&self, program: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Ran {
        let out = self.command(program).args(args).output().unwrap();
        let text =
            format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        Ran {
            code: out.status.code().unwrap_or(-1),
            out: text.replace(self.dir.path().to_str().unwrap(), "$TMP"),
        }
    }

    fn claude_lists_the_hub_connected(&self) {
        let claude = repo().join("node/node_modules/.bin/claude");
        assert!(
            claude.exists(),
            "{} is missing: run `cd node && npm ci` at the repository root",
            claude.display()
        );
        let listed = ok(self.run(&claude, &["mcp", "list"]));
        let line =
            listed.lines().find(|l| l.starts_with("capabilities:")).unwrap_or_else(|| panic!("{listed}"));
        assert!(line.contains("Connected"), "{listed}");
    }

    fn entry(&self) -> Value {
        let text = std::fs::read_to_string(self.home().join(".claude.json")).unwrap();
        serde_json::from_str::<Value>(&text).unwrap()["mcpServers"]["capabilities"].clone()
    }
}

/// `npm/<dir>` copied to `to`, for packing without touching the repository.
fn copy_package(dir: &str, to: &Path) {
    let from = repo().join("npm").join(dir);
    for entry in walk(&from) {
        let target = to.join(entry.strip_prefix(&from).unwrap());
        std::fs::create_dir_all(target.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &target).unwrap();
    }
}

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() { files.extend(walk(&path)) } else { files.push(path) }
    }
    files
}

fn stripped_binary(to: &Path) {
    std::fs::create_dir_all(to.parent().unwrap()).unwrap();
    let out = Command::new("strip").arg("-o").arg(to).arg(env!("CARGO_BIN_EXE_capabilities")).output();
    let out = out.unwrap_or_else(|e| panic!("`strip` did not start ({e}): install binutils"));
    assert!(out.status.success(), "strip: {}", String::from_utf8_lossy(&out.stderr));
}

#[test]
fn the_npm_packages_install_offline_and_harness_entries_survive_upgrades() {
    let npm = Command::new("npm").arg("--version").output();
    assert!(npm.is_ok_and(|o| o.status.success()), "`npm` is not on PATH: install Node.js and npm");
    let machine = Machine { dir: tempfile::tempdir().unwrap() };
    std::fs::create_dir_all(machine.home()).unwrap();

    // The launcher and this platform's package around the binary the tests built.
    let stage = machine.path("stage");
    copy_package("cli", &stage.join("cli"));
    copy_package("platforms/linux-x64", &stage.join("linux-x64"));
    stripped_binary(&stage.join("linux-x64/bin/capabilities"));
    let dist = machine.path("dist");
    std::fs::create_dir_all(&dist).unwrap();
    let packed = ok(machine.run(
        "npm",
        &[
            "pack",
            "--pack-destination",
            dist.to_str().unwrap(),
            stage.join("cli").to_str().unwrap(),
            stage.join("linux-x64").to_str().unwrap(),
        ],
    ));
    let launcher_tgz = dist.join("capabilities-hub-cli-0.1.0.tgz");
    let platform_tgz = dist.join("capabilities-hub-cli-linux-x64-0.1.0.tgz");
    assert!(launcher_tgz.is_file() && platform_tgz.is_file(), "{packed}");
    let (launcher_tgz, platform_tgz) = (launcher_tgz.to_str().unwrap(), platform_tgz.to_str().unwrap());

    // Installed offline: no registry is asked, no install script runs.
    let install = ["install", "--global", "--offline", "--ignore-scripts", launcher_tgz, platform_tgz];
    ok(machine.run("npm", &install));
    let bin = machine.prefix().join("bin/capabilities");
    let version = ok(machine.run(&bin, &["--version"]));
    assert!(version.starts_with(&format!("capabilities {} (", env!("CARGO_PKG_VERSION"))), "{version}");
    let demo = ok(machine.run(&bin, &["hub", "demo", "--yes"]));
    assert!(demo.contains("completed") && demo.contains("\"posted\": ["), "{demo}");
    assert_eq!(ok(machine.run("npx", &["--offline", "capabilities", "--version"])), version);
    // The launcher passes the binary's exit code on.
    let refused = machine.run(&bin, &["hub", "no-such-command"]);
    assert_eq!(refused.code, 2, "{}", refused.out);

    // `hub connect` from the npm install writes the launcher's path, which npm keeps.
    ok(machine.run(&bin, &["hub", "connect", "--client", "claude-code"]));
    let entry = machine.entry();
    assert_eq!(entry["command"], bin.to_str().unwrap(), "{entry}");
    assert_eq!(entry["args"], serde_json::json!(["hub", "serve", "--stdio", "--profile", "default"]));
    machine.claude_lists_the_hub_connected();
    let doctor = machine.run(&bin, &["hub", "doctor"]).out;
    assert!(doctor.contains("ok   claude-code: connected\n"), "{doctor}");

    // An upgrade: npm replaces both packages; the entry is not written again and still works.
    let platform = machine.prefix().join("lib/node_modules/@capabilities-hub/cli-linux-x64");
    std::fs::remove_dir_all(&platform).unwrap();
    ok(machine.run("npm", &install));
    assert!(platform.join("bin/capabilities").is_file());
    assert_eq!(machine.entry(), entry);
    machine.claude_lists_the_hub_connected();

    // Run once through npx's cache, which npx may clear: connect writes the hub's own link.
    let npx = ["--offline", "--yes", "--package", launcher_tgz, "--package", platform_tgz, "--"];
    let connect = ["capabilities", "hub", "connect", "--client", "claude-code"];
    ok(machine.run("npx", &[&npx[..], &connect[..]].concat()));
    let link = machine.home().join(".capabilities/hub/bin/capabilities");
    assert_eq!(machine.entry()["command"], link.to_str().unwrap());

    // Outside npm: a binary at a plain path, moved by an upgrade.
    let old = machine.path("old/capabilities");
    stripped_binary(&old);
    ok(machine.run(&old, &["hub", "connect", "--client", "claude-code"]));
    assert_eq!(std::fs::read_link(&link).unwrap(), old.canonicalize().unwrap());
    machine.claude_lists_the_hub_connected();
    let new = machine.path("new/capabilities");
    stripped_binary(&new);
    std::fs::remove_file(&old).unwrap();
    let doctor = machine.run(&new, &["hub", "doctor"]);
    assert_ne!(doctor.code, 0, "{}", doctor.out);
    assert!(
        doctor.out.contains(
            "FAIL claude-code: its `capabilities` entry runs $TMP/home/.capabilities/hub/bin/capabilities, \
             a link to $TMP/old/capabilities, which is gone\n       \
             next: run `capabilities hub connect --client claude-code` with the binary you use now; it \
             points the entry (and $TMP/home/.capabilities/hub/bin/capabilities) at that binary\n"
        ),
        "{}",
        doctor.out
    );
    let again = ok(machine.run(&new, &["hub", "connect", "--client", "claude-code"]));
    assert!(again.contains("unchanged claude-code:"), "the entry itself stays as it was:\n{again}");
    assert_eq!(std::fs::read_link(&link).unwrap(), new.canonicalize().unwrap());
    machine.claude_lists_the_hub_connected();
    let doctor = machine.run(&new, &["hub", "doctor"]).out;
    assert!(doctor.contains("ok   claude-code: connected\n"), "{doctor}");
}

//! What the commands need on the machine, checked before they start, and installed where xtask
//! can: the Debian packages when it runs as root with apt-get, the wasm32 target with rustup,
//! cargo-nextest with cargo, the npm packages with `npm ci`.
//!
//! `cargo xtask test` checks everything at once, so a fresh machine learns in one line what it
//! lacks. QuickJS is C: building the core for wasm32 needs clang and lld (wasm-ld). The
//! keychain tests run a real Secret Service: gnome-keyring in a private D-Bus session, read back
//! with secret-tool. The approval page tests drive Debian's Chromium headless. The tests run
//! real MCP servers and clients from npm; Node.js itself is not installed here, since Debian's
//! is older than the one the tests are run with.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::{WASM_TARGET, cargo, step};

/// A program a command runs: its name on PATH (or an absolute path), and the Debian package
/// that brings it (`None`: not installed by xtask).
struct Program {
    name: &'static str,
    package: Option<&'static str>,
}

const fn program(name: &'static str, package: &'static str) -> Program {
    Program { name, package: Some(package) }
}

/// QuickJS's C code for wasm32.
const C_TOOLCHAIN: [Program; 2] = [program("clang", "clang"), program("wasm-ld", "lld")];

/// The rest of what the test suite runs.
const TEST_PROGRAMS: [Program; 7] = [
    program("dbus-run-session", "dbus-daemon"),
    program("gnome-keyring-daemon", "gnome-keyring"),
    program("secret-tool", "libsecret-tools"),
    program("/usr/bin/chromium", "chromium"),
    Program { name: "node", package: None },
    Program { name: "npm", package: None },
    // Isolated stdio sources (`local/tests/it/packages.rs`).
    program("bwrap", "bubblewrap"),
];

/// clang and wasm-ld, installed as Debian packages when missing and xtask runs as root.
pub(crate) fn ensure_c_toolchain() -> Result<()> {
    ensure_programs(&C_TOOLCHAIN.iter().collect::<Vec<_>>())
}

/// `(program or file, Debian package)` pairs, installed as [`ensure_test_tools`] installs its
/// own: `cargo xtask dist` asks for llvm-strip, qemu-user and arm64's C library this way.
pub(crate) fn ensure_debian(wanted: &[(&'static str, &'static str)]) -> Result<()> {
    let programs: Vec<Program> = wanted.iter().map(|&(name, package)| program(name, package)).collect();
    ensure_programs(&programs.iter().collect::<Vec<_>>())
}

/// Everything `cargo xtask test` needs, checked up front: the programs (installing missing
/// Debian packages as root), the wasm32 target and cargo-nextest.
pub(crate) fn ensure_test_tools() -> Result<()> {
    let programs: Vec<&Program> = C_TOOLCHAIN.iter().chain(&TEST_PROGRAMS).collect();
    let target = has_wasm_target()?;
    let nextest = has_nextest();
    let missing: Vec<&str> = programs
        .iter()
        .filter(|p| !found(p.name))
        .map(|p| p.name)
        .chain((!target).then_some("the wasm32 target"))
        .chain((!nextest).then_some("cargo-nextest"))
        .collect();
    if missing.is_empty() {
        eprintln!("xtask: everything the tests need is installed");
        return Ok(());
    }
    eprintln!("xtask: missing {}", missing.join(", "));
    ensure_programs(&programs)?;
    ensure_wasm_target()?;
    ensure_nextest()
}

/// Installs the Debian packages of the missing `programs` when running as root with apt-get;
/// else fails with one line naming every missing program and the command that installs them.
fn ensure_programs(programs: &[&Program]) -> Result<()> {
    let missing: Vec<&Program> = programs.iter().copied().filter(|p| !found(p.name)).collect();
    if missing.is_empty() {
        return Ok(());
    }
    let can_install = missing.iter().any(|p| p.package.is_some()) && is_root() && found("apt-get");
    if can_install {
        let packages = packages(&missing);
        let mut update = Command::new("apt-get");
        update.args(["update", "-q"]).env("DEBIAN_FRONTEND", "noninteractive");
        step("apt-get update", update)?;
        let mut install = Command::new("apt-get");
        install
            .args(["install", "-y", "-q", "--no-install-recommends"])
            .args(&packages)
            .env("DEBIAN_FRONTEND", "noninteractive");
        step(&format!("apt-get install {}", packages.join(" ")), install)?;
    }
    let missing: Vec<&Program> = missing.into_iter().filter(|p| !found(p.name)).collect();
    if missing.is_empty() { Ok(()) } else { bail!("{}", missing_line(&missing, can_install)) }
}

/// The one line that says what is missing and what to run.
fn missing_line(missing: &[&Program], tried_apt: bool) -> String {
    let names: Vec<&str> = missing.iter().map(|p| p.name).collect();
    let packages = packages(missing);
    let mut todo = Vec::new();
    if !packages.is_empty() && tried_apt {
        todo.push(format!(
            "apt-get installed {}, yet they are still not on PATH: check its output above",
            packages.join(" ")
        ));
    } else if !packages.is_empty() {
        let sudo = if is_root() { "" } else { "sudo " };
        todo.push(format!(
            "run `{sudo}apt-get update && {sudo}env DEBIAN_FRONTEND=noninteractive apt-get install -y \
             --no-install-recommends {}`",
            packages.join(" ")
        ));
    }
    if missing.iter().any(|p| p.package.is_none()) {
        todo.push("install Node.js and npm".to_owned());
    }
    format!("missing {}: {}", names.join(", "), todo.join("; "))
}

/// The Debian packages that bring `programs`, each once.
fn packages(programs: &[&Program]) -> Vec<&'static str> {
    let mut packages: Vec<&str> = programs.iter().filter_map(|p| p.package).collect();
    packages.dedup();
    packages
}

/// Whether `name` is an executable file: as given when it is a path, else on PATH.
fn found(name: &str) -> bool {
    if name.contains('/') {
        return executable(Path::new(name));
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).any(|dir| executable(&dir.join(name)))
}

fn executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

fn is_root() -> bool {
    let id = Command::new("id").arg("-u").output();
    id.is_ok_and(|out| out.status.success() && out.stdout.trim_ascii() == b"0")
}

fn has_wasm_target() -> Result<bool> {
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output()
        .context("rustup is needed to add the wasm32 target")?;
    Ok(String::from_utf8_lossy(&installed.stdout).lines().any(|l| l.trim() == WASM_TARGET))
}

pub(crate) fn ensure_wasm_target() -> Result<()> {
    if has_wasm_target()? {
        return Ok(());
    }
    let mut add = Command::new("rustup");
    add.args(["target", "add", WASM_TARGET]);
    step("add wasm32 target", add)
}

fn has_nextest() -> bool {
    Command::new("cargo").args(["nextest", "--version"]).output().is_ok_and(|o| o.status.success())
}

pub(crate) fn ensure_nextest() -> Result<()> {
    if has_nextest() {
        return Ok(());
    }
    eprintln!("xtask: cargo-nextest is missing; installing it from crates.io");
    step("install cargo-nextest", cargo(&["install", "--locked", "cargo-nextest"]))
}

/// Tests run real MCP servers and clients from npm, pinned in `node/package-lock.json`.
pub(crate) fn ensure_node_packages() -> Result<()> {
    let lock = Path::new("node/package-lock.json");
    let installed = Path::new("node/node_modules/.package-lock.json");
    let fresh =
        match (lock.metadata().and_then(|m| m.modified()), installed.metadata().and_then(|m| m.modified())) {
            (Ok(lock), Ok(installed)) => installed >= lock,
            _ => false,
        };
    if fresh {
        return Ok(());
    }
    let mut npm = Command::new("npm");
    npm.args(["ci", "--no-audit", "--no-fund"]).current_dir("node");
    step("npm ci (test servers and clients)", npm)
        .context("the tests need Node.js and npm: install them, then run `cd node && npm ci`")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_line_names_every_missing_program_and_the_command() {
        let missing = [&C_TOOLCHAIN[1], &TEST_PROGRAMS[3], &TEST_PROGRAMS[4]];
        let line = missing_line(&missing, false);
        assert!(!line.contains('\n'), "{line}");
        let sudo = if is_root() { "" } else { "sudo " };
        assert_eq!(
            line,
            format!(
                "missing wasm-ld, /usr/bin/chromium, node: run `{sudo}apt-get update && {sudo}env \
                 DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends lld \
                 chromium`; install Node.js and npm"
            )
        );
    }
}

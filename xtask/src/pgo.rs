//! The x86-64 release binary optimised with a profile of itself at work (`cargo xtask dist
//! --pgo`). LLVM lays out and inlines the code by how often each branch ran: a hub answers each
//! call after seconds idle, on cold caches, where that layout is worth about a tenth of a served
//! `execute` (ab.mjs, 300 rounds, both stores).
//!
//! 1. An instrumented build, in a target directory of its own (`<target>/pgo/instrumented`):
//!    its flags differ from the release build's, and sharing one directory would rebuild both
//!    every time.
//! 2. That binary serves `local/benches/serve.mjs`: start, `initialize`, `tools/list`,
//!    `execute` over stdio and HTTP with a real upstream, direct mode, large listings.
//! 3. `llvm-profdata merge` (rustup's `llvm-tools`, added when missing), then the release build
//!    for `--target x86_64-unknown-linux-gnu` with `-Cprofile-use`.
//!
//! The profile counts what one run of the bench did, and the bench is timed, so two trainings
//! differ a little and so may their binaries. The profile goes into `dist/` with the archives;
//! `--profile FILE` builds with that file instead of training.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::setup::ensure_node_packages;
use crate::{cargo, step, target_dir};

const TRIPLE: &str = "x86_64-unknown-linux-gnu";

/// Rounds of the bench the instrumented binary serves: enough for every path to count.
const TRAINING_ROUNDS: &str = "40";

/// Builds the optimised binary; `profile` is a merged profile to use instead of training.
/// Returns the binary and the profile it was built with.
pub(crate) fn build(name: Option<&str>, profile: Option<&Path>) -> Result<(PathBuf, PathBuf)> {
    let work = target_dir().join("pgo");
    let merged = match profile {
        Some(profile) => {
            profile.metadata().with_context(|| format!("reading the profile {}", profile.display()))?;
            profile.to_owned()
        }
        None => train(&work, name)?,
    };
    let merged = std::fs::canonicalize(&merged)?;
    let mut release = cargo(&["build", "--release", "--locked", "-p", "capabilities", "--target", TRIPLE]);
    release.env("RUSTFLAGS", rustflags(&format!("-Cprofile-use={}", merged.display())));
    if let Some(name) = name {
        release.env("CAPABILITIES_BUILD", name);
    }
    step("release build with the profile (x86_64)", release)?;
    Ok((target_dir().join(TRIPLE).join("release/capabilities"), merged))
}

/// The instrumented build, served the bench; the merged profile's path.
fn train(work: &Path, name: Option<&str>) -> Result<PathBuf> {
    ensure_node_packages()?;
    let raw = work.join("raw");
    if raw.exists() {
        std::fs::remove_dir_all(&raw).with_context(|| format!("emptying {}", raw.display()))?;
    }
    std::fs::create_dir_all(&raw)?;
    let instrumented_dir = work.join("instrumented");
    let mut instrumented = cargo(&["build", "--release", "--locked", "-p", "capabilities"]);
    instrumented.env("CARGO_TARGET_DIR", &instrumented_dir);
    instrumented.env("RUSTFLAGS", rustflags(&format!("-Cprofile-generate={}", raw.display())));
    if let Some(name) = name {
        instrumented.env("CAPABILITIES_BUILD", name);
    }
    step("instrumented build (x86_64)", instrumented)?;
    let mut bench = Command::new("node");
    bench
        .arg("local/benches/serve.mjs")
        .arg(instrumented_dir.join("release/capabilities"))
        .arg(TRAINING_ROUNDS);
    bench.stdout(std::process::Stdio::null());
    step("training: serve.mjs on the instrumented build", bench)?;
    let raws: Vec<PathBuf> = std::fs::read_dir(&raw)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "profraw"))
        .collect();
    if raws.is_empty() {
        bail!("the instrumented build wrote no profile into {}", raw.display());
    }
    let merged = work.join("capabilities.profdata");
    let mut merge = Command::new(llvm_profdata()?);
    merge.arg("merge").arg("-o").arg(&merged).args(&raws);
    step("llvm-profdata merge", merge)?;
    Ok(merged)
}

/// `flag` after whatever `RUSTFLAGS` already holds.
fn rustflags(flag: &str) -> String {
    match std::env::var("RUSTFLAGS") {
        Ok(flags) if !flags.trim().is_empty() => format!("{flags} {flag}"),
        _ => flag.to_owned(),
    }
}

/// rustup's `llvm-profdata`, the one that reads this rustc's profiles; the component is added
/// when missing.
fn llvm_profdata() -> Result<PathBuf> {
    let sysroot = Command::new("rustc").args(["--print", "sysroot"]).output().context("running rustc")?;
    let sysroot = PathBuf::from(String::from_utf8_lossy(&sysroot.stdout).trim());
    let tool = sysroot.join("lib/rustlib").join(TRIPLE).join("bin/llvm-profdata");
    if !tool.exists() {
        let mut add = Command::new("rustup");
        add.args(["component", "add", "llvm-tools"]);
        step("rustup component add llvm-tools", add)
            .context("PGO needs llvm-profdata from rustup's llvm-tools component")?;
    }
    if !tool.exists() {
        bail!("{} is missing after `rustup component add llvm-tools`", tool.display());
    }
    Ok(tool)
}

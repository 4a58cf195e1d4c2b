//! `cargo xtask fuzz [--seconds N]`: builds the cargo-fuzz targets in `fuzz/` and runs each for
//! N seconds (60 unless told), starting from the committed seeds in `fuzz/corpus/<target>/`.
//!
//! CI has only the stable toolchain, so the build runs with `RUSTC_BOOTSTRAP=1` (cargo fuzz
//! needs `-Z` flags). cargo-fuzz is installed with `cargo install --locked` under the target
//! directory when it is not on PATH. No sanitizer: the fuzzed code has no `unsafe`, and
//! libFuzzer's coverage and Rust's own checks (debug assertions, overflow checks) find panics.
//! New inputs go to a scratch corpus under the target directory, never into the committed seeds;
//! a crash leaves its input in `fuzz/artifacts/<target>/` and fails the command.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use super::{cargo, step, target_dir};

/// The targets, in the order they run (see `fuzz/Cargo.toml`).
const TARGETS: [&str; 4] = ["code", "typegen", "scrub", "jsonrpc"];

/// Seconds per target unless `--seconds` says otherwise.
const DEFAULT_SECONDS: u64 = 60;

/// Flags for every `cargo fuzz` build and run, so runs reuse the build. `--release` keeps
/// cargo-fuzz from forcing debug assertions on every crate: they come from `fuzz/Cargo.toml`'s
/// release profile instead, which leaves one upstream assertion out.
const BUILD_FLAGS: [&str; 5] = ["--sanitizer", "none", "--release", "--codegen-units", "16"];

pub fn run(args: &[String]) -> Result<()> {
    let seconds = match args {
        [] => DEFAULT_SECONDS,
        [flag, n] if flag == "--seconds" => {
            n.parse().with_context(|| format!("--seconds takes a number, not `{n}`"))?
        }
        _ => bail!("usage: cargo xtask fuzz [--seconds N]"),
    };
    let started = Instant::now();
    let tools = ensure_cargo_fuzz()?;
    let target = target_dir();
    let mut build = fuzz_command(&tools, "build");
    build.args(BUILD_FLAGS).arg("--target-dir").arg(&target);
    step("fuzz build", build)?;
    let built = started.elapsed().as_secs_f32();
    let mut summary = Vec::new();
    for name in TARGETS {
        let scratch = target.join("fuzz-corpus").join(name);
        std::fs::create_dir_all(&scratch).with_context(|| format!("creating {}", scratch.display()))?;
        let mut run = fuzz_command(&tools, "run");
        run.args(BUILD_FLAGS)
            .arg("--target-dir")
            .arg(&target)
            .arg(name)
            .arg(&scratch)
            .arg(PathBuf::from("fuzz/corpus").join(name))
            .arg("--")
            .arg(format!("-max_total_time={seconds}"))
            .args(["-timeout=30", "-print_final_stats=1"]);
        summary.push(run_one(name, run)?);
    }
    eprintln!("xtask: fuzz smoke ({seconds} s per target; build {built:.0} s):");
    for line in &summary {
        eprintln!("xtask:   {line}");
    }
    eprintln!("xtask: fuzz smoke done in {:.0} s", started.elapsed().as_secs_f32());
    Ok(())
}

/// Runs one target; its stats line, or an error naming the crash's input.
fn run_one(name: &str, mut run: Command) -> Result<String> {
    eprintln!("xtask: ── fuzz {name} ──");
    let output =
        run.stdout(Stdio::inherit()).stderr(Stdio::piped()).output().context("starting cargo fuzz run")?;
    let log = String::from_utf8_lossy(&output.stderr);
    let tail: Vec<&str> = log.lines().rev().take(40).collect::<Vec<_>>().into_iter().rev().collect();
    if !output.status.success() {
        bail!(
            "fuzz target `{name}` failed ({}); the input is in fuzz/artifacts/{name}/:\n{}",
            output.status,
            tail.join("\n")
        );
    }
    let stat = |key: &str| {
        log.lines().find_map(|l| l.strip_prefix(key)).and_then(|v| v.trim().parse::<u64>().ok()).unwrap_or(0)
    };
    let runs = stat("stat::number_of_executed_units:");
    let per_second = stat("stat::average_exec_per_sec:");
    let corpus = log
        .lines()
        .rev()
        .find_map(|l| l.split_once(" corp: ").map(|(_, rest)| rest.split_whitespace().next().unwrap_or("?")))
        .unwrap_or("?")
        .to_owned();
    Ok(format!("{name:<8} {runs:>10} runs  {per_second:>7} execs/s  corpus {corpus}"))
}

/// `cargo fuzz <sub>` from the workspace root on stable, with `RUSTC_BOOTSTRAP=1`.
fn fuzz_command(tools: &Option<PathBuf>, sub: &str) -> Command {
    let mut cmd = cargo(&["fuzz", sub]);
    cmd.env("RUSTC_BOOTSTRAP", "1");
    // libFuzzer is C++: use clang++ where no `c++` is installed (CI installs clang).
    let found = |tool: &str| Command::new(tool).arg("--version").output().is_ok_and(|o| o.status.success());
    if std::env::var_os("CXX").is_none() && !found("c++") && found("clang++") {
        cmd.env("CXX", "clang++");
    }
    if let Some(bin) = tools {
        let path = std::env::var_os("PATH").unwrap_or_default();
        let mut paths = vec![bin.clone()];
        paths.extend(std::env::split_paths(&path));
        cmd.env("PATH", std::env::join_paths(paths).expect("PATH entries join"));
    }
    cmd
}

/// cargo-fuzz on PATH, or installed under the target directory; the directory to put first on
/// PATH when it is the latter.
fn ensure_cargo_fuzz() -> Result<Option<PathBuf>> {
    let works = |cmd: &mut Command| cmd.output().is_ok_and(|o| o.status.success());
    if works(cargo(&["fuzz", "--version"]).stdout(Stdio::null())) {
        return Ok(None);
    }
    let root = target_dir().join("tools");
    let bin = root.join("bin");
    if works(Command::new(bin.join("cargo-fuzz")).arg("--version")) {
        return Ok(Some(bin));
    }
    eprintln!("xtask: cargo-fuzz is missing; installing it from crates.io into {}", root.display());
    let mut install = cargo(&["install", "--locked", "cargo-fuzz", "--root"]);
    install.arg(&root).env("CARGO_TARGET_DIR", root.join("build"));
    step("install cargo-fuzz", install)?;
    std::fs::remove_dir_all(root.join("build")).ok();
    Ok(Some(bin))
}

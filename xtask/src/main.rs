//! `cargo xtask`: the project's automation, one small binary.
//!
//! `cargo xtask test` is what CI runs (`.ci/run` calls only it): it checks what it needs on the
//! machine and installs what it can (`setup`), then runs formatting, clippy with warnings
//! denied, the whole test suite under nextest (the tidy tests in `tidy` included) and the core
//! built for `wasm32-unknown-unknown`.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitCode};
use std::time::Instant;

use anyhow::{Context, Result, bail};

mod dist;
mod fuzz;
mod hosted;
mod pgo;
mod setup;
mod site;
#[cfg(test)]
mod tidy;

use setup::{
    ensure_c_toolchain, ensure_nextest, ensure_node_packages, ensure_test_tools, ensure_wasm_target,
};

const WASM_TARGET: &str = "wasm32-unknown-unknown";

const HELP: &str = "\
usage: cargo xtask <command>

commands:
  test     what CI runs: first checks clang, wasm-ld, D-Bus, gnome-keyring, secret-tool,
           Chromium, Node.js and npm, the wasm32 target and cargo-nextest (as root with
           apt-get it installs the missing Debian packages; else it says what to run), then
           fmt check, clippy (warnings denied), the hosted Worker bundle, nextest over the
           whole workspace (tidy and site tests included), `site --check`, core for wasm32
           (build and clippy)
  bench [args]
           the criterion benchmarks of the workspace (extra arguments go to cargo bench)
  invariants [--long]
           the invariant suite (I1-I8, parity, conformance) against the local and hosted hubs
           (builds the hosted bundle first); --long runs the SIGKILL-and-resume loop over 200
           runs per target, then the fuzz smoke
  bench-serve [rounds]
           measure `hub serve --stdio` (release build, 30 rounds unless told): start to
           initialize and tools/list, idle memory, and execute of one call against the same
           call made directly
  bench-oauth [rounds]
           measure a call on an OAuth connection through `hub serve --stdio` against the
           node/oauth fixture (release build, 30 rounds unless told): the first call after the
           access token expired against a warm call, with the token and MCP requests of each
  bench-load [clients] [runs]
           load on one `hub serve --http` (release build): 32 SDK clients × 200 execute runs
           unless told, one in ten a write approved with `hub approve` and resumed;
           throughput, p50/p99, errors, repeated or lost calls against the
           upstream's own count, and the server's memory and descriptors over the run
  bench-connect [rounds]
           `hub connect` placing 100 skills into seven harnesses, from a fresh HOME each round
  fuzz [--seconds N]
           build the cargo-fuzz targets in fuzz/ (stable, RUSTC_BOOTSTRAP=1) and run each for
           N seconds (default 60); also run by `invariants --long`
  wasm     build and clippy capabilities-core for wasm32-unknown-unknown
  hosted build
           build the hosted Worker bundle for workerd into <target>/hosted/bundle
  hosted dev [--port N] [--dir PATH | --fixtures]
           serve the bundle with workerd on 127.0.0.1 (port 8787 unless told; storage in
           PATH, or <target>/hosted/dev-storage; --fixtures: one tenant already holding the
           eval fixture sources)
  hosted bench [rounds] [--debug]
           time execute of `return 1` on the Worker against local `serve --http` (release
           build unless --debug; 200 rounds unless told), and a new tenant's cold start
  hosted bench-load [clients] [runs] [tenants] [--debug]
           the load bench (`bench-load`) against the Worker in workerd: 32 SDK clients over
           8 tenants × 200 runs unless told, one in ten a write approved through the admin
           endpoint; throughput, p50/p99, errors, repeats and losses, workerd's memory and
           descriptors
  evals [--live] [--hosted] [args]
           run the scripted eval suite (code mode against direct tools) and write
           evals/results/report.md and report.json; fails when a gate regresses;
           --live drives a real model (report in evals/results/live/); --hosted runs code
           mode on the Worker in workerd (report in evals/results/hosted/); other arguments
           (--out, --transcripts, --task) go to the evals binary
  site [--check] [--serve] [--out DIR] [--port N]
           build the documentation site from site/ into <target>/site (or DIR): writes the
           generated sections of its pages from the built binary's `docs-data` first
           (--check fails instead when one is stale), then every page as HTML and Markdown,
           llms.txt, llms-full.txt, docs.json, sitemap.xml, robots.txt; --serve serves it on
           127.0.0.1 (port 8788 unless told)
  dist [--target TRIPLE]... [--pgo | --profile FILE]
           the release artefacts in <target>/dist: stripped release binaries for x86_64- and
           aarch64-unknown-linux-gnu (arm64 with cargo-zigbuild and Zig from PyPI, run with
           --version under qemu-user), capabilities-<version>-<target>.tar.gz for each, the npm
           packages from npm/ (npm pack) and SHA256SUMS, all reproducible; the *-apple-darwin
           targets are built on a Mac (they need its SDK). --pgo optimises the x86_64 binary
           with profiles of it serving local/benches/serve.mjs: LLVM's PGO, then BOLT (needs
           Node.js and llvm-bolt: Debian's bolt-19, installed as root, or LLVM_BOLT=path; about
           three release builds' time); the PGO profile is kept in dist/ as a .profdata, and
           --profile FILE builds with that file instead of training it
  help     this text
";

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("xtask: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let root = workspace_root();
    std::env::set_current_dir(&root).with_context(|| format!("entering {}", root.display()))?;
    match args.first().map(String::as_str) {
        Some("test") => test(),
        Some("bench") => bench(&args[1..]),
        Some("invariants") => invariants(args.get(1).is_some_and(|a| a == "--long")),
        Some("bench-serve") => bench_serve(args.get(1).map(String::as_str).unwrap_or("30")),
        Some("bench-oauth") => bench_oauth(args.get(1).map(String::as_str).unwrap_or("30")),
        Some("bench-load") => bench_node(
            "local/benches/load.mjs",
            &[args.get(1).map_or("32", String::as_str), args.get(2).map_or("200", String::as_str)],
        ),
        Some("bench-connect") => {
            bench_node("local/benches/connect.mjs", &[args.get(1).map_or("10", String::as_str)])
        }
        Some("fuzz") => fuzz::run(&args[1..]),
        Some("wasm") => wasm(),
        Some("hosted") => hosted::hosted(&args[1..]),
        Some("evals") => evals(&args[1..]),
        Some("dist") => dist::run(&args[1..]),
        Some("site") => site::run(&args[1..]),
        Some("-h" | "--help" | "help") | None => {
            eprint!("{HELP}");
            Ok(())
        }
        Some(other) => bail!("unknown command `{other}`\n\n{HELP}"),
    }
}

fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask sits in the workspace").to_owned()
}

fn test() -> Result<()> {
    // Everything first, so a fresh machine learns at once what it lacks.
    ensure_test_tools()?;
    ensure_node_packages()?;
    step("format", cargo(&["fmt", "--all", "--check"]))?;
    step("clippy", cargo(&["clippy", "--workspace", "--all-targets", "--locked", "--", "-D", "warnings"]))?;
    // hosted/tests drive the Worker bundle in workerd.
    hosted::build()?;
    // The invariant and eval suites drive the real binary: point them at the one nextest builds
    // for the local crate's tests, so they do not build it again with other features.
    let mut tests = cargo(&["nextest", "run", "--workspace", "--locked", "--no-fail-fast"]);
    tests.env("CAPABILITIES_BIN", target_dir().join("debug/capabilities"));
    step("tests", tests)?;
    // The site's generated sections against that binary (its tests, above, build and check it).
    let mut site = Command::new(std::env::current_exe().context("finding xtask")?);
    site.args(["site", "--check"]).env("CAPABILITIES_BIN", target_dir().join("debug/capabilities"));
    step("site --check", site)?;
    wasm()
}

fn wasm() -> Result<()> {
    ensure_wasm_target()?;
    ensure_c_toolchain()?;
    step(
        "core for wasm32",
        cargo(&["build", "--locked", "-p", "capabilities-core", "--target", WASM_TARGET]),
    )?;
    step(
        "clippy core for wasm32",
        cargo(&[
            "clippy",
            "--locked",
            "-p",
            "capabilities-core",
            "--target",
            WASM_TARGET,
            "--",
            "-D",
            "warnings",
        ]),
    )
}

fn bench(extra: &[String]) -> Result<()> {
    let mut cmd = cargo(&["bench", "--locked", "--workspace"]);
    cmd.args(extra);
    step("bench", cmd)
}

fn invariants(long: bool) -> Result<()> {
    ensure_nextest()?;
    ensure_node_packages()?;
    hosted::build()?;
    let mut cmd = cargo(&["nextest", "run", "--locked", "-p", "capabilities-invariants", "--no-fail-fast"]);
    if long {
        cmd.env("INVARIANTS_LONG", "1");
    }
    step("invariants", cmd)?;
    if long { fuzz::run(&[]) } else { Ok(()) }
}

fn bench_serve(rounds: &str) -> Result<()> {
    ensure_node_packages()?;
    step("build (release)", cargo(&["build", "--release", "--locked", "-p", "capabilities"]))?;
    let mut node = Command::new("node");
    node.arg("local/benches/serve.mjs").arg(target_dir().join("release/capabilities")).arg(rounds);
    // The site's performance page is generated from this file: commit it after a run.
    node.arg("--out").arg(workspace_root().join("site/data/bench-serve.json"));
    step("bench-serve", node)
}

/// A node bench script against the release binary, with `args` after it.
fn bench_node(script: &str, args: &[&str]) -> Result<()> {
    ensure_node_packages()?;
    step("build (release)", cargo(&["build", "--release", "--locked", "-p", "capabilities"]))?;
    let mut node = Command::new("node");
    node.arg(script).arg(target_dir().join("release/capabilities")).args(args);
    step(script, node)
}

fn bench_oauth(rounds: &str) -> Result<()> {
    ensure_node_packages()?;
    step("build (release)", cargo(&["build", "--release", "--locked", "-p", "capabilities"]))?;
    let mut node = Command::new(workspace_root().join("node/node_modules/.bin/node"));
    node.arg("local/benches/oauth.mjs").arg(target_dir().join("release/capabilities")).arg(rounds);
    step("bench-oauth", node)
}

fn evals(extra: &[String]) -> Result<()> {
    step("build the hub", cargo(&["build", "--locked", "-p", "capabilities"]))?;
    if extra.iter().any(|a| a == "--hosted") {
        hosted::hosted(&["build".to_owned()])?;
    }
    let mut cmd = cargo(&["run", "--locked", "-q", "-p", "capabilities-evals", "--bin", "evals", "--"]);
    cmd.args(extra);
    step("evals", cmd)
}

/// Where cargo puts builds: `$CARGO_TARGET_DIR`, else `target/` in the workspace.
fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| workspace_root().join("target"), PathBuf::from)
}

fn cargo(args: &[&str]) -> Command {
    let mut cmd = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned()));
    cmd.args(args);
    cmd
}

fn step(name: &str, mut cmd: Command) -> Result<()> {
    eprintln!("xtask: ── {name} ──");
    let started = Instant::now();
    let status = cmd.status().with_context(|| format!("starting {name}"))?;
    let secs = started.elapsed().as_secs_f32();
    if !status.success() {
        bail!("{name} failed ({status}) after {secs:.1}s");
    }
    eprintln!("xtask: {name} ok in {secs:.1}s");
    Ok(())
}

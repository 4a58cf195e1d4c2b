//! The x86-64 release binary optimised with profiles of itself at work (`cargo xtask dist
//! --pgo`), in two stages. A hub answers each call after seconds idle, on cold caches, where
//! the layout of the code matters: each stage took about a tenth off a served `execute`
//! (ab.mjs, 300 rounds, both stores).
//!
//! LLVM's profile-guided optimisation lays out and inlines our Rust by how often each branch ran:
//!
//! 1. An instrumented build, in a target directory of its own (`<target>/pgo/instrumented`):
//!    its flags differ from the release build's, and sharing one directory would rebuild both
//!    every time.
//! 2. That binary serves `local/benches/serve.mjs`: start, `initialize`, `tools/list`,
//!    `execute` over stdio and HTTP with a real upstream, direct mode, large listings.
//! 3. `llvm-profdata merge` (rustup's `llvm-tools`, added when missing), then the release build
//!    for `--target x86_64-unknown-linux-gnu` with `-Cprofile-use`, linked with its relocations
//!    kept for the next stage.
//!
//! BOLT then lays out the linked binary again, QuickJS's C code included, which the first stage
//! cannot see: `llvm-bolt -instrument`, the same bench on that binary, `merge-fdata`, and
//! `llvm-bolt` with the profile. Its profile fits only the binary it was taken from, so it is
//! taken afresh each time.
//!
//! The profiles count what one run of the bench did, and the bench is timed, so two trainings
//! differ a little and so may their binaries. The first stage's profile goes into `dist/` with
//! the archives; `--profile FILE` builds with that file instead of training.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::setup::ensure_node_packages;
use crate::{cargo, step, target_dir};

const TRIPLE: &str = "x86_64-unknown-linux-gnu";

/// Rounds of the bench the instrumented binary serves: enough for every path to count.
const TRAINING_ROUNDS: &str = "40";

/// What the stages need besides cargo, found (or installed) before any build.
pub(crate) struct Tools {
    bolt: Bolt,
    /// `llvm-profdata`, when a PGO profile is to be trained rather than given.
    profdata: Option<PathBuf>,
}

/// The bench's npm packages (both stages train on it), BOLT, and with `training` rustup's
/// `llvm-profdata`. `dist` asks for them before it empties anything or builds: a missing tool
/// fails in seconds, not after a fifteen-minute instrumented build.
pub(crate) fn tools(training: bool) -> Result<Tools> {
    ensure_node_packages()?;
    let bolt = bolt_tools()?;
    let profdata = if training { Some(llvm_profdata()?) } else { None };
    Ok(Tools { bolt, profdata })
}

/// Builds the optimised binary with `tools`; `profile` is a merged profile to use instead of
/// training. Returns the binary and the profile it was built with.
pub(crate) fn build(tools: &Tools, name: Option<&str>, profile: Option<&Path>) -> Result<(PathBuf, PathBuf)> {
    let work = target_dir().join("pgo");
    let merged = match (profile, &tools.profdata) {
        (Some(profile), _) => profile.to_owned(),
        (None, Some(profdata)) => train(&work, name, profdata)?,
        (None, None) => bail!("training a profile needs llvm-profdata: ask `pgo::tools` for it"),
    };
    let merged = std::fs::canonicalize(&merged)
        .with_context(|| format!("reading the profile {}", merged.display()))?;
    let mut release = cargo(&["build", "--release", "--locked", "-p", "capabilities", "--target", TRIPLE]);
    // BOLT moves code only in a binary that kept its relocations.
    let flags = format!("-Cprofile-use={} -Clink-args=-Wl,--emit-relocs", merged.display());
    release.env("RUSTFLAGS", rustflags(&flags));
    if let Some(name) = name {
        release.env("CAPABILITIES_BUILD", name);
    }
    step("release build with the profile (x86_64)", release)?;
    let binary =
        tools.bolt.optimise(&target_dir().join(TRIPLE).join("release/capabilities"), &work.join("bolt"))?;
    Ok((binary, merged))
}

/// The bench served by `binary`, an instrumented build (`what`), for its profile.
fn serve_bench(binary: &Path, what: &str) -> Result<()> {
    let mut bench = Command::new("node");
    bench.arg("local/benches/serve.mjs").arg(binary).arg(TRAINING_ROUNDS);
    bench.stdout(std::process::Stdio::null());
    step(&format!("training: serve.mjs on the {what}"), bench)
}

/// BOLT's programs.
struct Bolt {
    bolt: PathBuf,
    merge: PathBuf,
}

/// Where Debian's `bolt-19` package puts llvm-bolt, `merge-fdata` beside it.
const DEBIAN_BOLT: &str = "/usr/lib/llvm-19/bin/llvm-bolt";

/// QuickJS's interpreter loop jumps through a table of labels that BOLT cannot map, so it stays
/// as the compiler laid it out.
const BOLT_SKIP: &str = "--skip-funcs=JS_CallInternal.*";

/// `LLVM_BOLT` names llvm-bolt, with `merge-fdata` beside it; else Debian's `bolt-19`, installed
/// when missing.
fn bolt_tools() -> Result<Bolt> {
    let bolt = match std::env::var_os("LLVM_BOLT") {
        Some(path) => PathBuf::from(path),
        None => {
            crate::setup::ensure_debian(&[(DEBIAN_BOLT, "bolt-19")])
                .context("--pgo needs llvm-bolt: install Debian's bolt-19, or set LLVM_BOLT to it")?;
            PathBuf::from(DEBIAN_BOLT)
        }
    };
    let merge = bolt.with_file_name("merge-fdata");
    for tool in [&bolt, &merge] {
        if !tool.is_file() {
            bail!("{} is missing: --pgo needs llvm-bolt and merge-fdata side by side", tool.display());
        }
    }
    Ok(Bolt { bolt, merge })
}

impl Bolt {
    /// `binary` laid out again by BOLT with a profile of it serving the bench, written to
    /// `work/capabilities`.
    fn optimise(&self, binary: &Path, work: &Path) -> Result<PathBuf> {
        let raw = emptied(&work.join("raw"))?;
        let instrumented = work.join("capabilities-instrumented");
        let mut instrument = Command::new(&self.bolt);
        instrument
            .arg(binary)
            .arg("-instrument")
            .arg("-o")
            .arg(&instrumented)
            // Each process the bench starts writes its own profile when it exits.
            .arg(format!("--instrumentation-file={}", raw.join("capabilities").display()))
            .arg("--instrumentation-file-append-pid")
            .arg(BOLT_SKIP);
        step("llvm-bolt -instrument", instrument)?;
        serve_bench(&instrumented, "BOLT-instrumented build")?;
        let profiles = written(&raw, "fdata", "the BOLT-instrumented build")?;
        let merged = work.join("capabilities.fdata");
        let mut merge = Command::new(&self.merge);
        merge.args(&profiles).stdout(std::fs::File::create(&merged)?);
        step("merge-fdata", merge)?;
        let optimised = work.join("capabilities");
        let mut optimise = Command::new(&self.bolt);
        optimise
            .arg(binary)
            .arg("-o")
            .arg(&optimised)
            .arg(format!("-data={}", merged.display()))
            .args(["-reorder-blocks=ext-tsp", "-reorder-functions=cdsort", "-split-functions"])
            .args(["-split-all-cold", "-split-eh", "-icf=1", "-use-gnu-stack", BOLT_SKIP]);
        step("llvm-bolt with the profile", optimise)?;
        Ok(optimised)
    }
}

/// The instrumented build, served the bench, its profiles merged with `profdata`; the merged
/// profile's path.
fn train(work: &Path, name: Option<&str>, profdata: &Path) -> Result<PathBuf> {
    let raw = emptied(&work.join("raw"))?;
    let instrumented_dir = work.join("instrumented");
    let mut instrumented = cargo(&["build", "--release", "--locked", "-p", "capabilities"]);
    instrumented.env("CARGO_TARGET_DIR", &instrumented_dir);
    instrumented.env("RUSTFLAGS", rustflags(&format!("-Cprofile-generate={}", raw.display())));
    if let Some(name) = name {
        instrumented.env("CAPABILITIES_BUILD", name);
    }
    step("instrumented build (x86_64)", instrumented)?;
    serve_bench(&instrumented_dir.join("release/capabilities"), "instrumented build")?;
    let raws = written(&raw, "profraw", "the instrumented build")?;
    let merged = work.join("capabilities.profdata");
    let mut merge = Command::new(profdata);
    merge.arg("merge").arg("-o").arg(&merged).args(&raws);
    step("llvm-profdata merge", merge)?;
    Ok(merged)
}

/// `dir`, made empty (for the profiles of one training).
fn emptied(dir: &Path) -> Result<PathBuf> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("emptying {}", dir.display()))?;
    }
    std::fs::create_dir_all(dir)?;
    Ok(dir.to_owned())
}

/// The `.<extension>` profiles `who` wrote into `dir`; an error when there are none.
fn written(dir: &Path, extension: &str, who: &str) -> Result<Vec<PathBuf>> {
    let profiles: Vec<PathBuf> = std::fs::read_dir(dir)?
        .filter_map(|entry| entry.ok().map(|e| e.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == extension))
        .collect();
    if profiles.is_empty() {
        bail!("{who} wrote no profile into {}", dir.display());
    }
    Ok(profiles)
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

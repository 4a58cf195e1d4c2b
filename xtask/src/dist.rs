//! `cargo xtask dist`: the release artefacts, in `<target>/dist/`.
//!
//! For each Linux target a stripped release binary, tarred as
//! `capabilities-<version>-<target>.tar.gz` (the binary, README.md and LICENSE); the npm launcher
//! `@capabilities-hub/cli` and one platform package per target, packed with `npm pack`; and
//! `SHA256SUMS` over all of them. x86-64 is this machine's own release build (the one `cargo
//! build --release` makes); arm64 is cross-compiled with cargo-zigbuild and Zig (both pinned,
//! from PyPI, into `<target>/dist-tools`), then run with `--version` under qemu-user.
//!
//! The archives are reproducible: entries in name order, mtime 0, owner and group 0, fixed
//! modes, gzip without a name or time; npm pack fixes its own. The binaries are the same for
//! the same commit, toolchain and checkout path (panic locations name source paths).
//!
//! macOS binaries need Apple's SDK, so they are built on a Mac (`--target
//! aarch64-apple-darwin` there); on Linux dist names what they need and goes on.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

use crate::setup::ensure_debian;
use crate::{cargo, step, target_dir, workspace_root};

const VERSION: &str = env!("CARGO_PKG_VERSION");
const ZIGLANG: &str = "0.17.0";
const CARGO_ZIGBUILD: &str = "0.24.0";

#[derive(Clone, Copy, PartialEq, Eq)]
enum Build {
    /// `cargo build --release` on this machine, no `--target`: the release build others share.
    Host,
    /// `cargo zigbuild --release --target <triple>`, run under qemu-user afterwards.
    ZigArm64,
    /// `cargo build --release --target <triple>` on a Mac.
    Mac,
}

struct Target {
    triple: &'static str,
    /// The npm platform package's folder in `npm/platforms/`.
    npm: &'static str,
    build: Build,
}

const TARGETS: [Target; 4] = [
    Target { triple: "x86_64-unknown-linux-gnu", npm: "linux-x64", build: Build::Host },
    Target { triple: "aarch64-unknown-linux-gnu", npm: "linux-arm64", build: Build::ZigArm64 },
    Target { triple: "x86_64-apple-darwin", npm: "darwin-x64", build: Build::Mac },
    Target { triple: "aarch64-apple-darwin", npm: "darwin-arm64", build: Build::Mac },
];

const MAC_NEEDS: &str = "a Mac with Xcode's command line tools (the macOS SDK, which cannot be \
                         had on Linux) and `rustup target add x86_64-apple-darwin aarch64-apple-darwin`; \
                         there run `cargo xtask dist --target aarch64-apple-darwin --target x86_64-apple-darwin`";

pub(crate) fn run(args: &[String]) -> Result<()> {
    let Options { targets: chosen, pgo } = options(args)?;
    let root = workspace_root();
    check_npm_versions(&root)?;
    // Checked before the folder is emptied below: a missing tool loses nothing.
    let tools = pgo.as_ref().map(|profile| crate::pgo::tools(profile.is_none())).transpose()?;
    let dist = target_dir().join("dist");
    // A profile kept by an earlier `--pgo` sits in the folder emptied below: keep it aside.
    let pgo = match pgo {
        Some(Some(profile)) if dist.exists() && profile.starts_with(std::fs::canonicalize(&dist)?) => {
            let aside = target_dir().join("pgo");
            std::fs::create_dir_all(&aside)?;
            let aside = aside.join(profile.file_name().context("a profile file")?);
            std::fs::copy(&profile, &aside).with_context(|| format!("copying {}", profile.display()))?;
            Some(Some(aside))
        }
        other => other,
    };
    if dist.exists() {
        std::fs::remove_dir_all(&dist).with_context(|| format!("emptying {}", dist.display()))?;
    }
    let stage = dist.join("stage");
    std::fs::create_dir_all(&stage)?;
    let name = build_name(&root);
    if let Some(name) = &name {
        eprintln!("xtask: building {name}");
        if name.ends_with("dirty") {
            eprintln!(
                "xtask: tracked files have changes not committed: the binaries say `dirty` in --version"
            );
        }
    }
    let strip = strip_tool()?;
    let mut made = Vec::new();
    for target in &chosen {
        let binary = match (&pgo, &tools, target.build) {
            (Some(profile), Some(tools), Build::Host) => {
                let (binary, used) = crate::pgo::build(tools, name.as_deref(), profile.as_deref())?;
                // Kept with the archives: `--profile` builds with it again, without training.
                let kept = dist.join(format!("capabilities-{VERSION}-{}.profdata", target.triple));
                std::fs::copy(&used, &kept)?;
                made.push(kept);
                binary
            }
            _ => build(target, name.as_deref())?,
        };
        let name = format!("capabilities-{VERSION}-{}", target.triple);
        let folder = stage.join(&name);
        std::fs::create_dir_all(&folder)?;
        let stripped = folder.join("capabilities");
        let mut cmd = Command::new(&strip);
        cmd.arg("-o").arg(&stripped).arg(&binary);
        step(&format!("strip {}", target.triple), cmd)?;
        std::fs::copy(root.join("README.md"), folder.join("README.md"))?;
        std::fs::copy(root.join("LICENSE"), folder.join("LICENSE"))?;
        // Modes fixed here, whatever the checkout's umask gave.
        let (readme, license) = (folder.join("README.md"), folder.join("LICENSE"));
        for (path, mode) in [(&folder, 0o755), (&stripped, 0o755), (&readme, 0o644), (&license, 0o644)] {
            std::fs::set_permissions(path, std::os::unix::fs::PermissionsExt::from_mode(mode))?;
        }
        check_runs(target, &stripped)?;
        let archive = dist.join(format!("{name}.tar.gz"));
        tarball(&stage, &name, &archive)?;
        made.push(archive);
        let package = stage.join("npm").join(target.npm);
        copy_dir(&root.join("npm/platforms").join(target.npm), &package)?;
        std::fs::copy(root.join("LICENSE"), package.join("LICENSE"))?;
        std::fs::create_dir_all(package.join("bin"))?;
        std::fs::copy(&stripped, package.join("bin/capabilities"))?;
        made.push(npm_pack(&package, &dist)?);
    }
    let launcher = stage.join("npm/cli");
    copy_dir(&root.join("npm/cli"), &launcher)?;
    std::fs::copy(root.join("LICENSE"), launcher.join("LICENSE"))?;
    made.push(npm_pack(&launcher, &dist)?);
    std::fs::remove_dir_all(&stage)?;
    sums(&dist, &made)?;
    let skipped: Vec<&str> =
        TARGETS.iter().filter(|t| !chosen.iter().any(|c| c.triple == t.triple)).map(|t| t.triple).collect();
    eprintln!("xtask: in {}:", dist.display());
    eprint!("{}", std::fs::read_to_string(dist.join("SHA256SUMS"))?);
    if skipped.iter().any(|t| t.ends_with("-apple-darwin")) {
        eprintln!("xtask: not built here: {}; they need {MAC_NEEDS}", skipped.join(", "));
    }
    Ok(())
}

/// What `dist` was asked for.
struct Options {
    targets: Vec<&'static Target>,
    /// Profile-guided optimisation of the x86-64 binary: `Some(None)` trains a profile,
    /// `Some(Some(file))` uses that one (see `pgo.rs`).
    pgo: Option<Option<PathBuf>>,
}

/// The targets `--target` names, else both Linux ones (a macOS one off a Mac is refused), and
/// `--pgo` or `--profile FILE`.
fn options(args: &[String]) -> Result<Options> {
    let mut chosen = Vec::new();
    let mut pgo = None;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        let triple = match arg.as_str() {
            "--pgo" => {
                pgo.get_or_insert(None);
                continue;
            }
            "--profile" => {
                let file = args.next().context("--profile needs the .profdata file of an earlier --pgo")?;
                let file =
                    std::fs::canonicalize(file).with_context(|| format!("reading the profile {file}"))?;
                pgo = Some(Some(file));
                continue;
            }
            "--target" => args.next().context("--target needs a target triple")?.as_str(),
            other => {
                other.strip_prefix("--target=").with_context(|| format!("unknown argument `{other}`"))?
            }
        };
        let target = TARGETS.iter().find(|t| t.triple == triple).with_context(|| {
            let known: Vec<&str> = TARGETS.iter().map(|t| t.triple).collect();
            format!("dist builds {}, not {triple}", known.join(", "))
        })?;
        chosen.push(target);
    }
    if chosen.is_empty() {
        chosen = TARGETS.iter().filter(|t| t.build != Build::Mac).collect();
    }
    if pgo.is_some() && !chosen.iter().any(|t| t.build == Build::Host) {
        bail!("--pgo and --profile are for x86_64-unknown-linux-gnu, which is not among the targets");
    }
    let on_mac = cfg!(target_os = "macos");
    for target in &chosen {
        match target.build {
            Build::Mac if !on_mac => bail!("{} is built on a Mac: it needs {MAC_NEEDS}", target.triple),
            Build::Host | Build::ZigArm64 if !cfg!(all(target_os = "linux", target_arch = "x86_64")) => {
                bail!("{} is built on x86-64 Linux", target.triple)
            }
            _ => {}
        }
    }
    Ok(Options { targets: chosen, pgo })
}

/// The release binary for `target`, built (or found up to date) by cargo, named `name` in
/// `--version` (`build.rs` finds it itself when there is no git).
fn build(target: &Target, name: Option<&str>) -> Result<PathBuf> {
    let cargo = |args: &[&str]| {
        let mut cmd = cargo(args);
        if let Some(name) = name {
            cmd.env("CAPABILITIES_BUILD", name);
        }
        cmd
    };
    match target.build {
        Build::Host => {
            step("release build (x86_64)", cargo(&["build", "--release", "--locked", "-p", "capabilities"]))?;
            Ok(target_dir().join("release/capabilities"))
        }
        Build::ZigArm64 => {
            let path = zig_tools()?;
            let status = Command::new("rustup").args(["target", "add", target.triple]).status();
            if !status.is_ok_and(|s| s.success()) {
                bail!(
                    "`rustup target add {}` failed: install rustup, or add the target another way",
                    target.triple
                );
            }
            let mut cmd = cargo(&[
                "zigbuild",
                "--release",
                "--locked",
                "-p",
                "capabilities",
                "--target",
                target.triple,
            ]);
            cmd.env("PATH", path);
            step("release build (aarch64, cargo-zigbuild)", cmd)?;
            Ok(target_dir().join(target.triple).join("release/capabilities"))
        }
        Build::Mac => {
            let mut cmd =
                cargo(&["build", "--release", "--locked", "-p", "capabilities", "--target", target.triple]);
            cmd.env_remove("CARGO_BUILD_TARGET");
            step(&format!("release build ({})", target.triple), cmd)?;
            Ok(target_dir().join(target.triple).join("release/capabilities"))
        }
    }
}

/// cargo-zigbuild and Zig at their pinned versions in a virtualenv of their own under the
/// target dir, installed from PyPI when missing; returns PATH with that env's bin first.
fn zig_tools() -> Result<std::ffi::OsString> {
    let env = target_dir().join("dist-tools");
    let bin = env.join("bin");
    let installed = Command::new(bin.join("cargo-zigbuild")).arg("--version").output().is_ok_and(|o| {
        String::from_utf8_lossy(&o.stdout).trim() == format!("cargo-zigbuild {CARGO_ZIGBUILD}")
    }) && Command::new(bin.join("python3"))
        .args(["-m", "ziglang", "version"])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == ZIGLANG);
    if !installed {
        let mut venv = Command::new("python3");
        venv.args(["-m", "venv"]).arg(&env);
        step("python3 -m venv (for cargo-zigbuild)", venv)
            .context("cross-building arm64 needs Python 3 with venv (Debian: python3-venv)")?;
        let mut pip = Command::new(bin.join("pip"));
        pip.args([
            "install",
            "--quiet",
            &format!("ziglang=={ZIGLANG}"),
            &format!("cargo-zigbuild=={CARGO_ZIGBUILD}"),
        ]);
        step("pip install ziglang cargo-zigbuild", pip)?;
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    Ok(std::env::join_paths(std::iter::once(bin).chain(std::env::split_paths(&path)))?)
}

/// `llvm-strip`, which strips both architectures.
fn strip_tool() -> Result<PathBuf> {
    if cfg!(target_os = "macos") {
        return Ok(PathBuf::from("strip"));
    }
    ensure_debian(&[("llvm-strip", "llvm")])?;
    Ok(PathBuf::from("llvm-strip"))
}

/// The stripped binary answers `--version`: natively, or for arm64 under qemu-user with
/// Debian's arm64 C library as its root.
fn check_runs(target: &Target, binary: &Path) -> Result<()> {
    let mut cmd = match target.build {
        Build::ZigArm64 => {
            ensure_debian(&[
                ("qemu-aarch64", "qemu-user"),
                ("/usr/aarch64-linux-gnu/lib/ld-linux-aarch64.so.1", "libc6-arm64-cross"),
            ])?;
            let mut cmd = Command::new("qemu-aarch64");
            cmd.args(["-L", "/usr/aarch64-linux-gnu"]).arg(binary);
            cmd
        }
        _ => Command::new(binary),
    };
    let out = cmd.arg("--version").output().with_context(|| format!("running {}", binary.display()))?;
    let said = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() || !said.starts_with(&format!("capabilities {VERSION} (")) {
        bail!(
            "{} --version said {said:?} ({}): {}",
            target.triple,
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let how = if target.build == Build::ZigArm64 { " under qemu-aarch64" } else { "" };
    eprintln!("xtask: {}{how}: {}", target.triple, said.trim());
    Ok(())
}

/// `stage/<name>` as a reproducible `.tar.gz`.
fn tarball(stage: &Path, name: &str, archive: &Path) -> Result<()> {
    let tar = archive.with_extension("");
    let mut cmd = Command::new("tar");
    cmd.args([
        "--sort=name",
        "--mtime=@0",
        "--owner=0",
        "--group=0",
        "--numeric-owner",
        "--mode=u+rwX,go+rX,go-w",
        "--format=gnu",
        "-cf",
    ])
    .arg(&tar)
    .arg("-C")
    .arg(stage)
    .arg(name);
    step(&format!("tar {name}"), cmd)?;
    let mut gzip = Command::new("gzip");
    gzip.args(["-n", "-9", "-f"]).arg(&tar);
    step(&format!("gzip {name}"), gzip)?;
    Ok(())
}

/// `npm pack` of `package` into `dist`; returns the tarball.
fn npm_pack(package: &Path, dist: &Path) -> Result<PathBuf> {
    // npm reads `a/b` as a GitHub repository: name the folder by its absolute path.
    let package = &std::path::absolute(package)?;
    let out = Command::new("npm")
        .args(["pack", "--silent", "--pack-destination"])
        .arg(dist)
        .arg(package)
        .env("npm_config_update_notifier", "false")
        .output()
        .context("running npm pack: install Node.js and npm")?;
    if !out.status.success() {
        bail!("npm pack {}: {}", package.display(), String::from_utf8_lossy(&out.stderr));
    }
    let file = String::from_utf8_lossy(&out.stdout).lines().last().unwrap_or_default().trim().to_owned();
    let path = dist.join(&file);
    if !path.is_file() {
        bail!("npm pack {} made no {file}", package.display());
    }
    eprintln!("xtask: npm pack {}", file);
    Ok(path)
}

/// `SHA256SUMS` beside the files, in name order, as `sha256sum --check` reads it.
fn sums(dist: &Path, files: &[PathBuf]) -> Result<()> {
    let mut names: Vec<String> =
        files.iter().map(|f| f.file_name().unwrap().to_string_lossy().into_owned()).collect();
    names.sort();
    let out =
        Command::new("sha256sum").args(&names).current_dir(dist).output().context("running sha256sum")?;
    if !out.status.success() {
        bail!("sha256sum: {}", String::from_utf8_lossy(&out.stderr));
    }
    std::fs::write(dist.join("SHA256SUMS"), out.stdout)?;
    Ok(())
}

/// Every package.json in npm/ names the workspace's version, also in its dependencies.
fn check_npm_versions(root: &Path) -> Result<()> {
    let mut files = vec![root.join("npm/cli/package.json")];
    files.extend(TARGETS.iter().map(|t| root.join("npm/platforms").join(t.npm).join("package.json")));
    for file in files {
        let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        let json: serde_json::Value = serde_json::from_str(&text)?;
        let deps = json["optionalDependencies"].as_object().into_iter().flatten().map(|(_, v)| v);
        if std::iter::once(&json["version"]).chain(deps).any(|v| v != VERSION) {
            bail!("{} does not name version {VERSION} throughout: set it to the workspace's", file.display());
        }
    }
    Ok(())
}

/// `<commit>` or `<commit>, dirty` (tracked files changed), as `local/build.rs` names a build;
/// `None` outside a git work tree.
fn build_name(root: &Path) -> Option<String> {
    let git = |args: &[&str]| {
        let out = Command::new("git").arg("-C").arg(root).args(args).output().ok()?;
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
    };
    let commit = git(&["rev-parse", "--short=12", "HEAD"])?;
    let status = git(&["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"])?;
    Some(if status.is_empty() { commit } else { format!("{commit}, dirty") })
}

fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to)?;
    for entry in std::fs::read_dir(from).with_context(|| format!("reading {}", from.display()))? {
        let entry = entry?;
        let target = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            copy_dir(&entry.path(), &target)?;
        } else {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

//! PyPI packages, as far as pip allows the same care as npm: `pypi:<name>[==<version>]`
//! resolved by pip (a dry run that installs nothing) to one exact version and the exact set of
//! wheels it needs, each with its sha256; then installed from wheels only (`--only-binary
//! :all:`, so no `setup.py` or build backend runs) with every hash required
//! (`--require-hashes`: a file that differs from what was resolved is refused), into its own
//! directory (`--target`), `.partial-*` first and renamed into place once it is whole.
//!
//! What pip cannot do is check a publisher's signature or provenance: PyPI's attestations
//! (PEP 740) have no verifier in pip, so the lock records both checks as `unavailable`, and the
//! pinned hashes as what vouches for the files. The server runs with the Python that resolved
//! it, importing from the package directory only (`-s`, no user site).

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::{Check, CheckStatus};

/// An exact version pip resolved a reference to, with every wheel it needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub name: String,
    pub version: String,
    /// `sha256:<hex>` of the package's own wheel.
    pub integrity: String,
    /// The wheel's URL.
    pub url: String,
    /// Every distribution to install, `name==version --hash=sha256:…`, the package included.
    pub requirements: Vec<String>,
}

/// A package installed and checked.
#[derive(Debug, Clone)]
pub struct Installed {
    /// The console script it runs, `module:function`.
    pub entry: String,
    pub signatures: Check,
    pub provenance: Check,
    /// Whether this install made the directory (else the same version was there already).
    pub fresh: bool,
}

/// The name of the file in an installed package's directory listing what it was installed
/// from, hashes included.
pub const REQUIREMENTS: &str = "requirements.lock.txt";

/// `name[==version]` → the name and the version (`None`: the newest pip finds).
pub fn parse(reference: &str) -> Result<(String, Option<String>)> {
    let (name, version) = match reference.split_once("==") {
        Some((name, version)) => (name, Some(version)),
        None if reference.contains(['=', '<', '>', '~', '!', '@', ' ', ';', '[']) => {
            bail!(
                "`{reference}` is not `<package>` or `<package>==<version>`: give one exact version or none"
            )
        }
        None => (reference, None),
    };
    check_name(name)?;
    if let Some(version) = version
        && (version.is_empty()
            || version.starts_with(['-', '.'])
            || !version.chars().all(|c| c.is_ascii_alphanumeric() || ".+-_!".contains(c)))
    {
        bail!("`{version}` is not an exact version of `{name}`");
    }
    Ok((name.to_owned(), version.map(str::to_owned)))
}

/// PyPI's rule for a project name, so it is never an option, a path or a URL.
fn check_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 100
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name.ends_with(|c: char| c.is_ascii_alphanumeric())
        && name.chars().all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c));
    if !ok {
        bail!("`{name}` is not a PyPI project name");
    }
    Ok(())
}

/// The canonical form of a project name (PEP 503): lowercase, runs of `-_.` as one `-`.
pub fn normalize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for c in name.chars() {
        if "-_.".contains(c) {
            if !out.ends_with('-') {
                out.push('-');
            }
        } else {
            out.push(c.to_ascii_lowercase());
        }
    }
    out
}

/// The Python the hub installs for and runs with: `$CAPABILITIES_PYTHON`, else `python3` on
/// `PATH`, as the real interpreter behind any shim (pyenv's is a script that would not run
/// inside the isolation).
pub fn python() -> Result<PathBuf> {
    let program = std::env::var_os("CAPABILITIES_PYTHON").unwrap_or_else(|| "python3".into());
    let output = Command::new(&program)
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .context("running python3 (is Python installed? set `CAPABILITIES_PYTHON` to its path otherwise)")?;
    let path = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    if !output.status.success() || path.is_empty() {
        bail!("python3 did not say where it is: {}", String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(PathBuf::from(path))
}

fn pip(python: &Path) -> Command {
    let mut command = Command::new(python);
    command
        .args(["-m", "pip", "--disable-pip-version-check", "--no-input"])
        .env("PIP_NO_INPUT", "1")
        .env_remove("PIP_REQUIRE_VIRTUALENV")
        .env_remove("PIP_USER");
    command
}

fn run(mut command: Command, what: &str) -> Result<Output> {
    command.output().with_context(|| format!("running pip to {what} (is pip installed for python3?)"))
}

/// pip's error lines, without its warnings and hints.
fn pip_error(output: &Output) -> String {
    let stderr = String::from_utf8_lossy(&output.stderr);
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| l.starts_with("ERROR:"))
        .map(|l| l.trim_start_matches("ERROR:").trim())
        .take(2)
        .collect();
    if lines.is_empty() { stderr.lines().last().unwrap_or("").trim().to_owned() } else { lines.join("; ") }
}

/// Resolves `name[==version]` with pip's resolver, wheels only, installing nothing.
pub fn resolve(python: &Path, name: &str, version: Option<&str>) -> Result<Resolved> {
    let dir = ScratchDir::new()?;
    let report = dir.0.join("report.json");
    let requirement = match version {
        Some(version) => format!("{name}=={version}"),
        None => name.to_owned(),
    };
    let mut command = pip(python);
    command
        .args(["install", "--dry-run", "--ignore-installed", "--only-binary", ":all:", "--quiet", "--report"])
        .arg(&report)
        .arg(&requirement)
        .current_dir(&dir.0);
    let output = run(command, "resolve the version")?;
    if !output.status.success() {
        bail!("pip cannot resolve `{requirement}` from wheels: {}", pip_error(&output));
    }
    let text = std::fs::read(&report).context("reading pip's report")?;
    let value: Value = serde_json::from_slice(&text).context("pip's report is not JSON")?;
    let wanted = normalize(name);
    let mut resolved: Option<Resolved> = None;
    let mut requirements = Vec::new();
    for item in value["install"].as_array().into_iter().flatten() {
        let dist = item["metadata"]["name"].as_str().unwrap_or_default();
        let dist_version = item["metadata"]["version"].as_str().unwrap_or_default();
        let sha256 = item.pointer("/download_info/archive_info/hashes/sha256").and_then(Value::as_str);
        let url = item.pointer("/download_info/url").and_then(Value::as_str).unwrap_or_default();
        let Some(sha256) = sha256.filter(|h| h.len() == 64 && h.chars().all(|c| c.is_ascii_hexdigit()))
        else {
            bail!(
                "pip resolved `{dist}` {dist_version} from {url} without a sha256; the hub installs only what it can check"
            );
        };
        check_name(dist).with_context(|| format!("pip resolved a distribution named `{dist}`"))?;
        if dist_version.is_empty()
            || !dist_version.chars().all(|c| c.is_ascii_alphanumeric() || ".+-_!".contains(c))
        {
            bail!("pip resolved `{dist}` at `{dist_version}`, which is not a version");
        }
        requirements.push(format!("{dist}=={dist_version} --hash=sha256:{sha256}"));
        if normalize(dist) == wanted {
            resolved = Some(Resolved {
                name: dist.to_owned(),
                version: dist_version.to_owned(),
                integrity: format!("sha256:{sha256}"),
                url: url.to_owned(),
                requirements: Vec::new(),
            });
        }
    }
    let Some(mut resolved) = resolved else {
        bail!("pip resolved `{requirement}` to nothing named `{name}`; nothing was installed");
    };
    requirements.sort();
    resolved.requirements = requirements;
    Ok(resolved)
}

/// A folder under the system's temporary directory, removed when dropped.
struct ScratchDir(PathBuf);

impl ScratchDir {
    fn new() -> Result<ScratchDir> {
        let name = format!("capabilities-pip-{}", hex::encode(crate::platform::random_bytes::<6>()?));
        let dir = std::env::temp_dir().join(name);
        std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(ScratchDir(dir))
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// The newest version pip finds (`pip index versions`).
pub fn latest(python: &Path, name: &str) -> Result<String> {
    check_name(name)?;
    let mut command = pip(python);
    command.args(["index", "versions", "--only-binary", ":all:", name]);
    let output = run(command, "look up the latest version")?;
    if !output.status.success() {
        bail!("pip cannot look up `{name}`: {}", pip_error(&output));
    }
    // `name (1.2.3)` on the first line.
    let stdout = String::from_utf8_lossy(&output.stdout);
    stdout
        .lines()
        .next()
        .and_then(|line| line.split_once('(')?.1.split_once(')').map(|(v, _)| v.trim().to_owned()))
        .context("pip answered no version")
}

/// Installs `resolved` into `dir`: wheels only, every hash required, then its entry point
/// found. A refusal leaves nothing behind; the same version there already is checked again
/// against the hashes it was installed with and reused.
pub fn install(python: &Path, resolved: &Resolved, dir: &Path) -> Result<Installed> {
    let parent = dir.parent().context("a package directory has a parent")?;
    super::create_private_dirs(parent)?;
    let requirements = resolved.requirements.join("\n") + "\n";
    if dir.is_dir() {
        let recorded = std::fs::read_to_string(dir.join(REQUIREMENTS)).unwrap_or_default();
        if recorded != requirements {
            bail!(
                "{} holds another install of {} {} (its {REQUIREMENTS} differs): remove that folder and add again",
                dir.display(),
                resolved.name,
                resolved.version
            );
        }
        let entry = entry_point(dir, resolved)?;
        return Ok(Installed { entry, signatures: unavailable(), provenance: unavailable(), fresh: false });
    }
    let entry = super::install_whole(dir, |partial| -> Result<String> {
        std::fs::write(partial.join(REQUIREMENTS), &requirements).context("writing the requirements")?;
        let mut command = pip(python);
        command
            .args([
                "install",
                "--only-binary",
                ":all:",
                "--no-deps",
                "--require-hashes",
                "--no-compile",
                "--ignore-installed",
                "--quiet",
                "--target",
            ])
            .arg(partial)
            .arg("-r")
            .arg(partial.join(REQUIREMENTS))
            .current_dir(partial);
        let output = run(command, "install the package")?;
        if !output.status.success() {
            let error = pip_error(&output);
            if error.contains("HASHES") || error.contains("hash") {
                bail!(
                    "refused `{}=={}`: a file does not match the sha256 pinned at resolution ({error}); nothing was installed",
                    resolved.name,
                    resolved.version
                );
            }
            bail!(
                "pip could not install `{}=={}`: {error}; nothing was installed",
                resolved.name,
                resolved.version
            );
        }
        entry_point(partial, resolved)
    })?;
    Ok(Installed { entry, signatures: unavailable(), provenance: unavailable(), fresh: true })
}

fn unavailable() -> Check {
    Check {
        status: CheckStatus::Unavailable,
        detail: "pip verifies no PyPI signature or attestation; every wheel's sha256 was pinned at resolution and \
                 required at install"
            .to_owned(),
    }
}

/// The package's console script: the one named like the package, else the only one, as
/// `module:function`.
fn entry_point(dir: &Path, resolved: &Resolved) -> Result<String> {
    let wanted = normalize(&resolved.name);
    let dist_info = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| {
            n.strip_suffix(".dist-info")
                .and_then(|stem| stem.rsplit_once('-'))
                .is_some_and(|(dist, version)| normalize(dist) == wanted && version == resolved.version)
        })
        .with_context(|| {
            format!("pip installed no metadata for `{}`; nothing was installed", resolved.name)
        })?;
    let text = std::fs::read_to_string(dir.join(&dist_info).join("entry_points.txt")).unwrap_or_default();
    let mut scripts: Vec<(String, String)> = Vec::new();
    let mut in_scripts = false;
    for line in text.lines().map(str::trim) {
        if line.starts_with('[') {
            in_scripts = line == "[console_scripts]";
        } else if in_scripts && let Some((name, target)) = line.split_once('=') {
            scripts.push((name.trim().to_owned(), target.trim().to_owned()));
        }
    }
    let chosen = scripts
        .iter()
        .find(|(name, _)| normalize(name) == wanted)
        .or_else(|| if scripts.len() == 1 { scripts.first() } else { None })
        .or_else(|| scripts.iter().find(|(name, _)| name.contains("mcp")));
    let Some((_, target)) = chosen else {
        bail!(
            "`{}` has no console script to run: it is not a stdio MCP server package; nothing was installed",
            resolved.name
        );
    };
    let plain = |part: &str| {
        !part.is_empty()
            && part
                .split('.')
                .all(|p| !p.is_empty() && p.chars().all(|c| c.is_ascii_alphanumeric() || c == '_'))
    };
    match target.split_once(':') {
        Some((module, function)) if plain(module) && plain(function) => Ok(target.clone()),
        _ => bail!(
            "`{}`'s console script `{target}` is not `module:function`; nothing was installed",
            resolved.name
        ),
    }
}

/// What runs an installed package's entry point: `python -s -c BOOT <dir> <module:function>`.
/// The bootstrap puts only `dir` in front of the path and calls the function as its console
/// script would.
pub const BOOT: &str = "import importlib, sys\n\
d, e = sys.argv[1], sys.argv[2]\n\
sys.argv = [e] + sys.argv[3:]\n\
sys.path.insert(0, d)\n\
m, _, f = e.partition(':')\n\
o = importlib.import_module(m)\n\
for a in f.split('.'):\n    o = getattr(o, a)\n\
sys.exit(o())\n";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_to_a_name_and_one_version() {
        assert_eq!(parse("mcp-server-time").unwrap(), ("mcp-server-time".to_owned(), None));
        assert_eq!(
            parse("mcp-server-time==2025.9.25").unwrap(),
            ("mcp-server-time".to_owned(), Some("2025.9.25".to_owned()))
        );
        for bad in ["--index-url=x", "../x", "x>=1", "x==", "x==1 ; os", "git+https://x", "a b", "x[extra]"] {
            assert!(parse(bad).is_err(), "{bad}");
        }
        assert_eq!(normalize("Mcp_Server..Time"), "mcp-server-time");
    }
}

//! npm packages: resolve a reference to one exact version with `npm view`, install it with
//! lifecycle scripts off into its own directory, compare the installed integrity with the
//! registry's, and run `npm audit signatures` there.
//!
//! The install happens in a `.partial-*` directory that is renamed into place only once every
//! check passed; a refusal removes it, so nothing refused is left installed. npm's own
//! configuration applies (registry, proxy, cache), from `npm_config_*` variables or `.npmrc`.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, Result, bail};
use serde_json::Value;

use super::{Check, CheckStatus};

/// An exact version the registry resolved a reference to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolved {
    pub name: String,
    pub version: String,
    pub integrity: String,
    pub tarball: String,
}

/// A package installed and checked.
#[derive(Debug, Clone)]
pub struct Installed {
    pub dir: PathBuf,
    /// The entry point, relative to `dir`.
    pub bin: String,
    pub signatures: Check,
    pub provenance: Check,
    /// Whether this install made `dir` (else the same version was there already).
    pub fresh: bool,
}

/// `name[@range]` → the name and the range (`latest` when none).
pub fn parse(reference: &str) -> Result<(String, String)> {
    let (name, range) = match reference.strip_prefix('@') {
        Some(rest) => match rest.split_once('@') {
            Some((name, range)) => (format!("@{name}"), range),
            None => (reference.to_owned(), ""),
        },
        None => match reference.split_once('@') {
            Some((name, range)) => (name.to_owned(), range),
            None => (reference.to_owned(), ""),
        },
    };
    check_name(&name)?;
    let range = if range.is_empty() { "latest" } else { range };
    if range.starts_with('-') || range.chars().any(char::is_whitespace) {
        bail!("`{range}` is not a version or range of `{name}`");
    }
    Ok((name, range.to_owned()))
}

/// npm's rules for a package name, strictly enough that it is never an option or a path.
fn check_name(name: &str) -> Result<()> {
    let bare = match name.strip_prefix('@') {
        Some(scoped) => {
            let Some((scope, rest)) = scoped.split_once('/') else {
                bail!("`{name}` is not an npm package name (a scoped name is `@scope/name`)");
            };
            check_part(name, scope)?;
            rest
        }
        None => name,
    };
    check_part(name, bare)
}

fn check_part(name: &str, part: &str) -> Result<()> {
    let ok = !part.is_empty()
        && part.len() <= 214
        && !part.starts_with(['.', '_', '-'])
        && part.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "-._~".contains(c));
    if !ok {
        bail!("`{name}` is not an npm package name");
    }
    Ok(())
}

/// The `npm` the hub runs: `$CAPABILITIES_NPM`, else `npm` on `PATH`.
fn npm() -> Command {
    let program = std::env::var_os("CAPABILITIES_NPM").unwrap_or_else(|| "npm".into());
    let mut command = Command::new(program);
    command.env("npm_config_update_notifier", "false").env("npm_config_fund", "false");
    command
}

fn run(mut command: Command, what: &str) -> Result<Output> {
    command.output().with_context(|| {
        format!("running npm to {what} (is npm installed? set `CAPABILITIES_NPM` to its path otherwise)")
    })
}

/// npm's error summary from `--json` output or its stderr.
fn npm_error(output: &Output) -> String {
    let stdout = String::from_utf8_lossy(&output.stdout);
    if let Ok(value) = serde_json::from_str::<Value>(&stdout)
        && let Some(summary) = value.pointer("/error/summary").and_then(Value::as_str)
    {
        return summary.to_owned();
    }
    let stderr = String::from_utf8_lossy(&output.stderr);
    let errors = stderr.lines().any(|l| l.starts_with("npm error"));
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| !errors || l.starts_with("npm error"))
        .filter(|l| !l.contains("A complete log of this run"))
        .map(|l| l.trim_start_matches("npm error").trim())
        .filter(|l| !l.is_empty() && !["code ", "syscall ", "errno "].iter().any(|p| l.starts_with(p)))
        .take(2)
        .collect();
    lines.join("; ")
}

/// Resolves `name@range` to one exact version (the highest that matches).
pub fn resolve(name: &str, range: &str) -> Result<Resolved> {
    let mut command = npm();
    command.args(["view", "--json", "--fetch-retries=1"]).arg(format!("{name}@{range}")).args([
        "name",
        "version",
        "dist.integrity",
        "dist.tarball",
    ]);
    let output = run(command, "resolve the version")?;
    if !output.status.success() {
        bail!("npm cannot resolve `{name}@{range}`: {}", npm_error(&output));
    }
    let value: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    let last = match &value {
        Value::Array(items) => items.last().cloned().unwrap_or(Value::Null),
        other => other.clone(),
    };
    let field = |key: &str| last.get(key).and_then(Value::as_str).unwrap_or("").to_owned();
    let resolved = Resolved {
        name: field("name"),
        version: field("version"),
        integrity: field("dist.integrity"),
        tarball: field("dist.tarball"),
    };
    if resolved.version.is_empty() {
        bail!("the registry has no version of `{name}` matching `{range}`");
    }
    if resolved.name != name {
        bail!("the registry answered `{}` for `{name}`; nothing was installed", resolved.name);
    }
    let exact = resolved.version.chars().all(|c| c.is_ascii_alphanumeric() || ".+-".contains(c));
    if !exact || resolved.version.starts_with(['-', '.']) {
        bail!("the registry answered a version `{}` that is not a version", resolved.version);
    }
    if !resolved.integrity.starts_with("sha512-") {
        bail!(
            "the registry published no sha512 integrity for `{name}@{}` (it said `{}`); the hub installs only what it can check",
            resolved.version,
            resolved.integrity
        );
    }
    Ok(resolved)
}

/// The newest version the registry tags `latest`.
pub fn latest(name: &str) -> Result<String> {
    check_name(name)?;
    let mut command = npm();
    command.args(["view", "--json", "--fetch-retries=1"]).arg(format!("{name}@latest")).arg("version");
    let output = run(command, "look up the latest version")?;
    if !output.status.success() {
        bail!("npm cannot look up `{name}`: {}", npm_error(&output));
    }
    let value: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    value.as_str().map(str::to_owned).context("npm answered no version")
}

/// Installs `resolved` into `dir` (its final place): scripts off, then the checks. A refusal
/// leaves nothing behind. When `dir` holds the same version already (another source runs it),
/// its integrity is checked and it is reused.
pub fn install(resolved: &Resolved, dir: &Path) -> Result<Installed> {
    let parent = dir.parent().context("a package directory has a parent")?;
    super::create_private_dirs(parent)?;
    if dir.is_dir() {
        check_integrity(dir, resolved)?;
        let (signatures, provenance) = audit_signatures(dir)?;
        let bin = entry_point(dir, &resolved.name)?;
        return Ok(Installed { dir: dir.to_owned(), bin, signatures, provenance, fresh: false });
    }
    let installed = super::install_whole(dir, |partial| install_into(resolved, partial))?;
    let (bin, signatures, provenance) = installed;
    Ok(Installed { dir: dir.to_owned(), bin, signatures, provenance, fresh: true })
}

fn install_into(resolved: &Resolved, prefix: &Path) -> Result<(String, Check, Check)> {
    // A package.json of its own, so npm never walks up to another project.
    std::fs::write(prefix.join("package.json"), b"{\"private\":true}\n")
        .context("writing the install's package.json")?;
    let mut command = npm();
    command
        .args([
            "install",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--save-exact",
            "--no-bin-links",
            "--fetch-retries=1",
            "--prefix",
        ])
        .arg(prefix)
        .arg(format!("{}@{}", resolved.name, resolved.version))
        .current_dir(prefix);
    let output = run(command, "install the package")?;
    if !output.status.success() {
        let error = npm_error(&output);
        let stderr = String::from_utf8_lossy(&output.stderr);
        if stderr.contains("EINTEGRITY") || stderr.contains("integrity checksum failed") {
            bail!(
                "refused `{}@{}`: the tarball does not match the integrity the registry published ({error}); nothing was installed",
                resolved.name,
                resolved.version
            );
        }
        bail!(
            "npm could not install `{}@{}`: {error}; nothing was installed",
            resolved.name,
            resolved.version
        );
    }
    check_integrity(prefix, resolved)?;
    let (signatures, provenance) = audit_signatures(prefix)?;
    let bin = entry_point(prefix, &resolved.name)?;
    Ok((bin, signatures, provenance))
}

/// The integrity npm recorded for the installed package must be the one the registry
/// published when the version was resolved.
fn check_integrity(prefix: &Path, resolved: &Resolved) -> Result<()> {
    let lock_path = prefix.join("package-lock.json");
    let text = std::fs::read(&lock_path).with_context(|| format!("reading {}", lock_path.display()))?;
    let lock: Value = serde_json::from_slice(&text).context("npm's package-lock.json is not JSON")?;
    let entry = lock.pointer(&format!("/packages/node_modules~1{}", resolved.name.replace('/', "~1")));
    let installed = entry.and_then(|e| e.get("integrity")).and_then(Value::as_str).unwrap_or("");
    let version = entry.and_then(|e| e.get("version")).and_then(Value::as_str).unwrap_or("");
    if version != resolved.version || installed != resolved.integrity {
        bail!(
            "refused `{}@{}`: installed {version} with integrity `{installed}`, the registry published `{}`; nothing was installed",
            resolved.name,
            resolved.version,
            resolved.integrity
        );
    }
    Ok(())
}

/// `npm audit signatures` in the install's directory: registry signatures and provenance
/// attestations. Invalid or missing signatures from a registry that publishes keys refuse the
/// package; a registry (or mirror) with nothing to verify against is recorded as such.
fn audit_signatures(prefix: &Path) -> Result<(Check, Check)> {
    let mut command = npm();
    command
        .args(["audit", "signatures", "--fetch-retries=0", "--fetch-timeout=20000", "--prefix"])
        .arg(prefix)
        .current_dir(prefix);
    let output = run(command, "verify the signatures")?;
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let said: Vec<&str> = stdout.lines().map(str::trim).filter(|l| !l.is_empty()).collect();
    if output.status.success() {
        let signed = said.iter().any(|l| l.contains("verified registry signature"));
        let attested = said.iter().find(|l| l.contains("verified attestation"));
        let signatures = Check {
            status: if signed { CheckStatus::Verified } else { CheckStatus::Unavailable },
            detail: said.join("; "),
        };
        let provenance = match attested {
            Some(line) => Check { status: CheckStatus::Verified, detail: (*line).to_owned() },
            None => Check {
                status: CheckStatus::None,
                detail: "npm found no provenance attestation to verify".to_owned(),
            },
        };
        return Ok((signatures, provenance));
    }
    let failed = said.iter().any(|l| {
        l.contains("invalid registry signature")
            || l.contains("missing registry signature")
            || l.contains("invalid attestation")
    });
    if failed {
        bail!("refused: `npm audit signatures` failed: {}; nothing was installed", said.join("; "));
    }
    let reason = npm_error(&output);
    let detail = format!("npm could not verify anything: {reason}");
    let unavailable = Check { status: CheckStatus::Unavailable, detail: detail.clone() };
    Ok((unavailable.clone(), Check { status: CheckStatus::Unavailable, detail }))
}

/// The package's entry point (its `bin`): the one named like the package, else the only one.
fn entry_point(prefix: &Path, name: &str) -> Result<String> {
    let package_json = prefix.join("node_modules").join(name).join("package.json");
    let text = std::fs::read(&package_json).with_context(|| format!("reading {}", package_json.display()))?;
    let manifest: Value = serde_json::from_slice(&text).context("the package's package.json is not JSON")?;
    let short = name.rsplit('/').next().unwrap_or(name);
    let bin = match manifest.get("bin") {
        Some(Value::String(path)) => Some(path.clone()),
        Some(Value::Object(bins)) => bins
            .get(short)
            .or_else(|| if bins.len() == 1 { bins.values().next() } else { None })
            .or_else(|| bins.iter().find(|(k, _)| k.contains("mcp")).map(|(_, v)| v))
            .and_then(Value::as_str)
            .map(str::to_owned),
        _ => None,
    };
    let Some(bin) = bin else {
        bail!("`{name}` has no `bin` to run: it is not a stdio MCP server package; nothing was installed");
    };
    let relative = Path::new("node_modules").join(name).join(bin.trim_start_matches("./"));
    if relative.components().any(|c| matches!(c, std::path::Component::ParentDir)) {
        bail!("`{name}`'s `bin` points outside the package; nothing was installed");
    }
    if !prefix.join(&relative).is_file() {
        bail!("`{name}`'s `bin` `{bin}` is not in the package; nothing was installed");
    }
    Ok(relative.to_string_lossy().into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_parse_to_a_name_and_a_range() {
        let p = |r: &str| parse(r).map_err(|e| e.to_string());
        assert_eq!(p("@modelcontextprotocol/server-memory").unwrap().1, "latest");
        assert_eq!(
            p("@modelcontextprotocol/server-memory@2026.8.31").unwrap(),
            ("@modelcontextprotocol/server-memory".to_owned(), "2026.8.31".to_owned())
        );
        assert_eq!(p("left-pad@^1").unwrap(), ("left-pad".to_owned(), "^1".to_owned()));
        for bad in ["--registry=x", "../x", "@scope", "Caps", "a b", "x@-y"] {
            assert!(p(bad).is_err(), "{bad}");
        }
    }
}

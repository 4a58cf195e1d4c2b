//! Verified installs: packages the hub installs itself, at exact versions, into
//! `<store>/packages/<registry>/<name>@<version>/`, and the lock file that pins them.
//!
//! `packages.lock.json` holds, per source namespace, the registry, the exact version, the
//! integrity the registry published, and what the signature and provenance checks found. It is
//! written atomically under its record lock; `hub refresh` reads it to report newer versions and
//! `hub runs show --receipts` to name what answered each call. Nothing here upgrades a package.
//!
//! `npm.rs` drives the person's own `npm` (lifecycle scripts off, exact versions, integrity
//! compared with what the registry published, `npm audit signatures`).

pub mod npm;
pub mod pypi;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};

use crate::config::{read_json, write_json};
use crate::store::Store;

/// The lock file, relative to the store.
pub const LOCK: &str = "packages.lock.json";

/// `packages.lock.json`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackageLock {
    /// Per source namespace, the package it runs.
    #[serde(default)]
    pub packages: BTreeMap<String, LockedPackage>,
}

/// One installed package, as the lock pins it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockedPackage {
    /// `npm` (PyPI is not installed this way yet).
    pub registry: String,
    pub name: String,
    pub version: String,
    /// The registry's integrity string (`sha512-…`), checked against what was installed.
    pub integrity: String,
    /// Where the tarball came from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub tarball: String,
    /// The entry point run with node, relative to the package directory.
    pub bin: String,
    pub signatures: Check,
    pub provenance: Check,
    pub installed_ms: u64,
}

/// What one verification found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Check {
    pub status: CheckStatus,
    /// What the check said, in its words.
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckStatus {
    /// The registry's keys or attestations verified the package.
    Verified,
    /// The registry offered nothing to verify with (no signing keys, no attestations), or the
    /// check could not reach what it needs: nothing was verified, and the lock says so.
    Unavailable,
    /// The package has no provenance attestation (its registry signature may still verify).
    None,
}

impl CheckStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckStatus::Verified => "verified",
            CheckStatus::Unavailable => "unavailable",
            CheckStatus::None => "none",
        }
    }
}

impl LockedPackage {
    /// `npm:@scope/name@1.2.3`.
    pub fn reference(&self) -> String {
        format!("{}:{}@{}", self.registry, self.name, self.version)
    }
}

/// The lock file; empty when there is none.
pub fn load(store: &Store) -> Result<PackageLock> {
    Ok(read_json::<PackageLock>(store, LOCK)?.unwrap_or_default())
}

/// Sets (or with `None` removes) the package of `namespace`, under the lock file's lock.
pub fn set(store: &Store, namespace: &str, package: Option<LockedPackage>) -> Result<()> {
    let _lock = store.lock("packages-lock").map_err(|e| anyhow::anyhow!("{e}"))?;
    let mut lock = load(store)?;
    match package {
        Some(package) => {
            lock.packages.insert(namespace.to_owned(), package);
        }
        None => {
            if lock.packages.remove(namespace).is_none() {
                return Ok(());
            }
        }
    }
    write_json(store, LOCK, &lock)
}

/// The directory a package version is installed in: `packages/npm/@scope+name@1.2.3`.
pub fn package_dir(store_root: &Path, registry: &str, name: &str, version: &str) -> PathBuf {
    let name = if registry == "pypi" { pypi::normalize(name) } else { name.replace('/', "+") };
    store_root.join("packages").join(registry).join(format!("{name}@{version}"))
}

/// The version the installed copy of `locked` says it is: npm's `package.json`, or the
/// `.dist-info` folder pip wrote.
pub fn installed_version(store_root: &Path, locked: &LockedPackage) -> Option<String> {
    let dir = package_dir(store_root, &locked.registry, &locked.name, &locked.version);
    if locked.registry == "pypi" {
        let wanted = pypi::normalize(&locked.name);
        return std::fs::read_dir(&dir).ok()?.flatten().find_map(|entry| {
            let name = entry.file_name().to_string_lossy().into_owned();
            let (dist, version) = name.strip_suffix(".dist-info")?.rsplit_once('-')?;
            (pypi::normalize(dist) == wanted).then(|| version.to_owned())
        });
    }
    let manifest = dir.join("node_modules").join(&locked.name).join("package.json");
    let bytes = std::fs::read(manifest).ok()?;
    let value: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    value.get("version")?.as_str().map(str::to_owned)
}

/// Creates `dir` and any missing parents with mode 700, as every directory of the store.
pub fn create_private_dirs(dir: &Path) -> Result<()> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))
}

/// Installs into a fresh `.partial-*` folder beside `dir` with `install`, then renames it to
/// `dir`; on any failure the partial folder is removed, so nothing refused is left installed.
pub fn install_whole<T>(dir: &Path, install: impl FnOnce(&Path) -> Result<T>) -> Result<T> {
    let parent = dir.parent().context("a package directory has a parent")?;
    let suffix = hex::encode(crate::platform::random_bytes::<6>()?);
    let partial = parent.join(format!(".partial-{suffix}"));
    let result = create_private_dirs(&partial).and_then(|()| install(&partial));
    let installed = match result {
        Ok(installed) => installed,
        Err(err) => {
            let _ = std::fs::remove_dir_all(&partial);
            return Err(err);
        }
    };
    if let Err(err) = std::fs::rename(&partial, dir) {
        let _ = std::fs::remove_dir_all(&partial);
        return Err(err).with_context(|| format!("moving the package into {}", dir.display()));
    }
    Ok(installed)
}

/// The private writable directory of an isolated source.
pub fn state_dir(store_root: &Path, namespace: &str) -> PathBuf {
    store_root.join("state").join(namespace)
}

//! How this binary is installed: the version line `--version` prints, and the command a
//! harness entry runs, chosen so the entry keeps working when the binary is upgraded or moved.
//!
//! Started by the npm launcher (`npm/cli/bin/capabilities.js`), which names itself in
//! `CAPABILITIES_LAUNCHER`, an entry runs the launcher: npm puts the next version's binary
//! behind the same path. Otherwise it runs `<hub>/bin/capabilities`, a symlink to the binary
//! that last ran `hub connect`, `hub init` or `hub serve`, so `cargo install` over the old
//! binary, or the binary moved and run once from its new place, leaves every entry working.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

/// `0.1.0 (<commit>[, dirty])`, from `build.rs`; the same for two builds of one tree.
pub const VERSION: &str = concat!(env!("CARGO_PKG_VERSION"), " (", env!("CAPABILITIES_BUILD"), ")");

/// Set by the npm launcher to its own path when it starts this binary.
pub const LAUNCHER_ENV: &str = "CAPABILITIES_LAUNCHER";

/// The hub's own name for the current binary: `<hub>/bin/capabilities`, absolute, since a
/// harness starts it from a folder of its own.
pub fn stable_path(hub: &Path) -> PathBuf {
    std::path::absolute(hub).unwrap_or_else(|_| hub.to_owned()).join("bin").join("capabilities")
}

/// The npm launcher that started this binary, when it is an install that lasts. npx runs
/// packages from a cache it may clear at any time, so a launcher there is passed over.
pub fn launcher() -> Option<PathBuf> {
    let path = PathBuf::from(std::env::var_os(LAUNCHER_ENV)?);
    if !path.is_absolute() || !path.is_file() || path.components().any(|c| c.as_os_str() == "_npx") {
        return None;
    }
    Some(path)
}

/// The command a harness entry runs: the npm launcher, else the hub's stable path.
pub fn entry_command(hub: &Path) -> PathBuf {
    launcher().unwrap_or_else(|| stable_path(hub))
}

/// This binary's real path, symlinks resolved.
pub fn current_binary() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("finding the path of this binary")?;
    let exe = exe.canonicalize().with_context(|| format!("resolving {}", exe.display()))?;
    if !exe.is_file() {
        bail!("{} is not a file; run this from the installed `capabilities` binary", exe.display());
    }
    Ok(exe)
}

/// Points `<hub>/bin/capabilities` at this binary, replacing the link in one rename, and
/// returns the link. Nothing changes when it points there already, or when this binary is
/// the file at that path (a copy put there by hand).
pub fn refresh_link(hub: &Path) -> Result<PathBuf> {
    let exe = current_binary()?;
    let link = stable_path(hub);
    if std::fs::read_link(&link).ok().as_deref() == Some(exe.as_path()) || link == exe {
        return Ok(link);
    }
    let dir = link.parent().expect("the link sits in a folder");
    // Private like the rest of the hub's folders (doctor checks them).
    std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let tmp = dir.join(format!(".capabilities.{}.tmp", std::process::id()));
    let _ = std::fs::remove_file(&tmp);
    std::os::unix::fs::symlink(&exe, &tmp).with_context(|| format!("linking {}", tmp.display()))?;
    std::fs::rename(&tmp, &link).map_err(|err| {
        let _ = std::fs::remove_file(&tmp);
        anyhow::Error::new(err).context(format!("replacing {}", link.display()))
    })?;
    Ok(link)
}

/// [`refresh_link`] for commands whose work does not depend on it: a failure is a warning.
pub fn refresh_link_or_warn(hub: &Path) {
    if let Err(err) = refresh_link(hub) {
        eprintln!(
            "warning: could not point {} at this binary: {err:#}; harness entries that run it may fail",
            stable_path(hub).display()
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_link_follows_the_binary_and_is_kept_when_current() {
        let dir = tempfile::tempdir().unwrap();
        let hub = dir.path().join("hub");
        let link = refresh_link(&hub).unwrap();
        assert_eq!(link, hub.join("bin/capabilities"));
        assert_eq!(std::fs::read_link(&link).unwrap(), current_binary().unwrap());
        // A link left pointing elsewhere (the binary moved) is pointed back.
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink("/nonexistent/capabilities", &link).unwrap();
        refresh_link(&hub).unwrap();
        assert_eq!(std::fs::read_link(&link).unwrap(), current_binary().unwrap());
        let left: Vec<_> =
            std::fs::read_dir(hub.join("bin")).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(left, ["capabilities"], "no temporary link left behind");
    }

    #[test]
    fn the_version_names_the_build() {
        assert!(VERSION.starts_with(concat!(env!("CARGO_PKG_VERSION"), " (")), "{VERSION}");
        assert!(VERSION.ends_with(')') && VERSION.len() > 10, "{VERSION}");
    }
}

//! Names the build for `capabilities --version`: `CAPABILITIES_BUILD` is the git commit the
//! binary was built from, with `, dirty` when a tracked file differed from it. Nothing that
//! changes from one build of the same tree to the next (no time, no host name) goes in, so two
//! builds of one commit say the same. A packager may set `CAPABILITIES_BUILD` itself; a tree
//! without its own `.git` (a crate tarball, a vendored copy inside another repository) says
//! `no git commit recorded`.

use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    println!("cargo::rerun-if-env-changed=CAPABILITIES_BUILD");
    let manifest = PathBuf::from(std::env::var_os("CARGO_MANIFEST_DIR").expect("cargo sets it"));
    let build = match std::env::var("CAPABILITIES_BUILD") {
        Ok(given) if !given.trim().is_empty() => given.trim().to_owned(),
        _ => from_git(&manifest).unwrap_or_else(|| "no git commit recorded".to_owned()),
    };
    println!("cargo::rustc-env=CAPABILITIES_BUILD={build}");
}

/// `<commit>` or `<commit>, dirty`, when `manifest`'s parent is the top of a git work tree.
fn from_git(manifest: &Path) -> Option<String> {
    let workspace = manifest.parent()?;
    let top = git(workspace, &["rev-parse", "--show-toplevel"])?;
    // Only this repository's own commit: a copy inside someone else's repository is not it.
    if Path::new(&top).canonicalize().ok()? != workspace.canonicalize().ok()? {
        return None;
    }
    let commit = git(workspace, &["rev-parse", "--short=12", "HEAD"])?;
    // Run again when HEAD moves or the branch it names moves. Not on every edit: that would
    // rebuild the crate for a changed test file, so a dev build's `dirty` is as of the last
    // commit or checkout; `cargo xtask dist` passes CAPABILITIES_BUILD, exact, to its builds,
    // and `cargo install` builds afresh.
    let git_dir = PathBuf::from(git(workspace, &["rev-parse", "--absolute-git-dir"])?);
    let mut watched = vec![git_dir.join("HEAD"), git_dir.join("packed-refs")];
    if let Some(branch) = git(workspace, &["symbolic-ref", "-q", "HEAD"]) {
        watched.push(git_dir.join(branch));
    }
    for path in watched.iter().filter(|p| p.exists()) {
        println!("cargo::rerun-if-changed={}", path.display());
    }
    // Tracked files only: cargo leaves a `.cargo-ok` in its checkouts of a git dependency. Without
    // optional locks, git leaves the index as it is for whoever else works in the tree.
    let status = git(workspace, &["--no-optional-locks", "status", "--porcelain", "--untracked-files=no"])?;
    Some(if status.is_empty() { commit } else { format!("{commit}, dirty") })
}

/// Trimmed stdout of a git command that succeeded; `None` without git or outside a work tree.
fn git(dir: &Path, args: &[&str]) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

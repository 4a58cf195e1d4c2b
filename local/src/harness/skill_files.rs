//! Skill folders the hub places in harnesses' skill folders, as a backup set records them: what
//! was at the skill's path before (copied into the set), what the hub left there (each file with
//! its sha256, or a link), and the folders it created to hold it. Also reading such a folder back
//! to compare, writing one whole (a temporary folder beside it, renamed into place by
//! [`super::backup::BackupSet::change_skills`]), and undoing one for `rollback`.

use std::collections::BTreeMap;
use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt, symlink};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

use super::backup::sha256;
use crate::platform::random_bytes;

/// The most entries [`read_tree`] reads under one skill's path before giving up.
const MAX_ENTRIES: usize = 4096;

/// What is at a skill's path in a harness folder.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", tag = "kind")]
pub enum Tree {
    /// A folder of files, by `/`-separated path inside it.
    Files { files: BTreeMap<String, FileMeta> },
    /// A symlink, and where it points.
    Link { target: PathBuf },
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileMeta {
    /// Hex; a link inside the folder is `symlink:<target>`.
    pub sha256: String,
    pub mode: u32,
}

impl Tree {
    /// The same files with the same bytes (modes aside), or the same link.
    pub fn same(&self, other: &Tree) -> bool {
        match (self, other) {
            (Tree::Files { files: a }, Tree::Files { files: b }) => {
                a.len() == b.len()
                    && a.iter().zip(b).all(|((pa, ma), (pb, mb))| pa == pb && ma.sha256 == mb.sha256)
            }
            (Tree::Link { target: a }, Tree::Link { target: b }) => a == b,
            _ => false,
        }
    }

    /// What changed from `was` to `self`, for messages (`SKILL.md edited`, `notes.md added`).
    pub fn changes_from(&self, was: &Tree) -> String {
        match (self, was) {
            (Tree::Files { files: now }, Tree::Files { files: was }) => {
                let mut what = Vec::new();
                for (path, meta) in now {
                    match was.get(path) {
                        None => what.push(format!("{path} added")),
                        Some(old) if old.sha256 != meta.sha256 => what.push(format!("{path} edited")),
                        Some(_) => {}
                    }
                }
                what.extend(was.keys().filter(|p| !now.contains_key(*p)).map(|p| format!("{p} removed")));
                what.join(", ")
            }
            (Tree::Link { target }, _) => format!("it is now a link to {}", target.display()),
            (Tree::Files { .. }, Tree::Link { .. }) => "the link was replaced by a folder".to_owned(),
        }
    }
}

/// One skill folder a set changed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SkillEntry {
    pub harness: String,
    pub skill: String,
    /// The skill's folder inside the harness's skill folder.
    pub path: PathBuf,
    /// What was there before (`None`: nothing); a folder's files are copied under the set's
    /// `copy` folder.
    pub before: Option<Tree>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub copy: Option<String>,
    /// What the hub left there; `None` when it removed the skill.
    pub written: Option<Tree>,
    /// Folders the hub created to hold it, outermost first; rollback removes each once empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<PathBuf>,
}

/// One file of a skill to place.
#[derive(Debug, Clone, Copy)]
pub struct NewFile<'a> {
    /// `/`-separated, inside the skill's folder (checked by the skills scanner).
    pub path: &'a str,
    pub bytes: &'a [u8],
    pub sha256: &'a str,
    pub executable: bool,
}

/// What to place at a skill's path.
#[derive(Debug, Clone)]
pub enum New<'a> {
    Files(Vec<NewFile<'a>>),
    Link(PathBuf),
}

impl New<'_> {
    pub fn tree(&self) -> Tree {
        match self {
            New::Files(files) => Tree::Files {
                files: files
                    .iter()
                    .map(|f| {
                        let mode = if f.executable { 0o755 } else { 0o644 };
                        (f.path.to_owned(), FileMeta { sha256: f.sha256.to_owned(), mode })
                    })
                    .collect(),
            },
            New::Link(target) => Tree::Link { target: target.clone() },
        }
    }
}

/// What is at `path` now: `None` when nothing is.
pub fn read_tree(path: &Path) -> Result<Option<Tree>> {
    let meta = match fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
    };
    if meta.file_type().is_symlink() {
        let target = fs::read_link(path).with_context(|| format!("reading {}", path.display()))?;
        return Ok(Some(Tree::Link { target }));
    }
    let mut files = BTreeMap::new();
    if meta.is_dir() {
        walk(path, "", &mut files)?;
    } else {
        // A file where a skill's folder would be: never the hub's, so it only has to differ.
        files.insert(String::new(), FileMeta { sha256: String::new(), mode: 0 });
    }
    Ok(Some(Tree::Files { files }))
}

fn walk(dir: &Path, prefix: &str, files: &mut BTreeMap<String, FileMeta>) -> Result<()> {
    for entry in fs::read_dir(dir).with_context(|| format!("reading {}", dir.display()))? {
        let entry = entry.with_context(|| format!("reading {}", dir.display()))?;
        if files.len() >= MAX_ENTRIES {
            bail!(
                "{} holds more than {MAX_ENTRIES} files: move it aside to let the hub place a skill there",
                dir.display()
            );
        }
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel = if prefix.is_empty() { name } else { format!("{prefix}/{name}") };
        let path = entry.path();
        let meta = fs::symlink_metadata(&path).with_context(|| format!("reading {}", path.display()))?;
        let mode = meta.permissions().mode() & 0o7777;
        if meta.file_type().is_symlink() {
            let target = fs::read_link(&path).with_context(|| format!("reading {}", path.display()))?;
            files.insert(rel, FileMeta { sha256: format!("symlink:{}", target.display()), mode });
        } else if meta.is_dir() {
            walk(&path, &rel, files)?;
        } else {
            let bytes = fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            files.insert(rel, FileMeta { sha256: sha256(&bytes), mode });
        }
    }
    Ok(())
}

/// A name beside `path` in its folder, hidden, for a folder on its way in or out.
pub fn beside(path: &Path, what: &str) -> Result<PathBuf> {
    let name = path.file_name().and_then(|n| n.to_str()).context("a skill's path names a folder")?;
    let nonce: [u8; 6] = random_bytes()?;
    Ok(path.with_file_name(format!(".capabilities-{what}-{name}-{}", hex::encode(nonce))))
}

/// Refuses a skill folder (or, while it does not exist, the nearest folder above it) that the
/// person made read-only, as `connect` refuses read-only config files, before anything is
/// written; the error names what to do.
pub fn check_writable(dir: &Path) -> Result<()> {
    let Some(existing) = dir.ancestors().find(|d| fs::symlink_metadata(d).is_ok()) else { return Ok(()) };
    let meta = fs::metadata(existing).with_context(|| format!("reading {}", existing.display()))?;
    if meta.permissions().mode() & 0o200 == 0 {
        bail!(
            "{} is read-only: make it writable (`chmod u+w {}`) so the hub can place skills there, or \
             leave this harness out with `--client`; nothing was placed there",
            existing.display(),
            existing.display()
        );
    }
    Ok(())
}

/// Writes `new` at `tmp` (a name from [`beside`]); on an error, removes what it wrote.
pub fn write_new(tmp: &Path, new: &New) -> Result<()> {
    let result = match new {
        New::Link(target) => symlink(target, tmp).map_err(anyhow::Error::from),
        New::Files(files) => write_files(
            tmp,
            files.iter().map(|f| (f.path, f.bytes, if f.executable { 0o755 } else { 0o644 })),
        ),
    };
    if let Err(err) = result {
        remove_tree(tmp);
        let parent = tmp.parent().unwrap_or(tmp);
        if err.downcast_ref::<io::Error>().is_some_and(|e| e.kind() == io::ErrorKind::PermissionDenied) {
            bail!(
                "{} is read-only: make it writable (`chmod u+w {}`) so the hub can place skills there, \
                 or leave this harness out with `--client`; nothing was placed there",
                parent.display(),
                parent.display()
            );
        }
        return Err(err)
            .with_context(|| format!("placing a skill in {} (nothing was placed there)", parent.display()));
    }
    Ok(())
}

/// Writes files (path, bytes, mode) under a new folder `dir`.
fn write_files<'a>(dir: &Path, files: impl Iterator<Item = (&'a str, &'a [u8], u32)>) -> Result<()> {
    fs::create_dir(dir)?;
    for (rel, bytes, mode) in files {
        let path = dir.join(rel);
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        let mut out = OpenOptions::new().write(true).create_new(true).mode(mode).open(&path)?;
        out.write_all(bytes)?;
        // The mode asked for, whatever the umask.
        fs::set_permissions(&path, fs::Permissions::from_mode(mode))?;
    }
    Ok(())
}

/// Copies the folder at `path`, which holds `tree`, under `copy`; fails when a file there is not
/// what `tree` says (it changed meanwhile).
pub fn copy_tree(path: &Path, tree: &Tree, copy: &Path) -> Result<()> {
    let Tree::Files { files } = tree else { return Ok(()) };
    fs::create_dir_all(copy).with_context(|| format!("creating {}", copy.display()))?;
    for (rel, meta) in files {
        let bytes =
            fs::read(path.join(rel)).with_context(|| format!("reading {}", path.join(rel).display()))?;
        if sha256(&bytes) != meta.sha256 {
            bail!("{} changed while the hub was copying it", path.join(rel).display());
        }
        let to = copy.join(rel);
        if let Some(parent) = to.parent() {
            fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        crate::store::write_atomic(&to, &bytes)?;
    }
    Ok(())
}

/// Writes `tree` at `tmp` again from its copy under `copy` (or as a link).
pub fn restore_new(tmp: &Path, tree: &Tree, copy: Option<&Path>) -> Result<()> {
    match tree {
        Tree::Link { target } => symlink(target, tmp).with_context(|| format!("creating {}", tmp.display())),
        Tree::Files { files } => {
            let copy = copy.context("the backup set has no copy of the skill's files")?;
            let mut read = Vec::new();
            for (rel, meta) in files {
                let bytes = fs::read(copy.join(rel))
                    .with_context(|| format!("reading the backup {}", copy.join(rel).display()))?;
                read.push((rel.as_str(), bytes, meta.mode));
            }
            let result =
                write_files(tmp, read.iter().map(|(rel, bytes, mode)| (*rel, bytes.as_slice(), *mode)));
            if result.is_err() {
                remove_tree(tmp);
            }
            result.with_context(|| format!("writing {}", tmp.display()))
        }
    }
}

/// Removes a folder (or link) the hub made, ignoring what is already gone.
pub fn remove_tree(path: &Path) {
    match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => {
            let _ = fs::remove_dir_all(path);
        }
        Ok(_) => {
            let _ = fs::remove_file(path);
        }
        Err(_) => {}
    }
}

/// Removes what the hub placed at `path` as `written`: each file still holding the bytes it
/// wrote, then each folder left empty. `true` when nothing is left at `path`.
pub fn remove_placed(path: &Path, written: &Tree) -> Result<bool> {
    match written {
        Tree::Link { .. } => {
            fs::remove_file(path).with_context(|| format!("removing {}", path.display()))?;
            Ok(true)
        }
        Tree::Files { files } => {
            let mut dirs: Vec<PathBuf> = Vec::new();
            for (rel, meta) in files {
                let file = path.join(rel);
                if fs::read(&file).is_ok_and(|bytes| sha256(&bytes) == meta.sha256) {
                    fs::remove_file(&file).with_context(|| format!("removing {}", file.display()))?;
                }
                let mut parent = file.parent();
                while let Some(dir) = parent.filter(|d| d.starts_with(path) && *d != path) {
                    dirs.push(dir.to_owned());
                    parent = dir.parent();
                }
            }
            dirs.sort_by_key(|d| std::cmp::Reverse(d.components().count()));
            dirs.dedup();
            for dir in dirs {
                let _ = fs::remove_dir(dir);
            }
            Ok(fs::remove_dir(path).is_ok())
        }
    }
}

/// The folders above `dir` (itself included) that do not exist yet, outermost first.
pub fn missing_dirs(dir: &Path) -> Vec<PathBuf> {
    let mut missing: Vec<PathBuf> =
        dir.ancestors().take_while(|d| fs::symlink_metadata(d).is_err()).map(Path::to_owned).collect();
    missing.reverse();
    missing
}

/// Removes the folders in `dirs` (outermost first) that are empty, innermost first.
pub fn remove_empty_dirs(dirs: &[PathBuf]) {
    for dir in dirs.iter().rev() {
        let _ = fs::remove_dir(dir);
    }
}

/// What rollback finds at an entry's path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// What the hub left there: it can be undone.
    AsWritten,
    /// Nothing, where the hub had put a skill that was not there before: already as it was.
    AlreadyGone,
    /// Something else: why, for the message.
    Changed(String),
}

/// Compares what is at the entry's path with what the hub left there.
pub fn check(entry: &SkillEntry) -> Result<Found> {
    let current = read_tree(&entry.path)?;
    Ok(match (&entry.written, current) {
        (Some(written), Some(now)) if now.same(written) => Found::AsWritten,
        (Some(written), Some(now)) => Found::Changed(format!(
            "the skill `{}` was edited since the hub placed it ({})",
            entry.skill,
            now.changes_from(written)
        )),
        (Some(_), None) if entry.before.is_none() => Found::AlreadyGone,
        (Some(_), None) => {
            Found::Changed(format!("the skill `{}` was removed since the hub placed it", entry.skill))
        }
        (None, None) => Found::AsWritten,
        (None, Some(_)) => Found::Changed(format!(
            "something was put where the hub removed the skill `{}` from",
            entry.skill
        )),
    })
}

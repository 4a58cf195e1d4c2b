//! The hub's skill library: one folder per skill under `skills/<name>/` in the store, and
//! `skills.lock.json` beside them with a sha256 per file and a digest per skill, so a skill whose
//! files changed on disk is seen as changed.
//!
//! A skill is installed whole or not at all: its files are checked and read first
//! ([`scan::scan`]), written into a temporary folder inside `skills/`, synced, and renamed into
//! place; the lock file is then written atomically. Every change to the library holds the
//! store's `skills` lock, so two hub processes never interleave. [`place`] puts the library into
//! each harness's own skill folder.

pub mod front_matter;
pub mod place;
pub mod scan;

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};

pub use self::scan::{Scanned, scan};
use crate::platform::{now_ms, random_bytes};
use crate::store::{RecordLock, Store, write_atomic};

/// The lock file's name, at the store's root.
pub const LOCK_FILE: &str = "skills.lock.json";
const LOCK_VERSION: u32 = 1;

/// `skills.lock.json`.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockFile {
    pub version: u32,
    pub skills: BTreeMap<String, LockedSkill>,
}

/// One skill as it was installed.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LockedSkill {
    pub description: String,
    /// `sha256:<hex>` over its files ([`scan::skill_digest`]).
    pub digest: String,
    /// Where it was added from: a folder, or a git URL.
    pub source: String,
    pub added_ms: u64,
    /// Path → sha256 hex.
    pub files: BTreeMap<String, String>,
}

/// How a skill in the library compares with its lock entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Status {
    /// The files on disk are the ones recorded.
    Ok,
    /// The files on disk differ from the lock: which paths, and how.
    Changed(Vec<String>),
    /// The folder is gone (or unreadable: why).
    Missing(String),
    /// A folder under `skills/` with no lock entry.
    Unrecorded,
}

impl Status {
    pub fn word(&self) -> &'static str {
        match self {
            Status::Ok => "ok",
            Status::Changed(_) => "changed",
            Status::Missing(_) => "missing",
            Status::Unrecorded => "unrecorded",
        }
    }
}

/// The library in one store.
pub struct Library<'s> {
    store: &'s Store,
}

/// What [`Library::install`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Installed {
    Added,
    Replaced,
    /// The same files were there already.
    Unchanged,
}

/// Removes a temporary folder when dropped, unless it was renamed away.
struct TempDir(Option<PathBuf>);

impl Drop for TempDir {
    fn drop(&mut self) {
        if let Some(dir) = self.0.take() {
            let _ = fs::remove_dir_all(dir);
        }
    }
}

impl<'s> Library<'s> {
    pub fn new(store: &'s Store) -> Library<'s> {
        Library { store }
    }

    pub fn dir(&self) -> PathBuf {
        self.store.root().join("skills")
    }

    fn lock_path(&self) -> PathBuf {
        self.store.root().join(LOCK_FILE)
    }

    fn guard(&self) -> Result<RecordLock> {
        self.store.lock("skills").map_err(|e| anyhow::anyhow!("taking the skills lock: {e}"))
    }

    /// The lock file; empty when there is none yet.
    pub fn lock(&self) -> Result<LockFile> {
        let path = self.lock_path();
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes).with_context(|| {
                format!(
                    "{} is corrupt: move it aside and add the skills again with `capabilities hub skills add`",
                    path.display()
                )
            }),
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                Ok(LockFile { version: LOCK_VERSION, skills: BTreeMap::new() })
            }
            Err(err) => Err(err).with_context(|| format!("reading {}", path.display())),
        }
    }

    fn write_lock(&self, lock: &LockFile) -> Result<()> {
        write_atomic(&self.lock_path(), &serde_json::to_vec_pretty(lock)?)
    }

    /// Installs a scanned skill as `skills/<name>/`. A skill of that name with other files is
    /// left alone unless `replace`.
    pub fn install(&self, skill: &Scanned, source: &str, replace: bool) -> Result<Installed> {
        let name = skill.name();
        front_matter::check_name(name)?;
        let _guard = self.guard()?;
        self.sweep();
        let mut lock = self.lock()?;
        let target = self.dir().join(name);
        let present = fs::symlink_metadata(&target).is_ok();
        if let Some(old) = lock.skills.get(name)
            && present
            && old.digest == skill.digest
            && self.status_of(name, old) == Status::Ok
        {
            return Ok(Installed::Unchanged);
        }
        if present && !replace {
            bail!(
                "the hub has a skill `{name}` already, with other files: pass `--replace` to put this one in \
                 its place, or `capabilities hub skills remove {name}` first"
            );
        }
        let nonce: [u8; 6] = random_bytes()?;
        let tmp = TempDir(Some(self.dir().join(format!(".tmp-{name}-{}", hex::encode(nonce)))));
        let tmp_path = tmp.0.clone().expect("set above");
        write_tree(&tmp_path, skill).with_context(|| {
            format!("copying the skill `{name}` into the hub (nothing was installed; check the disk and try again)")
        })?;
        let aside = self.dir().join(format!(".old-{name}-{}", hex::encode(nonce)));
        if present {
            fs::rename(&target, &aside)
                .with_context(|| format!("moving the old {} aside", target.display()))?;
        }
        if let Err(err) = fs::rename(&tmp_path, &target) {
            if present {
                let _ = fs::rename(&aside, &target);
            }
            return Err(err).with_context(|| format!("moving the skill into {}", target.display()));
        }
        let mut tmp = tmp;
        tmp.0 = None;
        lock.version = LOCK_VERSION;
        lock.skills.insert(
            name.to_owned(),
            LockedSkill {
                description: skill.front.description.clone(),
                digest: skill.digest.clone(),
                source: source.to_owned(),
                added_ms: now_ms(),
                files: skill.files.iter().map(|f| (f.path.clone(), f.sha256.clone())).collect(),
            },
        );
        if let Err(err) = self.write_lock(&lock) {
            // Put the library back as it was: the old folder, or none.
            let _ = fs::remove_dir_all(&target);
            if present {
                let _ = fs::rename(&aside, &target);
            }
            return Err(err).context("recording the skill in the lock file (nothing was installed)");
        }
        sync_dir(&self.dir());
        if present {
            let _ = fs::remove_dir_all(&aside);
        }
        Ok(if present { Installed::Replaced } else { Installed::Added })
    }

    /// Removes `skills/<name>/` and its lock entry.
    pub fn remove(&self, name: &str) -> Result<()> {
        front_matter::check_name(name)?;
        let _guard = self.guard()?;
        let mut lock = self.lock()?;
        let target = self.dir().join(name);
        let present = fs::symlink_metadata(&target).is_ok();
        if lock.skills.remove(name).is_none() && !present {
            bail!("the hub has no skill `{name}`: `capabilities hub skills list` shows the skills it has");
        }
        let nonce: [u8; 6] = random_bytes()?;
        let aside = self.dir().join(format!(".old-{name}-{}", hex::encode(nonce)));
        if present {
            fs::rename(&target, &aside).with_context(|| format!("removing {}", target.display()))?;
        }
        if let Err(err) = self.write_lock(&lock) {
            if present {
                let _ = fs::rename(&aside, &target);
            }
            return Err(err).context("updating the lock file (the skill was kept)");
        }
        if present {
            fs::remove_dir_all(&aside).with_context(|| format!("deleting {}", aside.display()))?;
        }
        Ok(())
    }

    /// Every skill, recorded or found, with its status, by name.
    pub fn list(&self) -> Result<Vec<(String, Option<LockedSkill>, Status)>> {
        let lock = self.lock()?;
        let mut rows: Vec<(String, Option<LockedSkill>, Status)> = lock
            .skills
            .iter()
            .map(|(name, locked)| (name.clone(), Some(locked.clone()), self.status_of(name, locked)))
            .collect();
        let dir = self.dir();
        let entries = fs::read_dir(&dir).with_context(|| format!("reading {}", dir.display()))?;
        for entry in entries.flatten() {
            let Some(name) = entry.file_name().to_str().map(str::to_owned) else { continue };
            if name.starts_with('.') || lock.skills.contains_key(&name) {
                continue;
            }
            rows.push((name, None, Status::Unrecorded));
        }
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(rows)
    }

    /// One skill: its lock entry, status, and what is on disk now when it reads as a skill.
    pub fn get(&self, name: &str) -> Result<(LockedSkill, Status, Option<Scanned>)> {
        front_matter::check_name(name)?;
        let lock = self.lock()?;
        let Some(locked) = lock.skills.get(name).cloned() else {
            bail!("the hub has no skill `{name}`: `capabilities hub skills list` shows the skills it has");
        };
        let scanned = scan(&self.dir().join(name)).ok();
        let status = self.status_of(name, &locked);
        Ok((locked, status, scanned))
    }

    /// Whether `skills/<name>/` still holds the files its lock entry names.
    pub fn status_of(&self, name: &str, locked: &LockedSkill) -> Status {
        let dir = self.dir().join(name);
        if fs::symlink_metadata(&dir).is_err() {
            return Status::Missing("its folder is gone".into());
        }
        let scanned = match scan(&dir) {
            Ok(scanned) => scanned,
            Err(err) => return Status::Changed(vec![format!("{err:#}")]),
        };
        if scanned.digest == locked.digest {
            return Status::Ok;
        }
        let mut what = Vec::new();
        for file in &scanned.files {
            match locked.files.get(&file.path) {
                None => what.push(format!("{} added", file.path)),
                Some(sha) if *sha != file.sha256 => what.push(format!("{} changed", file.path)),
                Some(_) => {}
            }
        }
        for path in locked.files.keys() {
            if !scanned.files.iter().any(|f| f.path == *path) {
                what.push(format!("{path} removed"));
            }
        }
        Status::Changed(what)
    }

    /// Deletes what an interrupted install or removal left (`.tmp-*`, `.old-*`; clones are
    /// `.clone-*`, made without the lock). Called with the skills lock held, so nothing else is
    /// writing them.
    fn sweep(&self) {
        for entry in fs::read_dir(self.dir()).into_iter().flatten().flatten() {
            let name = entry.file_name();
            let name = name.to_string_lossy();
            if name.starts_with(".tmp-") || name.starts_with(".old-") {
                let _ = fs::remove_dir_all(entry.path());
            }
        }
    }
}

/// Writes a skill's files under `dir` (created, mode 700; files 600, or 700 when executable),
/// each synced.
fn write_tree(dir: &Path, skill: &Scanned) -> Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.mode(0o700);
    builder.create(dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut dirs = vec![dir.to_owned()];
    for file in &skill.files {
        let path = dir.join(&file.path);
        let parent = path.parent().context("a skill file has a folder")?;
        if !parent.exists() {
            builder
                .recursive(true)
                .create(parent)
                .with_context(|| format!("creating {}", parent.display()))?;
            dirs.push(parent.to_owned());
        }
        let mode = if file.executable { 0o700 } else { 0o600 };
        let mut out = OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(mode)
            .open(&path)
            .with_context(|| format!("creating {}", path.display()))?;
        out.write_all(&file.bytes).with_context(|| format!("writing {}", path.display()))?;
        out.sync_all().with_context(|| format!("syncing {}", path.display()))?;
    }
    for dir in dirs {
        sync_dir(&dir);
    }
    Ok(())
}

fn sync_dir(dir: &Path) {
    if let Ok(file) = File::open(dir) {
        let _ = file.sync_all();
    }
}

/// Whether `arg` names a git repository to clone rather than a local path.
pub fn is_git_url(arg: &str) -> bool {
    ["https://", "http://", "ssh://", "git://", "file://", "git@"].iter().any(|p| arg.starts_with(p))
}

/// The skill folders under `root`: `root` itself when it has a `SKILL.md`, else each
/// `<root>/<dir>/` and `<root>/skills/<dir>/` that has one (a collection).
pub fn discover(root: &Path) -> Vec<PathBuf> {
    if root.join(scan::SKILL_MD).exists() {
        return vec![root.to_owned()];
    }
    let mut found = Vec::new();
    for base in [root.to_owned(), root.join("skills")] {
        let mut entries: Vec<PathBuf> =
            fs::read_dir(&base).into_iter().flatten().flatten().map(|e| e.path()).collect();
        entries.sort();
        for dir in entries {
            if dir.join(scan::SKILL_MD).is_file() {
                found.push(dir);
            }
        }
    }
    found
}

/// A shallow clone of `url` in a temporary folder inside the store, removed when dropped.
pub struct GitCheckout {
    _tmp: TempDir,
    /// The working tree, named after the repository (`…/release-notes` for `…/release-notes.git`).
    pub path: PathBuf,
}

/// Clones `url` with the `git` binary (`git clone --depth 1`), never asking for input.
pub fn clone(store: &Store, url: &str) -> Result<GitCheckout> {
    let repo = url
        .trim_end_matches('/')
        .rsplit(['/', ':'])
        .next()
        .map(|last| last.trim_end_matches(".git"))
        .filter(|last| !last.is_empty())
        .with_context(|| {
            format!("`{url}` names no repository: give a URL like https://host/owner/skill.git")
        })?;
    let nonce: [u8; 6] = random_bytes()?;
    let tmp = store.root().join("skills").join(format!(".clone-{}", hex::encode(nonce)));
    fs::DirBuilder::new().mode(0o700).create(&tmp).with_context(|| format!("creating {}", tmp.display()))?;
    let tmp = TempDir(Some(tmp));
    let path = tmp.0.as_ref().expect("set above").join(repo);
    let out = Command::new("git")
        .args(["clone", "--depth", "1", "--quiet", "--", url])
        .arg(&path)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(Stdio::null())
        .output();
    let out = match out {
        Ok(out) => out,
        Err(err) if err.kind() == io::ErrorKind::NotFound => {
            bail!(
                "adding a skill from a git URL needs `git` on PATH: install git, or clone it yourself and add the folder"
            )
        }
        Err(err) => return Err(err).context("running git"),
    };
    if !out.status.success() {
        bail!(
            "`git clone {url}` failed: {}; check the URL and your access to it",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(GitCheckout { _tmp: tmp, path })
}

/// The library's files as `hub.skill` reads them inside code. The surface has already matched
/// the skill and path against the lock; this still refuses anything but plain components and
/// any file that resolves outside its skill's folder (a link swapped in since it was added).
#[derive(Debug)]
pub struct SkillFiles {
    dir: PathBuf,
}

impl SkillFiles {
    pub fn new(store: &Store) -> SkillFiles {
        SkillFiles { dir: Library::new(store).dir() }
    }

    fn read_now(&self, skill: &str, path: &str) -> Result<Vec<u8>, capabilities_core::ports::StoreError> {
        use std::io::Read;
        use std::path::Component;

        let io = |err: &dyn std::fmt::Display| {
            capabilities_core::ports::StoreError::Io(format!("skills/{skill}/{path}"), err.to_string())
        };
        let relative = Path::new(skill).join(path);
        if !relative.components().all(|c| matches!(c, Component::Normal(_))) {
            return Err(io(&"not a path inside the skill"));
        }
        let root = self.dir.join(skill).canonicalize().map_err(|e| io(&e))?;
        let file = self.dir.join(&relative).canonicalize().map_err(|e| io(&e))?;
        if !file.starts_with(&root) {
            return Err(io(&"the file now resolves outside the skill's folder"));
        }
        let mut bytes = Vec::new();
        File::open(&file)
            .and_then(|f| {
                f.take(capabilities_core::surface::skills::MAX_FILE_BYTES + 1).read_to_end(&mut bytes)
            })
            .map_err(|e| io(&e))?;
        Ok(bytes)
    }
}

impl capabilities_core::ports::SkillFiles for SkillFiles {
    fn read<'a>(
        &'a self,
        skill: &'a str,
        path: &'a str,
    ) -> capabilities_core::ports::BoxFuture<'a, Result<Vec<u8>, capabilities_core::ports::StoreError>> {
        let read = self.read_now(skill, path);
        Box::pin(async move { read })
    }
}

//! Backups of harness files, taken before the hub changes them, and `rollback`.
//!
//! Each change is one set: `backups/<timestamp>/manifest.json` lists every file with its bytes
//! before (`files/<n>`, or absent when the hub created the file) and a hash of the bytes the hub
//! wrote. Rollback restores the newest set not rolled back yet, byte for byte, and refuses a
//! file that changed since the hub wrote it.
//!
//! Skill folders the hub places in harnesses' skill folders are in the same sets
//! ([`super::skill_files::SkillEntry`]): each file placed with its sha256 and the folders the hub
//! created, what was there before copied under `skills/<n>/`. Which skill folders the hub placed
//! is read back from the sets themselves ([`BackupSet::placements`]), so a rollback needs no
//! other record kept in step.
//!
//! Concurrency: a set holds the hub's `harness-files` lock from `begin` until it is dropped, and
//! `rollback` takes the same lock, so two hub processes (two `connect` at once, or `connect` and
//! `rollback`) edit harness files one after the other, each reading what the other wrote, and the
//! sets' order is the order of their writes. A harness rewriting its own file is not part of that
//! lock: [`BackupSet::replace`] writes only if the file still holds the bytes the edit started
//! from, and tells the caller to start again from the new bytes otherwise.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::{DirBuilderExt, PermissionsExt};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::skill_files::{self, Found, New, SkillEntry, Tree};
use crate::platform::now_ms;
use crate::store::{RecordLock, Store, write_atomic};

/// The lock every change to harness files takes (connect, disconnect, rollback).
const LOCK: &str = "harness-files";

/// [`BackupSet::replace`] found the file changed since its text was read: someone else (the
/// harness itself, often) wrote it meanwhile. Nothing was written; read it again and redo the edit.
#[derive(Debug, thiserror::Error)]
#[error("{} changed while the hub was editing it", path.display())]
pub struct ChangedMeanwhile {
    pub path: PathBuf,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Manifest {
    /// What made the set: `connect`, `connect --replace`, `disconnect`.
    pub reason: String,
    pub created_ms: u64,
    pub files: Vec<FileEntry>,
    /// Skill folders placed, updated or removed in harnesses' skill folders.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skills: Vec<SkillEntry>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolled_back_ms: Option<u64>,
}

/// A skill folder the hub placed and has not taken back: the harness and skill, and what it left.
#[derive(Debug, Clone)]
pub struct Placement {
    pub harness: String,
    pub skill: String,
    pub tree: Tree,
}

/// One change [`BackupSet::change_skills`] makes: at `path`, which holds `expected` now (`None`:
/// nothing), put `new` (`None`: remove it).
pub struct SkillChange<'a> {
    pub skill: String,
    pub path: PathBuf,
    pub expected: Option<Tree>,
    pub new: Option<New<'a>>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FileEntry {
    pub harness: String,
    pub path: PathBuf,
    /// The copy of the file as it was, under the set's directory; `None` when the hub created it.
    pub copy: Option<String>,
    /// The file's mode before, to restore it too.
    #[serde(default)]
    pub mode: Option<u32>,
    /// SHA-256 of the bytes the hub wrote, to notice edits made since.
    pub written_sha256: String,
    /// The folders the hub created to hold a file that did not exist, outermost first: rollback
    /// removes those still empty when it takes the file away (never one that was there before).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub created_dirs: Vec<PathBuf>,
}

/// A set being written: back up each file, then write the new text.
pub struct BackupSet {
    dir: PathBuf,
    manifest: Manifest,
    _lock: RecordLock,
}

impl BackupSet {
    /// Starts a set, waiting for any other hub process editing harness files to finish.
    pub fn begin(store: &Store, reason: &str) -> Result<BackupSet> {
        let lock = store.lock(LOCK).context("taking the lock on harness files")?;
        let root = backups_dir(store);
        private_dir(&root)?;
        let stamp = timestamp_name(now_ms());
        let mut n = 1;
        let dir = loop {
            let name = if n == 1 { stamp.clone() } else { format!("{stamp}-{n}") };
            let dir = root.join(name);
            // Not recursive: a name some earlier set took fails, and the next one is tried.
            match fs::DirBuilder::new().mode(0o700).create(&dir) {
                Ok(()) => break dir,
                Err(err) if err.kind() == std::io::ErrorKind::AlreadyExists => n += 1,
                Err(err) => return Err(err).with_context(|| format!("creating {}", dir.display())),
            }
        };
        private_dir(&dir.join("files"))?;
        Ok(BackupSet {
            _lock: lock,
            dir,
            manifest: Manifest {
                reason: reason.to_owned(),
                created_ms: now_ms(),
                files: Vec::new(),
                skills: Vec::new(),
                rolled_back_ms: None,
            },
        })
    }

    /// Copies `path` (if it exists) into the set, writes `text` in its place keeping its mode,
    /// and records both in the manifest (saved after every file, so a crash loses nothing).
    ///
    /// `text` was made from `read` (`None`: the file did not exist); when the file holds
    /// anything else now, nothing is written and the error is [`ChangedMeanwhile`].
    pub fn replace(&mut self, harness: &str, path: &Path, read: Option<&str>, text: &str) -> Result<()> {
        let before = match fs::read(path) {
            Ok(bytes) => Some(bytes),
            Err(err) if err.kind() == std::io::ErrorKind::NotFound => None,
            Err(err) => return Err(err).with_context(|| format!("reading {}", path.display())),
        };
        if before.as_deref() != read.map(str::as_bytes) {
            return Err(ChangedMeanwhile { path: path.to_owned() }.into());
        }
        let mode = fs::metadata(path).ok().map(|m| m.permissions().mode() & 0o7777);
        let copy = match &before {
            Some(bytes) => {
                let name = format!("files/{}", self.manifest.files.len());
                write_atomic(&self.dir.join(&name), bytes)?;
                Some(name)
            }
            None => None,
        };
        let created_dirs = match (&before, path.parent()) {
            (None, Some(dir)) => skill_files::missing_dirs(dir),
            _ => Vec::new(),
        };
        self.manifest.files.push(FileEntry {
            harness: harness.to_owned(),
            path: path.to_owned(),
            copy,
            mode,
            written_sha256: sha256(text.as_bytes()),
            created_dirs,
        });
        self.save()?;
        if let Some(dir) = path.parent() {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        write_keeping_mode(path, text.as_bytes(), mode)
    }

    pub fn is_empty(&self) -> bool {
        self.manifest.files.is_empty() && self.manifest.skills.is_empty()
    }

    /// Every skill folder the hub placed and has not taken back, by path: the sets not rolled
    /// back, oldest first, each placing or removing, this one last.
    pub fn placements(&self) -> Result<BTreeMap<PathBuf, Placement>> {
        let root = self.dir.parent().context("a backup set has a parent folder")?;
        let mut sets: Vec<PathBuf> = fs::read_dir(root)
            .with_context(|| format!("reading {}", root.display()))?
            .flatten()
            .map(|e| e.path())
            .filter(|p| *p != self.dir)
            .collect();
        sets.sort();
        let mut placed = BTreeMap::new();
        let mut fold = |manifest: &Manifest| {
            for entry in &manifest.skills {
                match &entry.written {
                    Some(tree) => {
                        let placement = Placement {
                            harness: entry.harness.clone(),
                            skill: entry.skill.clone(),
                            tree: tree.clone(),
                        };
                        placed.insert(entry.path.clone(), placement);
                    }
                    None => {
                        placed.remove(&entry.path);
                    }
                }
            }
        };
        for set in sets {
            let Ok(bytes) = fs::read(set.join("manifest.json")) else { continue };
            let manifest: Manifest = serde_json::from_slice(&bytes).with_context(|| {
                format!("{} is corrupt; move it aside", set.join("manifest.json").display())
            })?;
            if manifest.rolled_back_ms.is_none() {
                fold(&manifest);
            }
        }
        fold(&self.manifest);
        Ok(placed)
    }

    /// Makes `changes` to one harness's skill folders, all or none: each new folder is written
    /// beside its place first, what is there copied into the set, the manifest saved, and only
    /// then is each renamed into place. A path that no longer holds what the caller read fails
    /// the whole batch with [`ChangedMeanwhile`]; a folder the hub cannot write (read-only) fails
    /// it before anything is placed.
    pub fn change_skills(&mut self, harness: &str, changes: Vec<SkillChange>) -> Result<()> {
        struct Prepared {
            tmp: Option<PathBuf>,
            aside: Option<PathBuf>,
        }
        let mut created: Vec<PathBuf> = Vec::new();
        let mut prepared: Vec<Prepared> = Vec::new();
        let mut entries: Vec<SkillEntry> = Vec::new();
        let cleanup = |prepared: &[Prepared], created: &[PathBuf]| {
            for p in prepared {
                if let Some(tmp) = &p.tmp {
                    skill_files::remove_tree(tmp);
                }
            }
            skill_files::remove_empty_dirs(created);
        };
        let result = (|| -> Result<()> {
            for change in &changes {
                skill_files::check_writable(change.path.parent().context("a skill's path has a parent")?)?;
            }
            for change in &changes {
                let now = skill_files::read_tree(&change.path)?;
                let unchanged = match (&now, &change.expected) {
                    (None, None) => true,
                    (Some(a), Some(b)) => a.same(b),
                    _ => false,
                };
                if !unchanged {
                    return Err(ChangedMeanwhile { path: change.path.clone() }.into());
                }
                let parent = change.path.parent().context("a skill's path has a parent")?;
                let mut made = Vec::new();
                if change.new.is_some() {
                    made = skill_files::missing_dirs(parent);
                    for dir in &made {
                        fs::create_dir(dir).with_context(|| {
                            format!(
                                "creating {} (nothing was placed there; check its parent is writable)",
                                dir.display()
                            )
                        })?;
                        created.push(dir.clone());
                    }
                }
                let copy = match &change.expected {
                    Some(tree @ Tree::Files { .. }) => {
                        let name = format!("skills/{}", self.manifest.skills.len() + entries.len());
                        skill_files::copy_tree(&change.path, tree, &self.dir.join(&name))?;
                        Some(name)
                    }
                    _ => None,
                };
                let tmp = match &change.new {
                    Some(new) => {
                        let tmp = skill_files::beside(&change.path, "new")?;
                        skill_files::write_new(&tmp, new)?;
                        Some(tmp)
                    }
                    None => None,
                };
                let aside = match change.expected {
                    Some(_) => Some(skill_files::beside(&change.path, "old")?),
                    None => None,
                };
                prepared.push(Prepared { tmp, aside });
                entries.push(SkillEntry {
                    harness: harness.to_owned(),
                    skill: change.skill.clone(),
                    path: change.path.clone(),
                    before: change.expected.clone(),
                    copy,
                    written: change.new.as_ref().map(New::tree),
                    created_dirs: made,
                });
            }
            Ok(())
        })();
        if let Err(err) = result {
            cleanup(&prepared, &created);
            return Err(err);
        }
        if entries.is_empty() {
            return Ok(());
        }
        let recorded = self.manifest.skills.len();
        self.manifest.skills.extend(entries);
        if let Err(err) = self.save() {
            self.manifest.skills.truncate(recorded);
            cleanup(&prepared, &created);
            return Err(err);
        }
        // Into place. A rename failing puts back those done before it, so the batch is whole or absent.
        let mut done = 0;
        let mut failed = None;
        for (change, p) in changes.iter().zip(&prepared) {
            let step = (|| -> std::io::Result<()> {
                if let Some(aside) = &p.aside {
                    fs::rename(&change.path, aside)?;
                }
                if let Some(tmp) = &p.tmp
                    && let Err(err) = fs::rename(tmp, &change.path)
                {
                    if let Some(aside) = &p.aside {
                        let _ = fs::rename(aside, &change.path);
                    }
                    return Err(err);
                }
                Ok(())
            })();
            if let Err(err) = step {
                failed = Some(anyhow::Error::from(err).context(format!("placing {}", change.path.display())));
                break;
            }
            done += 1;
        }
        if let Some(err) = failed {
            for (change, p) in changes.iter().zip(&prepared).take(done).rev() {
                if let Some(tmp) = &p.tmp {
                    let _ = fs::rename(&change.path, tmp);
                }
                if let Some(aside) = &p.aside {
                    let _ = fs::rename(aside, &change.path);
                }
            }
            self.manifest.skills.truncate(recorded);
            let _ = self.save();
            cleanup(&prepared, &created);
            return Err(err);
        }
        for p in &prepared {
            if let Some(aside) = &p.aside {
                skill_files::remove_tree(aside);
            }
        }
        Ok(())
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Removes the set's directory when nothing was written into it.
    pub fn finish(self) -> Result<()> {
        if self.is_empty() {
            let _ = fs::remove_dir_all(&self.dir);
        }
        Ok(())
    }

    fn save(&self) -> Result<()> {
        write_atomic(&self.dir.join("manifest.json"), &serde_json::to_vec_pretty(&self.manifest)?)
    }
}

/// What `rollback` did with one file.
#[derive(Debug, Clone)]
pub enum Restored {
    Restored {
        harness: String,
        path: PathBuf,
    },
    Removed {
        harness: String,
        path: PathBuf,
    },
    /// Changed since the hub wrote it: only the MCP server entries were put back.
    Merged {
        harness: String,
        path: PathBuf,
    },
    /// Left as it is now, under `--keep-edits`: a skill folder changed since the hub placed it
    /// (the files the hub placed and nobody changed are removed).
    Kept {
        harness: String,
        path: PathBuf,
        reason: String,
    },
    /// Left alone: changed since the hub wrote it.
    Refused {
        harness: String,
        path: PathBuf,
        reason: String,
    },
}

/// Restores the newest set not rolled back yet. `None` when there is none.
///
/// A file changed since the hub wrote it is refused (and then nothing is restored), unless
/// `keep_edits`: then its MCP server entries are put back as they were and the rest of the
/// file, with the edits made since, stays.
pub fn rollback(store: &Store, keep_edits: bool) -> Result<Option<(String, Manifest, Vec<Restored>)>> {
    let _lock = store.lock(LOCK).context("taking the lock on harness files")?;
    let root = backups_dir(store);
    let mut sets: Vec<String> = fs::read_dir(&root)
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .collect();
    sets.sort();
    for name in sets.into_iter().rev() {
        let dir = root.join(&name);
        let path = dir.join("manifest.json");
        let Ok(bytes) = fs::read(&path) else { continue };
        let mut manifest: Manifest = serde_json::from_slice(&bytes).with_context(|| {
            format!("{} is corrupt; move it aside to roll back an older set", path.display())
        })?;
        if manifest.rolled_back_ms.is_some() {
            continue;
        }
        // Check every file first: restore all or none. A file two harnesses share (the same
        // path, or links to one file) is in the set once per harness; only the last write of it
        // is checked, since the earlier ones were overwritten by the hub itself.
        let mut refused = Vec::new();
        let mut edited: Vec<usize> = Vec::new();
        let real = |path: &Path| fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
        for (index, file) in manifest.files.iter().enumerate() {
            let later = manifest.files[index + 1..].iter().any(|f| real(&f.path) == real(&file.path));
            if later {
                continue;
            }
            let current = fs::read(&file.path).ok();
            let matches = current.as_deref().map(sha256).as_deref() == Some(file.written_sha256.as_str());
            if !matches && keep_edits && current.is_some() && super::find(&file.harness).is_ok() {
                edited.push(index);
            } else if !matches {
                refused.push(Restored::Refused {
                    harness: file.harness.clone(),
                    path: file.path.clone(),
                    reason: if current.is_none() {
                        "it was removed since the hub wrote it".to_owned()
                    } else {
                        "it was edited since the hub wrote it".to_owned()
                    },
                });
            }
        }
        let mut skills_found = Vec::new();
        for entry in &manifest.skills {
            let found = skill_files::check(entry)?;
            if let Found::Changed(reason) = &found
                && !keep_edits
            {
                refused.push(Restored::Refused {
                    harness: entry.harness.clone(),
                    path: entry.path.clone(),
                    reason: reason.clone(),
                });
            }
            skills_found.push(found);
        }
        if !refused.is_empty() {
            return Ok(Some((name, manifest, refused)));
        }
        // The earlier writes of a shared file whose last write is merged are merged too, so the
        // edits made since survive them.
        for index in 0..manifest.files.len() {
            let path = real(&manifest.files[index].path);
            let merged_later = edited.iter().any(|&e| e > index && real(&manifest.files[e].path) == path);
            if merged_later && !edited.contains(&index) {
                edited.push(index);
            }
        }
        let mut done = Vec::new();
        // Newest change first, in case one file appears twice.
        for (index, file) in manifest.files.iter().enumerate().rev() {
            if edited.contains(&index) {
                let harness = super::find(&file.harness)?;
                let current = fs::read_to_string(&file.path)
                    .with_context(|| format!("reading {}", file.path.display()))?;
                let before = match &file.copy {
                    Some(copy) => fs::read_to_string(dir.join(copy))
                        .with_context(|| format!("reading the backup {copy}"))?,
                    None => String::new(),
                };
                let merged = super::edit::restore_servers(harness, &current, &before)
                    .with_context(|| format!("putting back the servers of {}", file.path.display()))?;
                write_keeping_mode(&file.path, merged.as_bytes(), file.mode)?;
                done.push(Restored::Merged { harness: file.harness.clone(), path: file.path.clone() });
                continue;
            }
            match &file.copy {
                Some(copy) => {
                    let bytes =
                        fs::read(dir.join(copy)).with_context(|| format!("reading the backup {copy}"))?;
                    write_keeping_mode(&file.path, &bytes, file.mode)?;
                    done.push(Restored::Restored { harness: file.harness.clone(), path: file.path.clone() });
                }
                None => {
                    fs::remove_file(&file.path)
                        .with_context(|| format!("removing {}", file.path.display()))?;
                    skill_files::remove_empty_dirs(&file.created_dirs);
                    done.push(Restored::Removed { harness: file.harness.clone(), path: file.path.clone() });
                }
            }
        }
        done.reverse();
        for (entry, found) in manifest.skills.iter().zip(&skills_found).rev() {
            if let Some(result) = undo_skill(entry, found, &dir)? {
                done.push(result);
            }
        }
        manifest.rolled_back_ms = Some(now_ms());
        write_atomic(&path, &serde_json::to_vec_pretty(&manifest)?)?;
        return Ok(Some((name, manifest, done)));
    }
    Ok(None)
}

/// Undoes one skill entry (newest first): takes away what the hub placed, puts back what was
/// there. `found` is what [`skill_files::check`] said; a changed folder gets here only under
/// `--keep-edits`, and then keeps its edits.
fn undo_skill(entry: &SkillEntry, found: &Found, dir: &Path) -> Result<Option<Restored>> {
    let (harness, path) = (entry.harness.clone(), entry.path.clone());
    match found {
        Found::AlreadyGone => {
            skill_files::remove_empty_dirs(&entry.created_dirs);
            Ok(None)
        }
        Found::Changed(reason) => {
            if let (Some(written), None) = (&entry.written, &entry.before)
                && fs::symlink_metadata(&entry.path).is_ok()
            {
                skill_files::remove_placed(&entry.path, written)?;
                skill_files::remove_empty_dirs(&entry.created_dirs);
            }
            Ok(Some(Restored::Kept { harness, path, reason: reason.clone() }))
        }
        Found::AsWritten => match &entry.before {
            None => {
                if let Some(written) = &entry.written {
                    skill_files::remove_placed(&entry.path, written)?;
                }
                skill_files::remove_empty_dirs(&entry.created_dirs);
                Ok(Some(Restored::Removed { harness, path }))
            }
            Some(before) => {
                let tmp = skill_files::beside(&entry.path, "new")?;
                let copy = entry.copy.as_ref().map(|c| dir.join(c));
                skill_files::restore_new(&tmp, before, copy.as_deref())?;
                let aside = skill_files::beside(&entry.path, "old")?;
                let present = fs::symlink_metadata(&entry.path).is_ok();
                if present {
                    fs::rename(&entry.path, &aside)
                        .with_context(|| format!("moving {} aside", entry.path.display()))?;
                }
                if let Err(err) = fs::rename(&tmp, &entry.path) {
                    if present {
                        let _ = fs::rename(&aside, &entry.path);
                    }
                    skill_files::remove_tree(&tmp);
                    return Err(err).with_context(|| format!("restoring {}", entry.path.display()));
                }
                if present {
                    skill_files::remove_tree(&aside);
                }
                Ok(Some(Restored::Restored { harness, path }))
            }
        },
    }
}

pub fn backups_dir(store: &Store) -> PathBuf {
    store.root().join("backups")
}

fn write_keeping_mode(path: &Path, bytes: &[u8], mode: Option<u32>) -> Result<()> {
    // A symlinked config is written through to its target, so the link stays.
    let target = fs::canonicalize(path).unwrap_or_else(|_| path.to_owned());
    write_atomic(&target, bytes)?;
    if let Some(mode) = mode {
        fs::set_permissions(&target, fs::Permissions::from_mode(mode))
            .with_context(|| format!("setting the mode of {}", target.display()))?;
    }
    Ok(())
}

fn private_dir(dir: &Path) -> Result<()> {
    if dir.is_dir() {
        return Ok(());
    }
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .with_context(|| format!("creating {}", dir.display()))
}

pub fn sha256(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// `20261129T230501.123Z` from milliseconds since the epoch; sorts by time.
fn timestamp_name(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rem) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = civil_from_days(days as i64);
    format!("{y:04}{m:02}{d:02}T{:02}{:02}{:02}.{:03}Z", rem / 3600, rem % 3600 / 60, rem % 60, ms % 1000)
}

/// Days since 1970-01-01 to a (year, month, day) date.
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_sort_as_dates() {
        assert_eq!(timestamp_name(0), "19700101T000000.000Z");
        assert_eq!(timestamp_name(1_795_993_501_123), "20261129T230501.123Z");
    }

    #[test]
    fn rollback_restores_bytes_and_refuses_edits() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("hub")).unwrap();
        let file = dir.path().join("a.json");
        fs::write(&file, b"{ \"x\": 1 }  \n").unwrap();
        let created = dir.path().join("new/b.json");
        let mut set = BackupSet::begin(&store, "connect").unwrap();
        set.replace("cursor", &file, Some("{ \"x\": 1 }  \n"), "{}\n").unwrap();
        set.replace("claude-desktop", &created, None, "{}\n").unwrap();
        set.finish().unwrap();
        let (_, _, done) = rollback(&store, false).unwrap().unwrap();
        assert_eq!(done.len(), 2);
        assert_eq!(fs::read(&file).unwrap(), b"{ \"x\": 1 }  \n");
        assert!(!created.exists());
        assert!(rollback(&store, false).unwrap().is_none());

        let mut set = BackupSet::begin(&store, "connect").unwrap();
        set.replace("cursor", &file, Some("{ \"x\": 1 }  \n"), "{}\n").unwrap();
        drop(set);
        fs::write(&file, b"edited by hand").unwrap();
        let (_, _, refused) = rollback(&store, false).unwrap().unwrap();
        assert!(matches!(&refused[0], Restored::Refused { .. }));
        assert_eq!(fs::read(&file).unwrap(), b"edited by hand");
    }

    #[test]
    fn rollback_removes_the_folders_it_created_for_a_file_and_no_other() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("hub")).unwrap();
        // `.factory` did not exist; `.config` did, and holds something else of the person's.
        let fresh = dir.path().join(".factory/settings/mcp.json");
        let existing = dir.path().join(".config");
        fs::create_dir_all(&existing).unwrap();
        let beside = dir.path().join(".config/crush/crush.json");
        let shared = dir.path().join(".kept/a.json");
        let mut set = BackupSet::begin(&store, "connect").unwrap();
        set.replace("factory-droid", &fresh, None, "{}\n").unwrap();
        set.replace("crush", &beside, None, "{}\n").unwrap();
        set.replace("lm-studio", &shared, None, "{}\n").unwrap();
        set.finish().unwrap();
        // Something else lands in one of the new folders meanwhile: that folder stays.
        fs::write(dir.path().join(".kept/theirs.json"), b"{}").unwrap();
        let (_, _, done) = rollback(&store, false).unwrap().unwrap();
        assert!(done.iter().all(|r| matches!(r, Restored::Removed { .. })), "{done:?}");
        assert!(!dir.path().join(".factory").exists(), "both folders it made are gone");
        assert!(existing.is_dir() && !existing.join("crush").exists(), "the folder that was there stays");
        assert!(dir.path().join(".kept/theirs.json").exists() && !shared.exists());
    }

    #[test]
    fn a_file_changed_since_it_was_read_is_not_written() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("hub")).unwrap();
        let file = dir.path().join("a.json");
        fs::write(&file, b"{\"theirs\": 2}\n").unwrap();
        let mut set = BackupSet::begin(&store, "connect").unwrap();
        let err = set.replace("cursor", &file, Some("{}\n"), "{\"ours\": 1}\n").unwrap_err();
        assert!(err.downcast_ref::<ChangedMeanwhile>().is_some(), "{err:#}");
        assert_eq!(fs::read(&file).unwrap(), b"{\"theirs\": 2}\n");
        assert!(set.is_empty());
    }

    #[test]
    fn a_file_two_harnesses_share_rolls_back_to_its_first_bytes() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("hub")).unwrap();
        let file = dir.path().join("shared.json");
        let link = dir.path().join("link.json");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        fs::write(&file, b"{}\n").unwrap();
        let mut set = BackupSet::begin(&store, "connect").unwrap();
        set.replace("cursor", &file, Some("{}\n"), "{\"a\": 1}\n").unwrap();
        set.replace("vscode", &link, Some("{\"a\": 1}\n"), "{\"a\": 1, \"b\": 2}\n").unwrap();
        set.finish().unwrap();
        let (_, _, done) = rollback(&store, false).unwrap().unwrap();
        assert!(done.iter().all(|r| matches!(r, Restored::Restored { .. })), "{done:?}");
        assert_eq!(fs::read(&file).unwrap(), b"{}\n");
        assert!(fs::symlink_metadata(&link).unwrap().file_type().is_symlink());
    }
}

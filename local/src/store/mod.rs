//! The file store: `~/.capabilities/hub/` (or `$CAPABILITIES_HOME`), the local adapter of the
//! core's store ports. Run records and journals are in `runs.rs`, the text behind handles in
//! `blobs.rs`, the writer threads that put records in place behind a run in `behind.rs`, and the
//! per-record lock files in `lock.rs`.
//!
//! Directory mode 700, files 600, checked and repaired on open. Every record is written to a
//! temporary file, synced and renamed into place; journal lines are appended and synced before
//! the call's result reaches the guest. Several hub processes share the store through
//! per-record lock files, never a daemon.
//!
//! A server may hand a run's record to writer threads when an attempt starts and when the run
//! ends, so neither waits on its sync. The order of what reaches the disk still holds:
//!
//! 1. The run's locks are taken before `save_run` returns and held until the record is in
//!    place. Every read of the record, every later save and every journal append waits for
//!    them; an append waits after syncing its own line.
//! 2. So the record that starts an attempt is on disk before the attempt's first call goes out.
//!    Its sync overlaps the sandbox starting and the sync of that call's line. A line that lands
//!    without its record names a call never made, and resume never repeats a call line that has
//!    no outcome.
//! 3. A run's last record may land after the answer. Until then the record on disk is the one
//!    that started the attempt and the journal holds every call with its outcome, so a hub
//!    stopped in between leaves a run that resumes by replay, repeating no call.
//! 4. A record waiting for a person is written in line, as is the first record of a run that
//!    ends before it starts.
//! 5. A server's run thread holds the records it hands over until its answer has left
//!    (`answer_first`), so no writer wakes and takes its core meanwhile. Held records keep their
//!    locks as in 1., and the thread hands them over before it waits on any run's lock.
//!
//! A server also keeps journals ready for runs not started yet: the writer threads create an
//! empty `runs/<id>.journal.jsonl` beside a record they put in place, so the directory sync
//! that makes the record's name durable makes the journal's too. A new run takes such an id
//! (`RunStore::take_prepared_run`) and its first record becomes the journal's first line
//! (`{"kind":"start","record":…}`) instead of a file: nothing is synced or renamed when the
//! run starts, and its first call's synced line makes that line durable with it. Until the
//! run's last record is written (behind, as in 3.), readers take the record from that line,
//! so a hub stopped in between leaves a run that resumes the same way. The writer threads hand
//! such a journal over open, its append lock taken, so a run's start opens and locks nothing;
//! one whose name is gone by then (pruned by another hub) is not used.

mod behind;
mod blobs;
mod lock;
mod runs;

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use capabilities_core::ports::StoreError;
use serde::{Deserialize, Serialize};

pub use self::behind::{AnswerFirst, answer_first, wait_for_writes};
pub use self::lock::RecordLock;
pub use self::runs::{KeepJournal, is_run_id, keep_journal_open};
use crate::platform::{now_ms, random_bytes};

/// The store layout version this build writes. Migrations only go forward.
pub const SCHEMA_VERSION: u32 = 1;

/// Runs untouched for this long are pruned when the store opens.
pub const RUN_RETENTION: Duration = Duration::from_secs(7 * 24 * 60 * 60);

const DIRS: &[&str] =
    &["sources", "manifests", "connections", "policies", "profiles", "skills", "runs", "blobs", "locks"];

/// `hub.json`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct HubFile {
    pub schema_version: u32,
    pub hub_id: String,
    pub created_ms: u64,
}

/// An open store.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
    pub hub: HubFile,
    /// Problems found and repaired while opening (loose permissions), for `doctor` and logs.
    pub warnings: Vec<String>,
    /// Whether run records go to the writer threads (see the module docs).
    write_behind: bool,
}

/// Where the store lives: `$CAPABILITIES_HOME`, else `~/.capabilities/hub`.
pub fn default_root() -> Result<PathBuf> {
    if let Some(home) = std::env::var_os("CAPABILITIES_HOME").filter(|v| !v.is_empty()) {
        return Ok(PathBuf::from(home));
    }
    let home = std::env::home_dir()
        .context("no home directory: set CAPABILITIES_HOME to where the hub should live")?;
    Ok(home.join(".capabilities").join("hub"))
}

impl Store {
    /// Opens the store at `root`, creating it on first use.
    pub fn open(root: &Path) -> Result<Store> {
        let mut warnings = Vec::new();
        create_private_dir(root, &mut warnings)
            .with_context(|| format!("creating the hub store at {}", root.display()))?;
        for dir in DIRS {
            create_private_dir(&root.join(dir), &mut warnings)?;
        }
        let hub_path = root.join("hub.json");
        let hub = match fs::read(&hub_path) {
            Ok(bytes) => {
                let hub: HubFile = serde_json::from_slice(&bytes).with_context(|| {
                    format!(
                        "{} is corrupt; move it aside and run the command again to recreate it",
                        hub_path.display()
                    )
                })?;
                if hub.schema_version > SCHEMA_VERSION {
                    anyhow::bail!(
                        "the store at {} has schema version {}, newer than this build understands ({SCHEMA_VERSION}); \
                         update capabilities",
                        root.display(),
                        hub.schema_version
                    );
                }
                fix_file_mode(&hub_path, &mut warnings)?;
                hub
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                let id: [u8; 8] = random_bytes()?;
                let hub = HubFile {
                    schema_version: SCHEMA_VERSION,
                    hub_id: format!("hub_{}", hex::encode(id)),
                    created_ms: now_ms(),
                };
                write_atomic(&hub_path, &serde_json::to_vec_pretty(&hub)?)?;
                hub
            }
            Err(err) => return Err(err).with_context(|| format!("reading {}", hub_path.display())),
        };
        let store = Store { root: root.to_owned(), hub, warnings, write_behind: false };
        store.prune_runs(RUN_RETENTION);
        store.prune_blobs();
        Ok(store)
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Lets the writer threads write run records; see the module docs. Whoever turns this on
    /// calls [`wait_for_writes`] before the process ends.
    pub fn write_records_behind(&mut self) {
        self.write_behind = true;
    }
}

fn io_error(path: &Path, err: io::Error) -> StoreError {
    StoreError::Io(path.display().to_string(), err.to_string())
}

fn create_private_dir(dir: &Path, warnings: &mut Vec<String>) -> Result<()> {
    match fs::metadata(dir) {
        Ok(meta) => {
            let mode = meta.permissions().mode() & 0o777;
            if mode != 0o700 {
                fs::set_permissions(dir, fs::Permissions::from_mode(0o700))
                    .with_context(|| format!("setting mode 700 on {}", dir.display()))?;
                warnings.push(format!("{} had mode {mode:o}; set it to 700", dir.display()));
            }
        }
        Err(_) => {
            fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
            fs::set_permissions(dir, fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(())
}

fn fix_file_mode(path: &Path, warnings: &mut Vec<String>) -> Result<()> {
    let mode = fs::metadata(path)?.permissions().mode() & 0o777;
    if mode != 0o600 {
        fs::set_permissions(path, fs::Permissions::from_mode(0o600))?;
        warnings.push(format!("{} had mode {mode:o}; set it to 600", path.display()));
    }
    Ok(())
}

/// Writes `bytes` to `path` atomically: temp file (mode 600) in the same directory, sync,
/// rename, sync the directory.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    write_record(path, bytes, &[])
}

/// [`write_atomic`], creating each of `companions` (empty) in the same directory when missing.
/// The directory is synced only when a name in it is new: replacing a record that exists leaves
/// the old whole version or the new one after a power cut, never a torn one.
fn write_record(path: &Path, bytes: &[u8], companions: &[&Path]) -> Result<()> {
    let dir = path.parent().context("a record path has a parent")?;
    let nonce: [u8; 6] = random_bytes()?;
    let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("record");
    let tmp = dir.join(format!(".{name}.{}.{}.tmp", std::process::id(), hex::encode(nonce)));
    let result = (|| -> io::Result<()> {
        let mut new_name = fs::symlink_metadata(path).is_err();
        let mut file = OpenOptions::new().write(true).create_new(true).mode(0o600).open(&tmp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        fs::rename(&tmp, path)?;
        for companion in companions {
            match OpenOptions::new().write(true).create_new(true).mode(0o600).open(companion) {
                Ok(_) => new_name = true,
                Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {}
                Err(err) => return Err(err),
            }
        }
        if new_name { File::open(dir)?.sync_all() } else { Ok(()) }
    })();
    if result.is_err() {
        let _ = fs::remove_file(&tmp);
    }
    result.with_context(|| format!("writing {}", path.display()))
}

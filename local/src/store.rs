//! The file store: `~/.capabilities/hub/` (or `$CAPABILITIES_HOME`), the local adapter of the
//! core's store ports.
//!
//! Directory mode 700, files 600, checked and repaired on open. Every record is written to a
//! temporary file, synced and renamed into place; journal lines are appended and synced before
//! the call's result reaches the guest. Several hub processes share the store through
//! per-record lock files, never a daemon.
//!
//! A server may hand a run's record to writer threads when an attempt starts and when the run
//! ends, so neither waits on its sync: the run's locks are taken before `save_run` returns and
//! held until the record is in place, and every read of the record, every later save and every
//! journal append waits for them (an append after syncing its own line). So the record that
//! starts an attempt is on disk before the attempt's first call goes out — its sync overlaps the
//! sandbox starting and the sync of that call's line; a line that lands without its record names
//! a call never made, and resume never repeats a call line that has no outcome — and a run's last
//! record may land after the answer: until then the record on disk is the one that started the
//! attempt and the journal holds every call with its outcome, so a hub stopped in between leaves
//! a run that resumes by replay, repeating no call. A record waiting for a person is written in
//! line, as is the first record of a run that ends before it starts.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Condvar, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use anyhow::{Context, Result};
use capabilities_core::ports::{BoxFuture, RunStore, StoreError};
use capabilities_core::run::{JournalEntry, RunRecord, RunStatus};
use serde::{Deserialize, Serialize};

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

    fn run_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        check_run_id(id)?;
        Ok(self.root.join("runs").join(format!("{id}.json")))
    }

    fn journal_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        check_run_id(id)?;
        Ok(self.root.join("runs").join(format!("{id}.journal.jsonl")))
    }

    /// Takes the lock file of one record; released when the guard drops.
    pub fn lock(&self, record: &str) -> Result<RecordLock, StoreError> {
        self.lock_file(record, true)
    }

    fn lock_file(&self, record: &str, exclusive: bool) -> Result<RecordLock, StoreError> {
        let name: String = record
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() || c == '_' || c == '-' { c } else { '_' })
            .collect();
        let path = self.root.join("locks").join(format!("{name}.lock"));
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| io_error(&path, e))?;
        if exclusive { file.lock() } else { file.lock_shared() }.map_err(|e| io_error(&path, e))?;
        Ok(RecordLock { _file: file })
    }

    /// The lock a write left to the writer threads holds until its record is in place.
    /// Taken after the record's own lock, never before it.
    fn written_lock(&self, id: &str, exclusive: bool) -> Result<RecordLock, StoreError> {
        self.lock_file(&format!("{id}.written"), exclusive)
    }

    pub fn save_run_sync(&self, run: &RunRecord) -> Result<(), StoreError> {
        let path = self.run_path(&run.id)?;
        let lock = self.lock(&run.id)?;
        let bytes =
            serde_json::to_vec_pretty(run).map_err(|e| StoreError::Corrupt(run.id.clone(), e.to_string()))?;
        // The journal is created with the record, so one sync of the directory makes both names
        // durable and the first append needs only a sync of its own data.
        let journal = self.journal_path(&run.id)?;
        // This write starts over whatever an earlier one left.
        forget_failure(&path);
        let behind = match run.status {
            RunStatus::Running => true,
            RunStatus::AwaitingInput => false,
            _ => path.exists(),
        };
        if self.write_behind && behind {
            let written = self.written_lock(&run.id, true)?;
            return write_behind(WriteBehind { path, journal, bytes, locks: [lock, written] });
        }
        write_record(&path, &bytes, &[&journal])
            .map_err(|e| StoreError::Io(path.display().to_string(), format!("{e:#}")))
    }

    pub fn load_run_sync(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let path = self.run_path(id)?;
        // A record still on its way to disk is waited for, whichever hub wrote it.
        let _written = self.written_lock(id, false)?;
        match fs::read(&path) {
            Ok(bytes) => serde_json::from_slice(&bytes)
                .map(Some)
                .map_err(|e| StoreError::Corrupt(format!("runs/{id}.json"), e.to_string())),
            Err(err) if err.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(err) => Err(io_error(&path, err)),
        }
    }

    pub fn append_journal_sync(&self, id: &str, entry: &JournalEntry) -> Result<(), StoreError> {
        let path = self.journal_path(id)?;
        let mut line =
            serde_json::to_vec(entry).map_err(|e| StoreError::Corrupt(id.to_owned(), e.to_string()))?;
        line.push(b'\n');
        let _lock = self.lock(&format!("{id}.journal"))?;
        let record = self.run_path(id)?;
        if let Some(why) = failed_write(&record) {
            return Err(StoreError::Io(format!("runs/{id}.json"), why));
        }
        let mut file = OpenOptions::new()
            .create(true)
            .read(true)
            .append(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| io_error(&path, e))?;
        // A line torn by a crash is only ever the last one; start on a fresh line after it.
        let len = file.metadata().map_err(|e| io_error(&path, e))?.len();
        if len > 0 && !ends_with_newline(&file, len) {
            file.write_all(b"\n").map_err(|e| io_error(&path, e))?;
        }
        file.write_all(&line).map_err(|e| io_error(&path, e))?;
        file.sync_data().map_err(|e| io_error(&path, e))?;
        // The record that started this attempt is on disk before the append returns, so before
        // the call it announces goes out. Its sync overlaps this one: a line that lands without
        // its record names a call that was never made, and a line without an outcome is never
        // repeated on resume, whatever the reason it has none.
        let _written = self.written_lock(id, false)?;
        match failed_write(&record) {
            Some(why) => Err(StoreError::Io(format!("runs/{id}.json"), why)),
            None => Ok(()),
        }
    }

    pub fn read_journal_sync(&self, id: &str) -> Result<Vec<JournalEntry>, StoreError> {
        let path = self.journal_path(id)?;
        let text = match fs::read(&path) {
            Ok(bytes) => bytes,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(err) => return Err(io_error(&path, err)),
        };
        let lines: Vec<&[u8]> = text.split(|b| *b == b'\n').collect();
        let mut entries = Vec::new();
        for (i, line) in lines.iter().enumerate() {
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            match serde_json::from_slice::<JournalEntry>(line) {
                Ok(entry) => entries.push(entry),
                // A torn line is a crash mid-append: it was never acknowledged, so it is skipped.
                Err(_) if is_torn(&lines, i) => {}
                Err(err) => {
                    return Err(StoreError::Corrupt(
                        format!("runs/{id}.journal.jsonl line {}", i + 1),
                        err.to_string(),
                    ));
                }
            }
        }
        Ok(entries)
    }

    /// Ids of stored runs, newest first by modification time.
    pub fn run_ids(&self) -> Vec<String> {
        let mut runs: Vec<(SystemTime, String)> = fs::read_dir(self.root.join("runs"))
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let id = name.strip_suffix(".json")?.to_owned();
                check_run_id(&id).ok()?;
                Some((e.metadata().ok()?.modified().ok()?, id))
            })
            .collect();
        runs.sort_by(|a, b| b.cmp(a));
        runs.into_iter().map(|(_, id)| id).collect()
    }

    /// Removes runs (record and journal) not modified within `age`.
    pub fn prune_runs(&self, age: Duration) {
        let Some(cutoff) = SystemTime::now().checked_sub(age) else { return };
        let old =
            |entry: &fs::DirEntry| entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t < cutoff);
        let Ok(entries) = fs::read_dir(self.root.join("runs")) else { return };
        for entry in entries.flatten() {
            if old(&entry) {
                let _ = fs::remove_file(entry.path());
            }
        }
        // A run's lock files (`<id>.lock`, `<id>_journal.lock`, `<id>_written.lock`) are made
        // with it and never written: they go once they are as old and their record is gone.
        let Ok(locks) = fs::read_dir(self.root.join("locks")) else { return };
        for entry in locks.flatten() {
            let name = entry.file_name();
            let Some(stem) = name.to_str().and_then(|n| n.strip_suffix(".lock")) else { continue };
            let id = stem.strip_suffix("_journal").or_else(|| stem.strip_suffix("_written")).unwrap_or(stem);
            if is_run_id(id) && old(&entry) && !self.root.join("runs").join(format!("{id}.json")).exists() {
                let _ = fs::remove_file(entry.path());
            }
        }
    }
}

/// A record for the writer threads, with the run's locks held until it is in place.
struct WriteBehind {
    path: PathBuf,
    journal: PathBuf,
    bytes: Vec<u8>,
    locks: [RecordLock; 2],
}

/// Records the writer threads could not put in place, with the reason, until they are saved
/// again: the run's journal takes no call meanwhile.
static FAILED: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());

fn failed_write(path: &Path) -> Option<String> {
    FAILED.lock().ok()?.iter().find(|(p, _)| p == path).map(|(_, why)| why.clone())
}

fn forget_failure(path: &Path) {
    if let Ok(mut failed) = FAILED.lock() {
        failed.retain(|(p, _)| p != path);
    }
}

/// How many records the writer threads still have to put in place.
static BEHIND: (Mutex<usize>, Condvar) = (Mutex::new(0), Condvar::new());

/// How many writer threads put records in place: a run's last record and the next run's first
/// are written side by side, not one after the other. The writes of one run are ordered by its
/// locks, never by the threads.
const WRITERS: usize = 4;

/// Hands `write` to the writer threads, started on first use; written here when they cannot be.
fn write_behind(write: WriteBehind) -> Result<(), StoreError> {
    static WRITER: OnceLock<Mutex<mpsc::Sender<WriteBehind>>> = OnceLock::new();
    let writer = WRITER.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<WriteBehind>();
        let rx = std::sync::Arc::new(Mutex::new(rx));
        for _ in 0..WRITERS {
            let rx = std::sync::Arc::clone(&rx);
            let started =
                std::thread::Builder::new().name("capabilities-records".to_owned()).spawn(move || {
                    loop {
                        let next = match rx.lock() {
                            Ok(rx) => rx.recv(),
                            Err(_) => return,
                        };
                        match next {
                            Ok(write) => put_in_place(write),
                            Err(_) => return,
                        }
                    }
                });
            if let Err(err) = started {
                eprintln!("warning: a record writer did not start ({err})");
            }
        }
        Mutex::new(tx)
    });
    if let Ok(mut behind) = BEHIND.0.lock() {
        *behind += 1;
    }
    let write = match writer.lock() {
        Ok(tx) => match tx.send(write) {
            Ok(()) => return Ok(()),
            Err(mpsc::SendError(write)) => write,
        },
        Err(_) => write,
    };
    // No writer threads: the record is written here, as without one.
    let WriteBehind { path, journal, bytes, locks } = write;
    let written = write_record(&path, &bytes, &[&journal]);
    drop(locks);
    finish_one();
    written.map_err(|e| StoreError::Io(path.display().to_string(), format!("{e:#}")))
}

fn put_in_place(write: WriteBehind) {
    let WriteBehind { path, journal, bytes, locks } = write;
    if let Err(err) = write_record(&path, &bytes, &[&journal]) {
        // The run's next append fails on it; a run that has answered already keeps the record
        // that started its attempt, and resumes.
        eprintln!("warning: {err:#}; the run is left to resume");
        if let Ok(mut failed) = FAILED.lock() {
            failed.push((path, format!("{err:#}")));
        }
    }
    drop(locks);
    finish_one();
}

fn finish_one() {
    if let Ok(mut behind) = BEHIND.0.lock() {
        *behind = behind.saturating_sub(1);
        BEHIND.1.notify_all();
    }
}

/// Waits until the writer threads have put every record they were handed in place.
pub fn wait_for_writes() {
    let Ok(mut behind) = BEHIND.0.lock() else { return };
    while *behind > 0 {
        match BEHIND.1.wait(behind) {
            Ok(next) => behind = next,
            Err(_) => return,
        }
    }
}

/// Held while a record is being written; dropping it releases the lock file.
#[derive(Debug)]
pub struct RecordLock {
    _file: File,
}

/// Run ids come from the model on resume: they must never become a path.
fn check_run_id(id: &str) -> Result<(), StoreError> {
    let ok = id.len() == 20
        && id.starts_with("run_")
        && id[4..].bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if ok { Ok(()) } else { Err(StoreError::Corrupt("run id".to_owned(), "not a run id".to_owned())) }
}

/// Whether `id` has the shape of a run id (`run_` and 16 hex digits).
pub fn is_run_id(id: &str) -> bool {
    check_run_id(id).is_ok()
}

fn is_torn(lines: &[&[u8]], i: usize) -> bool {
    // The last line without a trailing newline, or a line followed only by blank lines.
    lines[i + 1..].iter().all(|l| l.is_empty())
}

fn ends_with_newline(file: &File, len: u64) -> bool {
    use std::os::unix::fs::FileExt;
    let mut last = [0u8; 1];
    file.read_exact_at(&mut last, len - 1).is_ok() && last[0] == b'\n'
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

impl RunStore for Store {
    fn save_run<'a>(&'a self, run: &'a RunRecord) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.save_run_sync(run) })
    }

    fn load_run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<RunRecord>, StoreError>> {
        Box::pin(async move {
            match self.load_run_sync(id) {
                // A malformed id names no run; it must not read as a store failure.
                Err(StoreError::Corrupt(what, _)) if what == "run id" => Ok(None),
                other => other,
            }
        })
    }

    fn append_journal<'a>(
        &'a self,
        id: &'a str,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.append_journal_sync(id, entry) })
    }

    fn read_journal<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<JournalEntry>, StoreError>> {
        Box::pin(async move { self.read_journal_sync(id) })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn age(path: &Path, days: u64) {
        let when = SystemTime::now() - Duration::from_secs(days * 86_400);
        File::options().write(true).open(path).unwrap().set_modified(when).unwrap();
    }

    #[test]
    fn pruning_removes_an_old_runs_lock_files_and_keeps_the_rest() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let (gone, kept) = ("run_00000000000000aa", "run_00000000000000bb");
        for id in [gone, kept] {
            fs::write(store.root.join("runs").join(format!("{id}.json")), "{}").unwrap();
            for record in [id.to_owned(), format!("{id}.journal"), format!("{id}.written")] {
                drop(store.lock(&record).unwrap());
            }
        }
        drop(store.lock("policy").unwrap());
        let locks = store.root.join("locks");
        for entry in fs::read_dir(&locks).unwrap().flatten() {
            age(&entry.path(), 8);
        }
        age(&store.root.join("runs").join(format!("{gone}.json")), 8);
        store.prune_runs(RUN_RETENTION);
        let mut left: Vec<String> = fs::read_dir(&locks)
            .unwrap()
            .flatten()
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(
            left,
            [
                "policy.lock",
                "run_00000000000000bb.lock",
                "run_00000000000000bb_journal.lock",
                "run_00000000000000bb_written.lock"
            ]
        );
    }
}

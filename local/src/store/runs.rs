//! Run records and their journals: `runs/<id>.json`, written whole, and
//! `runs/<id>.journal.jsonl`, appended a line per entry — a call's intent synced before it goes
//! out, its outcome synced with the next intent or the run's record (group commit); the core's
//! `RunStore` port over them, and pruning old runs.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use capabilities_core::ports::{BoxFuture, RunStore, StoreError};
use capabilities_core::record::{JournalEntry, RunId, RunRecord, RunStatus};

use super::behind::{WriteBehind, failed_write, forget_failure, write_behind};
use super::{Store, io_error, write_record};

impl Store {
    fn run_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        check_run_id(id)?;
        Ok(self.root.join("runs").join(format!("{id}.json")))
    }

    pub(super) fn journal_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        check_run_id(id)?;
        Ok(self.root.join("runs").join(format!("{id}.journal.jsonl")))
    }

    pub fn save_run_sync(&self, run: &RunRecord) -> Result<(), StoreError> {
        let path = self.run_path(&run.id)?;
        let lock = self.lock(&run.id)?;
        // The outcomes journaled since the last sync are durable before the record says what
        // they led to, and before the answer built from them leaves.
        self.sync_deferred(&run.id)?;
        let bytes = serde_json::to_vec_pretty(run)
            .map_err(|e| StoreError::Corrupt(run.id.to_string(), e.to_string()))?;
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
        self.append_journal_line(id, entry, true)
    }

    /// Appends `entry`; with `durable`, syncs the file (and so every line before it) before
    /// returning, else leaves the sync to the run's next durable append or record.
    fn append_journal_line(&self, id: &str, entry: &JournalEntry, durable: bool) -> Result<(), StoreError> {
        let path = self.journal_path(id)?;
        let mut line =
            serde_json::to_vec(entry).map_err(|e| StoreError::Corrupt(id.to_owned(), e.to_string()))?;
        line.push(b'\n');
        let _lock = self.run_lock(id, super::lock::RunLock::Journal, true)?;
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
        if !durable {
            unsynced().insert(path);
            return Ok(());
        }
        // One sync makes this line and any deferred before it durable.
        unsynced().remove(&path);
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

    /// Syncs the run's journal if lines were appended to it without a sync.
    fn sync_deferred(&self, id: &str) -> Result<(), StoreError> {
        let path = self.journal_path(id)?;
        if !unsynced().remove(&path) {
            return Ok(());
        }
        let synced = File::open(&path).and_then(|file| file.sync_data());
        synced.map_err(|e| {
            // Still owed: the next attempt tries again.
            unsynced().insert(path.clone());
            io_error(&path, e)
        })
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
        // The lock files earlier builds made for each run (`<id>.lock`, `<id>_journal.lock`,
        // `<id>_written.lock`; a run's locks are ranges of its journal now, see `lock.rs`) go
        // once they are as old and their record is gone.
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

/// Journals with lines appended and not yet synced, in this process (deferred outcomes).
fn unsynced() -> std::sync::MutexGuard<'static, std::collections::BTreeSet<PathBuf>> {
    static UNSYNCED: std::sync::Mutex<std::collections::BTreeSet<PathBuf>> =
        std::sync::Mutex::new(std::collections::BTreeSet::new());
    UNSYNCED.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Run ids come from the model on resume: they must never become a path.
fn check_run_id(id: &str) -> Result<(), StoreError> {
    if RunId::is_valid(id) {
        Ok(())
    } else {
        Err(StoreError::Corrupt("run id".to_owned(), "not a run id".to_owned()))
    }
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

    fn append_journal_deferred<'a>(
        &'a self,
        id: &'a str,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move { self.append_journal_line(id, entry, false) })
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;
    use crate::store::RUN_RETENTION;

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
            // The lock files earlier builds made for each run.
            for name in [format!("{id}.lock"), format!("{id}_journal.lock"), format!("{id}_written.lock")] {
                fs::write(store.root.join("locks").join(name), "").unwrap();
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

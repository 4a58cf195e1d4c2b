//! Run records and their journals: `runs/<id>.json`, written whole, and
//! `runs/<id>.journal.jsonl`, appended a line per entry — a call's intent synced before it goes
//! out, its outcome synced with the next intent or the run's record (group commit); the core's
//! `RunStore` port over them, and pruning old runs.

use std::cell::RefCell;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use capabilities_core::ports::{BoxFuture, RunStore, StoreError};
use capabilities_core::record::{JournalEntry, RunId, RunRecord, RunStatus};

use serde::{Deserialize, Serialize};

use super::behind::{WriteBehind, failed_write, forget_failure, in_flight, write_behind};
use super::{RecordLock, Store, io_error, write_record};
use crate::platform::random_bytes;

impl Store {
    fn run_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        self.run_file(id, ".json")
    }

    pub(super) fn journal_path(&self, id: &str) -> Result<PathBuf, StoreError> {
        self.run_file(id, JOURNAL_SUFFIX)
    }

    /// `runs/<id><suffix>` under the store, built as one string: a run asks for these paths a
    /// dozen times, and `Path::join` with `format!` cost a couple of thousand instructions each.
    fn run_file(&self, id: &str, suffix: &str) -> Result<PathBuf, StoreError> {
        check_run_id(id)?;
        let root = self.root.as_os_str();
        let mut path =
            std::ffi::OsString::with_capacity(root.len() + "/runs/".len() + id.len() + suffix.len());
        path.push(root);
        path.push("/runs/");
        path.push(id);
        path.push(suffix);
        Ok(PathBuf::from(path))
    }

    pub fn save_run_sync(&self, run: &RunRecord) -> Result<(), StoreError> {
        let path = self.run_path(&run.id)?;
        let journal = self.journal_path(&run.id)?;
        // A prepared journal counts as such for its run's first save only. That save, a new
        // run's first record, goes in it as its first line, under no lock but the journal's
        // own: no one else can know the run yet, and nothing of it was journaled before.
        let prepared = was_taken(&journal);
        if self.write_behind
            && prepared
            && run.status == RunStatus::Running
            && self.start_in_journal(run, &journal)?
        {
            return Ok(());
        }
        // An attempt that ends lets go of its journal once this record is saved. Until then the
        // journal it kept open holds the record's lock too (another range of it), and then the
        // lock for the writer threads: no other open is needed.
        let kept = if run.status == RunStatus::Running { None } else { take_kept(&journal) };
        // A record likely left to the writer threads takes their lock with its own, in one
        // system call (the ranges are next to each other; readers only wait on it a little
        // sooner).
        use super::lock::RunLock::{Record, Written};
        let through =
            if self.write_behind && run.status != RunStatus::AwaitingInput { Written } else { Record };
        let on_kept = match &kept {
            Some(kept) => kept.lock_too(Record, through)?,
            None => false,
        };
        let lock = if on_kept { RecordLock::none() } else { self.lock(&run.id)? };
        // The outcomes journaled since the last sync are durable before the record says what
        // they led to, and before the answer built from them leaves.
        self.sync_deferred(&run.id, kept.as_ref())?;
        let bytes = serde_json::to_vec_pretty(run)
            .map_err(|e| StoreError::Corrupt(run.id.to_string(), e.to_string()))?;
        // The journal is created with the record, so one sync of the directory makes both names
        // durable and the first append needs only a sync of its own data.
        // This write starts over whatever an earlier one left.
        forget_failure(&path);
        let behind = match run.status {
            RunStatus::Running => true,
            RunStatus::AwaitingInput => false,
            // A run whose record so far is its journal's first line resumes from it just as
            // from a record on disk.
            _ => match &kept {
                Some(kept) => kept.started || path.exists() || starts_with_record(kept.file()),
                None => path.exists() || started_in_journal(&journal),
            },
        };
        if self.write_behind && behind {
            let locks = match kept.filter(|_| on_kept) {
                Some(kept) => {
                    if matches!(through, Record) {
                        kept.lock_too(Written, Written)?;
                    }
                    [kept.lock, lock]
                }
                None => [lock, self.written_lock(&run.id, true)?],
            };
            let prepare = prepared_wanted(&journal);
            return write_behind(WriteBehind { path, journal, bytes, locks, prepare });
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
            Err(err) if err.kind() == io::ErrorKind::NotFound => self.start_record(id),
            Err(err) => Err(io_error(&path, err)),
        }
    }

    /// Writes a new run's first record as the first line of the journal the store prepared
    /// for it, instead of as `runs/<id>.json`: the first call's synced line makes both durable
    /// with one sync and no new name. Only for a journal handed out prepared (so its run has no
    /// record yet); `false` when it is gone or no longer empty, and the record is then written
    /// as usual.
    fn start_in_journal(&self, run: &RunRecord, journal: &Path) -> Result<bool, StoreError> {
        if run.attempts != 1 {
            return Ok(false);
        }
        // Never made here: a prepared journal's name is durable, one made now would not be.
        let kept = match take_kept(journal) {
            Some(kept) => kept,
            None => match self.run_lock_if_journal(&run.id, super::lock::RunLock::Journal, true)? {
                Some(lock) => Kept::new(journal, lock)?,
                None => return Ok(false),
            },
        };
        if kept.len != 0 {
            return Ok(false);
        }
        let mut line = serde_json::to_vec(&StartLine { kind: START, record: run })
            .map_err(|e| StoreError::Corrupt(run.id.to_string(), e.to_string()))?;
        line.push(b'\n');
        kept.append(line, false).map(|_| true)
    }

    /// The record in the first line of run `id`'s journal, for a run whose record was never
    /// written as a file (a hub stopped while it ran).
    fn start_record(&self, id: &str) -> Result<Option<RunRecord>, StoreError> {
        let path = self.journal_path(id)?;
        let file = match File::open(&path) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(io_error(&path, err)),
        };
        let mut first = Vec::new();
        std::io::BufRead::read_until(&mut io::BufReader::new(file), b'\n', &mut first)
            .map_err(|e| io_error(&path, e))?;
        if !first.ends_with(b"\n") || !is_start_line(&first) {
            // Empty (prepared, never used), torn, or a journal that starts with a call.
            return Ok(None);
        }
        serde_json::from_slice::<OwnedStartLine>(&first)
            .map(|line| Some(line.record))
            .map_err(|e| StoreError::Corrupt(format!("runs/{id}.journal.jsonl line 1"), e.to_string()))
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
        let kept = match take_kept(&path) {
            Some(kept) => kept,
            None => Kept::new(&path, self.run_lock(id, super::lock::RunLock::Journal, true)?)?,
        };
        let record = self.run_path(id)?;
        if let Some(why) = failed_write(&record) {
            return Err(StoreError::Io(format!("runs/{id}.json"), why));
        }
        kept.append(line, durable)?;
        if !durable {
            return Ok(());
        }
        // The record that started this attempt is on disk before the append returns, so before
        // the call it announces goes out. Its sync overlaps this one: a line that lands without
        // its record names a call that was never made, and a line without an outcome is never
        // repeated on resume, whatever the reason it has none. Only this process can have that
        // record on its way (see `in_flight`); with none, there is nothing to wait for.
        let _written = if in_flight(&record) { Some(self.written_lock(id, false)?) } else { None };
        match failed_write(&record) {
            Some(why) => Err(StoreError::Io(format!("runs/{id}.json"), why)),
            None => Ok(()),
        }
    }

    /// Syncs the run's journal if lines were appended to it without a sync.
    fn sync_deferred(&self, id: &str, kept: Option<&Kept>) -> Result<(), StoreError> {
        let path = self.journal_path(id)?;
        if !unsynced().remove(&path) {
            return Ok(());
        }
        let synced = match kept.filter(|kept| kept.path == path) {
            Some(kept) => kept.file().sync_data(),
            None => File::open(&path).and_then(|file| file.sync_data()),
        };
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
            if line.iter().all(u8::is_ascii_whitespace) || (i == 0 && is_start_line(line)) {
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

    /// Ids of stored runs, newest first by modification time: each record, and each journal
    /// that holds its run's first record while the run has no record file (running, or left by
    /// a hub that stopped).
    pub fn run_ids(&self) -> Vec<String> {
        let runs_dir = self.root.join("runs");
        let mut runs: Vec<(SystemTime, String)> = fs::read_dir(&runs_dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                let id = match name.strip_suffix(JOURNAL_SUFFIX) {
                    Some(id)
                        if !runs_dir.join(format!("{id}.json")).exists() && started_in_journal(&e.path()) =>
                    {
                        id.to_owned()
                    }
                    Some(_) => return None,
                    None => name.strip_suffix(".json")?.to_owned(),
                };
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

/// The `kind` of a journal's first line when it holds the run's first record.
const START: &str = "start";

/// A journal's first line holding the run's first record.
#[derive(Serialize)]
struct StartLine<'a> {
    kind: &'a str,
    record: &'a RunRecord,
}

#[derive(Deserialize)]
struct OwnedStartLine {
    record: RunRecord,
}

fn is_start_line(line: &[u8]) -> bool {
    line.starts_with(br#"{"kind":"start","#)
}

/// Whether the journal at `path` starts with the run's first record.
fn started_in_journal(path: &Path) -> bool {
    File::open(path).is_ok_and(|file| starts_with_record(&file))
}

/// Whether the journal open as `file` starts with the run's first record.
fn starts_with_record(file: &File) -> bool {
    use std::os::unix::fs::FileExt;
    let mut head = [0u8; 16];
    file.read_exact_at(&mut head, 0).is_ok() && is_start_line(&head)
}

/// Journals this process created ahead for runs not started yet, each with its name durable,
/// and held open with its append lock where that is a range of it.
static PREPARED: std::sync::Mutex<Vec<(PathBuf, Option<RecordLock>)>> = std::sync::Mutex::new(Vec::new());

/// How many prepared journals a runs directory keeps ready in this process: one for the next
/// run, and one for a run that starts while the last is finishing.
const PREPARED_AHEAD: usize = 2;

/// Whether the writer threads should prepare another journal beside `journal`.
fn prepared_wanted(journal: &Path) -> bool {
    let Some(dir) = journal.parent() else { return false };
    PREPARED.lock().is_ok_and(|prepared| {
        prepared.iter().filter(|(p, _)| p.parent() == Some(dir)).count() < PREPARED_AHEAD
    })
}

/// What a run's journal's name ends with, after the run's id.
const JOURNAL_SUFFIX: &str = ".journal.jsonl";

/// A journal beside `journal` for a run id not used yet, to be prepared for a later run: drawn
/// by the writer threads, not on the way to an answer.
pub(super) fn new_journal_beside(journal: &Path) -> Option<PathBuf> {
    let bytes: [u8; 8] = random_bytes().ok()?;
    Some(journal.with_file_name(format!("{}{JOURNAL_SUFFIX}", RunId::from_bytes(bytes))))
}

/// Keeps a journal the writer threads created and made durable, for a later run, open with its
/// append lock already taken: the run it goes to opens and locks nothing for its first lines.
pub(super) fn keep_prepared(journal: PathBuf) {
    let lock = RecordLock::prepared(&journal);
    if let Ok(mut prepared) = PREPARED.lock() {
        prepared.push((journal, lock));
    }
}

/// A prepared journal in `dir`, handed out once, with its append lock when it holds one.
fn take_prepared(dir: &Path) -> Option<(PathBuf, Option<RecordLock>)> {
    let mut prepared = PREPARED.lock().ok()?;
    let at = prepared.iter().position(|(p, _)| p.parent() == Some(dir))?;
    let (journal, lock) = prepared.swap_remove(at);
    TAKEN.lock().ok()?.push(journal.clone());
    Some((journal, lock))
}

/// Prepared journals handed to runs that have not written their first record yet: only these
/// take it as their first line, since only their names are known to be durable.
static TAKEN: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// Whether `journal` was handed out prepared and has not had its first record yet; it no
/// longer counts as such after this.
fn was_taken(journal: &Path) -> bool {
    let Ok(mut taken) = TAKEN.lock() else { return false };
    match taken.iter().position(|p| p == journal) {
        Some(at) => {
            taken.swap_remove(at);
            true
        }
        None => false,
    }
}

/// A run's journal held open with its append lock ([`RunLock::Journal`](super::lock::RunLock)),
/// and where its next line goes: while the lock is held only its holder appends, so the length
/// it read once stays true.
struct Kept {
    path: PathBuf,
    lock: RecordLock,
    /// The journal opened apart from its lock, where the lock is not a range of the journal.
    file: Option<File>,
    len: u64,
    /// Whether the last line was torn by a crash (no newline), so the next starts a fresh one.
    torn: bool,
    /// Whether this thread wrote the run's first record as the journal's first line.
    started: bool,
    /// Whether the journal still has a name (nothing removed it since it was opened).
    linked: bool,
}

impl Kept {
    /// The journal at `path` under its append lock `lock`.
    fn new(path: &Path, lock: RecordLock) -> Result<Kept, StoreError> {
        let file = match lock.journal() {
            Some(_) => None,
            None => Some(
                OpenOptions::new()
                    .create(true)
                    .truncate(false)
                    .read(true)
                    .write(true)
                    .mode(0o600)
                    .open(path)
                    .map_err(|e| io_error(path, e))?,
            ),
        };
        let mut kept =
            Kept { path: path.to_owned(), lock, file, len: 0, torn: false, started: false, linked: true };
        let metadata = kept.file().metadata().map_err(|e| io_error(path, e))?;
        kept.len = metadata.len();
        kept.linked = std::os::unix::fs::MetadataExt::nlink(&metadata) > 0;
        kept.torn = kept.len > 0 && !ends_with_newline(kept.file(), kept.len);
        Ok(kept)
    }

    /// Takes run locks `first` through `last` (exclusive, in one go) on this open journal too;
    /// `false` where locks are not ranges of the journal, and nothing was taken.
    fn lock_too(&self, first: super::lock::RunLock, last: super::lock::RunLock) -> Result<bool, StoreError> {
        self.lock.also(first, last).map_err(|e| io_error(&self.path, e))
    }

    fn file(&self) -> &File {
        match (self.lock.journal(), &self.file) {
            (Some(file), _) | (None, Some(file)) => file,
            (None, None) => unreachable!("a kept journal is open"),
        }
    }

    /// Writes `line` at the journal's end; with `durable`, syncs it (and every line before it).
    /// Kept for the thread's next append once written, unless that failed.
    fn append(mut self, mut line: Vec<u8>, durable: bool) -> Result<(), StoreError> {
        use std::os::unix::fs::FileExt;
        if self.torn {
            line.insert(0, b'\n');
        }
        self.file().write_all_at(&line, self.len).map_err(|e| io_error(&self.path, e))?;
        if self.len == 0 && is_start_line(&line) {
            self.started = true;
        }
        self.len += line.len() as u64;
        self.torn = false;
        if durable {
            // One sync makes this line and any deferred before it durable.
            unsynced().remove(&self.path);
            self.file().sync_data().map_err(|e| io_error(&self.path, e))?;
        } else {
            unsynced().insert(self.path.clone());
        }
        keep(self);
        Ok(())
    }
}

thread_local! {
    /// Whether this thread keeps a run's journal open between appends ([`keep_journal_open`]),
    /// and the one it keeps.
    static KEPT: RefCell<(bool, Option<Kept>)> = const { RefCell::new((false, None)) };
}

/// The journal kept for `path` on this thread, taken; one kept for another path is let go.
fn take_kept(path: &Path) -> Option<Kept> {
    KEPT.with(|cell| {
        let mut cell = cell.try_borrow_mut().ok()?;
        let kept = cell.1.take()?;
        (kept.path == path).then_some(kept)
    })
}

/// Keeps `kept` for this thread's next append, if this thread keeps journals.
fn keep(kept: Kept) {
    KEPT.with(|cell| {
        if let Ok(mut cell) = cell.try_borrow_mut()
            && cell.0
        {
            cell.1 = Some(kept);
        }
    });
}

/// While the returned guard lives, this thread keeps the journal of the run it is running open,
/// with its append lock, from one append to the next: the appends of an attempt then cost no
/// open, lock, stat or read each. The journal is let go when the run's record says the attempt
/// ended, when the thread appends to another run's journal, and when the guard drops (whether
/// the engine's work returned or unwound), so no lock outlives the work that took it. Nothing
/// else appends to a journal while its run's attempt goes on.
pub fn keep_journal_open() -> KeepJournal {
    let keeps = KEPT.with(|cell| {
        cell.try_borrow_mut().is_ok_and(|mut cell| {
            let free = !cell.0;
            cell.0 = true;
            free
        })
    });
    KeepJournal { keeps, _thread: std::marker::PhantomData }
}

/// Lets go of this thread's kept journal when dropped. Stays on its thread.
#[must_use = "a journal is kept only while the guard lives"]
pub struct KeepJournal {
    /// Whether this guard started the keeping (an inner one leaves it to the outer).
    keeps: bool,
    _thread: std::marker::PhantomData<*const ()>,
}

impl Drop for KeepJournal {
    fn drop(&mut self) {
        if self.keeps {
            let kept = KEPT.with(|cell| {
                cell.try_borrow_mut().ok().and_then(|mut cell| {
                    cell.0 = false;
                    cell.1.take()
                })
            });
            drop(kept);
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

    fn take_prepared_run(&self) -> Option<RunId> {
        if !self.write_behind {
            return None;
        }
        let (journal, lock) = take_prepared(&self.root.join("runs"))?;
        let name = journal.file_name()?.to_str()?;
        let id = RunId::parse(name.strip_suffix(JOURNAL_SUFFIX)?)?;
        // Its first append takes the journal as it is held open, unless the name is gone
        // (pruned meanwhile): then the record is written as a file, as without a prepared one.
        if let Some(kept) = lock.and_then(|lock| Kept::new(&journal, lock).ok()).filter(|kept| kept.linked) {
            keep(kept);
        }
        Some(id)
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

    /// A store as a server opens it: records written behind.
    fn server_store() -> (tempfile::TempDir, Store) {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        store.write_records_behind();
        (dir, store)
    }

    fn run(id: &str, status: RunStatus) -> RunRecord {
        RunRecord {
            id: RunId::parse(id).unwrap(),
            status,
            created_ms: 1,
            updated_ms: 1,
            body: "return 1".into(),
            notices: Vec::new(),
            lines: Vec::new(),
            seed: 7,
            clock_origin_ms: 1,
            attempts: 1,
            live_calls: 0,
            pending: Vec::new(),
            decisions: Vec::new(),
            output: Default::default(),
            profile: "default".into(),
        }
    }

    /// The intent line of a run's first call.
    fn first_call() -> JournalEntry {
        JournalEntry::Call {
            seq: 0,
            address: "notes.list".into(),
            connection: None,
            digest: "d".into(),
            at_ms: 2,
        }
    }

    #[test]
    fn a_new_runs_first_record_is_the_first_line_of_its_prepared_journal() {
        let (_dir, store) = server_store();
        let runs = store.root.join("runs");
        // What the writer threads do after a run's last record: an empty journal, kept for later.
        let journal = runs.join("run_00000000000000c1.journal.jsonl");
        File::create(&journal).unwrap();
        keep_prepared(journal.clone());
        let id = store.take_prepared_run().expect("the prepared journal is handed out");
        assert_eq!(id.as_str(), "run_00000000000000c1");
        assert!(store.take_prepared_run().is_none(), "handed out once");

        store.save_run_sync(&run(&id, RunStatus::Running)).unwrap();
        assert!(!runs.join(format!("{id}.json")).exists(), "no record file at the start");
        let first = fs::read_to_string(&journal).unwrap();
        assert!(first.starts_with(r#"{"kind":"start","record":{"id":"run_00000000000000c1""#), "{first}");
        // Readers find the run from its journal, and the journal's entries without that line.
        assert_eq!(store.load_run_sync(&id).unwrap().unwrap().status, RunStatus::Running);
        assert_eq!(store.run_ids(), vec![id.to_string()]);
        assert!(store.read_journal_sync(&id).unwrap().is_empty());
        let intent = first_call();
        store.append_journal_sync(&id, &intent).unwrap();
        assert_eq!(store.read_journal_sync(&id).unwrap(), vec![intent.clone()]);

        // The last record is written behind, beside the journal, which keeps its first line.
        store.save_run_sync(&run(&id, RunStatus::Completed)).unwrap();
        crate::store::wait_for_writes();
        assert_eq!(store.load_run_sync(&id).unwrap().unwrap().status, RunStatus::Completed);
        assert_eq!(store.read_journal_sync(&id).unwrap(), vec![intent]);
        assert_eq!(store.run_ids(), vec![id.to_string()]);
        // ... and another journal was prepared for the next run.
        let next = store.take_prepared_run().expect("a journal prepared behind the record");
        assert_ne!(next, id);
        assert_eq!(fs::read(store.journal_path(&next).unwrap()).unwrap(), b"");
    }

    #[test]
    fn a_run_thread_gets_its_prepared_journal_open_and_never_writes_to_a_pruned_one() {
        let (_dir, store) = server_store();
        let runs = store.root.join("runs");
        let journal = runs.join("run_00000000000000c7.journal.jsonl");
        File::create(&journal).unwrap();
        keep_prepared(journal.clone());
        let _keeps = keep_journal_open();
        let id = store.take_prepared_run().unwrap();
        // Handed out open, with its append lock: the start needs no open of its own.
        assert!(KEPT.with(|cell| cell.borrow().1.as_ref().is_some_and(|kept| kept.path == journal)));
        store.save_run_sync(&run(&id, RunStatus::Running)).unwrap();
        let intent = first_call();
        store.append_journal_sync(&id, &intent).unwrap();
        // The last record's locks are ranges of that same open journal, held until it lands;
        // a reader waits for it, then finds the run completed and the journal whole.
        store.save_run_sync(&run(&id, RunStatus::Completed)).unwrap();
        assert_eq!(store.load_run_sync(&id).unwrap().unwrap().status, RunStatus::Completed);
        assert_eq!(store.read_journal_sync(&id).unwrap(), vec![intent]);
        assert!(fs::read_to_string(&journal).unwrap().starts_with(r#"{"kind":"start","#));

        // A prepared journal removed before its run starts (pruned by another hub): the run's
        // first record goes to a file of its own, not to the removed journal.
        let gone = runs.join("run_00000000000000c8.journal.jsonl");
        File::create(&gone).unwrap();
        keep_prepared(gone.clone());
        fs::remove_file(&gone).unwrap();
        let id = loop {
            // The writer threads may have prepared another journal meanwhile.
            let id = store.take_prepared_run().unwrap();
            if store.journal_path(&id).unwrap() == gone {
                break id;
            }
        };
        store.save_run_sync(&run(&id, RunStatus::Running)).unwrap();
        crate::store::wait_for_writes();
        assert_eq!(store.load_run_sync(&id).unwrap().unwrap().status, RunStatus::Running);
    }

    #[test]
    fn a_kept_journal_takes_every_line_in_order_and_is_let_go_when_the_attempt_ends() {
        let (_dir, store) = server_store();
        let id = "run_00000000000000c4";
        let journal = store.journal_path(id).unwrap();
        let call = |seq| JournalEntry::Call {
            seq,
            address: "notes.list".into(),
            connection: None,
            digest: "d".into(),
            at_ms: 2,
        };
        let outcome = |seq| JournalEntry::Outcome {
            seq,
            outcome: capabilities_core::record::CallOutcome::Ok { value: serde_json::json!({ "n": seq }) },
            ms: 3,
        };
        // A line written before this thread kept the journal.
        let mut first = serde_json::to_vec(&call(0)).unwrap();
        first.push(b'\n');
        fs::write(&journal, first).unwrap();
        let kept = keep_journal_open();
        store.save_run_sync(&run(id, RunStatus::Running)).unwrap();
        store.append_journal_sync(id, &call(1)).unwrap();
        store.append_journal_line(id, &outcome(1), false).unwrap();
        // Kept: another thread's append waits for it.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                store.append_journal_sync(id, &call(9)).unwrap();
                tx.send(()).unwrap();
            });
            assert!(rx.recv_timeout(Duration::from_millis(200)).is_err(), "appended while kept");
            store.append_journal_sync(id, &call(2)).unwrap();
            store.append_journal_line(id, &outcome(2), false).unwrap();
            // The attempt ends: its record lets the journal go, synced first.
            store.save_run_sync(&run(id, RunStatus::Completed)).unwrap();
            assert!(!unsynced().contains(&journal), "the deferred outcome was synced with the record");
            rx.recv_timeout(Duration::from_secs(5)).expect("appended once let go");
        });
        assert_eq!(
            store.read_journal_sync(id).unwrap(),
            vec![call(0), call(1), outcome(1), call(2), outcome(2), call(9)],
            "each line whole, in order"
        );
        // A guard dropped lets go too, whatever the engine left undone.
        store.append_journal_sync(id, &call(3)).unwrap();
        drop(kept);
        let other = std::thread::spawn({
            let store = store.clone();
            move || store.append_journal_sync(id, &call(4))
        });
        other.join().unwrap().unwrap();
        // Without a guard, nothing is kept.
        store.append_journal_sync(id, &call(5)).unwrap();
        assert!(KEPT.with(|cell| cell.borrow().1.is_none()));
    }

    #[test]
    fn a_journal_not_prepared_never_takes_the_first_record() {
        let (_dir, store) = server_store();
        let id = "run_00000000000000c2";
        store.save_run_sync(&run(id, RunStatus::Running)).unwrap();
        crate::store::wait_for_writes();
        assert!(store.root.join("runs").join(format!("{id}.json")).exists());
        assert_eq!(fs::read(store.journal_path(id).unwrap()).unwrap(), b"");
    }

    #[test]
    fn a_record_held_until_the_answer_is_handed_over_then_and_read_on_its_thread_at_once() {
        let (_dir, store) = server_store();
        let id = "run_00000000000000c3";
        let record = store.root.join("runs").join(format!("{id}.json"));
        store.save_run_sync(&run(id, RunStatus::Running)).unwrap();
        crate::store::wait_for_writes();

        // Held: the last record stays off the disk, and other threads wait for it.
        let held = crate::store::answer_first();
        store.save_run_sync(&run(id, RunStatus::Completed)).unwrap();
        std::thread::sleep(Duration::from_millis(100));
        assert!(fs::read_to_string(&record).unwrap().contains("\"running\""), "the held record was written");
        let reader = {
            let store = store.clone();
            std::thread::spawn(move || store.load_run_sync(id).unwrap().unwrap().status)
        };
        std::thread::sleep(Duration::from_millis(100));
        assert!(!reader.is_finished(), "another thread read the run before its record was in place");
        drop(held);
        assert_eq!(reader.join().unwrap(), RunStatus::Completed);

        // Held, then read on the same thread: handed over first, so the read does not wait for
        // ever on the lock the held record keeps.
        let held = crate::store::answer_first();
        let mut failed = run(id, RunStatus::Failed);
        failed.attempts = 2;
        store.save_run_sync(&failed).unwrap();
        assert_eq!(store.load_run_sync(id).unwrap().unwrap().status, RunStatus::Failed);
        drop(held);
        crate::store::wait_for_writes();
        assert!(fs::read_to_string(&record).unwrap().contains("\"failed\""));
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

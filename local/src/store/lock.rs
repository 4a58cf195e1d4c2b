//! Lock files, taken with the OS's file locks, so several hub processes share the store without
//! a daemon: `locks/<record>.lock` for each configuration record (whole-file `flock`), and for a
//! run, three byte ranges of its own journal, `runs/<id>.journal.jsonl` (open file description
//! locks, `F_OFD_SETLKW`): the record's lock, the lock a record left to the writer threads holds
//! until it is in place, and the journal's append lock. The journal exists from the run's first
//! record on, so a run makes no lock file of its own: creating three files per run was most of
//! a short run's time on a busy filesystem. The ranges lie far past any journal's end, and
//! appends ignore advisory locks.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;

use capabilities_core::ports::StoreError;

use super::{Store, io_error};

/// Where a run's lock ranges start in its journal file.
const RUN_LOCKS_AT: i64 = 1 << 62;

/// One of a run's locks (a byte range of its journal).
#[derive(Debug, Clone, Copy)]
pub(super) enum RunLock {
    /// Held while the run's record is read, changed and written.
    Record = 0,
    /// Held by a record left to the writer threads until it is in place; readers wait on it.
    Written = 1,
    /// Held while a line is appended to the journal.
    Journal = 2,
}

impl Store {
    /// Takes the lock of one record; released when the guard drops. A run's id takes its
    /// record's lock ([`RunLock::Record`]).
    pub fn lock(&self, record: &str) -> Result<RecordLock, StoreError> {
        if super::is_run_id(record) {
            return self.run_lock(record, RunLock::Record, true);
        }
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
        file.lock().map_err(|e| io_error(&path, e))?;
        Ok(RecordLock { _file: Some(file), journal: false })
    }

    /// Takes one of run `id`'s locks. An exclusive one makes the journal when it is missing (a
    /// run's first record is about to make it anyway); a shared one of a run with no journal
    /// yet has nothing to wait for.
    pub(super) fn run_lock(
        &self,
        id: &str,
        which: RunLock,
        exclusive: bool,
    ) -> Result<RecordLock, StoreError> {
        let lock = self.open_run_lock(id, which, exclusive, exclusive)?;
        Ok(lock.unwrap_or(RecordLock { _file: None, journal: false }))
    }

    /// [`Store::run_lock`], taken only when the run's journal already exists (`None` when it
    /// does not): for a journal whose name must already be durable.
    pub(super) fn run_lock_if_journal(
        &self,
        id: &str,
        which: RunLock,
        exclusive: bool,
    ) -> Result<Option<RecordLock>, StoreError> {
        self.open_run_lock(id, which, exclusive, false)
    }

    fn open_run_lock(
        &self,
        id: &str,
        which: RunLock,
        exclusive: bool,
        create: bool,
    ) -> Result<Option<RecordLock>, StoreError> {
        // A record this thread holds back may hold the lock it is about to wait for.
        super::behind::release_held();
        let path = self.journal_path(id)?;
        let opened =
            OpenOptions::new().read(true).write(true).create(create).truncate(false).mode(0o600).open(&path);
        let file = match opened {
            Ok(file) => file,
            Err(err) if !create && err.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(io_error(&path, err)),
        };
        #[cfg(not(any(target_os = "linux", target_os = "android")))]
        let file = {
            drop(file);
            let path = self.root.join("locks").join(format!("{id}_{}.lock", which as u8));
            let file = OpenOptions::new().create(true).truncate(false).write(true).mode(0o600).open(&path);
            let file = file.map_err(|e| io_error(&path, e))?;
            if exclusive { file.lock() } else { file.lock_shared() }.map_err(|e| io_error(&path, e))?;
            file
        };
        lock_range(&file, RUN_LOCKS_AT + which as i64, 1, exclusive).map_err(|e| io_error(&path, e))?;
        Ok(Some(RecordLock {
            _file: Some(file),
            journal: cfg!(any(target_os = "linux", target_os = "android")),
        }))
    }

    /// The lock a write left to the writer threads holds until its record is in place.
    /// Taken after the record's own lock, never before it.
    pub(super) fn written_lock(&self, id: &str, exclusive: bool) -> Result<RecordLock, StoreError> {
        self.run_lock(id, RunLock::Written, exclusive)
    }
}

/// Waits for and takes a lock on `len` bytes of `file` from `offset`, all at once, held by this
/// open file description until it is closed (so two opens in one process exclude each other
/// too).
#[cfg(any(target_os = "linux", target_os = "android"))]
fn lock_range(file: &File, offset: i64, len: i64, exclusive: bool) -> std::io::Result<()> {
    use nix::fcntl::{FcntlArg, fcntl};
    use nix::libc;
    let range = libc::flock {
        l_type: if exclusive { libc::F_WRLCK } else { libc::F_RDLCK } as libc::c_short,
        l_whence: libc::SEEK_SET as libc::c_short,
        l_start: offset,
        l_len: len,
        l_pid: 0,
    };
    loop {
        match fcntl(file, FcntlArg::F_OFD_SETLKW(&range)) {
            Ok(_) => return Ok(()),
            Err(nix::errno::Errno::EINTR) => continue,
            Err(errno) => return Err(std::io::Error::from(errno)),
        }
    }
}

/// Elsewhere (macOS has no open file description locks), one lock file per range beside the
/// journal, locked whole.
#[cfg(not(any(target_os = "linux", target_os = "android")))]
fn lock_range(_file: &File, _offset: i64, _len: i64, _exclusive: bool) -> std::io::Result<()> {
    Ok(())
}

/// Held while a record is being written; dropping it releases the lock.
#[derive(Debug)]
pub struct RecordLock {
    _file: Option<File>,
    /// Whether `_file` is the run's journal (a run's lock on Linux), not a lock file.
    journal: bool,
}

impl RecordLock {
    /// Holds nothing.
    pub(super) fn none() -> RecordLock {
        RecordLock { _file: None, journal: false }
    }

    /// The run's journal, open read and write, when this is one of its locks and the lock is a
    /// range of the journal itself (Linux): an append under the journal's lock needs no other
    /// open.
    pub(super) fn journal(&self) -> Option<&File> {
        if self.journal { self._file.as_ref() } else { None }
    }

    /// Takes run locks `first` through `last` too, exclusive and in one go, as other ranges of
    /// the journal this lock holds open, let go with this one; `false` (nothing taken) where
    /// this lock is not a range of it.
    pub(super) fn also(&self, first: RunLock, last: RunLock) -> std::io::Result<bool> {
        let Some(file) = self.journal() else { return Ok(false) };
        // A record this thread holds back may hold the lock it is about to wait for.
        super::behind::release_held();
        lock_range(file, RUN_LOCKS_AT + first as i64, last as i64 - first as i64 + 1, true)?;
        Ok(true)
    }

    /// The append lock of the run journal at `path`, which this process created and whose name
    /// is durable, taken ahead so the run given that journal opens nothing (Linux; `None`
    /// elsewhere, or when the journal cannot be opened).
    #[cfg(any(target_os = "linux", target_os = "android"))]
    pub(super) fn prepared(path: &std::path::Path) -> Option<RecordLock> {
        let file = OpenOptions::new().read(true).write(true).open(path).ok()?;
        lock_range(&file, RUN_LOCKS_AT + RunLock::Journal as i64, 1, true).ok()?;
        Some(RecordLock { _file: Some(file), journal: true })
    }

    #[cfg(not(any(target_os = "linux", target_os = "android")))]
    pub(super) fn prepared(_path: &std::path::Path) -> Option<RecordLock> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_runs_locks_exclude_each_other_only_within_the_same_range() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(dir.path()).unwrap();
        let id = "run_00000000000000cc";
        // No journal yet: a shared lock has nothing to wait for and makes nothing.
        drop(store.run_lock(id, RunLock::Written, false).unwrap());
        assert!(!dir.path().join("runs").join(format!("{id}.journal.jsonl")).exists());
        let record = store.lock(id).unwrap();
        // Another range of the same run is free while the record's is held.
        drop(store.run_lock(id, RunLock::Journal, true).unwrap());
        // The same range, from another thread, waits until the first is released.
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::scope(|scope| {
            scope.spawn(|| {
                let _second = store.lock(id).unwrap();
                tx.send(()).unwrap();
            });
            assert!(rx.recv_timeout(std::time::Duration::from_millis(200)).is_err(), "taken twice");
            drop(record);
            rx.recv_timeout(std::time::Duration::from_secs(5)).expect("taken once released");
        });
        #[cfg(target_os = "linux")]
        assert_eq!(std::fs::read_dir(dir.path().join("locks")).unwrap().count(), 0, "no lock file per run");
    }
}

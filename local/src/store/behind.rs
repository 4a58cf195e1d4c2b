//! The writer threads: run records handed over by `save_run` are put in place here, behind the
//! run (see the ordering in the store's module docs). The queue, the count of records still on
//! their way and the failed writes are statics, shared by every [`Store`](super::Store) in the
//! process.

use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::sync::{Condvar, Mutex, OnceLock};

use capabilities_core::ports::StoreError;

use super::{RecordLock, write_record};

/// A record for the writer threads, with the run's locks held until it is in place.
pub(super) struct WriteBehind {
    pub(super) path: PathBuf,
    pub(super) journal: PathBuf,
    pub(super) bytes: Vec<u8>,
    pub(super) locks: [RecordLock; 2],
    /// An empty journal to create beside the record, for a later run (see `runs.rs`): its
    /// name is made durable by the same directory sync.
    pub(super) prepare: Option<PathBuf>,
}

/// Records the writer threads could not put in place, with the reason, until they are saved
/// again: the run's journal takes no call meanwhile.
static FAILED: Mutex<Vec<(PathBuf, String)>> = Mutex::new(Vec::new());

pub(super) fn failed_write(path: &Path) -> Option<String> {
    FAILED.lock().ok()?.iter().find(|(p, _)| p == path).map(|(_, why)| why.clone())
}

pub(super) fn forget_failure(path: &Path) {
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
pub(super) fn write_behind(write: WriteBehind) -> Result<(), StoreError> {
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
    let WriteBehind { path, journal, bytes, locks, prepare: _ } = write;
    let written = write_record(&path, &bytes, &[&journal]);
    drop(locks);
    finish_one();
    written.map_err(|e| StoreError::Io(path.display().to_string(), format!("{e:#}")))
}

fn put_in_place(write: WriteBehind) {
    let WriteBehind { path, journal, bytes, locks, prepare } = write;
    let companions: Vec<&Path> =
        [Some(journal.as_path()), prepare.as_deref()].into_iter().flatten().collect();
    let written = write_record(&path, &bytes, &companions);
    if let (Ok(()), Some(prepared)) = (&written, prepare) {
        super::runs::keep_prepared(prepared);
    }
    if let Err(err) = written {
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

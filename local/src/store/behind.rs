//! The writer threads: run records handed over by `save_run` are put in place here, behind the
//! run (see the ordering in the store's module docs). The queue, the records still on
//! their way and the failed writes are statics, shared by every [`Store`](super::Store) in the
//! process.

use std::cell::RefCell;
use std::marker::PhantomData;
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
    /// Whether to create an empty journal beside the record, for a later run (see `runs.rs`):
    /// its name is made durable by the same directory sync.
    pub(super) prepare: bool,
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

/// The records the writer threads still have to put in place (handed over or held back for
/// them), by path, once per write.
static BEHIND: (Mutex<Vec<PathBuf>>, Condvar) = (Mutex::new(Vec::new()), Condvar::new());

/// Whether a record for `path` this process saved is still on its way to disk. While a run's
/// attempt goes on only the process running it saves its record: another waits for the record
/// to be in place before it loads the run at all.
pub(super) fn in_flight(path: &Path) -> bool {
    BEHIND.0.lock().map_or(true, |paths| paths.iter().any(|p| p == path))
}

/// How many writer threads put records in place: a run's last record and the next run's first
/// are written side by side, not one after the other. The writes of one run are ordered by its
/// locks, never by the threads.
const WRITERS: usize = 4;

thread_local! {
    /// Records this thread holds back until its answer has left; `None` when it holds none
    /// back (see [`answer_first`]).
    static HELD: RefCell<Option<Vec<WriteBehind>>> = const { RefCell::new(None) };
}

/// While the returned guard lives, records this thread hands to the writer threads are held
/// back, and handed over when it drops: a server drops it once its answer has left. A writer
/// woken at once takes the core of the thread that woke it (the scheduler favours a thread
/// just woken), and the answer waited for the record's write: about 60 µs of a one-call run
/// on tmpfs. Held records keep their run's locks, so nothing reads them early, and this thread
/// hands them over before it waits on any run's lock itself ([`release_held`]).
pub fn answer_first() -> AnswerFirst {
    let holds = HELD.with(|held| {
        let mut held = held.borrow_mut();
        let free = held.is_none();
        if free {
            *held = Some(Vec::new());
        }
        free
    });
    AnswerFirst { holds, _thread: PhantomData }
}

/// Hands this thread's held records over when dropped, whether the work under it ended or
/// unwound. Stays on its thread.
#[must_use = "records are held back only while the guard lives"]
pub struct AnswerFirst {
    /// Whether this guard started the holding (an inner one leaves it to the outer).
    holds: bool,
    _thread: PhantomData<*const ()>,
}

impl Drop for AnswerFirst {
    fn drop(&mut self) {
        if self.holds {
            release_held();
            HELD.with(|held| held.try_borrow_mut().map(|mut held| *held = None).ok());
        }
    }
}

/// Hands over the records this thread holds back, before it waits on a run's lock: one of them
/// may hold it.
pub(super) fn release_held() {
    let held = HELD.with(|held| held.try_borrow_mut().ok()?.as_mut().map(std::mem::take));
    for write in held.into_iter().flatten() {
        hand_over(write);
    }
}

/// Hands `write` to the writer threads, started on first use; written here when they cannot be.
/// A thread holding its records back keeps it until its answer has left ([`answer_first`]).
pub(super) fn write_behind(write: WriteBehind) -> Result<(), StoreError> {
    if let Ok(mut behind) = BEHIND.0.lock() {
        behind.push(write.path.clone());
    }
    let write = HELD.with(|held| match held.try_borrow_mut().as_deref_mut() {
        Ok(Some(held)) => {
            held.push(write);
            None
        }
        _ => Some(write),
    });
    match write {
        Some(write) => hand_over_or_write(write),
        None => Ok(()),
    }
}

/// [`hand_over_or_write`] for a record already counted, whose caller has returned: a failure
/// is kept for the run's next append, as the writer threads keep theirs.
fn hand_over(write: WriteBehind) {
    let path = write.path.clone();
    if let Err(err) = hand_over_or_write(write) {
        eprintln!("warning: {err}; the run is left to resume");
        if let Ok(mut failed) = FAILED.lock() {
            failed.push((path, err.to_string()));
        }
    }
}

/// Hands `write` (already counted in `BEHIND`) to the writer threads, started on first use;
/// written here when they cannot be.
fn hand_over_or_write(write: WriteBehind) -> Result<(), StoreError> {
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
    landed(&path);
    written.map_err(|e| StoreError::Io(path.display().to_string(), format!("{e:#}")))
}

fn put_in_place(write: WriteBehind) {
    let WriteBehind { path, journal, bytes, locks, prepare } = write;
    let prepare = prepare.then(|| super::runs::new_journal_beside(&journal)).flatten();
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
            failed.push((path.clone(), format!("{err:#}")));
        }
    }
    drop(locks);
    landed(&path);
}

/// Counts the write of `path` done, once its locks are let go.
fn landed(path: &Path) {
    if let Ok(mut behind) = BEHIND.0.lock() {
        if let Some(at) = behind.iter().position(|p| p == path) {
            behind.swap_remove(at);
        }
        BEHIND.1.notify_all();
    }
}

/// Waits until the writer threads have put every record they were handed in place.
pub fn wait_for_writes() {
    release_held();
    let Ok(mut behind) = BEHIND.0.lock() else { return };
    while !behind.is_empty() {
        match BEHIND.1.wait(behind) {
            Ok(next) => behind = next,
            Err(_) => return,
        }
    }
}

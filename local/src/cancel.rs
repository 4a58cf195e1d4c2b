//! Cancelling a running attempt from another process. `hub cancel` leaves a marker,
//! `runs/<id>.cancel`, beside the run's record; the process running an attempt of that run
//! watches for it and sets its sandbox driver's cancel flag, which stops the guest whether its
//! code is busy or waiting on a call in flight. The attempt ends `cancelled`, and a call that
//! was in flight stays journaled without an outcome, so it is never sent again.
//!
//! One watcher thread per process looks for the markers of the attempts running in it every
//! [`POLL`]. When none has run for [`LINGER`] it sleeps until one starts; in between, a new
//! attempt need not wake it (a thread wake-up costs a short run more than the watch itself).

use std::fs::{self, OpenOptions};
use std::io;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, OnceLock};
use std::time::Duration;

use capabilities_core::ports::{Attempt, AttemptReport, Bridge, LocalBoxFuture, Sandbox};
use capabilities_core::record::RunId;
use capabilities_core::sandbox::Cancel;
use capabilities_core::sandbox::quickjs::QuickJs;

/// How often the watcher looks for markers.
pub const POLL: Duration = Duration::from_millis(100);

/// How long the watcher keeps polling after the last attempt ended before it sleeps until the
/// next one starts.
pub const LINGER: Duration = Duration::from_secs(10);

/// The marker that asks for run `run_id` to stop, in the store at `root`.
pub fn marker(root: &Path, run_id: &RunId) -> PathBuf {
    root.join("runs").join(format!("{run_id}.cancel"))
}

/// Asks whatever process runs an attempt of `run_id` to stop it.
pub fn request(root: &Path, run_id: &RunId) -> io::Result<()> {
    match OpenOptions::new().write(true).create_new(true).mode(0o600).open(marker(root, run_id)) {
        Ok(_) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(err) => Err(err),
    }
}

/// Takes the request back once the run has ended (or was never running).
pub fn withdraw(root: &Path, run_id: &RunId) {
    let _ = fs::remove_file(marker(root, run_id));
}

/// A sandbox driver whose attempts stop when `hub cancel` asks for their run.
pub struct Watched<'a> {
    driver: &'a QuickJs,
    root: &'a Path,
    /// Whether the runs are new: nobody can have asked to stop one before its first attempt,
    /// so the marker is not looked for then (a look costs a path lookup in `runs/`, which
    /// holds every kept run); the watcher's next look finds one left since.
    new_runs: bool,
}

impl<'a> Watched<'a> {
    pub fn new(driver: &'a QuickJs, root: &'a Path, new_runs: bool) -> Watched<'a> {
        Watched { driver, root, new_runs }
    }
}

impl Sandbox for Watched<'_> {
    fn run<'a>(&'a self, attempt: Attempt, bridge: &'a dyn Bridge) -> LocalBoxFuture<'a, AttemptReport> {
        let flag = self.driver.cancel_flag();
        flag.clear();
        let look_first = !self.new_runs;
        let watch =
            RunId::parse(&attempt.run_id).map(|id| Watch::start(marker(self.root, &id), flag, look_first));
        Box::pin(async move {
            let report = self.driver.run(attempt, bridge).await;
            if let Some(watch) = watch {
                watch.stop();
            }
            report
        })
    }
}

/// One attempt the watcher looks after.
struct Watch {
    id: u64,
    flag: Arc<Cancel>,
}

struct Watcher {
    attempts: Mutex<Running>,
    wake: Condvar,
}

/// The attempts running in this process.
#[derive(Default)]
struct Running {
    /// The id the next watch gets.
    next: u64,
    /// Each attempt's watch id, the marker that cancels it, and its driver's flag.
    watched: Vec<(u64, PathBuf, Arc<Cancel>)>,
    /// The watcher sleeps until an attempt starts (else it looks again within [`POLL`]).
    parked: bool,
}

fn watcher() -> &'static Watcher {
    static WATCHER: OnceLock<&'static Watcher> = OnceLock::new();
    WATCHER.get_or_init(|| {
        let watcher: &'static Watcher =
            Box::leak(Box::new(Watcher { attempts: Mutex::default(), wake: Condvar::new() }));
        let started = std::thread::Builder::new()
            .name("capabilities-cancel".to_owned())
            .spawn(move || watch_loop(watcher));
        if let Err(err) = started {
            eprintln!("warning: `hub cancel` cannot stop runs in this process: {err}");
        }
        watcher
    })
}

fn watch_loop(watcher: &'static Watcher) {
    let Ok(mut attempts) = watcher.attempts.lock() else { return };
    let mut idle_since: Option<std::time::Instant> = None;
    loop {
        if attempts.watched.is_empty() {
            let since = *idle_since.get_or_insert_with(std::time::Instant::now);
            if since.elapsed() >= LINGER {
                attempts.parked = true;
                while attempts.watched.is_empty() {
                    attempts = match watcher.wake.wait(attempts) {
                        Ok(guard) => guard,
                        Err(_) => return,
                    };
                }
                attempts.parked = false;
            }
        }
        if !attempts.watched.is_empty() {
            idle_since = None;
        }
        for (_, marker, flag) in &attempts.watched {
            if !flag.is_cancelled() && marker.exists() {
                flag.cancel();
            }
        }
        attempts = match watcher.wake.wait_timeout(attempts, POLL) {
            Ok((guard, _)) => guard,
            Err(_) => return,
        };
    }
}

impl Watch {
    fn start(marker: PathBuf, flag: Arc<Cancel>, look_first: bool) -> Watch {
        // Asked before the attempt began: stop it before any code runs.
        if look_first && marker.exists() {
            flag.cancel();
        }
        let watcher = watcher();
        let (id, parked) = match watcher.attempts.lock() {
            Ok(mut attempts) => {
                attempts.next += 1;
                let id = attempts.next;
                attempts.watched.push((id, marker, Arc::clone(&flag)));
                (id, attempts.parked)
            }
            Err(_) => (0, true),
        };
        // A watcher still polling finds this attempt within `POLL` without being woken.
        if parked {
            watcher.wake.notify_all();
        }
        Watch { id, flag }
    }

    fn stop(self) {
        if let Ok(mut attempts) = watcher().attempts.lock() {
            attempts.watched.retain(|(id, _, _)| *id != self.id);
        }
        self.flag.clear();
    }
}

//! The spawner: one thread, alive as long as the process, that starts every stdio source and
//! watches it exit.
//!
//! Why a thread of its own: on Linux the parent-death signal a child arms fires when the
//! *thread* that forked it ends, not the process. A tokio worker can retire (after
//! `block_in_place`, or as an idle blocking thread), and a server forked from it would be
//! killed with it. This thread never ends before the process does, so the signal fires exactly
//! when the hub dies. It runs a small runtime of its own, so the children's exit watchers do
//! not depend on the caller's runtime staying alive either. The pipes go back to the caller
//! and are registered with its runtime, where the tasks that read and write them run: left on
//! this thread, every line a server wrote woke this thread first, and it woke the reader.

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use tokio::process::{ChildStderr, ChildStdin, ChildStdout, Command};
use tokio::sync::{mpsc, oneshot, watch};

/// A started child: its pipes, its process group and how it ended.
pub(crate) struct Spawned {
    pub(crate) stdin: ChildStdin,
    pub(crate) stdout: ChildStdout,
    pub(crate) stderr: ChildStderr,
    pub(crate) group: ProcessGroup,
    /// `None` while it runs, then a description of its exit status.
    pub(crate) exit: watch::Receiver<Option<String>>,
}

/// The process group a child leads. `kill` sends SIGKILL to every member, once.
#[derive(Clone)]
pub(crate) struct ProcessGroup {
    inner: Arc<GroupInner>,
}

struct GroupInner {
    pgid: i32,
    killed: AtomicBool,
}

impl ProcessGroup {
    pub(crate) fn id(&self) -> i32 {
        self.inner.pgid
    }

    /// Kills every process of the group. Idempotent; after the first call the id is never used
    /// again, so a recycled id is never signalled.
    pub(crate) fn kill(&self) {
        if !self.inner.killed.swap(true, Ordering::SeqCst) {
            // ESRCH (the group is already empty) is the only expected failure.
            let _ = killpg(Pid::from_raw(self.inner.pgid), Signal::SIGKILL);
        }
    }
}

struct Request {
    command: Command,
    reply: oneshot::Sender<io::Result<Started>>,
}

/// A child as the spawner thread hands it back: its pipes not yet tied to any runtime.
struct Started {
    stdin: std::process::ChildStdin,
    stdout: std::process::ChildStdout,
    stderr: std::process::ChildStderr,
    group: ProcessGroup,
    exit: watch::Receiver<Option<String>>,
}

static SPAWNER: OnceLock<Result<mpsc::UnboundedSender<Request>, String>> = OnceLock::new();

/// Starts `command` on the spawner thread, its pipes registered with the caller's runtime. The
/// command must put the child in a new process group (`process_group(0)`): the child's pid is
/// taken as the group id.
pub(crate) async fn spawn(command: Command) -> io::Result<Spawned> {
    let (reply, answer) = oneshot::channel();
    spawner()?
        .send(Request { command, reply })
        .map_err(|_| io::Error::other("the spawner thread has stopped"))?;
    let Started { stdin, stdout, stderr, group, exit } =
        answer.await.map_err(|_| io::Error::other("the spawner thread has stopped"))??;
    let registered = || -> io::Result<_> {
        Ok((ChildStdin::from_std(stdin)?, ChildStdout::from_std(stdout)?, ChildStderr::from_std(stderr)?))
    };
    match registered() {
        Ok((stdin, stdout, stderr)) => Ok(Spawned { stdin, stdout, stderr, group, exit }),
        Err(err) => {
            group.kill();
            Err(err)
        }
    }
}

fn spawner() -> io::Result<&'static mpsc::UnboundedSender<Request>> {
    SPAWNER
        .get_or_init(|| {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| format!("could not build the spawner's runtime: {e}"))?;
            let (sender, mut requests) = mpsc::unbounded_channel::<Request>();
            std::thread::Builder::new()
                .name("capabilities-sources".to_owned())
                .spawn(move || {
                    runtime.block_on(async move {
                        while let Some(request) = requests.recv().await {
                            let _ = request.reply.send(start(request.command));
                        }
                    });
                })
                .map_err(|e| format!("could not start the spawner thread: {e}"))?;
            Ok(sender)
        })
        .as_ref()
        .map_err(|e| io::Error::other(e.clone()))
}

/// Runs on the spawner thread, inside its runtime.
fn start(mut command: Command) -> io::Result<Started> {
    let mut child = command.spawn()?;
    let group = match child.id().and_then(|pid| i32::try_from(pid).ok()) {
        Some(pid) => {
            ProcessGroup { inner: Arc::new(GroupInner { pgid: pid, killed: AtomicBool::new(false) }) }
        }
        None => return Err(io::Error::other("the child exited before it could be watched")),
    };
    let pipes = (child.stdin.take(), child.stdout.take(), child.stderr.take());
    let (Some(stdin), Some(stdout), Some(stderr)) = pipes else {
        group.kill();
        return Err(io::Error::other("the child's stdio was not piped"));
    };
    // Off this runtime: the caller registers them with its own.
    let unregistered = || -> io::Result<_> {
        Ok((
            std::process::ChildStdin::from(stdin.into_owned_fd()?),
            std::process::ChildStdout::from(stdout.into_owned_fd()?),
            std::process::ChildStderr::from(stderr.into_owned_fd()?),
        ))
    };
    let (stdin, stdout, stderr) = match unregistered() {
        Ok(pipes) => pipes,
        Err(err) => {
            group.kill();
            return Err(err);
        }
    };
    let (exit_sender, exit) = watch::channel(None);
    let watched = group.clone();
    tokio::spawn(async move {
        let status = child.wait().await;
        // The leader is gone: take whatever it left in its group with it.
        watched.kill();
        let description = match status {
            Ok(status) => status.to_string(),
            Err(e) => format!("unknown status ({e})"),
        };
        let _ = exit_sender.send(Some(description));
    });
    Ok(Started { stdin, stdout, stderr, group, exit })
}

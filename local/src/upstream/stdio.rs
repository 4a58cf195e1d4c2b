//! Stdio sources: the command line and environment a server starts with, the supervisor it
//! runs under, and the pumps between its pipes and the rmcp client.
//!
//! Process tree. The direct child is `/bin/sh` running [`SUPERVISOR`], leader of a new process
//! group; the server (and anything it starts, such as `npx` → `node`) runs in that group. The
//! hub kills the whole group with SIGKILL when the pool drops, when a source is removed, when
//! a start fails, and when the server's leader exits. On Linux the supervisor also arms a
//! parent-death signal (SIGTERM, from the spawner thread, which lives as long as the hub): if
//! the hub dies, even by SIGKILL, the supervisor's trap kills the group. What remains: a
//! process that leaves the group on purpose (`setsid`, its own `setpgid`) escapes, and on
//! macOS there is no parent-death signal, so a SIGKILLed hub leaves its servers running until
//! they notice their closed stdin.
//!
//! Environment. A server gets a small safe base taken from the hub (`PATH`, `HOME`, locale,
//! temp dir, user), the source's plain `env`, and the credential values of its `env_slots`;
//! nothing else of the hub's environment. An isolated source (`isolation.rs`) runs under
//! bubblewrap inside the same supervisor, with its resource limits lowered.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use capabilities_core::ports::Credentials;
use tokio::io::{AsyncReadExt, AsyncWriteExt, DuplexStream};
use tokio::process::Command;
use tokio::sync::watch;

use super::isolation;
use super::lane::{Lane, SharedStdin, Waiting};
use super::spawner::{self, ProcessGroup};
use super::stderr::StderrTail;
use super::stdout::{MAX_LINE, Stdout, Whole, split};
use super::tap::RawTap;

/// Variables of the hub's environment a server inherits.
const BASE_ENV: &[&str] =
    &["PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "TZ"];

/// Runs `"$@"` in the background in the same process group and waits for it. SIGTERM (the
/// parent-death signal), SIGHUP or SIGINT make it kill the whole group. Stdin is handed over
/// on fd 3 because sh gives a background job `/dev/null` as stdin.
const SUPERVISOR: &str = "trap 'kill -KILL 0' TERM HUP INT
exec 3<&0
\"$@\" <&3 3<&- &
exec 3<&-
wait $!";

/// What a stdio source's spec says, borrowed.
pub(crate) struct StdioSpec<'a> {
    pub(crate) command: &'a str,
    pub(crate) args: &'a [String],
    pub(crate) env: &'a BTreeMap<String, String>,
    pub(crate) env_slots: &'a [String],
    pub(crate) cwd: Option<&'a str>,
    pub(crate) isolation: Option<&'a super::Isolation>,
}

/// A running stdio server as the pool holds it.
pub(crate) struct ServerProcess {
    group: ProcessGroup,
    exit: watch::Receiver<Option<String>>,
    noise: Arc<Mutex<Noise>>,
}

/// Lines on stdout that were not JSON-RPC.
#[derive(Default)]
pub(super) struct Noise {
    pub(super) first: Option<String>,
    pub(super) lines: usize,
}

impl ServerProcess {
    pub(crate) fn kill(&self) {
        self.group.kill();
    }

    pub(crate) fn process_group(&self) -> i32 {
        self.group.id()
    }

    /// How the server ended, if it has.
    pub(crate) fn exited(&self) -> Option<String> {
        self.exit.borrow().clone()
    }

    /// Waits up to `wait` for the server to end; its exit status if it did.
    pub(crate) async fn wait_exit(&self, wait: Duration) -> Option<String> {
        let mut exit = self.exit.clone();
        let ended = tokio::time::timeout(wait, exit.wait_for(Option::is_some)).await;
        match ended {
            Ok(Ok(status)) => status.clone(),
            _ => self.exited(),
        }
    }

    /// The first line the server printed on stdout that was not JSON-RPC, and how many such
    /// lines there were.
    pub(crate) fn noise(&self) -> Option<(String, usize)> {
        let noise = self.noise.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        noise.first.clone().map(|first| (first, noise.lines))
    }
}

/// Builds the command that starts the server under the supervisor.
pub(crate) fn command(spec: &StdioSpec<'_>, credentials: &Credentials) -> Result<Command, String> {
    let cwd = spec.cwd.map(PathBuf::from);
    if let Some(dir) = &cwd
        && !dir.is_dir()
    {
        return Err(format!("its working directory `{}` does not exist", dir.display()));
    }
    let program = resolve(spec.command, cwd.as_deref())?;
    let mut command = Command::new("/bin/sh");
    command.arg("-c").arg(SUPERVISOR).arg("capabilities-source");
    match spec.isolation {
        None => {
            command.arg(&program).args(spec.args);
        }
        Some(isolation) => {
            let bwrap = isolation::find_bwrap().ok_or_else(|| isolation::MISSING_BWRAP.to_owned())?;
            std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
                .create(&isolation.state)
                .map_err(|e| format!("its state directory `{}` cannot be made: {e}", isolation.state))?;
            let home = std::env::var_os("HOME").map(PathBuf::from);
            command.arg(bwrap).args(isolation::bwrap_args(
                isolation,
                home.as_deref(),
                cwd.as_deref(),
                &program,
                spec.args,
            ));
            isolation::limit_resources(&mut command);
        }
    }
    command.env_clear();
    for name in BASE_ENV {
        if let Some(value) = std::env::var_os(name) {
            command.env(name, value);
        }
    }
    for (name, value) in spec.env {
        command.env(name, value);
    }
    for slot in spec.env_slots {
        if let Some((_, value)) = credentials.values.iter().find(|(name, _)| name == slot) {
            command.env(slot, value);
        }
    }
    if let Some(dir) = &cwd
        && spec.isolation.is_none()
    {
        command.current_dir(dir);
    }
    command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .kill_on_drop(true);
    arm_parent_death_signal(&mut command);
    Ok(command)
}

/// Finds the program the way a shell would, on the hub's `PATH`.
fn resolve(program: &str, cwd: Option<&Path>) -> Result<PathBuf, String> {
    if program.is_empty() {
        return Err("its command is empty".to_owned());
    }
    if program.contains('/') {
        let path = match cwd {
            Some(dir) if Path::new(program).is_relative() => dir.join(program),
            _ => PathBuf::from(program),
        };
        return if is_executable(&path) {
            Ok(path)
        } else {
            Err(format!("command `{program}` does not exist or is not executable"))
        };
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| format!("command `{program}` was not found on PATH; install it or give its full path"))
}

fn is_executable(path: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    path.metadata().is_ok_and(|meta| meta.is_file() && meta.permissions().mode() & 0o111 != 0)
}

/// Linux: the supervisor gets SIGTERM when the spawner thread (so the hub) dies.
#[cfg(target_os = "linux")]
#[expect(unsafe_code, reason = "pre_exec runs a closure in the forked child; see the SAFETY note")]
fn arm_parent_death_signal(command: &mut Command) {
    let parent = nix::unistd::getpid();
    // SAFETY: the closure runs in the forked child before exec. It only makes the `prctl` and
    // `getppid` system calls and builds an `io::Error` from a raw errno; none of that allocates
    // or takes a lock, so it is async-signal-safe.
    unsafe {
        command.pre_exec(move || {
            nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)
                .map_err(|errno| io::Error::from_raw_os_error(errno as i32))?;
            // The hub may have died between fork and prctl; then nobody would send the signal.
            if nix::unistd::getppid() != parent {
                return Err(io::Error::from_raw_os_error(nix::libc::ESRCH));
            }
            Ok(())
        });
    }
}

#[cfg(not(target_os = "linux"))]
fn arm_parent_death_signal(_command: &mut Command) {}

/// Spawns the server and connects its pipes: stdout through the lane and the tap to the
/// returned reader, the returned writer's lines and the lane's to stdin, stderr into `tail`.
pub(crate) async fn spawn(
    command: Command,
    tail: StderrTail,
    tap: RawTap,
) -> io::Result<((DuplexStream, DuplexStream), ServerProcess, Lane)> {
    let spawned = spawner::spawn(command).await?;
    let noise = Arc::new(Mutex::new(Noise::default()));
    let stdin: SharedStdin = Arc::new(tokio::sync::Mutex::new(Some(spawned.stdin)));
    let waiting = Arc::new(Waiting::default());
    let stdout =
        Arc::new(Stdout::new(spawned.stdout.into_owned_fd()?, Arc::clone(&waiting), Arc::clone(&noise))?);
    let lane = Lane::new(Arc::clone(&stdin), Arc::clone(&stdout), waiting);
    let (client_reads, pump_writes) = tokio::io::duplex(64 * 1024);
    let (client_writes, pump_reads) = tokio::io::duplex(64 * 1024);
    tokio::spawn(pump_stdout(stdout, pump_writes, tap, lane.clone()));
    tokio::spawn(pump_stdin(pump_reads, stdin));
    tokio::spawn(pump_stderr(spawned.stderr, tail));
    let process = ServerProcess { group: spawned.group, exit: spawned.exit, noise };
    Ok(((client_reads, client_writes), process, lane))
}

/// Forwards each line the client writes to the server's stdin, whole, under the lock the lane
/// takes too; closes stdin once the client is done.
async fn pump_stdin(mut from_client: DuplexStream, stdin: SharedStdin) {
    let mut buf = vec![0u8; 64 * 1024];
    let (mut partial, mut too_long) = (Vec::new(), false);
    let mut lines = Vec::new();
    let ended = loop {
        let n = match from_client.read(&mut buf).await {
            Ok(0) | Err(_) => break true,
            Ok(n) => n,
        };
        // A line too long is never from rmcp, whose requests are far smaller: nothing half is
        // sent.
        split(&mut partial, &mut too_long, &buf[..n], MAX_LINE, |whole| {
            if let Whole::Line(line) = whole {
                lines.push(line.to_vec());
            }
        });
        let mut written = true;
        for line in lines.drain(..) {
            written = written && super::lane::write_line(&stdin, &line).await.is_ok();
        }
        if !written {
            break false;
        }
    };
    // A last line without its newline is still a line.
    if ended && !too_long && !partial.is_empty() {
        let _ = super::lane::write_line(&stdin, &partial).await;
    }
    // The server reads end-of-file, as when the client held its stdin itself.
    stdin.lock().await.take();
}

/// Forwards each JSON line of the server's stdout to the client, copying results into the tap;
/// answers to the lane's calls go to the lane instead (see `stdout.rs`). Lines that are not
/// JSON are noted and dropped.
async fn pump_stdout(stdout: Arc<Stdout>, mut to_client: DuplexStream, tap: RawTap, lane: Lane) {
    if let Ok(watch) = stdout.pump_watch() {
        while let Some(line) = stdout.next_for_client(&watch).await {
            tap.observe(&line.message);
            let sent = async {
                to_client.write_all(&line.text).await?;
                to_client.write_all(b"\n").await
            };
            if sent.await.is_err() {
                break;
            }
        }
    }
    lane.close();
}

async fn pump_stderr(mut stderr: tokio::process::ChildStderr, tail: StderrTail) {
    let mut buf = vec![0u8; 4096];
    while let Ok(n) = stderr.read(&mut buf).await {
        if n == 0 {
            break;
        }
        tail.push(&buf[..n]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a server reads on its stdin (`cat` gives it back) when the client writes `input`
    /// through the stdin pump.
    async fn through_stdin(input: Vec<u8>) -> String {
        let mut child = Command::new("cat")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdin: SharedStdin = Arc::new(tokio::sync::Mutex::new(child.stdin.take()));
        let (mut client, pump_reads) = tokio::io::duplex(64 * 1024);
        let pump = tokio::spawn(pump_stdin(pump_reads, stdin));
        let mut stdout = child.stdout.take().unwrap();
        let reader = tokio::spawn(async move {
            let mut read = String::new();
            stdout.read_to_string(&mut read).await.unwrap();
            read
        });
        client.write_all(&input).await.unwrap();
        drop(client);
        pump.await.unwrap();
        reader.await.unwrap()
    }

    #[tokio::test]
    async fn reads_bounded_lines() {
        // The line over the limit is dropped whole; the last, without its newline, still goes.
        let got = through_stdin([b"ab\n", "x".repeat(MAX_LINE).as_bytes(), b"\n\nxyz"].concat()).await;
        assert_eq!(got, "ab\n\nxyz");
    }

    #[test]
    fn resolves_commands_on_path_or_by_path() {
        assert!(resolve("sh", None).unwrap().is_absolute());
        let missing = resolve("no-such-command-4f1c", None).unwrap_err();
        assert_eq!(
            missing,
            "command `no-such-command-4f1c` was not found on PATH; install it or give its full path"
        );
        assert!(resolve("./nope", Some(Path::new("/"))).is_err());
        assert!(resolve("", None).is_err());
    }
}

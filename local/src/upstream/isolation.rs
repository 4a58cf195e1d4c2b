//! Isolated stdio sources: the bubblewrap (`bwrap`) command line a server runs under, and the
//! resource limits its process tree gets.
//!
//! Inside, the whole filesystem is read-only; the person's home directory and the hub's store
//! are empty, read-only tmpfs mounts; the source's own package directory is bound back
//! read-only and its private state directory (`<store>/state/<namespace>/`) read-write, as
//! `HOME`. The only other writable places are `/tmp` ([`TMP_BYTES`]) and `/dev/shm`
//! ([`SHM_BYTES`]), tmpfs mounts of a fixed size, so filling them ends in `ENOSPC` instead of
//! taking the machine's memory; `/dev` itself is read-only. The network is a namespace of its
//! own with only loopback unless the source was granted it; pid, IPC, UTS and cgroup
//! namespaces are new; every capability is dropped; bwrap always sets `no_new_privs`; the
//! sandboxed tree has no controlling terminal.
//!
//! Limits, and what they do not cover:
//!
//! - Memory: `RLIMIT_DATA` ([`MAX_DATA_BYTES`]) for each process, so an allocation far beyond
//!   it fails at once (node: `RangeError: Array buffer allocation failed`) instead of pushing
//!   the machine into swap or the OOM killer. `RLIMIT_AS` is not used: V8 reserves tens of
//!   gigabytes of address space it never touches, while `RLIMIT_DATA` counts only writable
//!   private mappings. It is a limit per process, not for the tree: there is no cgroup memory
//!   limit (the hub owns no cgroup).
//! - Files: `RLIMIT_FSIZE` ([`MAX_FILE_BYTES`]) for any one file; the state directory is on
//!   the real disk and has no quota, so many files can still fill it.
//! - Processes: [`MAX_PROCESSES`] (threads count too), set inside the sandbox with util-linux's
//!   `prlimit` when the count covers only the sandbox: the hub runs as a person (not root)
//!   and `bwrap` is not setuid, so bwrap gives the sandbox a user namespace of its own, where
//!   Linux counts `RLIMIT_NPROC` from zero. Set outside, it would count all of the person's
//!   processes. Linux never applies `RLIMIT_NPROC` to root, so a hub running as root (CI)
//!   gets no process count limit: a fork bomb there grows until the machine's own limits
//!   (`pid_max`, memory) stop it or the source stops; the pid namespace only keeps its
//!   processes together, so they all die with the source.
//! - The end: when the hub stops a source it kills the source's process group, `bwrap` among
//!   it; `--die-with-parent` then kills bwrap's init, pid 1 of the sandbox's pid namespace,
//!   and the kernel kills every process left in that namespace, those that called `setsid` or
//!   forked twice included. Nothing a server started outlives it.
//!
//! No maintained crate drives bwrap (crates.io has thin, stale wrappers; `landlock` limits file
//! access but not the network before Linux 6.7, nor pids), so this is a plain argument list.
//! Running as root (CI), bwrap needs no user namespace; as a person, Debian's bwrap makes an
//! unprivileged one itself.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// How a stdio source is isolated. Stored in its spec, so the review screen and `hub doctor`
/// show exactly what it may reach.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Isolation {
    /// Directories the source reads, bound read-only (its installed package).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub read_only: Vec<String>,
    /// Its private writable directory, `HOME` inside.
    pub state: String,
    /// Directories hidden behind an empty tmpfs besides the home directory (the hub's store).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hidden: Vec<String>,
    /// Whether it may use the network; loopback only when not.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub net: bool,
}

impl Isolation {
    /// One line for the review screen and `hub doctor`.
    pub fn describe(&self) -> String {
        format!(
            "isolated (bubblewrap): filesystem read-only, home hidden, writes only to {}; network {}",
            self.state,
            if self.net { "granted" } else { "off" }
        )
    }
}

/// Most open files of an isolated server.
pub const MAX_OPEN_FILES: u64 = 4096;
/// Largest file an isolated server may write.
pub const MAX_FILE_BYTES: u64 = 1 << 30;
/// Most memory one process of an isolated server may allocate (`RLIMIT_DATA`): room for node
/// with its heap and WebAssembly memories, not for a runaway allocation.
pub const MAX_DATA_BYTES: u64 = 4 << 30;
/// Size of the sandbox's `/tmp`.
pub const TMP_BYTES: u64 = 256 << 20;
/// Size of the sandbox's `/dev/shm` (as Docker's default).
pub const SHM_BYTES: u64 = 64 << 20;
/// Most processes and threads of an isolated server's whole tree, where Linux can count them
/// for the sandbox alone (see the module docs).
pub const MAX_PROCESSES: u64 = 512;
/// util-linux's `prlimit`, which lowers the process limit inside the sandbox.
const PRLIMIT: &str = "/usr/bin/prlimit";

/// The hint every "cannot isolate" error ends with.
pub const MISSING_BWRAP: &str = "it runs isolated, and bubblewrap (`bwrap`) is not installed: install it \
     (`apt-get install bubblewrap`), or add the source again with `--no-isolate` to run it \
     unisolated on purpose";

/// `bwrap` on the hub's `PATH`.
pub fn find_bwrap() -> Option<PathBuf> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path).map(|dir| dir.join("bwrap")).find(|p| p.is_file())
}

/// The arguments `bwrap` runs `program args` with under `isolation`. `home` is the person's
/// home directory (hidden); `cwd` where the server starts (its state directory when `None`).
pub fn bwrap_args(
    isolation: &Isolation,
    home: Option<&Path>,
    cwd: Option<&Path>,
    program: &Path,
    args: &[String],
) -> Vec<OsString> {
    let limiter = process_limiter();
    sandbox_args(isolation, home, cwd, limiter.as_deref(), program, args)
}

/// [`bwrap_args`] with the `prlimit` that lowers the process limit inside, if any.
fn sandbox_args(
    isolation: &Isolation,
    home: Option<&Path>,
    cwd: Option<&Path>,
    prlimit: Option<&Path>,
    program: &Path,
    args: &[String],
) -> Vec<OsString> {
    let tmp_size = TMP_BYTES.to_string();
    let shm_size = SHM_BYTES.to_string();
    let nproc = format!("--nproc={MAX_PROCESSES}");
    let home = home.filter(|h| h.is_absolute() && *h != Path::new("/"));
    let mut out: Vec<OsString> = Vec::new();
    let mut push = |words: &[&std::ffi::OsStr]| out.extend(words.iter().map(|w| (*w).to_owned()));
    push(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
    push(&["--dev".as_ref(), "/dev".as_ref()]);
    push(&["--size".as_ref(), shm_size.as_ref(), "--tmpfs".as_ref(), "/dev/shm".as_ref()]);
    push(&["--proc".as_ref(), "/proc".as_ref()]);
    push(&["--size".as_ref(), tmp_size.as_ref(), "--tmpfs".as_ref(), "/tmp".as_ref()]);
    if let Some(home) = home {
        push(&["--tmpfs".as_ref(), home.as_os_str()]);
    }
    for dir in &isolation.hidden {
        push(&["--tmpfs".as_ref(), dir.as_ref()]);
    }
    for dir in &isolation.read_only {
        push(&["--ro-bind".as_ref(), dir.as_ref(), dir.as_ref()]);
    }
    let state: &std::ffi::OsStr = isolation.state.as_ref();
    push(&["--bind".as_ref(), state, state]);
    // Last, once the mount points below them exist: the tmpfs mounts that only hide stay
    // read-only, so none of them holds what a server writes (each could take half the RAM).
    push(&["--remount-ro".as_ref(), "/dev".as_ref()]);
    if let Some(home) = home {
        push(&["--remount-ro".as_ref(), home.as_os_str()]);
    }
    for dir in &isolation.hidden {
        push(&["--remount-ro".as_ref(), dir.as_ref()]);
    }
    push(&["--setenv".as_ref(), "HOME".as_ref(), state]);
    push(&["--setenv".as_ref(), "TMPDIR".as_ref(), "/tmp".as_ref()]);
    push(&[
        "--unshare-pid".as_ref(),
        "--unshare-ipc".as_ref(),
        "--unshare-uts".as_ref(),
        "--unshare-cgroup-try".as_ref(),
    ]);
    if !isolation.net {
        push(&["--unshare-net".as_ref()]);
    }
    push(&["--die-with-parent".as_ref(), "--new-session".as_ref(), "--cap-drop".as_ref(), "ALL".as_ref()]);
    let dir = cwd.map_or(state, Path::as_os_str);
    push(&["--chdir".as_ref(), dir]);
    push(&["--".as_ref()]);
    if let Some(prlimit) = prlimit {
        push(&[prlimit.as_os_str(), nproc.as_ref(), "--".as_ref()]);
    }
    push(&[program.as_os_str()]);
    out.extend(args.iter().map(OsString::from));
    out
}

/// `prlimit`, when a process limit set inside the sandbox counts the sandbox's processes and
/// nothing else: not root (Linux exempts root), a `bwrap` that is not setuid (so it makes a
/// user namespace of its own for a person), and util-linux's `prlimit` installed. `None`
/// otherwise: the limit would be void, or count the person's other programs too.
fn process_limiter() -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    if runs_as_root() {
        return None;
    }
    let setuid = find_bwrap()
        .and_then(|bwrap| bwrap.metadata().ok())
        .is_none_or(|meta| meta.permissions().mode() & 0o4000 != 0);
    let prlimit = PathBuf::from(PRLIMIT);
    (!setuid && prlimit.is_file()).then_some(prlimit)
}

/// Whether the hub runs as root (effective uid 0).
#[expect(unsafe_code, reason = "geteuid is a libc call; see the SAFETY note")]
fn runs_as_root() -> bool {
    // SAFETY: geteuid takes no arguments, cannot fail and touches no memory of ours.
    unsafe { nix::libc::geteuid() == 0 }
}

/// Lowers the resource limits of the child before it execs (inherited by everything it
/// starts): open files, file size, data size (memory), no core dumps. The process count is
/// not set here: Linux counts processes per user across the machine (and not at all for
/// root), so it would stop a person's other programs before a fork bomb. [`bwrap_args`] sets
/// it inside the sandbox instead, where it counts the sandbox alone.
#[expect(unsafe_code, reason = "pre_exec runs a closure in the forked child; see the SAFETY note")]
pub(crate) fn limit_resources(command: &mut tokio::process::Command) {
    // SAFETY: the closure runs in the forked child before exec and only makes `getrlimit` and
    // `setrlimit` system calls on stack values; it neither allocates nor takes a lock.
    unsafe {
        command.pre_exec(|| {
            use nix::libc;
            for (resource, max) in [
                (libc::RLIMIT_NOFILE, MAX_OPEN_FILES),
                (libc::RLIMIT_FSIZE, MAX_FILE_BYTES),
                (libc::RLIMIT_DATA, MAX_DATA_BYTES),
                (libc::RLIMIT_CORE, 0),
            ] {
                let mut limit = libc::rlimit { rlim_cur: 0, rlim_max: 0 };
                if libc::getrlimit(resource, &mut limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                limit.rlim_cur = limit.rlim_cur.min(max);
                limit.rlim_max = limit.rlim_max.min(max);
                if libc::setrlimit(resource, &limit) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use expect_test::expect;

    #[test]
    fn bwrap_hides_home_and_store_and_binds_the_package_back() {
        let isolation = Isolation {
            read_only: vec!["/h/.capabilities/hub/packages/npm/x@1.0.0".into()],
            state: "/h/.capabilities/hub/state/x".into(),
            hidden: vec!["/h/.capabilities/hub".into()],
            net: false,
        };
        let args = sandbox_args(
            &isolation,
            Some(Path::new("/h")),
            None,
            Some(Path::new(PRLIMIT)),
            Path::new("/usr/bin/node"),
            &["main.js".into()],
        );
        let line: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        expect![[r#"--ro-bind / / --dev /dev --size 67108864 --tmpfs /dev/shm --proc /proc --size 268435456 --tmpfs /tmp --tmpfs /h --tmpfs /h/.capabilities/hub --ro-bind /h/.capabilities/hub/packages/npm/x@1.0.0 /h/.capabilities/hub/packages/npm/x@1.0.0 --bind /h/.capabilities/hub/state/x /h/.capabilities/hub/state/x --remount-ro /dev --remount-ro /h --remount-ro /h/.capabilities/hub --setenv HOME /h/.capabilities/hub/state/x --setenv TMPDIR /tmp --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net --die-with-parent --new-session --cap-drop ALL --chdir /h/.capabilities/hub/state/x -- /usr/bin/prlimit --nproc=512 -- /usr/bin/node main.js"#]]
        .assert_eq(&line.join(" "));
        let granted = Isolation { net: true, ..isolation };
        let args = sandbox_args(&granted, None, None, None, Path::new("/bin/true"), &[]);
        assert!(!args.iter().any(|a| a == "--unshare-net"));
        assert!(!args.iter().any(|a| a == "/h"), "no home given, none hidden: {args:?}");
        assert_eq!(args[args.len() - 2..], ["--".into(), OsString::from("/bin/true")]);
    }
}

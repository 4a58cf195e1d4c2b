//! Isolated stdio sources: the bubblewrap (`bwrap`) command line a server runs under, and the
//! resource limits its process tree gets.
//!
//! Inside, the whole filesystem is read-only; the person's home directory, the hub's store and
//! `/tmp` are empty tmpfs mounts; the source's own package directory is bound back read-only and
//! its private state directory (`<store>/state/<namespace>/`) read-write, as `HOME`. The network
//! is a namespace of its own with only loopback unless the source was granted it; pid, IPC, UTS
//! and cgroup namespaces are new; every capability is dropped; bwrap always sets
//! `no_new_privs`; the sandboxed tree dies with the supervisor and has no controlling terminal.
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
    let mut out: Vec<OsString> = Vec::new();
    let mut push = |words: &[&std::ffi::OsStr]| out.extend(words.iter().map(|w| (*w).to_owned()));
    push(&["--ro-bind".as_ref(), "/".as_ref(), "/".as_ref()]);
    push(&["--dev".as_ref(), "/dev".as_ref(), "--proc".as_ref(), "/proc".as_ref()]);
    push(&["--tmpfs".as_ref(), "/tmp".as_ref()]);
    if let Some(home) = home.filter(|h| h.is_absolute() && *h != Path::new("/")) {
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
    push(&["--".as_ref(), program.as_os_str()]);
    out.extend(args.iter().map(OsString::from));
    out
}

/// Lowers the resource limits of the child before it execs (inherited by everything it
/// starts): open files, file size, no core dumps. A process count limit is left out: Linux
/// counts processes per user across the machine (and not at all for root), so it would stop
/// a person's other programs before a fork bomb; the pid namespace keeps the bomb's processes
/// together, and they die with the source.
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
        let args = bwrap_args(
            &isolation,
            Some(Path::new("/h")),
            None,
            Path::new("/usr/bin/node"),
            &["main.js".into()],
        );
        let line: Vec<String> = args.iter().map(|a| a.to_string_lossy().into_owned()).collect();
        expect![[r#"--ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --tmpfs /h --tmpfs /h/.capabilities/hub --ro-bind /h/.capabilities/hub/packages/npm/x@1.0.0 /h/.capabilities/hub/packages/npm/x@1.0.0 --bind /h/.capabilities/hub/state/x /h/.capabilities/hub/state/x --setenv HOME /h/.capabilities/hub/state/x --setenv TMPDIR /tmp --unshare-pid --unshare-ipc --unshare-uts --unshare-cgroup-try --unshare-net --die-with-parent --new-session --cap-drop ALL --chdir /h/.capabilities/hub/state/x -- /usr/bin/node main.js"#]]
        .assert_eq(&line.join(" "));
        let granted = Isolation { net: true, ..isolation };
        let args = bwrap_args(&granted, None, None, Path::new("/bin/true"), &[]);
        assert!(!args.iter().any(|a| a == "--unshare-net"));
    }
}

//! A private hub store in a temporary directory, the `capabilities` binary (built once per test
//! process) and the CLI a person runs on the store.

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::{Arc, OnceLock};

/// The repository root.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the crate sits in the repository").to_owned()
}

/// The TypeScript SDK the fixture servers load, after checking node and the packages are there.
pub fn sdk_dir() -> PathBuf {
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|out| out.status.success()),
        "`node` is not on PATH: install Node.js 20 or later, then run `cd node && npm ci`"
    );
    let dir = repo().join("node/node_modules/@modelcontextprotocol");
    for package in ["sdk", "server-everything", "server-memory"] {
        assert!(
            dir.join(package).join("package.json").is_file(),
            "{} is missing: run `cd node && npm ci` at the repository root",
            dir.join(package).display()
        );
    }
    dir.join("sdk")
}

/// The `capabilities` binary: `$CAPABILITIES_BIN` when set, else built (debug, with
/// `cargo build -p capabilities`) the first time it is asked for in this process.
pub fn binary() -> &'static Path {
    static BINARY: OnceLock<PathBuf> = OnceLock::new();
    BINARY.get_or_init(|| {
        if let Some(given) = std::env::var_os("CAPABILITIES_BIN") {
            let path = PathBuf::from(given);
            assert!(path.is_file(), "CAPABILITIES_BIN={} is not a file", path.display());
            return path;
        }
        let target =
            std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from);
        let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
        let status = Command::new(cargo)
            .args(["build", "--quiet", "-p", "capabilities", "--bin", "capabilities"])
            .current_dir(repo())
            .env("CARGO_TARGET_DIR", &target)
            .status()
            .expect("cargo starts");
        assert!(status.success(), "`cargo build -p capabilities` failed");
        let path = target.join("debug/capabilities");
        assert!(path.is_file(), "no binary at {}", path.display());
        path
    })
}

/// What a CLI command did.
#[derive(Debug, Clone)]
pub struct Ran {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Ran {
    /// Panics with the output unless the command exited with `code`.
    pub fn expect_code(self, code: i32) -> Ran {
        assert_eq!(self.code, code, "exit {}:\n{}\n{}", self.code, self.stdout, self.stderr);
        self
    }
}

/// A hub store of its own: `<dir>/hub` is CAPABILITIES_HOME, `<dir>/home` is HOME. Secrets go to
/// the store's mode-600 file (no keychain is reachable), and `$BROWSER` writes the page address
/// it is given to `<dir>/opened` instead of opening anything.
/// Clones share the store (for several serving processes on one store); it is removed when the
/// last clone is dropped.
#[derive(Clone)]
pub struct Home {
    dir: Arc<tempfile::TempDir>,
    hub: PathBuf,
}

impl Default for Home {
    fn default() -> Home {
        Home::new()
    }
}

impl Home {
    pub fn new() -> Home {
        let dir = tempfile::tempdir().expect("a temporary directory");
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        let browser = dir.path().join("browser.sh");
        let opened = dir.path().join("opened");
        std::fs::write(&browser, format!("#!/bin/sh\necho \"$1\" >> '{}'\n", opened.display())).unwrap();
        std::fs::set_permissions(&browser, std::fs::Permissions::from_mode(0o700)).unwrap();
        let hub = dir.path().join("hub");
        Home { dir: Arc::new(dir), hub }
    }

    /// CAPABILITIES_HOME.
    pub fn path(&self) -> &Path {
        &self.hub
    }

    /// A scratch directory beside the store, for fixtures' files.
    pub fn scratch(&self) -> &Path {
        self.dir.path()
    }

    /// The environment every process on this store gets.
    pub fn envs(&self) -> Vec<(&'static str, String)> {
        let home = self.dir.path().join("home").display().to_string();
        vec![
            ("CAPABILITIES_HOME", self.path().display().to_string()),
            ("HOME", home.clone()),
            ("XDG_RUNTIME_DIR", home),
            ("CAPABILITIES_KEYCHAIN", "file".to_owned()),
            ("DBUS_SESSION_BUS_ADDRESS", format!("unix:path={}", self.dir.path().join("no-bus").display())),
            ("BROWSER", self.dir.path().join("browser.sh").display().to_string()),
            ("NO_COLOR", "1".to_owned()),
            ("DO_NOT_TRACK", "1".to_owned()),
        ]
    }

    /// `capabilities <args>` on this store.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(binary());
        command.args(args).envs(self.envs());
        command
    }

    /// `capabilities hub <args>` with `stdin`, as a person runs it.
    pub fn cli(&self, args: &[&str], stdin: Option<&str>) -> Ran {
        let mut command = self.command(&[&["hub"], args].concat());
        command.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = command.spawn().expect("the binary starts");
        let mut input = child.stdin.take().unwrap();
        if let Some(text) = stdin {
            input.write_all(text.as_bytes()).unwrap();
        }
        drop(input);
        let out = child.wait_with_output().unwrap();
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// Every file under the store, with its bytes, sorted by path.
    pub fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        walk_files(self.path())
    }

    /// The page addresses the hub handed `$BROWSER`.
    pub fn opened(&self) -> Vec<String> {
        std::fs::read_to_string(self.dir.path().join("opened"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

/// Every file under `dir`, with its bytes, sorted by path.
pub(crate) fn walk_files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if let Ok(bytes) = std::fs::read(&path) {
                out.push((path, bytes));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, &mut out);
    out.sort();
    out
}

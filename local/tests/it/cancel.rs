//! `hub cancel` from another process stops an attempt that is running: code in a busy loop,
//! and code waiting on a call in flight. The attempt ends `cancelled`, and the call that was in
//! flight stays in the journal without an outcome, so it is never made again.

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::support::HttpFixture;

struct Hub {
    dir: tempfile::TempDir,
}

impl Hub {
    fn new() -> Hub {
        Hub { dir: tempfile::tempdir().unwrap() }
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    fn command(&self, args: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_capabilities"));
        command.arg("hub").args(args).env("CAPABILITIES_HOME", self.home()).env("NO_COLOR", "1");
        command.stdin(Stdio::null());
        command
    }

    fn run(&self, args: &[&str]) -> (i32, String, String) {
        let Output { status, stdout, stderr } = self.command(args).output().unwrap();
        (
            status.code().unwrap_or(-1),
            String::from_utf8_lossy(&stdout).into_owned(),
            String::from_utf8_lossy(&stderr).into_owned(),
        )
    }

    /// Starts `hub --json exec code` in the background and waits until its run is running.
    #[expect(clippy::zombie_processes, reason = "the caller waits for the child it gets back")]
    fn start(&self, code: &str) -> (Child, String) {
        let mut child = self
            .command(&["--json", "exec", code])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let (_, stdout, _) = self.run(&["--json", "runs", "--status", "running"]);
            if let Ok(Value::Object(list)) = serde_json::from_str::<Value>(&stdout) {
                if let Some(id) = list["runs"].get(0).and_then(|r| r["id"].as_str()) {
                    return (child, id.to_owned());
                }
            }
            if Instant::now() >= deadline {
                let _ = child.kill();
                let _ = child.wait();
                panic!("the run never showed as running");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Cancels `id` from this process and checks what both sides say; returns how long the
    /// running attempt took to end after the cancel was asked for.
    fn cancel(&self, mut exec: Child, id: &str) -> (Value, Duration) {
        let asked = Instant::now();
        let (code, stdout, stderr) = self.run(&["--json", "cancel", id]);
        let cancelled: Value =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}{stderr}"));
        assert_eq!(cancelled["status"], "cancelled", "{stdout}{stderr}");
        assert_eq!(code, 3, "{stdout}{stderr}");
        let status = exec.wait().unwrap();
        let ended = asked.elapsed();
        let mut out = String::new();
        std::io::Read::read_to_string(exec.stdout.as_mut().unwrap(), &mut out).unwrap();
        let envelope: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        assert_eq!(envelope["status"], "cancelled", "{out}");
        assert_eq!(envelope["error"]["code"], "cancelled", "{out}");
        assert_eq!(status.code(), Some(3), "{out}");
        assert!(!self.home().join("runs").join(format!("{id}.cancel")).exists(), "the request is taken back");
        (envelope, ended)
    }

    fn journal(&self, id: &str) -> Vec<Value> {
        let text = std::fs::read_to_string(self.home().join("runs").join(format!("{id}.journal.jsonl")))
            .unwrap_or_default();
        text.lines().map(|l| serde_json::from_str(l).unwrap()).collect()
    }
}

#[test]
fn cancel_stops_code_in_a_busy_loop() {
    let hub = Hub::new();
    let (exec, id) = hub.start("while (true) {}");
    let (_, ended) = hub.cancel(exec, &id);
    // Far inside the 10 s compute limit, which would end it as `compute_limit` instead.
    assert!(ended < Duration::from_secs(5), "the attempt took {ended:?} to stop");
    eprintln!("busy loop stopped {} ms after the cancel was asked", ended.as_millis());
}

#[test]
fn cancel_stops_a_call_in_flight_and_it_is_never_repeated() {
    let server = HttpFixture::start();
    let url = format!("http://127.0.0.1:{}/mcp", server.port);
    let hub = Hub::new();
    let (code, stdout, stderr) = hub.run(&["add", &url, "--namespace", "fixture", "--yes"]);
    assert_eq!(code, 0, "{stdout}{stderr}");

    let (exec, id) = hub.start("await fixture.sleep({ ms: 60000 }); return 'woke'");
    // Wait until the call is on its way: its intent line is in the journal.
    let deadline = Instant::now() + Duration::from_secs(30);
    while hub.journal(&id).is_empty() {
        assert!(Instant::now() < deadline, "the call never left");
        std::thread::sleep(Duration::from_millis(20));
    }
    let (envelope, ended) = hub.cancel(exec, &id);
    assert!(ended < Duration::from_secs(5), "the attempt took {ended:?} to stop");
    eprintln!("call in flight stopped {} ms after the cancel was asked", ended.as_millis());
    assert_eq!(envelope["calls"][0]["address"], "fixture.sleep", "{envelope}");

    // The call went out once and has no outcome; asking again changes nothing.
    let kinds = |hub: &Hub| {
        hub.journal(&id).iter().map(|e| e["kind"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    assert_eq!(kinds(&hub), ["call"]);
    let (_, again, _) = hub.run(&["--json", "cancel", &id]);
    let again: Value = serde_json::from_str(&again).unwrap();
    assert_eq!(again["status"], "cancelled", "{again}");
    assert_eq!(kinds(&hub), ["call"]);
}

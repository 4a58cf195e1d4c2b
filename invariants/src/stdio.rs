//! `LocalStdio`: the real binary's `hub serve --stdio` under a small JSON-RPC line client that
//! declares no elicitation (so approvals go to the page or the CLI).

use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::home::Home;
use crate::target::Target;

pub struct LocalStdio {
    home: Home,
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    stderr: Arc<Mutex<Vec<u8>>>,
    next_id: u64,
    /// With elicitation declared: the answer every `elicitation/create` gets, and what was asked.
    eliciting: Option<(Value, Vec<Value>)>,
}

/// Collects a pipe into `sink` on a thread of its own, so the child never blocks on it.
pub(crate) fn drain(mut pipe: impl Read + Send + 'static, sink: Arc<Mutex<Vec<u8>>>) {
    std::thread::spawn(move || {
        let mut buf = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut buf) {
            if n == 0 {
                break;
            }
            sink.lock().unwrap().extend_from_slice(&buf[..n]);
        }
    });
}

impl LocalStdio {
    pub fn start(home: Home) -> LocalStdio {
        LocalStdio::start_with(home, None)
    }

    /// A client that declares form elicitation and answers every prompt with `answer`
    /// (`{"action": "decline"}`, or `{"action": "accept", "content": {"choice": "once"}}`).
    pub fn eliciting(home: Home, answer: Value) -> LocalStdio {
        LocalStdio::start_with(home, Some((answer, Vec::new())))
    }

    fn start_with(home: Home, eliciting: Option<(Value, Vec<Value>)>) -> LocalStdio {
        let (child, stdin, lines, stderr) = spawn(&home);
        let mut target = LocalStdio { home, child, stdin, lines, stderr, next_id: 1, eliciting };
        target.initialize();
        target
    }

    /// The `elicitation/create` requests the hub sent so far (their params).
    pub fn elicitations(&self) -> &[Value] {
        self.eliciting.as_ref().map_or(&[], |(_, seen)| seen)
    }

    fn initialize(&mut self) {
        let capabilities =
            if self.eliciting.is_some() { json!({"elicitation": {"form": {}}}) } else { json!({}) };
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": capabilities,
                   "clientInfo": {"name": "invariants", "version": "0"}}),
        );
        assert!(answer.get("result").is_some(), "initialize failed: {answer}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }
}

type Spawned = (Child, ChildStdin, mpsc::Receiver<String>, Arc<Mutex<Vec<u8>>>);

fn spawn(home: &Home) -> Spawned {
    let mut child = home
        .command(&["hub", "serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    let stderr = Arc::new(Mutex::new(Vec::new()));
    drain(child.stderr.take().unwrap(), stderr.clone());
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, stdin, lines, stderr)
}

impl Target for LocalStdio {
    fn name(&self) -> &'static str {
        "local-stdio"
    }

    fn hub(&self) -> &Home {
        &self.home
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = self.lines.recv_timeout(left) else {
                return json!({"error": {"code": -1, "message": format!("no answer to {method}")}});
            };
            let message: Value = serde_json::from_str(&line)
                .unwrap_or_else(|e| panic!("stdout holds JSON-RPC lines ({e}): {line}"));
            if message["id"] == json!(id) && message.get("method").is_none() {
                return message;
            }
            if message.get("method").is_some() && message.get("id").is_some() {
                // A request from the hub: an elicitation gets the set answer, anything else
                // (ping) an empty result.
                let mut result = json!({});
                if message["method"] == json!("elicitation/create") {
                    if let Some((answer, seen)) = &mut self.eliciting {
                        seen.push(message["params"].clone());
                        result = answer.clone();
                    }
                }
                self.send(json!({"jsonrpc": "2.0", "id": message["id"], "result": result}));
            }
        }
    }

    fn send(&mut self, message: Value) {
        let _ = writeln!(self.stdin, "{message}");
        let _ = self.stdin.flush();
    }

    fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.stderr.lock().unwrap()).into_owned()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    fn restart(&mut self) {
        self.kill();
        let (child, stdin, lines, stderr) = spawn(&self.home);
        let before = std::mem::take(&mut *self.stderr.lock().unwrap());
        stderr.lock().unwrap().splice(0..0, before);
        self.child = child;
        self.stdin = stdin;
        self.lines = lines;
        self.stderr = stderr;
        self.initialize();
    }
}

impl Drop for LocalStdio {
    fn drop(&mut self) {
        self.kill();
    }
}

//! `LocalStdio`: the real binary's `hub serve --stdio` under a small JSON-RPC line client that
//! declares no elicitation (so approvals go to the page or the CLI).

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::home::Home;
use crate::process::{Process, Sink, drain};
use crate::target::Target;

pub struct LocalStdio {
    home: Home,
    process: Process,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
    /// With elicitation declared: the answer every `elicitation/create` gets, and what was asked.
    eliciting: Option<(Value, Vec<Value>)>,
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
        let stderr = Sink::default();
        let (child, stdin, lines) = spawn(&home, &stderr);
        let process = Process::new(child, stderr);
        let mut target = LocalStdio { home, process, stdin, lines, next_id: 1, eliciting };
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

fn spawn(home: &Home, stderr: &Sink) -> (Child, ChildStdin, mpsc::Receiver<String>) {
    let mut child = home
        .command(&["hub", "serve", "--stdio"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let stdin = child.stdin.take().unwrap();
    let stdout = child.stdout.take().unwrap();
    drain(child.stderr.take().unwrap(), stderr.clone());
    let (tx, lines) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    (child, stdin, lines)
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
        self.process.stderr()
    }

    fn pid(&self) -> u32 {
        self.process.pid()
    }

    fn kill(&mut self) {
        self.process.kill();
    }

    fn restart(&mut self) {
        self.process.kill();
        let (child, stdin, lines) = spawn(&self.home, &self.process.sink());
        self.process.replace(child);
        self.stdin = stdin;
        self.lines = lines;
        self.initialize();
    }
}

impl Drop for LocalStdio {
    // Before the home goes.
    fn drop(&mut self) {
        self.process.kill();
    }
}

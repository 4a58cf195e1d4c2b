//! A minimal MCP client over stdio: newline-delimited JSON-RPC to a child process.

use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// How long one request may take before the harness gives up on the peer.
const ANSWER_WITHIN: Duration = Duration::from_secs(60);

pub struct Peer {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    lines: mpsc::Receiver<String>,
    next_id: u64,
}

impl Peer {
    /// Starts `command` and completes the MCP handshake; returns the peer and its
    /// `initialize` result.
    pub fn start(name: &str, mut command: Command) -> Result<(Peer, Value)> {
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .with_context(|| format!("starting {name}"))?;
        let stdin = child.stdin.take();
        let stdout = child.stdout.take().context("the child has stdout")?;
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut peer = Peer { name: name.to_owned(), child, stdin, lines, next_id: 1 };
        let init = peer.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "capabilities-evals", "version": "0"}}),
        )?;
        peer.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
        Ok((peer, init))
    }

    fn send(&mut self, message: &Value) -> Result<()> {
        let stdin = self.stdin.as_mut().context("the peer's stdin is closed")?;
        writeln!(stdin, "{message}").with_context(|| format!("writing to {}", self.name))?;
        stdin.flush()?;
        Ok(())
    }

    /// One request; its `result`, or an error naming the peer and method.
    pub fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        let id = self.next_id;
        self.next_id += 1;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let deadline = Instant::now() + ANSWER_WITHIN;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = self.lines.recv_timeout(left) else {
                bail!("{} gave no answer to {method} within {}s", self.name, ANSWER_WITHIN.as_secs());
            };
            let Ok(message) = serde_json::from_str::<Value>(&line) else { continue };
            if message.get("id") != Some(&json!(id)) || message.get("method").is_some() {
                continue;
            }
            if let Some(error) = message.get("error") {
                bail!("{} answered {method} with an error: {error}", self.name);
            }
            return Ok(message.get("result").cloned().unwrap_or(Value::Null));
        }
    }

    /// Closes stdin so the peer can exit on its own (and reap its children), then waits a
    /// little before killing it.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        drop(self.stdin.take());
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Peer {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The text a model reads from a `tools/call` result: its text content blocks, joined.
pub fn result_text(result: &Value) -> String {
    result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| {
            blocks.iter().filter_map(|b| b.get("text").and_then(Value::as_str)).collect::<Vec<_>>().join("\n")
        })
        .unwrap_or_default()
}

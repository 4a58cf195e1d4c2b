//! A stdio server's lane for calls made in place: a run thread writes its `tools/call` request
//! straight to the server's stdin and reads the answer straight from its stdout, so a call
//! to a running server costs neither a hop to the pool's runtime and back nor the rmcp client's
//! parsing of it.
//!
//! The rmcp client keeps the connection: it starts the server, runs `initialize`, lists tools,
//! and answers whatever the server asks. Its writes and the lane's share the server's stdin
//! through one lock, a whole line at a time, so two messages never interleave. Lane requests
//! carry ids of their own (`lane-<n>`, strings; rmcp numbers its own), and whoever reads the
//! server's stdout (`stdout.rs`: the waiting run thread itself, or else the pump) takes an
//! answer to one of them off the stream before rmcp sees it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::AsyncWriteExt;
use tokio::process::ChildStdin;
use tokio::sync::oneshot;

use super::pool::lock;
use super::stdout::Stdout;

/// The prefix of lane request ids.
const ID_PREFIX: &str = "lane-";

/// The longest write a pipe takes whole or not at all (`PIPE_BUF`: 4096 bytes on Linux, at
/// least 512 by POSIX).
const ATOMIC_PIPE_WRITE: usize = if cfg!(target_os = "linux") { 4096 } else { 512 };

/// The server's stdin, shared by the rmcp client's writes and the lane's. `None` once closed.
pub(super) type SharedStdin = Arc<tokio::sync::Mutex<Option<ChildStdin>>>;

/// Why a lane call got no answer.
#[derive(Debug)]
pub(super) enum LaneEnd {
    /// The server answered with a JSON-RPC error.
    Refused { message: String, code: Option<i64> },
    /// No answer within the call's timeout (a cancellation was sent).
    Timeout,
    /// The server's pipes closed, or it was not running.
    Closed,
    /// The answer was neither a result nor an error.
    Malformed,
}

/// One stdio server's lane. Cheap to clone.
#[derive(Clone)]
pub(super) struct Lane {
    stdin: SharedStdin,
    stdout: Arc<Stdout>,
    waiting: Arc<Waiting>,
    /// The pool's runtime, where the pipes are driven.
    pumps: tokio::runtime::Handle,
}

/// The lane's calls waiting for their answers.
#[derive(Default)]
pub(super) struct Waiting {
    next: AtomicU64,
    closed: AtomicBool,
    answers: Mutex<HashMap<String, oneshot::Sender<Value>>>,
}

impl Waiting {
    /// A slot for the answer to request `id`.
    pub(super) fn slot(&self, id: &str) -> oneshot::Receiver<Value> {
        let (answer, answered) = oneshot::channel();
        lock(&self.answers).insert(id.to_owned(), answer);
        answered
    }

    /// Once stdout has ended: every waiting call ends as closed, and later calls fail at once.
    pub(super) fn close(&self) {
        self.closed.store(true, Ordering::Release);
        lock(&self.answers).clear();
    }

    /// The reader's side: hands `message` to the lane call waiting for it and says so, or gives
    /// it back (not a lane answer; rmcp's to read).
    pub(super) fn take_answer(&self, message: Value) -> Option<Value> {
        let id = match message.get("id") {
            Some(Value::String(id)) if id.starts_with(ID_PREFIX) => id,
            _ => return Some(message),
        };
        if message.get("method").is_some() {
            // A request of the server's that happens to use such an id: rmcp answers requests.
            return Some(message);
        }
        // Taken either way: an answer to a call that timed out or was dropped has no reader.
        let waiting = lock(&self.answers).remove(id.as_str());
        if let Some(answer) = waiting {
            let _ = answer.send(message);
        }
        None
    }
}

impl Lane {
    /// The lane over `stdin`, its answers read from `stdout` into `waiting`; its pumps run on
    /// the current runtime.
    pub(super) fn new(stdin: SharedStdin, stdout: Arc<Stdout>, waiting: Arc<Waiting>) -> Lane {
        Lane { stdin, stdout, waiting, pumps: tokio::runtime::Handle::current() }
    }

    /// The pump's side, once stdout has ended: every waiting call ends as closed, and later
    /// calls fail at once.
    pub(super) fn close(&self) {
        self.waiting.close();
    }

    pub(super) fn is_closed(&self) -> bool {
        self.waiting.closed.load(Ordering::Acquire)
    }

    /// Sends `method` with `params` and waits up to `timeout` for the answer; the JSON-RPC
    /// result as the server sent it. Works from any runtime: the pipe is driven by the pool's.
    pub(super) async fn request(
        &self,
        method: &str,
        params: Value,
        timeout: Duration,
    ) -> Result<Value, LaneEnd> {
        let id = format!("{ID_PREFIX}{}", self.waiting.next.fetch_add(1, Ordering::Relaxed));
        let mut answered = self.waiting.slot(&id);
        // Whatever happens next (an error, a timeout, the run dropped), the slot goes.
        let _slot = Slot { waiting: &self.waiting, id: &id };
        // Asked after the slot is in: `close` sets the flag before it clears the slots.
        if self.is_closed() {
            return Err(LaneEnd::Closed);
        }
        let message = json!({ "jsonrpc": "2.0", "id": id, "method": method, "params": params });
        // The timeout covers the write too: a server that stops reading its stdin fills the pipe.
        let asked = async {
            self.write(&message).await?;
            // Read on this thread when it can be: the answer then wakes no other thread first.
            self.stdout.answer(&mut answered).await.ok_or(LaneEnd::Closed)
        };
        let message = match tokio::time::timeout(timeout, asked).await {
            Ok(answer) => answer?,
            Err(_) => {
                self.cancel(&id);
                return Err(LaneEnd::Timeout);
            }
        };
        answer_of(message)
    }

    /// Tells the server the call `id` is no longer waited for, as rmcp does on a timeout. Sent
    /// from the pool's runtime without waiting: the pipe may be full.
    fn cancel(&self, id: &str) {
        let cancel = json!({
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": { "requestId": id, "reason": "request timeout" },
        });
        let Ok(mut line) = serde_json::to_vec(&cancel) else { return };
        line.push(b'\n');
        let stdin = Arc::clone(&self.stdin);
        self.pumps.spawn(async move {
            let _ = write_line(&stdin, &line).await;
        });
    }

    /// Writes one message as one line, under the lock the rmcp client's writes take too. A line
    /// the pipe takes in one write (or not at all) is written here; a longer one by a task on
    /// the pool's runtime, so a call dropped halfway (a cancelled run) never leaves half a line
    /// for the next message to follow.
    async fn write(&self, message: &Value) -> Result<(), LaneEnd> {
        let mut line = serde_json::to_vec(message).map_err(|_| LaneEnd::Malformed)?;
        line.push(b'\n');
        if line.len() <= ATOMIC_PIPE_WRITE {
            return write_line(&self.stdin, &line).await;
        }
        let stdin = Arc::clone(&self.stdin);
        let task = self.pumps.spawn(async move { write_line(&stdin, &line).await });
        task.await.unwrap_or(Err(LaneEnd::Closed))
    }
}

/// Writes `line` to the server's stdin under its lock.
pub(super) async fn write_line(stdin: &SharedStdin, line: &[u8]) -> Result<(), LaneEnd> {
    let mut stdin = stdin.lock().await;
    let Some(pipe) = stdin.as_mut() else { return Err(LaneEnd::Closed) };
    let written = async {
        pipe.write_all(line).await?;
        pipe.flush().await
    };
    written.await.map_err(|_| LaneEnd::Closed)
}

/// The result of a JSON-RPC answer, or its error.
fn answer_of(mut message: Value) -> Result<Value, LaneEnd> {
    let Some(object) = message.as_object_mut() else { return Err(LaneEnd::Malformed) };
    if let Some(result) = object.remove("result") {
        return Ok(result);
    }
    let Some(error) = object.get("error") else { return Err(LaneEnd::Malformed) };
    let message = match error.get("message") {
        Some(Value::String(text)) => text.clone(),
        _ => return Err(LaneEnd::Malformed),
    };
    Err(LaneEnd::Refused { message, code: error.get("code").and_then(Value::as_i64) })
}

/// A waiting call's slot, removed when the call ends however it ends.
struct Slot<'a> {
    waiting: &'a Waiting,
    id: &'a str,
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        lock(&self.waiting.answers).remove(self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_results_or_errors() {
        assert_eq!(
            answer_of(json!({"jsonrpc": "2.0", "id": "lane-0", "result": {"a": 1}})).unwrap(),
            json!({"a": 1})
        );
        let refused =
            answer_of(json!({"id": "lane-0", "error": {"code": -32602, "message": "no such tool"}}));
        assert!(
            matches!(refused, Err(LaneEnd::Refused { ref message, code: Some(-32602) }) if message == "no such tool")
        );
        assert!(matches!(answer_of(json!({"id": "lane-0"})), Err(LaneEnd::Malformed)));
        assert!(matches!(answer_of(json!({"id": "lane-0", "error": {"code": 1}})), Err(LaneEnd::Malformed)));
        assert!(matches!(answer_of(json!([1])), Err(LaneEnd::Malformed)));
    }

    #[tokio::test]
    async fn only_lane_answers_are_taken() {
        let lane = Waiting::default();
        let (answer, mut answered) = oneshot::channel();
        lock(&lane.answers).insert("lane-3".to_owned(), answer);
        // rmcp's own answers, and requests from the server, go on to rmcp.
        assert!(lane.take_answer(json!({"id": 3, "result": {}})).is_some());
        assert!(lane.take_answer(json!({"id": "lane-3", "method": "ping"})).is_some());
        assert!(lane.take_answer(json!({"method": "notifications/progress"})).is_some());
        // An answer nobody waits for any more is dropped, not passed on.
        assert!(lane.take_answer(json!({"id": "lane-9", "result": {}})).is_none());
        assert!(lane.take_answer(json!({"id": "lane-3", "result": {"ok": true}})).is_none());
        assert_eq!(answered.try_recv().unwrap()["result"], json!({"ok": true}));
    }
}

//! The stdio transport's two ends as rmcp reads and writes them. rmcp drops a message longer
//! than [`MAX_MESSAGE_BYTES`] without a word; [`Checked`] watches the input go by and answers
//! each such line with a JSON-RPC error that names the limit (and the request's id when it
//! comes early in the line), which [`Lines`] writes between two of rmcp's messages. Nothing is
//! copied or handed between tasks on the way: a message costs what rmcp reading stdin and
//! writing stdout itself costs.

use std::collections::VecDeque;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::{Context, Poll, ready};

use rmcp::model::{JsonRpcResponse, JsonRpcVersion2_0, RequestId, ServerResult};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// The longest message the hub reads: `execute` code is at most 64 KiB, so this is generous.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// The longest line rmcp keeps, its newline counted: exactly the messages [`Checked`] lets by.
pub const MAX_LINE_BYTES: usize = MAX_MESSAGE_BYTES + 1;

/// How much of an oversized line is kept to find its id.
const HEAD_BYTES: usize = 256;

/// The output rmcp writes its messages to, shared with [`Checked`], which puts its errors
/// between them: never inside a message rmcp is partway through. Cheap to clone.
pub struct Lines<W> {
    shared: Arc<Mutex<Output<W>>>,
}

impl<W> Clone for Lines<W> {
    fn clone(&self) -> Self {
        Lines { shared: Arc::clone(&self.shared) }
    }
}

struct Output<W> {
    out: W,
    /// Whether rmcp has written part of a message and not yet its newline.
    in_message: bool,
    /// Errors and answers written from outside rmcp, waiting to be written, and how much of the
    /// first is out.
    errors: VecDeque<Vec<u8>>,
    written: usize,
    /// How rmcp's answers to requests already answered (see [`Lines::answer_now`]) begin: each
    /// is dropped when rmcp writes it.
    answered: Vec<Vec<u8>>,
    /// Whether the rest of rmcp's current message is being dropped.
    dropping: bool,
}

impl<W: AsyncWrite + Unpin> Output<W> {
    /// Writes the waiting errors, each whole, unless rmcp is partway through a message.
    fn poll_errors(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        if self.in_message {
            return Poll::Ready(Ok(()));
        }
        while let Some(error) = self.errors.front() {
            while self.written < error.len() {
                let n = ready!(Pin::new(&mut self.out).poll_write(cx, &error[self.written..]))?;
                if n == 0 {
                    return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
                }
                self.written += n;
            }
            self.errors.pop_front();
            self.written = 0;
            super::sent::message_sent();
        }
        Poll::Ready(Ok(()))
    }

    /// How many of `bytes`, the start of a message from rmcp, to drop: the whole line when it
    /// answers a request already answered, else none.
    fn dropped_from(&mut self, bytes: &[u8]) -> usize {
        if !self.dropping {
            let Some(at) = self.answered.iter().position(|prefix| bytes.starts_with(prefix)) else {
                return 0;
            };
            self.answered.swap_remove(at);
        }
        match bytes.iter().position(|b| *b == b'\n') {
            Some(end) => {
                self.dropping = false;
                end + 1
            }
            None => {
                self.dropping = true;
                bytes.len()
            }
        }
    }
}

impl<W: AsyncWrite + Unpin> Lines<W> {
    pub fn new(out: W) -> Lines<W> {
        let output = Output {
            out,
            in_message: false,
            errors: VecDeque::new(),
            written: 0,
            answered: Vec::new(),
            dropping: false,
        };
        Lines { shared: Arc::new(Mutex::new(output)) }
    }

    fn output(&self) -> MutexGuard<'_, Output<W>> {
        self.shared.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Queues `error` and writes it now if the output is free; otherwise rmcp's next write or
    /// flush, or the next read, writes it.
    fn answer(&self, error: Vec<u8>, cx: &mut Context<'_>) {
        let mut output = self.output();
        output.errors.push_back(error);
        let _ = output.poll_errors(cx);
    }

    /// Writes the errors still waiting if the output is free now; a read calls this, so an
    /// answer the output could not take at once is not left waiting for rmcp's next message.
    fn retry(&self, cx: &mut Context<'_>) {
        let mut output = self.output();
        if !output.errors.is_empty() {
            let _ = output.poll_errors(cx);
        }
    }

    /// Writes the errors still waiting, and flushes.
    pub async fn flush_errors(&self) -> io::Result<()> {
        std::future::poll_fn(|cx| {
            let mut output = self.output();
            ready!(output.poll_errors(cx))?;
            Pin::new(&mut output.out).poll_flush(cx)
        })
        .await
    }
}

/// Where a `tools/call` can be answered from the thread that ran it.
pub trait AnswerNow: Send + Sync {
    /// Writes `result` (shaped for the client already) as the answer to request `id`, and
    /// drops rmcp's own answer to `id` when it comes. False when it cannot be written: rmcp's
    /// answer then goes out as usual.
    fn answer_now(&self, id: &RequestId, result: &ServerResult, runtime: &tokio::runtime::Handle) -> bool;
}

impl<W: AsyncWrite + Unpin + Send + 'static> AnswerNow for Lines<W> {
    /// Written outside the runtime, instead of handed back to rmcp's task first: that is a
    /// wake-up of the server's thread on every call. The answer goes out now unless the output
    /// is partway through one of rmcp's messages or full; then rmcp's next write, or a task on
    /// `runtime`, writes it.
    fn answer_now(&self, id: &RequestId, result: &ServerResult, runtime: &tokio::runtime::Handle) -> bool {
        let response = JsonRpcResponse { jsonrpc: JsonRpcVersion2_0, id: id.clone(), result };
        let (Ok(id_json), Ok(mut line)) = (serde_json::to_string(id), serde_json::to_vec(&response)) else {
            return false;
        };
        line.push(b'\n');
        let mut output = self.output();
        output.answered.push(format!(r#"{{"jsonrpc":"2.0","id":{id_json},"result":"#).into_bytes());
        output.errors.push_back(line);
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let written = matches!(output.poll_errors(&mut cx), Poll::Ready(Ok(()))) && output.errors.is_empty();
        drop(output);
        if !written {
            let lines = self.clone();
            runtime.spawn(async move { lines.flush_errors().await });
        }
        true
    }
}

impl<W: AsyncWrite + Unpin> AsyncWrite for Lines<W> {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, bytes: &[u8]) -> Poll<io::Result<usize>> {
        let mut output = self.output();
        ready!(output.poll_errors(cx))?;
        if !output.in_message && (output.dropping || !output.answered.is_empty()) {
            let dropped = output.dropped_from(bytes);
            if dropped > 0 {
                return Poll::Ready(Ok(dropped));
            }
        }
        let n = ready!(Pin::new(&mut output.out).poll_write(cx, bytes))?;
        if n > 0 {
            output.in_message = bytes[n - 1] != b'\n';
            if !output.in_message {
                super::sent::message_sent();
            }
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut output = self.output();
        ready!(output.poll_errors(cx))?;
        Pin::new(&mut output.out).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let mut output = self.output();
        ready!(output.poll_errors(cx))?;
        Pin::new(&mut output.out).poll_shutdown(cx)
    }
}

/// The input as rmcp reads it, unchanged but for a newline after a last line that has none
/// (still a message): each line's length is counted as it goes by, and a line over
/// [`MAX_MESSAGE_BYTES`] (which rmcp, reading with [`MAX_LINE_BYTES`], drops) is answered
/// through `lines`.
pub struct Checked<R, W> {
    input: R,
    lines: Lines<W>,
    /// Bytes of the line being read so far, and its first bytes.
    line_bytes: usize,
    head: Vec<u8>,
    ended: bool,
}

impl<R, W: AsyncWrite + Unpin> Checked<R, W> {
    pub fn new(input: R, lines: Lines<W>) -> Checked<R, W> {
        Checked { input, lines, line_bytes: 0, head: Vec::new(), ended: false }
    }

    /// Counts `bytes` into the lines they belong to, answering each oversized one that ends.
    fn watch(&mut self, bytes: &[u8], cx: &mut Context<'_>) {
        for (i, segment) in bytes.split(|b| *b == b'\n').enumerate() {
            if i > 0 {
                if self.line_bytes > MAX_MESSAGE_BYTES {
                    self.lines.answer(too_long(&self.head, self.line_bytes), cx);
                }
                self.line_bytes = 0;
                self.head.clear();
            }
            self.line_bytes += segment.len();
            let room = HEAD_BYTES - self.head.len();
            self.head.extend_from_slice(&segment[..segment.len().min(room)]);
        }
    }
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> AsyncRead for Checked<R, W> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        this.lines.retry(cx);
        let start = buf.filled().len();
        ready!(Pin::new(&mut this.input).poll_read(cx, buf))?;
        if buf.filled().len() > start {
            this.watch(&buf.filled()[start..], cx);
            return Poll::Ready(Ok(()));
        }
        // The end of input: a last line without a newline is still a message.
        if this.line_bytes > 0 && !this.ended && buf.remaining() > 0 {
            this.ended = true;
            buf.put_slice(b"\n");
            this.watch(b"\n", cx);
        }
        Poll::Ready(Ok(()))
    }
}

/// The error for a line of `bytes` bytes starting with `head`.
fn too_long(head: &[u8], bytes: usize) -> Vec<u8> {
    let message = format!(
        "the message is {bytes} bytes, over the limit of {MAX_MESSAGE_BYTES}: send less at once \
         (execute code is at most 64 KiB)"
    );
    let error = serde_json::json!({
        "jsonrpc": "2.0",
        "id": request_id(head),
        "error": { "code": -32600, "message": message },
    });
    let mut out = error.to_string().into_bytes();
    out.push(b'\n');
    out
}

/// The `"id"` of a JSON-RPC message from its first bytes, when it is there: a number or a
/// string without escapes. Anything else is `null`, as JSON-RPC asks for an unknown id.
fn request_id(head: &[u8]) -> serde_json::Value {
    let text = String::from_utf8_lossy(head);
    let Some(at) = text.find("\"id\"") else { return serde_json::Value::Null };
    let after = text[at + 4..].trim_start();
    let Some(value) = after.strip_prefix(':').map(str::trim_start) else { return serde_json::Value::Null };
    if let Some(string) = value.strip_prefix('"') {
        return match string.find(['"', '\\']) {
            Some(end) if string.as_bytes()[end] == b'"' => {
                serde_json::Value::String(string[..end].to_owned())
            }
            _ => serde_json::Value::Null,
        };
    }
    let digits: String = value.chars().take_while(|c| c.is_ascii_digit() || *c == '-').collect();
    digits.parse::<i64>().map_or(serde_json::Value::Null, serde_json::Value::from)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn ids_are_read_from_the_head_of_a_line() {
        assert_eq!(request_id(br#"{"jsonrpc":"2.0","id":7,"method":"tools/call""#), json!(7));
        assert_eq!(request_id(br#"{"id" : "a-1", "method""#), json!("a-1"));
        assert_eq!(request_id(br#"{"id":"a\"b"}"#), json!(null));
        assert_eq!(request_id(br#"{"method":"x","params":{"#), json!(null));
        assert_eq!(request_id(b"\xff\xfe garbage"), json!(null));
    }

    /// Reads `input` through [`Checked`] to its end as rmcp would, writing `answers` (what rmcp
    /// writes) through [`Lines`]; returns what rmcp read and what reached the output.
    async fn through(input: &[u8], answers: &[&[u8]]) -> (String, String) {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let lines = Lines::new(Vec::new());
        let mut checked = Checked::new(input, lines.clone());
        let mut read = Vec::new();
        checked.read_to_end(&mut read).await.unwrap();
        let mut writer = lines.clone();
        for answer in answers {
            writer.write_all(answer).await.unwrap();
        }
        lines.flush_errors().await.unwrap();
        let written = std::mem::take(&mut lines.output().out);
        (String::from_utf8(read).unwrap(), String::from_utf8(written).unwrap())
    }

    #[tokio::test]
    async fn an_oversized_line_is_answered_and_the_lines_around_it_pass() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":"{}"}}"#,
            "x".repeat(MAX_MESSAGE_BYTES)
        );
        let input = format!("{{\"id\":1}}\n{big}\n{{\"id\":2}}\n{{\"id\":3}}");
        let (read, written) = through(input.as_bytes(), &[]).await;
        // Passed on as it came (rmcp drops the long line itself), the last line ended.
        assert_eq!(read, format!("{input}\n"));
        let error: serde_json::Value = serde_json::from_str(written.trim_end()).unwrap();
        assert_eq!(error["id"], json!(9));
        assert_eq!(error["error"]["code"], json!(-32600));
        assert!(error["error"]["message"].as_str().unwrap().contains("over the limit of 4194304"));
    }

    #[tokio::test]
    async fn a_line_of_exactly_the_limit_passes_unanswered() {
        let line = "x".repeat(MAX_MESSAGE_BYTES);
        let (read, written) = through(format!("{line}\n").as_bytes(), &[]).await;
        assert_eq!(read.len(), MAX_MESSAGE_BYTES + 1);
        assert_eq!(written, "");
        // rmcp keeps a line of this many bytes, its newline counted, and drops a longer one.
        assert_eq!(MAX_LINE_BYTES, read.len());
    }

    /// rmcp's answer to a request, as it writes it.
    fn rmcp_answer(id: RequestId, text: &str) -> Vec<u8> {
        use rmcp::model::{CallToolResult, ContentBlock, ServerJsonRpcMessage};
        let result = ServerResult::CallToolResult(CallToolResult::success(vec![ContentBlock::text(text)]));
        let mut line = serde_json::to_vec(&ServerJsonRpcMessage::response(result, id)).unwrap();
        line.push(b'\n');
        line
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn an_answer_given_now_replaces_rmcps_answer_to_the_same_request() {
        use rmcp::model::{CallToolResult, ContentBlock};
        use tokio::io::AsyncWriteExt;
        let lines = Lines::new(Vec::new());
        let runtime = tokio::runtime::Handle::current();
        for id in [RequestId::Number(7), RequestId::String("seven".into())] {
            let result =
                ServerResult::CallToolResult(CallToolResult::success(vec![ContentBlock::text("now")]));
            assert!(lines.answer_now(&id, &result, &runtime));
        }
        let mut writer = lines.clone();
        // rmcp's answers to both, another request's between them, and one offered in two pieces.
        writer.write_all(&rmcp_answer(RequestId::Number(7), "late")).await.unwrap();
        writer.write_all(&rmcp_answer(RequestId::Number(70), "other")).await.unwrap();
        let cut = rmcp_answer(RequestId::String("seven".into()), "late");
        let n = Pin::new(&mut writer).write(&cut[..60]).await.unwrap();
        writer.write_all(&cut[n..]).await.unwrap();
        writer.write_all(&rmcp_answer(RequestId::Number(7), "again")).await.unwrap();
        lines.flush_errors().await.unwrap();
        let written = String::from_utf8(std::mem::take(&mut lines.output().out)).unwrap();
        let texts: Vec<(serde_json::Value, String)> = written
            .lines()
            .map(|line| {
                let message: serde_json::Value = serde_json::from_str(line).unwrap();
                (message["id"].clone(), message["result"]["content"][0]["text"].as_str().unwrap().to_owned())
            })
            .collect();
        // Each request answered once, and a later message with a used id is not held back.
        let expected =
            [(json!(7), "now"), (json!("seven"), "now"), (json!(70), "other"), (json!(7), "again")];
        assert_eq!(texts, expected.map(|(id, text)| (id, text.to_owned())));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 1)]
    async fn an_answer_given_now_waits_for_the_message_being_written() {
        use rmcp::model::{CallToolResult, ContentBlock};
        use tokio::io::AsyncWriteExt;
        let lines = Lines::new(Vec::new());
        let mut writer = lines.clone();
        writer.write_all(b"{\"id\":1,").await.unwrap();
        let result = ServerResult::CallToolResult(CallToolResult::success(vec![ContentBlock::text("now")]));
        assert!(lines.answer_now(&RequestId::Number(2), &result, &tokio::runtime::Handle::current()));
        writer.write_all(b"\"result\":{}}\n").await.unwrap();
        lines.flush_errors().await.unwrap();
        let written = String::from_utf8(std::mem::take(&mut lines.output().out)).unwrap();
        let mut messages = written.lines();
        assert_eq!(messages.next(), Some(r#"{"id":1,"result":{}}"#));
        let answer: serde_json::Value = serde_json::from_str(messages.next().unwrap()).unwrap();
        assert_eq!((&answer["id"], &answer["result"]["content"][0]["text"]), (&json!(2), &json!("now")));
        assert_eq!(messages.next(), None);
    }

    #[tokio::test]
    async fn an_answer_never_lands_inside_a_message_being_written() {
        let lines = Lines::new(Vec::new());
        let mut writer = lines.clone();
        use tokio::io::AsyncWriteExt;
        // rmcp has written half a message when the oversized line is seen.
        writer.write_all(b"{\"id\":1,").await.unwrap();
        let big = format!(r#"{{"id":"big","x":"{}"}}"#, "x".repeat(MAX_MESSAGE_BYTES)) + "\n";
        let mut checked = Checked::new(big.as_bytes(), lines.clone());
        let mut sink = Vec::new();
        tokio::io::AsyncReadExt::read_to_end(&mut checked, &mut sink).await.unwrap();
        writer.write_all(b"\"result\":{}}\n").await.unwrap();
        lines.flush_errors().await.unwrap();
        let written = String::from_utf8(std::mem::take(&mut lines.output().out)).unwrap();
        let mut messages = written.lines();
        assert_eq!(messages.next(), Some(r#"{"id":1,"result":{}}"#));
        let error: serde_json::Value = serde_json::from_str(messages.next().unwrap()).unwrap();
        assert_eq!(error["id"], json!("big"));
        assert_eq!(messages.next(), None);
    }
}

//! The stdio transport's input, checked line by line before rmcp reads it. A message longer than
//! [`MAX_MESSAGE_BYTES`] is answered with a JSON-RPC error that names the limit (and the
//! request's id when it comes early in the line) instead of being dropped without a word; the
//! server reads on from the next line. Everything else passes through unchanged.

use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

/// The longest message the hub reads: `execute` code is at most 64 KiB, so this is generous.
pub const MAX_MESSAGE_BYTES: usize = 4 * 1024 * 1024;

/// How much of an oversized line is kept to find its id.
const HEAD_BYTES: usize = 256;

/// Copies `input` to `to_server` one whole line at a time; each oversized line becomes an error
/// on `errors`. Closes `to_server` at the end of input.
pub async fn check_input(
    mut input: impl AsyncRead + Unpin,
    mut to_server: impl AsyncWrite + Unpin,
    errors: mpsc::UnboundedSender<Vec<u8>>,
) -> std::io::Result<()> {
    let mut chunk = vec![0u8; 64 * 1024];
    let mut line: Vec<u8> = Vec::new();
    // Bytes of the line being skipped, and its first bytes.
    let mut skipped: Option<(usize, Vec<u8>)> = None;
    loop {
        let read = input.read(&mut chunk).await?;
        if read == 0 {
            break;
        }
        let mut rest = &chunk[..read];
        while !rest.is_empty() {
            let (segment, ends_line) = match rest.iter().position(|b| *b == b'\n') {
                Some(at) => (&rest[..at], true),
                None => (rest, false),
            };
            rest = if ends_line { &rest[segment.len() + 1..] } else { &[] };
            match &mut skipped {
                Some((bytes, _)) => *bytes += segment.len(),
                None if line.len() + segment.len() > MAX_MESSAGE_BYTES => {
                    let mut head = std::mem::take(&mut line);
                    let total = head.len() + segment.len();
                    head.extend_from_slice(&segment[..segment.len().min(HEAD_BYTES)]);
                    head.truncate(HEAD_BYTES);
                    skipped = Some((total, head));
                }
                None => line.extend_from_slice(segment),
            }
            if !ends_line {
                continue;
            }
            match skipped.take() {
                Some((bytes, head)) => {
                    let _ = errors.send(too_long(&head, bytes));
                }
                None => {
                    line.push(b'\n');
                    to_server.write_all(&line).await?;
                    line.clear();
                }
            }
        }
    }
    // A last line without a newline is still a message.
    if skipped.is_none() && !line.is_empty() {
        line.push(b'\n');
        to_server.write_all(&line).await?;
    }
    to_server.shutdown().await
}

/// Copies the server's messages to `output` whole lines at a time, with the errors from
/// [`check_input`] between them.
pub async fn merge_output(
    from_server: impl AsyncRead + Unpin,
    mut output: impl AsyncWrite + Unpin,
    mut errors: mpsc::UnboundedReceiver<Vec<u8>>,
) -> std::io::Result<()> {
    let mut from_server = BufReader::new(from_server);
    let mut line = Vec::new();
    let mut errors_open = true;
    loop {
        tokio::select! {
            read = from_server.read_until(b'\n', &mut line) => {
                if read? == 0 {
                    break;
                }
                output.write_all(&line).await?;
                output.flush().await?;
                line.clear();
            }
            error = errors.recv(), if errors_open => match error {
                Some(error) => {
                    output.write_all(&error).await?;
                    output.flush().await?;
                }
                None => errors_open = false,
            },
        }
    }
    output.flush().await
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

    #[tokio::test]
    async fn an_oversized_line_is_answered_and_the_next_one_passes() {
        let big = format!(
            r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":"{}"}}"#,
            "x".repeat(MAX_MESSAGE_BYTES)
        );
        let input = format!("{{\"id\":1}}\n{big}\n{{\"id\":2}}\n{{\"id\":3}}");
        let (tx, mut rx) = mpsc::unbounded_channel();
        let mut passed = Vec::new();
        check_input(input.as_bytes(), &mut passed, tx).await.unwrap();
        assert_eq!(String::from_utf8(passed).unwrap(), "{\"id\":1}\n{\"id\":2}\n{\"id\":3}\n");
        let error: serde_json::Value = serde_json::from_slice(&rx.recv().await.unwrap()).unwrap();
        assert_eq!(error["id"], json!(9));
        assert_eq!(error["error"]["code"], json!(-32600));
        assert!(error["error"]["message"].as_str().unwrap().contains("over the limit of 4194304"));
        assert!(rx.recv().await.is_none());
    }
}

//! The last few kilobytes of a source's stderr, for health reports and start errors.
//!
//! Bytes are kept raw and scrubbed when read: a credential split across two reads is still
//! whole in the buffer. When the front is cut, the cut line is dropped too, so a value is never
//! left half visible at the start of the tail.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex};

use capabilities_core::scrub::{MARKER, MIN_SECRET_BYTES, Scrubber};

/// How much stderr each source keeps.
pub(crate) const TAIL_BYTES: usize = 8 * 1024;

#[derive(Clone, Default)]
pub(crate) struct StderrTail {
    inner: Arc<Mutex<Tail>>,
}

#[derive(Default)]
struct Tail {
    bytes: VecDeque<u8>,
    secrets: Vec<String>,
}

impl StderrTail {
    pub(crate) fn push(&self, chunk: &[u8]) {
        let mut tail = self.lock();
        tail.bytes.extend(chunk);
        if tail.bytes.len() > TAIL_BYTES {
            let excess = tail.bytes.len() - TAIL_BYTES;
            tail.bytes.drain(..excess);
            // Drop the partial line at the front.
            match tail.bytes.iter().position(|&b| b == b'\n') {
                Some(newline) => drop(tail.bytes.drain(..=newline)),
                None => tail.bytes.clear(),
            }
        }
    }

    /// Remembers values to scrub from what this tail shows.
    pub(crate) fn add_secrets<'a>(&self, values: impl IntoIterator<Item = &'a str>) {
        let mut tail = self.lock();
        for value in values {
            if !value.is_empty() && !tail.secrets.iter().any(|known| known == value) {
                tail.secrets.push(value.to_owned());
            }
        }
    }

    /// The tail as text, credentials replaced by `[secret]`.
    pub(crate) fn text(&self) -> String {
        let tail = self.lock();
        let (front, back) = tail.bytes.as_slices();
        let mut bytes = Vec::with_capacity(front.len() + back.len());
        bytes.extend_from_slice(front);
        bytes.extend_from_slice(back);
        scrub(&String::from_utf8_lossy(&bytes), &tail.secrets)
    }

    /// The last non-empty line, shortened, for one-line error messages.
    pub(crate) fn last_line(&self) -> Option<String> {
        let text = self.text();
        let line = text.lines().rev().map(str::trim).find(|line| !line.is_empty())?;
        Some(shorten(line, 300))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Tail> {
        self.inner.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Replaces each secret value in `text` with `[secret]`: raw, base64, percent-encoded and hex,
/// as the core's scrubber knows them. A value too short for the scrubber is still replaced raw.
pub(crate) fn scrub(text: &str, secrets: &[String]) -> String {
    let (long, short): (Vec<&String>, Vec<&String>) =
        secrets.iter().filter(|s| !s.is_empty()).partition(|s| s.len() >= MIN_SECRET_BYTES);
    let mut out = match Scrubber::new(&long) {
        Ok(scrubber) => scrubber.scrub_str(text).into_owned(),
        // Too many forms to compile: the raw values at least.
        Err(_) => replace_raw(text, &long),
    };
    if !short.is_empty() {
        out = replace_raw(&out, &short);
    }
    out
}

/// Replaces each value by [`MARKER`], longest first.
fn replace_raw(text: &str, secrets: &[&String]) -> String {
    let mut secrets = secrets.to_vec();
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    let mut out = text.to_owned();
    for secret in secrets {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), MARKER);
        }
    }
    out
}

/// Cuts `text` to at most `max` bytes on a char boundary, marking the cut.
pub(crate) fn shorten(text: &str, max: usize) -> String {
    if text.len() <= max {
        return text.to_owned();
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;

    #[test]
    fn keeps_whole_lines_of_the_last_bytes_and_scrubs() {
        let tail = StderrTail::default();
        tail.add_secrets(["tok-123"]);
        for i in 0..2_000 {
            tail.push(format!("line {i} token=tok-123\n").as_bytes());
        }
        let text = tail.text();
        // Whole lines only, about 8 KB of them before scrubbing.
        assert!(text.lines().all(|line| line.starts_with("line ") && line.ends_with("token=[secret]")));
        assert_eq!(text.lines().count(), TAIL_BYTES / "line 1999 token=tok-123\n".len());
        assert!(!text.contains("tok-123"));
        expect![["line 1999 token=[secret]"]].assert_eq(&tail.last_line().unwrap());
    }

    #[test]
    fn a_secret_split_across_chunks_is_scrubbed() {
        let tail = StderrTail::default();
        tail.add_secrets(["abcdef"]);
        tail.push(b"key=abc");
        tail.push(b"def\n");
        expect![["key=[secret]\n"]].assert_eq(&tail.text());
    }

    #[test]
    fn encoded_forms_of_a_secret_are_scrubbed() {
        let tail = StderrTail::default();
        tail.add_secrets(["tok/en+1234"]);
        tail.push(b"raw tok/en+1234\n");
        tail.push(b"base64 dG9rL2VuKzEyMzQ=\n");
        tail.push(b"url tok%2Fen%2B1234\n");
        tail.push(b"hex 746f6b2f656e");
        tail.push(b"2b31323334\n");
        expect![[r#"
            raw [secret]
            base64 [secret]
            url [secret]
            hex [secret]
        "#]]
        .assert_eq(&tail.text());
    }

    #[test]
    fn shortens_on_char_boundaries() {
        expect![["ab…"]].assert_eq(&shorten("abé", 3));
        expect![["abc"]].assert_eq(&shorten("abc", 3));
    }
}

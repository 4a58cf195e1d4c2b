//! Secret scrubbing: every string that leaves a call (into the sandbox, a journal, a log or a
//! result) loses each secret value, in each form an API might echo it, to `[secret]`.
//!
//! The forms of one secret, compiled once per scrubber into an Aho-Corasick automaton:
//!
//! - the raw text;
//! - base64, standard and URL-safe alphabets, padded and unpadded; and, for a secret inside a
//!   longer base64 blob (`base64("Bearer " + secret)`), the characters that depend only on the
//!   secret at each of the three byte alignments;
//! - percent-encoding as RFC 3986, `encodeURIComponent`, `encodeURI`, HTML forms (`+` for space)
//!   and "every byte" encoders write it, with upper- and lower-case hex;
//! - hex, lower and upper case.
//!
//! [`Scrubber::scrub_json_text`] also knows the forms a JSON encoder writes inside a string
//! literal: `\"`, `\\`, control escapes, `\/`, `\uXXXX` for non-ASCII (either hex case) and the
//! HTML-safe `\u003c`-style escapes. In JSON text it looks inside each string's contents only,
//! so a match never takes a quote, a comma or a bracket with it.
//!
//! Overlapping matches merge: the whole union becomes one `[secret]`, so the longest form always
//! goes, and so does any shorter one that sticks out of it.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::fmt;

use aho_corasick::{AhoCorasick, AhoCorasickKind, Input, MatchKind};
use base64::Engine;
use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE, URL_SAFE_NO_PAD};
use serde_json::Value;

/// What a secret becomes.
pub const MARKER: &str = "[secret]";

/// Shorter secrets would blank out ordinary words and numbers.
pub const MIN_SECRET_BYTES: usize = 4;

/// Why a scrubber could not be built. Messages never include a secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ScrubError {
    #[error(
        "secret number {position} is {len} bytes long, and secrets need at least \
         {MIN_SECRET_BYTES}: a shorter one would blank out ordinary text, so check the value the \
         connection points at"
    )]
    TooShort { position: usize, len: usize },
    #[error("the secrets' encoded forms could not be compiled ({0}): use fewer or shorter secrets")]
    TooLarge(String),
}

/// Replaces secret values by [`MARKER`]. Build once per run; scrubbing never allocates when
/// nothing matches.
#[derive(Clone)]
pub struct Scrubber {
    secrets: usize,
    /// Forms that can appear in any string.
    plain: Forms,
    /// The plain forms plus their JSON string-literal escapes.
    json: Forms,
    /// Whether some form could be the text of a JSON number.
    numeric: bool,
}

impl fmt::Debug for Scrubber {
    // Never print the patterns: they are the secrets.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Scrubber")
            .field("secrets", &self.secrets)
            .field("plain_forms", &self.plain.len())
            .field("json_forms", &self.json.len())
            .finish()
    }
}

impl Scrubber {
    pub fn new(secrets: impl IntoIterator<Item = impl AsRef<str>>) -> Result<Scrubber, ScrubError> {
        let mut plain = BTreeSet::new();
        let mut count = 0;
        for (i, secret) in secrets.into_iter().enumerate() {
            let secret = secret.as_ref();
            if secret.len() < MIN_SECRET_BYTES {
                return Err(ScrubError::TooShort { position: i + 1, len: secret.len() });
            }
            count += 1;
            plain.extend(plain_forms(secret));
        }
        let mut json = plain.clone();
        for form in &plain {
            json.extend(JSON_STYLES.iter().map(|style| json_escape(form, *style)));
        }
        let numeric = plain.iter().any(|f| f.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)));
        Ok(Scrubber { secrets: count, plain: Forms::new(&plain)?, json: Forms::new(&json)?, numeric })
    }

    /// The scrubber for `secrets`, compiled once and kept for the next run that holds the same
    /// values: compiling the forms of one secret takes longer than most calls (about 0.1 ms),
    /// and every call with credentials needs one. The last [`CACHED`] sets are kept; the
    /// order and repeats of `secrets` do not matter. Errors are not kept.
    pub fn cached(secrets: impl IntoIterator<Item = impl AsRef<str>>) -> Result<Scrubber, ScrubError> {
        let mut key: Vec<String> = secrets.into_iter().map(|s| s.as_ref().to_owned()).collect();
        // Too short a value is reported by its place in the caller's order, before sorting.
        if let Some((i, short)) = key.iter().enumerate().find(|(_, s)| s.len() < MIN_SECRET_BYTES) {
            return Err(ScrubError::TooShort { position: i + 1, len: short.len() });
        }
        key.sort_unstable();
        key.dedup();
        let cache = CACHE.get_or_init(Default::default);
        {
            let mut kept = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if let Some(at) = kept.iter().position(|(k, _)| *k == key) {
                let entry = kept.remove(at);
                let scrubber = entry.1.clone();
                kept.insert(0, entry);
                return Ok(scrubber);
            }
        }
        // Compiled outside the lock: another thread may compile the same set meanwhile, and
        // both results are the same.
        let scrubber = Scrubber::new(&key)?;
        let mut kept = cache.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !kept.iter().any(|(k, _)| *k == key) {
            kept.insert(0, (key, scrubber.clone()));
            kept.truncate(CACHED);
        }
        Ok(scrubber)
    }

    /// How many secrets this scrubber knows.
    pub fn secrets(&self) -> usize {
        self.secrets
    }

    /// Replaces every form of every secret in `text`.
    pub fn scrub_str<'t>(&self, text: &'t str) -> Cow<'t, str> {
        match self.plain.spans(text.as_bytes(), |_, span| span) {
            None => Cow::Borrowed(text),
            Some(spans) => Cow::Owned(splice(text, spans.into_iter().map(|(s, e)| (s, e, MARKER)))),
        }
    }

    /// Replaces every form of every secret in serialised JSON, escaped forms included, so valid
    /// JSON stays valid:
    ///
    /// - inside a string, a match is confined to the string's contents, and one that starts or
    ///   ends inside an escape sequence grows to cover it;
    /// - a number whose text holds a secret becomes a string, as in [`Scrubber::scrub_json`];
    /// - the rest of JSON's syntax (`true`, `false`, `null`, punctuation) is never touched.
    ///
    /// Text that is not made of JSON tokens (an unterminated string, a bare word) is scrubbed
    /// as a whole, escaped forms included.
    pub fn scrub_json_text<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let bytes = text.as_bytes();
        // Every form of `plain` (numbers) is a form of `json` too.
        if bytes.len() < self.json.min_len {
            return Cow::Borrowed(text);
        }
        match self.json_edits(bytes) {
            Some(edits) if edits.is_empty() => Cow::Borrowed(text),
            Some(edits) => Cow::Owned(splice(text, edits)),
            None => match self.json.spans(bytes, grow_to_escapes) {
                None => Cow::Borrowed(text),
                Some(spans) => Cow::Owned(splice(text, spans.into_iter().map(|(s, e)| (s, e, MARKER)))),
            },
        }
    }

    /// The edits that scrub JSON text token by token, in order (empty, without allocating, when
    /// nothing matched); `None` when the text is not made of JSON tokens.
    fn json_edits(&self, b: &[u8]) -> Option<Vec<Edit>> {
        let mut edits = Vec::new();
        let mut i = 0;
        while let Some(&byte) = b.get(i) {
            if is_json_space_or_punctuation(byte) {
                i += 1;
            } else if byte == b'"' {
                let start = i + 1;
                let end = string_end(b, start)?;
                let contents = b.get(start..end).unwrap_or_default();
                if let Some(spans) = self.json.spans(contents, grow_to_escapes) {
                    edits.extend(spans.into_iter().map(|(s, e)| (start + s, start + e, MARKER)));
                }
                i = end + 1;
            } else {
                let end = b
                    .get(i..)
                    .unwrap_or_default()
                    .iter()
                    .position(|&c| c == b'"' || is_json_space_or_punctuation(c))
                    .map_or(b.len(), |n| i + n);
                let word = b.get(i..end).unwrap_or_default();
                if !matches!(word, b"true" | b"false" | b"null") && !is_json_number(word) {
                    return None;
                }
                if let Some(spans) = self.numeric.then(|| self.plain.spans(word, |_, span| span)).flatten() {
                    edits.push((i, i, "\""));
                    edits.extend(spans.into_iter().map(|(s, e)| (i + s, i + e, MARKER)));
                    edits.push((end, end, "\""));
                }
                i = end;
            }
        }
        Some(edits)
    }

    /// Scrubs every string in a JSON value, object keys included. A number whose text holds a secret
    /// becomes the string `[secret]`. Keys that become equal keep all their values: the later
    /// ones get ` (2)`, ` (3)`… appended.
    pub fn scrub_json(&self, value: &mut Value) {
        let mut stack = vec![value];
        while let Some(value) = stack.pop() {
            if let Value::Number(n) = value
                && self.numeric
                && let Cow::Owned(scrubbed) = self.scrub_str(&n.to_string())
            {
                *value = Value::String(scrubbed);
                continue;
            }
            match value {
                Value::String(s) => {
                    if let Cow::Owned(scrubbed) = self.scrub_str(s) {
                        *s = scrubbed;
                    }
                }
                Value::Array(items) => stack.extend(items.iter_mut()),
                Value::Object(map) => {
                    if map.keys().any(|k| matches!(self.scrub_str(k), Cow::Owned(_))) {
                        let old = std::mem::take(map);
                        for (key, item) in old {
                            let key = self.scrub_str(&key).into_owned();
                            let key = free_key(map, key);
                            map.insert(key, item);
                        }
                    }
                    stack.extend(map.values_mut());
                }
                Value::Null | Value::Bool(_) | Value::Number(_) => {}
            }
        }
    }
}

fn free_key(map: &serde_json::Map<String, Value>, key: String) -> String {
    if !map.contains_key(&key) {
        return key;
    }
    (2..).map(|n| format!("{key} ({n})")).find(|k| !map.contains_key(k)).unwrap_or(key)
}

/// How many compiled secret sets [`Scrubber::cached`] keeps.
pub const CACHED: usize = 16;

/// Compiled scrubbers by their sorted secret values, most recently used first.
type Kept = std::sync::Mutex<Vec<(Vec<String>, Scrubber)>>;
static CACHE: std::sync::OnceLock<Kept> = std::sync::OnceLock::new();

/// One set of forms, compiled into a leftmost-longest automaton whose prefilter skips quickly
/// through text without secrets.
#[derive(Clone)]
struct Forms {
    ac: AhoCorasick,
    /// The shortest form, in bytes: shorter strings (most object keys) need no search.
    min_len: usize,
}

impl Forms {
    fn new(patterns: &BTreeSet<String>) -> Result<Forms, ScrubError> {
        // A contiguous NFA builds in a fraction of a millisecond; a DFA would take several and
        // search no faster here, where the prefilter does most of the work.
        let ac = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .kind(Some(AhoCorasickKind::ContiguousNFA))
            .build(patterns)
            .map_err(|e| ScrubError::TooLarge(e.to_string()))?;
        let min_len = patterns.iter().map(String::len).min().unwrap_or(usize::MAX);
        Ok(Forms { ac, min_len })
    }

    fn len(&self) -> usize {
        self.ac.patterns_len()
    }

    /// Byte ranges to replace: the union of every match of every form, each part adjusted by
    /// `grow`, in order. `None` when nothing matched, without allocating.
    ///
    /// Each search restarts one byte after the previous match's start. A leftmost search never
    /// skips a position where some form starts, and at that position it returns the longest
    /// form, so every match lies inside one that was found; found matches that overlap merge.
    fn spans(
        &self,
        hay: &[u8],
        grow: impl Fn(&[u8], (usize, usize)) -> (usize, usize),
    ) -> Option<Vec<(usize, usize)>> {
        if hay.len() < self.min_len {
            return None;
        }
        let mut spans: Vec<(usize, usize)> = Vec::new();
        let mut current: Option<(usize, usize)> = None;
        let mut pos = 0;
        while let Some(m) = self.ac.find(Input::new(hay).span(pos..hay.len())) {
            current = match current {
                Some((start, end)) if m.start() < end => Some((start, end.max(m.end()))),
                Some(done) => {
                    spans.push(grow(hay, done));
                    Some((m.start(), m.end()))
                }
                None => Some((m.start(), m.end())),
            };
            pos = m.start() + 1;
        }
        spans.push(grow(hay, current?));
        // Growth can make neighbours overlap.
        spans.sort_unstable();
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for (start, end) in spans {
            match merged.last_mut() {
                Some(last) if start < last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        Some(merged)
    }
}

/// A byte range of the text and what takes its place (the marker, or a quote put in where the
/// range is empty).
type Edit = (usize, usize, &'static str);

/// `text` with each edit made. Edits are sorted, disjoint and on character boundaries (every
/// pattern is valid UTF-8, escape growth stops at ASCII bytes, and JSON tokens end at ASCII
/// bytes); should one not be, the result is still valid UTF-8 and nothing panics.
fn splice(text: &str, edits: impl IntoIterator<Item = Edit>) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(text.len());
    let mut at = 0;
    for (start, end, with) in edits {
        out.extend_from_slice(bytes.get(at..start).unwrap_or_default());
        out.extend_from_slice(with.as_bytes());
        at = at.max(end);
    }
    out.extend_from_slice(bytes.get(at..).unwrap_or_default());
    String::from_utf8(out).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

/// A match grown to cover any JSON escape sequence its first or last byte falls in.
fn grow_to_escapes(bytes: &[u8], (start, end): (usize, usize)) -> (usize, usize) {
    let start = escape_around(bytes, start).map_or(start, |(s, _)| s.min(start));
    let end = end.checked_sub(1).and_then(|last| escape_around(bytes, last)).map_or(end, |(_, e)| e.max(end));
    (start, end)
}

/// Whitespace and punctuation between JSON tokens.
fn is_json_space_or_punctuation(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r' | b'{' | b'}' | b'[' | b']' | b',' | b':')
}

/// Where the string whose contents start at `start` ends: the index of its closing quote, or
/// `None` when it has none.
fn string_end(b: &[u8], start: usize) -> Option<usize> {
    let mut i = start;
    loop {
        match b.get(i)? {
            b'"' => return Some(i),
            b'\\' => i += 2,
            _ => i += 1,
        }
    }
}

/// Whether `word` could be a JSON number: a sign or digit, then digits, signs, `.`, `e`, `E`.
fn is_json_number(word: &[u8]) -> bool {
    word.first().is_some_and(|b| b.is_ascii_digit() || *b == b'-')
        && word.iter().all(|b| b.is_ascii_digit() || b"+-.eE".contains(b))
}

/// The JSON escape sequence (`\n`, `\\`, `\u00e9`) that covers byte `p`, as a byte range.
fn escape_around(b: &[u8], p: usize) -> Option<(usize, usize)> {
    // A `\uXXXX` is six bytes, so an escape covering `p` starts at most five bytes before it. The
    // nearest escape start decides: an earlier escape cannot reach past a later backslash.
    for back in 0..=5 {
        let start = p.checked_sub(back)?;
        if b.get(start) != Some(&b'\\') || !starts_escape(b, start) {
            continue;
        }
        let unicode = b.get(start + 1) == Some(&b'u')
            && b.get(start + 2..start + 6).is_some_and(|h| h.iter().all(u8::is_ascii_hexdigit));
        let end = start + if unicode { 6 } else { 2 };
        return (p < end).then_some((start, end.min(b.len())));
    }
    None
}

/// Whether the backslash at `i` opens an escape: an even number of backslashes precede it.
fn starts_escape(b: &[u8], i: usize) -> bool {
    b.get(..i).unwrap_or_default().iter().rev().take_while(|&&c| c == b'\\').count() % 2 == 0
}

/// The forms of one secret that can appear in any text.
fn plain_forms(secret: &str) -> Vec<String> {
    let bytes = secret.as_bytes();
    let mut forms = vec![secret.to_owned()];
    for engine in [&STANDARD, &STANDARD_NO_PAD, &URL_SAFE, &URL_SAFE_NO_PAD] {
        forms.push(engine.encode(bytes));
    }
    for shift in 0..3 {
        let middle = base64_middle(bytes, shift);
        forms.push(middle.replace('+', "-").replace('/', "_"));
        forms.push(middle);
    }
    for (keep, plus) in PERCENT_STYLES {
        for upper in [true, false] {
            forms.push(percent(bytes, keep, plus, upper));
        }
    }
    forms.push(hex::encode(bytes));
    forms.push(hex::encode_upper(bytes));
    forms
}

/// The base64 characters that depend only on the secret when `shift` (0–2) bytes precede it in
/// a longer blob. Bits `8·shift .. 8·(shift+len)` are the secret's; a character is stable when
/// its six bits lie inside that range.
fn base64_middle(bytes: &[u8], shift: usize) -> String {
    let mut shifted = vec![0u8; shift];
    shifted.extend_from_slice(bytes);
    let encoded = STANDARD_NO_PAD.encode(&shifted);
    let first = (8 * shift).div_ceil(6);
    let end = 8 * (shift + bytes.len()) / 6;
    encoded.get(first..end).unwrap_or_default().to_owned()
}

/// Bytes an encoder leaves alone besides ASCII letters and digits; `None` encodes every byte.
const UNRESERVED: Option<&[u8]> = Some(b"-._~");
const URI_COMPONENT: Option<&[u8]> = Some(b"-_.!~*'()");
const URI: Option<&[u8]> = Some(b"-_.!~*'();/?:@&=+$,#");
const FORM: Option<&[u8]> = Some(b"*-._");

/// (bytes kept, `+` for space): RFC 3986, Python's `quote_plus`, `encodeURIComponent`,
/// `encodeURI`, WHATWG forms, and encoders that escape everything.
const PERCENT_STYLES: [(Option<&[u8]>, bool); 6] = [
    (UNRESERVED, false),
    (UNRESERVED, true),
    (URI_COMPONENT, false),
    (URI, false),
    (FORM, true),
    (None, false),
];

fn percent(bytes: &[u8], keep: Option<&[u8]>, plus_for_space: bool, upper: bool) -> String {
    let digits: &[u8; 16] = if upper { b"0123456789ABCDEF" } else { b"0123456789abcdef" };
    let mut out = String::with_capacity(bytes.len() * 3);
    for &b in bytes {
        match keep {
            Some(keep) if b.is_ascii_alphanumeric() || keep.contains(&b) => out.push(char::from(b)),
            Some(_) if plus_for_space && b == b' ' => out.push('+'),
            _ => {
                out.push('%');
                out.push(char::from(digits[usize::from(b >> 4)]));
                out.push(char::from(digits[usize::from(b & 0xf)]));
            }
        }
    }
    out
}

/// How one JSON encoder escapes a string's contents beyond `"`, `\` and control characters.
#[derive(Debug, Clone, Copy)]
struct JsonStyle {
    /// `/` as `\/` (PHP, some Java libraries).
    slash: bool,
    /// Everything outside ASCII as `\uXXXX`, astral characters as surrogate pairs (Python).
    ascii_only: bool,
    /// `<`, `>`, `&`, U+2028 and U+2029 as `\u` escapes (Go).
    html: bool,
    /// Hex digits of `\u` escapes in upper case.
    upper: bool,
}

const JSON_STYLES: [JsonStyle; 16] = {
    let mut styles = [JsonStyle { slash: false, ascii_only: false, html: false, upper: false }; 16];
    let mut i = 0;
    while i < 16 {
        styles[i] =
            JsonStyle { slash: i & 1 != 0, ascii_only: i & 2 != 0, html: i & 4 != 0, upper: i & 8 != 0 };
        i += 1;
    }
    styles
};

/// `text` as it appears between the quotes of a JSON string written in `style`.
fn json_escape(text: &str, style: JsonStyle) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    let unicode = |out: &mut String, unit: u16| {
        out.push_str("\\u");
        let hex = if style.upper { format!("{unit:04X}") } else { format!("{unit:04x}") };
        out.push_str(&hex);
    };
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '/' if style.slash => out.push_str("\\/"),
            c if u32::from(c) < 0x20 => unicode(&mut out, c as u16),
            '<' | '>' | '&' | '\u{2028}' | '\u{2029}' if style.html => unicode(&mut out, c as u16),
            c if style.ascii_only && !c.is_ascii() => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    unicode(&mut out, *unit);
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base64_middle_is_stable_under_any_prefix() {
        let secret = b"hunter2-secret";
        for shift in 0..3 {
            let middle = base64_middle(secret, shift);
            for prefix in [[0u8; 3], [0xff; 3], *b"abc"] {
                let mut blob = prefix[..shift].to_vec();
                blob.extend_from_slice(secret);
                blob.extend_from_slice(b"!~tail");
                assert!(STANDARD.encode(&blob).contains(&middle), "shift {shift}");
            }
        }
    }

    #[test]
    fn escapes_are_found_from_any_byte() {
        let text = br#"a\\b\u00e9c\n"#;
        let found: Vec<_> = (0..text.len()).map(|p| escape_around(text, p)).collect();
        assert_eq!(
            found,
            [
                None,
                Some((1, 3)),
                Some((1, 3)),
                None,
                Some((4, 10)),
                Some((4, 10)),
                Some((4, 10)),
                Some((4, 10)),
                Some((4, 10)),
                Some((4, 10)),
                None,
                Some((11, 13)),
                Some((11, 13)),
            ]
        );
    }

    #[test]
    fn json_styles_cover_the_usual_encoders() {
        let secret = "a/é<\"\u{1F600}\u{1}";
        let styles: BTreeSet<String> = JSON_STYLES.iter().map(|s| json_escape(secret, *s)).collect();
        let serde = serde_json::to_string(secret).unwrap();
        assert!(styles.contains(&serde[1..serde.len() - 1]));
        assert!(styles.contains(r#"a\/\u00e9<\"\ud83d\ude00\u0001"#));
        assert!(styles.contains(r#"a/\u00E9\u003C\"\uD83D\uDE00\u0001"#));
    }

    #[test]
    fn a_cached_scrubber_is_the_one_for_its_values_in_any_order() {
        let first = Scrubber::cached(["cache-secret-one", "cache-secret-two"]).unwrap();
        let again = Scrubber::cached(["cache-secret-two", "cache-secret-one", "cache-secret-two"]).unwrap();
        for scrubber in [&first, &again] {
            assert_eq!(scrubber.secrets(), 2);
            assert_eq!(scrubber.scrub_str("a cache-secret-two b cache-secret-one"), "a [secret] b [secret]");
        }
        // Another set is another scrubber, never the one kept for a different set.
        let other = Scrubber::cached(["cache-secret-one"]).unwrap();
        assert_eq!(other.scrub_str("cache-secret-two"), "cache-secret-two");
        // Far more sets than are kept: each still scrubs its own value.
        for n in 0..CACHED * 2 {
            let value = format!("cache-value-{n}");
            assert_eq!(Scrubber::cached([&value]).unwrap().scrub_str(&value), MARKER);
        }
        assert_eq!(
            Scrubber::cached(["long-enough", "abc"]).unwrap_err(),
            ScrubError::TooShort { position: 2, len: 3 }
        );
    }

    #[test]
    fn debug_never_shows_a_secret() {
        let scrubber = Scrubber::new(["tok-123456"]).unwrap();
        assert!(!format!("{scrubber:?}").contains("123456"));
    }
}

//! The text rules the index applies to tool text and to queries alike: words, lowercase, ASCII
//! folding, the Snowball English stemmer and a short stopword list.
//!
//! Documents and queries go through the same functions, so whatever a rule gets wrong it gets
//! wrong on both sides and the two still meet.

use std::borrow::Cow;

use rust_stemmers::{Algorithm, Stemmer};

use crate::address::split_words;

/// Words that carry no meaning in a search for tools. Sorted, for binary search.
const STOPWORDS: &[&str] = &[
    "a", "about", "am", "an", "and", "any", "are", "as", "at", "be", "been", "by", "can", "could", "d",
    "did", "do", "does", "for", "from", "had", "has", "have", "how", "i", "in", "into", "is", "it", "its",
    "just", "let", "ll", "m", "me", "my", "of", "on", "or", "our", "please", "re", "s", "should", "so",
    "some", "t", "that", "the", "their", "them", "then", "these", "they", "this", "those", "to", "us", "ve",
    "via", "want", "was", "we", "were", "what", "when", "where", "which", "will", "with", "would", "you",
    "your",
];

/// Whether a lowercased word is on the stopword list.
pub(crate) fn is_stopword(word: &str) -> bool {
    STOPWORDS.binary_search(&word).is_ok()
}

/// One word, lowercased and folded (see [`fold_into`]). ASCII words of up to 8 bytes, most
/// words, come packed into a number: no copy, and a cheap key for a map.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Word<'a> {
    /// The bytes, little-endian, zero-padded. Words never contain NUL.
    Packed(u64),
    Text(&'a str),
}

impl Word<'_> {
    /// The word's text, written into `out`.
    pub(crate) fn write_into(self, out: &mut String) {
        out.clear();
        match self {
            Word::Packed(key) => {
                out.extend(key.to_le_bytes().iter().take_while(|&&b| b != 0).map(|&b| char::from(b)));
            }
            Word::Text(text) => out.push_str(text),
        }
    }
}

/// Packs ASCII letters and digits, lowercasing on the way: `| 0x20` lowercases a letter and
/// leaves a digit alone.
fn pack_lower(run: &[u8]) -> u64 {
    run.iter().enumerate().fold(0, |key, (k, &b)| key | (u64::from(b | 0x20) << (8 * k)))
}

const ONES: u64 = 0x0101_0101_0101_0101;
const HIGH: u64 = 0x8080_8080_8080_8080;

/// The eight bytes of `bytes` from `i` as a number, if there are eight.
fn chunk_at(bytes: &[u8], i: usize) -> Option<u64> {
    let mut chunk = [0u8; 8];
    chunk.copy_from_slice(bytes.get(i..i.checked_add(8)?)?);
    Some(u64::from_le_bytes(chunk))
}

/// The high bit of each byte of `x` that is not an ASCII lower case letter.
fn not_lowercase(x: u64) -> u64 {
    let ascii = !x & HIGH;
    let low = x & !HIGH; // each byte ≤ 0x7f, so the sums below never carry into the next byte
    let at_least_a = (low + (0x80 - u64::from(b'a')) * ONES) & HIGH;
    let above_z = (low + (0x7f - u64::from(b'z')) * ONES) & HIGH;
    !(ascii & at_least_a & !above_z) & HIGH
}

/// A whole ASCII run of at most 8 bytes at `start`, packed and lowercased.
fn pack_run(bytes: &[u8], start: usize, len: usize) -> u64 {
    match chunk_at(bytes, start) {
        Some(chunk) => {
            let mask = if len >= 8 { u64::MAX } else { (1u64 << (8 * len)) - 1 };
            (chunk | (0x20 * ONES)) & mask
        }
        None => pack_lower(&bytes[start..start + len]),
    }
}

/// An ASCII run or part of one, packed when short, else lowercased from `buf`.
fn ascii_word<'a>(raw: &[u8], buf: &'a str, range: std::ops::Range<usize>) -> Word<'a> {
    if range.len() <= 8 { Word::Packed(pack_lower(&raw[range])) } else { Word::Text(&buf[range]) }
}

/// Calls `f` with each word of `text`: each run of letters and digits and, when a run changes
/// case inside (`perPage`, `GitHub`, `HTTPGet`), each of its parts after the whole run, split
/// as [`split_words`] splits names. So both `github` and `git hub` find `GitHub`.
///
/// `buf` is scratch space, kept by the caller so a whole catalog reuses one buffer.
pub(crate) fn for_each_word(text: &str, buf: &mut String, mut f: impl FnMut(Word<'_>)) {
    for_each_word_and_part(text, buf, |word, _| f(word));
}

/// Like [`for_each_word`], telling a run's parts (`true`) from whole runs (`false`).
pub(crate) fn for_each_word_and_part(text: &str, buf: &mut String, mut f: impl FnMut(Word<'_>, bool)) {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut i = 0;
    while i < n {
        // Skip to the first letter or digit.
        let first = ASCII_CLASS[usize::from(bytes[i])];
        if first == SEPARATOR {
            i += 1;
            continue;
        }
        let start = i;
        if first == NON_ASCII {
            let c = char_at(text, i);
            i += c.len_utf8();
            if !c.is_alphanumeric() {
                continue;
            }
        } else {
            i += 1;
        }
        let (end, rest) = run_end(text, i);
        i = end;
        if (first | rest) & NON_ASCII == 0 {
            ascii_words(text, start..end, first | rest, rest, buf, &mut f);
        } else {
            unicode_words(&text[start..end], buf, &mut f);
        }
    }
}

/// Where the run of letters and digits that goes on at `i` ends, and the classes of the
/// characters from `i` to there. Lower case letters go eight at a time, the common case in prose.
fn run_end(text: &str, mut i: usize) -> (usize, u8) {
    let bytes = text.as_bytes();
    let n = bytes.len();
    let mut rest = 0u8;
    while let Some(chunk) = chunk_at(bytes, i) {
        let lowercase = (not_lowercase(chunk).trailing_zeros() / 8) as usize;
        if lowercase > 0 {
            rest |= LOWER;
        }
        i += lowercase;
        if lowercase < 8 {
            break;
        }
    }
    while i < n {
        let class = ASCII_CLASS[usize::from(bytes[i])];
        if class == SEPARATOR {
            break;
        }
        if class == NON_ASCII {
            let c = char_at(text, i);
            if !c.is_alphanumeric() {
                break;
            }
            i += c.len_utf8();
        } else {
            i += 1;
        }
        rest |= class;
    }
    (i, rest)
}

/// The words of the ASCII run `text[range]`: the whole run, then its parts if it changes case
/// inside. `all` holds the classes of the run's characters, `rest` those after its first.
fn ascii_words(
    text: &str,
    range: std::ops::Range<usize>,
    all: u8,
    rest: u8,
    buf: &mut String,
    f: &mut impl FnMut(Word<'_>, bool),
) {
    let start = range.start;
    let run = &text[range];
    let raw = run.as_bytes();
    buf.clear();
    if raw.len() > 8 {
        buf.push_str(run);
        if all & UPPER != 0 {
            buf.make_ascii_lowercase();
        }
    }
    f(
        if raw.len() <= 8 {
            Word::Packed(pack_run(text.as_bytes(), start, raw.len()))
        } else {
            Word::Text(buf)
        },
        false,
    );
    // An upper case letter after the first, and lower case or digits: maybe `perPage`.
    if rest & UPPER != 0 && all & (LOWER | DIGIT) != 0 {
        // Same rules as `split_words`, on bytes; folding ASCII keeps byte offsets.
        let mut from = 0;
        for j in 1..raw.len() {
            let (prev, cur) = (raw[j - 1], raw[j]);
            let lower_to_upper =
                (prev.is_ascii_lowercase() || prev.is_ascii_digit()) && cur.is_ascii_uppercase();
            let acronym_end = prev.is_ascii_uppercase()
                && cur.is_ascii_uppercase()
                && raw.get(j + 1).is_some_and(u8::is_ascii_lowercase);
            if lower_to_upper || acronym_end {
                f(ascii_word(raw, buf, from..j), true);
                from = j;
            }
        }
        if from > 0 {
            f(ascii_word(raw, buf, from..raw.len()), true);
        }
    }
}

/// The words of a run with non-ASCII characters: the whole run folded, then its parts if it
/// changes case inside.
fn unicode_words(run: &str, buf: &mut String, f: &mut impl FnMut(Word<'_>, bool)) {
    fold_into(run, buf);
    f(Word::Text(buf), false);
    if changes_case_inside(run) {
        let parts = split_words(run);
        if parts.len() > 1 {
            for part in &parts {
                fold_into(part, buf);
                f(Word::Text(buf), true);
            }
        }
    }
}

// Byte classes, as bits so a run's classes can be collected with `|`.
const SEPARATOR: u8 = 0;
const LOWER: u8 = 1;
const UPPER: u8 = 2;
const DIGIT: u8 = 4;
const NON_ASCII: u8 = 8;

/// The class of each byte: ASCII letters by case, digits, separators, and any byte of a
/// non-ASCII character.
const ASCII_CLASS: [u8; 256] = {
    let mut table = [SEPARATOR; 256];
    let mut b = 0;
    while b < 256 {
        table[b] = match b as u8 {
            b'a'..=b'z' => LOWER,
            b'A'..=b'Z' => UPPER,
            b'0'..=b'9' => DIGIT,
            0x80..=0xff => NON_ASCII,
            _ => SEPARATOR,
        };
        b += 1;
    }
    table
};

/// The character starting at byte `i`, a char boundary.
fn char_at(text: &str, i: usize) -> char {
    text[i..].chars().next().unwrap_or(char::REPLACEMENT_CHARACTER)
}

fn changes_case_inside(chunk: &str) -> bool {
    chunk.chars().skip(1).any(char::is_uppercase) && chunk.chars().any(char::is_lowercase)
}

/// Writes `word` lowercased and, where trivial, folded to ASCII (`Café` → `cafe`) into `out`.
fn fold_into(word: &str, out: &mut String) {
    out.clear();
    if word.is_ascii() {
        out.push_str(word);
        out.make_ascii_lowercase();
        return;
    }
    for c in word.chars().flat_map(char::to_lowercase) {
        match fold_char(c) {
            Some(s) => out.push_str(s),
            None => out.push(c),
        }
    }
}

fn fold_char(c: char) -> Option<&'static str> {
    Some(match c {
        'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' | 'ā' | 'ą' | 'ă' => "a",
        'ç' | 'ć' | 'č' => "c",
        'ď' | 'đ' => "d",
        'è' | 'é' | 'ê' | 'ë' | 'ē' | 'ę' | 'ě' => "e",
        'ğ' => "g",
        'ì' | 'í' | 'î' | 'ï' | 'ī' | 'ı' => "i",
        'ł' => "l",
        'ñ' | 'ń' | 'ň' => "n",
        'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' | 'ō' | 'ő' => "o",
        'ř' => "r",
        'ś' | 'š' | 'ş' => "s",
        'ť' | 'ţ' => "t",
        'ù' | 'ú' | 'û' | 'ü' | 'ū' | 'ů' | 'ű' => "u",
        'ý' | 'ÿ' => "y",
        'ź' | 'ż' | 'ž' => "z",
        'ß' => "ss",
        'æ' => "ae",
        'œ' => "oe",
        'þ' => "th",
        _ => return None,
    })
}

/// Stems a lowercased ASCII word with the Snowball English stemmer (Porter2): `bugs` → `bug`,
/// `meetings` → `meet`, `created` and `creating` → `creat`, plus two fixes for tool words
/// (`added` → `add`, `PRs` → `pr`). Words with other characters are left alone.
pub(crate) fn stem(word: &mut String) {
    if !word.is_ascii() {
        return;
    }
    if let Cow::Owned(stemmed) = Stemmer::create(Algorithm::English).stem(word) {
        *word = stemmed;
    }
    // Porter2 undoubles `added` and `adding` to `ad`, which then never meets `add`, a word
    // tools use all the time.
    if word == "ad" {
        word.push('d');
    }
    // It keeps the `s` of a plural without a vowel: `PRs`, `DMs`.
    if word.len() >= 3 && word.ends_with('s') && !word.bytes().any(|b| b"aeiouy".contains(&b)) {
        word.pop();
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn text_of(word: Word<'_>) -> String {
        let mut out = String::new();
        word.write_into(&mut out);
        out
    }

    fn check_terms(text: &str, expect: Expect) {
        let mut out = Vec::new();
        for_each_word(text, &mut String::new(), |w| {
            let mut w = text_of(w);
            if is_stopword(&w) {
                return;
            }
            stem(&mut w);
            out.push(w);
        });
        expect.assert_eq(&out.join(" "));
    }

    #[test]
    fn words_and_stems() {
        check_terms(
            "Create a new issue in a GitHub repository",
            expect!["creat new issu github git hub repositori"],
        );
        check_terms("read_multiple_files perPage URL", expect!["read multipl file perpag per page url"]);
        check_terms(
            "entities observations directories listing created creating creates running added",
            expect!["entiti observ directori list creat creat creat run add"],
        );
        check_terms(
            "string need status process analysis tree trees",
            expect!["string need status process analysi tree tree"],
        );
        check_terms("matches boxes addresses settings stopped", expect!["match box address set stop"]);
        check_terms("added adding PRs DMs", expect!["add add pr p rs dm ms"]);
        check_terms("Café Über straße 获取数据 — ok!", expect!["cafe uber strass 获取数据 ok"]);
        check_terms("", expect![""]);
        check_terms("  ,,, ", expect![""]);
    }

    #[test]
    fn words_split_like_names() {
        let words = |text: &str| {
            let mut out = Vec::new();
            for_each_word(text, &mut String::new(), |w| out.push(text_of(w)));
            out.join(" ")
        };
        expect!["httpget http get urls ur ls v2api v2 api get issue creefichier cree fichier ok 0a 0 a"]
            .assert_eq(&words("HTTPGet URLs v2Api get_issue CrééFichier ok 0A"));
    }

    proptest::proptest! {
        /// The ASCII fast path splits exactly as `split_words` does.
        #[test]
        fn ascii_parts_match_split_words(run in "[a-zA-Z0-9]{1,12}") {
            let mut parts = Vec::new();
            for_each_word(&run, &mut String::new(), |w| parts.push(text_of(w)));
            let mut expected: Vec<String> = vec![run.to_ascii_lowercase()];
            let split = split_words(&run);
            if split.len() > 1 {
                expected.extend(split.iter().map(|p| p.to_ascii_lowercase()));
            }
            proptest::prop_assert_eq!(parts, expected);
        }
    }

    #[test]
    fn swar_lowercase_test() {
        for b in 0..=255u8 {
            let x = u64::from_le_bytes([b'a', b, b'z', 0x80, b'{', b'`', 0xff, b'q']);
            let expected: u64 = [b'a', b, b'z', 0x80, b'{', b'`', 0xff, b'q']
                .iter()
                .enumerate()
                .filter(|(_, c)| !c.is_ascii_lowercase())
                .map(|(k, _)| 0x80u64 << (8 * k))
                .sum();
            assert_eq!(not_lowercase(x), expected, "byte {b:#x}");
        }
    }

    #[test]
    fn stopwords_are_sorted() {
        let mut sorted = STOPWORDS.to_vec();
        sorted.sort_unstable();
        assert_eq!(sorted, STOPWORDS);
    }
}

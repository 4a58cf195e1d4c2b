//! Reading one schema object: the keywords conversion looks at, found in one pass, and the words
//! (description and hints) a field's JSDoc shows.

use serde_json::{Map, Value};

use super::Doc;
use crate::canonical;

/// Longest description kept, in bytes.
const MAX_DESCRIPTION: usize = 4_000;
/// Longest hint value (`@default …`) kept, in characters.
pub(super) const MAX_HINT: usize = 80;

/// The keywords of one schema object this module reads, found in one pass over its members.
pub(super) struct Words<'v>([Option<&'v Value>; KEYWORDS.len()]);

const KEYWORDS: [&str; 41] = join(
    [
        "$ref",
        "$recursiveRef",
        "$dynamicRef",
        "const",
        "enum",
        "anyOf",
        "oneOf",
        "allOf",
        "nullable",
        "title",
        "type",
        "required",
        "properties",
        "additionalProperties",
        "unevaluatedProperties",
        "patternProperties",
        "propertyNames",
        "prefixItems",
        "items",
        "additionalItems",
        "description",
        "format",
        "default",
    ],
    CONSTRAINT_KEYS,
    ["uniqueItems", "examples", "example", "deprecated"],
);

/// The constraints a field's JSDoc shows as `@<key> <value>` tags, in the order shown.
const CONSTRAINT_KEYS: [&str; 14] = [
    "minimum",
    "exclusiveMinimum",
    "maximum",
    "exclusiveMaximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "pattern",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "contentEncoding",
    "contentMediaType",
];

/// `head`, `middle` and `tail` as one array of their `N` keywords.
const fn join<const H: usize, const M: usize, const T: usize, const N: usize>(
    head: [&'static str; H],
    middle: [&'static str; M],
    tail: [&'static str; T],
) -> [&'static str; N] {
    assert!(H + M + T == N);
    let mut out = [""; N];
    let mut i = 0;
    while i < N {
        out[i] = if i < H {
            head[i]
        } else if i < H + M {
            middle[i - H]
        } else {
            tail[i - H - M]
        };
        i += 1;
    }
    out
}

impl<'v> Words<'v> {
    pub(super) fn new(m: &'v Map<String, Value>) -> Self {
        let mut found = [None; KEYWORDS.len()];
        for (key, value) in m {
            if let Some(i) = keyword(key) {
                found[i] = Some(value);
            }
        }
        Words(found)
    }

    pub(super) fn get(&self, key: &str) -> Option<&'v Value> {
        self.0[keyword(key)?]
    }

    pub(super) fn has(&self, key: &str) -> bool {
        self.get(key).is_some()
    }
}

#[inline]
fn keyword(key: &str) -> Option<usize> {
    let i = match key {
        "$ref" => 0,
        "$recursiveRef" => 1,
        "$dynamicRef" => 2,
        "const" => 3,
        "enum" => 4,
        "anyOf" => 5,
        "oneOf" => 6,
        "allOf" => 7,
        "nullable" => 8,
        "title" => 9,
        "type" => 10,
        "required" => 11,
        "properties" => 12,
        "additionalProperties" => 13,
        "unevaluatedProperties" => 14,
        "patternProperties" => 15,
        "propertyNames" => 16,
        "prefixItems" => 17,
        "items" => 18,
        "additionalItems" => 19,
        "description" => 20,
        "format" => 21,
        "default" => 22,
        "minimum" => 23,
        "exclusiveMinimum" => 24,
        "maximum" => 25,
        "exclusiveMaximum" => 26,
        "multipleOf" => 27,
        "minLength" => 28,
        "maxLength" => 29,
        "pattern" => 30,
        "minItems" => 31,
        "maxItems" => 32,
        "minProperties" => 33,
        "maxProperties" => 34,
        "contentEncoding" => 35,
        "contentMediaType" => 36,
        "uniqueItems" => 37,
        "examples" => 38,
        "example" => 39,
        "deprecated" => 40,
        _ => return None,
    };
    Some(i)
}

/// `#/$defs/Foo%20Bar` → `/$defs/Foo Bar` (a JSON pointer); `None` for references elsewhere.
pub(super) fn local_pointer(r: &str) -> Option<String> {
    let rest = r.strip_prefix('#')?;
    if !(rest.is_empty() || rest.starts_with('/')) {
        return None;
    }
    let bytes = rest.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%'
            && i + 2 < bytes.len()
            && let Some(b) =
                std::str::from_utf8(&bytes[i + 1..i + 3]).ok().and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(b);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

pub(super) fn doc_of(m: &Words<'_>) -> Doc {
    let description = m
        .get("description")
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|d| !d.is_empty())
        .map(|d| clip(d, MAX_DESCRIPTION));
    let mut tags = Vec::new();
    let text = |v: &Value| match v {
        Value::String(s) => clip(s, MAX_HINT),
        other => clip(&canonical::to_string(other), MAX_HINT),
    };
    if let Some(f) = m.get("format").and_then(Value::as_str) {
        tags.push(format!("@format {}", clip(f, MAX_HINT)));
    }
    if let Some(d) = m.get("default") {
        tags.push(format!("@default {}", clip(&canonical::to_string(d), MAX_HINT)));
    }
    for key in CONSTRAINT_KEYS {
        if let Some(v) = m.get(key).filter(|v| v.is_number() || v.is_string()) {
            tags.push(format!("@{key} {}", text(v)));
        }
    }
    if m.get("uniqueItems") == Some(&Value::Bool(true)) {
        tags.push("@uniqueItems".to_owned());
    }
    let example = match m.get("examples") {
        Some(Value::Array(list)) => list.first(),
        _ => m.get("example"),
    };
    if let Some(e) = example {
        tags.push(format!("@example {}", clip(&canonical::to_string(e), MAX_HINT)));
    }
    if m.get("deprecated") == Some(&Value::Bool(true)) {
        tags.push("@deprecated".to_owned());
    }
    Doc { description, tags }
}

/// `issue_state` / `Issue State` / `create_issueArguments` → `IssueState` / `CreateIssueArguments`:
/// ASCII letters and digits, each word capitalised, at most 64 characters.
pub(crate) fn pascal(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len().min(64));
    let mut word_start = true;
    for c in raw.chars() {
        if !c.is_ascii_alphanumeric() {
            word_start = true;
            continue;
        }
        if word_start {
            out.push(c.to_ascii_uppercase());
            word_start = false;
        } else {
            out.push(c);
        }
        if out.len() >= 64 {
            break;
        }
    }
    if out.starts_with(|c: char| c.is_ascii_digit()) {
        out.insert(0, 'T');
    }
    out
}

/// At most `max` characters on one line, with `…` when cut.
pub(crate) fn clip(s: &str, max: usize) -> String {
    if s.len() <= max && !s.contains(['\n', '\r']) {
        return s.to_owned();
    }
    let flat: String = s.chars().map(|c| if c == '\n' || c == '\r' { ' ' } else { c }).collect();
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    format!("{cut}…")
}

pub(super) fn quote_for_note(s: &str) -> String {
    format!("`{}`", clip(s, 60))
}

pub(super) use crate::manifest::json_kind;

#[cfg(test)]
mod tests {
    use expect_test::expect;

    #[test]
    fn pascal_names() {
        let names: Vec<String> =
            ["issue_state", "Issue State", "create_issueArguments", "2fa", "ünï-code", "", "a.b/c"]
                .iter()
                .map(|s| super::pascal(s))
                .collect();
        expect![[r#"["IssueState", "IssueState", "CreateIssueArguments", "T2fa", "NCode", "", "ABC"]"#]]
            .assert_eq(&format!("{names:?}"));
    }

    #[test]
    fn keyword_indexes_match_the_list() {
        for (i, key) in super::KEYWORDS.iter().enumerate() {
            assert_eq!(super::keyword(key), Some(i), "{key}");
        }
    }

    #[test]
    fn local_pointers() {
        let pointers: Vec<Option<String>> =
            ["#", "#/$defs/Foo%20Bar", "#/definitions/a~1b", "other.json#/x", "#anchor", "#/%zz"]
                .iter()
                .map(|r| super::local_pointer(r))
                .collect();
        expect![[
            r#"[Some(""), Some("/$defs/Foo Bar"), Some("/definitions/a~1b"), None, None, Some("/%zz")]"#
        ]]
        .assert_eq(&format!("{pointers:?}"));
    }
}

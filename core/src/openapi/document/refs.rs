//! `$ref`s inside one document: JSON pointers (`~0`, `~1`, percent-encoding) resolved against
//! its root, chains followed a bounded number of hops, cycles and outside references refused.

use serde_json::Value;

use super::DocumentError;
use crate::manifest::json_kind;

/// Most `$ref` hops from one place to what it stands for.
const MAX_HOPS: usize = 32;

/// Why part of a document could not be read: the whole document (`Fatal`), or only the
/// operation being read (`Skip`, with the reason for its problem line).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Fault {
    Fatal(DocumentError),
    Skip(String),
}

impl From<DocumentError> for Fault {
    fn from(e: DocumentError) -> Fault {
        Fault::Fatal(e)
    }
}

/// A document's root, for resolving references into it.
#[derive(Debug, Clone, Copy)]
pub(super) struct Refs<'a> {
    pub root: &'a Value,
}

impl<'a> Refs<'a> {
    pub(super) fn new(root: &'a Value) -> Refs<'a> {
        Refs { root }
    }

    /// The value at a document pointer (`/components/schemas/Pet`, already decoded).
    pub(super) fn at(&self, pointer: &str) -> Option<&'a Value> {
        self.root.pointer(pointer)
    }

    /// The target of `reference`, found at `location`, and the pointer it resolves to.
    pub(super) fn target(&self, reference: &str, location: &str) -> Result<(&'a Value, String), Fault> {
        let pointer = pointer_of(reference, location)?;
        match self.root.pointer(&pointer) {
            Some(target) => Ok((target, pointer)),
            None => Err(Fault::Fatal(DocumentError::MissingRef {
                reference: reference.to_owned(),
                location: location.to_owned(),
            })),
        }
    }

    /// An object that may be a `$ref` (a parameter, a request body, a response, a path item, a
    /// security scheme), followed to what it stands for, with where that is.
    pub(super) fn follow<'v>(&self, value: &'v Value, location: &str) -> Result<(&'v Value, String), Fault>
    where
        'a: 'v,
    {
        let mut current = value;
        let mut at = location.to_owned();
        let mut seen: Vec<String> = Vec::new();
        for _ in 0..MAX_HOPS {
            let Some(raw) = current.get("$ref") else { return Ok((current, at)) };
            let Value::String(reference) = raw else {
                return Err(Fault::Skip(format!("`$ref` at `{at}` is {}, not a string", json_kind(raw))));
            };
            let (target, pointer) = self.target(reference, &at)?;
            if seen.contains(&pointer) {
                return Err(Fault::Skip(format!(
                    "`$ref` `{reference}` at `{at}` refers to itself in a circle"
                )));
            }
            seen.push(pointer.clone());
            current = target;
            at = pointer;
        }
        Err(Fault::Skip(format!("`$ref`s from `{location}` go on for more than {MAX_HOPS} hops")))
    }
}

/// The document pointer a local reference names: `#/a~1b/c%20d` → `/a~1b/c d` (the `~` escapes
/// are left for `Value::pointer`).
pub(super) fn pointer_of(reference: &str, location: &str) -> Result<String, Fault> {
    let Some(fragment) = reference.strip_prefix('#') else {
        return Err(Fault::Fatal(DocumentError::ExternalRef {
            reference: reference.to_owned(),
            location: location.to_owned(),
        }));
    };
    if !(fragment.is_empty() || fragment.starts_with('/')) {
        return Err(Fault::Skip(format!(
            "`$ref` `{reference}` at `{location}` names an anchor, which is not read: refer by pointer (`#/components/…`)"
        )));
    }
    let bytes = fragment.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) =
                (bytes.get(i + 1).copied().and_then(hex), bytes.get(i + 2).copied().and_then(hex))
        {
            out.push((h * 16 + l) as u8);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| {
        Fault::Skip(format!("`$ref` `{reference}` at `{location}` decodes to bytes that are not UTF-8"))
    })
}

/// `location` with one more key: `/paths` + `/pets/{id}` → `/paths/~1pets~1{id}`.
pub(super) fn child(location: &str, key: &str) -> String {
    let mut out = String::with_capacity(location.len() + key.len() + 1);
    out.push_str(location);
    out.push('/');
    for c in key.chars() {
        match c {
            '~' => out.push_str("~0"),
            '/' => out.push_str("~1"),
            c => out.push(c),
        }
    }
    out
}

/// The last key of a pointer, unescaped: `/components/schemas/a~1b` → `a/b`.
pub(super) fn last_key(pointer: &str) -> String {
    pointer.rsplit('/').next().unwrap_or("").replace("~1", "/").replace("~0", "~")
}

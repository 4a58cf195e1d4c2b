//! A call's arguments checked against its tool's pinned input schema, before policy, a person,
//! a secret or the upstream sees the call: a call that cannot succeed costs no one's attention.
//!
//! The validator is the `jsonschema` crate (draft 2020-12, 2019-09, 7, 6 and 4, chosen by the
//! schema's `$schema`, 2020-12 without one), built without its network and file resolvers, so it
//! runs the same in the hosted Worker. `format` is not asserted: upstreams differ in what they
//! accept, and refusing a call the source would take is worse than letting it answer.
//!
//! A schema is compiled once per tool and kept with the catalog ([`Checker`]); one that does not
//! compile (an external `$ref`, an unknown draft, a bad regex) leaves that tool's calls
//! unchecked, and [`Checker::problem`] says why so review and doctor can report it.

use std::sync::OnceLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use serde_json::Value;

/// How many problems one refusal lists.
pub const MAX_PROBLEMS: usize = 5;
/// The longest a problem's text gets.
const MAX_PROBLEM_CHARS: usize = 160;

/// One tool's compiled input schema, made on its first call.
#[derive(Default)]
pub struct Checker {
    compiled: OnceLock<Result<jsonschema::Validator, String>>,
}

impl std::fmt::Debug for Checker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Checker").field("compiled", &self.compiled.get().map(|c| c.is_ok())).finish()
    }
}

impl Clone for Checker {
    /// A copy compiles again on first use (validators are not `Clone`).
    fn clone(&self) -> Checker {
        Checker::default()
    }
}

/// What checking a call's arguments found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Checked {
    Valid,
    /// Each problem as `path: what was expected`, at most [`MAX_PROBLEMS`].
    Invalid(Vec<String>),
    /// The schema did not compile; the call goes on unchecked.
    Unchecked(String),
}

impl Checker {
    fn compiled(&self, schema: &Value) -> &Result<jsonschema::Validator, String> {
        self.compiled.get_or_init(|| compile(schema))
    }

    /// Checks `arguments` against `schema` (the tool's pinned input schema).
    pub fn check(&self, schema: &Value, arguments: &Value) -> Checked {
        match self.compiled(schema) {
            Err(why) => Checked::Unchecked(why.clone()),
            Ok(validator) => {
                let mut problems: Vec<String> = Vec::new();
                for error in validator.iter_errors(arguments) {
                    let text = describe(&error.instance_path().to_string(), error.kind(), error.instance());
                    if !problems.contains(&text) {
                        problems.push(text);
                    }
                    if problems.len() == MAX_PROBLEMS {
                        break;
                    }
                }
                if problems.is_empty() { Checked::Valid } else { Checked::Invalid(problems) }
            }
        }
    }

    /// Why `schema` cannot be checked, if it cannot.
    pub fn problem(&self, schema: &Value) -> Option<String> {
        self.compiled(schema).as_ref().err().cloned()
    }
}

fn compile(schema: &Value) -> Result<jsonschema::Validator, String> {
    jsonschema::options().should_validate_formats(false).build(schema).map_err(|err| {
        let text = err.to_string();
        format!("its input schema cannot be checked ({})", clip(&text))
    })
}

/// The JSON type of `value` in a person's words.
fn type_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "integer",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// One problem as `path: what was expected`; the path is dotted (`entities[0].name`), and the
/// arguments object itself is `arguments`.
fn describe(pointer: &str, kind: &ValidationErrorKind, instance: &Value) -> String {
    let path = dotted(pointer);
    let what = match kind {
        ValidationErrorKind::Type { kind } => {
            let wanted = match kind {
                TypeKind::Single(t) => t.to_string(),
                TypeKind::Multiple(set) => set.iter().map(|t| t.to_string()).collect::<Vec<_>>().join(" or "),
            };
            format!("expected {wanted}, got {}", type_of(instance))
        }
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().map_or_else(|| property.to_string(), str::to_owned);
            return clip(&format!("{}: missing required `{name}`", at(&path)));
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            format!("unexpected {} (not in the schema)", names(unexpected))
        }
        ValidationErrorKind::Enum { options } => format!("expected one of {}", clip(&options.to_string())),
        ValidationErrorKind::Constant { expected_value } => format!("expected {expected_value}"),
        ValidationErrorKind::MinLength { limit } => format!("expected at least {limit} characters"),
        ValidationErrorKind::MaxLength { limit } => format!("expected at most {limit} characters"),
        ValidationErrorKind::MinItems { limit } => format!("expected at least {limit} items"),
        ValidationErrorKind::MaxItems { limit } => format!("expected at most {limit} items"),
        ValidationErrorKind::Minimum { limit } => format!("expected at least {limit}"),
        ValidationErrorKind::Maximum { limit } => format!("expected at most {limit}"),
        ValidationErrorKind::ExclusiveMinimum { limit } => format!("expected more than {limit}"),
        ValidationErrorKind::ExclusiveMaximum { limit } => format!("expected less than {limit}"),
        ValidationErrorKind::Pattern { pattern } => format!("expected text matching {pattern}"),
        ValidationErrorKind::AnyOf { .. } | ValidationErrorKind::OneOfNotValid { .. } => {
            "matches none of the shapes the schema allows".to_owned()
        }
        ValidationErrorKind::OneOfMultipleValid { .. } => {
            "matches more than one of the shapes allowed".to_owned()
        }
        ValidationErrorKind::UniqueItems => "expected unique items".to_owned(),
        ValidationErrorKind::FalseSchema => "is not allowed".to_owned(),
        other => format!("fails `{}`", other.keyword()),
    };
    clip(&format!("{}: {what}", at(&path)))
}

fn names(list: &[String]) -> String {
    list.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}

/// Where a problem is: the dotted path, or `arguments` for the whole object.
fn at(path: &str) -> &str {
    if path.is_empty() { "arguments" } else { path }
}

/// `/entities/0/name` as `entities[0].name`.
fn dotted(pointer: &str) -> String {
    let mut out = String::new();
    for part in pointer.split('/').skip(1) {
        let part = part.replace("~1", "/").replace("~0", "~");
        if !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()) {
            out.push_str(&format!("[{part}]"));
        } else {
            if !out.is_empty() {
                out.push('.');
            }
            out.push_str(&part);
        }
    }
    out
}

fn clip(text: &str) -> String {
    if text.chars().count() <= MAX_PROBLEM_CHARS {
        return text.to_owned();
    }
    let cut: String = text.chars().take(MAX_PROBLEM_CHARS - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn check(schema: Value, args: Value) -> Checked {
        Checker::default().check(&schema, &args)
    }

    #[test]
    fn problems_name_the_path_and_what_was_expected() {
        let schema = json!({
            "type": "object",
            "properties": {
                "entities": { "type": "array", "items": { "type": "object",
                    "properties": { "name": { "type": "string" } }, "required": ["name"] } },
                "state": { "enum": ["open", "closed"] },
            },
            "required": ["entities"],
            "additionalProperties": false,
        });
        assert_eq!(
            check(schema.clone(), json!({ "entities": "not an array" })),
            Checked::Invalid(vec!["entities: expected array, got string".into()])
        );
        let Checked::Invalid(found) =
            check(schema.clone(), json!({ "entities": [{}], "state": "x", "extra": 1 }))
        else {
            panic!()
        };
        assert!(found.contains(&"entities[0]: missing required `name`".to_owned()), "{found:?}");
        assert!(found.iter().any(|p| p.starts_with("state: expected one of")), "{found:?}");
        assert!(found.contains(&"arguments: unexpected `extra` (not in the schema)".to_owned()), "{found:?}");
        assert_eq!(
            check(schema.clone(), json!({})),
            Checked::Invalid(vec!["arguments: missing required `entities`".into()])
        );
        assert_eq!(check(schema, json!({ "entities": [{ "name": "a" }] })), Checked::Valid);
    }

    #[test]
    fn schemas_that_do_not_compile_leave_calls_unchecked() {
        let remote = json!({ "$ref": "https://example.com/schema.json" });
        assert!(matches!(check(remote, json!({})), Checked::Unchecked(_)));
        let bad_regex = json!({ "type": "string", "pattern": "(" });
        assert!(matches!(check(bad_regex, json!("x")), Checked::Unchecked(_)));
        assert!(Checker::default().problem(&json!({ "type": "object" })).is_none());
    }

    #[test]
    fn draft_07_and_cycles_compile_and_formats_are_not_asserted() {
        let draft7 = json!({ "$schema": "http://json-schema.org/draft-07/schema#", "type": "object",
            "properties": { "url": { "type": "string", "format": "uri" } } });
        assert_eq!(check(draft7, json!({ "url": "not a uri" })), Checked::Valid);
        let cyclic = json!({ "$defs": { "node": { "type": "object",
            "properties": { "next": { "$ref": "#/$defs/node" }, "n": { "type": "integer" } } } },
            "$ref": "#/$defs/node" });
        assert_eq!(
            check(cyclic, json!({ "next": { "next": { "n": "x" } } })),
            Checked::Invalid(vec!["next.next.n: expected integer, got string".into()])
        );
    }
}

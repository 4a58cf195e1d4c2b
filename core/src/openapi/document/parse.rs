//! Bytes → one JSON value: JSON when the text opens with `{`, YAML otherwise, both bounded.
//!
//! YAML goes through serde-saphyr: pure Rust, written to never panic on bad input, with a
//! budget on parser events, nodes, nesting and anchors and a cap on the events aliases replay,
//! so a billion-laughs document stops at a million replayed events instead of filling memory.
//! (serde_norway, which the local hub uses for its own files, is libyaml translated to unsafe
//! Rust; a document read here comes from anywhere.) YAML is read with the 1.2 core schema's
//! booleans (`yes` stays a string) and numbers with leading zeros or underscores kept as text.

use serde_json::Value;
use serde_saphyr::budget::BudgetBreach;
use serde_saphyr::{Budget, DuplicateKeyPolicy, Error as YamlError, Options};

use super::DocumentError;

/// The deepest nesting read in JSON, serde_json's own limit.
pub(super) const MAX_DEPTH: usize = 128;
/// The deepest nesting read in YAML: its deserializer takes more stack per level (a debug build
/// overflows a test thread's 2 MiB near 100). Real documents nest under 30 (GitHub's, with
/// every `$ref` expanded, 29).
const MAX_YAML_DEPTH: usize = 64;
/// Events replayed by YAML aliases, in all.
const MAX_REPLAYED_EVENTS: usize = 1_000_000;

pub(super) fn parse(bytes: &[u8], max_bytes: usize) -> Result<Value, DocumentError> {
    if bytes.len() > max_bytes {
        return Err(DocumentError::TooLarge { size: bytes.len(), limit: max_bytes });
    }
    let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first == Some(&b'{') {
        return match serde_json::from_slice(bytes) {
            Ok(value) => Ok(value),
            Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
                Err(DocumentError::TooDeep { limit: MAX_DEPTH })
            }
            // A YAML flow mapping opens with `{` too.
            Err(e) => yaml(bytes).map_err(|_| DocumentError::Json(e.to_string())),
        };
    }
    yaml(bytes)
}

fn yaml(bytes: &[u8]) -> Result<Value, DocumentError> {
    let mut budget = Budget::default();
    // Without aliases a document has no more nodes than bytes, so these leave room for a
    // document's own anchors; the cap on replayed events below is what stops a bomb.
    budget.max_events = bytes.len().saturating_mul(8).saturating_add(MAX_REPLAYED_EVENTS);
    budget.max_nodes = bytes.len().saturating_mul(4).saturating_add(MAX_REPLAYED_EVENTS);
    budget.max_total_scalar_bytes = bytes.len().saturating_mul(8).saturating_add(1024 * 1024);
    budget.max_depth = MAX_YAML_DEPTH;
    budget.flow_nesting_limit = MAX_YAML_DEPTH;
    budget.max_documents = 1;
    // Documents reuse one anchor many times (a shared error response); the replay cap below
    // is what stops a bomb.
    budget.enforce_alias_anchor_ratio = false;
    let mut options = Options::default();
    options.budget = Some(budget);
    options.duplicate_keys = DuplicateKeyPolicy::LastWins;
    options.alias_limits.max_total_replayed_events = MAX_REPLAYED_EVENTS;
    options.alias_limits.max_replay_stack_depth = MAX_YAML_DEPTH;
    options.strict_booleans = true;
    options.leading_zero_numbers_as_strings = true;
    options.underscored_numbers_as_strings = true;
    options.with_snippet = false;
    serde_saphyr::from_slice_with_options::<Value>(bytes, options).map_err(|e| yaml_error(&e))
}

fn yaml_error(e: &YamlError) -> DocumentError {
    let text = one_line(&e.to_string());
    let mut inner = e;
    while let YamlError::AliasError { error, .. } | YamlError::WithSnippet { error, .. } = inner {
        inner = error;
    }
    match inner {
        YamlError::Budget { breach: BudgetBreach::Depth { .. }, .. } => {
            DocumentError::TooDeep { limit: MAX_YAML_DEPTH }
        }
        YamlError::Budget {
            breach:
                BudgetBreach::Aliases { .. }
                | BudgetBreach::Anchors { .. }
                | BudgetBreach::Events { .. }
                | BudgetBreach::Nodes { .. }
                // Scalars add up past twice the input only through aliases.
                | BudgetBreach::ScalarBytes { .. },
            ..
        }
        | YamlError::AliasReplayLimitExceeded { .. }
        | YamlError::AliasExpansionLimitExceeded { .. }
        | YamlError::AliasReplayStackDepthExceeded { .. }
        | YamlError::AliasReplayCounterOverflow { .. } => DocumentError::Aliases(text),
        // The parser's own cap on nested flow collections (`[[[…`), set to the same depth.
        _ if text.contains("recursion limit exceeded") => DocumentError::TooDeep { limit: MAX_YAML_DEPTH },
        _ => DocumentError::Yaml(text),
    }
}

/// An error's text on one line, at most 300 characters.
fn one_line(text: &str) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= 300 {
        return flat;
    }
    let cut: String = flat.chars().take(299).collect();
    format!("{cut}…")
}

//! Fuzz target: the code pipeline (`code::prepare`) on any text a model might send to `execute`.
//!
//! Beyond "never panics": a refusal is never `Rewrite` (the pipeline's own bug), every body it
//! hands on parses once wrapped the way the sandbox wraps it, and its line map points inside
//! the model's text.

#![no_main]

use capabilities_core::code::{CodeErrorKind, DEFAULT_MAX_BYTES, prepare};
use libfuzzer_sys::fuzz_target;
use oxc::allocator::Allocator;
use oxc::parser::Parser;
use oxc::span::SourceType;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let prepared = match prepare(text, DEFAULT_MAX_BYTES) {
        Ok(prepared) => prepared,
        Err(err) => {
            assert_ne!(
                err.kind,
                CodeErrorKind::Rewrite,
                "a rewrite broke the code: {err}\n--- input ---\n{text}"
            );
            assert!(err.line.is_none_or(|l| l >= 1) && err.column.is_none_or(|c| c >= 1));
            let _ = err.to_string();
            return;
        }
    };
    let wrapped = format!("(async () => {{\n{}\n}})()", prepared.body);
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, &wrapped, SourceType::cjs()).parse();
    assert!(
        parsed.diagnostics.is_empty(),
        "the prepared body does not parse: {:?}\n--- input ---\n{text}\n--- body ---\n{}",
        parsed.diagnostics,
        prepared.body
    );
    // The model's text has this many lines; a lone function's call is one line past them.
    let lines = u32::try_from(text.split('\n').count()).unwrap_or(u32::MAX).saturating_add(1);
    for body_line in 1..=u32::try_from(prepared.body.split('\n').count()).unwrap_or(u32::MAX) {
        if let Some(line) = prepared.original_line(body_line) {
            assert!((1..=lines).contains(&line), "body line {body_line} maps to line {line} of {lines}");
        }
    }
});

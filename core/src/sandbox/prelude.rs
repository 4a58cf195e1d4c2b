//! The guest prelude: the JavaScript module every sandbox driver loads before a run's code, and
//! (with the QuickJS driver) its bytecode, compiled once per process.
//!
//! The prelude defines what the code sees: one frozen global per namespace, `hub`, `ToolError`,
//! a captured `console`, the logical clock behind `Date`, the seeded `Math.random` and
//! `crypto`, virtual timers, `structuredClone`, `TextEncoder`/`TextDecoder`, `atob`/`btoa`;
//! and it removes every way of turning text into code.

/// The prelude's source text.
pub const SOURCE: &str = include_str!("prelude.js");

/// The module name the prelude is compiled under; stack lines naming it are hidden from the
/// guest's error reports.
pub const MODULE_NAME: &str = "prelude.js";

/// The prelude as QuickJS bytecode, compiled on first use and kept for the process.
#[cfg(feature = "quickjs")]
pub(crate) fn bytecode() -> Result<&'static [u8], String> {
    use std::sync::OnceLock;

    use crate::sandbox::quickjs::compile::{CompileError, compile_module};

    static BYTECODE: OnceLock<Result<Vec<u8>, String>> = OnceLock::new();
    BYTECODE
        .get_or_init(|| {
            compile_module(MODULE_NAME, SOURCE, false).map_err(|e| match e {
                CompileError::Syntax(e) => format!("the prelude does not compile: {}: {}", e.name, e.message),
                CompileError::Internal(e) => e,
            })
        })
        .as_deref()
        .map_err(Clone::clone)
}

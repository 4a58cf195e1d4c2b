//! The default limits. A host may lower any of them, never raise one.

use serde::{Deserialize, Serialize};

/// Budgets for one run and for every channel that carries text back to the model.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Limits {
    /// Size of the code in one `execute`.
    pub code_bytes: usize,
    /// Guest execution time, paused while tool calls are in flight.
    pub compute_ms: u64,
    /// Ceiling for one attempt, tool calls included.
    pub wall_ms: u64,
    /// Guest heap.
    pub memory_bytes: usize,
    /// Tool calls per run, over all attempts.
    pub max_calls: u32,
    /// Tool calls in flight at once.
    pub max_concurrent: usize,
    /// Result and logs returned inline, all channels together.
    pub inline_result_bytes: usize,
    /// One upstream call.
    pub upstream_timeout_ms: u64,
    /// How long a pending approval waits.
    pub approval_ttl_ms: u64,
    /// `search` results per query: default and maximum.
    pub search_default_limit: usize,
    pub search_max_limit: usize,
    /// Tokens `describe` may return.
    pub describe_tokens: usize,
    /// Tokens the fixed surface (tool definitions + instructions) may take.
    pub surface_tokens: usize,
    /// Longest `setTimeout` delay.
    pub max_timeout_ms: u64,
    /// Arguments shown to a person in an approval, after redaction.
    pub approval_preview_bytes: usize,
}

impl Limits {
    pub const DEFAULT: Limits = Limits {
        code_bytes: 64 * 1024,
        compute_ms: 10_000,
        wall_ms: 90_000,
        memory_bytes: 64 * 1024 * 1024,
        max_calls: 500,
        max_concurrent: 8,
        inline_result_bytes: 24 * 1024,
        upstream_timeout_ms: 30_000,
        approval_ttl_ms: 24 * 60 * 60 * 1000,
        search_default_limit: 8,
        search_max_limit: 25,
        describe_tokens: 2_500,
        surface_tokens: 1_500,
        max_timeout_ms: 30_000,
        approval_preview_bytes: 4 * 1024,
    };
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

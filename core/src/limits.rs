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

    /// Applies a host's lower limits: every field becomes the smaller of the two.
    pub fn lowered_by(self, host: Limits) -> Limits {
        Limits {
            code_bytes: self.code_bytes.min(host.code_bytes),
            compute_ms: self.compute_ms.min(host.compute_ms),
            wall_ms: self.wall_ms.min(host.wall_ms),
            memory_bytes: self.memory_bytes.min(host.memory_bytes),
            max_calls: self.max_calls.min(host.max_calls),
            max_concurrent: self.max_concurrent.min(host.max_concurrent),
            inline_result_bytes: self.inline_result_bytes.min(host.inline_result_bytes),
            upstream_timeout_ms: self.upstream_timeout_ms.min(host.upstream_timeout_ms),
            approval_ttl_ms: self.approval_ttl_ms.min(host.approval_ttl_ms),
            search_default_limit: self.search_default_limit.min(host.search_default_limit),
            search_max_limit: self.search_max_limit.min(host.search_max_limit),
            describe_tokens: self.describe_tokens.min(host.describe_tokens),
            surface_tokens: self.surface_tokens.min(host.surface_tokens),
            max_timeout_ms: self.max_timeout_ms.min(host.max_timeout_ms),
            approval_preview_bytes: self.approval_preview_bytes.min(host.approval_preview_bytes),
        }
    }
}

impl Default for Limits {
    fn default() -> Self {
        Limits::DEFAULT
    }
}

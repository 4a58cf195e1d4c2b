//! Runs: the engine that drives one `execute` request's sandbox attempts, decides every call and
//! replays the journal on resume. The records it keeps are in [`crate::record`].
//!
//! A run can take several attempts. Each attempt re-runs the code from the start with the same
//! seed and clock; calls the journal already holds return their recorded outcome without
//! touching upstream, so a resumed run never repeats a call.
//!
//! - `engine.rs`: the lifecycle — start, resume, cancel, one attempt, finish.
//! - `call.rs`: the per-call path, the engine's side of the sandbox bridge.
//! - `failures.rs`: every stable error code and hint the engine reports.

mod call;
mod engine;
mod failures;

pub use engine::Engine;

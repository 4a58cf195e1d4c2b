//! The offline eval harness: tasks, fixtures and token accounting that compare code mode
//! (search, describe, execute) with direct tools.

pub use capabilities_core as core_crate;

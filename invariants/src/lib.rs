//! The invariant suite (I1–I8) and protocol cases, written once against a `Target` and run
//! black-box against every build of the hub: local stdio, local HTTP, and later hosted.

pub use capabilities_core as core_crate;

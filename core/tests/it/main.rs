//! Integration tests for capabilities-core, one module per area.

#[cfg(feature = "quickjs")]
mod sandbox;

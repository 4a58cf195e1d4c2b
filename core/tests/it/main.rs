//! Integration tests for capabilities-core, one module per area.

mod code;

//! The MCP surface: the three tools (`search`, `describe`, `execute`), their arguments and the
//! text and envelopes they return. The only module that knows MCP's wire shapes.

pub mod envelope;
pub mod describe;
pub mod search;

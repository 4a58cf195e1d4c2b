//! The one integration test binary of capabilities-core: one module per area.

mod code;
mod policy;
mod scrub;
mod search;
mod typegen;

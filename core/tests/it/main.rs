//! The one integration test binary of capabilities-core: a module per area.

mod search;

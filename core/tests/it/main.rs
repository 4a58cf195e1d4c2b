//! The one integration test binary of capabilities-core: one module per area.

mod code;
mod policy;
#[cfg(feature = "quickjs")]
mod run;
#[cfg(feature = "quickjs")]
mod sandbox;
mod scrub;
mod search;
mod typegen;
mod words;

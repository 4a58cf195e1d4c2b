//! The portable domain of the capabilities hub.
//!
//! Everything here is pure: no I/O, no clock, no threads, no environment. Time, randomness and
//! effects come in as arguments or through ports. The crate builds for `x86_64` and for
//! `wasm32-unknown-unknown`, because the hosted hub runs this same code inside a Cloudflare
//! Worker. `core/clippy.toml` makes that boundary mechanical.
// `deny`, not `forbid`: the QuickJS driver has three audited exceptions (loading bytecode it
// compiled itself, the guest heap's allocator, the wasm32 clock symbol), each behind a local
// `allow` with a SAFETY note.
#![deny(unsafe_code)]

pub mod address;
pub mod approval;
pub mod canonical;
pub mod catalog;
pub mod code;
#[cfg(any(test, feature = "fakes"))]
pub mod fakes;
pub mod handles;
pub mod index;
pub mod limits;
pub mod manifest;
pub mod oauth;
pub mod openapi;
pub mod operation;
pub mod pending;
pub mod policy;
pub mod ports;
pub mod profile;
mod recent;
pub mod record;
pub mod run;
pub mod sandbox;
pub mod scrub;
mod send;
pub mod surface;
pub mod tokens;
pub mod typegen;
pub mod upstream;
pub mod validate;
pub mod wording;

pub use sandbox::prelude;

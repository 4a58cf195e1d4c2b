//! The invariant suite (I1–I8) and protocol cases, written once against a `Target` and run
//! black-box against every build of the hub: local stdio, local HTTP, and later hosted.
//!
//! The library is the harness: a private hub store per case ([`Home`]), the CLI a person uses,
//! and the MCP clients that drive `hub serve`. The cases live in `tests/it/`.

pub use capabilities_core as core_crate;

mod home;
mod http;
mod stdio;
mod target;

pub use home::{Home, Ran, binary, repo, sdk_dir};
pub use http::LocalHttp;
pub use stdio::LocalStdio;
pub use target::{Applicability, Kind, Target};

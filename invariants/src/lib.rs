//! The invariant suite (I1–I8) and protocol cases, written once against a `Target` and run
//! black-box against every build of the hub: local stdio, local HTTP, and the hosted Worker
//! under workerd.
//!
//! The library is the harness: a private hub store per case ([`Home`]), the CLI a person uses,
//! and the MCP clients that drive `hub serve`. The cases live in `tests/it/`.

pub use capabilities_core as core_crate;

mod home;
mod hosted;
mod http;
mod process;
mod stdio;
mod target;

pub use home::{Home, Ran, binary, repo, sdk_dir};
pub use hosted::{ADMIN_TOKEN, Hosted, Workerd, list_tools};
pub use http::LocalHttp;
pub use stdio::LocalStdio;
pub use target::{Applicability, Kind, Need, SourceSpec, Target, Transport, add_locally, run_ids};

//! The hosted hub: a Cloudflare Worker (workers-rs) serving the same three tools as the local
//! hub, with one Durable Object per tenant holding its store. It will adapt `capabilities-core`'s
//! ports to Worker storage, secrets and fetch; until then it only links the core.
#![forbid(unsafe_code)]

pub use capabilities_core as core_crate;

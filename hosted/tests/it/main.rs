//! The hosted hub run for real: the Worker bundle served by workerd (npm) on loopback, driven
//! over HTTP, with real MCP servers upstream. Build the bundle first (`cargo xtask hosted
//! build`; `cargo xtask test` does).

mod access;
mod approvals;
mod handles;
mod hub;
mod oauth;
mod openapi;
mod profiles;
mod push;
mod skills;
mod support;
mod wrangler;

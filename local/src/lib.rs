//! The local hub: the native adapters of `capabilities-core`'s ports (file store, keychain, MCP
//! sources, the QuickJS sandbox on a thread of its own) and the `capabilities` CLI over them.

pub mod cancel;
pub mod cli;
pub mod commands;
pub mod config;
pub mod demo_servers;
pub mod error;
pub mod harness;
pub mod host;
pub mod hosted;
pub mod install;
pub mod oauth;
pub mod openapi;
pub mod packages;
pub mod page;
pub mod platform;
pub mod profiles;
pub mod recorder;
pub mod secrets;
pub mod serve;
pub mod settings;
pub mod skills;
pub mod sources;
pub mod stack;
pub mod store;
pub mod upstream;

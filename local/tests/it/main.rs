//! The integration tests of the `capabilities` crate, one binary with a module per area.

mod cancel;
mod census;
mod cli;
mod dashboard;
mod demo;
mod elicit;
mod handles;
mod harness;
mod harness_clis;
mod harness_matrix;
mod install;
mod oauth;
mod openapi;
mod openapi_oauth;
mod packages;
mod page;
mod profiles;
mod secrets;
mod serve;
mod serve_http;
mod skills;
mod skills_install;
mod skills_mcp;
mod stack;
mod support;
mod upstream;

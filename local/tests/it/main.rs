//! The integration tests of the `capabilities` crate, one binary with a module per area.

mod cli;
mod harness;
mod recorder;
mod serve;
mod support;
mod upstream;

//! One file per command. Each takes [`Settings`](crate::settings::Settings) and its own args, prints
//! data to stdout and logs to stderr, and returns an exit code from [`Exit`](crate::error::Exit).

pub mod add;
mod add_api;
mod add_package;
pub mod approve;
pub mod auth;
pub mod call;
pub mod cancel;
pub mod census;
pub mod connect;
pub mod connections;
pub mod dashboard;
pub mod demo;
pub mod disconnect;
pub mod docs_data;
pub mod doctor;
pub mod exec;
pub mod import;
pub mod init;
pub mod list;
pub mod login;
pub mod logout;
pub mod profiles;
pub mod push;
mod receipts;
pub mod refresh;
pub mod remove;
pub mod review;
pub mod rollback;
pub mod runs;
pub mod serve;
pub mod skills;
pub mod stack;
pub mod status;

use std::io::Write;

/// Writes to stdout; a closed pipe (`| head`) is not an error.
pub fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

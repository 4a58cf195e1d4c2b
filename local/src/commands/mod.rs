//! One file per command. Each takes [`Settings`](crate::cli::Settings) and its own args, prints
//! data to stdout and logs to stderr, and returns an exit code from [`Exit`].

pub mod add;
pub mod approve;
pub mod auth;
pub mod call;
pub mod cancel;
pub mod connect;
pub mod connections;
pub mod demo;
pub mod disconnect;
pub mod doctor;
pub mod exec;
pub mod import;
pub mod init;
pub mod list;
pub mod refresh;
pub mod remove;
pub mod review;
pub mod rollback;
pub mod runs;
pub mod serve;

use std::io::Write;
use std::process::ExitCode;

/// Exit codes, mapped in this one place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Exit {
    Ok = 0,
    /// Something failed; the message says what to do next.
    Failure = 1,
    /// The command line was wrong (clap also uses 2).
    Usage = 2,
    /// A run ended without completing (failed or cancelled).
    RunFailed = 3,
    /// A run waits for a person (an approval or a credential).
    AwaitingInput = 4,
}

impl From<Exit> for ExitCode {
    fn from(exit: Exit) -> ExitCode {
        ExitCode::from(exit as u8)
    }
}

/// A usage error: wrong input that the person can fix by changing the command line.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct UsageError(pub String);

/// Prints an error with its causes and exits with the mapped code.
pub fn report_error(err: &anyhow::Error) -> ExitCode {
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "error: {err}");
    for cause in err.chain().skip(1) {
        let _ = writeln!(stderr, "  caused by: {cause}");
    }
    if err.downcast_ref::<UsageError>().is_some() { Exit::Usage.into() } else { Exit::Failure.into() }
}

/// Writes to stdout; a closed pipe (`| head`) is not an error.
pub fn print_stdout(text: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Err(err) if err.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        other => Ok(other?),
    }
}

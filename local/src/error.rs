//! How the CLI fails: the exit codes, mapped in this one place, the usage error a person fixes
//! by changing the command line, and the report printed on stderr.

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

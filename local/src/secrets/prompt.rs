//! Reads one line from the terminal without echoing it, for typing a credential.

use std::io::{BufRead, Write};
use std::os::fd::AsFd;

use anyhow::{Context, Result, bail};
use nix::sys::termios::{LocalFlags, SetArg, Termios, tcgetattr, tcsetattr};

/// Shows `prompt` on stderr and reads a line from stdin with echo off. The terminal's settings
/// come back however the read ends.
pub fn read_hidden(prompt: &str) -> Result<String> {
    let stdin = std::io::stdin();
    let original =
        tcgetattr(stdin.as_fd()).context("stdin is not a terminal; pass the values with `--stdin`")?;
    let mut silent = original.clone();
    silent.local_flags.remove(LocalFlags::ECHO);
    // Still echo the newline, so the next output starts on a line of its own.
    silent.local_flags.insert(LocalFlags::ECHONL);
    let mut stderr = std::io::stderr().lock();
    write!(stderr, "{prompt}")?;
    stderr.flush()?;
    tcsetattr(stdin.as_fd(), SetArg::TCSAFLUSH, &silent).context("turning off the terminal's echo")?;
    let _restore = Restore(original);
    let mut line = String::new();
    let read = stdin.lock().read_line(&mut line).context("reading from the terminal")?;
    if read == 0 {
        bail!("the input ended before a value was typed");
    }
    Ok(line.strip_suffix('\n').map(|l| l.strip_suffix('\r').unwrap_or(l)).unwrap_or(&line).to_owned())
}

/// Puts the terminal's settings back when dropped.
struct Restore(Termios);

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = tcsetattr(std::io::stdin().as_fd(), SetArg::TCSANOW, &self.0);
    }
}

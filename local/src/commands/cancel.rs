//! `capabilities hub cancel`: stop a run that waits, and print its final envelope.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::Args;

use super::exec::{exit_for, print_envelope};
use crate::host::Host;
use crate::settings::Settings;

#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The run id (`run_…`), as `exec` or `capabilities hub runs` shows it.
    pub run_id: String,
}

pub fn run(settings: &Settings, args: CancelArgs) -> Result<ExitCode> {
    let host = Host::open(&settings.home)?;
    if host.show_run(&args.run_id)?.is_none() {
        bail!("there is no run `{}`; `capabilities hub runs` lists the runs kept", args.run_id);
    }
    let envelope = host.cancel(&args.run_id)?;
    print_envelope(settings, &envelope)?;
    Ok(exit_for(&envelope).into())
}

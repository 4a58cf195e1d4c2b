//! `capabilities hub cancel`: stop a run — one that waits for a person, or one whose attempt is
//! running right now in another process (a `serve` or an `exec`) — and print its final envelope.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capabilities_core::record::RunId;
use capabilities_core::surface::envelope::{Envelope, EnvelopeStatus};
use clap::Args;

use super::exec::{exit_for, print_envelope};
use crate::cancel;
use crate::host::Host;
use crate::settings::Settings;

/// How long a running attempt has to stop before the run's record is cancelled anyway (its
/// process must have gone: a hub that stopped mid-run leaves it `running`).
const STOP_WAIT: Duration = Duration::from_secs(3);

#[derive(Debug, Args)]
pub struct CancelArgs {
    /// The run id (`run_…`), as `exec` or `capabilities hub runs` shows it.
    pub run_id: String,
}

pub fn run(settings: &Settings, args: CancelArgs) -> Result<ExitCode> {
    let host = Host::open_for_run(&settings.home, &args.run_id)?;
    let Some(shown) = host.show_run(&args.run_id)? else {
        bail!("there is no run `{}`; `capabilities hub runs` lists the runs kept", args.run_id);
    };
    let envelope = if shown.status == EnvelopeStatus::Running {
        stop_running(&host, &args.run_id)?
    } else {
        host.cancel(&args.run_id)?
    };
    print_envelope(settings, &envelope)?;
    Ok(exit_for(&envelope).into())
}

/// Asks the process running an attempt of the run to stop it, and waits until the run has
/// ended. If nothing stops it in time, no process is running it: its record is cancelled.
fn stop_running(host: &Host, run_id: &str) -> Result<Envelope> {
    let id = RunId::parse(run_id).context("a run shown by the store has a run id")?;
    let root = host.store().root();
    cancel::request(root, &id).with_context(|| format!("asking the process that runs `{run_id}` to stop"))?;
    eprintln!("asked the process running `{run_id}` to stop it…");
    let started = Instant::now();
    let ended = loop {
        std::thread::sleep(cancel::POLL / 2);
        match host.show_run(run_id)? {
            Some(envelope) if envelope.status != EnvelopeStatus::Running => break Some(envelope),
            _ if started.elapsed() >= STOP_WAIT => break None,
            _ => {}
        }
    };
    cancel::withdraw(root, &id);
    match ended {
        Some(envelope) => Ok(envelope),
        None => {
            eprintln!("no process stopped it within {} s; cancelling its record", STOP_WAIT.as_secs());
            host.cancel(run_id)
        }
    }
}

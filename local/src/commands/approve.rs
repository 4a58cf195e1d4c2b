//! `capabilities hub approve`: a person decides the calls a run waits for, then the run resumes.
//!
//! The answers go through [`crate::recorder`], the one place that records a decision.

use std::process::ExitCode;

use anyhow::{Result, bail};
use capabilities_core::approval::{Channel, Choice, PendingCall};
use capabilities_core::record::RunStatus;
use clap::Args;

use super::exec::{exit_for, print_envelope};
use super::review;
use crate::error::{Exit, UsageError};
use crate::host::Host;
use crate::platform::now_ms;
use crate::recorder;
use crate::settings::Settings;
use crate::store::{Store, is_run_id};

#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The run id (`run_…`) that `exec` or an agent's `execute` reported as waiting.
    pub run_id: String,
    /// Decide without a prompt: once (this call), run (this tool for the rest of the run),
    /// always (a rule pinned to the tool's current contract) or deny.
    #[arg(long, value_parser = ["once", "run", "always", "deny"])]
    pub choice: Option<String>,
    /// Decide only this pending call (its id from `capabilities hub runs show`); all of them
    /// when left out.
    #[arg(long)]
    pub pending: Option<String>,
}

pub fn run(settings: &Settings, args: ApproveArgs) -> Result<ExitCode> {
    let choice = args.choice.as_deref().and_then(Choice::parse);
    if choice.is_none() && settings.no_input {
        return Err(
            UsageError("deciding needs your answer: pass `--choice once|run|always|deny`".into()).into()
        );
    }
    if !is_run_id(&args.run_id) {
        return Err(UsageError(format!(
            "`{}` is not a run id; `capabilities hub runs` lists the runs",
            args.run_id
        ))
        .into());
    }
    let store = Store::open(&settings.home)?;
    let Some(run) = store.load_run_sync(&args.run_id).map_err(|e| anyhow::anyhow!("{e}"))? else {
        bail!("there is no run `{}`; `capabilities hub runs` lists the runs kept", args.run_id);
    };
    if run.status != RunStatus::AwaitingInput {
        bail!(
            "run `{}` waits for nothing (it is {}); `capabilities hub runs show {}` shows it",
            run.id,
            serde_json::to_value(run.status)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default(),
            run.id
        );
    }
    let open: Vec<PendingCall> =
        run.undecided().filter(|p| args.pending.as_deref().is_none_or(|id| id == p.id)).cloned().collect();
    if open.is_empty() {
        match &args.pending {
            Some(id) => bail!(
                "run `{}` has no undecided call `{id}`; `capabilities hub runs show {}` lists what it waits for",
                run.id,
                run.id
            ),
            None => eprintln!("run `{}` has no undecided approvals; resuming it", run.id),
        }
    }
    // Ask first, record after: the run's lock is not held while a person thinks.
    let mut decisions = Vec::new();
    for pending in &open {
        eprint!("{}", describe(pending, now_ms()));
        let choice = match choice {
            Some(choice) => choice,
            None => prompt()?,
        };
        decisions.push((pending.id.clone(), choice));
    }
    let recorded = recorder::record(&store, &run.id, &decisions, Channel::Cli)?;
    for (pending, choice) in &recorded.decided {
        eprintln!("{}: {}", pending.address, label(*choice));
    }
    if !recorded.all_decided {
        eprintln!(
            "run `{}` still waits for other decisions; run `capabilities hub approve {}` again",
            args.run_id, args.run_id
        );
        return Ok(Exit::AwaitingInput.into());
    }
    let host = Host::open_for_run(&settings.home, &args.run_id)?;
    let envelope = host.resume(&args.run_id)?;
    print_envelope(settings, &envelope)?;
    Ok(exit_for(&envelope).into())
}

/// What a person sees before deciding one call.
fn describe(pending: &PendingCall, now: u64) -> String {
    let mut out = format!("\n{}", pending.address);
    if let Some(connection) = &pending.connection {
        out.push_str(&format!(" (connection {connection})"));
    }
    out.push('\n');
    if !pending.summary.is_empty() {
        out.push_str(&format!("  {}\n", pending.summary));
    }
    out.push_str(&format!("  why it asks: {}\n", pending.reason));
    out.push_str("  arguments:\n");
    for line in pending.preview.lines() {
        out.push_str(&format!("    {line}\n"));
    }
    let minutes = pending.expires_ms.saturating_sub(now) / 60_000;
    out.push_str(&format!("  expires in {minutes} min\n"));
    out
}

fn prompt() -> Result<Choice> {
    loop {
        let answer =
            review::read_line("  [o] allow once  [r] allow for this run  [a] always allow  [d] deny: ")?;
        let choice = match answer.to_ascii_lowercase().as_str() {
            "o" | "once" => Some(Choice::Once),
            "r" | "run" => Some(Choice::Run),
            "a" | "always" => Some(Choice::Always),
            "d" | "deny" => Some(Choice::Deny),
            _ => None,
        };
        if let Some(choice) = choice {
            return Ok(choice);
        }
        eprintln!("  answer o, r, a or d");
    }
}

fn label(choice: Choice) -> &'static str {
    match choice {
        Choice::Once => "allow once",
        Choice::Run => "allow for this run",
        Choice::Always => "always allow",
        Choice::Deny => "deny",
    }
}

//! `capabilities hub runs [--status <s>]` and `capabilities hub runs show <id>`.

use std::process::ExitCode;

use anyhow::{Result, bail};
use clap::{Args, Subcommand};

use super::print_stdout;
use crate::error::Exit;
use crate::host::Host;
use crate::settings::Settings;

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub command: Option<RunsCommand>,
    /// Only runs with this status: running, awaiting_input, completed, failed, cancelled, expired.
    #[arg(long)]
    pub status: Option<String>,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Show one run: its status, result or error, calls, and what it waits for.
    Show {
        /// The run id (`run_…`).
        id: String,
    },
}

pub fn run(settings: &Settings, args: RunsArgs) -> Result<ExitCode> {
    let host = Host::open(&settings.home)?;
    if let Some(RunsCommand::Show { id }) = args.command {
        let Some(envelope) = host.show_run(&id)? else {
            bail!("there is no run `{id}`; `capabilities hub runs` lists the runs kept (7 days)");
        };
        super::exec::print_envelope(settings, &envelope)?;
        return Ok(Exit::Ok.into());
    }
    let statuses = ["running", "awaiting_input", "completed", "failed", "cancelled", "expired"];
    if let Some(status) = &args.status
        && !statuses.contains(&status.as_str())
    {
        let message = format!("unknown status `{status}`: use one of {}", statuses.join(", "));
        return Err(crate::error::UsageError(message).into());
    }
    let mut rows = Vec::new();
    for id in host.store().run_ids() {
        let Ok(Some(run)) = host.store().load_run_sync(&id) else { continue };
        if args.status.as_deref().is_some_and(|s| s != run.status.as_str()) {
            continue;
        }
        rows.push(run);
    }
    if settings.json {
        let list: Vec<serde_json::Value> = rows
            .iter()
            .map(|r| {
                serde_json::json!({
                    "id": r.id, "status": r.status.as_str(), "createdMs": r.created_ms,
                    "updatedMs": r.updated_ms, "attempts": r.attempts, "pending": r.pending.len(),
                })
            })
            .collect();
        return print_stdout(&format!("{}\n", serde_json::to_string_pretty(&list)?))
            .map(|()| Exit::Ok.into());
    }
    if rows.is_empty() {
        print_stdout("no runs\n")?;
        return Ok(Exit::Ok.into());
    }
    let mut text = String::new();
    for r in rows {
        text.push_str(&format!(
            "{}  {:<15} attempts {}  pending {}\n",
            r.id,
            r.status.as_str(),
            r.attempts,
            r.pending.len()
        ));
    }
    print_stdout(&text)?;
    Ok(Exit::Ok.into())
}

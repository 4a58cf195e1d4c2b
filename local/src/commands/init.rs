//! `capabilities hub init`: create the hub's home and say what to do next; with `--import`, run
//! the importer too. Connecting the harnesses stays `capabilities hub connect`, its own step.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::print_stdout;
use crate::error::Exit;
use crate::settings::Settings;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Also import the MCP servers your harnesses have (`capabilities hub connect` then points
    /// the harnesses at the hub).
    #[arg(long)]
    pub import: bool,
    /// Consent to import, run the listed commands and accept the proposed policy, without
    /// prompting.
    #[arg(long, short)]
    pub yes: bool,
}

pub fn run(settings: &Settings, args: InitArgs) -> Result<ExitCode> {
    let existed = settings.home.join("hub.json").is_file();
    let store = Store::open(&settings.home)?;
    crate::install::refresh_link_or_warn(store.root());
    let verb = if existed { "the hub is at" } else { "created the hub at" };
    let hub_line = format!("{verb} {} ({})\n", store.root().display(), store.hub.hub_id);
    if !settings.json {
        print_stdout(&hub_line)?;
    } else {
        eprint!("{hub_line}");
    }
    if !args.import {
        if !settings.json {
            print_stdout(
                "next:\n  capabilities hub import     bring in the MCP servers your harnesses have\n  \
                 capabilities hub add <url>  or add one by hand (`-- <command>` for a local server)\n  \
                 capabilities hub connect    point your harnesses at the hub\n",
            )?;
        }
        return Ok(Exit::Ok.into());
    }
    // Importing only: connecting the harnesses is `hub connect`, a step of its own with its own
    // backup, which the importer's last line names.
    let outcome = super::import::import(settings, &store, &[], args.yes)?;
    Ok(if outcome.failed.is_empty() { Exit::Ok } else { Exit::Failure }.into())
}

//! `capabilities hub init`: create the hub's home and say what to do next; with `--import`, run
//! the importer and offer to connect the harnesses.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::print_stdout;
use super::review;
use crate::error::Exit;
use crate::settings::Settings;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct InitArgs {
    /// Also import the MCP servers your harnesses have, then offer to connect them.
    #[arg(long)]
    pub import: bool,
    /// Consent to import, run the listed commands, accept the proposed policy and connect,
    /// without prompting.
    #[arg(long, short)]
    pub yes: bool,
}

pub fn run(settings: &Settings, args: InitArgs) -> Result<ExitCode> {
    let existed = settings.home.join("hub.json").is_file();
    let store = Store::open(&settings.home)?;
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
    let outcome = super::import::import(settings, &store, &[], args.yes)?;
    let connect = if args.yes {
        true
    } else if settings.no_input {
        eprintln!("connect your harnesses with `capabilities hub connect`");
        false
    } else {
        review::ask(settings, "Connect your harnesses to the hub now? [Y/n] ", true)?
    };
    if connect {
        let steps = super::connect::connect(settings, &store, &[], false)?;
        if steps.iter().any(|s| s.action == "failed") {
            return Ok(Exit::Failure.into());
        }
    }
    Ok(if outcome.failed.is_empty() { Exit::Ok } else { Exit::Failure }.into())
}

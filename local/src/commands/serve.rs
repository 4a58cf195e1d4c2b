//! `capabilities hub serve`: the hub's MCP endpoint for agents, over stdio.

use std::process::ExitCode;

use anyhow::{Context, Result};
use clap::Args;

use super::{Exit, UsageError};
use crate::cli::Settings;

#[derive(Debug, Args)]
pub struct ServeArgs {
    /// Speak MCP on stdin and stdout (how agents start the hub).
    #[arg(long)]
    pub stdio: bool,
    /// The profile to serve. Only `default` exists for now.
    #[arg(long, default_value = "default")]
    pub profile: String,
}

pub fn run(settings: &Settings, args: ServeArgs) -> Result<ExitCode> {
    if !args.stdio {
        return Err(UsageError(
            "pass --stdio: the hub serves MCP over stdio for now (`capabilities hub serve --stdio`)".into(),
        )
        .into());
    }
    if args.profile != "default" {
        return Err(UsageError(format!(
            "there is no profile `{}`: only `default` exists for now",
            args.profile
        ))
        .into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the server's async runtime")?;
    runtime.block_on(crate::serve::serve_stdio(settings.clone()))?;
    // A read of stdin left pending by the transport must not hold the exit.
    runtime.shutdown_background();
    Ok(Exit::Ok.into())
}

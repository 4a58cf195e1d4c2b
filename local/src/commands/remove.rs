//! `capabilities hub remove`: forget a source, its manifest, connections and policy entries.

use std::process::ExitCode;

use anyhow::{Result, bail};
use capabilities_core::address::Namespace;
use clap::Args;

use super::{Exit, UsageError, print_stdout};
use crate::cli::Settings;
use crate::sources;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct RemoveArgs {
    /// The namespace of the source to remove (see `capabilities hub list`).
    pub namespace: String,
    /// Remove without asking.
    #[arg(long, short)]
    pub yes: bool,
}

pub fn run(settings: &Settings, args: RemoveArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let namespace = Namespace::new(&args.namespace).map_err(|e| {
        UsageError(format!(
            "`{}` is not a namespace ({e}); `capabilities hub list` shows them",
            args.namespace
        ))
    })?;
    let ns = namespace.as_str();
    if !store.root().join(sources::source_path(ns)).is_file() {
        bail!("there is no source `{ns}`; `capabilities hub list` shows the sources");
    }
    if !args.yes {
        if settings.no_input {
            return Err(UsageError(format!("removing `{ns}` needs your consent: pass `--yes`")).into());
        }
        let question = format!("Remove `{ns}`, its connections and its policy entries? [y/N] ");
        if !sources::ask(settings, &question, false)? {
            bail!("`{ns}` was kept");
        }
    }
    sources::remove_source(&store, &namespace)?;
    print_stdout(&format!("removed `{ns}`\n"))?;
    Ok(Exit::Ok.into())
}

//! `capabilities hub review`: decide the tools that are new or changed since they were last
//! accepted.

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use crate::config::HubConfig;
use crate::error::Exit;
use crate::settings::Settings;
use crate::sources;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct ReviewArgs {
    /// Accept the proposal without prompting.
    #[arg(long, short)]
    pub yes: bool,
}

pub fn run(settings: &Settings, args: ReviewArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let config = HubConfig::load(&store);
    for problem in &config.problems {
        eprintln!("warning: {problem}");
    }
    let items: Vec<_> = config
        .sources
        .iter()
        .filter_map(|(_, manifest, _)| manifest.as_ref())
        .flat_map(|manifest| sources::needs_review(manifest, &config.policy, None))
        .collect();
    sources::review(settings, &store, &items, args.yes)?;
    Ok(Exit::Ok.into())
}

//! `capabilities hub refresh`: read the tool lists again and show what changed upstream.
//! Changed and new tools ask again until they are reviewed.

use std::process::ExitCode;

use anyhow::{Result, bail};
use capabilities_core::address::Namespace;
use clap::Args;

use super::print_stdout;
use super::review;
use crate::config::{self, HubConfig, write_json};
use crate::error::Exit;
use crate::settings::Settings;
use crate::sources;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct RefreshArgs {
    /// Only this source; every source when left out.
    pub namespace: Option<String>,
    /// Accept the proposal for new and changed tools without prompting.
    #[arg(long, short)]
    pub yes: bool,
}

pub fn run(settings: &Settings, args: RefreshArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let config = HubConfig::load(&store);
    let selected: Vec<_> = config
        .sources
        .iter()
        .filter(|(record, _, _)| args.namespace.as_deref().is_none_or(|ns| record.spec.namespace == ns))
        .collect();
    if selected.is_empty() {
        match &args.namespace {
            Some(ns) => bail!("there is no source `{ns}`; `capabilities hub list` shows the sources"),
            None => bail!("no sources yet; add one with `capabilities hub add`"),
        }
    }
    let mut failed = 0;
    let mut items = Vec::new();
    for (record, before, _) in selected {
        let ns = record.spec.namespace.as_str();
        let Ok(namespace) = Namespace::new(ns) else { continue };
        let entries = match sources::cli_credentials(&config, &store, &record.spec)
            .and_then(|credentials| sources::read_tools(&record.spec, &credentials))
        {
            Ok(entries) => entries,
            Err(err) => {
                eprintln!("error: {ns}: {err:#}");
                failed += 1;
                continue;
            }
        };
        let manifest = sources::build_manifest(&namespace, &entries);
        let diff = sources::diff_against(before.as_ref(), &manifest);
        if !diff.is_empty() || before.is_none() {
            write_json(&store, &config::manifest_path(ns), &manifest)?;
        }
        sources::note_changes(&store, &manifest, &diff)?;
        let text = diff.to_string();
        if text.lines().count() <= 1 {
            print_stdout(&format!("{ns}: {text}"))?;
        } else {
            print_stdout(&format!("{ns}:\n{text}"))?;
        }
        items.extend(review::needs_review(&manifest, &config.policy, Some(&diff)));
    }
    if !items.is_empty() {
        review::review(settings, &store, &items, args.yes)?;
    }
    Ok(if failed > 0 { Exit::Failure } else { Exit::Ok }.into())
}

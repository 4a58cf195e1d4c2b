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
    report_newer_packages(&store, &args);
    if !items.is_empty() {
        review::review(settings, &store, &items, args.yes)?;
    }
    Ok(if failed > 0 { Exit::Failure } else { Exit::Ok }.into())
}

/// Says which installed packages have a newer version in the registry. Never upgrades: a
/// person removes the source and adds the new version, which is verified and reviewed anew.
fn report_newer_packages(store: &Store, args: &RefreshArgs) {
    let lock = match crate::packages::load(store) {
        Ok(lock) => lock,
        Err(err) => {
            eprintln!("warning: {err:#}");
            return;
        }
    };
    for (ns, locked) in &lock.packages {
        if args.namespace.as_deref().is_some_and(|only| only != ns) {
            continue;
        }
        let latest = match locked.registry.as_str() {
            "npm" => crate::packages::npm::latest(&locked.name),
            "pypi" => crate::packages::pypi::python()
                .and_then(|python| crate::packages::pypi::latest(&python, &locked.name)),
            _ => continue,
        };
        let again = |version: &str| {
            if locked.registry == "pypi" {
                format!("pypi:{}=={version}", locked.name)
            } else {
                format!("npm:{}@{version}", locked.name)
            }
        };
        match latest {
            Ok(latest) if latest != locked.version => {
                let _ = print_stdout(&format!(
                    "{ns}: {} {} {latest} is available (locked at {}); nothing was upgraded. To move to it: \
                     `capabilities hub remove {ns}` then `capabilities hub add {} --namespace {ns}`\n",
                    locked.registry,
                    locked.name,
                    locked.version,
                    again(&latest)
                ));
            }
            Ok(_) => {
                let _ = print_stdout(&format!("{ns}: {} is the latest version\n", locked.reference()));
            }
            Err(err) => eprintln!("warning: {ns}: {err:#}"),
        }
    }
}

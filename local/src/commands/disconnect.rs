//! `capabilities hub disconnect`: remove the hub's `capabilities` entry from the harnesses, and
//! the skills the hub placed in their skill folders, after a backup.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;

use super::connect::{Step, report, writable_text};
use crate::error::Exit;
use crate::harness::backup::{BackupSet, ChangedMeanwhile};
use crate::harness::{self, Descriptor, edit};
use crate::settings::Settings;
use crate::skills::Library;
use crate::skills::place::{self, Goal};
use crate::store::Store;

#[derive(Debug, Args)]
pub struct DisconnectArgs {
    /// Disconnect only these harnesses (repeatable). Every writable harness when left out.
    #[arg(long = "client", value_name = "HARNESS")]
    pub client: Vec<String>,
}

/// Removes the hub's entry from one file; `false` when it has none. Starts again from the new
/// bytes when the harness rewrote the file meanwhile.
fn disconnect_one(harness: &Descriptor, path: &Path, set: &mut BackupSet) -> Result<bool> {
    for attempt in 1.. {
        let Some(read) = writable_text(path)? else { return Ok(false) };
        let Some(text) = edit::without_entry(harness, &read)? else { return Ok(false) };
        match set.replace(harness.id, path, Some(&read), &text) {
            Ok(()) => return Ok(true),
            Err(err) if err.is::<ChangedMeanwhile>() && attempt < 5 => continue,
            Err(err) => return Err(err),
        }
    }
    unreachable!("the loop returns")
}

pub fn run(settings: &Settings, args: DisconnectArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let home = harness::home_dir()?;
    let targets = harness::select(&args.client)?;
    let mut set = BackupSet::begin(&store, "disconnect")?;
    let mut steps = Vec::new();
    for &harness in targets.iter().filter(|h| h.writable()) {
        let path = harness.config_path(&home);
        if !path.exists() {
            continue;
        }
        let step = |action, detail: String| Step { harness: harness.id, path: path.clone(), action, detail };
        match disconnect_one(harness, &path, &mut set) {
            Ok(true) => {
                steps.push(step("disconnected", format!("removed the `{}` entry", harness::ENTRY_NAME)))
            }
            Ok(false) => {}
            Err(err) => steps.push(step("failed", format!("{err:#}"))),
        }
    }
    let removed = place::place(&Library::new(&store), &mut set, &targets, &home, Goal::RemoveAll)?;
    steps.extend(removed.into_iter().map(Step::from));
    let backup = (!set.is_empty()).then(|| set.dir().to_owned());
    set.finish()?;
    if steps.is_empty() && !settings.json {
        eprintln!("no harness has a `{}` entry", harness::ENTRY_NAME);
        return Ok(Exit::Ok.into());
    }
    report(settings, &steps, backup.as_deref(), "disconnect")?;
    if backup.is_some() && !settings.json {
        eprintln!("entries turned off by `connect --replace` come back with `capabilities rollback`");
    }
    Ok(if steps.iter().any(|s| s.action == "failed") { Exit::Failure } else { Exit::Ok }.into())
}

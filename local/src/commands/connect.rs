//! `capabilities hub connect`: point the harnesses at the hub by writing one `capabilities`
//! entry into each writable harness config, after a backup; exact instructions for the others.
//! The hub's skills go into each harness's skill folder in the same backup set.

use std::os::unix::fs::PermissionsExt;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::Args;
use serde_json::json;

use super::print_stdout;
use crate::config::HubConfig;
use crate::error::Exit;
use crate::harness::backup::{BackupSet, ChangedMeanwhile};
use crate::harness::edit::{self, HubEntry};
use crate::harness::{self, Descriptor, read};
use crate::settings::Settings;
use crate::skills::Library;
use crate::skills::place::{self, Goal};
use crate::store::Store;

#[derive(Debug, Args)]
pub struct ConnectArgs {
    /// Connect only these harnesses (repeatable, or comma-separated: `--client cursor,zed`);
    /// `--list` names them. Every harness found when left out.
    #[arg(long = "client", value_name = "HARNESS", value_delimiter = ',')]
    pub client: Vec<String>,
    /// Also turn off the direct entries the hub imported, so each tool is reached only through
    /// the hub, and take out of them the credentials the hub's keychain now holds. Each harness
    /// turns them off its own way (`enabled = false`, `"disabled": true`), or they move under
    /// `capabilitiesDisabledMcpServers`. `capabilities rollback` brings them back.
    #[arg(long)]
    pub replace: bool,
    /// List every harness the hub knows: whether it was found, its file, and whether it points
    /// at the hub. Changes nothing.
    #[arg(long, conflicts_with = "replace")]
    pub list: bool,
    /// The profile the harnesses' entry serves (`hub profiles list`); each harness may be
    /// connected with its own.
    #[arg(long, default_value = "default")]
    pub profile: String,
}

/// What connect did with one harness.
#[derive(Debug, Clone)]
pub struct Step {
    pub harness: &'static str,
    pub path: std::path::PathBuf,
    /// `connected`, `unchanged`, `manual`, `failed`; for skills also `skills` (placed, updated
    /// or removed some), `conflict` (a person's own skill of that name, left alone), `skipped`.
    pub action: &'static str,
    pub detail: String,
}

impl From<place::Step> for Step {
    fn from(step: place::Step) -> Step {
        Step { harness: step.harness, path: step.path, action: step.action, detail: step.detail }
    }
}

pub fn run(settings: &Settings, args: ConnectArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    crate::profiles::require(&store, &args.profile)
        .map_err(|e| crate::error::UsageError(format!("{e:#}")))?;
    if args.list {
        return list(settings, &args.client, &args.profile);
    }
    let steps = connect(settings, &store, &args.client, args.replace, &args.profile)?;
    Ok(if steps.iter().any(|s| s.action == "failed") { Exit::Failure } else { Exit::Ok }.into())
}

/// The entry a harness gets, serving `profile`: a command that outlives this binary's path
/// (`install::entry_command`: the npm launcher, else `<hub>/bin/capabilities`).
pub fn hub_entry(hub: &std::path::Path, profile: &str) -> Result<HubEntry> {
    let command = crate::install::entry_command(hub);
    let command =
        command.to_str().context("the hub's path is not UTF-8; move it to a plain path")?.to_owned();
    let env = std::env::var("CAPABILITIES_HOME")
        .ok()
        .filter(|v| !v.is_empty())
        .map(|home| vec![("CAPABILITIES_HOME".to_owned(), home)])
        .unwrap_or_default();
    Ok(HubEntry {
        command,
        args: ["hub", "serve", "--stdio", "--profile", profile].map(String::from).to_vec(),
        env,
    })
}

pub fn connect(
    settings: &Settings,
    store: &Store,
    clients: &[String],
    replace: bool,
    profile: &str,
) -> Result<Vec<Step>> {
    let home = harness::home_dir()?;
    crate::install::refresh_link(&settings.home)?;
    let entry = hub_entry(&settings.home, profile)?;
    let targets: Vec<&'static Descriptor> = if clients.is_empty() {
        harness::HARNESSES.iter().filter(|h| h.present(&home)).collect()
    } else {
        harness::select(clients)?
    };
    let config = HubConfig::load(store);
    let imported: Vec<(String, String)> = config
        .sources
        .iter()
        .map(|(r, _, _)| (read::spec_identity(&r.spec), r.spec.namespace.clone()))
        .collect();
    // Which plaintext credentials the keychain holds now, so `--replace` may take them out of
    // the harness files. No keychain answering means none are taken out.
    let secrets = if replace { crate::secrets::SecretStore::open(store).ok() } else { None };
    let in_keychain = |namespace: &str, slot: &str| {
        secrets.as_ref().is_some_and(|s| {
            s.get(&crate::secrets::SlotKey { namespace, connection: "default", slot })
                .ok()
                .flatten()
                .is_some()
        })
    };
    let mut set = BackupSet::begin(store, if replace { "connect --replace" } else { "connect" })?;
    let mut steps = Vec::new();
    for &harness in &targets {
        let path = harness.config_path(&home);
        let step = |action, detail: String| Step { harness: harness.id, path: path.clone(), action, detail };
        if !harness.writable() {
            let detail = format!(
                "{} is read by the hub but not written; add this to {}:\n{}",
                harness.name,
                path.display(),
                entry.snippet(harness)
            );
            steps.push(step("manual", detail));
            continue;
        }
        match connect_one(harness, &path, &entry, replace, &imported, &in_keychain, &mut set) {
            Ok(Some(detail)) => steps.push(step("connected", detail)),
            Ok(None) => steps.push(step("unchanged", "already connected".to_owned())),
            Err(err) => steps.push(step("failed", format!("{err:#}"))),
        }
    }
    let placed = place::place(&Library::new(store), &mut set, &targets, &home, Goal::Sync)?;
    steps.extend(placed.into_iter().map(Step::from));
    let backup = (!set.is_empty()).then(|| set.dir().to_owned());
    set.finish()?;
    report(settings, &steps, backup.as_deref(), "connect")?;
    Ok(steps)
}

/// How many times connect starts an edit again when the harness rewrote its file meanwhile.
const ATTEMPTS: usize = 5;

fn connect_one(
    harness: &Descriptor,
    path: &std::path::Path,
    entry: &HubEntry,
    replace: bool,
    imported: &[(String, String)],
    in_keychain: &dyn Fn(&str, &str) -> bool,
    set: &mut BackupSet,
) -> Result<Option<String>> {
    for attempt in 1.. {
        let read = writable_text(path)?;
        let Some((new_text, detail)) =
            edit_one(harness, path, read.as_deref().unwrap_or(""), entry, replace, imported, in_keychain)?
        else {
            return Ok(None);
        };
        match set.replace(harness.id, path, read.as_deref(), &new_text) {
            Ok(()) => return Ok(Some(detail)),
            Err(err) if err.is::<ChangedMeanwhile>() && attempt < ATTEMPTS => continue,
            Err(err) => return Err(err),
        }
    }
    unreachable!("the loop returns")
}

/// The file's new text and what changed; `None` when it needs no change.
fn edit_one(
    harness: &Descriptor,
    path: &std::path::Path,
    text: &str,
    entry: &HubEntry,
    replace: bool,
    imported: &[(String, String)],
    in_keychain: &dyn Fn(&str, &str) -> bool,
) -> Result<Option<(String, String)>> {
    let text = text.to_owned();
    let doc = read::parse(harness.format, &text)
        .with_context(|| format!("{} could not be read; fix it, or add the entry by hand", path.display()))?;
    let mut new_text = text.clone();
    let mut detail = Vec::new();
    if !edit::has_entry(harness, &doc, entry) {
        new_text = edit::with_entry(harness, &text, entry)?;
        detail.push(format!("wrote the `{}` entry", harness::ENTRY_NAME));
    }
    if replace {
        let mut parked = Vec::new();
        let mut moved = Vec::new();
        for found in read::entries(harness, &doc) {
            if read::is_disabled(&found.entry) {
                continue;
            }
            let Ok(converted) = read::convert(&found.entry) else { continue };
            let identity = read::identity(&converted.transport);
            let Some((_, namespace)) = imported.iter().find(|(id, _)| *id == identity) else { continue };
            let remove: Vec<String> = converted
                .secrets
                .iter()
                .filter(|s| in_keychain(namespace, &s.slot))
                .map(|s| s.slot.clone())
                .collect();
            if !remove.is_empty() {
                moved.push(format!("{} ({})", found.name, remove.join(", ")));
            }
            parked.push(edit::Parked { scope: found.scope, name: found.name, remove });
        }
        if let Some(text) = edit::park(harness, &new_text, &parked)? {
            new_text = text;
            let list: Vec<&str> = parked.iter().map(|p| p.name.as_str()).collect();
            detail.push(format!("turned off {}", list.join(", ")));
            if !moved.is_empty() {
                detail.push(format!(
                    "took out the credentials the keychain holds now: {}; the backup is the only other copy",
                    moved.join(", ")
                ));
            }
        }
    }
    if new_text == text {
        return Ok(None);
    }
    Ok(Some((new_text, detail.join("; "))))
}

/// `connect --list`: every harness the hub knows (or those named), found or not.
fn list(settings: &Settings, clients: &[String], profile: &str) -> Result<ExitCode> {
    let home = harness::home_dir()?;
    let entry = hub_entry(&settings.home, profile)?;
    let rows: Vec<serde_json::Value> = harness::select(clients)?
        .into_iter()
        .map(|h| {
            let path = h.config_path(&home);
            let (state, problem) = match read::load(h, &home) {
                Ok(Some((_, doc))) if edit::has_entry(h, &doc, &entry) => ("connected", None),
                Ok(Some((_, doc))) if edit::find_entry(h, &doc).is_some() => {
                    ("connected, entry differs", None)
                }
                Ok(Some(_)) => ("not connected", None),
                Ok(None) => ("no file yet", None),
                Err(err) => ("unreadable", Some(format!("{err:#}"))),
            };
            json!({
                "harness": h.id,
                "name": h.name,
                "found": h.present(&home),
                "path": path,
                "format": format!("{:?}", h.format).to_lowercase(),
                "writes": if h.writable() { "connect writes it" } else { "connect prints what to paste" },
                "state": state,
                "problem": problem,
                "lists": h.lists,
            })
        })
        .collect();
    if settings.json {
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&rows)?))?;
        return Ok(Exit::Ok.into());
    }
    let mut out = String::new();
    for row in &rows {
        let found = if row["found"] == true { "found" } else { "not found" };
        out.push_str(&format!(
            "{:<17} {:<9} {}: {} ({}, {})\n",
            row["harness"].as_str().unwrap_or_default(),
            found,
            row["state"].as_str().unwrap_or_default(),
            row["path"].as_str().unwrap_or_default(),
            row["format"].as_str().unwrap_or_default(),
            row["writes"].as_str().unwrap_or_default(),
        ));
        if let Some(problem) = row["problem"].as_str() {
            out.push_str(&format!("  {problem}\n"));
        }
    }
    print_stdout(&out)?;
    Ok(Exit::Ok.into())
}

/// The file's text (`None` when it does not exist yet). Refuses files the person made read-only
/// and anything that is not a regular file (a symlink to one is fine).
pub fn writable_text(path: &std::path::Path) -> Result<Option<String>> {
    match std::fs::metadata(path) {
        Ok(meta) => {
            if !meta.is_file() {
                bail!("{} is not a regular file; fix it or pass `--client` to skip it", path.display());
            }
            if meta.permissions().mode() & 0o200 == 0 {
                bail!(
                    "{} is read-only; make it writable (`chmod u+w`) to connect, or add the entry by hand",
                    path.display()
                );
            }
            if meta.len() > read::MAX_FILE_BYTES {
                bail!("{} is too large to rewrite safely; add the entry by hand", path.display());
            }
            std::fs::read_to_string(path).map(Some).with_context(|| format!("reading {}", path.display()))
        }
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(err) => Err(err).with_context(|| format!("reading {}", path.display())),
    }
}

/// Prints the steps: JSON with `--json`, else one block per harness.
pub fn report(
    settings: &Settings,
    steps: &[Step],
    backup: Option<&std::path::Path>,
    what: &str,
) -> Result<()> {
    if settings.json {
        let value = json!({
            "steps": steps.iter().map(|s| json!({
                "harness": s.harness, "path": s.path, "action": s.action, "detail": s.detail,
            })).collect::<Vec<_>>(),
            "backup": backup,
        });
        return print_stdout(&format!("{}\n", serde_json::to_string_pretty(&value)?));
    }
    let mut out = String::new();
    if steps.is_empty() {
        out.push_str(&format!("no harness found to {what}; name one with `--client`\n"));
    }
    for step in steps {
        out.push_str(&format!("{} {}: {}\n", step.action, step.harness, step.path.display()));
        for line in step.detail.lines() {
            out.push_str(&format!("  {line}\n"));
        }
    }
    if let Some(dir) = backup {
        out.push_str(&format!(
            "backed up the files it changed under {}; undo with `capabilities rollback`\n",
            dir.display()
        ));
    }
    print_stdout(&out)
}

//! `capabilities hub skills add|list|show|remove|sync`: the hub's skill library, each skill a
//! folder with a `SKILL.md`, kept under `skills/` in the store and recorded in
//! `skills.lock.json`; `sync` places it in the connected harnesses' skill folders.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use serde_json::json;

use super::connect::Step;
use super::print_stdout;
use crate::error::Exit;
use crate::harness::{self, backup::BackupSet};
use crate::settings::Settings;
use crate::skills::place::{self, Goal};
use crate::skills::{self, Installed, Library, Scanned, Status};
use crate::store::Store;

#[derive(Debug, Args)]
pub struct SkillsArgs {
    #[command(subcommand)]
    pub command: SkillsCommand,
}

#[derive(Debug, Subcommand)]
pub enum SkillsCommand {
    /// Add a skill: its folder, its SKILL.md, or a git URL (cloned with `git clone --depth 1`);
    /// a folder or repository of several skills adds each.
    Add {
        #[arg(value_name = "DIR|SKILL.md|GIT-URL")]
        from: String,
        /// Put it in place of a skill of the same name with other files.
        #[arg(long)]
        replace: bool,
    },
    /// List the hub's skills, and whether their files still match the lock file.
    List,
    /// Show one skill: its description, digest, files and SKILL.md.
    Show { name: String },
    /// Remove a skill from the hub (`sync` then removes it from the harnesses' folders).
    Remove { name: String },
    /// Place the hub's skills in each connected harness's own skill folder, as `hub connect`
    /// does: update those the hub placed before, remove those no longer in the hub, and leave a
    /// skill of yours with the same name alone (reported as a conflict). `capabilities rollback`
    /// undoes it.
    Sync {
        /// Only these harnesses (repeatable, or comma-separated); the connected ones, and those
        /// holding skills the hub placed, when left out.
        #[arg(long = "client", value_name = "HARNESS", value_delimiter = ',')]
        client: Vec<String>,
    },
}

pub fn run(settings: &Settings, args: SkillsArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let library = Library::new(&store);
    match args.command {
        SkillsCommand::Add { from, replace } => add(settings, &store, &library, &from, replace),
        SkillsCommand::List => list(settings, &library),
        SkillsCommand::Show { name } => show(settings, &library, &name),
        SkillsCommand::Sync { client } => sync(settings, &store, &library, &client),
        SkillsCommand::Remove { name } => {
            library.remove(&name)?;
            if settings.json {
                print_stdout(&format!("{}\n", json!({ "removed": name })))?;
            } else {
                print_stdout(&format!("removed skill `{name}`\n"))?;
            }
            Ok(Exit::Ok.into())
        }
    }
}

/// `skills sync`: the named harnesses, or those connected or holding skills the hub placed.
fn sync(settings: &Settings, store: &Store, library: &Library, client: &[String]) -> Result<ExitCode> {
    let home = harness::home_dir()?;
    let mut set = BackupSet::begin(store, "skills sync")?;
    let targets = if client.is_empty() {
        let placements = set.placements()?;
        harness::HARNESSES
            .iter()
            .filter(|h| !h.skills.is_empty())
            .filter(|h| {
                let connected = matches!(
                    harness::read::load(h, &home),
                    Ok(Some((_, doc))) if harness::edit::find_entry(h, &doc).is_some()
                );
                connected || placements.values().any(|p| p.harness == h.id)
            })
            .collect()
    } else {
        harness::select(client)?
    };
    let steps: Vec<Step> =
        place::place(library, &mut set, &targets, &home, Goal::Sync)?.into_iter().map(Step::from).collect();
    let backup = (!set.is_empty()).then(|| set.dir().to_owned());
    set.finish()?;
    super::connect::report(settings, &steps, backup.as_deref(), "sync skills into")?;
    Ok(if steps.iter().any(|s| s.action == "failed") { Exit::Failure } else { Exit::Ok }.into())
}

/// The folder `from` names: itself, or the folder of a `SKILL.md`.
fn local_root(from: &str) -> Result<PathBuf> {
    let path = Path::new(from);
    if std::fs::symlink_metadata(path).is_err() {
        bail!("{from} does not exist: give a skill's folder, its SKILL.md, or a git URL");
    }
    if path.is_file() {
        if path.file_name().and_then(|n| n.to_str()) != Some(skills::scan::SKILL_MD) {
            bail!("{from} is a file but not a SKILL.md: give the skill's folder or its SKILL.md");
        }
        let parent = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        return Ok(parent.to_owned());
    }
    Ok(path.to_owned())
}

/// Reads every skill under `root` (all must pass before any is installed).
fn scan_all(root: &Path) -> Result<Vec<Scanned>> {
    let mut folders = skills::discover(root);
    if folders.is_empty() {
        // Not a skill nor a collection: let the scan say why (no SKILL.md, a loop).
        folders.push(root.to_owned());
    }
    let mut scanned: Vec<Scanned> = Vec::new();
    for folder in &folders {
        let skill = skills::scan(folder).context("nothing was added")?;
        if scanned.iter().any(|s| s.name() == skill.name()) {
            bail!(
                "{} holds two skills named `{}`: keep one; nothing was added",
                root.display(),
                skill.name()
            );
        }
        scanned.push(skill);
    }
    Ok(scanned)
}

fn add(settings: &Settings, store: &Store, library: &Library, from: &str, replace: bool) -> Result<ExitCode> {
    let checkout;
    let (root, source) = if skills::is_git_url(from) && std::fs::symlink_metadata(from).is_err() {
        checkout = skills::clone(store, from)?;
        (checkout.path.clone(), Some(from.to_owned()))
    } else {
        (local_root(from)?, None)
    };
    let scanned = scan_all(&root)?;
    let mut rows = Vec::new();
    let mut text = String::new();
    for skill in &scanned {
        let origin = match &source {
            Some(url) => url.clone(),
            None => skill_folder(&root, skill).display().to_string(),
        };
        let installed = library.install(skill, &origin, replace)?;
        let word = match installed {
            Installed::Added => "added",
            Installed::Replaced => "replaced",
            Installed::Unchanged => "unchanged",
        };
        let files = skill.files.len();
        let _ = writeln!(
            text,
            "{word} skill `{}`: {files} file{}, {} bytes, {}",
            skill.name(),
            if files == 1 { "" } else { "s" },
            skill.total_bytes(),
            skill.digest
        );
        rows.push(json!({
            "name": skill.name(),
            "status": word,
            "digest": skill.digest,
            "files": files,
            "bytes": skill.total_bytes(),
            "source": origin,
        }));
    }
    if settings.json {
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&rows)?))?;
    } else {
        print_stdout(&text)?;
    }
    Ok(Exit::Ok.into())
}

/// The real folder a scanned skill came from under `root`.
fn skill_folder(root: &Path, skill: &Scanned) -> PathBuf {
    let root = root.canonicalize().unwrap_or_else(|_| root.to_owned());
    [root.clone(), root.join(skill.name()), root.join("skills").join(skill.name())]
        .into_iter()
        .find(|dir| skills::scan::folder_name(dir).as_deref() == Some(skill.name()))
        .unwrap_or(root)
}

fn status_detail(status: &Status) -> Option<String> {
    match status {
        Status::Ok => None,
        Status::Changed(what) => {
            Some(format!("files differ from {}: {}", skills::LOCK_FILE, what.join(", ")))
        }
        Status::Missing(why) => Some(why.clone()),
        Status::Unrecorded => Some(format!("not in {}", skills::LOCK_FILE)),
    }
}

fn list(settings: &Settings, library: &Library) -> Result<ExitCode> {
    let rows = library.list()?;
    if settings.json {
        let rows: Vec<_> = rows
            .iter()
            .map(|(name, locked, status)| {
                json!({
                    "name": name,
                    "description": locked.as_ref().map(|l| l.description.clone()),
                    "digest": locked.as_ref().map(|l| l.digest.clone()),
                    "files": locked.as_ref().map(|l| l.files.len()),
                    "source": locked.as_ref().map(|l| l.source.clone()),
                    "status": status.word(),
                    "detail": status_detail(status),
                })
            })
            .collect();
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&rows)?))?;
        return Ok(Exit::Ok.into());
    }
    if rows.is_empty() {
        print_stdout("no skills in the hub: add one with `capabilities hub skills add <folder>`\n")?;
        return Ok(Exit::Ok.into());
    }
    let width = rows.iter().map(|(name, _, _)| name.len()).max().unwrap_or(0);
    let mut out = String::new();
    let mut off = false;
    for (name, locked, status) in &rows {
        let description = locked.as_ref().map(|l| one_line(&l.description, 72)).unwrap_or_default();
        let _ = writeln!(out, "{name:width$}  {:10}  {description}", status.word());
        if let Some(detail) = status_detail(status) {
            off = true;
            let _ = writeln!(out, "{:width$}  {detail}", "");
        }
    }
    if off {
        let _ = writeln!(
            out,
            "\nto record a skill's files as they are now, add its folder again with `capabilities hub skills add \
             <folder> --replace`; or `capabilities hub skills remove <name>`"
        );
    }
    print_stdout(&out)?;
    Ok(Exit::Ok.into())
}

fn show(settings: &Settings, library: &Library, name: &str) -> Result<ExitCode> {
    let (locked, status, scanned) = library.get(name)?;
    let body = scanned.as_ref().map(|s| s.front.body.clone());
    let size = |path: &str| -> Option<usize> {
        scanned.as_ref()?.files.iter().find(|f| f.path == path).map(|f| f.bytes.len())
    };
    if settings.json {
        let files: Vec<_> = locked
            .files
            .iter()
            .map(|(path, sha)| json!({ "path": path, "sha256": sha, "bytes": size(path) }))
            .collect();
        let value = json!({
            "name": name,
            "description": locked.description,
            "digest": locked.digest,
            "source": locked.source,
            "addedMs": locked.added_ms,
            "status": status.word(),
            "detail": status_detail(&status),
            "files": files,
            "body": body,
        });
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
        return Ok(Exit::Ok.into());
    }
    let mut out = String::new();
    let _ = writeln!(out, "{name}\n  {}", one_line(&locked.description, usize::MAX));
    let _ = writeln!(out, "  digest  {}", locked.digest);
    let _ = writeln!(out, "  from    {}", locked.source);
    let _ = writeln!(out, "  status  {}", status.word());
    if let Some(detail) = status_detail(&status) {
        let _ = writeln!(out, "          {detail}");
    }
    let _ = writeln!(out, "  files");
    for (path, sha) in &locked.files {
        let bytes = size(path).map(|n| format!("{n} bytes")).unwrap_or_else(|| "missing".into());
        let _ = writeln!(out, "    {path}  {bytes}  sha256:{}", &sha[..sha.len().min(12)]);
    }
    if let Some(body) = body {
        let _ = writeln!(out, "\n{}", body.trim_end());
    }
    print_stdout(&out)?;
    Ok(Exit::Ok.into())
}

/// `text` on one line, cut to `max` characters with `…`.
pub fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let mut cut: String = flat.chars().take(max.saturating_sub(1)).collect();
    cut.push('…');
    cut
}

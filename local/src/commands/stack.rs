//! `capabilities stack …`: sync the hub's configuration through a git repository the person
//! owns (`init`, `push`, `pull`), and add or remove one capability from a registry index
//! (`install`, `uninstall`). What a stack holds and how it is read is [`crate::stack`]; this is
//! the CLI, and the part of `pull` and `install` that adds a source goes through the same steps
//! as `hub add`: a package is installed verified and isolated, a command asks before it runs,
//! and the tools policy leaves open go to the review screen.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use capabilities_core::address::Namespace;
use capabilities_core::ports::Credentials;
use clap::{Args, Subcommand};
use serde_json::json;

use super::add_package::{self, Wanted};
use super::print_stdout;
use super::review;
use crate::config::{
    self, ConnectionRecord, ConnectionsRecord, HubConfig, load_policy, save_policy, write_json,
};
use crate::error::{Exit, UsageError};
use crate::packages::npm;
use crate::platform::random_bytes;
use crate::secrets::{SecretStore, SlotKey, check_value, read_hidden};
use crate::settings::Settings;
use crate::skills::{self, Installed, Library};
use crate::sources;
use crate::stack::registry::{self, Kind};
use crate::stack::{self, InstalledCapability, Link, StackFile, StackSource};
use crate::store::Store;
use crate::upstream::{SourceSpec, SourceTransport, find_bwrap};

#[derive(Debug, Args)]
pub struct StackArgs {
    #[command(subcommand)]
    pub command: StackCommand,
}

#[derive(Debug, Subcommand)]
pub enum StackCommand {
    /// Link the git repository your stack is kept in (a URL or a path; it may be empty).
    Init {
        /// The repository, as `git clone` takes it.
        repository: String,
        /// The branch the stack lives on (the repository's default, or `main` when it is empty).
        #[arg(long)]
        branch: Option<String>,
        /// The registry index `stack install` reads from then on (a directory or a URL).
        #[arg(long)]
        registry: Option<String>,
        /// Link this repository even though another one is linked.
        #[arg(long)]
        relink: bool,
    },
    /// Commit the hub's configuration (no secret values) to the stack repository and push it.
    Push {
        /// The commit message.
        #[arg(long, short)]
        message: Option<String>,
        /// Push even though the repository has commits this hub has not pulled; they are replaced.
        #[arg(long)]
        force: bool,
    },
    /// Apply the stack repository's configuration to this hub, after showing what changes.
    Pull {
        /// Apply without asking; install packages and accept the proposed policy for new tools.
        #[arg(long, short)]
        yes: bool,
        /// Show what would change and stop.
        #[arg(long)]
        dry_run: bool,
        /// Replace sources, skills and profiles that differ here with the stack's.
        #[arg(long)]
        replace: bool,
    },
    /// Add one capability from a registry index: a package, a remote server or a skill.
    Install {
        /// The capability's slug in the index.
        slug: String,
        /// The index to read: a directory holding `index.json`, or its URL.
        #[arg(long)]
        registry: Option<String>,
        /// The namespace the source gets (the index's, else the slug).
        #[arg(long)]
        namespace: Option<String>,
        /// Install without asking and accept the proposed policy for its tools.
        #[arg(long, short)]
        yes: bool,
    },
    /// Remove a capability `stack install` added (by slug, namespace or skill name).
    Uninstall {
        /// The slug, namespace or skill name.
        reference: String,
        /// Remove without asking.
        #[arg(long, short)]
        yes: bool,
    },
}

pub fn run(settings: &Settings, args: StackArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    match args.command {
        StackCommand::Init { repository, branch, registry, relink } => {
            init(settings, &store, &repository, branch, registry, relink)
        }
        StackCommand::Push { message, force } => push(settings, &store, message, force),
        StackCommand::Pull { yes, dry_run, replace } => pull(settings, &store, yes, dry_run, replace),
        StackCommand::Install { slug, registry, namespace, yes } => {
            install(settings, &store, &slug, registry.as_deref(), namespace.as_deref(), yes)
        }
        StackCommand::Uninstall { reference, yes } => uninstall(settings, &store, &reference, yes),
    }
}

fn init(
    settings: &Settings,
    store: &Store,
    repository: &str,
    branch: Option<String>,
    registry: Option<String>,
    relink: bool,
) -> Result<ExitCode> {
    // A path is kept absolute, so the clone's remote works from any directory.
    let remote = match std::fs::canonicalize(repository) {
        Ok(path) if !repository.contains("://") => path.to_string_lossy().into_owned(),
        _ => repository.to_owned(),
    };
    if let Some(link) = stack::read_link(store)?
        && link.remote != remote
        && !relink
    {
        return Err(UsageError(format!(
            "this hub's stack is linked to {} already: pass `--relink` to link {remote} instead",
            link.remote
        ))
        .into());
    }
    let dir = stack::clone_dir(store);
    remove_clone(&dir)?;
    eprintln!("cloning {remote}…");
    stack::git(
        None,
        [std::ffi::OsStr::new("clone"), "--quiet".as_ref(), "--".as_ref(), remote.as_ref(), dir.as_os_str()],
    )
    .context("linking the stack repository")?;
    let empty = !stack::git_ok(&dir, ["rev-parse", "--verify", "--quiet", "HEAD"]);
    let branch = match branch {
        Some(branch) => branch,
        None if empty => "main".to_owned(),
        None => stack::git(Some(&dir), ["rev-parse", "--abbrev-ref", "HEAD"])?,
    };
    check_branch(&branch)?;
    let tip = stack::fetch(&dir, &branch)?;
    let has_stack = match &tip {
        Some(tip) => {
            stack::git(Some(&dir), ["checkout", "--quiet", "-B", &branch, tip])?;
            dir.join(stack::FILE).is_file()
        }
        None => {
            stack::git(Some(&dir), ["symbolic-ref", "HEAD", &format!("refs/heads/{branch}")])?;
            false
        }
    };
    if let Some(registry) = &registry {
        registry::load(registry).context("checking the registry index")?;
    }
    let link = Link { remote: remote.clone(), branch: branch.clone(), synced: None, registry };
    stack::write_link(store, &link)?;
    if settings.json {
        print_stdout(&format!(
            "{}\n",
            json!({ "remote": remote, "branch": branch, "commit": tip, "hasStack": has_stack })
        ))?;
        return Ok(Exit::Ok.into());
    }
    print_stdout(&format!("linked {remote} (branch {branch})\n"))?;
    if has_stack {
        eprintln!("it holds a stack: `capabilities stack pull` applies it to this hub");
    } else {
        eprintln!("it holds no stack yet: `capabilities stack push` sends this hub's configuration");
    }
    Ok(Exit::Ok.into())
}

fn check_branch(branch: &str) -> Result<()> {
    let plain = !branch.is_empty()
        && !branch.starts_with(['-', '.', '/'])
        && branch.chars().all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
        && !branch.contains("..");
    if plain { Ok(()) } else { Err(UsageError(format!("`{branch}` is not a branch name to use")).into()) }
}

fn remove_clone(dir: &Path) -> Result<()> {
    match std::fs::remove_dir_all(dir) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(err) => Err(err).with_context(|| format!("removing the old clone {}", dir.display())),
    }
}

/// The clone, cloned again when it went missing; the remote branch's commit, fetched.
fn open_clone(store: &Store, link: &Link) -> Result<(std::path::PathBuf, Option<String>)> {
    let dir = stack::clone_dir(store);
    if !dir.join(".git").is_dir() {
        remove_clone(&dir)?;
        stack::git(
            None,
            [
                std::ffi::OsStr::new("clone"),
                "--quiet".as_ref(),
                "--".as_ref(),
                link.remote.as_ref(),
                dir.as_os_str(),
            ],
        )
        .context("cloning the stack repository again")?;
    }
    let tip = stack::fetch(&dir, &link.branch)
        .with_context(|| format!("reading the stack repository {}", link.remote))?;
    Ok((dir, tip))
}

/// The working tree at `tip` exactly (the clone is the hub's own; nothing else writes there).
fn check_out(dir: &Path, branch: &str, tip: Option<&str>) -> Result<()> {
    match tip {
        Some(tip) => {
            stack::git(Some(dir), ["checkout", "--quiet", "--force", "-B", branch, tip])?;
            stack::git(Some(dir), ["clean", "--quiet", "-fdx"])?;
        }
        None => {
            stack::git(Some(dir), ["symbolic-ref", "HEAD", &format!("refs/heads/{branch}")])?;
        }
    }
    Ok(())
}

fn push(settings: &Settings, store: &Store, message: Option<String>, force: bool) -> Result<ExitCode> {
    let mut link = stack::require_link(store)?;
    let (dir, tip) = open_clone(store, &link)?;
    if let Some(tip) = &tip
        && link.synced.as_ref() != Some(tip)
        && !force
    {
        bail!(
            "the stack repository has commits this hub has not pulled (its {} is at {}): run \
             `capabilities stack pull` first, or `stack push --force` to replace them with this hub's",
            link.branch,
            &tip[..tip.len().min(12)]
        );
    }
    check_out(&dir, &link.branch, tip.as_deref())?;
    let config = HubConfig::load(store);
    for problem in &config.problems {
        eprintln!("warning: {problem} (left out of the stack)");
    }
    let (exported, files) = stack::export(store, &config)?;
    let text = serde_json::to_vec_pretty(&exported)?;
    let mut texts: Vec<&[u8]> = vec![&text];
    texts.extend(files.values().flatten().map(|(_, bytes)| bytes.as_slice()));
    if let Some(slot) = stack::secret_in(store, &config, &texts)? {
        bail!(
            "the stored value of {slot} appears in the configuration (a plain `--env` value, a rule or a skill file): \
             move it into a credential slot before pushing; nothing was pushed"
        );
    }
    stack::write_tree(&dir, &exported, &files)?;
    stack::git(Some(&dir), ["add", "--all"])?;
    let summary = format!(
        "{} source{}, {} skill{}, {} profile{}",
        exported.sources.len(),
        plural(exported.sources.len()),
        exported.skills.len(),
        plural(exported.skills.len()),
        exported.profiles.len(),
        plural(exported.profiles.len()),
    );
    let changed = !stack::git_ok(&dir, ["diff", "--cached", "--quiet"]) || tip.is_none();
    let commit = if changed {
        let message = message.unwrap_or_else(|| format!("capabilities stack push: {summary}"));
        let mut args: Vec<String> = Vec::new();
        if stack::git(Some(&dir), ["config", "user.email"]).unwrap_or_default().is_empty() {
            args.extend([
                "-c".into(),
                "user.name=capabilities".into(),
                "-c".into(),
                "user.email=hub@capabilities.invalid".into(),
            ]);
        }
        args.extend(["commit".into(), "--quiet".into(), "--allow-empty".into(), "-m".into(), message]);
        stack::git(Some(&dir), &args)?;
        let head = stack::git(Some(&dir), ["rev-parse", "HEAD"])?;
        eprintln!("pushing {summary} to {}…", link.remote);
        // On top of the remote's commit (checked out above), so never a forced push: a push
        // another machine made in between makes this one fail rather than vanish.
        let refspec = format!("HEAD:refs/heads/{}", link.branch);
        stack::git(Some(&dir), ["push", "--quiet", "origin", &refspec])
            .context("nothing was pushed; run `capabilities stack pull`, then push again")?;
        head
    } else {
        tip.clone().unwrap_or_default()
    };
    link.synced = Some(commit.clone());
    stack::write_link(store, &link)?;
    if settings.json {
        print_stdout(&format!(
            "{}\n",
            json!({
                "commit": commit,
                "changed": changed,
                "sources": exported.sources.keys().collect::<Vec<_>>(),
                "skills": exported.skills.keys().collect::<Vec<_>>(),
                "profiles": exported.profiles.keys().collect::<Vec<_>>(),
            })
        ))?;
    } else if changed {
        print_stdout(&format!(
            "pushed {summary} to {} ({})\n",
            link.remote,
            &commit[..12.min(commit.len())]
        ))?;
    } else {
        print_stdout(&format!("the stack repository holds this hub's configuration already ({summary})\n"))?;
    }
    Ok(Exit::Ok.into())
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// How one part of the stack compares with this hub.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Compare {
    New,
    Same,
    Differs,
}

impl Compare {
    fn of<T: PartialEq>(here: Option<&T>, there: &T) -> Compare {
        match here {
            None => Compare::New,
            Some(here) if here == there => Compare::Same,
            Some(_) => Compare::Differs,
        }
    }
}

/// What a pull would do, part by part.
struct Plan {
    sources: Vec<(String, Compare)>,
    skills: Vec<(String, Compare)>,
    profiles: Vec<(String, Compare)>,
    rules: Vec<capabilities_core::policy::Rule>,
    /// Sources here that the stack does not have (kept).
    local_only: Vec<String>,
}

fn plan(store: &Store, config: &HubConfig, stack: &StackFile) -> Result<Plan> {
    let here = stack::export_config(store, config)?;
    let skills_here: BTreeMap<String, String> = Library::new(store)
        .list()?
        .into_iter()
        .filter_map(|(name, locked, status)| {
            // A skill changed on disk differs from every digest.
            let digest = locked?.digest;
            Some((name, if status == skills::Status::Ok { digest } else { format!("{digest} (changed)") }))
        })
        .collect();
    let sources = stack
        .sources
        .iter()
        .map(|(ns, source)| (ns.clone(), Compare::of(here.sources.get(ns), source)))
        .collect();
    let skills = stack
        .skills
        .iter()
        .map(|(name, digest)| (name.clone(), Compare::of(skills_here.get(name), digest)))
        .collect();
    let profiles = stack
        .profiles
        .iter()
        .map(|(name, profile)| {
            let local = crate::profiles::load(store, name).ok().flatten();
            (name.clone(), Compare::of(local.as_ref(), profile))
        })
        .collect();
    let rules =
        stack.policy.rules.iter().filter(|rule| !config.policy.rules.contains(rule)).cloned().collect();
    let local_only = config
        .sources
        .iter()
        .map(|(r, _, _)| r.spec.namespace.clone())
        .filter(|ns| !stack.sources.contains_key(ns))
        .collect();
    Ok(Plan { sources, skills, profiles, rules, local_only })
}

fn render_plan(plan: &Plan, stack: &StackFile, replace: bool) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let word = |compare: Compare| match compare {
        Compare::New => "add",
        Compare::Same => "same",
        Compare::Differs if replace => "replace",
        Compare::Differs => "differs (kept; --replace takes the stack's)",
    };
    for (ns, compare) in &plan.sources {
        let line = stack.sources.get(ns).map(StackSource::describe).unwrap_or_default();
        let _ = writeln!(out, "  source `{ns}`: {} — {line}", word(*compare));
    }
    for ns in &plan.local_only {
        let _ = writeln!(out, "  source `{ns}`: only on this hub (kept)");
    }
    for (name, compare) in &plan.skills {
        let _ = writeln!(out, "  skill `{name}`: {}", word(*compare));
    }
    for (name, compare) in &plan.profiles {
        let _ = writeln!(out, "  profile `{name}`: {}", word(*compare));
    }
    for rule in &plan.rules {
        let on = rule.connection.as_deref().map(|c| format!(" on connection `{c}`")).unwrap_or_default();
        let _ = writeln!(out, "  policy: {} `{}`{on}", rule.effect, rule.target);
    }
    if out.is_empty() {
        out.push_str("  nothing: the stack is empty\n");
    }
    out
}

fn pull(settings: &Settings, store: &Store, yes: bool, dry_run: bool, replace: bool) -> Result<ExitCode> {
    let mut link = stack::require_link(store)?;
    let (dir, tip) = open_clone(store, &link)?;
    let Some(tip) = tip else {
        bail!(
            "the stack repository has no branch `{}` yet: run `capabilities stack push` on the machine whose hub it should hold",
            link.branch
        );
    };
    check_out(&dir, &link.branch, Some(&tip))?;
    let Some(pulled) = stack::read_tree(&dir)? else {
        bail!("the stack repository has no {} on `{}`: push a stack to it first", stack::FILE, link.branch);
    };
    let config = HubConfig::load(store);
    for problem in &config.problems {
        eprintln!("warning: {problem}");
    }
    let plan = plan(store, &config, &pulled)?;
    eprintln!("the stack at {} ({}):", link.remote, &tip[..12.min(tip.len())]);
    eprint!("{}", render_plan(&plan, &pulled, replace));
    let todo = |c: Compare| c == Compare::New || (replace && c == Compare::Differs);
    let work = plan.sources.iter().any(|(_, c)| todo(*c))
        || plan.skills.iter().any(|(_, c)| todo(*c))
        || plan.profiles.iter().any(|(_, c)| todo(*c))
        || !plan.rules.is_empty();
    if dry_run {
        return finish_pull(settings, &plan, &[], None);
    }
    if work && !yes {
        if settings.no_input {
            return Err(UsageError(
                "applying a stack needs your consent: check the plan above and pass `--yes`".into(),
            )
            .into());
        }
        if !review::ask(settings, "Apply it? [y/N] ", false)? {
            bail!("nothing was applied");
        }
    }
    let mut failed: Vec<String> = Vec::new();
    // Rules first, so a pulled source's tools are decided by them when it is reviewed; the
    // contracts people reviewed on the other machine go with each source as it is added.
    if !plan.rules.is_empty() {
        let mut policy = load_policy(store)?;
        for rule in &plan.rules {
            if !policy.rules.contains(rule) {
                policy.rules.push(rule.clone());
            }
        }
        save_policy(store, &policy)?;
    }
    for (ns, compare) in &plan.sources {
        if !todo(*compare) {
            continue;
        }
        let source = &pulled.sources[ns];
        let result = (|| -> Result<()> {
            let namespace = Namespace::new(ns).map_err(|e| anyhow::anyhow!("{e}"))?;
            if *compare == Compare::Differs {
                sources::remove_source(store, &namespace)?;
            }
            take_reviewed(store, &pulled, ns)?;
            let manifest = add_source(settings, store, &namespace, source, yes)?;
            eprintln!("added `{ns}` with {} tools", manifest.tools.len());
            let policy = load_policy(store)?;
            let items = review::needs_review(&manifest, &policy, None);
            review::review(settings, store, &items, yes)?;
            Ok(())
        })();
        if let Err(err) = result {
            eprintln!("source `{ns}` was not added: {err:#}");
            failed.push(format!("source `{ns}`"));
        }
    }
    let library = Library::new(store);
    for (name, compare) in &plan.skills {
        if !todo(*compare) {
            continue;
        }
        let result = (|| -> Result<()> {
            let scanned = skills::scan(&dir.join(stack::SKILLS).join(name))?;
            if scanned.name() != name || scanned.digest != pulled.skills[name] {
                bail!(
                    "its files in the repository differ from the digest the stack records; push it again from the hub that has it"
                );
            }
            let origin = format!("stack {}", link.remote);
            match library.install(&scanned, &origin, *compare == Compare::Differs)? {
                Installed::Added | Installed::Replaced | Installed::Unchanged => Ok(()),
            }
        })();
        match result {
            Ok(()) => eprintln!("added skill `{name}`"),
            Err(err) => {
                eprintln!("skill `{name}` was not added: {err:#}");
                failed.push(format!("skill `{name}`"));
            }
        }
    }
    for (name, compare) in &plan.profiles {
        if todo(*compare) {
            crate::profiles::save(store, &pulled.profiles[name])?;
            eprintln!("saved profile `{name}`");
        }
    }
    let mut installed = stack::installed(store)?;
    for (slug, entry) in &pulled.installed {
        installed.entry(slug.clone()).or_insert_with(|| entry.clone());
    }
    stack::write_installed(store, &installed)?;
    if failed.is_empty() {
        link.synced = Some(tip.clone());
        stack::write_link(store, &link)?;
    } else {
        eprintln!(
            "not everything was applied ({}): fix what is said above and run `capabilities stack pull` again; \
             until then `stack push` refuses, so this hub does not drop them from the stack",
            failed.join(", ")
        );
    }
    finish_pull(settings, &plan, &failed, Some(&tip))
}

fn finish_pull(
    settings: &Settings,
    plan: &Plan,
    failed: &[String],
    applied: Option<&str>,
) -> Result<ExitCode> {
    let word = |c: &Compare| match c {
        Compare::New => "new",
        Compare::Same => "same",
        Compare::Differs => "differs",
    };
    if settings.json {
        let part = |items: &[(String, Compare)]| {
            items.iter().map(|(n, c)| json!({ "name": n, "status": word(c) })).collect::<Vec<_>>()
        };
        print_stdout(&format!(
            "{}\n",
            json!({
                "applied": applied,
                "sources": part(&plan.sources),
                "skills": part(&plan.skills),
                "profiles": part(&plan.profiles),
                "localOnly": plan.local_only,
                "failed": failed,
            })
        ))?;
    } else if let Some(commit) = applied {
        if failed.is_empty() {
            print_stdout(&format!("applied the stack at {}\n", &commit[..12.min(commit.len())]))?;
        }
    }
    Ok(if failed.is_empty() { Exit::Ok } else { Exit::Failure }.into())
}

/// The contracts reviewed on the other machine for `namespace`'s tools, and what it noted as
/// changed: taken before the source is added, so its tools are decided as they were there.
fn take_reviewed(store: &Store, pulled: &StackFile, namespace: &str) -> Result<()> {
    let prefix = format!("{namespace}.");
    let mut policy = load_policy(store)?;
    let before = policy.clone();
    for (address, digest) in pulled.policy.reviewed.iter().filter(|(a, _)| a.starts_with(&prefix)) {
        policy.reviewed.insert(address.clone(), *digest);
    }
    for (address, changes) in pulled.policy.changes.iter().filter(|(a, _)| a.starts_with(&prefix)) {
        policy.changes.insert(address.clone(), changes.clone());
    }
    if policy != before {
        save_policy(store, &policy)?;
    }
    Ok(())
}

/// Adds one source of a stack the way `hub add` would: a package installed and checked
/// against the stack's integrity, an isolated command isolated here, credentials asked for.
fn add_source(
    settings: &Settings,
    store: &Store,
    namespace: &Namespace,
    source: &StackSource,
    yes: bool,
) -> Result<capabilities_core::manifest::Manifest> {
    let ns = namespace.as_str();
    let places = stack::Places::here(store);
    let mut source = source.clone();
    stack::map_paths(&mut source, |path| places.local(path));
    let source = &source;
    let read = add_package::granted_dirs(&source.read)
        .with_context(|| format!("a directory `{ns}` was granted is not on this machine"))?;
    let filled = ask_secrets(settings, store, ns, source)?;
    let credentials = |spec: &SourceSpec| {
        let mut credentials = sources::credentials_from_env(spec);
        credentials.values.extend(filled.clone());
        if credentials.connection.is_none() && !filled.is_empty() {
            credentials.connection = Some("default".to_owned());
        }
        credentials
    };
    let result = match (&source.package, &source.transport) {
        (Some(package), _) => {
            if source.isolated && find_bwrap().is_none() {
                bail!("cannot add `{ns}`: {}", crate::upstream::MISSING_BWRAP);
            }
            let wanted = Wanted {
                env: source.env.clone(),
                env_slots: source.env_slots.clone(),
                args: source.args.clone(),
                read,
                isolate: source.isolated,
                net: source.net,
            };
            let refused = |served: &str| {
                anyhow::anyhow!(
                    "the registry serves {} {} with integrity {served}, not the {} the stack pinned: refused",
                    package.name,
                    package.version,
                    package.integrity
                )
            };
            eprintln!("resolving {} {} {}…", package.registry, package.name, package.version);
            if package.registry == "pypi" {
                let python = crate::packages::pypi::python()?;
                let resolved =
                    crate::packages::pypi::resolve(&python, &package.name, Some(&package.version))?;
                if resolved.integrity != package.integrity {
                    return Err(refused(&resolved.integrity));
                }
                add_package::install_resolved_pypi(store, namespace, &python, &resolved, wanted, credentials)
            } else {
                let resolved = npm::resolve(&package.name, &package.version)?;
                if resolved.integrity != package.integrity {
                    return Err(refused(&resolved.integrity));
                }
                add_package::install_resolved(store, namespace, &resolved, wanted, credentials)
            }
        }
        (None, Some(transport)) => {
            let mut transport = transport.clone();
            if let SourceTransport::Stdio { isolation, .. } = &mut transport
                && source.isolated
            {
                *isolation = Some(add_package::isolation(store, ns, read, source.net)?);
            }
            let spec = SourceSpec { namespace: ns.to_owned(), transport };
            if let Some(line) = sources::command_line(&spec) {
                let how = sources::isolation_line(&spec).unwrap_or_else(|| "as you".to_owned());
                eprintln!("source `{ns}` runs this command on your machine, {how}:\n  {line}");
                if !yes && !review::ask(settings, "Run it? [y/N] ", false)? {
                    bail!("you chose not to run it");
                }
            }
            let oauth = source.connections.iter().any(|c| c.oauth);
            if oauth && settings.no_input {
                bail!(
                    "it signs in with OAuth, which needs you at a browser: run `capabilities stack pull` at a terminal"
                );
            }
            if oauth {
                super::add::register_signing_in(settings, store, &spec, &Default::default())
            } else {
                super::add::register(store, &spec, &credentials(&spec))
            }
        }
        (None, None) => bail!("the stack names neither a package nor a transport"),
    };
    let manifest = match result {
        Ok(manifest) => manifest,
        Err(err) => {
            forget_filled(store, ns, &filled);
            return Err(err);
        }
    };
    // Connections beyond the one `add` writes (names and slots; the values were asked above).
    let plain: Vec<ConnectionRecord> = source
        .connections
        .iter()
        .filter(|c| !c.oauth)
        .map(|c| ConnectionRecord { name: c.name.clone(), slots: c.slots.clone(), oauth: None })
        .collect();
    if !plain.is_empty() && !source.connections.iter().any(|c| c.oauth) {
        let record = ConnectionsRecord { connections: plain, default: source.default_connection.clone() };
        write_json(store, &config::connections_path(ns), &record)?;
    }
    Ok(manifest)
}

/// Asks for each slot of `source`'s connections that the keychain does not hold, at a prompt
/// that does not echo; without a terminal, says how to fill them later. The default
/// connection's values, by slot, for reading its tools now.
fn ask_secrets(
    settings: &Settings,
    store: &Store,
    ns: &str,
    source: &StackSource,
) -> Result<BTreeMap<String, String>> {
    let mut filled = BTreeMap::new();
    if source.connections.iter().all(|c| c.slots.is_empty()) {
        return Ok(filled);
    }
    let secrets = SecretStore::open(store)?;
    let default = source.default_connection.as_deref().unwrap_or("default");
    for connection in &source.connections {
        for slot in &connection.slots {
            let key = SlotKey { namespace: ns, connection: &connection.name, slot };
            let value = match secrets.get(&key)? {
                Some(value) => value,
                None if settings.no_input => {
                    if std::env::var(sources::env_name(slot)).is_err() {
                        eprintln!(
                            "`{ns}` needs {slot} (connection `{}`): fill it with `capabilities hub auth {ns} --connection {}`",
                            connection.name, connection.name
                        );
                    }
                    continue;
                }
                None => {
                    let value =
                        read_hidden(&format!("{slot} for {ns}/{} (input hidden): ", connection.name))?;
                    check_value(slot, &value)
                        .map_err(|why| UsageError(format!("{why}; nothing was stored")))?;
                    secrets.set(&key, &value)?;
                    value
                }
            };
            if connection.name == default {
                filled.insert(slot.clone(), value);
            }
        }
    }
    Ok(filled)
}

fn forget_filled(store: &Store, ns: &str, filled: &BTreeMap<String, String>) {
    if filled.is_empty() {
        return;
    }
    let record = ConnectionsRecord {
        connections: vec![ConnectionRecord {
            name: "default".into(),
            slots: filled.keys().cloned().collect(),
            oauth: None,
        }],
        default: None,
    };
    if let Ok(secrets) = SecretStore::open(store) {
        let _ = secrets.forget_source(ns, &record);
    }
}

fn install(
    settings: &Settings,
    store: &Store,
    slug: &str,
    given: Option<&str>,
    namespace: Option<&str>,
    yes: bool,
) -> Result<ExitCode> {
    let link = stack::read_link(store)?;
    let location = registry::choose(
        given.or(settings.registry.as_deref()),
        link.as_ref().and_then(|l| l.registry.as_deref()),
    )?;
    let index = registry::load(&location)?;
    let entry = index.find(slug, &location)?;
    let kind = entry.kind()?;
    let mut installed = stack::installed(store)?;
    if let Some(done) = installed.get(slug) {
        return Err(UsageError(format!(
            "`{slug}` is installed already, as {} `{}` ({}): `capabilities stack uninstall {slug}` removes it",
            done.kind, done.name, done.pin
        ))
        .into());
    }
    eprintln!("`{slug}`: {}", entry.describe());
    let record = match kind {
        Kind::Npm { package, version, integrity } => {
            let namespace = source_namespace(store, namespace, entry)?;
            let ns = namespace.as_str();
            if find_bwrap().is_none() {
                bail!("cannot install `{slug}`: {}", crate::upstream::MISSING_BWRAP);
            }
            let resolved = npm::resolve(package, version)?;
            if let Some(integrity) = integrity
                && integrity != resolved.integrity
            {
                bail!(
                    "the registry serves {package}@{version} with integrity {}, not the {integrity} the index pins: refused",
                    resolved.integrity
                );
            }
            eprintln!(
                "source `{ns}` installs npm {package}@{version} ({}) with install scripts off, and runs it isolated{}",
                resolved.integrity,
                if entry.net { " with the network" } else { "" }
            );
            consent(settings, yes, "Install it? [y/N] ")?;
            let wanted = Wanted {
                env: BTreeMap::new(),
                env_slots: Vec::new(),
                args: Vec::new(),
                read: Vec::new(),
                isolate: true,
                net: entry.net,
            };
            let manifest = add_package::install_resolved(store, &namespace, &resolved, wanted, |_| {
                Credentials::default()
            })?;
            super::add::added_then_review(
                settings,
                store,
                &format!("`{ns}` (npm {package}@{version})"),
                &manifest,
                yes,
            )?;
            InstalledCapability {
                kind: "source".into(),
                name: ns.to_owned(),
                pin: version.to_owned(),
                registry: location.clone(),
            }
        }
        Kind::Remote { url } => {
            let namespace = source_namespace(store, namespace, entry)?;
            let ns = namespace.as_str();
            crate::upstream::check_url(url).map_err(|why| anyhow::anyhow!("index entry `{slug}`: {why}"))?;
            let spec = SourceSpec {
                namespace: ns.to_owned(),
                transport: SourceTransport::Http { url: url.to_owned(), header_slots: Vec::new() },
            };
            let manifest = super::add::register_signing_in(settings, store, &spec, &Default::default())?;
            super::add::added_then_review(settings, store, &format!("`{ns}` ({url})"), &manifest, yes)?;
            InstalledCapability {
                kind: "source".into(),
                name: ns.to_owned(),
                pin: url.to_owned(),
                registry: location.clone(),
            }
        }
        Kind::Skill { git, commit, path } => {
            if namespace.is_some() {
                return Err(UsageError(
                    "`--namespace` is for sources; a skill keeps the name its SKILL.md gives".into(),
                )
                .into());
            }
            consent(settings, yes, &format!("Add the skill from {git} at {commit}? [y/N] "))?;
            let checkout = CheckoutAt::fetch(store, git, commit)?;
            let root = match path {
                Some(path) => checkout.dir.join(path),
                None => checkout.dir.clone(),
            };
            let scanned = skills::scan(&root).context("nothing was added")?;
            let origin = format!("{git}@{commit}");
            Library::new(store).install(&scanned, &origin, false)?;
            print_stdout(&format!(
                "added skill `{}` ({} files, {}); `capabilities hub skills sync` puts it in your harnesses' skill folders\n",
                scanned.name(),
                scanned.files.len(),
                scanned.digest
            ))?;
            InstalledCapability {
                kind: "skill".into(),
                name: scanned.name().to_owned(),
                pin: commit.to_owned(),
                registry: location.clone(),
            }
        }
    };
    installed.insert(slug.to_owned(), record);
    stack::write_installed(store, &installed)?;
    Ok(Exit::Ok.into())
}

fn consent(settings: &Settings, yes: bool, question: &str) -> Result<()> {
    if yes {
        return Ok(());
    }
    if settings.no_input {
        return Err(UsageError(
            "installing needs your consent: check what is said above and pass `--yes`".into(),
        )
        .into());
    }
    if !review::ask(settings, question, false)? {
        bail!("nothing was installed");
    }
    Ok(())
}

fn source_namespace(store: &Store, given: Option<&str>, entry: &registry::Entry) -> Result<Namespace> {
    let namespace = match given.or(entry.namespace.as_deref()) {
        Some(raw) => Namespace::new(raw).map_err(|e| {
            UsageError(format!("`{raw}` is not a valid namespace ({e}); pick one with `--namespace`"))
        })?,
        None => Namespace::suggest(&entry.slug),
    };
    if store.root().join(config::source_path(namespace.as_str())).is_file() {
        return Err(UsageError(format!(
            "a source named `{namespace}` exists already: pick another name with `--namespace`"
        ))
        .into());
    }
    Ok(namespace)
}

/// A repository fetched at one commit into a folder of the store, removed when dropped.
struct CheckoutAt {
    dir: std::path::PathBuf,
}

impl CheckoutAt {
    fn fetch(store: &Store, url: &str, commit: &str) -> Result<CheckoutAt> {
        let nonce: [u8; 6] = random_bytes()?;
        let dir = store.root().join("skills").join(format!(".fetch-{}", hex::encode(nonce)));
        let checkout = CheckoutAt { dir };
        let dir = checkout.dir.as_path();
        stack::git(None, [std::ffi::OsStr::new("init"), "--quiet".as_ref(), dir.as_os_str()])?;
        stack::git(Some(dir), ["fetch", "--quiet", "--depth", "1", "--", url, commit]).with_context(
            || format!("fetching {commit} from {url}; check the index entry and your access"),
        )?;
        stack::git(Some(dir), ["checkout", "--quiet", "FETCH_HEAD"])?;
        let head = stack::git(Some(dir), ["rev-parse", "HEAD"])?;
        if head != commit {
            bail!("{url} gave commit {head} for {commit}: refused");
        }
        Ok(checkout)
    }
}

impl Drop for CheckoutAt {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn uninstall(settings: &Settings, store: &Store, reference: &str, yes: bool) -> Result<ExitCode> {
    let mut installed = stack::installed(store)?;
    let Some((slug, what)) = installed
        .iter()
        .find(|(slug, what)| slug.as_str() == reference || what.name == reference)
        .map(|(s, w)| (s.clone(), w.clone()))
    else {
        let hint = if store.root().join(config::source_path(reference)).is_file() {
            format!("; it is a source of the hub: `capabilities hub remove {reference}` removes it")
        } else if Library::new(store).dir().join(reference).is_dir() {
            format!("; it is a skill of the hub: `capabilities hub skills remove {reference}` removes it")
        } else {
            String::new()
        };
        bail!("`{reference}` was not installed with `capabilities stack install`{hint}");
    };
    if !yes {
        if settings.no_input {
            return Err(UsageError(format!("removing `{slug}` needs your consent: pass `--yes`")).into());
        }
        if !review::ask(settings, &format!("Remove {} `{}` (`{slug}`)? [y/N] ", what.kind, what.name), false)?
        {
            bail!("`{slug}` was kept");
        }
    }
    match what.kind.as_str() {
        "skill" => {
            let library = Library::new(store);
            if library.dir().join(&what.name).is_dir() {
                library.remove(&what.name)?;
            }
        }
        _ => {
            if let Ok(namespace) = Namespace::new(&what.name) {
                let connections: ConnectionsRecord =
                    config::read_json(store, &config::connections_path(&what.name))
                        .ok()
                        .flatten()
                        .unwrap_or_default();
                sources::remove_source(store, &namespace)?;
                super::remove::forget_secrets(store, &what.name, &connections);
            }
        }
    }
    installed.remove(&slug);
    stack::write_installed(store, &installed)?;
    if settings.json {
        print_stdout(&format!("{}\n", json!({ "removed": slug, "kind": what.kind, "name": what.name })))?;
    } else {
        print_stdout(&format!("removed {} `{}` (`{slug}`)\n", what.kind, what.name))?;
    }
    Ok(Exit::Ok.into())
}

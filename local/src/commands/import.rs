//! `capabilities hub import`: read the harnesses' MCP servers, merge duplicates, propose a
//! namespace for each, and add them through the same path as `hub add`; and the skills in the
//! harnesses' skill folders, merged by digest, into the hub's skill library. The harness files
//! are left as they are.

use std::collections::BTreeSet;
use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use capabilities_core::address::Namespace;
use capabilities_core::ports::Credentials;
use clap::Args;
use serde_json::json;

use super::print_stdout;
use super::review;
use crate::config::{self, HubConfig};
use crate::error::{Exit, UsageError};
use crate::harness::read::{self, Converted, PlainSecret};
use crate::harness::{self, Descriptor};
use crate::settings::Settings;
use crate::sources;
use crate::store::Store;
use crate::upstream::{SourceSpec, SourceTransport};

#[derive(Debug, Args)]
pub struct ImportArgs {
    /// Read only these harnesses (repeatable, or comma-separated); `hub connect --list` names
    /// them. All that are found when left out.
    #[arg(long = "from", value_name = "HARNESS", value_delimiter = ',')]
    pub from: Vec<String>,
    /// Consent to run the listed commands and accept the proposed policy without prompting.
    #[arg(long, short)]
    pub yes: bool,
    /// Install each `npx -y <package>` and `uvx <package>` entry as a verified package instead
    /// (`hub add npm:<package>` or `pypi:<package>`: an exact version, no install code run,
    /// integrity checked, isolated).
    #[arg(long)]
    pub verified: bool,
}

/// One source the import proposes.
#[derive(Debug, Clone)]
pub struct Proposal {
    pub spec: SourceSpec,
    /// Where it was found: `claude-code (user) memory`.
    pub seen_in: Vec<String>,
    pub secrets: Vec<PlainSecret>,
    pub from_env: Vec<(String, String)>,
    pub notes: Vec<String>,
    /// The package an `npx` or `uvx` entry fetches at each start (registry, reference), with
    /// the server's arguments: what `--verified` installs instead.
    pub package: Option<(&'static str, String, Vec<String>)>,
    /// Whether this import installs it verified (`--verified`).
    pub verified: bool,
}

/// What the importer found in the harnesses.
#[derive(Debug, Default)]
pub struct Plan {
    pub proposals: Vec<Proposal>,
    /// Entries the hub has already, by namespace.
    pub known: Vec<(String, String)>,
    /// Entries left out, with why.
    pub skipped: Vec<String>,
    /// Harness files that could not be read.
    pub problems: Vec<String>,
    /// Harnesses read, with their entry counts.
    pub read: Vec<(&'static str, usize)>,
    /// Skills to add to the hub's library, one per digest.
    pub skills: Vec<SkillProposal>,
    /// Skills the hub has already with the same files: (where, name).
    pub skills_known: Vec<(String, String)>,
    /// Skill folders left out, with why (unreadable, invalid, or a different skill of a name
    /// the hub has).
    pub skills_skipped: Vec<String>,
}

/// One skill the import proposes: the files read (what is installed is what was shown).
#[derive(Debug, Clone)]
pub struct SkillProposal {
    pub skill: crate::skills::Scanned,
    /// The folder it is installed from.
    pub path: std::path::PathBuf,
    /// Where it was found: `claude-code ~/.claude/skills/release-notes`.
    pub seen_in: Vec<String>,
    /// Other folders with a skill of the same name but other files, not imported.
    pub conflicts: Vec<String>,
}

/// What happened to the proposals.
#[derive(Debug, Default)]
pub struct Outcome {
    pub added: Vec<(String, usize)>,
    pub failed: Vec<(String, String)>,
    /// Sources whose credentials still need `capabilities hub auth`.
    pub need_auth: Vec<String>,
    /// Remote servers that did not answer; not added, and not a failure of the import.
    pub unreachable: Vec<String>,
    /// Remote servers that want an OAuth sign-in (`capabilities hub auth`) before their tools
    /// can be read; added with none yet.
    pub need_sign_in: Vec<String>,
    /// Skills added to the hub's library.
    pub skills_added: Vec<String>,
}

/// What adding one proposal came to.
enum Registered {
    Tools(capabilities_core::manifest::Manifest),
    SignInNeeded,
}

/// Adds one proposal as `hub add` would, except that a remote server wanting an OAuth sign-in
/// is added with no tools yet rather than failing the import: the sign-in needs a browser and
/// a person, one server at a time, with `capabilities hub auth`.
fn register(store: &Store, proposal: &Proposal) -> Result<Registered> {
    let credentials = credentials_for(proposal);
    let spec = &proposal.spec;
    if let (true, Some((registry, reference, args)), SourceTransport::Stdio { env, env_slots, .. }) =
        (proposal.verified, &proposal.package, &spec.transport)
    {
        let namespace = Namespace::new(&spec.namespace).map_err(|e| anyhow::anyhow!("{e}"))?;
        let wanted = super::add_package::Wanted {
            env: env.clone(),
            env_slots: env_slots.clone(),
            args: args.clone(),
            read: Vec::new(),
            isolate: true,
            net: false,
        };
        let manifest = if *registry == "pypi" {
            let (name, version) = crate::packages::pypi::parse(reference)?;
            let python = crate::packages::pypi::python()?;
            let resolved = crate::packages::pypi::resolve(&python, &name, version.as_deref())?;
            super::add_package::install_resolved_pypi(store, &namespace, &python, &resolved, wanted, |_| {
                credentials.clone()
            })?
        } else {
            let (name, range) = crate::packages::npm::parse(reference)?;
            let resolved = crate::packages::npm::resolve(&name, &range)?;
            super::add_package::install_resolved(store, &namespace, &resolved, wanted, |_| {
                credentials.clone()
            })?
        };
        return Ok(Registered::Tools(manifest));
    }
    let oauth =
        matches!(&spec.transport, SourceTransport::Http { header_slots, .. } if header_slots.is_empty());
    if !oauth {
        return super::add::register(store, spec, &credentials).map(Registered::Tools);
    }
    let namespace = Namespace::new(&spec.namespace).map_err(|e| anyhow::anyhow!("{e}"))?;
    eprintln!("reading the tools of `{namespace}`…");
    let entries = match sources::list_tools(spec, &credentials)? {
        sources::Listed::Tools(entries) => entries,
        sources::Listed::AuthRequired { .. } => {
            let manifest =
                capabilities_core::manifest::Manifest { namespace, description: None, tools: Vec::new() };
            let record = config::SourceRecord { spec: spec.clone(), added_ms: crate::platform::now_ms() };
            sources::write_new_source(store, &record, &manifest, &config::ConnectionsRecord::default())?;
            return Ok(Registered::SignInNeeded);
        }
    };
    let manifest = sources::build_manifest(&namespace, &entries);
    let record = config::SourceRecord { spec: spec.clone(), added_ms: crate::platform::now_ms() };
    sources::write_new_source(store, &record, &manifest, &sources::connections_for(spec))?;
    Ok(Registered::Tools(manifest))
}

pub fn run(settings: &Settings, args: ImportArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let outcome = import_with(settings, &store, &args.from, args.yes, args.verified)?;
    Ok(if outcome.failed.is_empty() { Exit::Ok } else { Exit::Failure }.into())
}

/// Reads the harnesses, shows the plan, and adds what the person accepts.
pub fn import(settings: &Settings, store: &Store, from: &[String], yes: bool) -> Result<Outcome> {
    import_with(settings, store, from, yes, false)
}

/// [`import`], with `npx -y <package>` entries installed as verified packages when `verified`.
pub fn import_with(
    settings: &Settings,
    store: &Store,
    from: &[String],
    yes: bool,
    verified: bool,
) -> Result<Outcome> {
    let home = harness::home_dir()?;
    let chosen = harness::select(from)?;
    let config = HubConfig::load(store);
    let mut plan = plan(&home, &chosen, &config);
    for proposal in &mut plan.proposals {
        proposal.verified = verified && proposal.package.is_some();
    }
    plan_skills(&home, &chosen, store, &mut plan);
    if settings.json {
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&plan_json(&plan))?))?;
    } else {
        print_stdout(&render_plan(&plan))?;
    }
    let mut outcome = Outcome::default();
    if plan.proposals.is_empty() && plan.skills.is_empty() {
        return Ok(outcome);
    }
    if !yes {
        if settings.no_input {
            let what = if plan.proposals.is_empty() {
                "importing copies the skills listed above into the hub: check them and pass `--yes`"
            } else {
                "importing runs the commands listed above on your machine: check them and pass `--yes`"
            };
            return Err(UsageError(what.into()).into());
        }
        let question = match (plan.proposals.is_empty(), plan.skills.is_empty()) {
            (false, true) => "Import these sources? [Y/n] ",
            (true, false) => "Import these skills? [Y/n] ",
            _ => "Import these sources and skills? [Y/n] ",
        };
        if !review::ask(settings, question, true)? {
            eprintln!("nothing was imported");
            return Ok(outcome);
        }
    }
    import_skills(store, &plan, &mut outcome);
    // Every source starts and lists its tools at the same time; records are written by each.
    let registered: Vec<Result<Registered>> = std::thread::scope(|scope| {
        let handles: Vec<_> =
            plan.proposals.iter().map(|proposal| scope.spawn(move || register(store, proposal))).collect();
        handles
            .into_iter()
            .map(|h| {
                h.join().unwrap_or_else(|_| Err(anyhow::anyhow!("reading the tools stopped unexpectedly")))
            })
            .collect()
    });
    let mut to_review = Vec::new();
    for (proposal, registered) in plan.proposals.iter().zip(registered) {
        let ns = proposal.spec.namespace.clone();
        match registered {
            Ok(Registered::SignInNeeded) => {
                outcome.added.push((ns.clone(), 0));
                outcome.need_sign_in.push(ns);
                continue;
            }
            Ok(Registered::Tools(manifest)) => {
                outcome.added.push((ns.clone(), manifest.tools.len()));
                let policy = config::load_policy(store)?;
                to_review.extend(review::needs_review(&manifest, &policy, None));
            }
            Err(err) if matches!(proposal.spec.transport, SourceTransport::Http { .. }) => {
                // A remote server that does not answer now (offline, moved) is left out without
                // failing the import; adding it later is one command.
                eprintln!("could not add `{ns}`: {err:#}");
                outcome.unreachable.push(ns);
                continue;
            }
            Err(err) => {
                eprintln!("could not add `{ns}`: {err:#}");
                outcome.failed.push((ns, format!("{err:#}")));
                continue;
            }
        }
        if !proposal.secrets.is_empty() || !proposal.from_env.is_empty() {
            let mut stored_all = !proposal.secrets.is_empty() && proposal.from_env.is_empty();
            let keep = yes
                || (!settings.no_input
                    && review::ask(
                        settings,
                        &format!(
                            "`{ns}` has {} credential{} in plain text in its harness file; copy {} into the keychain? [Y/n] ",
                            proposal.secrets.len(),
                            plural(proposal.secrets.len()),
                            if proposal.secrets.len() == 1 { "it" } else { "them" }
                        ),
                        true,
                    )?);
            for secret in &proposal.secrets {
                let stored =
                    keep && store_imported_secret(store, &ns, "default", &secret.slot, &secret.value)?;
                stored_all &= stored;
            }
            if !stored_all {
                outcome.need_auth.push(ns);
            }
        }
    }
    let mut summary = String::new();
    for name in &outcome.skills_added {
        let _ = writeln!(summary, "added skill `{name}`");
    }
    for (ns, tools) in &outcome.added {
        if outcome.need_sign_in.contains(ns) {
            let _ = writeln!(summary, "added `{ns}`; it wants a sign-in before its tools can be read");
        } else {
            let _ = writeln!(summary, "added `{ns}` with {tools} tool{}", plural(*tools));
        }
    }
    if settings.json {
        eprint!("{summary}");
    } else {
        print_stdout(&summary)?;
    }
    review::review(settings, store, &to_review, yes)?;
    for ns in &outcome.need_auth {
        eprintln!(
            "`{ns}` needs its credential in the hub before calls reach it: run `capabilities hub auth {ns}`"
        );
    }
    for ns in &outcome.unreachable {
        let url = plan
            .proposals
            .iter()
            .find(|p| p.spec.namespace == *ns)
            .and_then(|p| match &p.spec.transport {
                SourceTransport::Http { url, .. } => Some(url.clone()),
                _ => None,
            })
            .unwrap_or_default();
        eprintln!(
            "`{ns}` was not added: its server did not answer; add it later with `capabilities hub add {url}`"
        );
    }
    for ns in &outcome.need_sign_in {
        eprintln!(
            "`{ns}` signs in with OAuth: run `capabilities hub auth {ns}` to sign in and read its tools"
        );
    }
    for (ns, _) in &outcome.failed {
        eprintln!("`{ns}` was not added; fix what the error says, then run `capabilities hub import` again");
    }
    if !outcome.added.is_empty() {
        eprintln!(
            "the harnesses still reach these servers directly: run `capabilities hub connect --replace` \
             to point them at the hub, turn off the direct entries it imported and take the credentials \
             now in the keychain out of their files (it keeps a backup; `capabilities rollback` undoes it), \
             or `capabilities hub connect` to only add the hub beside them"
        );
    }
    Ok(outcome)
}

/// The credentials to list a proposal's tools with: the plain values its harness file holds,
/// and the variables it names from this shell's environment.
fn credentials_for(proposal: &Proposal) -> Credentials {
    let mut values: Vec<(String, String)> =
        proposal.secrets.iter().map(|s| (s.slot.clone(), s.value.clone())).collect();
    for (slot, var) in &proposal.from_env {
        if let Ok(value) = std::env::var(var) {
            values.push((slot.clone(), value));
        }
    }
    if values.is_empty() && sources::connections_for(&proposal.spec).connections.is_empty() {
        Credentials::default()
    } else {
        Credentials { connection: Some("default".to_owned()), values }
    }
}

/// Copies one credential found in plain text into the keychain (or the hub's fallback file
/// when no keychain answers), for connection `connection` of source `namespace`. Returns
/// whether it was stored; a value the hub would refuse is left for `hub auth`. The value is
/// never logged or printed.
pub fn store_imported_secret(
    store: &Store,
    namespace: &str,
    connection: &str,
    slot: &str,
    value: &str,
) -> Result<bool> {
    if crate::secrets::check_value(slot, value).is_err() {
        return Ok(false);
    }
    let secrets = crate::secrets::SecretStore::open(store).map_err(|e| anyhow::anyhow!("{e}"))?;
    secrets
        .set(&crate::secrets::SlotKey { namespace, connection, slot }, value)
        .map_err(|e| anyhow::anyhow!("storing a credential of `{namespace}`: {e}"))?;
    Ok(true)
}

/// Reads `harnesses` under `home` and proposes one source per distinct server.
pub fn plan(home: &std::path::Path, harnesses: &[&'static Descriptor], config: &HubConfig) -> Plan {
    let mut plan = Plan::default();
    let existing: Vec<(String, String)> = config
        .sources
        .iter()
        .map(|(record, _, _)| (read::spec_identity(&record.spec), record.spec.namespace.clone()))
        .collect();
    let mut taken: BTreeSet<String> = existing.iter().map(|(_, ns)| ns.clone()).collect();
    let mut found: Vec<(String, String, Converted, String)> = Vec::new();
    // Project-scope files are read in the current directory, beside each harness's user file.
    let cwd = std::env::current_dir().ok();
    let mut files: Vec<(&'static Descriptor, std::path::PathBuf, Option<String>)> = Vec::new();
    for harness in harnesses {
        files.push((harness, harness.config_path(home), None));
        if let Some(path) = cwd.as_deref().and_then(|dir| harness.project_path(dir, home)) {
            let scope = format!("project {}", cwd.as_deref().unwrap_or(home).display());
            files.push((harness, path, Some(scope)));
        }
    }
    for (harness, path, scope) in files {
        let doc = match read::load_path(harness, &path) {
            Ok(Some((_, doc))) => doc,
            Ok(None) => continue,
            Err(err) => {
                plan.problems.push(format!("{err:#}"));
                continue;
            }
        };
        let mut entries = read::entries(harness, &doc);
        if let Some(scope) = &scope {
            for entry in &mut entries {
                entry.scope = scope.clone();
            }
        }
        match plan.read.iter_mut().find(|(id, _)| *id == harness.id) {
            Some((_, count)) => *count += entries.len(),
            None => plan.read.push((harness.id, entries.len())),
        }
        for entry in entries {
            let place = format!("{} ({}) {}", entry.harness, entry.scope, entry.name);
            if read::is_disabled(&entry.entry) {
                plan.skipped.push(format!("{place}: turned off in its harness"));
                continue;
            }
            match read::convert(&entry.entry) {
                Ok(converted) => found.push((entry.name, place, converted, entry.harness.to_owned())),
                Err(err) => plan.skipped.push(format!("{place}: {err}")),
            }
        }
    }
    for (name, place, converted, _) in found {
        let identity = read::identity(&converted.transport);
        if let Some((_, ns)) = existing.iter().find(|(id, _)| *id == identity) {
            plan.known.push((place, ns.clone()));
            continue;
        }
        if let Some(same) = plan.proposals.iter_mut().find(|p| read::spec_identity(&p.spec) == identity) {
            same.seen_in.push(place);
            for secret in converted.secrets {
                if !same.secrets.iter().any(|s| s.slot == secret.slot) {
                    same.secrets.push(secret);
                }
            }
            continue;
        }
        let namespace = unique(propose(&name, &converted.transport), &mut taken);
        let package = super::add_package::fetched_package(&converted.transport);
        plan.proposals.push(Proposal {
            package,
            verified: false,
            spec: SourceSpec { namespace: namespace.as_str().to_owned(), transport: converted.transport },
            seen_in: vec![place],
            secrets: converted.secrets,
            from_env: converted.from_env,
            notes: converted.note.into_iter().collect(),
        });
    }
    plan
}

/// Reads every skill folder of `harnesses` under `home` into `plan`: one proposal per digest,
/// the first of several skills sharing a name proposed and the others reported as conflicts.
fn plan_skills(home: &std::path::Path, harnesses: &[&'static Descriptor], store: &Store, plan: &mut Plan) {
    let library = crate::skills::Library::new(store);
    let in_hub = match library.list() {
        Ok(rows) => rows,
        Err(err) => {
            plan.problems.push(format!("{err:#}"));
            return;
        }
    };
    let cwd = std::env::current_dir().ok();
    for harness in harnesses {
        for (dir, path) in harness.skill_folders(home, cwd.as_deref()) {
            let folder = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
            let place = format!("{} {dir}/{folder}", harness.id);
            let skill = match crate::skills::scan(&path) {
                Ok(skill) => skill,
                Err(err) => {
                    plan.skills_skipped.push(format!("skill {place}: {err:#}"));
                    continue;
                }
            };
            if let Some((name, locked, _)) = in_hub.iter().find(|(name, _, _)| name == skill.name()) {
                if locked.as_ref().is_some_and(|l| l.digest == skill.digest) {
                    plan.skills_known.push((place, name.clone()));
                } else {
                    plan.skills_skipped.push(format!(
                        "skill {place}: the hub has a skill `{name}` with other files; left as it is \
                         (`capabilities hub skills add {} --replace` takes this one)",
                        path.display()
                    ));
                }
                continue;
            }
            if let Some(same) = plan.skills.iter_mut().find(|p| p.skill.digest == skill.digest) {
                same.seen_in.push(place);
                continue;
            }
            if let Some(first) = plan.skills.iter_mut().find(|p| p.skill.name() == skill.name()) {
                let first_place = first.seen_in[0].clone();
                first.conflicts.push(format!(
                    "{place} has other files ({}); importing the one from {first_place}",
                    short_digest(&skill.digest)
                ));
                continue;
            }
            plan.skills.push(SkillProposal { skill, path, seen_in: vec![place], conflicts: Vec::new() });
        }
    }
}

/// Adds the proposed skills to the hub's library, each whole or not at all.
fn import_skills(store: &Store, plan: &Plan, outcome: &mut Outcome) {
    let library = crate::skills::Library::new(store);
    for proposal in &plan.skills {
        let name = proposal.skill.name().to_owned();
        match library.install(&proposal.skill, &proposal.path.display().to_string(), false) {
            Ok(_) => outcome.skills_added.push(name),
            Err(err) => {
                eprintln!("could not add skill `{name}`: {err:#}");
                outcome.failed.push((format!("skill {name}"), format!("{err:#}")));
            }
        }
    }
}

fn short_digest(digest: &str) -> &str {
    &digest[..digest.len().min("sha256:".len() + 12)]
}

/// A namespace from the entry's name, or from its package or host when the name says nothing.
fn propose(name: &str, transport: &SourceTransport) -> Namespace {
    let from_name = Namespace::suggest(name);
    if from_name.as_str() == "source" { super::add::suggest(transport) } else { from_name }
}

/// `namespace`, or `namespace_2`, `namespace_3`… when taken.
fn unique(namespace: Namespace, taken: &mut BTreeSet<String>) -> Namespace {
    let base = namespace.as_str().to_owned();
    let mut candidate = namespace;
    let mut n = 2;
    while taken.contains(candidate.as_str()) {
        let mut stem = base.clone();
        let suffix = format!("_{n}");
        stem.truncate(capabilities_core::address::MAX_NAMESPACE_LEN.saturating_sub(suffix.len()));
        candidate = Namespace::new(&format!("{stem}{suffix}"))
            .unwrap_or_else(|_| Namespace::suggest(&format!("s{n}")));
        n += 1;
    }
    taken.insert(candidate.as_str().to_owned());
    candidate
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// The plan as text for people.
pub fn render_plan(plan: &Plan) -> String {
    let mut out = String::new();
    if plan.read.is_empty() && plan.problems.is_empty() && plan.skills.is_empty() {
        let _ = writeln!(out, "no harness config found under $HOME");
    }
    for (id, count) in &plan.read {
        let _ = writeln!(out, "read {id}: {count} server{}", plural(*count));
    }
    for problem in &plan.problems {
        let _ = writeln!(out, "problem: {problem}");
    }
    if !plan.proposals.is_empty() {
        let _ = writeln!(out, "\nto import:");
    }
    for proposal in &plan.proposals {
        let target = match &proposal.spec.transport {
            SourceTransport::Http { url, .. } => url.clone(),
            _ => sources::command_line(&proposal.spec).unwrap_or_default(),
        };
        let _ = writeln!(out, "  {}  {target}", proposal.spec.namespace);
        let _ = writeln!(out, "    from {}", proposal.seen_in.join(", "));
        if !proposal.secrets.is_empty() {
            let slots: Vec<&str> = proposal.secrets.iter().map(|s| s.slot.as_str()).collect();
            let _ = writeln!(out, "    credentials in plain text: {}", slots.join(", "));
        }
        for (slot, var) in &proposal.from_env {
            let _ = writeln!(out, "    credential {slot} from ${var}");
        }
        for note in &proposal.notes {
            let _ = writeln!(out, "    {note}");
        }
        if let Some((registry, reference, _)) = &proposal.package {
            let runner = if *registry == "npm" { "npx" } else { "uvx" };
            let _ = if proposal.verified {
                writeln!(
                    out,
                    "    installed verified instead of {runner}: {registry}:{reference} at an exact version, no \
                     install code run, integrity checked, isolated with no network"
                )
            } else {
                writeln!(
                    out,
                    "    {runner} fetches whatever version the registry serves at each start and runs it as you: \
                     `capabilities hub import --verified` installs {registry}:{reference} pinned and isolated instead"
                )
            };
        }
    }
    for (place, ns) in &plan.known {
        let _ = writeln!(out, "already in the hub as `{ns}`: {place}");
    }
    for skipped in &plan.skipped {
        let _ = writeln!(out, "skipped {skipped}");
    }
    if !plan.skills.is_empty() {
        let _ = writeln!(out, "{}skills to import:", if out.is_empty() { "" } else { "\n" });
    }
    for proposal in &plan.skills {
        let description = super::skills::one_line(&proposal.skill.front.description, 72);
        let _ = writeln!(out, "  {}  {description}", proposal.skill.name());
        let files = proposal.skill.files.len();
        let _ = writeln!(
            out,
            "    {files} file{}, {}, from {}",
            plural(files),
            short_digest(&proposal.skill.digest),
            proposal.seen_in.join(", ")
        );
        for conflict in &proposal.conflicts {
            let _ = writeln!(out, "    conflict: {conflict}");
        }
    }
    for (place, name) in &plan.skills_known {
        let _ = writeln!(out, "skill already in the hub as `{name}`: {place}");
    }
    for skipped in &plan.skills_skipped {
        let _ = writeln!(out, "skipped {skipped}");
    }
    out
}

fn plan_json(plan: &Plan) -> serde_json::Value {
    json!({
        "read": plan.read.iter().map(|(id, n)| json!({"harness": id, "servers": n})).collect::<Vec<_>>(),
        "proposals": plan.proposals.iter().map(|p| json!({
            "namespace": p.spec.namespace,
            "transport": p.spec.transport,
            "seenIn": p.seen_in,
            "plaintextCredentials": p.secrets.iter().map(|s| s.slot.clone()).collect::<Vec<_>>(),
            "credentialsFromEnv": p.from_env.iter().map(|(slot, var)| json!({"slot": slot, "variable": var})).collect::<Vec<_>>(),
            "npmPackage": p.package.as_ref().filter(|(r, _, _)| *r == "npm").map(|(_, reference, _)| reference),
            "pypiPackage": p.package.as_ref().filter(|(r, _, _)| *r == "pypi").map(|(_, reference, _)| reference),
            "verified": p.verified,
        })).collect::<Vec<_>>(),
        "known": plan.known.iter().map(|(place, ns)| json!({"entry": place, "namespace": ns})).collect::<Vec<_>>(),
        "skipped": plan.skipped,
        "problems": plan.problems,
        "skills": plan.skills.iter().map(|p| json!({
            "name": p.skill.name(),
            "description": p.skill.front.description,
            "digest": p.skill.digest,
            "files": p.skill.files.len(),
            "seenIn": p.seen_in,
            "conflicts": p.conflicts,
        })).collect::<Vec<_>>(),
        "skillsKnown": plan.skills_known.iter().map(|(place, name)| json!({"entry": place, "name": name})).collect::<Vec<_>>(),
        "skillsSkipped": plan.skills_skipped,
    })
}

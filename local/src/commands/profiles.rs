//! `capabilities hub profiles create|list|show|edit|remove`: named profiles, each serving some
//! of the hub's sources and tools with rules over its policy that only tighten.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::{Result, bail};
use capabilities_core::policy::{Effect, Rule};
use clap::{Args, Subcommand};
use serde_json::json;

use super::print_stdout;
use crate::config::HubConfig;
use crate::error::{Exit, UsageError};
use crate::profiles::{self, DEFAULT, Mode, Naming, Profile};
use crate::settings::Settings;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct ProfilesArgs {
    #[command(subcommand)]
    pub command: Option<ProfilesCommand>,
}

/// What a profile serves and tightens, as flags.
#[derive(Debug, Args)]
pub struct Shape {
    /// A namespace (`github`), a tool address (`github.searchIssues`), or either with `*`
    /// (`github.list*`); repeat or separate with commas.
    #[arg(long, value_delimiter = ',', value_name = "PATTERN")]
    pub serves: Vec<String>,
    /// Calls to this source or tool ask a person, whatever the hub's policy says.
    #[arg(long, value_name = "SOURCE|TOOL")]
    pub ask: Vec<String>,
    /// Calls to this source or tool are denied, and it is hidden from search.
    #[arg(long, value_name = "SOURCE|TOOL")]
    pub deny: Vec<String>,
    /// `code` serves search, describe and execute; `direct` lists each tool as its own MCP
    /// tool, for clients and models that do better that way.
    #[arg(long, value_enum)]
    pub mode: Option<Modes>,
    /// How direct mode names tools: `prefixed` (`github_search_issues`) or `bare` (the
    /// source's own names, for a profile of one source).
    #[arg(long, value_enum, value_name = "prefixed|bare")]
    pub names: Option<Names>,
}

/// `--mode`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Modes {
    Code,
    Direct,
}

impl From<Modes> for Mode {
    fn from(mode: Modes) -> Mode {
        match mode {
            Modes::Code => Mode::Code,
            Modes::Direct => Mode::Direct,
        }
    }
}

/// `--names`.
#[derive(Debug, Clone, Copy, clap::ValueEnum)]
pub enum Names {
    Prefixed,
    Bare,
}

impl From<Names> for Naming {
    fn from(names: Names) -> Naming {
        match names {
            Names::Prefixed => Naming::Prefixed,
            Names::Bare => Naming::Bare,
        }
    }
}

#[derive(Debug, Subcommand)]
pub enum ProfilesCommand {
    /// Make a profile: `--serves github,notes.read*`, tightened with `--ask` and `--deny`.
    Create {
        name: String,
        #[command(flatten)]
        shape: Shape,
    },
    /// List the profiles (`default` serves every source).
    List,
    /// Show one profile and the tools it serves.
    Show { name: String },
    /// Change a profile: `--serves` replaces what it serves; `--ask` and `--deny` add rules,
    /// `--clear-rules` drops the ones it had first.
    Edit {
        name: String,
        #[command(flatten)]
        shape: Shape,
        #[arg(long)]
        clear_rules: bool,
    },
    /// Remove a profile. Harnesses connected with it stop working until connected again.
    Remove { name: String },
}

pub fn run(settings: &Settings, args: ProfilesArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let usage = |e: anyhow::Error| -> anyhow::Error { UsageError(format!("{e:#}")).into() };
    match args.command.unwrap_or(ProfilesCommand::List) {
        ProfilesCommand::Create { name, shape } => {
            profiles::check_name(&name).map_err(usage)?;
            if profiles::load(&store, &name)?.is_some() {
                bail!(UsageError(format!(
                    "profile `{name}` exists already: change it with `capabilities hub profiles edit {name}`"
                )));
            }
            if shape.serves.is_empty() {
                bail!(UsageError(format!(
                    "say what `{name}` serves: --serves github, --serves github.search*, or --serves '*'"
                )));
            }
            let profile = Profile {
                rules: rules(&[], &shape).map_err(usage)?,
                mode: shape.mode.map(Mode::from).unwrap_or_default(),
                naming: shape.names.map(Naming::from).unwrap_or_default(),
                ..Profile::serving(&name, shape.serves.clone())
            };
            write(settings, &store, &profile, "created")
        }
        ProfilesCommand::Edit { name, shape, clear_rules } => {
            if name == DEFAULT {
                bail!(UsageError(
                    "`default` is built in and serves every source; create another profile instead"
                        .to_owned()
                ));
            }
            let Some(mut profile) = profiles::load(&store, &name)? else {
                bail!(UsageError(format!(
                    "there is no profile `{name}`; `capabilities hub profiles` lists them"
                )));
            };
            if !shape.serves.is_empty() {
                profile.serves = shape.serves.clone();
            }
            if let Some(mode) = shape.mode {
                profile.mode = mode.into();
            }
            if let Some(names) = shape.names {
                profile.naming = names.into();
            }
            let kept = if clear_rules { Vec::new() } else { profile.rules.clone() };
            profile.rules = rules(&kept, &shape).map_err(usage)?;
            write(settings, &store, &profile, "changed")
        }
        ProfilesCommand::Remove { name } => {
            if name == DEFAULT {
                bail!(UsageError("`default` is built in and cannot be removed".to_owned()));
            }
            profiles::check_name(&name).map_err(usage)?;
            let path = store.root().join(profiles::profile_path(&name));
            match std::fs::remove_file(&path) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                    bail!(UsageError(format!(
                        "there is no profile `{name}`; `capabilities hub profiles` lists them"
                    )))
                }
                Err(e) => bail!("removing {}: {e}", path.display()),
            }
            if settings.json {
                print_stdout(&format!("{}\n", json!({ "removed": name })))?;
            } else {
                print_stdout(&format!("removed profile `{name}`\n"))?;
            }
            Ok(Exit::Ok.into())
        }
        ProfilesCommand::Show { name } => {
            let profile = profiles::require(&store, &name).map_err(usage)?;
            let config = HubConfig::load(&store);
            let catalog = profiles::catalog(&profile, &config);
            let tools: Vec<String> = catalog.tools().map(|(address, _)| address.to_string()).collect();
            let unmatched = profiles::unmatched(&profile, &config);
            if settings.json {
                let mut value = summary(&profile);
                value["tools"] = json!(tools);
                value["unmatched"] = json!(unmatched);
                if let Some(names) = direct_names(settings, &profile)? {
                    value["listed"] = names
                        .iter()
                        .map(|(name, address)| (name.clone(), json!(address)))
                        .collect::<serde_json::Map<_, _>>()
                        .into();
                }
                return print_stdout(&format!("{}\n", serde_json::to_string_pretty(&value)?))
                    .map(|()| Exit::Ok.into());
            }
            let mut text = describe(&profile);
            let _ = writeln!(text, "tools ({}):", tools.len());
            match direct_names(settings, &profile)? {
                // Direct mode: the name each tool is listed under, beside its address.
                Some(names) => {
                    let width = names.iter().map(|(n, _)| n.len()).max().unwrap_or(0);
                    for (name, address) in &names {
                        let _ = writeln!(text, "  {name:<width$}  {address}");
                    }
                }
                None => {
                    for tool in &tools {
                        let _ = writeln!(text, "  {tool}");
                    }
                }
            }
            for pattern in unmatched {
                let _ = writeln!(text, "warning: `{pattern}` matches no tool of the hub");
            }
            print_stdout(&text)?;
            Ok(Exit::Ok.into())
        }
        ProfilesCommand::List => {
            let mut all = Vec::new();
            for name in profiles::names(&store) {
                match profiles::load(&store, &name) {
                    Ok(Some(profile)) => all.push(Ok(profile)),
                    Ok(None) => {}
                    Err(err) => all.push(Err((name, format!("{err:#}")))),
                }
            }
            if settings.json {
                let list: Vec<_> = all
                    .iter()
                    .map(|p| match p {
                        Ok(p) => summary(p),
                        Err((name, why)) => json!({ "name": name, "unreadable": why }),
                    })
                    .collect();
                return print_stdout(&format!("{}\n", serde_json::to_string_pretty(&list)?))
                    .map(|()| Exit::Ok.into());
            }
            let mut text = String::new();
            for p in &all {
                match p {
                    Ok(p) => text.push_str(&describe(p)),
                    Err((name, why)) => {
                        let _ = writeln!(text, "{name}: cannot be read: {why}");
                    }
                }
            }
            print_stdout(&text)?;
            Ok(Exit::Ok.into())
        }
    }
}

/// `kept` with the shape's `--ask` and `--deny` rules, each replacing a kept rule on the same
/// target.
fn rules(kept: &[Rule], shape: &Shape) -> Result<Vec<Rule>> {
    let mut rules = kept.to_vec();
    let asks = shape.ask.iter().map(|t| (t, Effect::Ask));
    for (target, effect) in asks.chain(shape.deny.iter().map(|t| (t, Effect::Deny))) {
        let rule = Profile::rule(target, effect)?;
        rules.retain(|r| r.target != rule.target || r.connection.is_some());
        rules.push(rule);
    }
    Ok(rules)
}

fn write(settings: &Settings, store: &Store, profile: &Profile, done: &str) -> Result<ExitCode> {
    profile.check().map_err(|e| UsageError(format!("{e:#}")))?;
    let config = HubConfig::load(store);
    let unmatched = profiles::unmatched(profile, &config);
    if !unmatched.is_empty() {
        let sources: Vec<String> =
            config.sources.iter().map(|(s, _, _)| s.spec.namespace.to_string()).collect();
        bail!(UsageError(format!(
            "{} no tool of the hub; its sources are {}",
            unmatched.iter().map(|p| format!("`{p}`")).collect::<Vec<_>>().join(", ")
                + if unmatched.len() == 1 { " matches" } else { " match" },
            if sources.is_empty() { "none yet".to_owned() } else { sources.join(", ") }
        )));
    }
    profiles::save(store, profile)?;
    let tools = profiles::catalog(profile, &config).tools().count();
    if settings.json {
        let mut value = summary(profile);
        value["tools"] = json!(tools);
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&value)?))?;
    } else {
        print_stdout(&format!(
            "{done} profile `{}`: {tools} tool{}; serve it with `capabilities hub serve --stdio --profile {}`\n",
            profile.name,
            if tools == 1 { "" } else { "s" },
            profile.name
        ))?;
    }
    Ok(Exit::Ok.into())
}

/// In direct mode, the name each tool the profile serves is listed under, with its address
/// (policy's denied tools are not listed).
fn direct_names(settings: &Settings, profile: &Profile) -> Result<Option<Vec<(String, String)>>> {
    if profile.mode != Mode::Direct {
        return Ok(None);
    }
    let host = crate::host::Host::open_profile(&settings.home, &profile.name)?;
    Ok(host
        .direct()
        .map(|d| d.tools.iter().map(|(name, address)| (name.to_owned(), address.to_string())).collect()))
}

/// A profile as `--json` shows it.
fn summary(p: &Profile) -> serde_json::Value {
    let mut value = json!({ "name": p.name, "serves": p.serves, "rules": p.rules, "mode": p.mode.as_str() });
    if p.mode == Mode::Direct {
        value["names"] = json!(p.naming);
    }
    value
}

fn describe(p: &Profile) -> String {
    let mode = match (p.mode, p.naming) {
        (Mode::Code, _) => String::new(),
        (Mode::Direct, Naming::Prefixed) => "  (direct)".to_owned(),
        (Mode::Direct, Naming::Bare) => "  (direct, bare names)".to_owned(),
    };
    let mut text = format!("{}  serves {}{mode}\n", p.name, p.serves.join(", "));
    for rule in &p.rules {
        let _ = writeln!(text, "  {} {}", rule.effect, rule.target);
    }
    text
}

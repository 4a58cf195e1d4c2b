//! `capabilities docs-data` (hidden): what the site generates its reference pages from, as one
//! JSON document on stdout — the command tree from clap's own definitions, the three tools'
//! definitions and the server instructions from core's surface, the default limits, and the
//! harness descriptors with the entry `hub connect` writes into each. `cargo xtask site` runs it,
//! so the pages cannot drift from the binary.

use std::process::ExitCode;

use anyhow::Result;
use capabilities_core::limits::Limits;
use capabilities_core::surface::tools;
use clap::{ArgAction, CommandFactory};
use serde_json::{Value, json};

use super::print_stdout;
use crate::cli::Cli;
use crate::harness::edit::HubEntry;
use crate::harness::{Format, HARNESSES, Support, Tier};

/// The path the harness snippets show for the binary; `hub connect` writes the real one.
const BINARY: &str = "/path/to/capabilities";

pub fn run() -> Result<ExitCode> {
    let limits = Limits::DEFAULT;
    let data = json!({
        "cli": command(&Cli::command(), &[]),
        "tools": tools::definitions(&limits),
        "instructions": tools::INSTRUCTIONS,
        "limits": limits,
        "limitDocs": limit_docs(),
        "harnesses": harnesses(),
    });
    print_stdout(&format!("{}\n", serde_json::to_string_pretty(&data)?))?;
    Ok(ExitCode::SUCCESS)
}

/// One command and its subcommands, hidden ones left out.
fn command(cmd: &clap::Command, parents: &[&str]) -> Value {
    let mut path: Vec<&str> = parents.to_vec();
    path.push(cmd.get_name());
    let args: Vec<Value> = cmd
        .get_arguments()
        .filter(|a| !a.is_hide_set() && !matches!(a.get_id().as_str(), "help" | "version"))
        .map(argument)
        .collect();
    let subcommands: Vec<Value> =
        cmd.get_subcommands().filter(|c| !c.is_hide_set()).map(|c| command(c, &path)).collect();
    json!({
        "name": cmd.get_name(),
        "path": path.join(" "),
        "about": cmd.get_about().map(|s| s.to_string()),
        "longAbout": cmd.get_long_about().map(|s| s.to_string()),
        "usage": usage(cmd, &path),
        "args": args,
        "subcommands": subcommands,
    })
}

/// clap's usage line with the whole command path in front (a subcommand renders only its name).
fn usage(cmd: &clap::Command, path: &[&str]) -> String {
    let rendered = cmd.clone().render_usage().to_string();
    let rendered = rendered.trim_start_matches("Usage: ");
    let rest = rendered.split_once(' ').map_or("", |(_, rest)| rest);
    format!("{} {rest}", path.join(" ")).trim_end().to_owned()
}

fn argument(arg: &clap::Arg) -> Value {
    let takes_value = !matches!(
        arg.get_action(),
        ArgAction::SetTrue | ArgAction::SetFalse | ArgAction::Count | ArgAction::Help | ArgAction::Version
    );
    let values: Vec<String> = match takes_value {
        true => arg.get_value_names().unwrap_or_default().iter().map(|v| v.to_string()).collect(),
        false => Vec::new(),
    };
    let possible: Vec<String> = match takes_value {
        true => arg
            .get_possible_values()
            .iter()
            .filter(|v| !v.is_hide_set())
            .map(|v| v.get_name().to_owned())
            .collect(),
        false => Vec::new(),
    };
    let defaults: Vec<String> = match takes_value {
        true => arg.get_default_values().iter().map(|v| v.to_string_lossy().into_owned()).collect(),
        false => Vec::new(),
    };
    json!({
        "id": arg.get_id().as_str(),
        "long": arg.get_long(),
        "short": arg.get_short().map(String::from),
        "positional": arg.is_positional(),
        "required": arg.is_required_set(),
        "global": arg.is_global_set(),
        "takesValue": takes_value,
        "valueNames": values,
        "possibleValues": possible,
        "defaults": defaults,
        "env": arg.get_env().map(|e| e.to_string_lossy().into_owned()),
        "help": arg.get_long_help().or(arg.get_help()).map(|s| s.to_string()),
    })
}

/// Each limit's field name with the doc comment it carries in `core/src/limits.rs` (read at
/// build time, so the table follows the code).
fn limit_docs() -> Value {
    let source = include_str!("../../../core/src/limits.rs");
    let mut docs = serde_json::Map::new();
    let mut pending: Vec<&str> = Vec::new();
    let mut last = String::new();
    let mut inside = false;
    for line in source.lines() {
        let line = line.trim();
        if line.starts_with("pub struct Limits") {
            inside = true;
            continue;
        }
        if !inside {
            continue;
        }
        if line == "}" {
            break;
        }
        if let Some(doc) = line.strip_prefix("///") {
            pending.push(doc.trim());
        } else if let Some(field) = line.strip_prefix("pub ").and_then(|l| l.split(':').next()) {
            // A field without its own comment shares the one above (`search_max_limit`).
            if !pending.is_empty() {
                last = pending.join(" ");
                pending.clear();
            }
            docs.insert(camel(field), last.clone().into());
        }
    }
    Value::Object(docs)
}

fn camel(snake: &str) -> String {
    let mut out = String::new();
    let mut upper = false;
    for c in snake.chars() {
        if c == '_' {
            upper = true;
        } else if upper {
            out.extend(c.to_uppercase());
            upper = false;
        } else {
            out.push(c);
        }
    }
    out
}

fn harnesses() -> Vec<Value> {
    let entry = HubEntry {
        command: BINARY.to_owned(),
        args: ["hub", "serve", "--stdio", "--profile", "default"].map(String::from).to_vec(),
        env: Vec::new(),
    };
    HARNESSES
        .iter()
        .map(|h| {
            json!({
                "id": h.id,
                "name": h.name,
                "config": format!("~/{}", h.config),
                "project": h.project,
                "format": match h.format {
                    Format::Json => "json",
                    Format::Toml => "toml",
                    Format::Yaml => "yaml",
                },
                "writes": h.support == Support::ReadWrite,
                "tier": match h.tier {
                    Tier::Verified => "verified",
                    Tier::Documented => "documented",
                    Tier::BestEffort => "best effort",
                },
                "lists": h.lists,
                "skills": h.skills,
                "snippet": entry.snippet(h),
            })
        })
        .collect()
}

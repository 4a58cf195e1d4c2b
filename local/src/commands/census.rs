//! `capabilities list`: the census across the hub and the harnesses — the hub's sources and
//! skills, and for each harness found on this machine whether it points at the hub, which
//! other MCP servers it still runs itself, and how many skills its folders hold. Read only.
//! (`capabilities doctor` is `hub doctor`, which checks the same places.)

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::{Value, json};

use super::print_stdout;
use crate::config::HubConfig;
use crate::error::Exit;
use crate::harness::{self, edit, read};
use crate::settings::Settings;
use crate::skills::Library;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct CensusArgs {}

pub fn run(settings: &Settings, _args: CensusArgs) -> Result<ExitCode> {
    let home = harness::home_dir()?;
    let hub = if settings.home.join("hub.json").exists() {
        let store = Store::open(&settings.home)?;
        let config = HubConfig::load(&store);
        let skills: Vec<Value> = Library::new(&store)
            .list()
            .unwrap_or_default()
            .into_iter()
            .map(|(name, _, status)| json!({ "name": name, "status": status.word() }))
            .collect();
        json!({
            "home": settings.home,
            "sources": super::list::source_rows(&config),
            "skills": skills,
            "problems": config.problems,
        })
    } else {
        Value::Null
    };
    let harnesses: Vec<Value> = harness::HARNESSES
        .iter()
        .filter(|h| h.present(&home))
        .map(|h| {
            let (state, servers, problem) = match read::load(h, &home) {
                Ok(Some((_, doc))) => {
                    let servers: Vec<Value> = read::entries(h, &doc)
                        .into_iter()
                        .map(|f| json!({ "name": f.name, "scope": f.scope, "off": read::is_disabled(&f.entry) }))
                        .collect();
                    let state = if edit::find_entry(h, &doc).is_some() { "connected" } else { "not connected" };
                    (state, servers, None)
                }
                Ok(None) => ("no file yet", Vec::new(), None),
                Err(err) => ("unreadable", Vec::new(), Some(format!("{err:#}"))),
            };
            json!({
                "harness": h.id,
                "name": h.name,
                "path": h.config_path(&home),
                "state": state,
                "servers": servers,
                "skills": h.skill_folders(&home, None).len(),
                "problem": problem,
            })
        })
        .collect();
    let census = json!({ "hub": hub, "harnesses": harnesses });
    if settings.json {
        print_stdout(&format!("{}\n", serde_json::to_string_pretty(&census)?))?;
    } else {
        print_stdout(&describe(&census))?;
    }
    Ok(Exit::Ok.into())
}

/// The census in a person's words.
fn describe(census: &Value) -> String {
    let mut out = String::new();
    let list = |v: &Value| v.as_array().cloned().unwrap_or_default();
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    match census["hub"].as_object() {
        None => out.push_str("hub: none yet (`capabilities hub init` creates it)\n"),
        Some(hub) => {
            let sources = list(&hub["sources"]);
            let _ = writeln!(out, "hub {}: {} source(s)", text(&hub["home"]), sources.len());
            for source in &sources {
                let tools =
                    source["tools"].as_u64().map_or("no manifest".to_owned(), |n| format!("{n} tools"));
                let _ = writeln!(
                    out,
                    "  {:<16} {:<8} {tools}",
                    text(&source["namespace"]),
                    text(&source["transport"])
                );
            }
            let skills = list(&hub["skills"]);
            if !skills.is_empty() {
                let names: Vec<String> = skills
                    .iter()
                    .map(|s| match s["status"].as_str() {
                        Some("ok") | None => text(&s["name"]),
                        Some(status) => format!("{} ({status})", text(&s["name"])),
                    })
                    .collect();
                let _ = writeln!(out, "  skills: {}", names.join(", "));
            }
            for problem in list(&hub["problems"]) {
                let _ = writeln!(out, "  problem: {}", text(&problem));
            }
        }
    }
    let harnesses = list(&census["harnesses"]);
    if harnesses.is_empty() {
        out.push_str("harnesses: none found on this machine\n");
    }
    for h in &harnesses {
        let _ = writeln!(out, "{} ({}): {}", text(&h["name"]), text(&h["path"]), text(&h["state"]));
        let servers: Vec<String> = list(&h["servers"])
            .iter()
            .map(|s| if s["off"] == true { format!("{} (off)", text(&s["name"])) } else { text(&s["name"]) })
            .collect();
        if !servers.is_empty() {
            let _ = writeln!(out, "  its own servers: {}", servers.join(", "));
        }
        if let Some(n) = h["skills"].as_u64().filter(|n| *n > 0) {
            let _ = writeln!(out, "  skills in its folders: {n}");
        }
        if let Some(problem) = h["problem"].as_str() {
            let _ = writeln!(out, "  {problem}");
        }
    }
    if harnesses.iter().any(|h| h["state"] == "not connected") {
        out.push_str("point the others at the hub with `capabilities hub connect`\n");
    }
    out
}

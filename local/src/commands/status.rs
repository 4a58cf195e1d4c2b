//! `capabilities hub status`: the hosted hub signed in to — the account and tenant, the last
//! push, each source's health there, the profiles and skills it serves and the calls waiting for
//! a person (decided in its inbox).

use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::Value;

use super::print_stdout;
use crate::error::Exit;
use crate::hosted::{self, Hosted};
use crate::settings::Settings;
use crate::store::Store;

#[derive(Debug, Args)]
pub struct StatusArgs {}

pub fn run(settings: &Settings, _args: StatusArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let link = Hosted::open(&store)?;
    let status = hosted::runtime()?.block_on(link.ok("/hub/status", None))?;
    if settings.json {
        print_stdout(&format!("{status}\n"))?;
    } else {
        print_stdout(&describe(&link.login.hub, &status))?;
    }
    Ok(Exit::Ok.into())
}

/// The status in a person's words.
fn describe(hub: &str, status: &Value) -> String {
    let text = |v: &Value| v.as_str().unwrap_or("?").to_owned();
    let who = status["name"].as_str().unwrap_or_else(|| status["account"].as_str().unwrap_or("?"));
    let mut out = format!("{hub}: signed in as {who} (tenant {})\n", text(&status["tenant"]));
    match status["lastPush"].as_object() {
        Some(push) => out.push_str(&format!(
            "last push: {} sources, {} tools, at {} ({})\n",
            push["sources"],
            push["tools"],
            when(push["atMs"].as_u64().unwrap_or(0)),
            text(&push["hash"])
        )),
        None => out.push_str("last push: none yet (run `capabilities hub push`)\n"),
    }
    let sources = status["sources"].as_array().cloned().unwrap_or_default();
    out.push_str(&format!("sources: {}\n", sources.len()));
    for source in &sources {
        let last = match source["lastCall"].as_object() {
            Some(call) => format!(", last call {} → {}", text(&call["address"]), text(&call["outcome"])),
            None => String::new(),
        };
        let missing: Vec<String> = source["connections"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| {
                let name = text(&c["name"]);
                c["missing"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .map(move |m| format!("{name} {}", text(&m)))
            })
            .collect();
        let missing = if missing.is_empty() {
            String::new()
        } else {
            format!(", no value for {} (`capabilities hub push --secrets`)", missing.join(", "))
        };
        out.push_str(&format!(
            "  {:<16} {:<13} {} tools{last}{missing}\n",
            text(&source["namespace"]),
            text(&source["health"]),
            source["tools"]
        ));
    }
    let profiles = status["profiles"].as_array().cloned().unwrap_or_default();
    if profiles.is_empty() {
        out.push_str("profiles: default only (`capabilities hub profiles create`, then push)\n");
    } else {
        out.push_str(&format!("profiles: default and {}\n", profiles.len()));
        for profile in &profiles {
            let serves: Vec<String> = profile["serves"].as_array().into_iter().flatten().map(text).collect();
            let rules = match profile["rules"].as_u64().unwrap_or(0) {
                0 => String::new(),
                n => format!(", {n} rule{}", plural(n as usize)),
            };
            let url = profile["url"].as_str().map(|u| format!(" at {u}")).unwrap_or_default();
            out.push_str(&format!(
                "  {:<16} {:<6} serves {}{rules}{url}\n",
                text(&profile["name"]),
                text(&profile["mode"]),
                serves.join(", ")
            ));
        }
    }
    for problem in status["unreadableProfiles"].as_array().into_iter().flatten() {
        out.push_str(&format!("  {}\n", text(problem)));
    }
    let skills: Vec<String> =
        status["skills"].as_array().into_iter().flatten().map(|s| text(&s["name"])).collect();
    if skills.is_empty() {
        out.push_str("skills: none there (`capabilities hub skills add`, then push)\n");
    } else {
        out.push_str(&format!("skills: {}\n", skills.join(", ")));
    }
    let waiting = status["waiting"].as_array().cloned().unwrap_or_default();
    let calls: usize = waiting.iter().map(|w| w["pending"].as_array().map_or(0, Vec::len)).sum();
    if calls == 0 {
        out.push_str("waiting for you: nothing\n");
    } else {
        out.push_str(&format!(
            "waiting for you: {calls} call{} in {} run{}",
            plural(calls),
            waiting.len(),
            plural(waiting.len())
        ));
        if let Some(inbox) = status["inbox"].as_str() {
            out.push_str(&format!("; decide them at {inbox}"));
        }
        out.push('\n');
        for run in &waiting {
            for call in run["pending"].as_array().into_iter().flatten() {
                out.push_str(&format!(
                    "  {} call {}: {}\n",
                    text(&run["runId"]),
                    call["call"],
                    text(&call["address"])
                ));
            }
        }
    }
    out
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// Milliseconds since the epoch as UTC, to the minute.
fn when(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (y, m, d) = capabilities_core::approval::state::civil_date(days as i64);
    format!("{y:04}-{m:02}-{d:02} {:02}:{:02} UTC", rest / 3600, rest % 3600 / 60)
}

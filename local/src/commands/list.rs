//! `capabilities hub list`: the sources, with their transport, tool count and connections.

use std::fmt::Write as _;
use std::process::ExitCode;

use anyhow::Result;
use clap::Args;
use serde_json::json;

use super::print_stdout;
use super::review;
use crate::config::HubConfig;
use crate::error::Exit;
use crate::settings::Settings;
use crate::sources;
use crate::store::Store;
use crate::upstream::SourceTransport;

#[derive(Debug, Args)]
pub struct ListArgs {}

pub fn run(settings: &Settings, _args: ListArgs) -> Result<ExitCode> {
    let store = Store::open(&settings.home)?;
    let config = HubConfig::load(&store);
    for problem in &config.problems {
        eprintln!("warning: {problem}");
    }
    let rows = source_rows(&config);
    if settings.json {
        return print_stdout(&format!("{}\n", serde_json::to_string_pretty(&rows)?))
            .map(|()| Exit::Ok.into());
    }
    if rows.is_empty() {
        eprintln!(
            "no sources yet; add one with `capabilities hub add <url>` or `capabilities hub add -- <command>`"
        );
        return Ok(Exit::Ok.into());
    }
    let mut out = String::new();
    for row in &rows {
        let tools = row["tools"].as_u64().map_or("no manifest".to_owned(), |n| format!("{n} tools"));
        let connections: Vec<&str> =
            row["connections"].as_array().into_iter().flatten().filter_map(|c| c.as_str()).collect();
        let _ = write!(
            out,
            "{}  {}  {tools}",
            row["namespace"].as_str().unwrap_or(""),
            row["transport"].as_str().unwrap_or("")
        );
        if row["unreviewed"].as_u64().unwrap_or(0) > 0 {
            let _ = write!(out, " ({} unreviewed)", row["unreviewed"]);
        }
        if !connections.is_empty() {
            let _ = write!(out, "  connections: {}", connections.join(", "));
        }
        let _ = writeln!(out, "\n  {}", row["target"].as_str().unwrap_or(""));
    }
    print_stdout(&out)?;
    Ok(Exit::Ok.into())
}

/// One row per source: namespace, transport, what it runs or reaches, tools, unreviewed tools
/// and connections (`hub list` and the census `capabilities list`).
pub fn source_rows(config: &HubConfig) -> Vec<serde_json::Value> {
    let mut rows = Vec::new();
    for (record, manifest, connections) in &config.sources {
        let (transport, target) = match &record.spec.transport {
            SourceTransport::Stdio { .. } => {
                ("stdio", sources::command_line(&record.spec).unwrap_or_default())
            }
            SourceTransport::Http { url, .. } => ("http", url.clone()),
            SourceTransport::OpenApi(api) => ("openapi", api.base_url.clone()),
        };
        let unreviewed =
            manifest.as_ref().map(|m| review::needs_review(m, &config.policy, None).len()).unwrap_or(0);
        rows.push(json!({
            "namespace": record.spec.namespace,
            "transport": transport,
            "target": target,
            "tools": manifest.as_ref().map(|m| m.tools.len()),
            "unreviewed": unreviewed,
            "connections": connections.connections.iter().map(|c| c.name.clone()).collect::<Vec<_>>(),
        }));
    }
    rows
}

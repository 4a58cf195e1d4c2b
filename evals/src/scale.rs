//! The hub's fixed surface as the tool count grows: recorded real tool lists
//! (`core/tests/data/tools/*.json`) added as sources until the hub holds 100, 250 and 500
//! tools, against what loading the same definitions directly would cost.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result, bail};
use capabilities_core::tokens;
use serde::Serialize;
use serde_json::{Value, json};

use crate::modes::Setup;
use crate::rpc::Peer;

/// The tool counts the surface is measured at.
pub const SCALES: [usize; 3] = [100, 250, 500];
const RECORDED: [&str; 5] = ["github", "playwright", "everything", "filesystem", "memory"];

#[derive(Debug, Clone, Serialize)]
pub struct ScalePoint {
    pub tools: usize,
    pub sources: usize,
    /// `hub serve`'s instructions and tool definitions.
    pub hub_surface_tokens: usize,
    /// The same tools' definitions, loaded directly.
    pub direct_tokens: usize,
}

pub fn measure(setup: &Setup) -> Result<Vec<ScalePoint>> {
    let home = setup.work.join("scale-hub");
    let state = setup.work.join("scale-state.json");
    let lists: Vec<(String, Vec<Value>)> = RECORDED
        .iter()
        .map(|name| {
            let path = setup.repo.join(format!("core/tests/data/tools/{name}.json"));
            let raw: Value = serde_json::from_slice(
                &std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?,
            )?;
            let list =
                raw.as_array().cloned().or_else(|| raw["tools"].as_array().cloned()).unwrap_or_default();
            Ok((name.to_string(), list))
        })
        .collect::<Result<_>>()?;
    let mut points = Vec::new();
    let (mut tools, mut sources, mut direct) = (0usize, 0usize, Vec::new());
    let mut round = 1;
    'scales: for target in SCALES {
        while tools < target {
            for (name, list) in &lists {
                if tools >= target {
                    break;
                }
                let take = list.len().min(target - tools);
                let namespace = if round == 1 { name.clone() } else { format!("{name}_{round}") };
                add(setup, &home, &state, &namespace, name, take)?;
                for tool in &list[..take] {
                    let tool_name = format!("{namespace}__{}", tool["name"].as_str().unwrap_or_default());
                    direct.push(json!({"name": tool_name, "description": tool["description"], "input_schema": tool["inputSchema"]}));
                }
                tools += take;
                sources += 1;
            }
            round += 1;
            if round > 50 {
                break 'scales;
            }
        }
        points.push(ScalePoint {
            tools,
            sources,
            hub_surface_tokens: surface(setup, &home)?,
            direct_tokens: tokens::count(&Value::Array(direct.clone()).to_string()),
        });
    }
    Ok(points)
}

fn hub(setup: &Setup, home: &Path) -> Command {
    let mut cmd = Command::new(&setup.bin);
    cmd.env("CAPABILITIES_HOME", home).env("CAPABILITIES_KEYCHAIN", "file").env("NO_COLOR", "1");
    cmd
}

fn add(setup: &Setup, home: &Path, state: &Path, namespace: &str, list: &str, limit: usize) -> Result<()> {
    let out = hub(setup, home)
        .args(["hub", "add", "--yes", "--namespace", namespace])
        .arg("--env")
        .arg(format!("FIXTURE_STATE={}", state.display()))
        .arg("--env")
        .arg(format!(
            "REPLAY_TOOLS={}",
            setup.repo.join(format!("core/tests/data/tools/{list}.json")).display()
        ))
        .arg("--env")
        .arg(format!("REPLAY_LIMIT={limit}"))
        .args(["--", "node"])
        .arg(setup.repo.join("evals/fixtures/servers/replay.mjs"))
        .output()
        .context("running capabilities hub add")?;
    if !out.status.success() {
        bail!(
            "adding the recorded `{list}` tools as `{namespace}` failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    Ok(())
}

fn surface(setup: &Setup, home: &Path) -> Result<usize> {
    let mut cmd = hub(setup, home);
    cmd.args(["hub", "serve", "--stdio"]);
    let (mut serve, init) = Peer::start("capabilities hub serve", cmd)?;
    let listed = serve.request("tools/list", json!({}))?;
    serve.stop();
    let tools: Vec<Value> = listed["tools"]
        .as_array()
        .into_iter()
        .flatten()
        .map(
            |t| json!({"name": t["name"], "description": t["description"], "input_schema": t["inputSchema"]}),
        )
        .collect();
    let text = format!("{}\n{}", init["instructions"].as_str().unwrap_or_default(), Value::Array(tools));
    Ok(tokens::count(&text))
}

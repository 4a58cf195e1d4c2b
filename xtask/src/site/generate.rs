//! The generated sections of the site's pages. A page holds `<!-- generated:NAME -->` …
//! `<!-- /generated:NAME -->`; what lies between is written here, from `capabilities docs-data`
//! (clap's command tree, core's tool definitions, instructions and limits, the harness
//! descriptors), from `site/glossary.toml` and `site/status.toml`, and from the benchmark data
//! in `site/data/` (`bench-serve.json`, which `cargo xtask bench-serve` writes, and `peers.toml`,
//! the other hubs' figures with where each was measured). The sections are committed, so a reader
//! of the repository sees them too, and `--check` compares.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::Deserialize;
use serde_json::Value;

/// A page that holds generated sections, as it should read.
#[derive(Debug, Clone)]
pub struct Source {
    /// Relative to `site/`.
    pub path: String,
    pub text: String,
    /// It differs from the file on disk.
    pub stale: bool,
}

const OPEN: &str = "<!-- generated:";
const CLOSE: &str = "<!-- /generated:";

pub fn is_marker(line: &str) -> bool {
    let line = line.trim();
    line.starts_with(OPEN) || line.starts_with(CLOSE)
}

/// Every page with generated sections, regenerated.
pub fn apply(site: &Path, data: &Value) -> Result<Vec<Source>> {
    let inputs = Inputs {
        data,
        glossary: toml::from_str(&read(site, "glossary.toml")?).context("reading site/glossary.toml")?,
        status: toml::from_str(&read(site, "status.toml")?).context("reading site/status.toml")?,
        bench: serde_json::from_str(&read(site, "data/bench-serve.json")?)
            .context("reading site/data/bench-serve.json")?,
        peers: toml::from_str(&read(site, "data/peers.toml")?).context("reading site/data/peers.toml")?,
        peers_bench: serde_json::from_str(&read(site, "data/peers-bench.json")?)
            .context("reading site/data/peers-bench.json")?,
    };
    let mut paths = Vec::new();
    super::collect_md(site, site, &mut paths)?;
    let mut out = Vec::new();
    for path in paths {
        let old = read(site, &path)?;
        if !old.contains(OPEN) {
            continue;
        }
        let text = regenerate(&old, &inputs).with_context(|| format!("generating site/{path}"))?;
        out.push(Source { stale: text != old, path, text });
    }
    Ok(out)
}

fn read(site: &Path, rel: &str) -> Result<String> {
    std::fs::read_to_string(site.join(rel)).with_context(|| format!("reading site/{rel}"))
}

struct Inputs<'a> {
    data: &'a Value,
    glossary: Glossary,
    status: Status,
    bench: Value,
    peers: Peers,
    /// What `local/benches/peers.mjs --out` wrote: another hub measured here.
    peers_bench: Value,
}

/// `site/data/peers.toml`: figures measured elsewhere, each run with its source.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Peers {
    run: Vec<PeerRun>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerRun {
    id: String,
    source: String,
    method: String,
    date: String,
    path: Vec<PeerPath>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct PeerPath {
    what: String,
    #[serde(default)]
    median_ms: Option<f64>,
    ratio: f64,
}

/// `site/glossary.toml`: the project's words, each with one meaning and a fixed anchor.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Glossary {
    term: Vec<Term>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Term {
    id: String,
    term: String,
    definition: String,
    #[serde(default)]
    not: Vec<String>,
}

/// `site/status.toml`: what works (with the tests that show it) and what is planned.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Status {
    area: Vec<Area>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Area {
    name: String,
    item: Vec<Item>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Item {
    what: String,
    status: String,
    /// The tests that back an `available` item (paths in the repository).
    #[serde(default)]
    tests: Vec<String>,
    #[serde(default)]
    note: Option<String>,
}

fn regenerate(text: &str, inputs: &Inputs) -> Result<String> {
    let mut out = String::new();
    let mut lines = text.lines();
    while let Some(line) = lines.next() {
        out.push_str(line);
        out.push('\n');
        let Some(name) = line.trim().strip_prefix(OPEN).and_then(|l| l.strip_suffix("-->")) else { continue };
        let name = name.trim();
        let close = format!("{CLOSE}{name} -->");
        if !lines.any(|l| l.trim() == close) {
            bail!("`{OPEN}{name} -->` has no `{close}`");
        }
        out.push('\n');
        out.push_str(section(name, inputs)?.trim_end());
        out.push_str("\n\n");
        out.push_str(&close);
        out.push('\n');
    }
    Ok(out)
}

fn section(name: &str, inputs: &Inputs) -> Result<String> {
    let data = inputs.data;
    Ok(match name {
        "cli" => cli(&data["cli"]),
        "mcp-instructions" => {
            format!("```text\n{}\n```\n", data["instructions"].as_str().unwrap_or_default())
        }
        "mcp-tools" => tools(&data["tools"])?,
        "mcp-limits" => limits(&data["limits"], &data["limitDocs"]),
        "harnesses" => harnesses(&data["harnesses"]),
        "connect-snippets" => connect_snippets(&data["harnesses"])?,
        "glossary" => glossary(&inputs.glossary),
        "status" => status(&inputs.status)?,
        "bench-serve" => bench_serve(&inputs.bench)?,
        "bench-peers" => bench_peers(&inputs.bench, &inputs.peers_bench, &inputs.peers)?,
        other => bail!("no generator is called `{other}`"),
    })
}

/// Text for one table cell: on one line, `|` escaped, and `<` outside code spans escaped so
/// help text such as `--port <port>` stays text instead of becoming an HTML tag.
fn cell(text: &str) -> String {
    let text = text.replace('|', "\\|").split_whitespace().collect::<Vec<_>>().join(" ");
    text.split('`')
        .enumerate()
        .map(|(i, part)| if i % 2 == 0 { part.replace('<', "\\<") } else { part.to_owned() })
        .collect::<Vec<_>>()
        .join("`")
}

fn s<'a>(v: &'a Value, key: &str) -> &'a str {
    v[key].as_str().unwrap_or_default()
}

fn cli(root: &Value) -> String {
    let mut out = String::new();
    command(root, 2, &mut out);
    out
}

fn command(cmd: &Value, level: usize, out: &mut String) {
    out.push_str(&format!("{} `{}`\n\n", "#".repeat(level.min(6)), s(cmd, "path")));
    let about = cmd["longAbout"].as_str().or(cmd["about"].as_str()).unwrap_or_default();
    if !about.is_empty() {
        let about = about.trim_end_matches('.');
        out.push_str(&format!("{about}.\n\n"));
    }
    out.push_str(&format!("```text\n{}\n```\n\n", s(cmd, "usage")));
    let args: Vec<&Value> = cmd["args"].as_array().map(|a| a.iter().collect()).unwrap_or_default();
    if !args.is_empty() {
        out.push_str("| Argument | What it does |\n| --- | --- |\n");
        for arg in args {
            out.push_str(&format!("| {} | {} |\n", arg_name(arg), arg_help(arg)));
        }
        out.push('\n');
    }
    for sub in cmd["subcommands"].as_array().into_iter().flatten() {
        command(sub, level + 1, out);
    }
}

fn arg_name(arg: &Value) -> String {
    let values: Vec<&str> =
        arg["valueNames"].as_array().into_iter().flatten().filter_map(Value::as_str).collect();
    let value = values.iter().map(|v| format!("<{v}>")).collect::<Vec<_>>().join(" ");
    let name = if arg["positional"].as_bool() == Some(true) {
        if value.is_empty() { format!("<{}>", s(arg, "id").to_uppercase()) } else { value }
    } else {
        let mut name = format!("--{}", s(arg, "long"));
        if let Some(short) = arg["short"].as_str() {
            name = format!("-{short}, {name}");
        }
        if arg["takesValue"].as_bool() == Some(true) && !value.is_empty() {
            name = format!("{name} {value}");
        }
        name
    };
    format!("`{}`", name.replace('|', "\\|"))
}

fn arg_help(arg: &Value) -> String {
    let mut help = cell(arg["help"].as_str().unwrap_or_default());
    if !help.is_empty() && !help.ends_with('.') && !help.ends_with(')') {
        help.push('.');
    }
    let mut extra = Vec::new();
    if arg["required"].as_bool() == Some(true) {
        extra.push("Required.".to_owned());
    }
    let possible: Vec<String> = arg["possibleValues"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|v| format!("`{v}`"))
        .collect();
    if !possible.is_empty() {
        extra.push(format!("One of {}.", possible.join(", ")));
    }
    let defaults: Vec<String> = arg["defaults"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(|v| format!("`{v}`"))
        .collect();
    if !defaults.is_empty() {
        extra.push(format!("Default {}.", defaults.join(", ")));
    }
    if let Some(env) = arg["env"].as_str() {
        extra.push(format!("Also read from `{env}`."));
    }
    if arg["global"].as_bool() == Some(true) {
        extra.push("Accepted by every command.".to_owned());
    }
    [help].into_iter().chain(extra).filter(|p| !p.is_empty()).collect::<Vec<_>>().join(" ")
}

fn tools(tools: &Value) -> Result<String> {
    let mut out = String::new();
    for tool in tools.as_array().context("docs-data has no tools")? {
        let name = s(tool, "name");
        out.push_str(&format!("### `{name}`\n\n{}\n\n", s(tool, "description")));
        let hints: Vec<String> = tool["annotations"]
            .as_object()
            .into_iter()
            .flatten()
            .map(|(k, v)| format!("`{k}: {v}`"))
            .collect();
        if !hints.is_empty() {
            out.push_str(&format!("Annotations: {}.\n\n", hints.join(", ")));
        }
        out.push_str(&format!(
            "Input schema:\n\n```json\n{}\n```\n\n",
            serde_json::to_string_pretty(&tool["inputSchema"])?
        ));
        if tool.get("outputSchema").is_some() {
            out.push_str(&format!(
                "Output schema (the envelope):\n\n```json\n{}\n```\n\n",
                serde_json::to_string_pretty(&tool["outputSchema"])?
            ));
        }
    }
    Ok(out)
}

fn limits(limits: &Value, docs: &Value) -> String {
    let mut out = String::from("| Limit | Default | What it bounds |\n| --- | --- | --- |\n");
    for (key, value) in limits.as_object().into_iter().flatten() {
        let n = value.as_u64().unwrap_or_default();
        let shown = if key.ends_with("Bytes") {
            bytes(n)
        } else if key.ends_with("Ms") {
            millis(n)
        } else {
            group(n)
        };
        out.push_str(&format!("| `{key}` | {shown} | {} |\n", cell(docs[key].as_str().unwrap_or_default())));
    }
    out
}

fn group(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

fn bytes(n: u64) -> String {
    if n >= 1 << 20 && n.is_multiple_of(1 << 20) {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n.is_multiple_of(1 << 10) {
        format!("{} KiB", n >> 10)
    } else {
        format!("{} B", group(n))
    }
}

fn millis(n: u64) -> String {
    match n {
        n if n >= 3_600_000 && n.is_multiple_of(3_600_000) => format!("{} h", n / 3_600_000),
        n if n >= 1000 && n.is_multiple_of(1000) => format!("{} s", group(n / 1000)),
        n => format!("{} ms", group(n)),
    }
}

fn fence(format: &str) -> &str {
    match format {
        "toml" => "toml",
        "yaml" => "yaml",
        _ => "json",
    }
}

fn harnesses(list: &Value) -> String {
    let mut out = String::from(
        "| Harness | `--client` | User config | `hub connect` | Tier | Skills folder |\n| --- | --- | --- | --- | --- | --- |\n",
    );
    let list: Vec<&Value> = list.as_array().into_iter().flatten().collect();
    for h in &list {
        let skills: Vec<String> = h["skills"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .map(|p| format!("`~/{p}`"))
            .collect();
        out.push_str(&format!(
            "| [{}](#{}) | `{}` | `{}` | {} | {} | {} |\n",
            cell(s(h, "name")),
            s(h, "id"),
            s(h, "id"),
            s(h, "config"),
            if h["writes"].as_bool() == Some(true) { "writes the entry" } else { "prints a snippet" },
            s(h, "tier"),
            if skills.is_empty() { "none".to_owned() } else { skills.join(", ") }
        ));
    }
    out.push('\n');
    for h in &list {
        out.push_str(&format!("### {} {{#{}}}\n\n", s(h, "name"), s(h, "id")));
        let project =
            h["project"].as_str().map(|p| format!(" Its project file is `{p}`.")).unwrap_or_default();
        let lists = h["lists"].as_str().map(|l| format!(" `{l}` shows what it loaded.")).unwrap_or_default();
        let how = if h["writes"].as_bool() == Some(true) {
            format!("`capabilities hub connect --client {}` writes this entry", s(h, "id"))
        } else {
            format!("`capabilities hub connect --client {}` prints this entry to paste", s(h, "id"))
        };
        out.push_str(&format!("{how} into `{}`.{project}{lists}\n\n", s(h, "config")));
        out.push_str(&format!("```{}\n{}\n```\n\n", fence(s(h, "format")), s(h, "snippet")));
    }
    out
}

fn connect_snippets(list: &Value) -> Result<String> {
    let mut out = String::new();
    for id in ["claude-code", "codex", "cursor"] {
        let h = list
            .as_array()
            .into_iter()
            .flatten()
            .find(|h| h["id"] == id)
            .with_context(|| format!("no harness descriptor `{id}`"))?;
        out.push_str(&format!(
            "### {}\n\nIn `{}`:\n\n```{}\n{}\n```\n\n",
            s(h, "name"),
            s(h, "config"),
            fence(s(h, "format")),
            s(h, "snippet")
        ));
    }
    Ok(out)
}

fn glossary(glossary: &Glossary) -> String {
    let mut out = String::new();
    for term in &glossary.term {
        out.push_str(&format!("### {} {{#{}}}\n\n{}\n", term.term, term.id, term.definition.trim()));
        if !term.not.is_empty() {
            let not: Vec<String> = term.not.iter().map(|n| format!("“{n}”")).collect();
            out.push_str(&format!("\nNot called {}.\n", not.join(" or ")));
        }
        out.push('\n');
    }
    out
}

fn status(status: &Status) -> Result<String> {
    let root = crate::workspace_root();
    let mut out = String::new();
    for area in &status.area {
        out.push_str(&format!("### {}\n\n| What | Status | Shown by |\n| --- | --- | --- |\n", area.name));
        for item in &area.item {
            let label = match item.status.as_str() {
                "available" => "Available",
                "partial" => "Partly available",
                "planned" => "Planned",
                other => bail!("status `{other}` of “{}” is not available, partial or planned", item.what),
            };
            if item.status != "planned" && item.tests.is_empty() {
                bail!("“{}” is {} but names no test that shows it", item.what, item.status);
            }
            for test in &item.tests {
                let file = test.split("::").next().unwrap_or(test);
                if !root.join(file).exists() {
                    bail!("“{}” names `{file}`, which does not exist", item.what);
                }
            }
            let tests: Vec<String> = item.tests.iter().map(|t| format!("`{t}`")).collect();
            let mut shown = tests.join(", ");
            if let Some(note) = &item.note {
                shown = if shown.is_empty() { cell(note) } else { format!("{shown}; {}", cell(note)) };
            }
            out.push_str(&format!("| {} | {label} | {shown} |\n", cell(&item.what)));
        }
        out.push('\n');
    }
    Ok(out)
}

/// A number the bench file must hold.
fn num(v: &Value, path: &str) -> Result<f64> {
    path.split('.').fold(v, |v, key| &v[key]).as_f64().with_context(|| {
        format!("site/data/bench-serve.json has no number at `{path}`: run `cargo xtask bench-serve`")
    })
}

/// What `cargo xtask bench-serve` measured: where, when and how, then its tables.
fn bench_serve(bench: &Value) -> Result<String> {
    let r = &bench["results"];
    let date = bench["date"].as_str().context("site/data/bench-serve.json has no `date`")?;
    let command = bench["command"].as_str().context("site/data/bench-serve.json has no `command`")?;
    let mut out = format!(
        "Measured on {date} on {} with {} CPUs by `{command}` (`cargo xtask bench-serve`, release \
         build), over a hub with {} stdio sources; medians and 90th percentiles of {} rounds.\n\n",
        bench["machine"]["arch"].as_str().context("site/data/bench-serve.json has no `machine.arch`")?,
        num(bench, "machine.nproc")?,
        num(r, "sources")?,
        num(bench, "rounds")?,
    );
    out.push_str("### One call through the hub\n\n| Path | Median | p90 | × the direct call |\n| --- | --- | --- | --- |\n");
    let row = |out: &mut String, what: &str, key: &str, ratio: f64| -> Result<()> {
        out.push_str(&format!(
            "| {what} | {} ms | {} ms | {ratio:.2}× |\n",
            num(r, &format!("{key}.median"))?,
            num(r, &format!("{key}.p90"))?
        ));
        Ok(())
    };
    row(&mut out, "`tools/call` sent straight to the memory server", "direct_tools_call_ms", 1.0)?;
    row(
        &mut out,
        "`execute` of one call through the hub",
        "execute_one_call_ms",
        num(r, "ratio_of_medians")?,
    )?;
    row(
        &mut out,
        "the same `tools/call` through `relay.c`, the least any program in the middle adds",
        "relay_tools_call_ms",
        num(r, "relay_ratio_of_medians")?,
    )?;
    row(
        &mut out,
        "`tools/call` sent straight, alongside the next row",
        "http_direct_tools_call_alongside_ms",
        1.0,
    )?;
    row(
        &mut out,
        "`execute` of one call through `hub serve --http`",
        "http_execute_one_call_ms",
        num(r, "http_ratio_of_medians")?,
    )?;
    row(
        &mut out,
        "`tools/call` sent straight, alongside the next row",
        "direct_tools_call_alongside_ms",
        1.0,
    )?;
    row(
        &mut out,
        "`tools/call` through a direct-mode profile",
        "direct_mode_call_ms",
        num(r, "direct_mode_ratio_of_medians")?,
    )?;
    out.push_str(
        "\n### Start and memory\n\n| Measure | Median | p90 | Samples |\n| --- | --- | --- | --- |\n",
    );
    for (what, key, unit) in [
        ("Process start to `initialize` answered", "start_to_initialize_ms", "ms"),
        ("Process start to `tools/list` answered", "start_to_tools_list_ms", "ms"),
        ("Resident memory when idle", "idle_rss_mb", "MB"),
    ] {
        out.push_str(&format!(
            "| {what} | {} {unit} | {} {unit} | {} |\n",
            num(r, &format!("{key}.median"))?,
            num(r, &format!("{key}.p90"))?,
            num(r, &format!("{key}.n"))?
        ));
    }
    out.push_str(
        "\n### `tools/list` of a direct-mode profile, warm\n\n\
         | Operations | Tools | Answer | Answer in (median) | Answer parsed (median) |\n\
         | --- | --- | --- | --- | --- |\n",
    );
    for (what, key) in [
        ("500 of the usual size", "direct_mode_tools_list_500_typical"),
        ("GitHub's REST API, about 500", "direct_mode_tools_list_500"),
        ("GitHub's REST API, all", "direct_mode_tools_list_all"),
    ] {
        out.push_str(&format!(
            "| {what} | {} | {} | {} ms | {} ms |\n",
            group(num(r, &format!("{key}.tools"))? as u64),
            bytes(num(r, &format!("{key}.bytes"))? as u64),
            num(r, &format!("{key}.received_ms.median"))?,
            num(r, &format!("{key}.ms.median"))?
        ));
    }
    Ok(out)
}

/// The comparison: this repository's latest `execute` ratio beside the figures in `peers.toml`,
/// each row naming where it was measured.
fn bench_peers(bench: &Value, measured: &Value, peers: &Peers) -> Result<String> {
    let date = bench["date"].as_str().context("site/data/bench-serve.json has no `date`")?;
    let mut out =
        String::from("| Path | Median | × the direct call | Measured by |\n| --- | --- | --- | --- |\n");
    out.push_str(&format!(
        "| capabilities `execute` of one call | {} ms | {:.2}× | `bench-serve`, {date} (table above) |\n",
        num(&bench["results"], "execute_one_call_ms.median")?,
        num(&bench["results"], "ratio_of_medians")?
    ));
    let peer = &measured["result"];
    out.push_str(&format!(
        "| {} `tools/call` through it, over {} | {} ms | {:.2}× | `peers.mjs`, {} (direct call {} ms) |\n",
        cell(peer["peer"].as_str().context("site/data/peers-bench.json has no `result.peer`")?),
        cell(peer["transport"].as_str().unwrap_or("?")),
        num(peer, "through_peer_ms")?,
        num(peer, "ratio_of_medians")?,
        cell(measured["date"].as_str().context("site/data/peers-bench.json has no `date`")?),
        num(peer, "direct_ms")?
    ));
    for run in &peers.run {
        if run.path.is_empty() {
            bail!("run `{}` in site/data/peers.toml has no path", run.id);
        }
        for path in &run.path {
            let median = path.median_ms.map_or("not recorded".to_owned(), |ms| format!("{ms} ms"));
            out.push_str(&format!(
                "| {} | {median} | {:.2}× | quoted from `{}`, below |\n",
                cell(&path.what),
                path.ratio,
                cell(&run.id)
            ));
        }
    }
    out.push_str("\n### Where the quoted figures come from\n\n");
    for run in &peers.run {
        out.push_str(&format!(
            "- `{}`: {}. {}. Date: {}.\n",
            run.id,
            cell(&run.source),
            cell(&run.method),
            cell(&run.date)
        ));
    }
    Ok(out)
}

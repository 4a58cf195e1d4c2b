//! Search quality: natural queries with the tools they mean (`evals/queries/`), ranked by the
//! core's index over the eval fixture sources and the recorded real tool lists, scored as
//! recall@1, recall@5 and mean reciprocal rank.
//!
//! The ranking is the core's, the same natively and in the Worker, so measuring it here
//! measures both hubs; `invariants` holds the two to byte-identical answers.

use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result, bail};
use capabilities_core::address::Namespace;
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::index::{FieldWeight, Index, Ranking};
use capabilities_core::manifest::Manifest;
use serde::Serialize;
use serde_json::Value;

/// The held-out set must reach these; `tests/search.rs` holds them.
pub const MIN_RECALL_AT_5: f64 = 0.90;
pub const MIN_MRR: f64 = 0.75;
/// Ranks past this count as a miss in the reciprocal rank.
pub const DEPTH: usize = 25;

/// The recorded real tool lists, by the namespace each is added as.
const RECORDED: [&str; 5] = ["everything", "filesystem", "github", "memory", "playwright"];

/// Which tools a query is ranked against.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum CatalogName {
    /// The five eval fixture sources (tracker, chat, calendar, docs, crm).
    Fixtures,
    /// The recorded real tool lists in `core/tests/data/tools/`.
    Recorded,
    /// Both together.
    All,
}

impl CatalogName {
    fn parse(name: &str) -> Option<CatalogName> {
        Some(match name {
            "fixtures" => CatalogName::Fixtures,
            "recorded" => CatalogName::Recorded,
            "all" => CatalogName::All,
            _ => return None,
        })
    }
}

/// One natural query and the tools that answer it (any of them counts).
#[derive(Debug, Clone, Serialize)]
pub struct Query {
    pub catalog: CatalogName,
    pub text: String,
    pub expect: Vec<String>,
}

/// Reads a query file: `[catalog]` headers, then `query => address[, address]` lines; `#`
/// starts a comment line.
pub fn load(path: &Path) -> Result<Vec<Query>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let mut catalog = None;
    let mut queries = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = || format!("{}:{}", path.display(), n + 1);
        if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
            catalog = Some(
                CatalogName::parse(name).with_context(|| format!("{}: unknown catalog `{name}`", at()))?,
            );
            continue;
        }
        let Some(catalog) = catalog else { bail!("{}: a query before any [catalog] header", at()) };
        let Some((query, expect)) = line.split_once(" => ") else {
            bail!("{}: expected `query => address`", at())
        };
        let expect: Vec<String> = expect.split(',').map(|a| a.trim().to_owned()).collect();
        queries.push(Query { catalog, text: query.trim().to_owned(), expect });
    }
    Ok(queries)
}

/// The three catalogs and their indexes.
pub struct Catalogs {
    fixtures: (Catalog, Index),
    recorded: (Catalog, Index),
    all: (Catalog, Index),
}

impl Catalogs {
    /// The fixture sources from `evals/fixtures/tools.json` (which `fixtures/tasks.mjs` writes
    /// from the servers) and the recorded lists from `core/tests/data/tools/`, indexed with the
    /// default ranking.
    pub fn load(repo: &Path) -> Result<Catalogs> {
        let fixtures_path = repo.join("evals/fixtures/tools.json");
        let text = std::fs::read_to_string(&fixtures_path)
            .with_context(|| format!("reading {}", fixtures_path.display()))?;
        let lists: serde_json::Map<String, Value> = serde_json::from_str(&text)?;
        let mut fixtures = Vec::new();
        for (name, tools) in &lists {
            fixtures.push(source(name, tools)?);
        }
        let mut recorded = Vec::new();
        for name in RECORDED {
            let path = repo.join(format!("core/tests/data/tools/{name}.json"));
            let text =
                std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
            recorded.push(source(name, &serde_json::from_str(&text)?)?);
        }
        let all: Vec<SourceView> = fixtures.iter().chain(&recorded).cloned().collect();
        let indexed = |sources: Vec<SourceView>| {
            let catalog = Catalog::new(sources);
            let index = Index::build(&catalog);
            (catalog, index)
        };
        Ok(Catalogs { fixtures: indexed(fixtures), recorded: indexed(recorded), all: indexed(all) })
    }

    /// The same catalogs indexed with `ranking`.
    pub fn with(&self, ranking: Ranking) -> Catalogs {
        let indexed =
            |(catalog, _): &(Catalog, Index)| (catalog.clone(), Index::build_with(catalog, ranking));
        Catalogs {
            fixtures: indexed(&self.fixtures),
            recorded: indexed(&self.recorded),
            all: indexed(&self.all),
        }
    }

    pub fn get(&self, name: CatalogName) -> (&Catalog, &Index) {
        let (catalog, index) = match name {
            CatalogName::Fixtures => &self.fixtures,
            CatalogName::Recorded => &self.recorded,
            CatalogName::All => &self.all,
        };
        (catalog, index)
    }
}

fn source(namespace: &str, tools: &Value) -> Result<SourceView> {
    let entries = tools.as_array().with_context(|| format!("{namespace}: the tool list is not an array"))?;
    let namespace = Namespace::new(namespace).map_err(|e| anyhow::anyhow!("{namespace}: {e}"))?;
    let (manifest, problems) = Manifest::from_tools_list(namespace, entries);
    if !problems.is_empty() {
        bail!("{}: {problems:?}", manifest.namespace);
    }
    Ok(SourceView { manifest, connections: Vec::new(), default_connection: None })
}

/// Where one query's first right tool came.
#[derive(Debug, Clone, Serialize)]
pub struct Ranked {
    pub query: Query,
    /// 1-based; `None` when no right tool is in the first [`DEPTH`].
    pub rank: Option<usize>,
    /// The first five tools, best first.
    pub top: Vec<String>,
}

/// Ranks every query against its catalog.
pub fn rank(catalogs: &Catalogs, queries: &[Query]) -> Vec<Ranked> {
    queries
        .iter()
        .map(|query| {
            let (_, index) = catalogs.get(query.catalog);
            let hits = index.search(&query.text, None, DEPTH).hits;
            let addresses: Vec<String> = hits.iter().map(|h| h.address.to_string()).collect();
            let rank = addresses.iter().position(|a| query.expect.contains(a)).map(|p| p + 1);
            Ranked { query: query.clone(), rank, top: addresses.into_iter().take(5).collect() }
        })
        .collect()
}

/// Recall@1, recall@5 and MRR over a query set.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Figures {
    pub queries: usize,
    pub recall_at_1: f64,
    pub recall_at_5: f64,
    pub mrr: f64,
}

impl Figures {
    pub fn of(ranked: &[Ranked]) -> Figures {
        let n = ranked.len().max(1) as f64;
        let within = |k: usize| ranked.iter().filter(|r| r.rank.is_some_and(|p| p <= k)).count() as f64 / n;
        let mrr = ranked.iter().map(|r| r.rank.map_or(0.0, |p| 1.0 / p as f64)).sum::<f64>() / n;
        Figures { queries: ranked.len(), recall_at_1: within(1), recall_at_5: within(5), mrr }
    }

    /// Whether the held-out gate holds.
    pub fn passes(&self) -> bool {
        self.recall_at_5 >= MIN_RECALL_AT_5 && self.mrr >= MIN_MRR
    }
}

impl std::fmt::Display for Figures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} queries: recall@1 {:.3}, recall@5 {:.3}, MRR {:.3}",
            self.queries, self.recall_at_1, self.recall_at_5, self.mrr
        )
    }
}

/// The figures of today's index before this ranking (commit 243933f: a suffix-stripping
/// stemmer, no vocabulary, no values field), on the same sets.
pub const BEFORE: [(&str, Figures); 2] = [
    ("tuning", Figures { queries: 86, recall_at_1: 0.279, recall_at_5: 0.523, mrr: 0.390 }),
    ("held-out", Figures { queries: 115, recall_at_1: 0.348, recall_at_5: 0.609, mrr: 0.472 }),
];

/// The report of both sets, as committed in `evals/results/search.md`.
pub fn report(tuning: &[Ranked], held_out: &[Ranked]) -> String {
    let mut out = String::new();
    let held = Figures::of(held_out);
    let _ = writeln!(
        out,
        "# Search: natural queries\n\n\
         Written by `evals/tests/search.rs` (`UPDATE_EXPECT=1 cargo test -p capabilities-evals --test search`\n\
         rewrites it). Each query in `evals/queries/` is ranked by the core's index, which both hubs run, over\n\
         its catalog: the five eval fixture sources (80 tools), the recorded real tool lists in\n\
         `core/tests/data/tools/` (93 tools), or both. A query counts at the rank of the first tool it means.\n\
         The tuning set tunes `Ranking::DEFAULT` (`cargo run -p capabilities-evals --bin evals -- --tune`);\n\
         the held-out set never does, and holds the gate.\n"
    );
    let _ = writeln!(out, "## Gate\n");
    let mark = |ok: bool| if ok { "pass" } else { "FAIL" };
    let _ = writeln!(
        out,
        "- {} **held-out recall@5**: {:.3}, needs {MIN_RECALL_AT_5:.2}",
        mark(held.recall_at_5 >= MIN_RECALL_AT_5),
        held.recall_at_5
    );
    let _ = writeln!(
        out,
        "- {} **held-out MRR**: {:.3}, needs {MIN_MRR:.2}\n",
        mark(held.mrr >= MIN_MRR),
        held.mrr
    );
    let _ = writeln!(out, "## Figures\n");
    let _ = writeln!(
        out,
        "| set | catalog | queries | recall@1 | recall@5 | MRR |\n|---|---|---:|---:|---:|---:|"
    );
    for (name, ranked) in [("held-out", held_out), ("tuning", tuning)] {
        let parts = [
            ("all queries", None),
            ("fixtures", Some(CatalogName::Fixtures)),
            ("recorded", Some(CatalogName::Recorded)),
            ("both", Some(CatalogName::All)),
        ];
        for (label, catalog) in parts {
            let part: Vec<Ranked> =
                ranked.iter().filter(|r| catalog.is_none_or(|c| r.query.catalog == c)).cloned().collect();
            let f = Figures::of(&part);
            let _ = writeln!(
                out,
                "| {name} | {label} | {} | {:.3} | {:.3} | {:.3} |",
                f.queries, f.recall_at_1, f.recall_at_5, f.mrr
            );
        }
    }
    let _ = writeln!(out, "\nBefore this ranking (commit 243933f), on the same queries:\n");
    let _ = writeln!(out, "| set | queries | recall@1 | recall@5 | MRR |\n|---|---:|---:|---:|---:|");
    for (name, f) in BEFORE {
        let _ = writeln!(
            out,
            "| {name} | {} | {:.3} | {:.3} | {:.3} |",
            f.queries, f.recall_at_1, f.recall_at_5, f.mrr
        );
    }
    let _ = writeln!(
        out,
        "\n## Tuning queries outside the first five\n\n\
         Held-out queries are not listed, so that reading this report tunes nothing on them.\n"
    );
    let misses = misses(tuning);
    let _ = writeln!(out, "```text\n{}```", if misses.is_empty() { "none\n".to_owned() } else { misses });
    out
}

/// Every query of a set that missed the top five, with what came instead.
pub fn misses(ranked: &[Ranked]) -> String {
    let mut out = String::new();
    for r in ranked.iter().filter(|r| r.rank.is_none_or(|p| p > 5)) {
        let rank = r.rank.map_or("-".to_owned(), |p| p.to_string());
        let _ = writeln!(
            out,
            "{:>2}  {} => {}: {}",
            rank,
            r.query.text,
            r.query.expect.join(", "),
            r.top.join(" ")
        );
    }
    out
}

/// What tuning maximises: MRR, with recall@5 beside it (a right tool on the first screen
/// matters as much as its place there).
fn objective(figures: &Figures) -> f64 {
    figures.mrr + 0.5 * figures.recall_at_5
}

/// The least gain in the objective that moves a knob.
const MIN_GAIN: f64 = 0.002;

/// A knob of [`Ranking`] and the values tuning tries for it.
struct Knob {
    name: &'static str,
    get: fn(&Ranking) -> f32,
    set: fn(&mut Ranking, f32),
    /// Weights scale by factors; `b` and stand-in factors take values from a fixed range.
    values: fn(f32) -> Vec<f32>,
}

fn scaled(v: f32) -> Vec<f32> {
    [0.5, 0.7, 0.85, 1.2, 1.4, 2.0].iter().map(|f| v * f).collect()
}

fn unit(v: f32) -> Vec<f32> {
    let mut out: Vec<f32> = [0.0, 0.25, 0.5, 0.75, 1.0].to_vec();
    out.extend([v - 0.1, v + 0.1].into_iter().filter(|x| (0.0..=1.0).contains(x)));
    out
}

fn boost(v: f32) -> Vec<f32> {
    let mut out: Vec<f32> = [1.0, 1.15, 1.3, 1.5, 2.0, 3.0].to_vec();
    out.extend([v * 0.9, v * 1.1]);
    out
}

macro_rules! knobs {
    ($($name:literal: $($path:ident).+ => $values:ident),* $(,)?) => {
        vec![$(Knob {
            name: $name,
            get: |r| r.$($path).+,
            set: |r, v| r.$($path).+ = v,
            values: $values,
        }),*]
    };
}

fn knobs() -> Vec<Knob> {
    knobs![
        "name.weight": name.weight => scaled,
        "name.b": name.b => unit,
        "namespace.weight": namespace.weight => scaled,
        "description.weight": description.weight => scaled,
        "description.b": description.b => unit,
        "param_names.weight": param_names.weight => scaled,
        "param_names.b": param_names.b => unit,
        "param_descriptions.weight": param_descriptions.weight => scaled,
        "param_descriptions.b": param_descriptions.b => unit,
        "values.weight": values.weight => scaled,
        "values.b": values.b => unit,
        "source.weight": source.weight => scaled,
        "source.b": source.b => unit,
        "k1": k1 => scaled,
        "prefix": prefix => unit,
        "synonym": synonym => unit,
        "broader": broader => unit,
        "common": common => unit,
        "plural": plural => unit,
        "named": named => boost,
        "specific": specific => unit,
        "action": action => boost,
        "coordination": coordination => unit,
    ]
}

/// Coordinate ascent over [`Ranking`]'s knobs on `queries` (the tuning set; never the held-out
/// one), from `start`: each knob in turn takes the value that scores best, until a pass changes
/// nothing. `each` hears every improvement.
pub fn tune(
    catalogs: &Catalogs,
    queries: &[Query],
    start: Ranking,
    mut each: impl FnMut(&str, f32, &Figures),
) -> Ranking {
    let score = |ranking: Ranking| Figures::of(&rank(&catalogs.with(ranking), queries));
    let mut best = start;
    let mut best_figures = score(best);
    let mut best_objective = objective(&best_figures);
    for _pass in 0..6 {
        let mut changed = false;
        for knob in knobs() {
            for value in (knob.values)((knob.get)(&best)) {
                let value = (value * 1000.0).round() / 1000.0;
                let mut candidate = best;
                (knob.set)(&mut candidate, value);
                let figures = score(candidate);
                // Better by at least a query's step up in rank, so noise does not move a knob.
                if objective(&figures) > best_objective + MIN_GAIN {
                    best = candidate;
                    best_figures = figures;
                    best_objective = objective(&figures);
                    changed = true;
                    each(knob.name, value, &best_figures);
                }
            }
        }
        if !changed {
            break;
        }
    }
    best
}

/// `ranking` as the Rust of `Ranking::DEFAULT`, to paste into core.
pub fn as_rust(ranking: &Ranking) -> String {
    let f = |w: &FieldWeight| format!("field({:?}, {:?})", w.weight, w.b);
    format!(
        "name: {},\nnamespace: {},\ndescription: {},\nparam_names: {},\nparam_descriptions: {},\n\
         values: {},\nsource: {},\nk1: {:?},\nprefix: {:?},\nsynonym: {:?},\nbroader: {:?},\ncommon: {:?},\n\
         plural: {:?},\nnamed: {:?},\nspecific: {:?},\naction: {:?},\ncoordination: {:?},\n",
        f(&ranking.name),
        f(&ranking.namespace),
        f(&ranking.description),
        f(&ranking.param_names),
        f(&ranking.param_descriptions),
        f(&ranking.values),
        f(&ranking.source),
        ranking.k1,
        ranking.prefix,
        ranking.synonym,
        ranking.broader,
        ranking.common,
        ranking.plural,
        ranking.named,
        ranking.specific,
        ranking.action,
        ranking.coordination,
    )
}

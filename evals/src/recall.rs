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
use capabilities_core::index::Index;
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
            catalog = Some(CatalogName::parse(name).with_context(|| format!("{}: unknown catalog `{name}`", at()))?);
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
    /// from the servers) and the recorded lists from `core/tests/data/tools/`.
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
            let text = std::fs::read_to_string(&path).with_context(|| format!("reading {}", path.display()))?;
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

/// Every query of a set that missed the top five, with what came instead.
pub fn misses(ranked: &[Ranked]) -> String {
    let mut out = String::new();
    for r in ranked.iter().filter(|r| !r.rank.is_some_and(|p| p <= 5)) {
        let rank = r.rank.map_or("-".to_owned(), |p| p.to_string());
        let _ = writeln!(out, "{:>2}  {} => {}: {}", rank, r.query.text, r.query.expect.join(", "), r.top.join(" "));
    }
    out
}

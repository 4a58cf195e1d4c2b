//! The `search` tool: its arguments, checked against the catalog, and the plain text it returns.
//!
//! The text lists tool addresses with one-line signatures, best match first, grouped by
//! namespace. Tools policy denies are dropped before ranking and only counted; tools that ask
//! carry an `[asks]` mark so the model knows a person will be involved. When nothing matches,
//! or even the best tool matches only part of the query, it says so and lists the namespaces,
//! each with its source's description or its first tools, so the model can browse instead.

use crate::manifest::json_kind;
use serde_json::{Map, Value, json};

use crate::address::{Namespace, ToolAddress};
use crate::catalog::{Catalog, SourceView};
use crate::index::{Index, SearchOutcome};
use crate::limits::Limits;
use crate::manifest::{Tool, first_sentence};
use crate::policy::Effect;
use crate::typegen::signature_line;
use crate::wording::HostWords;

/// Longest query, in characters.
pub const MAX_QUERY_CHARS: usize = 200;
/// Most bytes `search` returns, whatever the limit; tools past it are counted, not shown.
pub const OUTPUT_BUDGET_BYTES: usize = 12 * 1024;
/// A signature longer than this many characters is cut; `describe` has the full types.
const MAX_SIGNATURE_CHARS: usize = 400;
/// Namespaces named in an error or a "no match" line, at most.
const MAX_NAMESPACES_NAMED: usize = 20;

/// Checked arguments of one `search` call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchArgs {
    /// Trimmed; empty only when `namespace` is set, and then it lists that namespace.
    pub query: String,
    /// A namespace the catalog serves.
    pub namespace: Option<Namespace>,
    /// 1 to the host's maximum.
    pub limit: usize,
}

/// Why `search` arguments were refused. Each message says what was wrong and what is allowed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SearchArgsError {
    #[error("search arguments are {0}, not an object: pass {{\"query\": \"what you want to do\"}}")]
    NotAnObject(&'static str),
    #[error("unknown argument `{0}`: search takes `query`, `namespace` and `limit`")]
    UnknownArgument(String),
    #[error(
        "`query` is missing: say what you want to do, for example \"create issue\", or pass \
         `namespace` with an empty query to list that namespace"
    )]
    QueryMissing,
    #[error("`query` is {0}, not a string: say what you want to do, for example \"create issue\"")]
    QueryType(&'static str),
    #[error(
        "`query` is empty: say what you want to do, or pass `namespace` with an empty query to \
         list that namespace"
    )]
    QueryEmpty,
    #[error("`query` has {0} characters: use 1 to {MAX_QUERY_CHARS}")]
    QueryTooLong(usize),
    #[error("`namespace` is {0}, not a string: pass a namespace such as `github`, or leave it out")]
    NamespaceType(&'static str),
    #[error("no namespace `{given}`{}", namespace_hint(.closest, .available))]
    UnknownNamespace { given: String, closest: Vec<String>, available: Vec<String> },
    #[error("`limit` is {given}, not an integer: pass 1 to {max}, or leave it out for {default}")]
    LimitType { given: String, max: usize, default: usize },
    #[error("`limit` is {given}: pass an integer from 1 to {max}")]
    LimitRange { given: String, max: usize },
}

fn namespace_hint(closest: &[String], available: &[String]) -> String {
    let mut out = String::new();
    if !closest.is_empty() {
        out.push_str(": did you mean ");
        out.push_str(&join_quoted(closest, " or "));
        out.push('?');
    }
    if available.is_empty() {
        out.push_str(": the hub has no sources yet");
    } else {
        out.push_str(if closest.is_empty() { ": namespaces are " } else { " namespaces are " });
        out.push_str(&name_list(available));
    }
    out
}

fn join_quoted(names: &[String], sep: &str) -> String {
    names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(sep)
}

fn name_list(names: &[String]) -> String {
    let shown: Vec<&str> = names.iter().take(MAX_NAMESPACES_NAMED).map(String::as_str).collect();
    let mut out = shown.join(", ");
    if names.len() > shown.len() {
        out.push_str(&format!(" and {} more", names.len() - shown.len()));
    }
    out
}

impl SearchArgs {
    /// Reads the MCP `arguments` of a `search` call. `null` counts as no arguments; the
    /// namespace must be one the catalog serves (matched ignoring case).
    pub fn parse(
        arguments: &Value,
        catalog: &Catalog,
        limits: &Limits,
    ) -> Result<SearchArgs, SearchArgsError> {
        let none = Map::new();
        let obj = match arguments {
            Value::Object(map) => map,
            Value::Null => &none,
            other => return Err(SearchArgsError::NotAnObject(json_kind(other))),
        };
        if let Some(key) = obj.keys().find(|k| !matches!(k.as_str(), "query" | "namespace" | "limit")) {
            return Err(SearchArgsError::UnknownArgument(clip_chars(key, 64)));
        }

        let namespace = match obj.get("namespace") {
            None | Some(Value::Null) => None,
            Some(Value::String(raw)) if raw.trim().is_empty() => None,
            Some(Value::String(raw)) => Some(resolve_namespace(raw.trim(), catalog)?),
            Some(other) => return Err(SearchArgsError::NamespaceType(json_kind(other))),
        };

        let query = match obj.get("query") {
            None | Some(Value::Null) if namespace.is_none() => return Err(SearchArgsError::QueryMissing),
            None | Some(Value::Null) => String::new(),
            Some(Value::String(raw)) => {
                let query = raw.trim();
                let chars = query.chars().count();
                if chars > MAX_QUERY_CHARS {
                    return Err(SearchArgsError::QueryTooLong(chars));
                }
                if query.is_empty() && namespace.is_none() {
                    return Err(SearchArgsError::QueryEmpty);
                }
                query.to_owned()
            }
            Some(other) => return Err(SearchArgsError::QueryType(json_kind(other))),
        };

        let max = limits.search_max_limit.max(1);
        let default = limits.search_default_limit.clamp(1, max);
        let limit = match obj.get("limit") {
            None | Some(Value::Null) => default,
            Some(Value::Number(n)) => {
                let whole = n.as_i64().or_else(|| n.as_f64().filter(|f| f.fract() == 0.0).map(|f| f as i64));
                match whole {
                    Some(l) if l >= 1 && (l as u64) <= max as u64 => l as usize,
                    Some(_) => return Err(SearchArgsError::LimitRange { given: n.to_string(), max }),
                    None => return Err(SearchArgsError::LimitType { given: n.to_string(), max, default }),
                }
            }
            Some(other) => {
                let given = clip_chars(&other.to_string(), 32);
                return Err(SearchArgsError::LimitType { given, max, default });
            }
        };

        Ok(SearchArgs { query, namespace, limit })
    }
}

/// The JSON Schema of `search`'s arguments, kept beside the parser so the two agree.
pub fn input_schema(limits: &Limits) -> Value {
    json!({
        "type": "object",
        "properties": {
            "query": {
                "type": "string",
                "maxLength": MAX_QUERY_CHARS,
                "description": "What you want to do. Empty lists `namespace`."
            },
            "namespace": { "type": "string", "description": "Search or list one source only." },
            "limit": {
                "type": "integer",
                "minimum": 1,
                "maximum": limits.search_max_limit,
                "default": limits.search_default_limit
            }
        },
        "required": ["query"],
        "additionalProperties": false
    })
}

fn resolve_namespace(raw: &str, catalog: &Catalog) -> Result<Namespace, SearchArgsError> {
    let names: Vec<&Namespace> = catalog.sources.iter().map(|s| &s.manifest.namespace).collect();
    if let Some(ns) = names.iter().find(|ns| ns.as_str() == raw) {
        return Ok((*ns).clone());
    }
    let lower = raw.to_lowercase();
    if let Some(ns) = names.iter().find(|ns| ns.as_str() == lower) {
        return Ok((*ns).clone());
    }
    Err(SearchArgsError::UnknownNamespace {
        given: clip_chars(raw, 64),
        closest: closest_names(&lower, names.iter().map(|ns| ns.as_str())),
        available: names.iter().map(|ns| ns.to_string()).collect(),
    })
}

/// Up to three names near `given`: a small edit distance, or one contains the other.
fn closest_names<'a>(given: &str, names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let given: Vec<char> = given.chars().take(64).collect();
    let given_str: String = given.iter().collect();
    let mut scored: Vec<(usize, &str)> = names
        .filter_map(|name| {
            let d = edit_distance(&given, &name.chars().collect::<Vec<_>>());
            let near = d <= (name.len() / 3).max(1);
            let contains = given.len() >= 3 && (name.contains(&given_str) || given_str.contains(name));
            (near || contains).then_some((d, name))
        })
        .collect();
    scored.sort_unstable();
    scored.dedup_by(|a, b| a.1 == b.1);
    scored.into_iter().take(3).map(|(_, n)| n.to_owned()).collect()
}

fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The text `search` returns for checked arguments. `effect` says what policy would do with a
/// call to each tool; denied tools are hidden before ranking and counted at the end.
pub fn render(
    catalog: &Catalog,
    index: &Index,
    args: &SearchArgs,
    effect: &dyn Fn(&ToolAddress) -> Effect,
    words: &HostWords,
) -> String {
    if catalog.sources.is_empty() {
        return format!(
            "The hub has no sources yet, so there are no tools to search. Ask the user to add one with {}.",
            words.add_source
        );
    }
    let outcome =
        index.search_where(&args.query, args.namespace.as_ref(), args.limit, |a| effect(a) != Effect::Deny);

    // Tools in rank order, while they fit the budget.
    let mut shown: Vec<(&Namespace, String)> = Vec::new();
    let mut used = 0;
    for hit in &outcome.hits {
        let Some(tool) = catalog.tool(&hit.address) else { continue };
        let block = tool_block(&hit.address, tool, effect(&hit.address));
        if used + block.len() > OUTPUT_BUDGET_BYTES {
            break;
        }
        used += block.len();
        shown.push((&hit.address.namespace, block));
    }

    let mut lines: Vec<String> = Vec::new();
    let weak = outcome.weak && !shown.is_empty();
    if weak {
        lines.push(weak_line(args));
    }
    if shown.is_empty() {
        lines.extend(no_results(catalog, args, &outcome));
    } else {
        // Grouped by namespace, namespaces in the order of their best tool.
        let mut groups: Vec<(&Namespace, Vec<String>)> = Vec::new();
        for (ns, block) in shown.iter() {
            match groups.iter_mut().find(|(n, _)| n == ns) {
                Some((_, blocks)) => blocks.push(block.clone()),
                None => groups.push((ns, vec![block.clone()])),
            }
        }
        for (ns, blocks) in groups {
            lines.push(header(catalog.source(ns), ns));
            lines.extend(blocks);
        }
        let more = outcome.total_matches.saturating_sub(shown.len());
        if more > 0 {
            lines.push(more_line(more, args, &outcome));
        }
    }
    if weak && args.namespace.is_none() {
        lines.push("Or browse a namespace: search it with an empty query.".to_owned());
        lines.extend(namespace_lines(catalog));
    }
    if outcome.hidden > 0 {
        let tools = if outcome.hidden == 1 { "tool" } else { "tools" };
        lines.push(format!("{} {tools} hidden by policy.", outcome.hidden));
    }
    lines.join("\n")
}

/// `github  (connections: personal*, work)`; the `*` marks the default connection.
fn header(source: Option<&SourceView>, ns: &Namespace) -> String {
    let Some(source) = source.filter(|s| !s.connections.is_empty()) else {
        return ns.to_string();
    };
    let names: Vec<String> = source
        .connections
        .iter()
        .map(|c| if source.default_connection.as_ref() == Some(c) { format!("{c}*") } else { c.clone() })
        .collect();
    let label = if names.len() == 1 { "connection" } else { "connections" };
    format!("{ns}  ({label}: {})", names.join(", "))
}

/// The signature line, `[asks]` when policy asks, then the first sentence of the description.
fn tool_block(address: &ToolAddress, tool: &Tool, effect: Effect) -> String {
    let mut block = format!("  {}", clip_chars(&signature_line(address, tool), MAX_SIGNATURE_CHARS));
    if effect == Effect::Ask {
        block.push_str("   [asks]");
    }
    let sentence = first_sentence(&tool.record.description);
    if !sentence.is_empty() {
        block.push_str("\n    ");
        block.push_str(&sentence);
    }
    block
}

fn more_line(more: usize, args: &SearchArgs, outcome: &SearchOutcome) -> String {
    match (&args.namespace, outcome.listing) {
        (Some(ns), true) => {
            let tools = if more == 1 { "tool" } else { "tools" };
            format!("{more} more {tools} in {ns}. Raise limit or search with a query.")
        }
        (Some(_), false) => format!("{} Narrow the query or raise limit.", more_matches(more)),
        (None, _) => format!("{} Narrow the query or pass namespace.", more_matches(more)),
    }
}

fn more_matches(more: usize) -> String {
    if more == 1 { "1 more match.".to_owned() } else { format!("{more} more matches.") }
}

/// Says that the tools shown match only part of the query.
fn weak_line(args: &SearchArgs) -> String {
    let query = clip_chars(&args.query, 80);
    match &args.namespace {
        Some(ns) => format!(
            "Nothing in {ns} matches \"{query}\" well; the closest tools match only some of its words. \
             Try other words, or pass an empty query to list {ns}."
        ),
        None => format!("Nothing matches \"{query}\" well; the closest tools match only some of its words."),
    }
}

fn no_results(catalog: &Catalog, args: &SearchArgs, outcome: &SearchOutcome) -> Vec<String> {
    let query = clip_chars(&args.query, 80);
    match (&args.namespace, outcome.listing) {
        (Some(ns), true) => vec![format!("No tools to show in {ns}.")],
        (Some(ns), false) => vec![format!(
            "No tools in {ns} match \"{query}\". Try other words, or pass an empty query to list {ns}."
        )],
        (None, _) => {
            let mut lines = vec![format!(
                "No tools match \"{query}\". Try other words for what you want to do, or browse a \
                 namespace: search it with an empty query."
            )];
            lines.extend(namespace_lines(catalog));
            lines
        }
    }
}

/// Longest description of a namespace in its line, in characters.
const MAX_NAMESPACE_LINE_CHARS: usize = 100;
/// Tools named in the line of a namespace without a description.
const TOOLS_NAMED: usize = 4;

/// A line per namespace: what its source says it is, or else how many tools it has and the
/// first few.
fn namespace_lines(catalog: &Catalog) -> Vec<String> {
    let mut lines: Vec<String> = catalog
        .sources
        .iter()
        .take(MAX_NAMESPACES_NAMED)
        .map(|source| {
            let manifest = &source.manifest;
            let said = manifest.description.as_deref().map(first_sentence).unwrap_or_default();
            let about = if said.is_empty() {
                let count = manifest.tools.len();
                let names: Vec<&str> =
                    manifest.tools.iter().take(TOOLS_NAMED).map(|t| t.ident.as_str()).collect();
                let more = if count > names.len() { ", …" } else { "" };
                let tools = if count == 1 { "tool" } else { "tools" };
                format!("{count} {tools}: {}{more}", names.join(", "))
            } else {
                clip_chars(&said, MAX_NAMESPACE_LINE_CHARS)
            };
            format!("  {}  {about}", manifest.namespace)
        })
        .collect();
    if catalog.sources.len() > MAX_NAMESPACES_NAMED {
        lines.push(format!("  and {} more", catalog.sources.len() - MAX_NAMESPACES_NAMED));
    }
    lines
}

/// At most `max` characters, with `…` when cut.
fn clip_chars(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        None => text.to_owned(),
        Some((end, _)) => format!("{}…", &text[..end]),
    }
}

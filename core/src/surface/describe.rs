//! `describe`: TypeScript declarations for the tools, namespaces and named types the model asks
//! for, within a token budget.
//!
//! The answer is one `declare const <ns>: {…}` block per namespace, each tool a method, plus a
//! `declare namespace <ns> {…}` block for the named types it refers to. When the whole answer
//! does not fit, it steps down through [`DETAILS`]: deeper objects print by name (to be described
//! on their own), then words get shorter, and last, tools are left out with a line saying how
//! many and how to ask for them. Pure: the caller passes the catalog, what policy lets the model
//! see, and the budget.

use std::collections::BTreeSet;
use std::fmt;

use crate::address::{Namespace, ToolAddress, split_words};
use crate::catalog::Catalog;
use crate::tokens;
use crate::typegen::{DETAILS, Detail, NamespaceTypes, Piece, TypeRef};

/// Most targets one `describe` takes.
pub const MAX_TARGETS: usize = 10;
/// Bytes per token above which text is taken to be over budget without counting it. Declarations
/// run at about 3.8–4.7 bytes per token; counting is the costly part, so hopeless levels skip it.
const BYTES_PER_TOKEN_CEILING: usize = 5;

/// Shared by every answer that declares a method.
const CALL_OPTIONS: &str = "interface CallOptions {\n\t/** Which of the source's connections to use; its default when left out. */\n\tconnection?: string;\n}\n";

/// Why `describe` gave no declarations.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DescribeError {
    #[error(
        "describe takes 1 to {MAX_TARGETS} targets, got {0}: pass tool addresses, namespaces or type \
         names, for example [\"github.createIssue\"]"
    )]
    TargetCount(usize),
    #[error("{}", UnknownList(.0))]
    Unknown(Vec<UnknownTarget>),
}

/// A target that names nothing the model may see, with the closest names that exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownTarget {
    pub target: String,
    pub closest: Vec<String>,
}

struct UnknownList<'a>(&'a [UnknownTarget]);

impl fmt::Display for UnknownList<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.len() == 1 { "unknown target " } else { "unknown targets " })?;
        for (i, u) in self.0.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "`{}`", u.target)?;
            if u.closest.is_empty() {
                f.write_str(" (nothing close)")?;
            } else {
                write!(f, " (closest: {})", u.closest.join(", "))?;
            }
        }
        f.write_str(
            ": describe a tool address from search results, a namespace, or a type named in an \
             earlier declaration",
        )
    }
}

/// Declarations for `targets` — tool addresses (`github.createIssue`), namespaces (`github`) or
/// named types (`github.Issue`) — in at most `token_budget` tokens.
///
/// Tools `visible` rejects are treated as if they did not exist, and so are types only they hold.
/// The answer always parses as a TypeScript declaration file. A budget too small even for the
/// `CallOptions` interface and a namespace's braces still gets those, with nothing inside.
pub fn describe(
    catalog: &Catalog,
    targets: &[String],
    visible: &dyn Fn(&ToolAddress) -> bool,
    token_budget: usize,
) -> Result<String, DescribeError> {
    if targets.is_empty() || targets.len() > MAX_TARGETS {
        return Err(DescribeError::TargetCount(targets.len()));
    }
    let mut blocks: Vec<Block<'_>> = Vec::new();
    let mut unknown = Vec::new();
    for raw in targets {
        let target = raw.trim();
        if !select(catalog, target, visible, &mut blocks) {
            let closest = closest(catalog, target, visible, &blocks);
            unknown.push(UnknownTarget { target: clip_target(target), closest });
        }
    }
    if !unknown.is_empty() {
        return Err(DescribeError::Unknown(unknown));
    }
    Ok(assemble(&blocks, token_budget))
}

/// What one namespace contributes to the answer.
struct Block<'c> {
    types: NamespaceTypes<'c>,
    /// Visible tools, by index, for the visibility of types.
    visible: Vec<bool>,
    tools: Vec<usize>,
    named: Vec<TypeRef>,
}

impl Block<'_> {
    fn ns(&self) -> &str {
        self.types.namespace
    }
}

/// Adds what `target` names to `blocks`; false when it names nothing visible.
fn select<'c>(
    catalog: &'c Catalog,
    target: &str,
    visible: &dyn Fn(&ToolAddress) -> bool,
    blocks: &mut Vec<Block<'c>>,
) -> bool {
    let (ns, rest) = match target.split_once('.') {
        Some((ns, rest)) => (ns, Some(rest)),
        None => (target, None),
    };
    let Some(source) = Namespace::new(ns).ok().and_then(|ns| catalog.source(&ns)) else { return false };
    let b = match blocks.iter().position(|b| b.ns() == ns) {
        Some(b) => b,
        None => {
            let manifest = &source.manifest;
            let visible = manifest.tools.iter().map(|t| visible(&manifest.address(t))).collect();
            blocks.push(Block {
                types: NamespaceTypes::new(manifest),
                visible,
                tools: Vec::new(),
                named: Vec::new(),
            });
            blocks.len() - 1
        }
    };
    let block = &mut blocks[b];
    let added = match rest {
        None => {
            let all: Vec<usize> = (0..block.visible.len()).filter(|t| block.visible[*t]).collect();
            let any = !all.is_empty();
            for t in all {
                if !block.tools.contains(&t) {
                    block.tools.push(t);
                }
            }
            any
        }
        Some(name) => {
            if let Some(t) = block.types.tool_index(name).filter(|t| block.visible[*t]) {
                if !block.tools.contains(&t) {
                    block.tools.push(t);
                }
                true
            } else if let Some(ty) = block.types.find_type(name, |t| block.visible[t]) {
                if !block.named.contains(&ty) {
                    block.named.push(ty);
                }
                true
            } else {
                false
            }
        }
    };
    if !added && block.tools.is_empty() && block.named.is_empty() {
        blocks.remove(b);
    }
    added
}

/// Renders every level from the most detailed down; the first that fits is the answer, and the
/// last one leaves out tools until it fits.
fn assemble(blocks: &[Block<'_>], budget: usize) -> String {
    let (last, levels) = DETAILS.split_last().unwrap_or((&DETAILS[0], &[]));
    // When even the most compact level is far too long, so is every richer one: go straight to
    // leaving tools out.
    if too_long(blocks, *last, budget) {
        return Answer::elided(blocks, *last, budget).text();
    }
    for detail in levels {
        if let Some(text) = Answer::whole(blocks, *detail, budget) {
            return text;
        }
    }
    Answer::elided(blocks, *last, budget).text()
}

/// Whether the answer at `detail` is longer than any text within `budget` tokens can be.
fn too_long(blocks: &[Block<'_>], detail: Detail, budget: usize) -> bool {
    let byte_ceiling = budget.saturating_mul(BYTES_PER_TOKEN_CEILING);
    let mut bytes = 0usize;
    for block in blocks {
        let mut have = BTreeSet::new();
        for entry in entries(block) {
            for (name, piece) in pieces(block, entry, detail, &have) {
                bytes += piece.text.len();
                if bytes > byte_ceiling {
                    return true;
                }
                have.extend(name);
            }
        }
    }
    false
}

/// One namespace's part of an answer being built.
#[derive(Default)]
struct Part {
    methods: Vec<String>,
    declared: Vec<String>,
    names: BTreeSet<String>,
    left_tools: usize,
    left_types: usize,
    has_tools: bool,
    first_left: Option<String>,
}

impl Part {
    fn add(&mut self, pieces: Vec<(Option<String>, Piece)>) {
        for (name, piece) in pieces {
            match name {
                None => self.methods.push(piece.text),
                Some(name) => {
                    self.names.insert(name);
                    self.declared.push(piece.text);
                }
            }
        }
    }
}

struct Answer {
    parts: Vec<(String, Part)>,
    hoisted: Option<String>,
}

impl Answer {
    /// Everything at `detail`, if it fits. Text far longer than the budget could hold is
    /// refused by its length alone; the rest is counted once, whole.
    fn whole(blocks: &[Block<'_>], detail: Detail, budget: usize) -> Option<String> {
        let byte_ceiling = budget.saturating_mul(BYTES_PER_TOKEN_CEILING);
        let mut bytes = 0usize;
        let mut answer = Answer { parts: Vec::new(), hoisted: None };
        for block in blocks {
            let mut part = Part { has_tools: !block.tools.is_empty(), ..Part::default() };
            for entry in entries(block) {
                let pieces = pieces(block, entry, detail, &part.names);
                bytes += pieces.iter().map(|(_, p)| p.text.len()).sum::<usize>();
                if bytes > byte_ceiling {
                    return None;
                }
                if answer.hoisted.is_none() {
                    answer.hoisted = first_hoisted(block, &pieces);
                }
                part.add(pieces);
            }
            answer.parts.push((block.ns().to_owned(), part));
        }
        let text = answer.text();
        (tokens::count(&text) <= budget).then_some(text)
    }

    /// As much as fits at `detail`, in order; from the first entry that does not fit on, tools
    /// and types are left out and a line says so. Pieces are counted one by one: each starts at
    /// a line and ends with a newline, so their counts add up to the count of the whole.
    fn elided(blocks: &[Block<'_>], detail: Detail, budget: usize) -> Answer {
        let any_tools = blocks.iter().any(|b| !b.tools.is_empty());
        let mut used = if any_tools { tokens::count(CALL_OPTIONS) } else { 0 };
        // Room kept for the lines that say what was left out.
        let reserve = 40 * blocks.len();
        let mut answer = Answer { parts: Vec::new(), hoisted: None };
        let mut full = false;
        for block in blocks {
            let mut part = Part { has_tools: !block.tools.is_empty(), ..Part::default() };
            used += tokens::count(&frame(block.ns(), !block.tools.is_empty(), true));
            for entry in entries(block) {
                if full {
                    part.leave(block, entry);
                    continue;
                }
                let pieces = pieces(block, entry, detail, &part.names);
                let mut cost: usize = pieces.iter().map(|(_, p)| tokens::count(&p.text)).sum();
                let hint = if answer.hoisted.is_none() { first_hoisted(block, &pieces) } else { None };
                if let Some(example) = &hint {
                    cost += tokens::count(&hint_line(example));
                }
                if used + cost + reserve > budget {
                    full = true;
                    part.leave(block, entry);
                    continue;
                }
                used += cost;
                if hint.is_some() {
                    answer.hoisted = hint;
                }
                part.add(pieces);
            }
            answer.parts.push((block.ns().to_owned(), part));
        }
        answer
    }

    fn text(&self) -> String {
        let mut out = String::new();
        if self.parts.iter().any(|(_, p)| p.has_tools) {
            out.push_str(CALL_OPTIONS);
        }
        for (ns, part) in &self.parts {
            if part.has_tools {
                out.push_str(&format!("\ndeclare const {ns}: {{\n"));
                for m in &part.methods {
                    out.push_str(m);
                }
                if let Some(line) = part.left_line() {
                    out.push_str(&line);
                }
                out.push_str("};\n");
            }
            if !part.declared.is_empty() || (!part.has_tools && part.left_types > 0) {
                out.push_str(&format!("\ndeclare namespace {ns} {{\n"));
                for d in &part.declared {
                    out.push_str(d);
                }
                if !part.has_tools
                    && let Some(line) = part.left_line()
                {
                    out.push_str(&line);
                }
                out.push_str("}\n");
            }
        }
        if let Some(example) = &self.hoisted {
            out.push_str(&hint_line(example));
        }
        if out.starts_with('\n') {
            out.remove(0);
        }
        out
    }
}

fn entries(block: &Block<'_>) -> impl Iterator<Item = Entry> {
    block.tools.iter().map(|t| Entry::Tool(*t)).chain(block.named.iter().map(|n| Entry::Type(*n)))
}

/// The first name in `pieces` printed without its declaration, as `ns.Name`.
fn first_hoisted(block: &Block<'_>, pieces: &[(Option<String>, Piece)]) -> Option<String> {
    pieces.iter().find_map(|(_, p)| p.hoisted.first()).map(|h| format!("{}.{h}", block.ns()))
}

#[derive(Debug, Clone, Copy)]
enum Entry {
    Tool(usize),
    Type(TypeRef),
}

impl Part {
    fn leave(&mut self, block: &Block<'_>, entry: Entry) {
        match entry {
            Entry::Tool(t) => {
                self.left_tools += 1;
                if self.first_left.is_none() {
                    self.first_left = Some(format!("{}.{}", block.ns(), block.types.ident(t)));
                }
            }
            Entry::Type(ty) => {
                self.left_types += 1;
                if self.first_left.is_none() {
                    self.first_left = Some(format!("{}.{}", block.ns(), block.types.type_name(ty)));
                }
            }
        }
    }

    /// The comment saying what was left out, if anything was.
    fn left_line(&self) -> Option<String> {
        let example = self.first_left.as_deref()?;
        let what = match (self.left_tools, self.left_types) {
            (0, n) => plural(n, "type"),
            (n, 0) => plural(n, "tool"),
            (n, m) => format!("{} and {}", plural(n, "tool"), plural(m, "type")),
        };
        let shown = !self.methods.is_empty() || !self.declared.is_empty();
        let what = if shown { what.replacen(' ', " more ", 1) } else { what };
        Some(format!(
            "\t// {what} not shown, to stay within the token budget: describe fewer at a time, such as {example}\n"
        ))
    }
}

fn hint_line(example: &str) -> String {
    format!("\n// Names such as {example} stand for types not shown here: describe them by name.\n")
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 { format!("1 {word}") } else { format!("{n} {word}s") }
}

/// The lines around a namespace's pieces, as counted against the budget.
fn frame(ns: &str, tools: bool, types: bool) -> String {
    let mut out = String::new();
    if tools {
        out.push_str(&format!("\ndeclare const {ns}: {{\n}};\n"));
    }
    if types {
        out.push_str(&format!("\ndeclare namespace {ns} {{\n}}\n"));
    }
    out
}

/// The text one entry adds: a method or a requested type (unnamed piece, or named), then the
/// declarations it needs that `have` does not hold yet.
fn pieces(
    block: &Block<'_>,
    entry: Entry,
    detail: Detail,
    have: &BTreeSet<String>,
) -> Vec<(Option<String>, Piece)> {
    let types = &block.types;
    let mut out: Vec<(Option<String>, Piece)> = Vec::new();
    let mut queue: Vec<(String, TypeRef)> = Vec::new();
    match entry {
        Entry::Tool(t) => {
            let piece = types.method(t, detail);
            queue.extend(piece.declare.iter().cloned());
            out.push((None, piece));
        }
        Entry::Type(ty) => queue.push((types.type_name(ty).to_owned(), ty)),
    }
    // Declarations in the order they are first mentioned, each once.
    let mut seen: BTreeSet<String> = BTreeSet::new();
    let mut next = 0;
    while let Some((name, ty)) = queue.get(next).cloned() {
        next += 1;
        if have.contains(&name) || !seen.insert(name.clone()) {
            continue;
        }
        let piece = types.declaration(ty, detail);
        queue.extend(piece.declare.iter().cloned());
        out.push((Some(name), piece));
    }
    out
}

/// Up to three names close to `target` that the model may use: by edit distance, ignoring case
/// and separators, and by words in common.
fn closest(
    catalog: &Catalog,
    target: &str,
    visible: &dyn Fn(&ToolAddress) -> bool,
    blocks: &[Block<'_>],
) -> Vec<String> {
    let mut candidates: Vec<String> = Vec::new();
    for source in &catalog.sources {
        let manifest = &source.manifest;
        let shown: Vec<String> = manifest
            .tools
            .iter()
            .map(|t| manifest.address(t))
            .filter(|a| visible(a))
            .map(|a| a.to_string())
            .collect();
        if !shown.is_empty() {
            candidates.push(manifest.namespace.to_string());
            candidates.extend(shown);
        }
    }
    let ns = target.split_once('.').map_or(target, |(ns, _)| ns);
    if let Some(block) = blocks.iter().find(|b| b.ns() == ns) {
        candidates
            .extend(block.types.type_names(|t| block.visible[t]).into_iter().map(|n| format!("{ns}.{n}")));
    } else if let Some(source) = Namespace::new(ns).ok().and_then(|n| catalog.source(&n)) {
        let types = NamespaceTypes::new(&source.manifest);
        let manifest = &source.manifest;
        let shown: Vec<bool> = manifest.tools.iter().map(|t| visible(&manifest.address(t))).collect();
        candidates.extend(types.type_names(|t| shown[t]).into_iter().map(|n| format!("{ns}.{n}")));
    }
    let squash = |s: &str| -> Vec<char> {
        s.chars()
            .filter(|c| c.is_alphanumeric() || *c == '.')
            .flat_map(char::to_lowercase)
            .take(100)
            .collect()
    };
    let words = |s: &str| -> BTreeSet<String> {
        split_words(s).into_iter().filter(|w| w.len() > 1).map(|w| w.to_lowercase()).collect()
    };
    let target_chars = squash(target);
    let target_words = words(target);
    let mut scored: Vec<(usize, usize, String)> = candidates
        .into_iter()
        .filter_map(|c| {
            let chars = squash(&c);
            let distance = edit_distance(&target_chars, &chars);
            let shared = words(&c).intersection(&target_words).count();
            let near = distance <= (chars.len() / 3).max(2);
            (near || shared > 0).then(|| (distance.saturating_sub(3 * shared), distance, c))
        })
        .collect();
    scored.sort();
    scored.into_iter().take(3).map(|(_, _, c)| c).collect()
}

fn edit_distance(a: &[char], b: &[char]) -> usize {
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = if ca == cb { diagonal } else { 1 + diagonal.min(above).min(row[j]) };
            diagonal = above;
        }
    }
    row[b.len()]
}

fn clip_target(target: &str) -> String {
    if target.chars().count() <= 80 {
        return target.to_owned();
    }
    let cut: String = target.chars().take(79).collect();
    format!("{cut}…")
}

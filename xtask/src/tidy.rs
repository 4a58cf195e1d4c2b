//! Tidy tests: checks over the source tree itself, run with the other tests by
//! `cargo nextest run --workspace`, that keep ARCHITECTURE.md's map true (STYLE.md 17, after
//! rust-analyzer's `xtask/src/tidy.rs`). A failure names the files and says what to do.
//!
//! Sources are read as text, without a parser: comments and string literals are blanked out
//! before looking for paths and traits, and so is every item marked `#[cfg(test)]` (the test
//! module, and code after it still counts).

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};

/// The crates whose files must open with `//!`.
const CRATES: [&str; 7] = ["core", "local", "hosted", "invariants", "evals", "xtask", "fuzz"];

/// Public traits in `core/src` outside `ports.rs` that are not ports, each with the reason it
/// stays where it is: (file, trait, reason).
const NOT_PORTS: &[(&str, &str, &str)] = &[
    ("core/src/send.rs", "MaybeSend", "an alias ports are written with, not a port"),
    ("core/src/send.rs", "MaybeSync", "an alias ports are written with, not a port"),
];

#[test]
fn core_modules_import_no_cycle() {
    let graph = core_imports(&root());
    let cycles = cycles(&graph);
    if cycles.is_empty() {
        return;
    }
    let mut out = String::from(
        "the top-level modules of core/src import one another in a cycle (a top-level module is \
         core/src/<m>.rs or core/src/<m>/; an edge is a `use crate::…` or an inline `crate::m::` path):\n",
    );
    for cycle in &cycles {
        let _ = writeln!(out, "\ncycle: {}", cycle.join(" → "));
        for pair in cycle.windows(2) {
            let places = &graph[pair[0].as_str()][pair[1].as_str()];
            let _ = writeln!(out, "  {} → {}: {}", pair[0], pair[1], places.join(", "));
        }
    }
    out.push_str(
        "\nhint: move the type both sides need into a leaf module that imports neither (STYLE.md 16, \
         like quinn-proto's shared.rs), so each dependency runs one way",
    );
    panic!("{out}");
}

#[test]
fn every_port_trait_is_in_ports_rs() {
    let root = root();
    let mut found = Vec::new();
    for file in rust_files(&root.join("core/src")) {
        let name = relative(&root, &file);
        if name == "core/src/ports.rs" {
            continue;
        }
        let code = code(&read(&file), true);
        let tokens = tokens(&code);
        for window in tokens.windows(3) {
            if let [(_, "pub"), (_, "trait"), (line, name_of)] = window {
                let allowed = NOT_PORTS.iter().any(|(f, t, _)| *f == name && t == name_of);
                if !allowed {
                    found.push(format!("{name}:{line}: pub trait {name_of}"));
                }
            }
        }
    }
    assert!(
        found.is_empty(),
        "every port trait is defined in core/src/ports.rs, but these public traits are elsewhere:\n  {}\n\
         hint: move each into core/src/ports.rs (re-export it from its old module if callers need \
         the old path); a trait that is not a port goes in NOT_PORTS in xtask/src/tidy.rs with its reason",
        found.join("\n  ")
    );
}

#[test]
fn core_never_names_the_local_cli() {
    let root = root();
    let mut found = Vec::new();
    for file in rust_files(&root.join("core/src")) {
        let code = code(&read(&file), false);
        for (n, line) in code.lines().enumerate() {
            if line.contains("capabilities hub") {
                found.push(format!("{}:{}: {}", relative(&root, &file), n + 1, line.trim()));
            }
        }
    }
    assert!(
        found.is_empty(),
        "core/src names the local CLI (`capabilities hub`), but core's wording must fit both the local \
         and the hosted hub:\n  {}\n\
         hint: let the host pass its own wording in (the hint to authenticate, to run a doctor, to add \
         a source) instead of writing a local command into core",
        found.join("\n  ")
    );
}

#[test]
fn every_rust_file_opens_with_a_doc_line() {
    let root = root();
    let mut missing = Vec::new();
    for krate in CRATES {
        for file in rust_files(&root.join(krate)) {
            if !read(&file).starts_with("//!") {
                missing.push(relative(&root, &file));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "these files do not open with a `//!` line:\n  {}\n\
         hint: start each with a `//!` line saying what the file is (STYLE.md 13)",
        missing.join("\n  ")
    );
}

// ---- reading the tree ----

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask sits in the workspace").to_owned()
}

fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_else(|err| panic!("reading {}: {err}", path.display()))
}

fn relative(root: &Path, path: &Path) -> String {
    path.strip_prefix(root).unwrap_or(path).to_string_lossy().replace('\\', "/")
}

/// Every `.rs` file under `dir`, sorted, skipping build output, npm packages and hidden folders.
fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs = vec![dir.to_owned()];
    while let Some(dir) = dirs.pop() {
        let entries = fs::read_dir(&dir).unwrap_or_else(|err| panic!("listing {}: {err}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if path.is_dir() {
                if !(name.starts_with('.') || name == "target" || name == "node_modules") {
                    dirs.push(path);
                }
            } else if name.ends_with(".rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

/// The code of a Rust file as `blank` leaves it, with every item marked `#[cfg(test)]` (a test
/// module, a test-only helper) blanked out too. Code after a test module still counts.
fn code(text: &str, strings: bool) -> String {
    // Items are found where strings are blanked, so braces in strings do not count; blanking
    // keeps one character for each, so the positions fit either version.
    let bare: Vec<char> = blank(text, true).chars().collect();
    let tests = test_items(&bare);
    let chars = if strings { bare } else { blank(text, false).chars().collect() };
    chars
        .iter()
        .enumerate()
        .map(|(i, &c)| if c != '\n' && tests.iter().any(|r| r.contains(&i)) { ' ' } else { c })
        .collect()
}

/// The character ranges of the items marked `#[cfg(test)]`, attribute included: up to the `;`
/// or the closing brace that ends the item.
fn test_items(code: &[char]) -> Vec<std::ops::Range<usize>> {
    let marker: Vec<char> = "#[cfg(test)]".chars().collect();
    let mut items = Vec::new();
    let mut i = 0;
    while i + marker.len() <= code.len() {
        if !code[i..].starts_with(&marker) {
            i += 1;
            continue;
        }
        let mut depth = 0i32;
        let mut end = code.len();
        for (j, &c) in code.iter().enumerate().skip(i + marker.len()) {
            match c {
                '{' | '(' | '[' => depth += 1,
                ')' | ']' => depth -= 1,
                '}' => {
                    depth -= 1;
                    if depth == 0 {
                        end = j + 1;
                        break;
                    }
                }
                ';' if depth == 0 => {
                    end = j + 1;
                    break;
                }
                _ => {}
            }
        }
        items.push(i..end);
        i = end;
    }
    items
}

/// `code` with comments blanked out, and string and character literals too when `strings`,
/// keeping every newline so line numbers stay right.
fn blank(code: &str, strings: bool) -> String {
    let chars: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let keep_newlines = |out: &mut String, part: &[char], keep: bool| {
        for &c in part {
            out.push(if keep || c == '\n' { c } else { ' ' });
        }
    };
    let mut i = 0;
    while i < chars.len() {
        let rest = &chars[i..];
        let end = match rest {
            ['/', '/', ..] => {
                let len = rest.iter().position(|&c| c == '\n').unwrap_or(rest.len());
                keep_newlines(&mut out, &rest[..len], false);
                i += len;
                continue;
            }
            ['/', '*', ..] => {
                let mut depth = 0;
                let mut j = 0;
                while j < rest.len() {
                    match &rest[j..] {
                        ['/', '*', ..] => (depth, j) = (depth + 1, j + 2),
                        ['*', '/', ..] => {
                            (depth, j) = (depth - 1, j + 2);
                            if depth == 0 {
                                break;
                            }
                        }
                        _ => j += 1,
                    }
                }
                keep_newlines(&mut out, &rest[..j.min(rest.len())], false);
                i += j;
                continue;
            }
            ['r', '#', ..] | ['r', '"', ..] | ['b', 'r', '#' | '"', ..]
                if i == 0 || !(chars[i - 1].is_alphanumeric() || chars[i - 1] == '_') =>
            {
                raw_string_end(rest)
            }
            ['"', ..] => quoted_end(rest, '"'),
            ['\'', '\\', ..] => quoted_end(rest, '\''),
            ['\'', _, '\'', ..] => Some(3),
            _ => None,
        };
        match end {
            Some(len) => {
                keep_newlines(&mut out, &rest[..len], !strings);
                i += len;
            }
            None => {
                out.push(chars[i]);
                i += 1;
            }
        }
    }
    out
}

/// The length of the quoted literal at the start of `rest` (escapes skipped).
fn quoted_end(rest: &[char], quote: char) -> Option<usize> {
    let mut j = 1;
    while j < rest.len() {
        match rest[j] {
            '\\' => j += 2,
            c if c == quote => return Some(j + 1),
            _ => j += 1,
        }
    }
    Some(rest.len())
}

/// The length of the raw string (`r#"…"#`, `br"…"`) at the start of `rest`.
fn raw_string_end(rest: &[char]) -> Option<usize> {
    let start = rest.iter().position(|&c| c != 'b' && c != 'r')?;
    let hashes = rest[start..].iter().take_while(|&&c| c == '#').count();
    if rest.get(start + hashes) != Some(&'"') {
        return None;
    }
    let body = start + hashes + 1;
    let closing: Vec<char> = std::iter::once('"').chain(std::iter::repeat_n('#', hashes)).collect();
    let end = (body..rest.len())
        .find(|&j| rest[j..].starts_with(&closing[..]))
        .map_or(rest.len(), |j| j + 1 + hashes);
    Some(end)
}

/// Identifiers and punctuation, each with its line number; `::` is one token.
fn tokens(code: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    for (n, line) in code.lines().enumerate() {
        let mut rest = line;
        while let Some(c) = rest.chars().next() {
            let len = if c.is_alphanumeric() || c == '_' {
                rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len())
            } else if rest.starts_with("::") {
                2
            } else {
                c.len_utf8()
            };
            if !c.is_whitespace() {
                out.push((n + 1, &rest[..len]));
            }
            rest = &rest[len..];
        }
    }
    out
}

// ---- core's import graph ----

/// Module → module it imports → the places (`file:line`) that make the edge.
type Graph = BTreeMap<String, BTreeMap<String, Vec<String>>>;

/// The imports between the top-level modules of `core/src`, from `use crate::…` (grouped ones
/// included), inline `crate::m::` paths and `super::` paths that climb to the crate root.
fn core_imports(root: &Path) -> Graph {
    let src = root.join("core/src");
    let files: Vec<PathBuf> = rust_files(&src).into_iter().filter(|f| f != &src.join("lib.rs")).collect();
    let components = |file: &Path| -> Vec<String> {
        let inner = file.strip_prefix(&src).expect("a file under core/src");
        inner.iter().map(|c| c.to_string_lossy().trim_end_matches(".rs").to_owned()).collect()
    };
    let modules: BTreeSet<String> = files.iter().map(|f| components(f)[0].clone()).collect();
    let mut graph = Graph::new();
    for file in &files {
        let parts = components(file);
        let module = &parts[0];
        // How many `super::` reach the crate root: one per folder, less one for `mod.rs`.
        let depth = parts.len() - usize::from(parts.last().is_some_and(|p| p == "mod"));
        let place = relative(root, file);
        let code = code(&read(file), true);
        for (line, target) in crate_paths(&tokens(&code), depth) {
            if target != *module && modules.contains(&target) {
                let places = graph.entry(module.clone()).or_default().entry(target).or_default();
                let here = format!("{place}:{line}");
                if !places.iter().any(|p| p.starts_with(&format!("{place}:"))) {
                    places.push(here);
                }
            }
        }
    }
    graph
}

/// The first segment after the crate root of every path in `tokens`: `crate::m`,
/// `crate::{a::X, b}` (each item of the group) and `super::…::m` with `depth` supers.
fn crate_paths(tokens: &[(usize, &str)], depth: usize) -> Vec<(usize, String)> {
    let mut found = Vec::new();
    let mut i = 0;
    while i < tokens.len() {
        let after_colons = i > 0 && tokens[i - 1].1 == "::";
        let mut j = i;
        let at_root = match tokens[i].1 {
            "crate" if !after_colons && tokens.get(i + 1).is_some_and(|t| t.1 == "::") => {
                j = i + 2;
                true
            }
            "super" if !after_colons => {
                let mut supers = 0;
                while tokens.get(j).is_some_and(|t| t.1 == "super")
                    && tokens.get(j + 1).is_some_and(|t| t.1 == "::")
                {
                    supers += 1;
                    j += 2;
                }
                supers == depth
            }
            _ => false,
        };
        if !at_root {
            i = j.max(i + 1);
            continue;
        }
        match tokens.get(j) {
            Some((_, "{")) => {
                // Each item of the group at its top level starts with a module name.
                let mut level = 0;
                let mut item_start = true;
                for &(line, token) in &tokens[j..] {
                    match token {
                        "{" => {
                            level += 1;
                            item_start = level == 1;
                        }
                        "}" => {
                            level -= 1;
                            if level == 0 {
                                break;
                            }
                        }
                        "," if level == 1 => item_start = true,
                        name if item_start && level == 1 => {
                            found.push((line, name.to_owned()));
                            item_start = false;
                        }
                        _ => {}
                    }
                }
            }
            Some(&(line, name)) => found.push((line, name.to_owned())),
            None => {}
        }
        i = j + 1;
    }
    found
}

/// Every cycle the graph's strongly connected parts hold, one through each edge inside them
/// (the shortest way back), each starting at its smallest module, without repeats.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    let mut found = BTreeSet::new();
    for (from, targets) in graph {
        for to in targets.keys() {
            if let Some(back) = shortest_path(graph, to, from) {
                // back runs to → … → from; the cycle is from → to → … → from.
                let mut cycle: Vec<String> = std::iter::once(from.clone()).chain(back).collect();
                cycle.pop();
                let smallest = (0..cycle.len()).min_by_key(|&k| &cycle[k]).unwrap_or(0);
                cycle.rotate_left(smallest);
                cycle.push(cycle[0].clone());
                found.insert((cycle.len(), cycle));
            }
        }
    }
    found.into_iter().map(|(_, cycle)| cycle).collect()
}

/// The modules on the shortest way from `from` to `to`, both included.
fn shortest_path(graph: &Graph, from: &str, to: &str) -> Option<Vec<String>> {
    let mut came_from: BTreeMap<&str, &str> = BTreeMap::new();
    let mut queue = VecDeque::from([from]);
    let mut seen = BTreeSet::from([from]);
    while let Some(at) = queue.pop_front() {
        if at == to {
            let mut path = vec![to.to_owned()];
            let mut step = to;
            while let Some(&prev) = came_from.get(step) {
                path.push(prev.to_owned());
                step = prev;
            }
            path.reverse();
            return Some(path);
        }
        for next in graph.get(at).into_iter().flat_map(BTreeMap::keys) {
            if seen.insert(next) {
                came_from.insert(next, at);
                queue.push_back(next);
            }
        }
    }
    None
}

#[cfg(test)]
mod checks {
    //! The tidy tests' own reading of Rust, on small samples.

    use super::*;

    fn paths(code: &str, depth: usize) -> Vec<String> {
        let code = blank(code, true);
        crate_paths(&tokens(&code), depth).into_iter().map(|(line, m)| format!("{line}:{m}")).collect()
    }

    #[test]
    fn paths_from_uses_groups_and_inline_code() {
        let code = r##"
use crate::run::{Engine, RunRecord};
pub(crate) use crate::{
    approval::{Choice, PendingCall},
    ports,
};
use super::super::policy::Effect;
use super::sibling;
fn f() -> crate::surface::Envelope { crate::code::prepare("crate::not::this") } // crate::nor::this
/* crate::nor::that */ let c = '"'; let s = r#"crate::raw::no"#;
"##;
        assert_eq!(
            paths(code, 2),
            ["2:run", "4:approval", "5:ports", "7:policy", "9:surface", "9:code"].map(str::to_owned)
        );
        assert_eq!(paths("use super::policy;", 1), ["1:policy"]);
    }

    #[test]
    fn test_items_are_left_out() {
        let text = r#"use crate::a;
#[cfg(test)]
use crate::b;
#[cfg(test)]
mod tests {
    fn f() { "}"; }
}
impl crate::c::X for Y {}
"#;
        let kept: Vec<String> = code(text, false).lines().map(|l| l.trim_end().to_owned()).collect();
        assert_eq!(kept, ["use crate::a;", "", "", "", "", "", "", "impl crate::c::X for Y {}"]);
    }

    #[test]
    fn cycles_through_every_edge() {
        let mut graph = Graph::new();
        for (from, to) in [("a", "b"), ("b", "a"), ("b", "c"), ("c", "a"), ("c", "d")] {
            graph.entry(from.to_owned()).or_default().insert(to.to_owned(), vec![]);
        }
        let cycles: Vec<String> = cycles(&graph).iter().map(|c| c.join(" → ")).collect();
        assert_eq!(cycles, ["a → b → a", "a → b → c → a"]);
    }
}

//! Tool addresses (`namespace.tool`) and the normalisation of upstream tool names to stable
//! JavaScript identifiers.
//!
//! A namespace is chosen by a person when a source is added and becomes a global in the sandbox,
//! so it is held to a narrow, predictable shape. A tool's identifier is derived from the name the
//! upstream server uses (`create_issue` → `createIssue`); the original name is kept beside it for
//! the upstream call.

use std::collections::BTreeMap;
use std::fmt;

use sha2::{Digest, Sha256};

/// Longest namespace accepted, in bytes.
pub const MAX_NAMESPACE_LEN: usize = 32;

/// Words a namespace may not take: JavaScript reserved words and the sandbox's own globals.
const RESERVED_NAMESPACES: &[&str] = &[
    // TypeScript type operators: `readonly.Thing` cannot be written in a declaration.
    "readonly",
    "keyof",
    "unique",
    "infer",
    // Globals the guest prelude defines or the language owns.
    "hub",
    "console",
    "crypto",
    "date",
    "math",
    "json",
    "object",
    "array",
    "promise",
    "tool_error",
    "toolerror",
    "globalthis",
    "undefined",
    "nan",
    "infinity",
    "arguments",
    "eval",
    "function",
    "settimeout",
    "cleartimeout",
    "structuredclone",
    "textencoder",
    "textdecoder",
    "atob",
    "btoa",
    "fetch",
    "require",
    "process",
    "buffer",
    "import",
    "module",
    "exports",
    "window",
    "self",
    "reflect",
    "proxy",
    "symbol",
    "error",
    "string",
    "number",
    "boolean",
    "bigint",
    "map",
    "set",
    "weakmap",
    "weakset",
    "regexp",
    "intl",
    "webassembly",
    "atomics",
];

/// JavaScript reserved words (ES2024 keywords, strict-mode and future reserved words, literals).
const JS_RESERVED: &[&str] = &[
    "await",
    "break",
    "case",
    "catch",
    "class",
    "const",
    "continue",
    "debugger",
    "default",
    "delete",
    "do",
    "else",
    "enum",
    "export",
    "extends",
    "false",
    "finally",
    "for",
    "function",
    "if",
    "implements",
    "import",
    "in",
    "instanceof",
    "interface",
    "let",
    "new",
    "null",
    "package",
    "private",
    "protected",
    "public",
    "return",
    "static",
    "super",
    "switch",
    "this",
    "throw",
    "true",
    "try",
    "typeof",
    "var",
    "void",
    "while",
    "with",
    "yield",
    "async",
    "of",
    "get",
    "set",
    "arguments",
    "eval",
    "undefined",
    "NaN",
    "Infinity",
];

/// Member names that would shadow or confuse `Object.prototype` or promise resolution when used
/// as a key of a namespace object.
const UNSAFE_MEMBERS: &[&str] = &[
    "constructor",
    "prototype",
    "then",
    "toString",
    "toLocaleString",
    "valueOf",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toJSON",
];

/// Why a namespace was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NamespaceError {
    #[error(
        "namespace `{0}` is not allowed: use 1–{MAX_NAMESPACE_LEN} characters, lowercase ASCII \
         letters, digits and `_`, starting with a letter (for example `github` or `my_notes`)"
    )]
    Shape(String),
    #[error("namespace `{0}` is reserved by the sandbox or JavaScript: pick another name")]
    Reserved(String),
}

/// A validated namespace: the global a source's tools appear under in code.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize)]
#[serde(transparent)]
pub struct Namespace(String);

impl Namespace {
    pub fn new(raw: &str) -> Result<Self, NamespaceError> {
        let shape_ok = !raw.is_empty()
            && raw.len() <= MAX_NAMESPACE_LEN
            && raw.as_bytes()[0].is_ascii_lowercase()
            && raw.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
        if !shape_ok {
            return Err(NamespaceError::Shape(truncate_for_message(raw)));
        }
        if RESERVED_NAMESPACES.contains(&raw) || JS_RESERVED.contains(&raw) {
            return Err(NamespaceError::Reserved(raw.to_owned()));
        }
        Ok(Namespace(raw.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Proposes a namespace from a free-form server name (`"GitHub MCP"` → `github`,
    /// `"@acme/linear-server"` → `linear`). Always returns a valid namespace.
    pub fn suggest(raw: &str) -> Namespace {
        let last = raw.rsplit(['/', '\\']).next().unwrap_or(raw);
        let mut words: Vec<String> = last
            .split(|c: char| !c.is_ascii_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| w.to_ascii_lowercase())
            .filter(|w| w.chars().all(|c| c.is_ascii_alphanumeric()))
            .collect();
        // Drop words that say nothing about the source.
        let noise = ["mcp", "server", "modelcontextprotocol", "npx", "node", "js", "ts", "stdio"];
        if words.iter().any(|w| !noise.contains(&w.as_str())) {
            words.retain(|w| !noise.contains(&w.as_str()));
        }
        let mut name = words.join("_");
        name.truncate(MAX_NAMESPACE_LEN);
        let name = name.trim_end_matches('_').to_owned();
        let name = match name.as_bytes().first() {
            None => "source".to_owned(),
            Some(b) if b.is_ascii_digit() => format!("s{name}"),
            Some(_) => name,
        };
        match Namespace::new(&name) {
            Ok(ns) => ns,
            Err(_) => {
                let mut fallback = format!("{name}_src");
                fallback.truncate(MAX_NAMESPACE_LEN);
                Namespace::new(&fallback).unwrap_or_else(|_| Namespace("source".to_owned()))
            }
        }
    }
}

impl fmt::Display for Namespace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<'de> serde::Deserialize<'de> for Namespace {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        Namespace::new(&raw).map_err(serde::de::Error::custom)
    }
}

/// `namespace.tool`, how code, policies and journals name a tool.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ToolAddress {
    pub namespace: Namespace,
    /// The normalised JavaScript identifier, not the upstream name.
    pub tool: String,
}

/// Why a string is not a tool address.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum AddressError {
    #[error("`{0}` is not a tool address: write `namespace.tool`, for example `github.createIssue`")]
    Shape(String),
    #[error(transparent)]
    Namespace(#[from] NamespaceError),
}

impl ToolAddress {
    /// `namespace.tool`, as `to_string` writes it, without the formatter: every call's policy
    /// lookup needs it.
    pub fn text(&self) -> String {
        let mut text = String::with_capacity(self.namespace.0.len() + 1 + self.tool.len());
        text.push_str(&self.namespace.0);
        text.push('.');
        text.push_str(&self.tool);
        text
    }

    pub fn new(namespace: Namespace, tool: impl Into<String>) -> Self {
        ToolAddress { namespace, tool: tool.into() }
    }

    pub fn parse(raw: &str) -> Result<Self, AddressError> {
        let (ns, tool) = raw.split_once('.').ok_or_else(|| AddressError::Shape(truncate_for_message(raw)))?;
        if tool.is_empty() || !is_identifier(tool) {
            return Err(AddressError::Shape(truncate_for_message(raw)));
        }
        Ok(ToolAddress { namespace: Namespace::new(ns)?, tool: tool.to_owned() })
    }
}

impl fmt::Display for ToolAddress {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.namespace, self.tool)
    }
}

impl serde::Serialize for ToolAddress {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for ToolAddress {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        ToolAddress::parse(&raw).map_err(serde::de::Error::custom)
    }
}

/// Whether `s` is an identifier this crate would produce: starts with a letter, `_` or `$`,
/// continues with alphanumerics, `_` or `$`.
pub fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    match chars.next() {
        Some(c) if c.is_alphabetic() || c == '_' || c == '$' => {}
        _ => return false,
    }
    chars.all(|c| c.is_alphanumeric() || c == '_' || c == '$')
}

/// Normalises one upstream tool name to a JavaScript identifier, ignoring collisions.
///
/// Separators (`_`, `-`, `.`, spaces, any other punctuation) and case changes split words; words
/// are joined in camelCase. A leading digit gets a `_` prefix; reserved words and members of
/// `Object.prototype` get a `_` suffix. A name with no letters or digits becomes `tool` plus a
/// short digest of the name, so it stays stable.
pub fn normalize_tool_name(name: &str) -> String {
    let words = split_words(name);
    let mut out = String::with_capacity(name.len());
    for (i, word) in words.iter().enumerate() {
        if i == 0 {
            out.push_str(&lower_leading(word));
        } else {
            let mut chars = word.chars();
            if let Some(first) = chars.next() {
                out.extend(first.to_uppercase());
                out.push_str(chars.as_str());
            }
        }
    }
    if out.is_empty() {
        return format!("tool{}", short_digest(name, 8));
    }
    if out.starts_with(|c: char| c.is_numeric()) {
        out.insert(0, '_');
    }
    if JS_RESERVED.contains(&out.as_str()) || UNSAFE_MEMBERS.contains(&out.as_str()) {
        out.push('_');
    }
    out
}

/// Normalises every tool name of one source, resolving collisions deterministically.
///
/// Returns `(original name, identifier)` pairs in the input order. When several names map to
/// the same identifier, the one whose name already is that identifier keeps it (else the one
/// that sorts first); each other gets a suffix from a digest of its own name, so adding or
/// removing an unrelated tool never renames another.
pub fn normalize_tool_names<'a>(names: impl IntoIterator<Item = &'a str>) -> Vec<(String, String)> {
    let names: Vec<&str> = names.into_iter().collect();
    let mut by_ident: BTreeMap<String, Vec<&str>> = BTreeMap::new();
    for name in &names {
        by_ident.entry(normalize_tool_name(name)).or_default().push(name);
    }
    let mut taken: std::collections::BTreeSet<String> = by_ident.keys().cloned().collect();
    let mut assigned: BTreeMap<&str, String> = BTreeMap::new();
    for (ident, group) in &by_ident {
        let mut group = group.clone();
        group.sort_unstable();
        group.dedup();
        let keeper = group.iter().position(|n| n == ident).unwrap_or(0);
        for (i, name) in group.iter().enumerate() {
            if i == keeper {
                assigned.insert(name, ident.clone());
                continue;
            }
            let mut len = 4;
            let renamed = loop {
                let candidate = format!("{ident}_{}", short_digest(name, len));
                if !taken.contains(&candidate) || len >= 64 {
                    break candidate;
                }
                len += 2;
            };
            taken.insert(renamed.clone());
            assigned.insert(name, renamed);
        }
    }
    names.iter().map(|n| ((*n).to_owned(), assigned[n].clone())).collect()
}

/// Splits a name into words at separators and case boundaries (`getHTTPResponse_code` →
/// `get`, `HTTP`, `Response`, `code`). Letters and digits of any script are kept.
pub fn split_words(name: &str) -> Vec<String> {
    let mut words = Vec::new();
    for chunk in name.split(|c: char| !c.is_alphanumeric()) {
        let chars: Vec<char> = chunk.chars().collect();
        let mut start = 0;
        for i in 1..chars.len() {
            let (prev, cur) = (chars[i - 1], chars[i]);
            let next = chars.get(i + 1).copied();
            let lower_to_upper = (prev.is_lowercase() || prev.is_numeric()) && cur.is_uppercase();
            let acronym_end =
                prev.is_uppercase() && cur.is_uppercase() && next.is_some_and(|n| n.is_lowercase());
            if lower_to_upper || acronym_end {
                words.push(chars[start..i].iter().collect());
                start = i;
            }
        }
        if start < chars.len() {
            words.push(chars[start..].iter().collect());
        }
    }
    words
}

/// Lowercases the leading capital(s) of the first word: `Create` → `create`, `HTTP` → `http`.
fn lower_leading(word: &str) -> String {
    if word.chars().all(|c| !c.is_lowercase()) {
        return word.to_lowercase();
    }
    let mut chars = word.chars();
    let mut out = String::with_capacity(word.len());
    if let Some(first) = chars.next() {
        out.extend(first.to_lowercase());
    }
    out.push_str(chars.as_str());
    out
}

fn short_digest(name: &str, hex_len: usize) -> String {
    let digest = Sha256::digest(name.as_bytes());
    let mut s = hex::encode(digest);
    s.truncate(hex_len);
    s
}

fn truncate_for_message(raw: &str) -> String {
    const MAX: usize = 64;
    if raw.len() <= MAX {
        return raw.to_owned();
    }
    let mut end = MAX;
    while !raw.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &raw[..end])
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check(names: &[&str], expect: Expect) {
        let out = normalize_tool_names(names.iter().copied());
        let text: String = out.iter().map(|(n, i)| format!("{n:?} -> {i}\n")).collect();
        expect.assert_eq(&text);
    }

    #[test]
    fn normalises_common_shapes() {
        check(
            &[
                "create_issue",
                "list-pull-requests",
                "files.read",
                "get file contents",
                "searchIssues",
                "CreateRepo",
                "HTTPGet",
                "get_HTML_page",
                "browser_navigate",
                "2fa_verify",
                "delete",
                "constructor",
                "then",
                "créer_tâche",
                "获取数据",
                "🔥",
                "__proto__",
                "",
            ],
            expect![[r#"
                "create_issue" -> createIssue
                "list-pull-requests" -> listPullRequests
                "files.read" -> filesRead
                "get file contents" -> getFileContents
                "searchIssues" -> searchIssues
                "CreateRepo" -> createRepo
                "HTTPGet" -> httpGet
                "get_HTML_page" -> getHTMLPage
                "browser_navigate" -> browserNavigate
                "2fa_verify" -> _2faVerify
                "delete" -> delete_
                "constructor" -> constructor_
                "then" -> then_
                "créer_tâche" -> créerTâche
                "获取数据" -> 获取数据
                "🔥" -> tooled8d8305
                "__proto__" -> proto
                "" -> toole3b0c442
            "#]],
        );
    }

    #[test]
    fn collisions_are_deterministic_and_keep_the_exact_name() {
        check(
            &["create-issue", "create_issue", "createIssue", "create.issue"],
            expect![[r#"
                "create-issue" -> createIssue_dc51
                "create_issue" -> createIssue_e748
                "createIssue" -> createIssue
                "create.issue" -> createIssue_152d
            "#]],
        );
        // Order of input never changes the mapping.
        let a = normalize_tool_names(["b_c", "bC", "b-c"]);
        let b = normalize_tool_names(["b-c", "b_c", "bC"]);
        let mut a_sorted = a.clone();
        let mut b_sorted = b.clone();
        a_sorted.sort();
        b_sorted.sort();
        assert_eq!(a_sorted, b_sorted);
    }

    #[test]
    fn every_result_is_an_identifier() {
        for name in ["a", "1", "-", "a-1", "$x", "x$", "ÄÖÜ", "a\u{0}b", "ab\ncd"] {
            let ident = normalize_tool_name(name);
            assert!(is_identifier(&ident), "{name:?} -> {ident:?}");
        }
    }

    #[test]
    fn namespaces() {
        let results: String =
            ["github", "my_notes", "GitHub", "1abc", "", "a-b", "hub", "class", "x".repeat(33).as_str()]
                .iter()
                .map(|raw| match Namespace::new(raw) {
                    Ok(ns) => format!("ok {ns}\n"),
                    Err(e) => format!("{e}\n"),
                })
                .collect();
        expect![[r#"
            ok github
            ok my_notes
            namespace `GitHub` is not allowed: use 1–32 characters, lowercase ASCII letters, digits and `_`, starting with a letter (for example `github` or `my_notes`)
            namespace `1abc` is not allowed: use 1–32 characters, lowercase ASCII letters, digits and `_`, starting with a letter (for example `github` or `my_notes`)
            namespace `` is not allowed: use 1–32 characters, lowercase ASCII letters, digits and `_`, starting with a letter (for example `github` or `my_notes`)
            namespace `a-b` is not allowed: use 1–32 characters, lowercase ASCII letters, digits and `_`, starting with a letter (for example `github` or `my_notes`)
            namespace `hub` is reserved by the sandbox or JavaScript: pick another name
            namespace `class` is reserved by the sandbox or JavaScript: pick another name
            namespace `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx` is not allowed: use 1–32 characters, lowercase ASCII letters, digits and `_`, starting with a letter (for example `github` or `my_notes`)
        "#]]
        .assert_eq(&results);
    }

    #[test]
    fn suggested_namespaces_are_valid() {
        let out: String =
            ["GitHub MCP", "@acme/linear-server", "server-memory", "mcp", "42", "class", "Slack"]
                .iter()
                .map(|raw| format!("{raw:?} -> {}\n", Namespace::suggest(raw)))
                .collect();
        expect![[r#"
            "GitHub MCP" -> github
            "@acme/linear-server" -> linear
            "server-memory" -> memory
            "mcp" -> mcp
            "42" -> s42
            "class" -> class_src
            "Slack" -> slack
        "#]]
        .assert_eq(&out);
    }

    #[test]
    fn addresses_parse_and_print() {
        let a = ToolAddress::parse("github.createIssue").unwrap();
        assert_eq!(a.to_string(), "github.createIssue");
        assert!(ToolAddress::parse("github").is_err());
        assert!(ToolAddress::parse("github.").is_err());
        assert!(ToolAddress::parse("GitHub.x").is_err());
        assert!(ToolAddress::parse("github.a-b").is_err());
    }
}

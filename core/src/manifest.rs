//! Manifests: the tools one source offers, as read from its `tools/list`, each with the
//! identifier it has in code and its **contract digest**.
//!
//! The digest is SHA-256 over the canonical JSON of what a tool claims to be (name, description,
//! input and output schemas, annotations). A person approves a digest; when a refresh yields a
//! different one, [`diff`] says in plain words what changed.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};

use crate::address::{Namespace, ToolAddress, normalize_tool_names};
use crate::canonical;

/// What the server says about a tool's behaviour. All hints are advisory and untrusted; policy
/// only ever uses them to ask *less* for tools that declare themselves read-only.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Annotations {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub read_only_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destructive_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idempotent_hint: Option<bool>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub open_world_hint: Option<bool>,
}

impl Annotations {
    pub fn is_read_only(&self) -> bool {
        self.read_only_hint == Some(true)
    }

    /// Destructive unless the tool is read-only or says otherwise, as the MCP specification
    /// advises for unannotated tools.
    pub fn is_destructive(&self) -> bool {
        !self.is_read_only() && self.destructive_hint != Some(false)
    }
}

/// One tool as a source declares it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ToolRecord {
    /// The upstream name, used for the upstream call.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default)]
    pub description: String,
    pub input_schema: Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    #[serde(default)]
    pub annotations: Annotations,
    /// An HTTP API operation: how a call becomes a request. Part of the contract; `None` for
    /// MCP tools.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub http: Option<crate::operation::HttpOperation>,
}

/// The SHA-256 of a tool's canonical contract, printed as `sha256:<hex>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ContractDigest(pub [u8; 32]);

impl fmt::Display for ContractDigest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "sha256:{}", hex::encode(self.0))
    }
}

impl ContractDigest {
    pub fn parse(raw: &str) -> Option<Self> {
        let hex_part = raw.strip_prefix("sha256:")?;
        let mut bytes = [0u8; 32];
        hex::decode_to_slice(hex_part, &mut bytes).ok()?;
        Some(ContractDigest(bytes))
    }

    /// The first 12 hex digits, for people.
    pub fn short(&self) -> String {
        hex::encode(&self.0[..6])
    }
}

impl Serialize for ContractDigest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for ContractDigest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let raw = String::deserialize(d)?;
        ContractDigest::parse(&raw)
            .ok_or_else(|| serde::de::Error::custom(format!("`{raw}` is not a sha256: digest")))
    }
}

impl ToolRecord {
    /// The JSON a digest is taken over. Title is presentation and stays out; everything the
    /// model or policy reads is in.
    pub fn contract_json(&self) -> Value {
        let mut contract = json!({
            "name": self.name,
            "description": self.description,
            "inputSchema": self.input_schema,
            "outputSchema": self.output_schema,
            "annotations": {
                "readOnlyHint": self.annotations.read_only_hint,
                "destructiveHint": self.annotations.destructive_hint,
                "idempotentHint": self.annotations.idempotent_hint,
                "openWorldHint": self.annotations.open_world_hint,
            },
        });
        // Only operations carry the key, so MCP tools' digests stay what they were.
        if let Some(http) = &self.http {
            contract["http"] = serde_json::to_value(http).unwrap_or(Value::Null);
        }
        contract
    }

    pub fn digest(&self) -> ContractDigest {
        let canonical = canonical::to_string(&self.contract_json());
        ContractDigest(Sha256::digest(canonical.as_bytes()).into())
    }

    /// The first sentence of the description, on one line, for listings.
    pub fn first_sentence(&self) -> String {
        first_sentence(&self.description)
    }

    /// Reads one entry of a `tools/list` result. Errors name the tool and the field.
    pub fn from_mcp(entry: &Value) -> Result<ToolRecord, ManifestProblem> {
        let obj = entry.as_object().ok_or_else(|| ManifestProblem {
            tool: None,
            message: format!("a tool entry is {}, not an object", json_kind(entry)),
        })?;
        let name = match obj.get("name") {
            Some(Value::String(n)) if !n.is_empty() => n.clone(),
            Some(Value::String(_)) => {
                return Err(ManifestProblem { tool: None, message: "a tool has an empty `name`".into() });
            }
            other => {
                return Err(ManifestProblem {
                    tool: None,
                    message: format!(
                        "a tool's `name` is {}, not a string",
                        other.map_or("missing", json_kind)
                    ),
                });
            }
        };
        let problem = |message: String| ManifestProblem { tool: Some(name.clone()), message };
        let opt_string = |field: &str| -> Result<Option<String>, ManifestProblem> {
            match obj.get(field) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => Ok(Some(s.clone())),
                Some(other) => Err(problem(format!("`{field}` is {}, not a string", json_kind(other)))),
            }
        };
        let title = opt_string("title")?;
        let description = opt_string("description")?.unwrap_or_default();
        let input_schema = match obj.get("inputSchema") {
            Some(v @ (Value::Object(_) | Value::Bool(_))) => v.clone(),
            None | Some(Value::Null) => json!({ "type": "object" }),
            Some(other) => {
                return Err(problem(format!("`inputSchema` is {}, not a JSON Schema", json_kind(other))));
            }
        };
        let output_schema = match obj.get("outputSchema") {
            None | Some(Value::Null) => None,
            Some(v @ (Value::Object(_) | Value::Bool(_))) => Some(v.clone()),
            Some(other) => {
                return Err(problem(format!("`outputSchema` is {}, not a JSON Schema", json_kind(other))));
            }
        };
        let annotations = match obj.get("annotations") {
            None | Some(Value::Null) => Annotations::default(),
            Some(Value::Object(map)) => read_annotations(map),
            Some(other) => {
                return Err(problem(format!("`annotations` is {}, not an object", json_kind(other))));
            }
        };
        Ok(ToolRecord { name, title, description, input_schema, output_schema, annotations, http: None })
    }
}

/// Hints of the wrong type are dropped, not trusted: a tool that says `"readOnlyHint": "yes"`
/// is treated as saying nothing.
fn read_annotations(map: &Map<String, Value>) -> Annotations {
    let flag = |key: &str| map.get(key).and_then(Value::as_bool);
    Annotations {
        title: map.get("title").and_then(Value::as_str).map(str::to_owned),
        read_only_hint: flag("readOnlyHint"),
        destructive_hint: flag("destructiveHint"),
        idempotent_hint: flag("idempotentHint"),
        open_world_hint: flag("openWorldHint"),
    }
}

/// "a string", "an object", …: how error messages name a JSON value's kind.
pub fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// The first sentence of a text, whitespace collapsed, at most 200 characters.
pub fn first_sentence(text: &str) -> String {
    let flat: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    let mut end = flat.len();
    for (i, c) in flat.char_indices() {
        if matches!(c, '.' | '!' | '?' | '。') {
            let next = flat[i + c.len_utf8()..].chars().next();
            if next.is_none_or(char::is_whitespace) {
                end = i + c.len_utf8();
                break;
            }
        }
    }
    let sentence = &flat[..end];
    if sentence.chars().count() <= 200 {
        return sentence.to_owned();
    }
    let cut: String = sentence.chars().take(199).collect();
    format!("{}…", cut.trim_end())
}

/// The longest source description kept; `search` indexes it for every tool of the source.
pub const MAX_SOURCE_DESCRIPTION_CHARS: usize = 400;

/// A source's `initialize` instructions as its manifest's description: whitespace collapsed,
/// control characters dropped, cut at a word near [`MAX_SOURCE_DESCRIPTION_CHARS`]; `None` when
/// nothing is left. Every hub builds it this way, so their manifests (and searches) agree.
pub fn source_description(text: &str) -> Option<String> {
    let mut out = String::new();
    for word in text.split(|c: char| c.is_whitespace() || c.is_control()).filter(|w| !w.is_empty()) {
        if out.chars().count() + word.chars().count() + 1 > MAX_SOURCE_DESCRIPTION_CHARS {
            out.push('…');
            break;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(word);
    }
    (!out.is_empty()).then_some(out)
}

/// Something wrong with one entry of a tool list. The entry is skipped; the rest load.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ManifestProblem {
    pub tool: Option<String>,
    pub message: String,
}

impl fmt::Display for ManifestProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.tool {
            Some(tool) => write!(f, "tool `{tool}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// One tool in a manifest: its identifier in code, what it declares and its digest.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Tool {
    /// The JavaScript identifier (`createIssue`).
    pub ident: String,
    pub record: ToolRecord,
    pub digest: ContractDigest,
}

/// The tools of one source, in the order the source listed them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    pub namespace: Namespace,
    /// What the source says about itself (its server instructions), if anything. `search`
    /// indexes it for every tool of the source and names the source by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    pub tools: Vec<Tool>,
}

impl Manifest {
    /// Builds a manifest from the raw entries of a `tools/list` (all pages concatenated).
    /// Bad entries and repeated names are skipped and reported; never a panic.
    pub fn from_tools_list(namespace: Namespace, entries: &[Value]) -> (Manifest, Vec<ManifestProblem>) {
        let mut problems = Vec::new();
        let mut seen = BTreeSet::new();
        let mut records = Vec::new();
        for entry in entries {
            match ToolRecord::from_mcp(entry) {
                Ok(record) => {
                    if seen.insert(record.name.clone()) {
                        records.push(record);
                    } else {
                        problems.push(ManifestProblem {
                            tool: Some(record.name),
                            message: "listed more than once; the first entry is kept".into(),
                        });
                    }
                }
                Err(problem) => problems.push(problem),
            }
        }
        (Manifest::from_records(namespace, records), problems)
    }

    /// Builds a manifest from records whose names are already unique.
    pub fn from_records(namespace: Namespace, records: Vec<ToolRecord>) -> Manifest {
        let idents = normalize_tool_names(records.iter().map(|r| r.name.as_str()));
        let tools = records
            .into_iter()
            .zip(idents)
            .map(|(record, (_, ident))| Tool { digest: record.digest(), ident, record })
            .collect();
        Manifest { namespace, description: None, tools }
    }

    pub fn tool(&self, ident: &str) -> Option<&Tool> {
        self.tools.iter().find(|t| t.ident == ident)
    }

    pub fn address(&self, tool: &Tool) -> ToolAddress {
        ToolAddress::new(self.namespace.clone(), tool.ident.clone())
    }
}

/// What a refresh changed in one tool, in the words a person reads in review.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "field", rename_all = "camelCase")]
pub enum Change {
    Description {
        before: String,
        after: String,
    },
    InputSchema {
        details: Vec<String>,
    },
    OutputSchema {
        details: Vec<String>,
    },
    Annotations {
        details: Vec<String>,
    },
    Name {
        before: String,
        after: String,
    },
    /// An HTTP operation's request: method, path, where parameters go, the body, the credential.
    Request {
        details: Vec<String>,
    },
}

impl fmt::Display for Change {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Change::Description { before, after } => {
                write!(f, "description changed from \"{}\" to \"{}\"", clip(before, 120), clip(after, 120))
            }
            Change::InputSchema { details } => write!(f, "input schema: {}", details.join("; ")),
            Change::OutputSchema { details } => write!(f, "output schema: {}", details.join("; ")),
            Change::Annotations { details } => write!(f, "annotations: {}", details.join("; ")),
            Change::Name { before, after } => write!(f, "upstream name changed from `{before}` to `{after}`"),
            Change::Request { details } => write!(f, "request: {}", details.join("; ")),
        }
    }
}

/// A tool whose contract changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ChangedTool {
    pub name: String,
    pub before: ContractDigest,
    pub after: ContractDigest,
    pub changes: Vec<Change>,
}

/// The difference between two manifests of one source, keyed by upstream name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ManifestDiff {
    pub added: Vec<String>,
    pub removed: Vec<String>,
    pub changed: Vec<ChangedTool>,
}

impl ManifestDiff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.removed.is_empty() && self.changed.is_empty()
    }
}

impl fmt::Display for ManifestDiff {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_empty() {
            return writeln!(f, "no changes");
        }
        for name in &self.added {
            writeln!(f, "+ {name}: new tool")?;
        }
        for name in &self.removed {
            writeln!(f, "- {name}: removed")?;
        }
        for tool in &self.changed {
            writeln!(f, "~ {}: contract {} → {}", tool.name, tool.before.short(), tool.after.short())?;
            for change in &tool.changes {
                writeln!(f, "    {change}")?;
            }
        }
        Ok(())
    }
}

/// Compares two manifests of the same source.
pub fn diff(before: &Manifest, after: &Manifest) -> ManifestDiff {
    let old: BTreeMap<&str, &ToolRecord> =
        before.tools.iter().map(|t| (t.record.name.as_str(), &t.record)).collect();
    let new: BTreeMap<&str, &ToolRecord> =
        after.tools.iter().map(|t| (t.record.name.as_str(), &t.record)).collect();
    let mut out = ManifestDiff::default();
    for (name, record) in &new {
        match old.get(name) {
            None => out.added.push((*name).to_owned()),
            Some(prev) => {
                let (a, b) = (prev.digest(), record.digest());
                if a != b {
                    out.changed.push(ChangedTool {
                        name: (*name).to_owned(),
                        before: a,
                        after: b,
                        changes: describe_changes(prev, record),
                    });
                }
            }
        }
    }
    out.removed = old.keys().filter(|n| !new.contains_key(*n)).map(|n| (*n).to_owned()).collect();
    out
}

fn describe_changes(old: &ToolRecord, new: &ToolRecord) -> Vec<Change> {
    let mut changes = Vec::new();
    if old.name != new.name {
        changes.push(Change::Name { before: old.name.clone(), after: new.name.clone() });
    }
    if old.description != new.description {
        changes.push(Change::Description { before: old.description.clone(), after: new.description.clone() });
    }
    if canonical::to_string(&old.input_schema) != canonical::to_string(&new.input_schema) {
        changes.push(Change::InputSchema { details: schema_changes(&old.input_schema, &new.input_schema) });
    }
    let (old_out, new_out) =
        (old.output_schema.clone().unwrap_or(Value::Null), new.output_schema.clone().unwrap_or(Value::Null));
    if canonical::to_string(&old_out) != canonical::to_string(&new_out) {
        let details = match (&old.output_schema, &new.output_schema) {
            (None, Some(_)) => vec!["added".to_owned()],
            (Some(_), None) => vec!["removed".to_owned()],
            _ => schema_changes(&old_out, &new_out),
        };
        changes.push(Change::OutputSchema { details });
    }
    let hints = |a: &Annotations| {
        [
            ("readOnlyHint", a.read_only_hint),
            ("destructiveHint", a.destructive_hint),
            ("idempotentHint", a.idempotent_hint),
            ("openWorldHint", a.open_world_hint),
        ]
    };
    let details: Vec<String> = hints(&old.annotations)
        .into_iter()
        .zip(hints(&new.annotations))
        .filter(|((_, a), (_, b))| a != b)
        .map(|((key, a), (_, b))| format!("{key} {} → {}", show_hint(a), show_hint(b)))
        .collect();
    if !details.is_empty() {
        changes.push(Change::Annotations { details });
    }
    if old.http != new.http {
        changes.push(Change::Request { details: request_changes(old.http.as_ref(), new.http.as_ref()) });
    }
    changes
}

/// What changed in how an operation is called, in a person's words.
fn request_changes(
    old: Option<&crate::operation::HttpOperation>,
    new: Option<&crate::operation::HttpOperation>,
) -> Vec<String> {
    let (Some(old), Some(new)) = (old, new) else {
        return vec![if new.is_some() {
            "now an HTTP request".to_owned()
        } else {
            "no longer an HTTP request".to_owned()
        }];
    };
    let mut details = Vec::new();
    if (&old.method, &old.path) != (&new.method, &new.path) {
        details.push(format!("{} {} → {} {}", old.method, old.path, new.method, new.path));
    }
    let where_ = |op: &crate::operation::HttpOperation| -> BTreeMap<String, String> {
        op.parameters
            .iter()
            .map(|p| (p.argument.clone(), format!("{:?} `{}`", p.location, p.name).to_lowercase()))
            .collect()
    };
    let (a, b) = (where_(old), where_(new));
    for (arg, place) in &b {
        match a.get(arg) {
            None => details.push(format!("parameter `{arg}` added ({place})")),
            Some(before) if before != place => {
                details.push(format!("parameter `{arg}` moved: {before} → {place}"))
            }
            Some(_) => {}
        }
    }
    for arg in a.keys().filter(|k| !b.contains_key(*k)) {
        details.push(format!("parameter `{arg}` removed"));
    }
    if old.body != new.body {
        details.push(match (&old.body, &new.body) {
            (None, Some(body)) => format!("now sends a {} body", body.media_type),
            (Some(_), None) => "no longer sends a body".to_owned(),
            _ => "its body changed".to_owned(),
        });
    }
    if old.authenticated != new.authenticated {
        details.push(if new.authenticated {
            "now sends the credential".to_owned()
        } else {
            "no longer sends the credential".to_owned()
        });
    }
    if details.is_empty() {
        details.push("parameter styles changed".to_owned());
    }
    details
}

fn show_hint(h: Option<bool>) -> &'static str {
    match h {
        Some(true) => "true",
        Some(false) => "false",
        None => "unset",
    }
}

/// Property-level differences between two object schemas; anything else is summarised.
fn schema_changes(old: &Value, new: &Value) -> Vec<String> {
    let props = |v: &Value| -> BTreeMap<String, Value> {
        v.get("properties")
            .and_then(Value::as_object)
            .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
            .unwrap_or_default()
    };
    let required = |v: &Value| -> BTreeSet<String> {
        v.get("required")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default()
    };
    let (op, np) = (props(old), props(new));
    let (or, nr) = (required(old), required(new));
    let mut details = Vec::new();
    for (name, schema) in &np {
        if !op.contains_key(name) {
            let req = if nr.contains(name) { "required" } else { "optional" };
            details.push(format!("new {req} parameter `{name}`{}", type_suffix(schema)));
        }
    }
    for name in op.keys() {
        if !np.contains_key(name) {
            details.push(format!("parameter `{name}` removed"));
        }
    }
    for (name, schema) in &np {
        let Some(prev) = op.get(name) else { continue };
        if canonical::to_string(prev) != canonical::to_string(schema) {
            let (a, b) = (type_label(prev), type_label(schema));
            if a != b {
                details.push(format!("parameter `{name}` type {a} → {b}"));
            } else if prev.get("description") != schema.get("description") {
                details.push(format!("parameter `{name}` description changed"));
            } else {
                details.push(format!("parameter `{name}` schema changed"));
            }
        }
        match (or.contains(name), nr.contains(name)) {
            (false, true) => details.push(format!("parameter `{name}` is now required")),
            (true, false) => details.push(format!("parameter `{name}` is now optional")),
            _ => {}
        }
    }
    let strip = |v: &Value| -> Value {
        let mut v = v.clone();
        if let Some(m) = v.as_object_mut() {
            m.remove("properties");
            m.remove("required");
        }
        v
    };
    if canonical::to_string(&strip(old)) != canonical::to_string(&strip(new)) {
        details.push("schema changed outside its parameters".to_owned());
    }
    if details.is_empty() {
        details.push("changed".to_owned());
    }
    details
}

fn type_label(schema: &Value) -> String {
    match schema.get("type") {
        Some(Value::String(t)) => t.clone(),
        Some(Value::Array(ts)) => ts.iter().filter_map(Value::as_str).collect::<Vec<_>>().join("|"),
        _ if schema.get("enum").is_some() => "enum".to_owned(),
        _ if schema.get("$ref").is_some() => "reference".to_owned(),
        _ => "any".to_owned(),
    }
}

fn type_suffix(schema: &Value) -> String {
    match type_label(schema).as_str() {
        "any" => String::new(),
        t => format!(" ({t})"),
    }
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_owned();
    }
    let cut: String = s.chars().take(max - 1).collect();
    format!("{cut}…")
}

#[cfg(test)]
mod tests {
    use expect_test::expect;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_source_description_is_one_capped_line() {
        assert_eq!(
            source_description("  Tools for\n\tthe tracker.\u{7}  ").as_deref(),
            Some("Tools for the tracker.")
        );
        assert_eq!(source_description(" \n "), None);
        let long = source_description(&"word ".repeat(200)).unwrap();
        assert!(long.chars().count() <= MAX_SOURCE_DESCRIPTION_CHARS + 1 && long.ends_with('…'), "{long}");
    }

    fn ns() -> Namespace {
        Namespace::new("github").unwrap()
    }

    #[test]
    fn digest_ignores_key_order_whitespace_and_title() {
        let a = ToolRecord::from_mcp(&serde_json::from_str(
            r#"{"name":"x","title":"X","description":"d","inputSchema":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"number"}}}}"#,
        ).unwrap()).unwrap();
        let b = ToolRecord::from_mcp(&serde_json::from_str(
            r#"{ "inputSchema": { "properties": { "b": {"type":"number"}, "a": {"type":"string"} }, "type": "object" },
                "description": "d", "name": "x" }"#,
        ).unwrap()).unwrap();
        assert_eq!(a.digest(), b.digest());
        let mut c = b.clone();
        c.description.push('!');
        assert_ne!(a.digest(), c.digest());
        let mut d = b.clone();
        d.annotations.read_only_hint = Some(true);
        assert_ne!(a.digest(), d.digest());
    }

    #[test]
    fn bad_entries_are_reported_by_name_and_field() {
        let entries = vec![
            json!({"name": "ok", "inputSchema": {"type": "object"}}),
            json!({"name": "ok", "description": "again"}),
            json!({"name": 7}),
            json!({"description": "nameless"}),
            json!("just a string"),
            json!({"name": "bad_schema", "inputSchema": "object"}),
            json!({"name": "bad_desc", "description": ["x"]}),
            json!({"name": "bad_hints", "annotations": {"readOnlyHint": "yes"}}),
        ];
        let (manifest, problems) = Manifest::from_tools_list(ns(), &entries);
        let names: Vec<_> = manifest.tools.iter().map(|t| t.ident.as_str()).collect();
        assert_eq!(names, ["ok", "badHints"]);
        assert!(!manifest.tools[1].record.annotations.is_read_only());
        let text: String = problems.iter().map(|p| format!("{p}\n")).collect();
        expect![[r#"
            tool `ok`: listed more than once; the first entry is kept
            a tool's `name` is a number, not a string
            a tool's `name` is missing, not a string
            a tool entry is a string, not an object
            tool `bad_schema`: `inputSchema` is a string, not a JSON Schema
            tool `bad_desc`: `description` is an array, not a string
        "#]]
        .assert_eq(&text);
    }

    #[test]
    fn diff_says_what_changed() {
        let before = vec![
            json!({"name": "create_issue", "description": "Create an issue.", "inputSchema": {
                "type": "object", "required": ["title"],
                "properties": {"title": {"type": "string"}, "body": {"type": "string"}, "milestone": {"type": "number"}}}}),
            json!({"name": "search_issues", "description": "Search issues.", "annotations": {"readOnlyHint": true}}),
            json!({"name": "old_tool", "description": "Going away."}),
        ];
        let after = vec![
            json!({"name": "create_issue", "description": "Create an issue and notify watchers.", "inputSchema": {
                "type": "object", "required": ["title", "labels"],
                "properties": {"title": {"type": "string"}, "body": {"type": "string"}, "labels": {"type": "array", "items": {"type": "string"}},
                               "milestone": {"type": "string"}}},
                "outputSchema": {"type": "object"}}),
            json!({"name": "search_issues", "description": "Search issues.", "annotations": {"readOnlyHint": false, "destructiveHint": true}}),
            json!({"name": "delete_repo", "description": "Delete a repository."}),
        ];
        let (a, _) = Manifest::from_tools_list(ns(), &before);
        let (b, _) = Manifest::from_tools_list(ns(), &after);
        let d = diff(&a, &b);
        expect![[r#"
            + delete_repo: new tool
            - old_tool: removed
            ~ create_issue: contract f084a8ba24f6 → 5e2624ddfcd8
                description changed from "Create an issue." to "Create an issue and notify watchers."
                input schema: new required parameter `labels` (array); parameter `milestone` type number → string
                output schema: added
            ~ search_issues: contract 6d29a883fffd → 5efa77f1d37b
                annotations: readOnlyHint true → false; destructiveHint unset → true
        "#]]
        .assert_eq(&d.to_string());
        assert!(diff(&a, &a).is_empty());
    }

    #[test]
    fn first_sentences() {
        let out: Vec<String> = [
            "Create an issue. Then more.",
            "  Multi\n line   text without stop",
            "Version 1.2 is here. Yes.",
            "",
        ]
        .iter()
        .map(|s| first_sentence(s))
        .collect();
        expect![[r#"["Create an issue.", "Multi line text without stop", "Version 1.2 is here.", ""]"#]]
            .assert_eq(&format!("{out:?}"));
    }
}

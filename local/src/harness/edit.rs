//! Editing a harness file in place: adding or removing the hub's `capabilities` entry and
//! turning imported direct entries off. Everything else in the file survives: TOML through
//! `toml_edit` (comments and layout kept), JSON through an order-preserving map written back
//! with the file's own indentation. A JSON file with comments is never rewritten.

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};

use super::read::{get_path, has_json_comments};
use super::{Descriptor, ENTRY_NAME, Format, PARKED_KEY};

/// The hub's entry: the command a harness runs to reach the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubEntry {
    pub command: String,
    pub args: Vec<String>,
    /// Only `CAPABILITIES_HOME`, when the hub does not live at its default place.
    pub env: Vec<(String, String)>,
}

impl HubEntry {
    /// The entry as the JSON a harness of this kind expects.
    pub fn json(&self, harness: &Descriptor) -> Value {
        let mut entry = Map::new();
        if harness.id == "claude-code" {
            entry.insert("type".into(), "stdio".into());
        }
        entry.insert("command".into(), self.command.clone().into());
        entry.insert("args".into(), self.args.clone().into());
        if !self.env.is_empty() {
            entry.insert(
                "env".into(),
                Value::Object(self.env.iter().map(|(k, v)| (k.clone(), v.clone().into())).collect()),
            );
        }
        Value::Object(entry)
    }

    /// What to paste by hand into a harness the hub does not write.
    pub fn snippet(&self, harness: &Descriptor) -> String {
        let key = harness.servers_key.join(".");
        match harness.format {
            Format::Yaml => {
                let mut out =
                    format!("{key}:\n  {ENTRY_NAME}:\n    command: {}\n    args:", yaml_str(&self.command));
                for arg in &self.args {
                    out.push_str(&format!("\n      - {}", yaml_str(arg)));
                }
                if !self.env.is_empty() {
                    out.push_str("\n    env:");
                    for (k, v) in &self.env {
                        out.push_str(&format!("\n      {k}: {}", yaml_str(v)));
                    }
                }
                out
            }
            Format::Toml => {
                let mut doc = toml_edit::DocumentMut::new();
                let _ = set_toml_entry(&mut doc, harness, self);
                doc.to_string().trim_end().to_owned()
            }
            _ => {
                let mut servers = Map::new();
                servers.insert(ENTRY_NAME.into(), self.json(harness));
                let mut wrapper = Map::new();
                wrapper.insert(key, Value::Object(servers));
                serde_json::to_string_pretty(&Value::Object(wrapper)).unwrap_or_default()
            }
        }
    }
}

fn yaml_str(text: &str) -> String {
    serde_json::to_string(text).unwrap_or_default()
}

/// The file's text with the hub's entry set (added, or replaced if it differs).
pub fn with_entry(harness: &Descriptor, text: &str, entry: &HubEntry) -> Result<String> {
    match harness.format {
        Format::Json => edit_json(text, |doc| {
            let servers = object_at(doc, harness.servers_key)?;
            servers.insert(ENTRY_NAME.to_owned(), entry.json(harness));
            Ok(true)
        })
        .map(|t| t.unwrap_or_else(|| text.to_owned())),
        Format::Toml => {
            let mut doc: toml_edit::DocumentMut = text.parse().context("not valid TOML")?;
            set_toml_entry(&mut doc, harness, entry)?;
            Ok(doc.to_string())
        }
        Format::Yaml => bail!("{} is not written by the hub; add the entry by hand", harness.name),
    }
}

/// The file's text without the hub's entry; `None` when it has none.
pub fn without_entry(harness: &Descriptor, text: &str) -> Result<Option<String>> {
    match harness.format {
        Format::Json => edit_json(text, |doc| {
            Ok(object_at_existing(doc, harness.servers_key)
                .is_some_and(|s| s.shift_remove(ENTRY_NAME).is_some()))
        }),
        Format::Toml => {
            let mut doc: toml_edit::DocumentMut = text.parse().context("not valid TOML")?;
            let Some(servers) = toml_table_at(&mut doc, harness.servers_key, false) else { return Ok(None) };
            if servers.remove(ENTRY_NAME).is_none() {
                return Ok(None);
            }
            Ok(Some(doc.to_string()))
        }
        Format::Yaml => Ok(None),
    }
}

/// The file's text with the named direct entries turned off: JSON entries move under
/// [`PARKED_KEY`] beside the servers they came from; TOML entries get `enabled = false`.
/// `names` are `(scope, name)` as [`super::read::Found`] gives them.
pub fn park(harness: &Descriptor, text: &str, names: &[(String, String)]) -> Result<Option<String>> {
    match harness.format {
        Format::Json => edit_json(text, |doc| {
            let mut changed = false;
            for (scope, name) in names {
                let (parent, key) = match (scope.strip_prefix("project "), harness.projects) {
                    (Some(project), Some(p)) => {
                        (object_at_existing(doc, &[p.projects_key, project]), p.servers_key)
                    }
                    (Some(_), None) => continue,
                    (None, _) => {
                        let (last, parents) = harness.servers_key.split_last().context("a servers key")?;
                        (object_at_existing(doc, parents), *last)
                    }
                };
                if let Some(parent) = parent {
                    changed |= move_entry(parent, key, name);
                }
            }
            Ok(changed)
        }),
        Format::Toml => {
            let mut doc: toml_edit::DocumentMut = text.parse().context("not valid TOML")?;
            let mut changed = false;
            if let Some(servers) = toml_table_at(&mut doc, harness.servers_key, false) {
                for (_, name) in names {
                    if let Some(table) = servers.get_mut(name).and_then(|t| t.as_table_like_mut()) {
                        table.insert("enabled", toml_edit::value(false));
                        changed = true;
                    }
                }
            }
            Ok(changed.then(|| doc.to_string()))
        }
        Format::Yaml => Ok(None),
    }
}

/// `current` with every place the hub edits (the servers maps of each scope, and the parked
/// entries beside them) put back as they are in `before`; everything else in `current`, such as
/// what the harness itself wrote since, stays.
pub fn restore_servers(harness: &Descriptor, current: &str, before: &str) -> Result<String> {
    match harness.format {
        Format::Json => {
            let before: Value = if before.trim().is_empty() {
                Value::Object(Map::new())
            } else {
                serde_json::from_str(before).context("the backup is not valid JSON")?
            };
            let edited = edit_json(current, |doc| {
                let (last, parents) = harness.servers_key.split_last().context("a servers key")?;
                let mut places: Vec<(Vec<String>, String)> = [*last, PARKED_KEY]
                    .iter()
                    .map(|key| (parents.iter().map(|p| p.to_string()).collect(), key.to_string()))
                    .collect();
                if let Some(projects) = harness.projects {
                    let names: Vec<String> = doc
                        .get(projects.projects_key)
                        .and_then(Value::as_object)
                        .into_iter()
                        .flatten()
                        .map(|(k, _)| k.clone())
                        .collect();
                    for name in names {
                        for key in [projects.servers_key, PARKED_KEY] {
                            places
                                .push((vec![projects.projects_key.to_owned(), name.clone()], key.to_owned()));
                        }
                    }
                }
                let mut changed = false;
                for (parent, key) in places {
                    let path: Vec<&str> = parent.iter().map(String::as_str).collect();
                    let want = get_path(&before, &path).and_then(|p| p.get(&key)).cloned();
                    let Some(object) = object_at_existing(doc, &path) else { continue };
                    if object.get(&key) == want.as_ref() {
                        continue;
                    }
                    changed = true;
                    match want {
                        Some(value) => {
                            object.insert(key, value);
                        }
                        None => {
                            object.shift_remove(&key);
                        }
                    }
                }
                Ok(changed)
            })?;
            Ok(edited.unwrap_or_else(|| current.to_owned()))
        }
        Format::Toml => {
            let mut doc: toml_edit::DocumentMut = current.parse().context("not valid TOML")?;
            let before: toml_edit::DocumentMut = before.parse().context("the backup is not valid TOML")?;
            let (last, parents) = harness.servers_key.split_last().context("a servers key")?;
            let want = parents
                .iter()
                .try_fold(before.as_table(), |t, k| t.get(k)?.as_table())
                .and_then(|t| t.get(last))
                .cloned();
            let parent = parents.iter().try_fold(doc.as_table_mut(), |t, k| t.get_mut(k)?.as_table_mut());
            if let Some(parent) = parent {
                match want {
                    Some(item) => {
                        parent.insert(last, item);
                    }
                    None => {
                        parent.remove(last);
                    }
                }
            }
            Ok(doc.to_string())
        }
        Format::Yaml => bail!("{} files are never written by the hub", harness.name),
    }
}

/// Moves `parent[key][name]` to `parent[PARKED_KEY][name]`; whether it was there.
fn move_entry(parent: &mut Map<String, Value>, key: &str, name: &str) -> bool {
    let Some(entry) = parent.get_mut(key).and_then(Value::as_object_mut).and_then(|s| s.shift_remove(name))
    else {
        return false;
    };
    let parked = parent.entry(PARKED_KEY).or_insert_with(|| Value::Object(Map::new()));
    if let Some(parked) = parked.as_object_mut() {
        parked.insert(name.to_owned(), entry);
    }
    true
}

/// Parses JSON, applies `change` and writes it back in the file's own indentation; `None`
/// when nothing changed.
fn edit_json(text: &str, change: impl FnOnce(&mut Value) -> Result<bool>) -> Result<Option<String>> {
    if has_json_comments(text) {
        bail!("the file has comments, which the hub cannot keep when it writes JSON; edit it by hand");
    }
    let mut doc: Value = if text.trim().is_empty() {
        Value::Object(Map::new())
    } else {
        serde_json::from_str(text).context("not valid JSON")?
    };
    if !doc.is_object() {
        bail!("the file does not hold a JSON object");
    }
    if !change(&mut doc)? {
        return Ok(None);
    }
    let indent = detect_indent(text);
    let mut out = Vec::new();
    let formatter = serde_json::ser::PrettyFormatter::with_indent(indent.as_bytes());
    let mut serializer = serde_json::Serializer::with_formatter(&mut out, formatter);
    serde::Serialize::serialize(&doc, &mut serializer)?;
    let mut out = String::from_utf8(out)?;
    if text.is_empty() || text.ends_with('\n') {
        out.push('\n');
    }
    Ok(Some(out))
}

/// The indentation of the first indented line (two spaces when there is none).
fn detect_indent(text: &str) -> String {
    text.lines()
        .map(|line| line.chars().take_while(|c| *c == ' ' || *c == '\t').collect::<String>())
        .find(|lead| !lead.is_empty())
        .unwrap_or_else(|| "  ".to_owned())
}

/// The object at `path`, created when missing.
fn object_at<'a>(doc: &'a mut Value, path: &[&str]) -> Result<&'a mut Map<String, Value>> {
    let mut current = doc;
    for key in path {
        let object = current.as_object_mut().context("a key on the servers' path is not an object")?;
        current = object.entry(key.to_string()).or_insert_with(|| Value::Object(Map::new()));
    }
    current.as_object_mut().with_context(|| format!("`{}` is not an object", path.join(".")))
}

fn object_at_existing<'a>(doc: &'a mut Value, path: &[&str]) -> Option<&'a mut Map<String, Value>> {
    let mut current = doc;
    for key in path {
        current = current.as_object_mut()?.get_mut(*key)?;
    }
    current.as_object_mut()
}

fn toml_table_at<'a>(
    doc: &'a mut toml_edit::DocumentMut,
    path: &[&str],
    create: bool,
) -> Option<&'a mut toml_edit::Table> {
    let mut table = doc.as_table_mut();
    for key in path {
        if create && !table.contains_key(key) {
            let mut fresh = toml_edit::Table::new();
            fresh.set_implicit(true);
            table.insert(key, toml_edit::Item::Table(fresh));
        }
        table = table.get_mut(key)?.as_table_mut()?;
    }
    Some(table)
}

fn set_toml_entry(doc: &mut toml_edit::DocumentMut, harness: &Descriptor, entry: &HubEntry) -> Result<()> {
    let servers = toml_table_at(doc, harness.servers_key, true)
        .with_context(|| format!("`{}` is not a table", harness.servers_key.join(".")))?;
    let mut table = toml_edit::Table::new();
    table.insert("command", toml_edit::value(entry.command.as_str()));
    let mut args = toml_edit::Array::new();
    for arg in &entry.args {
        args.push(arg.as_str());
    }
    table.insert("args", toml_edit::value(args));
    if !entry.env.is_empty() {
        let mut env = toml_edit::InlineTable::new();
        for (k, v) in &entry.env {
            env.insert(k, v.as_str().into());
        }
        table.insert("env", toml_edit::value(env));
    }
    servers.insert(ENTRY_NAME, toml_edit::Item::Table(table));
    Ok(())
}

/// Whether the file already holds exactly this entry.
pub fn has_entry(harness: &Descriptor, doc: &Value, entry: &HubEntry) -> bool {
    let Some(found) = get_path(doc, harness.servers_key).and_then(|s| s.get(ENTRY_NAME)) else {
        return false;
    };
    found.get("command").and_then(Value::as_str) == Some(entry.command.as_str())
        && found.get("args") == Some(&Value::from(entry.args.clone()))
}

/// The command the hub's entry in this file runs, if it has one.
pub fn entry_command(harness: &Descriptor, doc: &Value) -> Option<String> {
    get_path(doc, harness.servers_key)?.get(ENTRY_NAME)?.get("command")?.as_str().map(str::to_owned)
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::harness::{HARNESSES, find};

    fn entry() -> HubEntry {
        HubEntry {
            command: "/opt/bin/capabilities".into(),
            args: ["hub", "serve", "--stdio", "--profile", "default"].map(String::from).to_vec(),
            env: vec![],
        }
    }

    #[test]
    fn toml_keeps_comments_and_other_tables() {
        let codex = find("codex").unwrap();
        let text = "# my settings\nmodel = \"o3\" # inline\n\n[mcp_servers.memory]\ncommand = \"npx\" # run it\nargs = [\"-y\", \"x\"]\n";
        let added = with_entry(codex, text, &entry()).unwrap();
        expect![[r#"
            # my settings
            model = "o3" # inline

            [mcp_servers.memory]
            command = "npx" # run it
            args = ["-y", "x"]

            [mcp_servers.capabilities]
            command = "/opt/bin/capabilities"
            args = ["hub", "serve", "--stdio", "--profile", "default"]
        "#]]
        .assert_eq(&added);
        let parked = park(codex, &added, &[("user".into(), "memory".into())]).unwrap().unwrap();
        assert!(parked.contains("args = [\"-y\", \"x\"]\nenabled = false\n"), "{parked}");
        assert_eq!(without_entry(codex, &added).unwrap().unwrap(), text);
    }

    #[test]
    fn json_keeps_order_and_indentation() {
        let cursor = find("cursor").unwrap();
        let text = "{\n    \"zeta\": 1,\n    \"mcpServers\": {\n        \"memory\": {\"command\": \"npx\"}\n    },\n    \"alpha\": [1, 2]\n}\n";
        let added = with_entry(cursor, text, &entry()).unwrap();
        expect![[r#"
            {
                "zeta": 1,
                "mcpServers": {
                    "memory": {
                        "command": "npx"
                    },
                    "capabilities": {
                        "command": "/opt/bin/capabilities",
                        "args": [
                            "hub",
                            "serve",
                            "--stdio",
                            "--profile",
                            "default"
                        ]
                    }
                },
                "alpha": [
                    1,
                    2
                ]
            }
        "#]]
        .assert_eq(&added);
        let parked = park(cursor, &added, &[("user".into(), "memory".into())]).unwrap().unwrap();
        let doc: Value = serde_json::from_str(&parked).unwrap();
        assert_eq!(doc[PARKED_KEY]["memory"]["command"], "npx");
        assert!(doc["mcpServers"].get("memory").is_none());
        let removed: Value = serde_json::from_str(&without_entry(cursor, &added).unwrap().unwrap()).unwrap();
        assert!(removed["mcpServers"].get("capabilities").is_none());
        assert!(with_entry(cursor, "{ // note\n}", &entry()).is_err());
    }

    #[test]
    fn restoring_servers_keeps_what_the_harness_wrote_since() {
        let codex = find("codex").unwrap();
        let before = "# mine\nmodel = \"o3\"\n\n[mcp_servers.memory]\ncommand = \"npx\"\n";
        let connected =
            park(codex, &with_entry(codex, before, &entry()).unwrap(), &[("user".into(), "memory".into())])
                .unwrap()
                .unwrap();
        let edited = connected.replace("model = \"o3\"", "model = \"o4\"");
        let restored = restore_servers(codex, &edited, before).unwrap();
        assert_eq!(restored, before.replace("o3", "o4"));

        let claude = find("claude-code").unwrap();
        let before =
            r#"{"projects": {"/p": {"mcpServers": {"notes": {"command": "node"}}}}, "mcpServers": {}}"#;
        let connected = with_entry(claude, before, &entry()).unwrap();
        let connected = park(claude, &connected, &[("project /p".into(), "notes".into())]).unwrap().unwrap();
        let mut edited: Value = serde_json::from_str(&connected).unwrap();
        edited["numStartups"] = 3.into();
        let restored: Value =
            serde_json::from_str(&restore_servers(claude, &edited.to_string(), before).unwrap()).unwrap();
        let mut expected: Value = serde_json::from_str(before).unwrap();
        expected["numStartups"] = 3.into();
        assert_eq!(restored, expected);
    }

    #[test]
    fn snippets_for_read_only_harnesses() {
        let hermes = HARNESSES.iter().find(|h| h.id == "hermes").unwrap();
        expect![[r#"
            mcp_servers:
              capabilities:
                command: "/opt/bin/capabilities"
                args:
                  - "hub"
                  - "serve"
                  - "--stdio"
                  - "--profile"
                  - "default""#]]
        .assert_eq(&entry().snippet(hermes));
    }
}

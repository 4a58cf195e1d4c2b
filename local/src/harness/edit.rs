//! Editing a harness file in place: adding or removing the hub's `capabilities` entry and
//! turning imported direct entries off. Everything else in the file survives, byte for byte:
//! TOML through `toml_edit`, JSON and JSONC through `jsonc-parser`'s concrete syntax tree
//! (comments, trailing commas, indentation and key order kept; only the members the hub
//! touches are written anew), YAML through `yaml-edit` ([`super::edit_yaml`]).

use anyhow::{Context, Result, bail};
use jsonc_parser::cst::{CstInputValue, CstObject, CstRootNode};
use serde_json::{Map, Value};

use super::read::{ENV_KEYS, HEADER_KEYS, get_path, jsonc_options};
use super::{Descriptor, ENTRY_NAME, Format, PARKED_KEY, Park, Shape};

/// The hub's entry: the command a harness runs to reach the hub.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HubEntry {
    pub command: String,
    pub args: Vec<String>,
    /// Only `CAPABILITIES_HOME`, when the hub does not live at its default place.
    pub env: Vec<(String, String)>,
}

/// A direct entry `connect --replace` turns off: `(scope, name)` as
/// [`super::read::Found`] gives them, and the credential keys (environment variables or
/// headers) to take out of it because the hub's keychain holds their values now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Parked {
    pub scope: String,
    pub name: String,
    pub remove: Vec<String>,
}

impl HubEntry {
    /// The entry as the JSON a harness of this kind expects.
    pub fn json(&self, harness: &Descriptor) -> Value {
        let mut entry = Map::new();
        let env = || Value::Object(self.env.iter().map(|(k, v)| (k.clone(), v.clone().into())).collect());
        let args = || Value::from(self.args.clone());
        match harness.shape {
            Shape::Plain | Shape::Typed(_) | Shape::Copilot | Shape::Zed | Shape::NamedList => {
                match harness.shape {
                    Shape::Typed(kind) => {
                        entry.insert("type".into(), kind.into());
                    }
                    Shape::Copilot => {
                        entry.insert("type".into(), "local".into());
                    }
                    Shape::Zed => {
                        entry.insert("source".into(), "custom".into());
                    }
                    Shape::NamedList => {
                        entry.insert("name".into(), ENTRY_NAME.into());
                    }
                    _ => {}
                }
                entry.insert("command".into(), self.command.clone().into());
                entry.insert("args".into(), args());
                if !self.env.is_empty() {
                    entry.insert("env".into(), env());
                }
                if harness.shape == Shape::Copilot {
                    entry.insert("tools".into(), Value::from(vec!["*"]));
                }
            }
            Shape::CommandList => {
                entry.insert("type".into(), "local".into());
                let mut line = vec![self.command.clone()];
                line.extend(self.args.iter().cloned());
                entry.insert("command".into(), line.into());
                if !self.env.is_empty() {
                    entry.insert("environment".into(), env());
                }
                entry.insert("enabled".into(), true.into());
            }
            Shape::Goose => {
                entry.insert("name".into(), ENTRY_NAME.into());
                entry.insert("type".into(), "stdio".into());
                entry.insert("cmd".into(), self.command.clone().into());
                entry.insert("args".into(), args());
                if !self.env.is_empty() {
                    entry.insert("envs".into(), env());
                }
                entry.insert("enabled".into(), true.into());
                entry.insert("timeout".into(), 300.into());
            }
        }
        Value::Object(entry)
    }

    /// What to paste by hand into a harness the hub does not write.
    pub fn snippet(&self, harness: &Descriptor) -> String {
        let servers = if harness.shape == Shape::NamedList {
            Value::Array(vec![self.json(harness)])
        } else {
            let mut servers = Map::new();
            servers.insert(ENTRY_NAME.into(), self.json(harness));
            Value::Object(servers)
        };
        let wrapped = harness
            .servers_key
            .iter()
            .rev()
            .fold(servers, |inner, key| Value::Object(Map::from_iter([(key.to_string(), inner)])));
        match harness.format {
            Format::Yaml => {
                let mut out = String::new();
                yaml(&wrapped, 0, &mut out);
                out.trim_end().to_owned()
            }
            Format::Toml => {
                let mut doc = toml_edit::DocumentMut::new();
                let _ = set_toml_entry(&mut doc, harness, self);
                doc.to_string().trim_end().to_owned()
            }
            _ => serde_json::to_string_pretty(&wrapped).unwrap_or_default(),
        }
    }
}

/// A JSON value as block YAML, strings quoted (JSON's quoting is valid YAML).
fn yaml(value: &Value, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    match value {
        Value::Object(map) => {
            for (key, value) in map {
                match value {
                    Value::Object(inner) if !inner.is_empty() => {
                        out.push_str(&format!("{pad}{key}:\n"));
                        yaml(value, indent + 2, out);
                    }
                    Value::Array(items) if !items.is_empty() => {
                        out.push_str(&format!("{pad}{key}:\n"));
                        yaml(value, indent + 2, out);
                    }
                    other => out.push_str(&format!("{pad}{key}: {}\n", scalar(other))),
                }
            }
        }
        Value::Array(items) => {
            for item in items {
                if let Value::Object(_) = item {
                    let mut inner = String::new();
                    yaml(item, indent + 2, &mut inner);
                    out.push_str(&format!("{pad}- {}", inner.trim_start()));
                } else {
                    out.push_str(&format!("{pad}- {}\n", scalar(item)));
                }
            }
        }
        other => out.push_str(&format!("{pad}{}\n", scalar(other))),
    }
}

fn scalar(value: &Value) -> String {
    match value {
        Value::Object(_) => "{}".to_owned(),
        Value::Array(_) => "[]".to_owned(),
        other => other.to_string(),
    }
}

/// The file's text with the hub's entry set (added, or replaced if it differs).
pub fn with_entry(harness: &Descriptor, text: &str, entry: &HubEntry) -> Result<String> {
    match harness.format {
        Format::Json => edit_json(text, |root| {
            let servers = object_path(root, harness.servers_key, true)?
                .with_context(|| format!("`{}` is not an object", harness.servers_key.join(".")))?;
            set_member(&servers, ENTRY_NAME, input(&entry.json(harness)));
            Ok(true)
        })
        .map(|t| t.unwrap_or_else(|| text.to_owned())),
        Format::Toml => {
            let mut doc: toml_edit::DocumentMut = text.parse().context("not valid TOML")?;
            set_toml_entry(&mut doc, harness, entry)?;
            Ok(doc.to_string())
        }
        Format::Yaml => super::edit_yaml::with_entry(harness, text, entry),
    }
}

/// The file's text without the hub's entry; `None` when it has none.
pub fn without_entry(harness: &Descriptor, text: &str) -> Result<Option<String>> {
    match harness.format {
        Format::Json => edit_json(text, |root| {
            let Some(servers) = object_path(root, harness.servers_key, false)? else { return Ok(false) };
            Ok(remove_member(&servers, ENTRY_NAME))
        }),
        Format::Toml => {
            let mut doc: toml_edit::DocumentMut = text.parse().context("not valid TOML")?;
            let Some(servers) = toml_table_at(&mut doc, harness.servers_key, false) else { return Ok(None) };
            if servers.remove(ENTRY_NAME).is_none() {
                return Ok(None);
            }
            Ok(Some(doc.to_string()))
        }
        Format::Yaml => super::edit_yaml::without_entry(harness, text),
    }
}

/// The file's text with the named direct entries turned off, the harness's way ([`Park`]):
/// moved under [`PARKED_KEY`] beside the servers they came from, or flagged off in place. Either
/// way the credential keys in [`Parked::remove`] are taken out of the entry.
pub fn park(harness: &Descriptor, text: &str, names: &[Parked]) -> Result<Option<String>> {
    match harness.format {
        Format::Json => edit_json(text, |root| {
            let mut changed = false;
            for parked in names {
                let (parent_path, key): (Vec<&str>, &str) =
                    match (parked.scope.strip_prefix("project "), harness.projects) {
                        (Some(project), Some(p)) => (vec![p.projects_key, project], p.servers_key),
                        (Some(_), None) => continue,
                        (None, _) => {
                            let (last, parents) =
                                harness.servers_key.split_last().context("a servers key")?;
                            (parents.to_vec(), *last)
                        }
                    };
                let Some(parent) = object_path(root, &parent_path, false)? else { continue };
                let Some(servers) = parent.object_value(key) else { continue };
                let Some(member) = servers.get(&parked.name) else { continue };
                let Some(mut value) = member.to_serde_value() else { continue };
                strip_credentials(&mut value, &parked.remove);
                match harness.park {
                    Park::Move => {
                        member.remove();
                        let store = object_path(&parent, &[PARKED_KEY], true)?
                            .with_context(|| format!("`{PARKED_KEY}` is not an object"))?;
                        set_member(&store, &parked.name, input(&value));
                    }
                    Park::Flag(flag, off) => {
                        if let Some(object) = value.as_object_mut() {
                            object.insert(flag.to_owned(), off.into());
                        }
                        let Some(entry) = member.object_value() else { continue };
                        // Edit in place, so the entry keeps its own layout and comments.
                        set_member(&entry, flag, CstInputValue::Bool(off));
                        // Cline's CLI keeps the command and its variables under `transport`.
                        let places = [Some(entry.clone()), entry.object_value("transport")];
                        for (place, map_key) in places
                            .iter()
                            .flatten()
                            .flat_map(|p| ENV_KEYS.iter().chain(HEADER_KEYS.iter()).map(move |k| (p, k)))
                        {
                            if let Some(map) = place.object_value(map_key) {
                                for prop in map.properties() {
                                    let name = prop.decoded_name().unwrap_or_default();
                                    if parked.remove.iter().any(|r| r.eq_ignore_ascii_case(&name)) {
                                        prop.remove();
                                    }
                                }
                            }
                        }
                    }
                }
                changed = true;
            }
            Ok(changed)
        }),
        Format::Toml => {
            let mut doc: toml_edit::DocumentMut = text.parse().context("not valid TOML")?;
            let (flag, off) = match harness.park {
                Park::Flag(flag, off) => (flag, off),
                Park::Move => ("enabled", false),
            };
            let mut changed = false;
            if let Some(servers) = toml_table_at(&mut doc, harness.servers_key, false) {
                for parked in names {
                    if let Some(table) = servers.get_mut(&parked.name).and_then(|t| t.as_table_like_mut()) {
                        table.insert(flag, toml_edit::value(off));
                        for map_key in ["env", "http_headers"] {
                            if let Some(map) = table.get_mut(map_key).and_then(|m| m.as_table_like_mut()) {
                                let keys: Vec<String> = map
                                    .iter()
                                    .map(|(k, _)| k.to_owned())
                                    .filter(|k| parked.remove.iter().any(|r| r.eq_ignore_ascii_case(k)))
                                    .collect();
                                for key in keys {
                                    map.remove(&key);
                                }
                            }
                        }
                        changed = true;
                    }
                }
            }
            Ok(changed.then(|| doc.to_string()))
        }
        Format::Yaml => super::edit_yaml::park(harness, text, names),
    }
}

/// Takes the named credential keys out of an entry's environment and headers.
fn strip_credentials(entry: &mut Value, remove: &[String]) {
    if let Some(inner) = entry.get_mut("transport") {
        strip_credentials(inner, remove);
    }
    for key in ENV_KEYS.iter().chain(HEADER_KEYS.iter()) {
        if let Some(map) = entry.get_mut(*key).and_then(Value::as_object_mut) {
            map.retain(|name, _| !remove.iter().any(|r| r.eq_ignore_ascii_case(name)));
        }
    }
}

/// `current` with every place the hub edits (the servers maps of each scope, and the parked
/// entries beside them) put back as they are in `before`; everything else in `current`, such as
/// what the harness itself wrote since, stays.
pub fn restore_servers(harness: &Descriptor, current: &str, before: &str) -> Result<String> {
    match harness.format {
        Format::Json => {
            let before = super::read::parse(Format::Json, before).context("the backup is not valid JSON")?;
            let edited = edit_json(current, |root| {
                let (last, parents) = harness.servers_key.split_last().context("a servers key")?;
                let mut places: Vec<(Vec<String>, String)> = [*last, PARKED_KEY]
                    .iter()
                    .map(|key| (parents.iter().map(|p| p.to_string()).collect(), key.to_string()))
                    .collect();
                if let Some(projects) = harness.projects {
                    let names: Vec<String> = root
                        .object_value(projects.projects_key)
                        .map(|p| p.properties().iter().filter_map(|p| p.decoded_name()).collect())
                        .unwrap_or_default();
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
                    let Some(object) = object_path(root, &path, false)? else { continue };
                    let have = object.get(&key).and_then(|p| p.to_serde_value());
                    if have == want {
                        continue;
                    }
                    changed = true;
                    match want {
                        Some(value) => set_member(&object, &key, input(&value)),
                        None => {
                            remove_member(&object, &key);
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
        Format::Yaml => super::edit_yaml::restore_servers(harness, current, before),
    }
}

/// Parses JSON or JSONC into its syntax tree, applies `change` to the root object and writes
/// the tree back; `None` when nothing changed. What `change` does not touch comes back as it
/// was.
fn edit_json(text: &str, change: impl FnOnce(&CstObject) -> Result<bool>) -> Result<Option<String>> {
    let root =
        CstRootNode::parse(text, &jsonc_options()).map_err(|err| anyhow::anyhow!("not valid JSON: {err}"))?;
    let object = match root.value() {
        None => root.object_value_or_set(),
        Some(value) => value.as_object().context("the file does not hold a JSON object")?,
    };
    if !change(&object)? {
        return Ok(None);
    }
    let mut out = root.to_string();
    if text.trim().is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    Ok(Some(out))
}

/// The object at `path` under `root`, created when missing and `create`; an error when a key on
/// the way holds something else.
fn object_path(root: &CstObject, path: &[&str], create: bool) -> Result<Option<CstObject>> {
    let mut current = root.clone();
    for key in path {
        current = match current.get(key) {
            Some(prop) => match prop.object_value() {
                Some(object) => object,
                None => bail!("`{key}` is not an object; fix the file or add the entry by hand"),
            },
            None if create => {
                current.append(key, CstInputValue::Object(Vec::new()));
                current.object_value(key).context("a member just added")?
            }
            None => return Ok(None),
        };
    }
    Ok(Some(current))
}

fn set_member(object: &CstObject, key: &str, value: CstInputValue) {
    match object.get(key) {
        Some(prop) => prop.set_value(value),
        None => {
            object.append(key, value);
        }
    }
}

fn remove_member(object: &CstObject, key: &str) -> bool {
    match object.get(key) {
        Some(prop) => {
            prop.remove();
            true
        }
        None => false,
    }
}

/// A JSON value as the syntax tree's input.
fn input(value: &Value) -> CstInputValue {
    match value {
        Value::Null => CstInputValue::Null,
        Value::Bool(b) => CstInputValue::Bool(*b),
        Value::Number(n) => CstInputValue::Number(n.to_string()),
        Value::String(s) => CstInputValue::String(s.clone()),
        Value::Array(items) => CstInputValue::Array(items.iter().map(input).collect()),
        Value::Object(map) => CstInputValue::Object(map.iter().map(|(k, v)| (k.clone(), input(v))).collect()),
    }
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

/// The hub's entry in a parsed file, if it has one.
pub fn find_entry<'a>(harness: &Descriptor, doc: &'a Value) -> Option<&'a Value> {
    match get_path(doc, harness.servers_key)? {
        Value::Array(list) => list.iter().find(|e| e.get("name").and_then(Value::as_str) == Some(ENTRY_NAME)),
        servers => servers.get(ENTRY_NAME),
    }
}

/// Whether the file already holds exactly this entry.
pub fn has_entry(harness: &Descriptor, doc: &Value, entry: &HubEntry) -> bool {
    find_entry(harness, doc) == Some(&entry.json(harness))
}

/// The command the hub's entry in this file runs, if it has one.
pub fn entry_command(harness: &Descriptor, doc: &Value) -> Option<String> {
    let found = find_entry(harness, doc)?;
    match found.get("command").or_else(|| found.get("cmd"))? {
        Value::Array(words) => words.first()?.as_str().map(str::to_owned),
        other => other.as_str().map(str::to_owned),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::harness::{HARNESSES, find};

    fn parked(scope: &str, name: &str) -> Parked {
        Parked { scope: scope.into(), name: name.into(), remove: Vec::new() }
    }

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
        let parked = park(codex, &added, &[parked("user", "memory")]).unwrap().unwrap();
        assert!(parked.contains("args = [\"-y\", \"x\"]\nenabled = false\n"), "{parked}");
        assert_eq!(without_entry(codex, &added).unwrap().unwrap(), text);
    }

    #[test]
    fn json_keeps_order_indentation_and_what_it_does_not_touch() {
        let cursor = find("cursor").unwrap();
        let text = "{\n    \"zeta\": 1,\n    \"mcpServers\": {\n        \"memory\": {\"command\": \"npx\", \"env\": {\"API_TOKEN\": \"t\"}}\n    },\n    \"alpha\": [1, 2]\n}\n";
        let added = with_entry(cursor, text, &entry()).unwrap();
        expect![[r#"
            {
                "zeta": 1,
                "mcpServers": {
                    "memory": {"command": "npx", "env": {"API_TOKEN": "t"}},
                    "capabilities": {
                        "command": "/opt/bin/capabilities",
                        "args": ["hub", "serve", "--stdio", "--profile", "default"]
                    }
                },
                "alpha": [1, 2]
            }
        "#]]
        .assert_eq(&added);
        let moved = Parked { scope: "user".into(), name: "memory".into(), remove: vec!["API_TOKEN".into()] };
        let parked = park(cursor, &added, &[moved]).unwrap().unwrap();
        let doc: Value = serde_json::from_str(&parked).unwrap();
        assert_eq!(doc[PARKED_KEY]["memory"], serde_json::json!({"command": "npx", "env": {}}));
        assert!(doc["mcpServers"].get("memory").is_none());
        assert_eq!(
            without_entry(cursor, &added).unwrap().unwrap(),
            text,
            "removing ours gives the bytes back"
        );
    }

    #[test]
    fn jsonc_keeps_comments_and_trailing_commas_and_flags_entries_off_in_place() {
        let zed = find("zed").unwrap();
        let text = "// Zed settings\n{\n  \"theme\": \"One Dark\", // mine\n  \"context_servers\": {\n    /* the old one */\n    \"memory\": {\n      \"command\": \"npx\",\n      \"env\": { \"API_TOKEN\": \"t\", \"LOG\": \"1\", },\n    },\n  },\n}\n";
        let added = with_entry(zed, text, &entry()).unwrap();
        let moved = Parked { scope: "user".into(), name: "memory".into(), remove: vec!["API_TOKEN".into()] };
        let parked = park(zed, &added, &[moved]).unwrap().unwrap();
        expect![[r#"
            // Zed settings
            {
              "theme": "One Dark", // mine
              "context_servers": {
                /* the old one */
                "memory": {
                  "command": "npx",
                  "env": { "LOG": "1", },
                  "enabled": false,
                },
                "capabilities": {
                  "source": "custom",
                  "command": "/opt/bin/capabilities",
                  "args": ["hub", "serve", "--stdio", "--profile", "default"],
                },
              },
            }
        "#]]
        .assert_eq(&parked);
        assert_eq!(without_entry(zed, &added).unwrap().unwrap(), text);
        let opencode = find("opencode").unwrap();
        let doc: Value = serde_json::from_str(&with_entry(opencode, "", &entry()).unwrap()).unwrap();
        expect![[r#"{"mcp":{"capabilities":{"type":"local","command":["/opt/bin/capabilities","hub","serve","--stdio","--profile","default"],"enabled":true}}}"#]]
            .assert_eq(&doc.to_string());
        assert!(with_entry(zed, "{\"context_servers\": [] }", &entry()).is_err());
        assert!(with_entry(zed, "{\"a\": 1,, }", &entry()).is_err());
    }

    #[test]
    fn restoring_servers_keeps_what_the_harness_wrote_since() {
        let codex = find("codex").unwrap();
        let before = "# mine\nmodel = \"o3\"\n\n[mcp_servers.memory]\ncommand = \"npx\"\n";
        let connected =
            park(codex, &with_entry(codex, before, &entry()).unwrap(), &[parked("user", "memory")])
                .unwrap()
                .unwrap();
        let edited = connected.replace("model = \"o3\"", "model = \"o4\"");
        let restored = restore_servers(codex, &edited, before).unwrap();
        assert_eq!(restored, before.replace("o3", "o4"));

        let claude = find("claude-code").unwrap();
        let before =
            r#"{"projects": {"/p": {"mcpServers": {"notes": {"command": "node"}}}}, "mcpServers": {}}"#;
        let connected = with_entry(claude, before, &entry()).unwrap();
        let connected = park(claude, &connected, &[parked("project /p", "notes")]).unwrap().unwrap();
        let mut edited: Value = serde_json::from_str(&connected).unwrap();
        edited["numStartups"] = 3.into();
        let restored: Value =
            serde_json::from_str(&restore_servers(claude, &edited.to_string(), before).unwrap()).unwrap();
        let mut expected: Value = serde_json::from_str(before).unwrap();
        expected["numStartups"] = 3.into();
        assert_eq!(restored, expected);
    }

    #[test]
    fn snippets_for_goose_and_continue() {
        let goose = find("goose").unwrap();
        expect![[r#"
            extensions:
              capabilities:
                name: "capabilities"
                type: "stdio"
                cmd: "/opt/bin/capabilities"
                args:
                  - "hub"
                  - "serve"
                  - "--stdio"
                  - "--profile"
                  - "default"
                enabled: true
                timeout: 300"#]]
        .assert_eq(&entry().snippet(goose));
        let continue_ = find("continue").unwrap();
        expect![[r#"
            mcpServers:
              - name: "capabilities"
                command: "/opt/bin/capabilities"
                args:
                  - "hub"
                  - "serve"
                  - "--stdio"
                  - "--profile"
                  - "default""#]]
        .assert_eq(&entry().snippet(continue_));
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

//! Editing YAML harness files (Hermes, Goose, Continue) in place, on `yaml-edit`'s lossless
//! syntax tree (rowan): comments, quoting, indentation and the order of the person's other
//! entries come back as they were; only what the hub touches is written anew.
//!
//! Two parsers look at each file. `serde_norway` (libyaml's rules) reads it first and refuses
//! what the hub will not edit: a syntax error, duplicate keys, tabs as indentation, an alias
//! bomb, several documents, a top level that is not a mapping. After the edit it reads the new
//! text again, and that must be exactly the old value with the hub's change made (so an edit
//! through an anchor that other places alias, or anything the tree editor got wrong, is refused
//! before a byte is written).

use anyhow::{Context, Result, anyhow, bail};
use serde_json::{Map, Value};
use yaml_edit::{Document, Mapping, MappingBuilder, Sequence, SequenceBuilder, YamlFile};

use super::edit::{HubEntry, Parked};
use super::read::{self, ENV_KEYS, HEADER_KEYS};
use super::{Descriptor, ENTRY_NAME, Format, PARKED_KEY, Park};

/// A file being edited: its tree, and the value the edited text must read as.
struct Edit<'t> {
    text: &'t str,
    /// Keeps the tree `doc` is a view of.
    file: YamlFile,
    doc: Document,
    /// The file held no document (empty, or comments only): `doc` is new and goes after `text`.
    fresh: bool,
    expected: Value,
    changed: bool,
}

impl<'t> Edit<'t> {
    fn open(text: &'t str) -> Result<Edit<'t>> {
        let value = read::parse(Format::Yaml, text)?;
        let expected = match value {
            Value::Object(_) => value,
            Value::Null => Value::Object(Map::new()),
            _ => bail!("its top level is not a mapping (`key: value` lines); the hub writes only into one"),
        };
        let file: YamlFile = text.parse().map_err(|err| anyhow!("not valid YAML: {err}"))?;
        if file.to_string() != text {
            bail!("the YAML editor would not keep it byte for byte; add the entry by hand");
        }
        let mut docs = file.documents();
        let (doc, fresh) = match docs.next() {
            Some(doc) => (doc, false),
            None => (Document::new_mapping(), true),
        };
        if docs.next().is_some() {
            bail!("it holds several YAML documents; the hub edits files with one");
        }
        if doc.as_mapping().is_none() {
            bail!("its top level is not a mapping (`key: value` lines); the hub writes only into one");
        }
        Ok(Edit { text, file, doc, fresh, expected, changed: false })
    }

    fn root(&self) -> Result<Mapping> {
        self.doc.as_mapping().context("the top level is a mapping")
    }

    /// The mapping holding the servers key, and that key; `None` when a parent is missing and
    /// not `create`d (the YAML harnesses' servers keys are one level deep; deeper ones work too).
    fn parent(&mut self, harness: &Descriptor, create: bool) -> Result<Option<(Mapping, &'static str)>> {
        let (last, parents) = harness.servers_key.split_last().context("a servers key")?;
        let mut mapping = self.root()?;
        let mut value_path: Vec<&str> = Vec::new();
        for key in parents {
            value_path.push(key);
            mapping = match mapping.get_mapping(*key) {
                Some(inner) => inner,
                None if !create => return Ok(None),
                None => {
                    set_in(&mapping, key, &Value::Object(Map::new()))?;
                    set_value(&mut self.expected, &value_path, Value::Object(Map::new()));
                    mapping.get_mapping(*key).with_context(|| format!("`{key}` was just added"))?
                }
            };
        }
        Ok(Some((mapping, last)))
    }

    /// The text after the edit, checked to read as the expected value.
    fn finish(self) -> Result<Option<String>> {
        if !self.changed {
            return Ok(None);
        }
        let out = if self.fresh {
            let mut out = self.text.to_owned();
            if !out.is_empty() && !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&self.doc.to_string());
            out
        } else {
            self.file.to_string()
        };
        let mut out = out;
        if !out.ends_with('\n') && (self.text.is_empty() || self.text.ends_with('\n')) {
            out.push('\n');
        }
        let got = read::parse(Format::Yaml, &out).map_err(|err| {
            anyhow!("the edited file would not be valid YAML ({err:#}); nothing was written")
        })?;
        if got != self.expected {
            bail!(
                "editing it would change more than the hub's entries (an anchor or alias, or a form \
                 the YAML editor does not handle); nothing was written, add the entry by hand"
            );
        }
        Ok(Some(out))
    }
}

/// The file's text with the hub's entry set (added, or replaced).
pub fn with_entry(harness: &Descriptor, text: &str, entry: &HubEntry) -> Result<String> {
    let mut edit = Edit::open(text)?;
    let value = entry.json(harness);
    let (parent, last) = edit.parent(harness, true)?.context("created")?;
    let path = value_path(harness);
    let current = read::get_path(&edit.expected, &path).cloned();
    match current {
        Some(Value::Array(mut items)) if is_list(harness) => {
            let seq = parent.get_sequence(last).with_context(|| format!("`{last}` is not a list"))?;
            match items.iter().position(named(ENTRY_NAME)) {
                Some(index) => {
                    seq_set(&seq, index, &value)?;
                    items[index] = value;
                }
                None => {
                    seq_push(&seq, &value)?;
                    items.push(value);
                }
            }
            set_value(&mut edit.expected, &path, Value::Array(items));
        }
        Some(Value::Object(mut map)) if !is_list(harness) => {
            let servers = parent.get_mapping(last).with_context(|| format!("`{last}` is not a mapping"))?;
            set_in(&servers, ENTRY_NAME, &value)?;
            map.insert(ENTRY_NAME.to_owned(), value);
            set_value(&mut edit.expected, &path, Value::Object(map));
        }
        None | Some(Value::Null) => {
            let fresh = if is_list(harness) {
                Value::Array(vec![value])
            } else {
                Value::Object(Map::from_iter([(ENTRY_NAME.to_owned(), value)]))
            };
            set_in(&parent, last, &fresh)?;
            set_value(&mut edit.expected, &path, fresh);
        }
        Some(_) => bail!(
            "`{}` is not a {}; fix the file or add the entry by hand",
            harness.servers_key.join("."),
            if is_list(harness) { "list" } else { "mapping" }
        ),
    }
    edit.changed = true;
    Ok(edit.finish()?.unwrap_or_else(|| text.to_owned()))
}

/// The file's text without the hub's entry; `None` when it has none.
pub fn without_entry(harness: &Descriptor, text: &str) -> Result<Option<String>> {
    let mut edit = Edit::open(text)?;
    let path = value_path(harness);
    let Some((parent, last)) = edit.parent(harness, false)? else { return Ok(None) };
    match read::get_path(&edit.expected, &path).cloned() {
        Some(Value::Array(mut items)) if is_list(harness) => {
            let Some(index) = items.iter().position(named(ENTRY_NAME)) else { return Ok(None) };
            let seq = parent.get_sequence(last).with_context(|| format!("`{last}` is not a list"))?;
            seq.remove(index);
            items.remove(index);
            set_value(&mut edit.expected, &path, Value::Array(items));
        }
        Some(Value::Object(mut map)) if !is_list(harness) => {
            if map.remove(ENTRY_NAME).is_none() {
                return Ok(None);
            }
            let servers = parent.get_mapping(last).with_context(|| format!("`{last}` is not a mapping"))?;
            servers.remove(ENTRY_NAME);
            set_value(&mut edit.expected, &path, Value::Object(map));
        }
        _ => return Ok(None),
    }
    edit.changed = true;
    edit.finish()
}

/// The file's text with the named direct entries turned off, the harness's way: flagged off in
/// place ([`Park::Flag`]), or moved under [`super::PARKED_KEY`] beside the servers
/// ([`Park::Move`]). The credential keys in [`Parked::remove`] are taken out either way.
pub fn park(harness: &Descriptor, text: &str, names: &[Parked]) -> Result<Option<String>> {
    let mut edit = Edit::open(text)?;
    let Some((parent, last)) = edit.parent(harness, false)? else { return Ok(None) };
    let path = value_path(harness);
    let parked_path: Vec<&str> = path[..path.len() - 1].iter().copied().chain([PARKED_KEY]).collect();
    for parked in names.iter().filter(|p| p.scope == "user") {
        let Some(servers) = read::get_path(&edit.expected, &path).cloned() else { break };
        // Where the entry is, in the tree and in the value.
        let (index, mut value) = match &servers {
            Value::Array(items) => match items.iter().position(named(&parked.name)) {
                Some(index) => (Some(index), items[index].clone()),
                None => continue,
            },
            Value::Object(map) => match map.get(&parked.name) {
                Some(value) => (None, value.clone()),
                None => continue,
            },
            _ => break,
        };
        let node = match index {
            Some(index) => {
                let seq = parent.get_sequence(last).with_context(|| format!("`{last}` is not a list"))?;
                seq.get(index).and_then(|n| n.as_mapping().cloned())
            }
            None => parent.get_mapping(last).and_then(|s| s.get_mapping(parked.name.as_str())),
        };
        let Some(node) = node else { continue };
        let removed = credential_keys(&value, &parked.remove);
        strip(&mut value, &removed);
        match harness.park {
            Park::Flag(flag, off) => {
                for (map_key, key) in &removed {
                    if let Some(map) = node.get_mapping(map_key.as_str()) {
                        map.remove(key.as_str());
                    }
                }
                node.set(flag, off);
                if let Some(object) = value.as_object_mut() {
                    object.insert(flag.to_owned(), off.into());
                }
                let mut servers = servers;
                match (&mut servers, index) {
                    (Value::Array(items), Some(i)) => items[i] = value,
                    (Value::Object(map), _) => {
                        map.insert(parked.name.clone(), value);
                    }
                    _ => {}
                }
                set_value(&mut edit.expected, &path, servers);
            }
            Park::Move => {
                let mut servers = servers;
                match (&mut servers, index) {
                    (Value::Array(items), Some(i)) => {
                        parent.get_sequence(last).context("a list")?.remove(i);
                        items.remove(i);
                    }
                    (Value::Object(map), _) => {
                        parent.get_mapping(last).context("a mapping")?.remove(parked.name.as_str());
                        map.remove(&parked.name);
                    }
                    _ => {}
                }
                set_value(&mut edit.expected, &path, servers);
                let store = read::get_path(&edit.expected, &parked_path).cloned();
                let store = match (store, index) {
                    (Some(Value::Array(mut items)), Some(_)) => {
                        seq_push(&parent.get_sequence(PARKED_KEY).context("a list")?, &value)?;
                        items.push(value);
                        Value::Array(items)
                    }
                    (Some(Value::Object(mut map)), None) => {
                        set_in(&parent.get_mapping(PARKED_KEY).context("a mapping")?, &parked.name, &value)?;
                        map.insert(parked.name.clone(), value);
                        Value::Object(map)
                    }
                    (None | Some(Value::Null), _) => {
                        let fresh = match index {
                            Some(_) => Value::Array(vec![value]),
                            None => Value::Object(Map::from_iter([(parked.name.clone(), value)])),
                        };
                        set_in(&parent, PARKED_KEY, &fresh)?;
                        fresh
                    }
                    _ => bail!(
                        "`{PARKED_KEY}` holds something else; fix the file or run connect without --replace"
                    ),
                };
                set_value(&mut edit.expected, &parked_path, store);
            }
        }
        edit.changed = true;
    }
    edit.finish()
}

/// `current` with the servers and the parked entries put back as they are in `before`;
/// everything else in `current` stays.
pub fn restore_servers(harness: &Descriptor, current: &str, before: &str) -> Result<String> {
    let before = read::parse(Format::Yaml, before).context("the backup is not valid YAML")?;
    let mut edit = Edit::open(current)?;
    let path = value_path(harness);
    let parents = &path[..path.len() - 1];
    for key in [*path.last().context("a servers key")?, PARKED_KEY] {
        let place: Vec<&str> = parents.iter().copied().chain([key]).collect();
        let want = read::get_path(&before, &place).cloned();
        if read::get_path(&edit.expected, &place) == want.as_ref() {
            continue;
        }
        let Some((parent, _)) = edit.parent(harness, want.is_some())? else { continue };
        match want {
            Some(value) => {
                set_in(&parent, key, &value)?;
                set_value(&mut edit.expected, &place, value);
            }
            None => {
                parent.remove(key);
                let parent_value = parents.iter().try_fold(&mut edit.expected, |v, k| v.get_mut(*k));
                if let Some(Value::Object(map)) = parent_value {
                    map.remove(key);
                }
            }
        }
        edit.changed = true;
    }
    Ok(edit.finish()?.unwrap_or_else(|| current.to_owned()))
}

fn is_list(harness: &Descriptor) -> bool {
    harness.shape == super::Shape::NamedList
}

fn value_path(harness: &Descriptor) -> Vec<&'static str> {
    harness.servers_key.to_vec()
}

fn named(name: &str) -> impl Fn(&Value) -> bool + '_ {
    move |v| v.get("name").and_then(Value::as_str) == Some(name)
}

/// The `(map, key)` pairs of the entry's environment and headers whose names are in `remove`
/// (compared without case), as the file spells them.
fn credential_keys(entry: &Value, remove: &[String]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for map_key in ENV_KEYS.iter().chain(HEADER_KEYS.iter()) {
        if let Some(map) = entry.get(*map_key).and_then(Value::as_object) {
            for key in map.keys() {
                if remove.iter().any(|r| r.eq_ignore_ascii_case(key)) {
                    found.push(((*map_key).to_owned(), key.clone()));
                }
            }
        }
    }
    found
}

fn strip(entry: &mut Value, removed: &[(String, String)]) {
    for (map_key, key) in removed {
        if let Some(map) = entry.get_mut(map_key).and_then(Value::as_object_mut) {
            map.remove(key);
        }
    }
}

/// Sets `path` in a JSON value to `value`, making the objects on the way.
fn set_value(doc: &mut Value, path: &[&str], value: Value) {
    let Some((last, parents)) = path.split_last() else {
        *doc = value;
        return;
    };
    let mut current = doc;
    for key in parents {
        if !current.get(*key).is_some_and(Value::is_object) {
            if let Some(object) = current.as_object_mut() {
                object.insert((*key).to_owned(), Value::Object(Map::new()));
            }
        }
        let Some(next) = current.get_mut(*key) else { return };
        current = next;
    }
    if let Some(object) = current.as_object_mut() {
        object.insert((*last).to_owned(), value);
    }
}

/// Sets `key` in a YAML mapping to a JSON value, written as block YAML.
fn set_in(mapping: &Mapping, key: &str, value: &Value) -> Result<()> {
    match value {
        Value::Object(map) => {
            let doc = mapping_builder(map).build_document();
            mapping.set(key, &doc.as_mapping().context("a mapping just built")?);
        }
        Value::Array(items) => {
            let doc = sequence_builder(items).build_document();
            mapping.set(key, &doc.as_sequence().context("a list just built")?);
        }
        Value::String(s) => mapping.set(key, s.as_str()),
        Value::Bool(b) => mapping.set(key, *b),
        Value::Number(n) => match n.as_i64() {
            Some(i) => mapping.set(key, i),
            None => mapping.set(key, n.as_f64().unwrap_or_default()),
        },
        Value::Null => mapping.set(key, None::<&str>),
    }
    Ok(())
}

fn seq_push(seq: &Sequence, value: &Value) -> Result<()> {
    match value {
        Value::Object(map) => {
            seq.push(&mapping_builder(map).build_document().as_mapping().context("a mapping")?)
        }
        other => seq.push(scalar_text(other)?),
    }
    Ok(())
}

fn seq_set(seq: &Sequence, index: usize, value: &Value) -> Result<()> {
    let Value::Object(map) = value else { bail!("a list entry is a mapping") };
    seq.set(index, &mapping_builder(map).build_document().as_mapping().context("a mapping")?);
    Ok(())
}

fn scalar_text(value: &Value) -> Result<String> {
    match value {
        Value::String(s) => Ok(s.clone()),
        _ => bail!("only strings and mappings go into a list here"),
    }
}

fn mapping_builder(map: &Map<String, Value>) -> MappingBuilder {
    map.iter().fold(MappingBuilder::new(), |b, (key, value)| match value {
        Value::Object(inner) => b.insert_mapping(key.clone(), mapping_builder(inner)),
        Value::Array(items) => b.insert_sequence(key.clone(), sequence_builder(items)),
        Value::String(s) => b.pair(key.clone(), s.as_str()),
        Value::Bool(v) => b.pair(key.clone(), *v),
        Value::Number(n) => match n.as_i64() {
            Some(i) => b.pair(key.clone(), i),
            None => b.pair(key.clone(), n.as_f64().unwrap_or_default()),
        },
        Value::Null => b.pair(key.clone(), None::<&str>),
    })
}

fn sequence_builder(items: &[Value]) -> SequenceBuilder {
    items.iter().fold(SequenceBuilder::new(), |b, value| match value {
        Value::Object(inner) => b.insert_mapping(mapping_builder(inner)),
        Value::Array(inner) => b.insert_sequence(sequence_builder(inner)),
        Value::String(s) => b.item(s.as_str()),
        Value::Bool(v) => b.item(*v),
        Value::Number(n) => match n.as_i64() {
            Some(i) => b.item(i),
            None => b.item(n.as_f64().unwrap_or_default()),
        },
        Value::Null => b.item(None::<&str>),
    })
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::harness::find;

    fn entry() -> HubEntry {
        HubEntry {
            command: "/opt/bin/capabilities".into(),
            args: ["hub", "serve", "--stdio"].map(String::from).to_vec(),
            env: vec![],
        }
    }

    fn parked(name: &str, remove: &[&str]) -> Parked {
        Parked {
            scope: "user".into(),
            name: name.into(),
            remove: remove.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn hermes_keeps_comments_and_quoting_and_flags_entries_off() {
        let hermes = find("hermes").unwrap();
        let text = "# Hermes\nmodel: \"gpt\"  # mine\nmcp_servers:\n  # the old one\n  memory:\n    command: npx\n    args: [\"-y\", 'x']\n    env:\n      API_TOKEN: sk-live-1\n      LOG: '1'\nother:\n  - a\n";
        let added = with_entry(hermes, text, &entry()).unwrap();
        expect![[r#"
            # Hermes
            model: "gpt"  # mine
            mcp_servers:
              # the old one
              memory:
                command: npx
                args: ["-y", 'x']
                env:
                  API_TOKEN: sk-live-1
                  LOG: '1'
              capabilities:
                command: /opt/bin/capabilities
                args:
                  - hub
                  - serve
                  - '--stdio'
            other:
              - a
        "#]]
        .assert_eq(&added);
        assert_eq!(
            without_entry(hermes, &added).unwrap().unwrap(),
            text,
            "removing ours gives the bytes back"
        );
        let moved = park(hermes, &added, &[parked("memory", &["api_token"])]).unwrap().unwrap();
        let doc = read::parse(Format::Yaml, &moved).unwrap();
        assert_eq!(doc["mcp_servers"]["memory"]["env"], serde_json::json!({"LOG": "1"}));
        assert_eq!(doc["mcp_servers"]["memory"]["enabled"], false, "Hermes's own switch");
        assert!(
            moved.starts_with("# Hermes\nmodel: \"gpt\"  # mine\nmcp_servers:\n  # the old one\n"),
            "{moved}"
        );
        assert!(!moved.contains("sk-live-"), "{moved}");
        // Rollback merging (`--keep-edits`) puts the servers back and keeps the rest.
        let edited = moved.replace("model: \"gpt\"", "model: \"o4\"");
        // (the servers are written anew there, as in JSON files).
        let restored = restore_servers(hermes, &edited, text).unwrap();
        let want = text.replace("\"gpt\"", "\"o4\"");
        assert_eq!(read::parse(Format::Yaml, &restored).unwrap(), read::parse(Format::Yaml, &want).unwrap());
        assert!(
            restored.starts_with("# Hermes\nmodel: \"o4\"  # mine\n")
                && restored.ends_with("other:\n  - a\n")
        );
    }

    #[test]
    fn goose_flags_entries_off_in_place() {
        let goose = find("goose").unwrap();
        let text = "GOOSE_PROVIDER: openai\nextensions:\n  developer:\n    enabled: true\n    type: builtin\n    name: developer\n  memory:\n    cmd: npx   # keep me\n    args:\n    - -y\n    - '@x/memory'\n    envs:\n      API_TOKEN: t\n    enabled: true\n    type: stdio\n";
        let added = with_entry(goose, text, &entry()).unwrap();
        let off = park(goose, &added, &[parked("memory", &["API_TOKEN"])]).unwrap().unwrap();
        expect![[r#"
            GOOSE_PROVIDER: openai
            extensions:
              developer:
                enabled: true
                type: builtin
                name: developer
              memory:
                cmd: npx   # keep me
                args:
                - -y
                - '@x/memory'
                envs: {}
                enabled: false
                type: stdio
              capabilities:
                name: capabilities
                type: stdio
                cmd: /opt/bin/capabilities
                args:
                  - hub
                  - serve
                  - '--stdio'
                enabled: true
                timeout: 300
        "#]]
        .assert_eq(&off);
        assert_eq!(without_entry(goose, &added).unwrap().unwrap(), text);
    }

    #[test]
    fn continue_lists_servers_by_name() {
        let cont = find("continue").unwrap();
        let text = "name: Local\nversion: 1.0.0\nschema: v1\nmcpServers:\n  - name: memory  # mine\n    command: npx\n  - name: other\n    command: node\n";
        let added = with_entry(cont, text, &entry()).unwrap();
        assert!(added.starts_with(text), "appended after the others:\n{added}");
        let again = with_entry(cont, &added, &HubEntry { command: "/new".into(), ..entry() }).unwrap();
        let doc = read::parse(Format::Yaml, &again).unwrap();
        assert_eq!(doc["mcpServers"].as_array().unwrap().len(), 3, "{again}");
        assert_eq!(doc["mcpServers"][2]["command"], "/new");
        assert_eq!(without_entry(cont, &added).unwrap().unwrap(), text);
        let moved = park(cont, &added, &[parked("memory", &[])]).unwrap().unwrap();
        let doc = read::parse(Format::Yaml, &moved).unwrap();
        assert_eq!(doc[PARKED_KEY][0]["name"], "memory");
        assert_eq!(doc["mcpServers"][0]["name"], "other");
        // A file without servers, and none at all.
        let fresh = with_entry(cont, "name: Local\n", &entry()).unwrap();
        assert_eq!(read::parse(Format::Yaml, &fresh).unwrap()["mcpServers"][0]["name"], "capabilities");
        for empty in ["", "# nothing yet\n"] {
            let fresh = with_entry(cont, empty, &entry()).unwrap();
            assert!(fresh.starts_with(empty) && fresh.ends_with('\n'), "{fresh:?}");
            assert_eq!(read::parse(Format::Yaml, &fresh).unwrap()["mcpServers"][0]["name"], "capabilities");
        }
    }

    #[test]
    fn hostile_yaml_is_refused_with_a_reason() {
        let hermes = find("hermes").unwrap();
        let bomb = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n\
            b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]\n\
            d: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e [*d,*d,*d,*d,*d,*d,*d,*d,*d]\n\
            f: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: &g [*f,*f,*f,*f,*f,*f,*f,*f,*f]\n\
            h: &h [*g,*g,*g,*g,*g,*g,*g,*g,*g]\ni: &i [*h,*h,*h,*h,*h,*h,*h,*h,*h]\n";
        let cases = [
            ("an alias bomb", bomb.to_owned()),
            ("duplicate keys", "mcp_servers:\n  a:\n    command: x\nmcp_servers: {}\n".to_owned()),
            ("tabs", "mcp_servers:\n\ta:\n\t\tcommand: x\n".to_owned()),
            ("a list at the top", "- mcp_servers\n- x\n".to_owned()),
            ("a scalar at the top", "just text\n".to_owned()),
            ("two documents", "a: 1\n---\nb: 2\n".to_owned()),
            ("a syntax error", "mcp_servers: [a,\n".to_owned()),
            ("servers that are a list", "mcp_servers:\n  - a\n".to_owned()),
            // The servers mapping is an anchor another key aliases: editing it would change both.
            ("an edit through an anchor", "mcp_servers: &s\n  a:\n    command: x\nbackup: *s\n".to_owned()),
        ];
        for (what, text) in cases {
            let err = with_entry(hermes, &text, &entry()).expect_err(what);
            let message = format!("{err:#}");
            assert!(!message.is_empty() && !message.contains("panicked"), "{what}: {message}");
            eprintln!("{what}: {message}");
        }
    }
}

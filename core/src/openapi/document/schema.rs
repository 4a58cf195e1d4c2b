//! A document's schemas as JSON Schema 2020-12, the dialect typegen and the validator read.
//!
//! Every version's quirks become 2020-12: 3.0's `nullable` adds `null` to the type (or wraps
//! the schema in `anyOf` with `null`), 2.0/3.0's boolean `exclusiveMinimum`/`exclusiveMaximum`
//! take the bound's number, `example` becomes `examples`, 2.0's `type: file` a binary string;
//! `x-*` extensions, `discriminator`, `xml`, `externalDocs` and nested `$id`/`$schema`/`$defs`
//! go. A `$ref` is never expanded: it becomes `#/$defs/<Name>` and its target one entry of the
//! tool's `$defs`, normalised once per document ([`Schemas::defs`]), so a schema that refers to
//! itself stays a reference. A schema that is not one (`type: 5`, `properties: []`) fails the
//! operation that uses it, not the document.

use std::collections::{HashMap, HashSet, VecDeque};

use serde_json::{Map, Value};

use super::Version;
use super::parse::MAX_DEPTH;
use super::refs::{Fault, Refs, child, last_key};
use crate::manifest::json_kind;

/// Keywords whose value is one schema.
const ONE_SCHEMA: &[&str] = &[
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
    "contentSchema",
];
/// Keywords whose value is a list of schemas.
const SCHEMA_LISTS: &[&str] = &["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value maps names to schemas.
const SCHEMA_MAPS: &[&str] = &["properties", "patternProperties", "dependentSchemas"];
/// Keywords left out: OpenAPI's own, and those that would change how `$ref`s resolve.
const DROPPED: &[&str] = &[
    "discriminator",
    "xml",
    "externalDocs",
    "$schema",
    "$id",
    "$anchor",
    "$dynamicAnchor",
    "$dynamicRef",
    "$recursiveAnchor",
    "$recursiveRef",
    "$defs",
    "definitions",
    "$comment",
    "$vocabulary",
    // Swagger 2.0's way of sending arrays, in parameters' `items`: the parameter says it.
    "collectionFormat",
];
/// Keywords that must hold a number.
const NUMBERS: &[&str] = &[
    "minimum",
    "maximum",
    "multipleOf",
    "minLength",
    "maxLength",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minContains",
    "maxContains",
];
const TYPES: &[&str] = &["null", "boolean", "object", "array", "number", "string", "integer"];
/// Annotations a `nullable` wrapper carries outside its `anyOf`, where readers look for them.
const LIFTED: &[&str] =
    &["title", "description", "default", "examples", "deprecated", "readOnly", "writeOnly"];

/// A schema converted, with the document pointers of the definitions it refers to.
#[derive(Debug, Clone, Default)]
pub(super) struct Converted {
    pub value: Value,
    pub refs: Vec<String>,
    /// Schema objects in `value`.
    pub nodes: usize,
}

/// A definition, converted once for the whole document.
#[derive(Debug)]
struct Def {
    name: String,
    converted: Result<Converted, String>,
}

/// Every schema of one document, converted on demand.
#[derive(Debug)]
pub(super) struct Schemas<'a> {
    refs: Refs<'a>,
    /// Definition name of each pointer referred to.
    names: HashMap<String, String>,
    taken: HashSet<String>,
    defs: HashMap<String, Def>,
}

/// The `$defs` of one tool's schema and how many schema objects they hold.
#[derive(Debug, Default)]
pub(super) struct Defs {
    pub map: Map<String, Value>,
    pub nodes: usize,
}

impl<'a> Schemas<'a> {
    pub(super) fn new(refs: Refs<'a>, version: Version) -> Schemas<'a> {
        let mut schemas =
            Schemas { refs, names: HashMap::new(), taken: HashSet::new(), defs: HashMap::new() };
        // Components keep their own names (first come first served), whichever tools use them.
        let section = if version == Version::Swagger2 { "/definitions" } else { "/components/schemas" };
        if let Some(Value::Object(components)) = refs.at(section) {
            for key in components.keys() {
                schemas.name(&child(section, key));
            }
        }
        schemas
    }

    /// Converts one schema found at `location`.
    pub(super) fn convert(&mut self, schema: &Value, location: &str) -> Result<Converted, Fault> {
        let mut out = Converted::default();
        out.value = self.walk(schema, location, 0, &mut out.refs, &mut out.nodes)?;
        Ok(out)
    }

    /// The `$defs` for schemas that refer to `roots`: each definition they reach, converted.
    pub(super) fn defs(&mut self, roots: &[String]) -> Result<Defs, Fault> {
        let mut out = Defs::default();
        let mut queue: VecDeque<String> = roots.iter().cloned().collect();
        let mut seen: HashSet<String> = HashSet::new();
        while let Some(pointer) = queue.pop_front() {
            if !seen.insert(pointer.clone()) {
                continue;
            }
            let def = self.def(&pointer)?;
            let converted = def.converted.as_ref().map_err(|why| Fault::Skip(why.clone()))?;
            out.map.insert(def.name.clone(), converted.value.clone());
            out.nodes += converted.nodes;
            queue.extend(converted.refs.iter().filter(|p| !seen.contains(*p)).cloned());
        }
        Ok(out)
    }

    fn def(&mut self, pointer: &str) -> Result<&Def, Fault> {
        if !self.defs.contains_key(pointer) {
            let name = self.name(pointer);
            let converted = match self.refs.at(pointer) {
                Some(target) => match self.convert(target, pointer) {
                    Ok(c) => Ok(c),
                    Err(Fault::Skip(why)) => Err(why),
                    Err(fatal) => return Err(fatal),
                },
                None => Err(format!("nothing at `{pointer}`")),
            };
            self.defs.insert(pointer.to_owned(), Def { name, converted });
        }
        Ok(&self.defs[pointer])
    }

    /// The definition name a pointer goes by, unique in the document.
    fn name(&mut self, pointer: &str) -> String {
        if let Some(name) = self.names.get(pointer) {
            return name.clone();
        }
        let base = base_name(pointer);
        let mut name = base.clone();
        let mut n = 2;
        while self.taken.contains(&name) {
            name = format!("{base}{n}");
            n += 1;
        }
        self.taken.insert(name.clone());
        self.names.insert(pointer.to_owned(), name.clone());
        name
    }

    fn walk(
        &mut self,
        v: &Value,
        at: &str,
        depth: usize,
        refs: &mut Vec<String>,
        nodes: &mut usize,
    ) -> Result<Value, Fault> {
        if depth > MAX_DEPTH {
            return Err(Fault::Skip(format!("the schema at `{at}` nests deeper than {MAX_DEPTH} levels")));
        }
        let m = match v {
            Value::Bool(_) => return Ok(v.clone()),
            Value::Object(m) => m,
            other => return Err(invalid(at, &format!("is {}, not a schema", json_kind(other)))),
        };
        *nodes += 1;
        let mut out = Map::new();
        let mut nullable = false;
        let mut example = None;
        let mut exclusive = [None, None];
        let mut file = false;
        let mut required_props: Vec<String> = Vec::new();
        for (key, value) in m {
            let here = || child(at, key);
            match key.as_str() {
                "$ref" => {
                    let Value::String(reference) = value else {
                        return Err(invalid(at, &format!("has a `$ref` that is {}", json_kind(value))));
                    };
                    let (_, pointer) = self.refs.target(reference, &here())?;
                    let name = self.name(&pointer);
                    if !refs.contains(&pointer) {
                        refs.push(pointer);
                    }
                    out.insert("$ref".into(), Value::String(format!("#/$defs/{name}")));
                }
                "nullable" | "x-nullable" => nullable |= value == &Value::Bool(true),
                k if k.starts_with("x-") || DROPPED.contains(&k) => {}
                "example" => example = Some(value.clone()),
                "examples" => {
                    if value.is_array() {
                        out.insert(key.clone(), value.clone());
                    }
                }
                "type" => {
                    let ok = |t: &Value| t.as_str().is_some_and(|t| TYPES.contains(&t) || t == "file");
                    let fine = match value {
                        Value::Array(ts) => !ts.is_empty() && ts.iter().all(ok),
                        t => ok(t),
                    };
                    if !fine {
                        return Err(invalid(at, &format!("has `type` {}", short(value))));
                    }
                    if value.as_str() == Some("file") {
                        file = true;
                        out.insert(key.clone(), Value::String("string".into()));
                    } else {
                        out.insert(key.clone(), value.clone());
                    }
                }
                k if SCHEMA_MAPS.contains(&k) => {
                    let Value::Object(members) = value else {
                        return Err(invalid(at, &format!("has `{k}` that is {}", json_kind(value))));
                    };
                    let mut converted = Map::new();
                    for (name, schema) in members {
                        let place = child(&here(), name);
                        if k == "properties" && schema.get("required") == Some(&Value::Bool(true)) {
                            required_props.push(name.clone());
                        }
                        converted.insert(name.clone(), self.walk(schema, &place, depth + 1, refs, nodes)?);
                    }
                    out.insert(key.clone(), Value::Object(converted));
                }
                k if SCHEMA_LISTS.contains(&k) => {
                    let Value::Array(members) = value else {
                        return Err(invalid(at, &format!("has `{k}` that is {}", json_kind(value))));
                    };
                    let mut converted = Vec::with_capacity(members.len());
                    for (i, schema) in members.iter().enumerate() {
                        let place = child(&here(), &i.to_string());
                        converted.push(self.walk(schema, &place, depth + 1, refs, nodes)?);
                    }
                    if !converted.is_empty() {
                        out.insert(key.clone(), Value::Array(converted));
                    }
                }
                "items" => match value {
                    // Draft 4's tuples: 2020-12 calls them `prefixItems`, the rest `items`.
                    Value::Array(members) => {
                        let mut converted = Vec::with_capacity(members.len());
                        for (i, schema) in members.iter().enumerate() {
                            let place = child(&here(), &i.to_string());
                            converted.push(self.walk(schema, &place, depth + 1, refs, nodes)?);
                        }
                        out.insert("prefixItems".into(), Value::Array(converted));
                        if let Some(rest) = m.get("additionalItems") {
                            let place = child(at, "additionalItems");
                            out.insert("items".into(), self.walk(rest, &place, depth + 1, refs, nodes)?);
                        }
                    }
                    schema => {
                        out.insert(key.clone(), self.walk(schema, &here(), depth + 1, refs, nodes)?);
                    }
                },
                "additionalItems" => {}
                k if ONE_SCHEMA.contains(&k) => {
                    out.insert(key.clone(), self.walk(value, &here(), depth + 1, refs, nodes)?);
                }
                "required" => match value {
                    Value::Array(names) => {
                        let names: Vec<Value> = names.iter().filter(|n| n.is_string()).cloned().collect();
                        if !names.is_empty() {
                            out.insert(key.clone(), Value::Array(names));
                        }
                    }
                    // `required: true` on a property schema is the parent's `required`.
                    Value::Bool(_) => {}
                    other => {
                        return Err(invalid(at, &format!("has `required` that is {}", json_kind(other))));
                    }
                },
                "enum" => {
                    if !value.is_array() {
                        return Err(invalid(at, &format!("has `enum` that is {}", json_kind(value))));
                    }
                    out.insert(key.clone(), value.clone());
                }
                "exclusiveMinimum" | "exclusiveMaximum" => {
                    let slot = usize::from(key == "exclusiveMaximum");
                    match value {
                        Value::Bool(b) => exclusive[slot] = Some(*b),
                        Value::Number(_) => {
                            out.insert(key.clone(), value.clone());
                        }
                        other => {
                            return Err(invalid(at, &format!("has `{key}` that is {}", json_kind(other))));
                        }
                    }
                }
                k if NUMBERS.contains(&k) => {
                    if !value.is_number() {
                        return Err(invalid(at, &format!("has `{k}` that is {}", json_kind(value))));
                    }
                    out.insert(key.clone(), value.clone());
                }
                _ => {
                    out.insert(key.clone(), value.clone());
                }
            }
        }
        // Booleans that make a bound exclusive take the bound's number (draft 6 on).
        for (slot, (bound, keyword)) in
            [("minimum", "exclusiveMinimum"), ("maximum", "exclusiveMaximum")].into_iter().enumerate()
        {
            if exclusive[slot] == Some(true)
                && let Some(number) = out.remove(bound)
            {
                out.insert(keyword.into(), number);
            }
        }
        if file {
            out.insert("format".into(), Value::String("binary".into()));
        }
        if let Some(example) = example
            && !out.contains_key("examples")
        {
            out.insert("examples".into(), Value::Array(vec![example]));
        }
        if !required_props.is_empty() {
            let mut names = match out.remove("required") {
                Some(Value::Array(names)) => names,
                _ => Vec::new(),
            };
            for name in required_props {
                if !names.iter().any(|n| n == &name) {
                    names.push(Value::String(name));
                }
            }
            out.insert("required".into(), Value::Array(names));
        }
        if nullable {
            return Ok(null_too(out));
        }
        Ok(Value::Object(out))
    }
}

/// `nullable: true` in 2020-12 words: `null` added to `type` (and to `enum`), or the schema as
/// one side of an `anyOf` with `null` when it has no `type` of its own.
fn null_too(mut out: Map<String, Value>) -> Value {
    let null = Value::String("null".into());
    if let Some(Value::Array(values)) = out.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match out.get_mut("type") {
        Some(Value::String(t)) => {
            let t = Value::String(std::mem::take(t));
            out.insert("type".into(), Value::Array(vec![t, null]));
            Value::Object(out)
        }
        Some(Value::Array(types)) => {
            if !types.contains(&null) {
                types.push(null);
            }
            Value::Object(out)
        }
        _ => {
            let mut wrapper = Map::new();
            for key in LIFTED {
                if let Some(v) = out.remove(*key) {
                    wrapper.insert((*key).to_owned(), v);
                }
            }
            let null_schema = Value::Object(Map::from_iter([("type".to_owned(), null)]));
            wrapper.insert("anyOf".into(), Value::Array(vec![Value::Object(out), null_schema]));
            Value::Object(wrapper)
        }
    }
}

fn invalid(at: &str, what: &str) -> Fault {
    Fault::Skip(format!("the schema at `{at}` {what}, which is not a JSON Schema"))
}

/// A value in a message, cut short.
fn short(v: &Value) -> String {
    let text = v.to_string();
    if text.chars().count() <= 40 {
        return format!("`{text}`");
    }
    let cut: String = text.chars().take(39).collect();
    format!("`{cut}…`")
}

/// Words of a pointer that say where a schema is rather than what it is.
const PLACE_WORDS: &[&str] = &[
    "paths",
    "components",
    "schemas",
    "definitions",
    "parameters",
    "responses",
    "requestBodies",
    "headers",
    "content",
    "schema",
    "properties",
    "items",
    "prefixItems",
    "allOf",
    "anyOf",
    "oneOf",
    "not",
    "additionalProperties",
    "patternProperties",
    "$defs",
    "get",
    "put",
    "post",
    "delete",
    "options",
    "head",
    "patch",
    "trace",
];

/// A definition's name from its pointer: a component's own name (`/components/schemas/Pet` →
/// `Pet`), else the pointer's last word that names something, in the characters JSON Schema
/// references take without escaping.
fn base_name(pointer: &str) -> String {
    let words: Vec<String> = pointer.split('/').skip(1).map(|w| last_key(&format!("/{w}"))).collect();
    let component = match words.as_slice() {
        [c, s, name, ..] if c == "components" && s == "schemas" => Some(name.as_str()),
        [d, name, ..] if d == "definitions" => Some(name.as_str()),
        _ => None,
    };
    let skip = match (component, words.first()) {
        (None, _) => 0,
        (Some(_), Some(first)) if first == "definitions" => 2,
        (Some(_), _) => 3,
    };
    let tail = words[skip.min(words.len())..]
        .iter()
        .rev()
        .find(|w| !w.is_empty() && !w.contains('/') && !PLACE_WORDS.contains(&w.as_str()) && !is_number(w));
    let raw = match (component, tail) {
        (Some(c), None) => c.to_owned(),
        (Some(c), Some(t)) => format!("{c}_{t}"),
        (None, Some(t)) => t.clone(),
        (None, None) => "Schema".to_owned(),
    };
    let clean: String =
        raw.chars().map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '_' }).collect();
    if clean.trim_matches('_').is_empty() { "Schema".to_owned() } else { clean }
}

/// `200`, `2XX`, `0`: a status code or a list index.
fn is_number(w: &str) -> bool {
    w.starts_with(|c: char| c.is_ascii_digit())
        && w.bytes().all(|b| b.is_ascii_digit() || b == b'X' || b == b'x')
}

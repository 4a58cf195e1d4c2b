//! Operations → tool records: the name, the words, the hints, one input object from the
//! parameters and the body, and the `{ status, headers, body }` output.

use std::collections::{BTreeMap, HashSet};

use serde_json::{Map, Value, json};

use super::refs::{Fault, Refs, child};
use super::schema::{Converted, Schemas};
use super::{DocumentError, Version};
use crate::manifest::{Annotations, ToolRecord, json_kind};
use crate::openapi::{
    BodyField, BodyShape, HttpBody, HttpOperation, HttpParameter, ParameterLocation, ParameterStyle,
};

/// The methods a path item holds operations under.
const METHODS: &[&str] = &["get", "put", "post", "delete", "options", "head", "patch", "trace"];
/// The longest `description` kept of an operation, in characters (its summary, tags and
/// deprecation are kept besides).
pub(super) const MAX_DESCRIPTION_CHARS: usize = 1_500;
/// Schema objects one tool's input (or output) may hold, its `$defs` included. GitHub's largest
/// output holds about 2,500.
pub(super) const MAX_TOOL_NODES: usize = 50_000;
/// Header parameters OpenAPI says to ignore: the request's own.
const IGNORED_HEADERS: &[&str] = &["accept", "content-type", "authorization"];

/// The operations read, and what was left out or changed.
#[derive(Debug, Default)]
pub(super) struct Read {
    pub operations: Vec<ToolRecord>,
    pub problems: Vec<String>,
    /// The scopes the operations' `security` asks of each scheme.
    pub scopes: BTreeMap<String, Vec<String>>,
}

/// One operation where the document has it.
struct Found<'a> {
    path: &'a str,
    method: &'static str,
    op: &'a Map<String, Value>,
    item: &'a Map<String, Value>,
    at: String,
    item_at: String,
}

/// Every operation of the document, in order.
pub(super) fn read_all(
    refs: &Refs<'_>,
    version: Version,
    max_operations: usize,
) -> Result<Read, DocumentError> {
    let mut read = Read::default();
    let found = collect(refs, &mut read.problems)?;
    if found.len() > max_operations {
        return Err(DocumentError::TooManyOperations { count: found.len(), limit: max_operations });
    }
    let root = refs.root;
    let mut reader = Reader {
        refs: *refs,
        version,
        schemas: Schemas::new(*refs, version),
        security: root.get("security"),
        consumes: media_list(root.get("consumes")),
    };
    let mut taken: HashSet<String> = HashSet::new();
    for f in &found {
        let fallback = format!("{} {}", f.method, f.path);
        let label = |name: &str| {
            if name == fallback {
                format!("`{name}`")
            } else {
                format!("`{name}` ({} {})", f.method.to_ascii_uppercase(), f.path)
            }
        };
        let id = match f.op.get("operationId") {
            Some(Value::String(id)) if !id.trim().is_empty() => Some(id.trim()),
            None | Some(Value::String(_)) => None,
            Some(other) => {
                read.problems.push(format!(
                    "{}: `operationId` is {}, not a string; named by method and path",
                    label(&fallback),
                    json_kind(other)
                ));
                None
            }
        };
        let mut name = match id {
            Some(id) if !taken.contains(id) => id.to_owned(),
            Some(id) => {
                read.problems.push(format!(
                    "{}: operationId `{id}` is taken by an earlier operation; named by method and path",
                    label(&fallback)
                ));
                fallback.clone()
            }
            None => fallback.clone(),
        };
        let mut n = 2;
        while taken.contains(&name) {
            name = format!("{fallback} #{n}");
            n += 1;
        }
        taken.insert(name.clone());
        let mut notes = Vec::new();
        match reader.operation(f, name.clone(), &mut notes) {
            Ok(record) => {
                super::security::requirement_scopes(
                    f.op.get("security").or(reader.security),
                    &mut read.scopes,
                );
                read.operations.push(record);
            }
            Err(Fault::Skip(why)) => notes.push(format!("{why}; left out")),
            Err(Fault::Fatal(e)) => return Err(e),
        }
        read.problems.extend(notes.into_iter().map(|note| format!("{}: {note}", label(&name))));
    }
    Ok(read)
}

/// The operations of every path item, `$ref`s followed; a path item that cannot be read is a
/// problem line.
fn collect<'a>(refs: &Refs<'a>, problems: &mut Vec<String>) -> Result<Vec<Found<'a>>, DocumentError> {
    let mut found = Vec::new();
    let paths = match refs.root.get("paths") {
        None | Some(Value::Null) => return Ok(found),
        Some(Value::Object(paths)) => paths,
        Some(other) => {
            return Err(DocumentError::Malformed {
                location: "/paths".into(),
                found: json_kind(other),
                expected: "an object of paths",
            });
        }
    };
    for (path, item) in paths {
        if path.starts_with("x-") {
            continue;
        }
        let at = child("/paths", path);
        if !path.starts_with('/') {
            problems.push(format!("path `{path}` does not start with `/`; its operations are left out"));
            continue;
        }
        let (item, item_at) = match refs.follow(item, &at) {
            Ok((Value::Object(m), item_at)) => (m, item_at),
            Ok((other, _)) => {
                problems.push(format!("path `{path}` is {}, not a path item; left out", json_kind(other)));
                continue;
            }
            Err(Fault::Skip(why)) => {
                problems.push(format!("path `{path}`: {why}; left out"));
                continue;
            }
            Err(Fault::Fatal(e)) => return Err(e),
        };
        for (key, op) in item {
            let Some(method) = METHODS.iter().find(|m| **m == key) else { continue };
            let op_at = child(&item_at, key);
            let Value::Object(op) = op else {
                problems.push(format!("`{method} {path}` is {}, not an operation; left out", json_kind(op)));
                continue;
            };
            found.push(Found { path, method, op, item, at: op_at, item_at: item_at.clone() });
        }
    }
    Ok(found)
}

/// The input object being built: its properties, which are required, and the definitions
/// they refer to.
#[derive(Default)]
struct Input {
    properties: Map<String, Value>,
    required: Vec<String>,
    refs: Vec<String>,
    nodes: usize,
}

impl Input {
    /// The input field for `wire`: its own name, else with `_{suffix}` (and a number if need be).
    fn claim(&self, wire: &str, suffix: &str) -> String {
        if !self.properties.contains_key(wire) {
            return wire.to_owned();
        }
        let base = format!("{wire}_{suffix}");
        let mut name = base.clone();
        let mut n = 2;
        while self.properties.contains_key(&name) {
            name = format!("{base}{n}");
            n += 1;
        }
        name
    }

    fn add(&mut self, argument: &str, converted: Converted, required: bool) {
        for pointer in converted.refs {
            if !self.refs.contains(&pointer) {
                self.refs.push(pointer);
            }
        }
        self.nodes += converted.nodes;
        self.properties.insert(argument.to_owned(), converted.value);
        if required {
            self.required.push(argument.to_owned());
        }
    }
}

/// A property of an object body: its name, schema, where that is, and whether it is required.
type BodyProperty<'v> = (String, &'v Value, String, bool);

/// A parameter object and where in the document it sits.
type Located<'v> = (&'v Map<String, Value>, String);

struct Reader<'a> {
    refs: Refs<'a>,
    version: Version,
    schemas: Schemas<'a>,
    /// The document-level `security`.
    security: Option<&'a Value>,
    /// 2.0's document-level `consumes`.
    consumes: Vec<String>,
}

impl<'a> Reader<'a> {
    fn operation(
        &mut self,
        f: &Found<'a>,
        name: String,
        notes: &mut Vec<String>,
    ) -> Result<ToolRecord, Fault> {
        let method = f.method.to_ascii_uppercase();
        let mut input = Input::default();
        let mut parameters = Vec::new();
        let mut body_parameter = None;
        let mut form = Vec::new();
        for (p, at) in self.parameters(f)? {
            let wire = text(p, "name").unwrap_or_default().to_owned();
            let location = match text(p, "in").unwrap_or_default() {
                "path" => ParameterLocation::Path,
                "query" => ParameterLocation::Query,
                "header" => ParameterLocation::Header,
                "cookie" => ParameterLocation::Cookie,
                "body" if self.version == Version::Swagger2 => {
                    if body_parameter.is_some() {
                        notes.push(format!("a second body parameter, `{wire}`, is left out"));
                    } else {
                        body_parameter = Some((p, at));
                    }
                    continue;
                }
                "formData" if self.version == Version::Swagger2 => {
                    form.push((p, at));
                    continue;
                }
                other => {
                    return Err(Fault::Skip(format!(
                        "parameter `{wire}` is in `{other}`, which is not read"
                    )));
                }
            };
            if location == ParameterLocation::Header
                && IGNORED_HEADERS.contains(&wire.to_ascii_lowercase().as_str())
            {
                continue;
            }
            let (style, explode) = self.style(p, &wire, location)?;
            let converted = self.parameter_schema(p, &at)?;
            let required =
                location == ParameterLocation::Path || p.get("required") == Some(&Value::Bool(true));
            let argument = input.claim(&wire, location_word(location));
            input.add(&argument, converted, required);
            parameters.push(HttpParameter { name: wire, location, argument, style, explode });
        }
        // A path's `{name}` that no parameter declares still has to be filled.
        for var in template_names(f.path) {
            if !parameters.iter().any(|p| p.location == ParameterLocation::Path && p.name == var) {
                notes.push(format!("path parameter `{var}` is not declared; read as a string"));
                let argument = input.claim(&var, "path");
                let converted = Converted { value: json!({ "type": "string" }), refs: Vec::new(), nodes: 1 };
                input.add(&argument, converted, true);
                parameters.push(HttpParameter {
                    name: var,
                    location: ParameterLocation::Path,
                    argument,
                    style: None,
                    explode: None,
                });
            }
        }
        let body = match self.version {
            Version::Swagger2 => self.swagger_body(f, body_parameter, form, &mut input)?,
            _ => self.request_body(f, &mut input)?,
        };
        let input_schema = self.input_schema(input)?;
        let output_schema = self.output_schema(f, notes)?;
        let servers = |m: &Map<String, Value>| {
            m.get("servers").and_then(Value::as_array).is_some_and(|s| !s.is_empty())
        };
        if servers(f.op) || servers(f.item) {
            notes.push("declares servers of its own; it is called at the source's base URL".into());
        }
        let security = f.op.get("security").or(self.security);
        let authenticated = !matches!(security, Some(Value::Array(list)) if list.is_empty());
        let http = HttpOperation { method, path: f.path.to_owned(), parameters, body, authenticated };
        let annotations = Annotations {
            read_only_hint: http.reads().then_some(true),
            idempotent_hint: matches!(f.method, "put" | "delete").then_some(true),
            ..Annotations::default()
        };
        Ok(ToolRecord {
            name,
            title: text(f.op, "summary").map(str::to_owned),
            description: description(f.op),
            input_schema,
            output_schema: Some(output_schema),
            annotations,
            http: Some(http),
        })
    }

    /// The path item's parameters with the operation's, the operation's replacing any of the
    /// same name and location; `$ref`s followed.
    fn parameters(&self, f: &Found<'a>) -> Result<Vec<Located<'a>>, Fault> {
        let mut merged: Vec<Located<'a>> = Vec::new();
        for (holder, at) in [(f.item, &f.item_at), (f.op, &f.at)] {
            let list = match holder.get("parameters") {
                None | Some(Value::Null) => continue,
                Some(Value::Array(list)) => list,
                Some(other) => {
                    return Err(Fault::Skip(format!(
                        "`{at}/parameters` is {}, not a list",
                        json_kind(other)
                    )));
                }
            };
            for (i, p) in list.iter().enumerate() {
                let (p, p_at) = self.refs.follow(p, &child(&child(at, "parameters"), &i.to_string()))?;
                let Value::Object(p) = p else {
                    return Err(Fault::Skip(format!("the parameter at `{p_at}` is {}", json_kind(p))));
                };
                let (Some(name), Some(location)) = (text(p, "name"), text(p, "in")) else {
                    return Err(Fault::Skip(format!("the parameter at `{p_at}` lacks a `name` or an `in`")));
                };
                let same = |(q, _): &&mut (&Map<String, Value>, String)| {
                    text(q, "name") == Some(name) && text(q, "in") == Some(location)
                };
                match merged.iter_mut().find(|e| same(e)) {
                    Some(slot) => *slot = (p, p_at),
                    None => merged.push((p, p_at)),
                }
            }
        }
        Ok(merged)
    }

    /// The style and explode the document sets. Swagger 2.0's `collectionFormat` in its
    /// OpenAPI 3 words; its default, `csv`, is an unexploded array.
    fn style(
        &self,
        p: &Map<String, Value>,
        wire: &str,
        location: ParameterLocation,
    ) -> Result<(Option<ParameterStyle>, Option<bool>), Fault> {
        if self.version == Version::Swagger2 {
            if text(p, "type") != Some("array") {
                return Ok((None, None));
            }
            let query = location == ParameterLocation::Query;
            return match text(p, "collectionFormat").unwrap_or("csv") {
                "csv" if query => Ok((None, Some(false))),
                "csv" => Ok((None, None)),
                "multi" if query => Ok((Some(ParameterStyle::Form), Some(true))),
                "ssv" if query => Ok((Some(ParameterStyle::SpaceDelimited), Some(false))),
                "pipes" if query => Ok((Some(ParameterStyle::PipeDelimited), Some(false))),
                other => Err(Fault::Skip(format!(
                    "parameter `{wire}` sends its array as `{other}`, which is not sent here"
                ))),
            };
        }
        let style = match p.get("style") {
            None => None,
            Some(raw) => match serde_json::from_value::<ParameterStyle>(raw.clone()) {
                Ok(style) => Some(style),
                Err(_) => {
                    return Err(Fault::Skip(format!(
                        "parameter `{wire}` has style {}, which is not sent here",
                        raw.to_string().chars().take(40).collect::<String>()
                    )));
                }
            },
        };
        Ok((style, p.get("explode").and_then(Value::as_bool)))
    }

    /// A parameter's schema, with the parameter's description, deprecation and examples on it.
    fn parameter_schema(&mut self, p: &Map<String, Value>, at: &str) -> Result<Converted, Fault> {
        let mut converted = if self.version == Version::Swagger2 {
            self.schemas.convert(&swagger_schema(p), at)?
        } else if let Some(schema) = p.get("schema") {
            self.schemas.convert(schema, &child(at, "schema"))?
        } else if let Some(Value::Object(content)) = p.get("content")
            && let Some((media, m)) = content.iter().next()
            && let Some(schema) = m.get("schema")
        {
            self.schemas.convert(schema, &child(&child(&child(at, "content"), media), "schema"))?
        } else {
            Converted { value: json!({}), refs: Vec::new(), nodes: 1 }
        };
        if converted.value == Value::Bool(true) {
            converted.value = json!({});
        }
        if let Value::Object(schema) = &mut converted.value {
            if let Some(about) = text(p, "description") {
                schema.insert("description".into(), Value::String(about.to_owned()));
            }
            if p.get("deprecated") == Some(&Value::Bool(true)) {
                schema.insert("deprecated".into(), Value::Bool(true));
            }
            if !schema.contains_key("examples") {
                let mut examples: Vec<Value> = p.get("example").into_iter().cloned().collect();
                if let Some(Value::Object(named)) = p.get("examples") {
                    examples.extend(named.values().filter_map(|e| e.get("value")).take(5).cloned());
                }
                if !examples.is_empty() {
                    schema.insert("examples".into(), Value::Array(examples));
                }
            }
        }
        Ok(converted)
    }

    /// 3.x's `requestBody`.
    fn request_body(&mut self, f: &Found<'a>, input: &mut Input) -> Result<Option<HttpBody>, Fault> {
        let Some(raw) = f.op.get("requestBody") else { return Ok(None) };
        let (body, at) = self.refs.follow(raw, &child(&f.at, "requestBody"))?;
        let Value::Object(body) = body else {
            return Err(Fault::Skip(format!("the request body at `{at}` is {}", json_kind(body))));
        };
        let Some(Value::Object(content)) = body.get("content") else { return Ok(None) };
        let Some(media) = choose_media(content.keys().map(String::as_str)) else { return Ok(None) };
        let required = body.get("required") == Some(&Value::Bool(true));
        let empty = json!({});
        let schema = content[media].get("schema").unwrap_or(&empty);
        let at = child(&child(&child(&at, "content"), media), "schema");
        self.body(media.to_owned(), schema, &at, required, text(body, "description"), input)
    }

    /// 2.0's `in: body` parameter, or its `formData` parameters as the fields of a form.
    fn swagger_body(
        &mut self,
        f: &Found<'a>,
        body: Option<(&Map<String, Value>, String)>,
        form: Vec<(&Map<String, Value>, String)>,
        input: &mut Input,
    ) -> Result<Option<HttpBody>, Fault> {
        let consumes = match f.op.get("consumes") {
            Some(listed) => media_list(Some(listed)),
            None => self.consumes.clone(),
        };
        if let Some((p, at)) = body {
            let media = choose_media(consumes.iter().map(String::as_str)).unwrap_or("application/json");
            let empty = json!({});
            let schema = p.get("schema").unwrap_or(&empty);
            let required = p.get("required") == Some(&Value::Bool(true));
            return self.body(
                media.to_owned(),
                schema,
                &child(&at, "schema"),
                required,
                text(p, "description"),
                input,
            );
        }
        if form.is_empty() {
            return Ok(None);
        }
        let has = |media: &str| consumes.iter().any(|c| essence(c) == media);
        let file = form.iter().any(|(p, _)| text(p, "type") == Some("file"));
        let media = if file || has("multipart/form-data") && !has("application/x-www-form-urlencoded") {
            "multipart/form-data"
        } else {
            "application/x-www-form-urlencoded"
        };
        let mut fields = Vec::new();
        let mut any_required = false;
        for (p, at) in form {
            let wire = text(p, "name").unwrap_or_default().to_owned();
            let converted = self.parameter_schema(p, &at)?;
            let required = p.get("required") == Some(&Value::Bool(true));
            any_required |= required;
            let argument = input.claim(&wire, "body");
            input.add(&argument, converted, required);
            fields.push(BodyField { name: wire, argument });
        }
        Ok(Some(HttpBody {
            media_type: media.to_owned(),
            shape: BodyShape::Fields { fields },
            required: any_required,
        }))
    }

    /// A body of `media`: an object's properties as input fields, anything else whole in `body`.
    fn body(
        &mut self,
        media: String,
        schema: &Value,
        at: &str,
        required: bool,
        about: Option<&str>,
        input: &mut Input,
    ) -> Result<Option<HttpBody>, Fault> {
        if let Some(properties) = self.object_properties(schema, at)? {
            let mut fields = Vec::with_capacity(properties.len());
            for (name, schema, at, property_required) in properties {
                let converted = self.schemas.convert(schema, &at)?;
                let argument = input.claim(&name, "body");
                input.add(&argument, converted, required && property_required);
                fields.push(BodyField { name, argument });
            }
            return Ok(Some(HttpBody { media_type: media, shape: BodyShape::Fields { fields }, required }));
        }
        let mut converted = self.schemas.convert(schema, at)?;
        if converted.value == Value::Bool(true) {
            converted.value = json!({});
        }
        if let (Value::Object(schema), Some(about)) = (&mut converted.value, about) {
            schema.entry("description").or_insert_with(|| Value::String(about.to_owned()));
        }
        let argument = input.claim("body", "body");
        input.add(&argument, converted, required);
        Ok(Some(HttpBody { media_type: media, shape: BodyShape::Whole { argument }, required }))
    }

    /// The properties of a body schema that is a plain object (through `$ref`s and an `allOf`
    /// of plain objects), without read-only ones; `None` for any other schema.
    fn object_properties<'v>(
        &self,
        schema: &'v Value,
        at: &str,
    ) -> Result<Option<Vec<BodyProperty<'v>>>, Fault>
    where
        'a: 'v,
    {
        let mut properties: Vec<BodyProperty<'v>> = Vec::new();
        let mut required: Vec<&str> = Vec::new();
        if !self.gather(schema, at, 0, &mut properties, &mut required)? || properties.is_empty() {
            return Ok(None);
        }
        let mut seen = HashSet::new();
        if !properties.iter().all(|(name, ..)| seen.insert(name.clone())) {
            return Ok(None);
        }
        for (name, _, _, is_required) in &mut properties {
            *is_required |= required.contains(&name.as_str());
        }
        properties.retain(|(_, schema, ..)| schema.get("readOnly") != Some(&Value::Bool(true)));
        Ok(Some(properties))
    }

    fn gather<'v>(
        &self,
        schema: &'v Value,
        at: &str,
        depth: usize,
        properties: &mut Vec<BodyProperty<'v>>,
        required: &mut Vec<&'v str>,
    ) -> Result<bool, Fault>
    where
        'a: 'v,
    {
        if depth > 8 {
            return Ok(false);
        }
        let (schema, at) = self.refs.follow(schema, at)?;
        let Value::Object(m) = schema else { return Ok(false) };
        if ["oneOf", "anyOf", "not", "if"].iter().any(|k| m.contains_key(*k)) {
            return Ok(false);
        }
        let object = match m.get("type") {
            None => true,
            Some(Value::String(t)) => t == "object",
            Some(Value::Array(ts)) => {
                ts.iter().any(|t| t == "object") && ts.iter().all(|t| t == "object" || t == "null")
            }
            Some(_) => false,
        };
        if !object {
            return Ok(false);
        }
        match m.get("properties") {
            None => {}
            Some(Value::Object(props)) => {
                for (name, schema) in props {
                    let flagged = schema.get("required") == Some(&Value::Bool(true));
                    properties.push((name.clone(), schema, child(&child(&at, "properties"), name), flagged));
                }
            }
            Some(_) => return Ok(false),
        }
        if let Some(Value::Array(names)) = m.get("required") {
            required.extend(names.iter().filter_map(Value::as_str));
        }
        match m.get("allOf") {
            None => {}
            Some(Value::Array(members)) => {
                for (i, member) in members.iter().enumerate() {
                    let here = child(&child(&at, "allOf"), &i.to_string());
                    if !self.gather(member, &here, depth + 1, properties, required)? {
                        return Ok(false);
                    }
                }
            }
            Some(_) => return Ok(false),
        }
        Ok(true)
    }

    fn input_schema(&mut self, input: Input) -> Result<Value, Fault> {
        let defs = self.schemas.defs(&input.refs)?;
        let nodes = input.nodes + defs.nodes;
        if nodes > MAX_TOOL_NODES {
            return Err(Fault::Skip(format!(
                "its input schema holds {nodes} schema objects, more than the {MAX_TOOL_NODES} read"
            )));
        }
        let mut schema = Map::new();
        schema.insert("type".into(), "object".into());
        schema.insert("properties".into(), Value::Object(input.properties));
        if !input.required.is_empty() {
            schema.insert("required".into(), input.required.into());
        }
        schema.insert("additionalProperties".into(), false.into());
        if !defs.map.is_empty() {
            schema.insert("$defs".into(), Value::Object(defs.map));
        }
        Ok(Value::Object(schema))
    }

    /// `{ status, headers, body }`, `body` the first successful response's schema (any value
    /// when there is none).
    fn output_schema(&mut self, f: &Found<'a>, notes: &mut Vec<String>) -> Result<Value, Fault> {
        let mut body = match self.response_schema(f)? {
            Some((schema, at)) => self.schemas.convert(schema, &at)?,
            None => Converted { value: json!({}), refs: Vec::new(), nodes: 0 },
        };
        let mut defs = self.schemas.defs(&body.refs)?;
        let nodes = body.nodes + defs.nodes;
        if nodes > MAX_TOOL_NODES {
            notes.push(format!(
                "its response schema holds {nodes} schema objects, more than the {MAX_TOOL_NODES} read; its body is left untyped"
            ));
            body.value = json!({});
            defs.map.clear();
        }
        if body.value == Value::Bool(true) {
            body.value = json!({});
        }
        let mut schema = json!({
            "type": "object",
            "properties": {
                "status": { "type": "integer" },
                "headers": { "type": "object", "additionalProperties": { "type": "string" } },
                "body": body.value,
            },
            "required": ["status", "headers", "body"],
        });
        if !defs.map.is_empty() {
            schema["$defs"] = Value::Object(defs.map);
        }
        Ok(schema)
    }

    /// The schema of the first 2xx response that has one (200, 201, …, then `2XX`), or of
    /// `default` when the operation lists no 2xx response at all.
    fn response_schema(&self, f: &Found<'a>) -> Result<Option<(&'a Value, String)>, Fault> {
        let Some(Value::Object(responses)) = f.op.get("responses") else { return Ok(None) };
        let mut codes: Vec<(u16, &str)> = responses
            .keys()
            .filter_map(|k| {
                k.trim().parse::<u16>().ok().filter(|c| (200..300).contains(c)).map(|c| (c, k.as_str()))
            })
            .collect();
        codes.sort_unstable();
        let mut keys: Vec<&str> = codes.into_iter().map(|(_, k)| k).collect();
        keys.extend(responses.keys().map(String::as_str).filter(|k| k.trim().eq_ignore_ascii_case("2XX")));
        if keys.is_empty() && responses.contains_key("default") {
            keys.push("default");
        }
        for key in keys {
            let (response, at) =
                self.refs.follow(&responses[key], &child(&child(&f.at, "responses"), key))?;
            if self.version == Version::Swagger2 {
                if let Some(schema) = response.get("schema") {
                    return Ok(Some((schema, child(&at, "schema"))));
                }
                continue;
            }
            let Some(Value::Object(content)) = response.get("content") else { continue };
            let with_schema = || content.iter().filter(|(_, m)| m.get("schema").is_some());
            let chosen = with_schema().find(|(media, _)| is_json(media)).or_else(|| with_schema().next());
            if let Some((media, m)) = chosen {
                let at = child(&child(&child(&at, "content"), media), "schema");
                return Ok(m.get("schema").map(|s| (s, at)));
            }
        }
        Ok(None)
    }
}

/// A 2.0 parameter's schema, which the parameter holds itself.
fn swagger_schema(p: &Map<String, Value>) -> Value {
    const KEYS: &[&str] = &[
        "type",
        "format",
        "items",
        "enum",
        "default",
        "maximum",
        "exclusiveMaximum",
        "minimum",
        "exclusiveMinimum",
        "maxLength",
        "minLength",
        "pattern",
        "maxItems",
        "minItems",
        "uniqueItems",
        "multipleOf",
        "x-nullable",
    ];
    Value::Object(
        p.iter().filter(|(k, _)| KEYS.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect(),
    )
}

/// The operation's words: summary, description (capped), its tags (so search finds them), and
/// whether it is deprecated.
fn description(op: &Map<String, Value>) -> String {
    let mut parts: Vec<String> = Vec::new();
    let summary = text(op, "summary");
    if let Some(summary) = summary {
        parts.push(summary.to_owned());
    }
    if let Some(about) = text(op, "description")
        && Some(about) != summary
    {
        parts.push(cap(about, MAX_DESCRIPTION_CHARS));
    }
    if let Some(Value::Array(tags)) = op.get("tags") {
        let tags: Vec<&str> =
            tags.iter().filter_map(Value::as_str).map(str::trim).filter(|t| !t.is_empty()).collect();
        if !tags.is_empty() {
            parts.push(format!("Tags: {}", tags.join(", ")));
        }
    }
    if op.get("deprecated") == Some(&Value::Bool(true)) {
        parts.push("Deprecated.".to_owned());
    }
    parts.join("\n\n")
}

/// At most `max` characters, cut at a space when one is near, with `…`.
fn cap(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let cut: String = text.chars().take(max - 1).collect();
    let at = cut.rfind(char::is_whitespace).filter(|i| *i > cut.len() * 4 / 5).unwrap_or(cut.len());
    format!("{}…", cut[..at].trim_end())
}

/// A field's text, trimmed, when it is a non-empty string.
fn text<'v>(m: &'v Map<String, Value>, key: &str) -> Option<&'v str> {
    m.get(key).and_then(Value::as_str).map(str::trim).filter(|s| !s.is_empty())
}

fn location_word(location: ParameterLocation) -> &'static str {
    match location {
        ParameterLocation::Path => "path",
        ParameterLocation::Query => "query",
        ParameterLocation::Header => "header",
        ParameterLocation::Cookie => "cookie",
    }
}

/// The `{name}`s of a path template, in order, each once.
fn template_names(path: &str) -> Vec<String> {
    let mut names: Vec<String> = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}') else { break };
        let name = &rest[open + 1..open + close];
        if !name.is_empty() && !names.iter().any(|n| n == name) {
            names.push(name.to_owned());
        }
        rest = &rest[open + close + 1..];
    }
    names
}

/// A media type without its parameters, lowercase: `Application/JSON; charset=utf-8` →
/// `application/json`.
fn essence(media: &str) -> String {
    media.split(';').next().unwrap_or("").trim().to_ascii_lowercase()
}

fn is_json(media: &str) -> bool {
    let essence = essence(media);
    essence == "application/json" || essence.ends_with("+json") || essence.ends_with("/json")
}

/// The media type a body is sent as: JSON first, then a URL-encoded form, then multipart, else
/// the first listed.
fn choose_media<'m>(listed: impl Iterator<Item = &'m str> + Clone) -> Option<&'m str> {
    let mut all = listed.clone();
    all.clone()
        .find(|m| is_json(m))
        .or_else(|| all.clone().find(|m| essence(m) == "application/x-www-form-urlencoded"))
        .or_else(|| all.clone().find(|m| essence(m) == "multipart/form-data"))
        .or_else(|| all.next())
}

fn media_list(value: Option<&Value>) -> Vec<String> {
    match value {
        Some(Value::Array(listed)) => listed.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        _ => Vec::new(),
    }
}

//! The converter: one walk over a schema that fills an [`Arena`], following local `$ref`s once
//! each and stopping at the caps below.

use std::collections::HashMap;

use serde_json::{Map, Value};

use super::words::{MAX_HINT, Words, clip, doc_of, json_kind, local_pointer, pascal, quote_for_note};
use super::{Arena, Def, Doc, Kind, Node, NodeId, Object, Prim, Prop, Side};
use crate::canonical;

/// Deepest schema nesting followed; deeper parts become `unknown` with a note.
const MAX_DEPTH: usize = 48;
/// Nodes one tool's schemas may produce.
const MAX_NODES: usize = 4_000;
/// Distinct `$ref` targets one schema may use.
const MAX_DEFS: usize = 256;
/// Properties kept per object, tuple items kept per tuple.
const MAX_MEMBERS: usize = 500;
/// Literal values kept per `enum`; the count of all of them is kept beside.
const MAX_LITERALS: usize = 256;
/// A literal longer than this is shown as its base type.
const MAX_LITERAL_LEN: usize = 160;
pub(super) struct Converter<'a> {
    arena: &'a mut Arena,
    root: &'a Value,
    side: Side,
    /// JSON pointer → definition index, for this root.
    pointers: HashMap<String, usize>,
}

impl<'a> Converter<'a> {
    pub(super) fn new(arena: &'a mut Arena, root: &'a Value, side: Side) -> Self {
        Converter { arena, root, side, pointers: HashMap::new() }
    }

    fn push(&mut self, kind: Kind) -> NodeId {
        self.arena.nodes.push(Node { kind, doc: Doc::default(), title: None, canon: None });
        self.arena.nodes.len() - 1
    }

    fn opaque(&mut self, note: impl Into<String>) -> NodeId {
        self.push(Kind::Opaque(note.into()))
    }

    fn full(&self) -> bool {
        self.arena.nodes.len() >= MAX_NODES
    }

    pub(super) fn convert(&mut self, v: &Value, depth: usize) -> NodeId {
        if depth > MAX_DEPTH {
            return self.opaque(format!("nested deeper than {MAX_DEPTH} levels"));
        }
        if self.full() {
            return self.opaque("schema too large");
        }
        match v {
            Value::Bool(true) => self.push(Kind::Unknown),
            Value::Bool(false) => self.push(Kind::Never),
            Value::Object(m) => self.schema(m, depth),
            other => self.opaque(format!("not a schema: {}", json_kind(other))),
        }
    }

    fn schema(&mut self, raw: &Map<String, Value>, depth: usize) -> NodeId {
        let m = &Words::new(raw);
        let mut parts = Vec::new();
        let reference = ["$ref", "$recursiveRef", "$dynamicRef"].iter().find_map(|k| m.get(k));
        match reference {
            Some(Value::String(r)) => parts.push(self.reference(r, depth)),
            Some(other) => parts.push(self.opaque(format!("$ref is {}", json_kind(other)))),
            None => {}
        }
        if let Some(c) = m.get("const") {
            parts.push(self.literals(std::slice::from_ref(c)));
        } else if let Some(e) = m.get("enum") {
            match e {
                Value::Array(values) => parts.push(self.literals(values)),
                other => parts.push(self.opaque(format!("enum is {}, not a list", json_kind(other)))),
            }
        } else if let Some(base) = self.typed(m, depth) {
            parts.push(base);
        }
        for key in ["anyOf", "oneOf"] {
            match m.get(key) {
                Some(Value::Array(variants)) => {
                    let members: Vec<NodeId> =
                        variants.iter().take(MAX_MEMBERS).map(|v| self.convert(v, depth + 1)).collect();
                    parts.push(self.union(members));
                }
                Some(other) => parts.push(self.opaque(format!("{key} is {}, not a list", json_kind(other)))),
                None => {}
            }
        }
        match m.get("allOf") {
            Some(Value::Array(members)) => {
                for member in members.iter().take(MAX_MEMBERS) {
                    let id = self.convert(member, depth + 1);
                    parts.push(id);
                }
            }
            Some(other) => parts.push(self.opaque(format!("allOf is {}, not a list", json_kind(other)))),
            None => {}
        }
        let mut id = self.intersection(parts);
        if m.get("nullable") == Some(&Value::Bool(true)) {
            let null = self.push(Kind::Prim(Prim::Null));
            id = self.union(vec![id, null]);
        }
        // This schema's words win over those of a part it stands for (`allOf: [{$ref}]`).
        let doc = doc_of(m);
        let title = m.get("title").and_then(Value::as_str).map(pascal).filter(|t| !t.is_empty());
        let is_object = matches!(self.arena.nodes[id].kind, Kind::Object(_));
        let node = &mut self.arena.nodes[id];
        if doc.description.is_some() {
            node.doc.description = doc.description;
        }
        for tag in doc.tags {
            if !node.doc.tags.contains(&tag) {
                node.doc.tags.push(tag);
            }
        }
        if title.is_some() {
            node.title = title;
            node.canon = is_object.then(|| canonical::to_string(&Value::Object(raw.clone())));
        }
        id
    }

    /// The part of a schema that `type` (given or implied by other keywords) describes.
    fn typed(&mut self, m: &Words<'_>, depth: usize) -> Option<NodeId> {
        let names: Vec<&str> = match m.get("type") {
            Some(Value::String(t)) => vec![t.as_str()],
            Some(Value::Array(ts)) => {
                if ts.is_empty() || ts.iter().any(|t| !t.is_string()) {
                    return Some(self.opaque("type is not a list of type names"));
                }
                ts.iter().filter_map(Value::as_str).take(8).collect()
            }
            Some(other) => return Some(self.opaque(format!("type is {}", json_kind(other)))),
            None => {
                let object_words =
                    ["properties", "additionalProperties", "patternProperties", "propertyNames", "required"];
                if object_words
                    .iter()
                    .any(|k| m.get(k).is_some_and(|v| !(*k == "required" && v.is_boolean())))
                {
                    vec!["object"]
                } else if m.has("items") || m.has("prefixItems") {
                    vec!["array"]
                } else {
                    return None;
                }
            }
        };
        let mut members = Vec::new();
        for name in names {
            let id = match name {
                "string" => self.push(Kind::Prim(Prim::String)),
                "number" | "integer" => self.push(Kind::Prim(Prim::Number)),
                "boolean" => self.push(Kind::Prim(Prim::Boolean)),
                "null" => self.push(Kind::Prim(Prim::Null)),
                "object" => self.object(m, depth),
                "array" => self.array(m, depth),
                other => self.opaque(format!("unknown type {}", quote_for_note(other))),
            };
            members.push(id);
        }
        Some(self.union(members))
    }

    fn object(&mut self, m: &Words<'_>, depth: usize) -> NodeId {
        let required: Vec<&str> = match m.get("required") {
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            _ => Vec::new(),
        };
        let mut object = Object::default();
        let mut optional = Vec::new();
        let properties = m.get("properties").and_then(Value::as_object);
        if let Some(properties) = properties {
            for (i, (name, schema)) in properties.iter().enumerate() {
                if i >= MAX_MEMBERS || self.full() {
                    object.dropped = properties.len() - i;
                    break;
                }
                let node = self.convert(schema, depth + 1);
                let is_required =
                    required.contains(&name.as_str()) || schema.get("required") == Some(&Value::Bool(true));
                let prop = Prop { name: name.clone(), required: is_required, node };
                if is_required { object.props.push(prop) } else { optional.push(prop) }
            }
        }
        // Names required but never described are still required.
        for name in required.iter().take(MAX_MEMBERS) {
            if object.dropped == 0
                && !properties.is_some_and(|p| p.contains_key(*name))
                && !object.props.iter().any(|p| p.name == *name)
            {
                let node = self.push(Kind::Unknown);
                object.props.push(Prop { name: (*name).to_owned(), required: true, node });
            }
        }
        object.props.extend(optional);

        let mut index_members = Vec::new();
        let mut hints = Vec::new();
        let additional = m.get("additionalProperties").or_else(|| m.get("unevaluatedProperties"));
        match additional {
            Some(Value::Bool(false)) => {}
            Some(Value::Bool(true)) => index_members.push(self.push(Kind::Unknown)),
            Some(schema) => index_members.push(self.convert(schema, depth + 1)),
            None if properties.is_none() && !m.has("patternProperties") => {
                index_members.push(self.push(Kind::Unknown));
            }
            None => {}
        }
        if let Some(patterns) = m.get("patternProperties").and_then(Value::as_object) {
            for (pattern, schema) in patterns.iter().take(16) {
                index_members.push(self.convert(schema, depth + 1));
                hints.push(format!("keys matching {}", clip(pattern, MAX_HINT)));
            }
            // With patterns and no schema for the rest, the rest may still be anything.
            if additional.is_none() {
                index_members.push(self.push(Kind::Unknown));
            }
        }
        if let Some(Value::Object(names)) = m.get("propertyNames") {
            if let Some(Value::Array(values)) = names.get("enum") {
                let listed: Vec<String> =
                    values.iter().take(10).map(|v| clip(&canonical::to_string(v), MAX_HINT)).collect();
                hints.push(format!("keys: {}", listed.join(", ")));
            }
            if let Some(pattern) = names.get("pattern").and_then(Value::as_str) {
                hints.push(format!("keys matching {}", clip(pattern, MAX_HINT)));
            }
            if let Some(format) = names.get("format").and_then(Value::as_str) {
                hints.push(format!("keys in format {}", clip(format, MAX_HINT)));
            }
        }
        if !index_members.is_empty() {
            object.index = Some(self.union(index_members));
            if !hints.is_empty() {
                object.key_hint = Some(hints.join("; "));
            }
        }
        self.push(Kind::Object(object))
    }

    fn array(&mut self, m: &Words<'_>, depth: usize) -> NodeId {
        let (prefix, rest) = match (m.get("prefixItems"), m.get("items")) {
            (Some(Value::Array(prefix)), rest) => (prefix, rest),
            (_, Some(Value::Array(items))) => (items, m.get("additionalItems")),
            (_, Some(items)) => {
                let item = self.convert(items, depth + 1);
                return self.push(Kind::Array(item));
            }
            (_, None) => {
                let item = self.push(Kind::Unknown);
                return self.push(Kind::Array(item));
            }
        };
        let mut items = Vec::new();
        for item in prefix.iter().take(MAX_MEMBERS) {
            items.push(self.convert(item, depth + 1));
        }
        let rest = match rest {
            None | Some(Value::Bool(false)) => None,
            Some(schema) => Some(self.convert(schema, depth + 1)),
        };
        self.push(Kind::Tuple { items, rest })
    }

    fn reference(&mut self, r: &str, depth: usize) -> NodeId {
        let Some(pointer) = local_pointer(r) else {
            return self.opaque(format!("unresolved $ref {}", quote_for_note(r)));
        };
        if let Some(&d) = self.pointers.get(&pointer) {
            return self.push(Kind::Ref(d));
        }
        if self.arena.defs.len() >= MAX_DEFS {
            return self.opaque("too many $ref targets");
        }
        let Some(target) = self.root.pointer(&pointer) else {
            return self.opaque(format!("$ref {} points nowhere", quote_for_note(r)));
        };
        let key = pointer.rsplit('/').next().unwrap_or("").replace("~1", "/").replace("~0", "~");
        let d = self.arena.defs.len();
        self.arena.defs.push(Def {
            key: pascal(&key),
            node: NodeId::MAX,
            recursive: false,
            side: self.side,
            canon: canonical::to_string(target),
        });
        self.pointers.insert(pointer, d);
        let placeholder = self.push(Kind::Ref(d));
        let node = self.convert(target, depth + 1);
        self.arena.defs[d].node = node;
        placeholder
    }

    fn literals(&mut self, values: &[Value]) -> NodeId {
        let mut texts: Vec<String> = Vec::new();
        let mut bases: Vec<&'static str> = Vec::new();
        let mut long = false;
        for v in values.iter().take(MAX_LITERALS) {
            let text = canonical::to_string(v);
            if text.len() > MAX_LITERAL_LEN {
                long = true;
            } else if !texts.contains(&text) {
                texts.push(text);
            }
            let base = match v {
                Value::Null => "null",
                Value::Bool(_) => "boolean",
                Value::Number(_) => "number",
                Value::String(_) => "string",
                Value::Array(_) => "unknown[]",
                Value::Object(_) => "object",
            };
            if !bases.contains(&base) {
                bases.push(base);
            }
        }
        if values.is_empty() {
            return self.push(Kind::Never);
        }
        self.push(Kind::Literals { texts, bases, total: values.len(), long })
    }

    /// `A | B`, flattened: `unknown` absorbs everything, `never` drops out, repeats go.
    fn union(&mut self, members: Vec<NodeId>) -> NodeId {
        let mut flat: Vec<NodeId> = Vec::new();
        for id in members {
            let node = &self.arena.nodes[id];
            match &node.kind {
                Kind::Union(inner) if node.doc.is_empty() && node.title.is_none() => {
                    flat.extend(inner.iter().copied())
                }
                Kind::Unknown | Kind::Opaque(_) => return id,
                Kind::Never => {}
                Kind::Prim(p) => {
                    let p = *p;
                    if !flat.iter().any(|f| matches!(self.arena.nodes[*f].kind, Kind::Prim(q) if q == p)) {
                        flat.push(id);
                    }
                }
                _ => flat.push(id),
            }
        }
        match flat.len() {
            0 => self.push(Kind::Never),
            1 => flat[0],
            _ => self.push(Kind::Union(flat)),
        }
    }

    /// `A & B` of the parts a schema combines; open parts that add nothing drop out, and plain
    /// objects with distinct properties merge into one.
    fn intersection(&mut self, parts: Vec<NodeId>) -> NodeId {
        let mut kept: Vec<NodeId> = parts
            .iter()
            .copied()
            .filter(|id| !matches!(self.arena.kind(*id), Kind::Unknown | Kind::Opaque(_)))
            .collect();
        if kept.iter().any(|id| matches!(self.arena.kind(*id), Kind::Never)) {
            return self.push(Kind::Never);
        }
        if kept.len() > 1 {
            let any_object = |k: &Kind, arena: &Arena| match k {
                Kind::Object(o) => {
                    o.props.is_empty() && o.index.is_some_and(|i| matches!(arena.kind(i), Kind::Unknown))
                }
                _ => false,
            };
            let has_literals = kept.iter().any(|id| matches!(self.arena.kind(*id), Kind::Literals { .. }));
            let arena = &*self.arena;
            let narrowed: Vec<NodeId> = kept
                .iter()
                .copied()
                .filter(|id| {
                    let k = arena.kind(*id);
                    !(any_object(k, arena) || has_literals && matches!(k, Kind::Prim(_)))
                })
                .collect();
            if !narrowed.is_empty() {
                kept = narrowed;
            }
        }
        if kept.len() > 1
            && let Some(merged) = self.merge_objects(&kept)
        {
            return merged;
        }
        match kept.len() {
            0 => {
                // Only unknowns: keep a note if one said why.
                parts
                    .iter()
                    .copied()
                    .find(|id| matches!(self.arena.kind(*id), Kind::Opaque(_)))
                    .unwrap_or_else(|| self.push(Kind::Unknown))
            }
            1 => kept[0],
            _ => self.push(Kind::Intersection(kept)),
        }
    }

    fn merge_objects(&mut self, parts: &[NodeId]) -> Option<NodeId> {
        let mut merged = Object::default();
        let mut optional = Vec::new();
        for id in parts {
            let node = &self.arena.nodes[*id];
            let Kind::Object(o) = &node.kind else { return None };
            if node.title.is_some() {
                return None;
            }
            for p in &o.props {
                if merged.props.iter().chain(&optional).any(|q: &Prop| q.name == p.name) {
                    return None;
                }
                if p.required { merged.props.push(p.clone()) } else { optional.push(p.clone()) }
            }
            if o.index.is_some() {
                if merged.index.is_some() {
                    return None;
                }
                merged.index = o.index;
                merged.key_hint.clone_from(&o.key_hint);
            }
            merged.dropped += o.dropped;
        }
        merged.props.extend(optional);
        Some(self.push(Kind::Object(merged)))
    }
}

//! JSON Schema → a small type tree (an arena of [`Node`]s) that the renderers print as TypeScript.
//!
//! Schemas come from upstream servers and are untrusted, so conversion ([`convert`]) is total:
//! anything it does not understand becomes `unknown` with a note, and depth, size, definitions
//! and literal lists are all capped. It reads draft-07 and 2020-12 as servers write them, plus
//! OpenAPI's `nullable`.

mod convert;
mod words;

use serde_json::Value;

pub(crate) use words::pascal;

pub(crate) type NodeId = usize;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Prim {
    String,
    Number,
    Boolean,
    Null,
}

impl Prim {
    pub(crate) fn ts(self) -> &'static str {
        match self {
            Prim::String => "string",
            Prim::Number => "number",
            Prim::Boolean => "boolean",
            Prim::Null => "null",
        }
    }
}

#[derive(Debug, Clone)]
pub(crate) enum Kind {
    Unknown,
    Never,
    /// Not understood: printed as `unknown` with this note.
    Opaque(String),
    Prim(Prim),
    /// `enum` / `const`: the TypeScript text of each kept value, the base types they belong to,
    /// how many values the schema listed, and whether one was too long to print.
    Literals {
        texts: Vec<String>,
        bases: Vec<&'static str>,
        total: usize,
        long: bool,
    },
    Array(NodeId),
    Tuple {
        items: Vec<NodeId>,
        rest: Option<NodeId>,
    },
    Object(Object),
    Union(Vec<NodeId>),
    Intersection(Vec<NodeId>),
    /// A `$ref`, by index into [`Arena::defs`].
    Ref(usize),
}

#[derive(Debug, Clone, Default)]
pub(crate) struct Object {
    /// Required properties first, then optional ones, each group in schema order.
    pub props: Vec<Prop>,
    /// The type of every other key (`additionalProperties`, `patternProperties`).
    pub index: Option<NodeId>,
    /// What other keys look like, in words (`propertyNames`, patterns).
    pub key_hint: Option<String>,
    /// Properties left out because the object had too many.
    pub dropped: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct Prop {
    pub name: String,
    pub required: bool,
    pub node: NodeId,
}

/// What a schema says in words: its description and hints such as `@default 10`.
#[derive(Debug, Clone, Default)]
pub(crate) struct Doc {
    pub description: Option<String>,
    pub tags: Vec<String>,
}

impl Doc {
    pub(crate) fn is_empty(&self) -> bool {
        self.description.is_none() && self.tags.is_empty()
    }
}

#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub kind: Kind,
    pub doc: Doc,
    /// A name the schema gives itself (`title`), as a TypeScript identifier.
    pub title: Option<String>,
    /// Canonical JSON of the schema, kept only for titled objects, to tell same-named types apart.
    pub canon: Option<String>,
}

/// The target of one `$ref`.
#[derive(Debug, Clone)]
pub(crate) struct Def {
    /// The name the reference gives it (`#/$defs/issue_state` → `IssueState`); empty for `#`.
    pub key: String,
    pub node: NodeId,
    /// Whether the type reaches itself, so it must be printed by name.
    pub recursive: bool,
    /// Which schema of the tool it belongs to.
    pub side: Side,
    pub canon: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Side {
    Input,
    Output,
}

/// Every node of one tool's schemas.
#[derive(Debug, Clone, Default)]
pub(crate) struct Arena {
    pub nodes: Vec<Node>,
    pub defs: Vec<Def>,
}

impl Arena {
    pub(crate) fn kind(&self, id: NodeId) -> &Kind {
        &self.nodes[id].kind
    }

    /// Follows references to the node that holds the type; stops on a cycle.
    pub(crate) fn resolve(&self, mut id: NodeId) -> NodeId {
        for _ in 0..16 {
            match self.nodes[id].kind {
                Kind::Ref(d) => id = self.defs[d].node,
                _ => return id,
            }
        }
        id
    }

    /// Converts one schema of a tool; its `$ref`s resolve against `root` itself.
    pub(crate) fn convert(&mut self, root: &Value, side: Side) -> NodeId {
        let first_def = self.defs.len();
        let id = convert::Converter::new(self, root, side).convert(root, 0);
        self.mark_recursive(first_def);
        id
    }

    fn mark_recursive(&mut self, from: usize) {
        // A definition that is only a reference to itself, directly or round a loop, is no type.
        for d in from..self.defs.len() {
            let mut id = self.defs[d].node;
            let mut steps = 0;
            while let Kind::Ref(next) = self.nodes[id].kind {
                if steps > self.defs.len() {
                    self.nodes[self.defs[d].node].kind = Kind::Opaque("circular $ref".to_owned());
                    break;
                }
                id = self.defs[next].node;
                steps += 1;
            }
        }
        for d in from..self.defs.len() {
            let recursive = self.reaches_def(self.defs[d].node, d);
            self.defs[d].recursive = recursive;
        }
    }

    /// Whether the type at `start` refers to definition `target`, directly or through others.
    fn reaches_def(&self, start: NodeId, target: usize) -> bool {
        let mut seen_defs = vec![false; self.defs.len()];
        let mut stack = vec![start];
        while let Some(id) = stack.pop() {
            match &self.nodes[id].kind {
                Kind::Ref(d) => {
                    if *d == target {
                        return true;
                    }
                    if !seen_defs[*d] {
                        seen_defs[*d] = true;
                        stack.push(self.defs[*d].node);
                    }
                }
                other => stack.extend(children(other)),
            }
        }
        false
    }
}

/// The nodes directly inside a kind (references are not followed).
pub(crate) fn children(kind: &Kind) -> Vec<NodeId> {
    match kind {
        Kind::Array(i) => vec![*i],
        Kind::Tuple { items, rest } => items.iter().copied().chain(*rest).collect(),
        Kind::Object(o) => o.props.iter().map(|p| p.node).chain(o.index).collect(),
        Kind::Union(ms) | Kind::Intersection(ms) => ms.clone(),
        _ => Vec::new(),
    }
}

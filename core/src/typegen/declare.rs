//! The pieces a `describe` answer is made of: each tool as a method of its namespace's constant,
//! and each named type as an `interface` (or `type`) of the namespace, at a level of [`Detail`].

use std::cell::OnceCell;

use crate::manifest::Manifest;

use super::names::{NameMap, Names, ToolTypes, TypeRef, may_claim, name_namespace, prefixes_overlap};
use super::render::{DocMode, Renderer, Style, comment_safe, jsdoc, tabs};
use super::schema::{Doc, Kind, NodeId};

/// How much a declaration shows: objects nested deeper than `cap` print by name, and `docs`
/// says how much of the schemas' words to keep.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Detail {
    pub cap: usize,
    pub docs: DocMode,
}

/// The levels `describe` tries, most wanted first, until its answer fits: first deeper objects
/// print by name, then words get shorter, then go; the last level also leaves out tools.
pub const DETAILS: &[Detail] = &[
    Detail { cap: usize::MAX, docs: DocMode::Full },
    Detail { cap: 2, docs: DocMode::Full },
    Detail { cap: usize::MAX, docs: DocMode::Short },
    Detail { cap: 2, docs: DocMode::Short },
    Detail { cap: 1, docs: DocMode::Short },
    Detail { cap: 0, docs: DocMode::Short },
    Detail { cap: usize::MAX, docs: DocMode::Off },
    Detail { cap: 1, docs: DocMode::Off },
    Detail { cap: 0, docs: DocMode::Off },
];

/// One piece of declaration text and the named types it mentions.
#[derive(Debug, Clone, Default)]
pub(crate) struct Piece {
    pub text: String,
    /// Types referred to by name whose declarations belong in the same answer.
    pub declare: Vec<(String, TypeRef)>,
    /// Names printed whose declarations are left for a later `describe`.
    pub hoisted: Vec<String>,
}

/// Every tool of one namespace, its types converted when first needed. Names are settled per
/// tool when no schema could make two tools' names meet, else for the whole namespace at once.
#[derive(Debug)]
pub(crate) struct NamespaceTypes<'c> {
    pub namespace: &'c str,
    manifest: &'c Manifest,
    tools: Vec<OnceCell<ToolTypes<'c>>>,
    local: Vec<OnceCell<NameMap>>,
    per_tool: OnceCell<bool>,
    names: OnceCell<Names>,
}

impl<'c> NamespaceTypes<'c> {
    pub(crate) fn new(manifest: &'c Manifest) -> Self {
        NamespaceTypes {
            namespace: manifest.namespace.as_str(),
            manifest,
            tools: manifest.tools.iter().map(|_| OnceCell::new()).collect(),
            local: manifest.tools.iter().map(|_| OnceCell::new()).collect(),
            per_tool: OnceCell::new(),
            names: OnceCell::new(),
        }
    }

    fn tool(&self, index: usize) -> &ToolTypes<'c> {
        self.tools[index].get_or_init(|| ToolTypes::new(&self.manifest.tools[index]))
    }

    /// The names of every type of the namespace.
    fn names(&self) -> &Names {
        self.names.get_or_init(|| {
            let all: Vec<&ToolTypes<'c>> = (0..self.tools.len()).map(|t| self.tool(t)).collect();
            name_namespace(&all)
        })
    }

    /// Whether each tool's names can be settled by that tool alone (they come out the same).
    fn per_tool(&self) -> bool {
        *self.per_tool.get_or_init(|| {
            let tools = &self.manifest.tools;
            !prefixes_overlap(tools.iter().map(|t| t.ident.as_str()))
                && !tools.iter().any(|t| {
                    may_claim(&t.record.input_schema)
                        || t.record.output_schema.as_ref().is_some_and(may_claim)
                })
        })
    }

    /// The identifier of tool `index` in code.
    pub(crate) fn ident(&self, index: usize) -> &'c str {
        &self.manifest.tools[index].ident
    }

    /// The tool with this identifier, or failing that this upstream name.
    pub(crate) fn tool_index(&self, name: &str) -> Option<usize> {
        let tools = &self.manifest.tools;
        tools
            .iter()
            .position(|t| t.ident == name)
            .or_else(|| tools.iter().position(|t| t.record.name == name))
    }

    /// The type with this name, held by a tool `visible` accepts.
    pub(crate) fn find_type(&self, name: &str, visible: impl Fn(usize) -> bool) -> Option<TypeRef> {
        self.names().by_name.get(name)?.iter().copied().find(|(t, _)| visible(*t))
    }

    /// Names of the types that tools `visible` accepts hold, in order.
    pub(crate) fn type_names(&self, visible: impl Fn(usize) -> bool) -> Vec<&str> {
        self.names()
            .by_name
            .iter()
            .filter(|(_, owners)| owners.iter().any(|(t, _)| visible(*t)))
            .map(|(n, _)| n.as_str())
            .collect()
    }

    pub(crate) fn type_name(&self, (t, node): TypeRef) -> &str {
        let names = if self.per_tool() {
            self.local[t].get_or_init(|| name_namespace(&[self.tool(t)]).per_tool.pop().unwrap_or_default())
        } else {
            &self.names().per_tool[t]
        };
        names.get(&node).map_or("Unnamed", String::as_str)
    }

    fn style(&self, detail: Detail) -> Style<'c> {
        Style {
            multiline: true,
            docs: detail.docs,
            cap: detail.cap,
            namespace: Some(self.namespace),
            max_literals: 64,
        }
    }

    /// Tool `index` as a method: JSDoc, `input`, `options?: CallOptions`, the promised result.
    pub(crate) fn method(&self, index: usize, detail: Detail) -> Piece {
        let tt = self.tool(index);
        let names = |id: NodeId| self.type_name((index, id));
        let mut r = Renderer::new(tt, &names, self.style(detail));
        let mut text = String::new();
        let description = tt.tool.record.description.trim();
        jsdoc(&Doc::default(), Some(description).filter(|d| !d.is_empty()), detail.docs, 1, &mut text);
        tabs(1, &mut text);
        text.push_str(&tt.tool.ident);
        text.push('(');
        let root = tt.arena.resolve(tt.input);
        match tt.arena.kind(root) {
            Kind::Object(o) => {
                text.push_str(if o.props.iter().any(|p| p.required) { "input: " } else { "input?: " });
                r.root(root, 0, 1, &mut text);
            }
            Kind::Union(_) | Kind::Intersection(_) => {
                text.push_str("input: ");
                r.root(root, 0, 1, &mut text);
            }
            Kind::Unknown => text.push_str("input?: { [key: string]: unknown }"),
            Kind::Opaque(note) => {
                text.push_str("input: unknown /* ");
                text.push_str(&comment_safe(note));
                text.push_str(" */");
            }
            _ => text.push_str("input: unknown /* the input schema is not an object */"),
        }
        text.push_str(", options?: CallOptions): Promise<");
        match tt.output {
            None => text.push_str("unknown"),
            Some(output) => {
                let root = tt.arena.resolve(output);
                if tt.has_own_name(root) {
                    r.named(root, detail.cap >= 1, &mut text);
                } else {
                    r.ty(output, 1, 1, &mut text);
                }
            }
        }
        text.push_str(">;\n");
        self.piece(index, text, r)
    }

    /// A named type as `interface Name {…}` (or `type Name = …;`), inside `declare namespace`.
    pub(crate) fn declaration(&self, (t, node): TypeRef, detail: Detail) -> Piece {
        let tt = self.tool(t);
        let names = |id: NodeId| self.type_name((t, id));
        let mut r = Renderer::new(tt, &names, self.style(detail));
        let mut text = String::new();
        let resolved = tt.arena.resolve(node);
        let doc = &tt.arena.nodes[resolved].doc;
        let doc = if doc.is_empty() { &tt.arena.nodes[node].doc } else { doc };
        jsdoc(doc, None, detail.docs, 1, &mut text);
        tabs(1, &mut text);
        let name = self.type_name((t, node));
        if matches!(tt.arena.kind(resolved), Kind::Object(_)) {
            text.push_str("interface ");
            text.push_str(name);
            text.push(' ');
            r.root(node, 1, 1, &mut text);
            text.push('\n');
        } else {
            text.push_str("type ");
            text.push_str(name);
            text.push_str(" = ");
            r.root(node, 1, 1, &mut text);
            text.push_str(";\n");
        }
        self.piece(t, text, r)
    }

    fn piece(&self, t: usize, text: String, r: Renderer<'_, '_>) -> Piece {
        let name = |id: &NodeId| self.type_name((t, *id)).to_owned();
        Piece {
            text,
            declare: r.declare.iter().map(|id| (name(id), (t, *id))).collect(),
            hoisted: r.hoisted.iter().map(name).collect(),
        }
    }
}

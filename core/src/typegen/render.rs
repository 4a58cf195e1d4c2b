//! Prints converted types as TypeScript: on one line for `search`, or tab-indented with JSDoc
//! for `describe`, showing objects inline down to a depth cap and by name below it.

use super::names::ToolTypes;
use super::schema::{Doc, Kind, NodeId, Object};

/// How much of the schemas' words to print.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DocMode {
    /// Descriptions in full, with hints such as `@default`.
    Full,
    /// First sentences, with `@default` and `@format` hints.
    Short,
    /// No words on fields; the first sentence of each tool's description.
    Off,
}

#[derive(Debug, Clone, Copy)]
pub(crate) struct Style<'s> {
    pub multiline: bool,
    pub docs: DocMode,
    /// Objects nested deeper than this (the input object is depth 0) are printed by name.
    pub cap: usize,
    /// `Some(ns)`: names print as `ns.Name`. `None` (one-line style): objects below the cap
    /// print as `{ … }` and named types by their bare name.
    pub namespace: Option<&'s str>,
    /// Longest `enum` printed as literals; longer ones print as their base type.
    pub max_literals: usize,
}

/// Work one tool's types may cost to print, counted in nodes; hostile schemas whose references
/// fan out stop here.
const FUEL: usize = 20_000;
/// Deepest nesting printed, references included.
const MAX_NESTING: usize = 100;
/// Longest one-line object tried before falling back to one field per line.
const ONE_LINE: usize = 72;

pub(crate) struct Renderer<'a, 's> {
    pub tt: &'a ToolTypes<'a>,
    /// The name a type goes by when printed by reference.
    names: &'a dyn Fn(NodeId) -> &'a str,
    pub style: Style<'s>,
    /// Named types printed by reference whose declarations belong in the same output.
    pub declare: Vec<NodeId>,
    /// Types printed by name only, left for a later `describe`.
    pub hoisted: Vec<NodeId>,
    expanding: Vec<usize>,
    fuel: usize,
    nesting: usize,
    saw_doc: bool,
}

impl<'a, 's> Renderer<'a, 's> {
    pub(crate) fn new(tt: &'a ToolTypes<'a>, names: &'a dyn Fn(NodeId) -> &'a str, style: Style<'s>) -> Self {
        Renderer {
            tt,
            names,
            style,
            declare: Vec::new(),
            hoisted: Vec::new(),
            expanding: Vec::new(),
            fuel: FUEL,
            nesting: 0,
            saw_doc: false,
        }
    }

    pub(crate) fn name(&self, id: NodeId) -> &'a str {
        (self.names)(id)
    }

    /// Prints the type at `id` expanded even if it is named or below the cap: the input
    /// parameter and the body of a declaration.
    pub(crate) fn root(&mut self, id: NodeId, depth: usize, indent: usize, out: &mut String) {
        let tt = self.tt;
        let resolved = tt.arena.resolve(id);
        match &tt.arena.nodes[resolved].kind {
            Kind::Object(o) => self.object(o, depth, indent, out),
            _ => self.ty(resolved, depth, indent, out),
        }
    }

    pub(crate) fn ty(&mut self, id: NodeId, depth: usize, indent: usize, out: &mut String) {
        if self.fuel == 0 {
            out.push_str("unknown /* type too large */");
            return;
        }
        if self.nesting > MAX_NESTING {
            out.push_str("unknown /* nested too deep */");
            return;
        }
        self.fuel -= 1;
        self.nesting += 1;
        let tt = self.tt;
        match &tt.arena.nodes[id].kind {
            Kind::Unknown => out.push_str("unknown"),
            Kind::Never => out.push_str("never"),
            Kind::Opaque(note) => {
                out.push_str("unknown /* ");
                out.push_str(&comment_safe(note));
                out.push_str(" */");
            }
            Kind::Prim(p) => out.push_str(p.ts()),
            Kind::Literals { texts, bases, total, long } => {
                if self.collapsed(texts, *total, *long) {
                    out.push_str(&bases.join(" | "));
                    if *total == 1 {
                        out.push_str(" /* one fixed value */");
                    } else {
                        out.push_str(&format!(" /* one of {total} values */"));
                    }
                } else {
                    out.push_str(&texts.join(" | "));
                }
            }
            Kind::Array(item) => self.array(*item, depth, indent, out),
            Kind::Tuple { items, rest } => self.tuple(items, *rest, depth, indent, out),
            Kind::Object(_) if depth > self.style.cap => self.named(id, false, out),
            Kind::Object(o) => self.object(o, depth, indent, out),
            Kind::Union(members) => {
                for (i, m) in members.iter().enumerate() {
                    if i > 0 {
                        out.push_str(" | ");
                    }
                    self.ty(*m, depth, indent, out);
                }
            }
            Kind::Intersection(members) => self.intersection(members, depth, indent, out),
            Kind::Ref(d) => self.reference(*d, depth, indent, out),
        }
        self.nesting -= 1;
    }

    /// Whether an `enum` prints as its base types rather than as its literals.
    fn collapsed(&self, texts: &[String], total: usize, long: bool) -> bool {
        long || total > self.style.max_literals || texts.is_empty()
    }

    /// `T[]`, or `(A | B)[]`.
    fn array(&mut self, item: NodeId, depth: usize, indent: usize, out: &mut String) {
        let parens = self.compound(item);
        if parens {
            out.push('(');
        }
        self.ty(item, depth, indent, out);
        out.push_str(if parens { ")[]" } else { "[]" });
    }

    /// `[A, B, ...C[]]`.
    fn tuple(
        &mut self,
        items: &[NodeId],
        rest: Option<NodeId>,
        depth: usize,
        indent: usize,
        out: &mut String,
    ) {
        out.push('[');
        for (i, item) in items.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            self.ty(*item, depth, indent, out);
        }
        if let Some(rest) = rest {
            if !items.is_empty() {
                out.push_str(", ");
            }
            out.push_str("...");
            self.array(rest, depth, indent, out);
        }
        out.push(']');
    }

    /// `A & B`, with parentheses around compound members when there are several.
    fn intersection(&mut self, members: &[NodeId], depth: usize, indent: usize, out: &mut String) {
        let single = members.len() == 1;
        for (i, m) in members.iter().enumerate() {
            if i > 0 {
                out.push_str(" & ");
            }
            let parens = !single && self.compound(*m);
            if parens {
                out.push('(');
            }
            self.ty(*m, depth, indent, out);
            if parens {
                out.push(')');
            }
        }
    }

    /// A `$ref`: expanded in place, or printed by name when recursive or already being expanded.
    fn reference(&mut self, d: usize, depth: usize, indent: usize, out: &mut String) {
        let tt = self.tt;
        let def = &tt.arena.defs[d];
        if def.recursive || self.expanding.contains(&d) || self.expanding.len() >= 8 {
            let declare = def.recursive && depth <= self.style.cap;
            self.named(def.node, declare, out);
        } else {
            self.expanding.push(d);
            self.ty(def.node, depth, indent, out);
            self.expanding.pop();
        }
    }

    /// Prints a reference to a named type and remembers whether it is declared or left out.
    pub(crate) fn named(&mut self, id: NodeId, declare: bool, out: &mut String) {
        match self.style.namespace {
            Some(ns) => {
                out.push_str(ns);
                out.push('.');
                out.push_str(self.name(id));
                let list = if declare { &mut self.declare } else { &mut self.hoisted };
                if !list.contains(&id) {
                    list.push(id);
                }
            }
            None if declare => out.push_str(self.name(id)),
            None => out.push_str("{ … }"),
        }
    }

    /// Whether the type needs parentheses inside `T[]` or `A & B`.
    fn compound(&self, id: NodeId) -> bool {
        let tt = self.tt;
        let arena = &tt.arena;
        let mut id = id;
        for _ in 0..32 {
            match &arena.nodes[id].kind {
                Kind::Union(ms) => return ms.len() > 1,
                Kind::Intersection(ms) if ms.len() == 1 => id = ms[0],
                Kind::Intersection(_) => return true,
                Kind::Literals { texts, bases, total, long } => {
                    return if self.collapsed(texts, *total, *long) {
                        bases.len() > 1
                    } else {
                        texts.len() > 1 || texts.iter().any(|t| t.starts_with('-'))
                    };
                }
                Kind::Ref(d) => {
                    let def = &arena.defs[*d];
                    if def.recursive || self.expanding.contains(d) || self.expanding.len() >= 8 {
                        return false;
                    }
                    id = def.node;
                }
                _ => return false,
            }
        }
        true
    }

    fn object(&mut self, o: &Object, depth: usize, indent: usize, out: &mut String) {
        if o.props.is_empty() && o.index.is_none() && o.dropped == 0 {
            out.push_str("{}");
            return;
        }
        if self.style.multiline {
            // Short objects without words read best on one line.
            let saw_doc = std::mem::replace(&mut self.saw_doc, false);
            self.style.multiline = false;
            let mut line = String::new();
            self.object(o, depth, indent, &mut line);
            self.style.multiline = true;
            let fits = !self.saw_doc && line.len() <= ONE_LINE;
            self.saw_doc = saw_doc;
            if fits {
                out.push_str(&line);
                return;
            }
            self.object_lines(o, depth, indent, out);
            return;
        }
        out.push_str("{ ");
        let mut first = true;
        for p in &o.props {
            if !first {
                out.push_str("; ");
            }
            first = false;
            if self.style.docs != DocMode::Off && !self.field_doc(p.node).is_empty() {
                self.saw_doc = true;
            }
            out.push_str(&property_key(&p.name));
            out.push_str(if p.required { ": " } else { "?: " });
            self.ty(p.node, depth + 1, indent, out);
        }
        if let Some(index) = o.index {
            if !first {
                out.push_str("; ");
            }
            first = false;
            if self.style.docs != DocMode::Off && o.key_hint.is_some() {
                self.saw_doc = true;
            }
            out.push_str("[key: string]: ");
            self.ty(index, depth + 1, indent, out);
        }
        if o.dropped > 0 {
            if !first {
                out.push(' ');
            }
            out.push_str(&format!("/* {} more properties */", o.dropped));
        }
        out.push_str(" }");
    }

    fn object_lines(&mut self, o: &Object, depth: usize, indent: usize, out: &mut String) {
        out.push_str("{\n");
        let inner = indent + 1;
        for p in &o.props {
            let doc = self.field_doc(p.node);
            jsdoc(doc, None, self.style.docs, inner, out);
            tabs(inner, out);
            out.push_str(&property_key(&p.name));
            out.push_str(if p.required { ": " } else { "?: " });
            self.ty(p.node, depth + 1, inner, out);
            out.push_str(";\n");
        }
        if let Some(index) = o.index {
            if let Some(hint) = &o.key_hint {
                let doc = Doc { description: Some(hint.clone()), tags: Vec::new() };
                jsdoc(&doc, None, self.style.docs, inner, out);
            }
            tabs(inner, out);
            out.push_str("[key: string]: ");
            self.ty(index, depth + 1, inner, out);
            out.push_str(";\n");
        }
        if o.dropped > 0 {
            tabs(inner, out);
            out.push_str(&format!("// {} more properties not shown\n", o.dropped));
        }
        tabs(indent, out);
        out.push('}');
    }

    /// The words for a field: its own, or those of the type it refers to.
    pub(crate) fn field_doc(&self, id: NodeId) -> &'a Doc {
        let tt = self.tt;
        let arena = &tt.arena;
        let doc = &arena.nodes[id].doc;
        if doc.is_empty()
            && let Kind::Ref(d) = arena.nodes[id].kind
        {
            let target = arena.defs[d].node;
            return &arena.nodes[target].doc;
        }
        doc
    }
}

/// Writes a JSDoc block for `doc` (and a leading `lead` text, such as a tool's description).
pub(crate) fn jsdoc(doc: &Doc, lead: Option<&str>, mode: DocMode, indent: usize, out: &mut String) {
    let mut lines: Vec<String> = Vec::new();
    let description = lead.or(doc.description.as_deref());
    match mode {
        DocMode::Full => {
            if let Some(d) = description {
                push_text_lines(d, &mut lines);
            }
            lines.extend(doc.tags.iter().map(|t| comment_safe(t)));
        }
        DocMode::Short => {
            if let Some(d) = description {
                lines.push(first_sentence(d));
            }
            let kept = doc.tags.iter().filter(|t| t.starts_with("@default") || t.starts_with("@format"));
            lines.extend(kept.map(|t| comment_safe(t)));
        }
        DocMode::Off => {
            if let Some(d) = lead {
                lines.push(first_sentence(d));
            }
        }
    }
    if lines.is_empty() {
        return;
    }
    if lines.len() == 1 {
        tabs(indent, out);
        out.push_str("/** ");
        out.push_str(&lines[0]);
        out.push_str(" */\n");
        return;
    }
    tabs(indent, out);
    out.push_str("/**\n");
    for line in lines {
        tabs(indent, out);
        if line.is_empty() {
            out.push_str(" *\n");
        } else {
            out.push_str(" * ");
            out.push_str(&line);
            out.push('\n');
        }
    }
    tabs(indent, out);
    out.push_str(" */\n");
}

/// The first sentence of `text` on one line, at most 200 characters, safe inside a comment.
fn first_sentence(text: &str) -> String {
    let mut end = text.len();
    for (i, c) in text.char_indices() {
        if matches!(c, '.' | '!' | '?' | '。') {
            let next = text[i + c.len_utf8()..].chars().next();
            if next.is_none_or(char::is_whitespace) {
                end = i + c.len_utf8();
                break;
            }
        }
    }
    let mut out = String::with_capacity(end.min(256));
    for (n, word) in text[..end].split_whitespace().enumerate() {
        if n > 0 {
            out.push(' ');
        }
        out.push_str(word);
        if out.len() > 800 {
            break;
        }
    }
    if out.chars().count() > 200 {
        let cut: String = out.chars().take(199).collect();
        out = format!("{}…", cut.trim_end());
    }
    comment_safe(&out)
}

/// Splits text into comment lines: trailing spaces gone, runs of blank lines made one.
fn push_text_lines(text: &str, lines: &mut Vec<String>) {
    let start = lines.len();
    for raw in text.lines() {
        let line = comment_safe(raw.trim_end());
        if line.is_empty() && lines.len() > start && lines.last().is_some_and(String::is_empty) {
            continue;
        }
        lines.push(line);
    }
    while lines.len() > start && lines.last().is_some_and(String::is_empty) {
        lines.pop();
    }
}

/// Text that cannot end the comment it sits in.
pub(crate) fn comment_safe(text: &str) -> String {
    if !text.contains(['*', '\r']) {
        return text.to_owned();
    }
    text.replace("*/", "*\\/").replace('\r', "")
}

pub(crate) fn tabs(n: usize, out: &mut String) {
    for _ in 0..n {
        out.push('\t');
    }
}

/// A property name as TypeScript accepts it: bare when it is a plain identifier, else quoted.
pub(crate) fn property_key(name: &str) -> String {
    let mut chars = name.chars();
    let plain = chars.next().is_some_and(|c| c.is_ascii_alphabetic() || c == '_' || c == '$')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$');
    if plain { name.to_owned() } else { serde_json::Value::String(name.to_owned()).to_string() }
}

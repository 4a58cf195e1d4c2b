//! The names object types go by when they are printed by reference (`github.Issue`) instead of
//! inline, stable for a namespace so that a later `describe` of the name finds the same type.
//!
//! A type is named by its schema `title` or its `$defs` key when every type in the namespace that
//! claims that name is the same schema and no path name is spelled the same; otherwise by its
//! path from the tool: `CreateIssueInputLabelsItem`, `ReadGraphResultEntitiesItem`.

use std::collections::{BTreeMap, BTreeSet, HashMap};

use serde_json::Value;

use crate::manifest::Tool;

use super::schema::{Arena, Kind, NodeId, Side, pascal};

/// One tool's schemas, converted.
#[derive(Debug, Clone)]
pub(crate) struct ToolTypes<'c> {
    pub tool: &'c Tool,
    pub arena: Arena,
    pub input: NodeId,
    pub output: Option<NodeId>,
}

/// The name of every object and every `$ref` target of one tool.
pub(crate) type NameMap = HashMap<NodeId, String>;

/// A named type of a namespace: the index of the tool whose schema holds it, and its node.
pub(crate) type TypeRef = (usize, NodeId);

/// The names of a whole namespace's types.
#[derive(Debug, Clone, Default)]
pub(crate) struct Names {
    pub per_tool: Vec<NameMap>,
    pub by_name: BTreeMap<String, Vec<TypeRef>>,
}

/// A name some node could go by.
struct Candidate {
    node: NodeId,
    path: String,
    /// A name the schema chose (title or `$defs` key), with the schema's canonical text.
    claim: Option<(String, String)>,
}

impl<'c> ToolTypes<'c> {
    /// Converts a tool's schemas.
    pub(crate) fn new(tool: &'c Tool) -> ToolTypes<'c> {
        let mut arena = Arena::default();
        let input = arena.convert(&tool.record.input_schema, Side::Input);
        let output = tool.record.output_schema.as_ref().map(|s| arena.convert(s, Side::Output));
        ToolTypes { tool, arena, input, output }
    }

    /// Names for this tool alone, as if no other tool shared its namespace.
    pub(crate) fn local_names(&self) -> NameMap {
        self.candidates().into_iter().map(|c| (c.node, c.claim.map_or(c.path, |(name, _)| name))).collect()
    }

    /// Whether the type chose its own name (a title or a `$defs` key).
    pub(crate) fn has_own_name(&self, id: NodeId) -> bool {
        let node = &self.arena.nodes[id];
        let titled = node.title.is_some() && node.canon.is_some() && matches!(node.kind, Kind::Object(_));
        titled || self.arena.defs.iter().any(|d| d.node == id && !d.key.is_empty())
    }

    pub(crate) fn prefix(&self) -> String {
        capitalised(&self.tool.ident)
    }

    /// Every nameable node with its path name and claimed name, in a stable order.
    fn candidates(&self) -> Vec<Candidate> {
        let prefix = self.prefix();
        let mut out = Vec::new();
        let mut seen = vec![false; self.arena.nodes.len()];
        let input_path = format!("{prefix}Input");
        // The input is always printed inline, so its title would only clutter the namespace.
        self.walk(self.input, input_path, false, &mut out, &mut seen);
        if let Some(output) = self.output {
            self.walk(output, format!("{prefix}Result"), true, &mut out, &mut seen);
        }
        for def in &self.arena.defs {
            if def.node == NodeId::MAX || seen[def.node] {
                continue;
            }
            let side = match def.side {
                Side::Input => "Input",
                Side::Output => "Result",
            };
            let path = format!("{prefix}{side}{}", if def.key.is_empty() { "Self" } else { &def.key });
            seen[def.node] = true;
            let claim = (!def.key.is_empty()).then(|| (def.key.clone(), def.canon.clone()));
            out.push(Candidate { node: def.node, path: path.clone(), claim });
            self.walk_children(def.node, &path, &mut out, &mut seen);
        }
        out
    }

    fn walk(&self, id: NodeId, path: String, use_title: bool, out: &mut Vec<Candidate>, seen: &mut [bool]) {
        if seen[id] {
            return;
        }
        seen[id] = true;
        let node = &self.arena.nodes[id];
        // The input object always prints inline, so it needs no name.
        if let Kind::Object(_) = node.kind
            && id != self.input
        {
            let claim = match (&node.title, &node.canon) {
                (Some(t), Some(c)) if use_title => Some((t.clone(), c.clone())),
                _ => None,
            };
            out.push(Candidate { node: id, path: path.clone(), claim });
        }
        self.walk_children(id, &path, out, seen);
    }

    fn walk_children(&self, id: NodeId, path: &str, out: &mut Vec<Candidate>, seen: &mut [bool]) {
        match self.arena.kind(id) {
            Kind::Object(o) => {
                for p in &o.props {
                    let word = pascal(&p.name);
                    let word = if word.is_empty() { "Field".to_owned() } else { word };
                    self.walk(p.node, format!("{path}{word}"), true, out, seen);
                }
                if let Some(i) = o.index {
                    self.walk(i, format!("{path}Value"), true, out, seen);
                }
            }
            Kind::Array(i) => self.walk(*i, format!("{path}Item"), true, out, seen),
            Kind::Tuple { items, rest } => {
                for (k, i) in items.iter().enumerate() {
                    self.walk(*i, format!("{path}Item{}", k + 1), true, out, seen);
                }
                if let Some(r) = rest {
                    self.walk(*r, format!("{path}Rest"), true, out, seen);
                }
            }
            Kind::Union(ms) | Kind::Intersection(ms) => {
                let structured = ms.iter().filter(|m| self.is_structured(**m)).count();
                for (k, m) in ms.iter().enumerate() {
                    let path = if structured > 1 { format!("{path}{}", k + 1) } else { path.to_owned() };
                    self.walk(*m, path, true, out, seen);
                }
            }
            _ => {}
        }
    }

    fn is_structured(&self, id: NodeId) -> bool {
        matches!(
            self.arena.kind(id),
            Kind::Object(_) | Kind::Array(_) | Kind::Tuple { .. } | Kind::Union(_) | Kind::Intersection(_)
        )
    }
}

/// Whether a schema might give a type its own name (a `title`) or refer to one (`$ref`). When no
/// schema of a namespace does and no tool's names can be spelled like another's, each tool's
/// names are settled by that tool alone.
pub(crate) fn may_claim(schema: &Value) -> bool {
    let mut stack = vec![schema];
    while let Some(v) = stack.pop() {
        match v {
            Value::Object(m) => {
                if m.get("title").is_some_and(Value::is_string)
                    || ["$ref", "$recursiveRef", "$dynamicRef"].iter().any(|k| m.contains_key(*k))
                {
                    return true;
                }
                stack.extend(m.values());
            }
            Value::Array(items) => stack.extend(items),
            _ => {}
        }
    }
    false
}

/// Whether two tools' path names could be spelled alike: every path name is the tool's
/// identifier, capitalised, then `Input` or `Result`, so only a tool named like `createIssue`
/// followed by `Input…` or `Result…` can meet `createIssue`'s names.
pub(crate) fn prefixes_overlap<'a>(idents: impl Iterator<Item = &'a str>) -> bool {
    let mut prefixes: Vec<String> = idents.map(capitalised).collect();
    prefixes.sort();
    for (i, a) in prefixes.iter().enumerate() {
        for b in prefixes[i + 1..].iter().take_while(|b| b.starts_with(a.as_str())) {
            let rest = &b[a.len()..];
            if rest.is_empty() || rest.starts_with("Input") || rest.starts_with("Result") {
                return true;
            }
        }
    }
    false
}

fn capitalised(ident: &str) -> String {
    let mut chars = ident.chars();
    let mut out: String = chars.next().map(|c| c.to_uppercase().collect()).unwrap_or_default();
    out.push_str(chars.as_str());
    out
}

/// Names every type of every tool of one namespace, so each name means one type.
pub(crate) fn name_namespace(tools: &[&ToolTypes<'_>]) -> Names {
    let per_tool: Vec<Vec<Candidate>> = tools.iter().map(|t| t.candidates()).collect();
    let paths: BTreeSet<&str> = per_tool.iter().flatten().map(|c| c.path.as_str()).collect();
    let mut claims: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
    for c in per_tool.iter().flatten() {
        if let Some((name, canon)) = &c.claim {
            claims.entry(name.as_str()).or_default().insert(canon.as_str());
        }
    }
    // A chosen name stands when no path name is spelled the same and every type that chose it is
    // the same schema; path names then avoid the chosen names and each other.
    let kept = |c: &Candidate| -> Option<String> {
        let (name, _) = c.claim.as_ref()?;
        let unique = claims.get(name.as_str()).is_some_and(|s| s.len() == 1);
        (unique && !paths.contains(name.as_str())).then(|| name.clone())
    };
    let finals: Vec<Vec<Option<String>>> = per_tool.iter().map(|cs| cs.iter().map(kept).collect()).collect();
    let claimed: BTreeSet<&str> = finals.iter().flatten().flatten().map(String::as_str).collect();
    let mut taken: BTreeSet<String> = BTreeSet::new();
    let mut names = Names { per_tool: Vec::with_capacity(tools.len()), by_name: BTreeMap::new() };
    for (t, candidates) in per_tool.iter().enumerate() {
        let mut map = NameMap::with_capacity(candidates.len());
        for (i, c) in candidates.iter().enumerate() {
            let name = match &finals[t][i] {
                Some(name) => name.clone(),
                None => {
                    let mut name = c.path.clone();
                    let mut n = 2;
                    while taken.contains(&name) || claimed.contains(name.as_str()) {
                        name = format!("{}{n}", c.path);
                        n += 1;
                    }
                    taken.insert(name.clone());
                    name
                }
            };
            names.by_name.entry(name.clone()).or_default().push((t, c.node));
            map.insert(c.node, name);
        }
        names.per_tool.push(map);
    }
    names
}

#[cfg(test)]
mod tests {
    use super::prefixes_overlap;

    #[test]
    fn overlapping_prefixes() {
        assert!(!prefixes_overlap(["createIssue", "createIssueComment", "getIssue"].into_iter()));
        assert!(prefixes_overlap(["createIssue", "createIssueInputs"].into_iter()));
        assert!(prefixes_overlap(["readGraph", "readGraphResult"].into_iter()));
    }
}

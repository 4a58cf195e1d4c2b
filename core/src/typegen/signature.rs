//! The one-line signature `search` prints for each tool:
//! `github.createIssue(input: { owner: string; title: string; body?: string }): Promise<Issue>`.

use crate::address::ToolAddress;
use crate::manifest::Tool;

use super::names::ToolTypes;
use super::render::{DocMode, Renderer, Style};
use super::schema::{Kind, NodeId};

/// Longest signature line, in characters; deeper objects are elided as `{ … }` to stay under it.
const MAX_LINE: usize = 300;
/// Longest output type printed inline; a longer object prints as `object`.
const MAX_OUTPUT: usize = 80;

/// One-line TypeScript signature of a tool, as `search` prints it:
/// `github.createIssue(input: { title: string; body?: string }): Promise<Issue>`.
///
/// Required fields come first. Nested objects are shown as deep as the line allows, then as
/// `{ … }`; the output is a schema's own name, a short inline type, `object` or `unknown`.
pub fn signature_line(address: &ToolAddress, tool: &Tool) -> String {
    let tt = ToolTypes::new(tool);
    let names = tt.local_names();
    let namer = |id: NodeId| names.get(&id).map_or("Unnamed", String::as_str);
    let tt = &Named { tt: &tt, names: &namer };
    let output = output_text(tt);
    for cap in [usize::MAX, 3, 2, 1, 0] {
        let (param, input) = input_text(tt, cap, usize::MAX);
        let line = format!("{address}({param}: {input}): Promise<{output}>");
        if line.chars().count() <= MAX_LINE {
            return line;
        }
    }
    // Still too long with every nested object elided: show as many fields as fit.
    let fixed = format!("{address}(input: ): Promise<{output}>").chars().count();
    let room = MAX_LINE.saturating_sub(fixed);
    let (param, input) = input_text(tt, 0, room);
    if input.chars().count() <= room {
        return format!("{address}({param}: {input}): Promise<{output}>");
    }
    format!("{address}({param}: {{ … }}): Promise<{output}>")
}

/// A tool's types with the names they go by.
struct Named<'a> {
    tt: &'a ToolTypes<'a>,
    names: &'a dyn Fn(NodeId) -> &'a str,
}

fn style(cap: usize) -> Style<'static> {
    Style { multiline: false, docs: DocMode::Off, cap, namespace: None, max_literals: 8 }
}

/// The input parameter's name (`input` or `input?`) and type, fields cut to fit `room` chars.
fn input_text(named: &Named<'_>, cap: usize, room: usize) -> (&'static str, String) {
    let tt = named.tt;
    let mut r = Renderer::new(tt, named.names, style(cap));
    let root = tt.arena.resolve(tt.input);
    match tt.arena.kind(root) {
        Kind::Object(o) => {
            let param = if o.props.iter().any(|p| p.required) { "input" } else { "input?" };
            if room == usize::MAX {
                let mut out = String::new();
                r.root(root, 0, 0, &mut out);
                return (param, out);
            }
            let mut fields: Vec<String> = Vec::new();
            let mut used = "{  }".len();
            for p in &o.props {
                let mut field = super::render::property_key(&p.name);
                field.push_str(if p.required { ": " } else { "?: " });
                r.ty(p.node, 1, 0, &mut field);
                let len = field.chars().count() + 2;
                if used + len + "; …".len() > room {
                    fields.push("…".to_owned());
                    return (param, format!("{{ {} }}", fields.join("; ")));
                }
                used += len;
                fields.push(field);
            }
            let mut out = String::new();
            r.root(root, 0, 0, &mut out);
            (param, out)
        }
        Kind::Unknown => ("input?", "{ [key: string]: unknown }".to_owned()),
        Kind::Union(_) | Kind::Intersection(_) => {
            let mut out = String::new();
            r.root(root, 0, 0, &mut out);
            ("input", out)
        }
        Kind::Opaque(note) => ("input", format!("unknown /* {} */", super::render::comment_safe(note))),
        _ => ("input", "unknown /* the input schema is not an object */".to_owned()),
    }
}

fn output_text(named: &Named<'_>) -> String {
    let tt = named.tt;
    let Some(output) = tt.output else { return "unknown".to_owned() };
    let root = tt.arena.resolve(output);
    if tt.has_own_name(root) {
        return (named.names)(root).to_owned();
    }
    let mut r = Renderer::new(tt, named.names, style(1));
    let mut out = String::new();
    r.ty(output, 1, 0, &mut out);
    if out.chars().count() <= MAX_OUTPUT {
        return out;
    }
    match tt.arena.kind(root) {
        Kind::Object(_) => "object".to_owned(),
        _ => "unknown".to_owned(),
    }
}

//! The forgiving rewrites, planned on the syntax tree.
//!
//! A plan holds each rewrite twice: as edits to the model's text, for code that runs as written,
//! and, where the rewrite is simple, as edits to the syntax tree, so TypeScript need not be parsed
//! a second time before it is stripped. Every text edit keeps the line breaks it covers, so each
//! line of the result is the same line of the model's text; the one exception is the call of a
//! lone function, appended as a last line.

use oxc::ast::AstKind;
use oxc::ast::ast::{
    ExportDeclaration, ExportDefaultDeclaration, ExportDefaultDeclarationKind, Expression, Program,
    Statement, TSExportAssignment,
};
use oxc::semantic::{Semantic, SymbolId};
use oxc::span::{GetSpan, Span};

use super::inspect::{
    is_declaration, is_passive, is_typescript, refuse_modules, returnable, returns_at_top_level,
};
use super::{CodeErrorKind, Refusal};

/// The edits and notices for one program.
#[derive(Debug, Default)]
pub(super) struct Plan {
    /// Sorted by position, never overlapping.
    pub edits: Vec<Edit>,
    pub notices: Vec<String>,
    /// The same rewrites as tree edits, in statement order; `None` when one has no tree form.
    pub tree: Option<Vec<TreeEdit>>,
    /// When a line was appended, the line of the text it stands for (1-based).
    pub appended_for: Option<u32>,
    /// The program uses TypeScript syntax.
    pub typescript: bool,
    /// Text added after the last line.
    append: String,
}

/// A rewrite on the syntax tree. Statement indexes are positions in `Program::body`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum TreeEdit {
    DropHashbang,
    /// An expression statement, or `export default <value>`, becomes `return <value>`.
    Return {
        index: usize,
    },
    /// `export <declaration>` or `export default <named declaration>` becomes the declaration.
    Unwrap {
        index: usize,
    },
    /// The statement goes.
    Remove {
        index: usize,
    },
    /// `return await <name>();` is appended, with `span` (the function's) for its position.
    Call {
        name: String,
        symbol: SymbolId,
        span: Span,
    },
}

/// Replace `start..end` of the text with `insert`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Edit {
    pub start: u32,
    pub end: u32,
    pub insert: String,
}

impl Plan {
    /// The text with every edit applied.
    pub fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 64);
        let mut at = 0;
        for edit in &self.edits {
            let (start, end) = (edit.start as usize, edit.end as usize);
            if start < at || end > text.len() || start > end {
                continue;
            }
            out.push_str(&text[at..start]);
            out.push_str(&edit.insert);
            at = end;
        }
        out.push_str(&text[at..]);
        if !self.append.is_empty() {
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out.push_str(&self.append);
        }
        out
    }

    fn tree(&mut self, edit: TreeEdit) {
        if let Some(tree) = &mut self.tree {
            tree.push(edit);
        }
    }

    /// A rewrite with no tree form: TypeScript will be parsed again after the text edits.
    fn text_only(&mut self) {
        self.tree = None;
    }

    /// The statement at `index` goes, keeping its line breaks.
    fn remove(&mut self, text: &str, span: Span, index: usize) {
        self.blank(text, span.start, span.end, "");
        self.tree(TreeEdit::Remove { index });
    }

    fn edit(&mut self, start: u32, end: u32, insert: impl Into<String>) {
        self.edits.push(Edit { start, end, insert: insert.into() });
    }

    /// Replaces `span` with only the line breaks it held, so lines stay where they were.
    fn blank(&mut self, text: &str, start: u32, end: u32, keep: &str) {
        let breaks = slice(text, start, end).matches('\n').count();
        self.edit(start, end, format!("{keep}{}", "\n".repeat(breaks)));
    }
}

/// Plans the rewrites for a parsed program, or refuses it. `line_base` is the number of lines of
/// the model's text before `text` (a fence and the prose above it), for notices that cite a line.
pub(super) fn plan(
    text: &str,
    line_base: u32,
    program: &Program<'_>,
    semantic: &Semantic<'_>,
) -> Result<Plan, Refusal> {
    refuse_modules(program, semantic)?;
    let mut plan = Plan {
        tree: Some(Vec::new()),
        typescript: semantic.nodes().iter().any(|node| is_typescript(node.kind())),
        ..Plan::default()
    };
    if let Some(hashbang) = &program.hashbang {
        plan.blank(text, hashbang.span.start, hashbang.span.end, "");
        plan.tree(TreeEdit::DropHashbang);
        plan.notices.push("removed the `#!` line".into());
    }
    let has_return = returns_at_top_level(semantic);
    let last = program.body.iter().rposition(|statement| !is_passive(statement));
    let mut exports = 0;
    let mut entry: Option<Entry> = None;
    let mut seen_default = false;

    for (index, statement) in program.body.iter().enumerate() {
        let is_last = last == Some(index) && !has_return;
        match statement {
            // Only type imports and type re-exports are left by `refuse_modules`.
            Statement::ImportDeclaration(_)
            | Statement::ExportAllDeclaration(_)
            | Statement::ExportFromDeclaration(_) => {
                plan.remove(text, statement.span(), index);
                plan.typescript = true;
            }
            Statement::ExportNamedDeclaration(_) | Statement::TSNamespaceExportDeclaration(_) => {
                plan.remove(text, statement.span(), index);
                exports += 1;
            }
            Statement::ExportDeclaration(export) => {
                exports += usize::from(unwrap_export(&mut plan, text, export, index));
            }
            Statement::ExportDefaultDeclaration(export) => {
                if std::mem::replace(&mut seen_default, true) {
                    return Err(second_default(export.span.start));
                }
                entry = entry.or(export_default(&mut plan, text, semantic, export, index, is_last));
            }
            Statement::TSExportAssignment(export) => export_assignment(&mut plan, text, export, is_last),
            _ => {}
        }
    }
    if exports > 0 {
        plan.notices.push("dropped `export`: the code is a function body, not a module".into());
    }
    if entry.is_none() && !has_return {
        entry = implicit_entry(&mut plan, text, line_base, program, semantic, last);
    }
    if let Some(entry) = entry {
        call_entry(&mut plan, text, semantic, entry, has_return);
    }
    plan.edits.sort_by_key(|edit| (edit.start, edit.end));
    Ok(plan)
}

/// The notice for each form of `export default` that is unwrapped.
const UNWRAPPED_DEFAULT: &str = "unwrapped `export default`";

/// `export <declaration>` becomes the declaration. False when the text does not show the
/// `export` keyword: then nothing is edited, and the plan has no tree form.
fn unwrap_export(plan: &mut Plan, text: &str, export: &ExportDeclaration<'_>, index: usize) -> bool {
    let inner = export.declaration.span().start;
    let Some(keyword) = find_word(text, export.span.start, inner, "export") else {
        plan.text_only();
        return false;
    };
    let after = slice(text, keyword + 6, inner);
    let spaces = after.len() - after.trim_start_matches([' ', '\t']).len();
    let end = keyword + 6 + u32::try_from(spaces).unwrap_or(0);
    plan.blank(text, keyword, end, "");
    plan.tree(TreeEdit::Unwrap { index });
    true
}

/// The refusal of a second `export default`, at `offset`.
fn second_default(offset: u32) -> Refusal {
    Refusal {
        kind: CodeErrorKind::Syntax,
        message: "syntax error: more than one `export default`".into(),
        offset,
        hint: "keep one `export default`, or end the code with `return <value>`".into(),
    }
}

/// `export default …`: a named declaration is unwrapped, a function becomes the entry to call,
/// and a value is returned when it is last. Returns the entry, if the export names one.
fn export_default(
    plan: &mut Plan,
    text: &str,
    semantic: &Semantic<'_>,
    export: &ExportDefaultDeclaration<'_>,
    index: usize,
    is_last: bool,
) -> Option<Entry> {
    let prefix = (export.span.start, export.declaration.span().start);
    match &export.declaration {
        ExportDefaultDeclarationKind::FunctionDeclaration(function) => match &function.id {
            Some(id) => {
                unwrap_default(plan, text, prefix, index);
                Some(Entry::Named {
                    name: id.name.to_string(),
                    symbol: id.symbol_id.get(),
                    span: function.span,
                    exported: true,
                })
            }
            None => {
                plan.text_only();
                plan.notices.push(UNWRAPPED_DEFAULT.into());
                Some(Entry::Anonymous { prefix, function: function.span, is_last, exported: true })
            }
        },
        ExportDefaultDeclarationKind::ClassDeclaration(class) if class.id.is_some() => {
            unwrap_default(plan, text, prefix, index);
            None
        }
        ExportDefaultDeclarationKind::TSInterfaceDeclaration(_) => {
            unwrap_default(plan, text, prefix, index);
            None
        }
        ExportDefaultDeclarationKind::ClassDeclaration(class) => {
            plan.text_only();
            default_value(plan, text, prefix, class.span, is_last, "export default");
            None
        }
        declaration => {
            default_expression(plan, text, semantic, prefix, declaration.as_expression()?, index, is_last)
        }
    }
}

/// `export default <named declaration>` becomes the declaration.
fn unwrap_default(plan: &mut Plan, text: &str, prefix: (u32, u32), index: usize) {
    plan.blank(text, prefix.0, prefix.1, "");
    plan.tree(TreeEdit::Unwrap { index });
    plan.notices.push(UNWRAPPED_DEFAULT.into());
}

/// `export default <expression>`: a function expression is the entry; when last, the name of a
/// function is called and any other value returned; else the value is kept as an expression.
fn default_expression(
    plan: &mut Plan,
    text: &str,
    semantic: &Semantic<'_>,
    prefix: (u32, u32),
    expression: &Expression<'_>,
    index: usize,
    is_last: bool,
) -> Option<Entry> {
    let span = expression.span();
    if expression.without_parentheses().is_function() {
        plan.text_only();
        plan.notices.push(UNWRAPPED_DEFAULT.into());
        return Some(Entry::Anonymous { prefix, function: span, is_last, exported: true });
    }
    if let Some(name) = is_last.then(|| function_named_by(semantic, expression)).flatten() {
        // `export default main`, naming a function declared above or below.
        plan.text_only();
        plan.blank(text, prefix.0, prefix.1, "");
        plan.edit(span.start, span.start, "return await ");
        plan.edit(span.end, span.end, "()");
        plan.notices.push(UNWRAPPED_DEFAULT.into());
        plan.notices.push(format!("called the exported function `{name}` and returned its result"));
        return None;
    }
    if is_last {
        plan.tree(TreeEdit::Return { index });
    } else {
        plan.text_only();
    }
    default_value(plan, text, prefix, span, is_last, "export default");
    None
}

/// `export = <value>`, TypeScript's older form of `export default <value>`.
fn export_assignment(plan: &mut Plan, text: &str, export: &TSExportAssignment<'_>, is_last: bool) {
    let prefix = (export.span.start, export.expression.span().start);
    plan.text_only();
    default_value(plan, text, prefix, export.expression.span(), is_last, "export =");
}

/// Without an exported entry or a top-level `return`: a final function expression is the entry
/// to call, a final expression is returned, or code of declarations alone calls its lone function.
fn implicit_entry(
    plan: &mut Plan,
    text: &str,
    line_base: u32,
    program: &Program<'_>,
    semantic: &Semantic<'_>,
    last: Option<usize>,
) -> Option<Entry> {
    let final_statement = last.and_then(|index| Some((index, program.body.get(index)?)));
    let Some((index, Statement::ExpressionStatement(statement))) = final_statement else {
        return if program.body.iter().all(is_declaration) { lone_function(program, semantic) } else { None };
    };
    let expression = &statement.expression;
    if expression.without_parentheses().is_function() {
        plan.text_only();
        return Some(Entry::Anonymous {
            prefix: (expression.span().start, expression.span().start),
            function: expression.span(),
            is_last: true,
            exported: false,
        });
    }
    if returnable(expression) {
        let start = expression.span().start;
        plan.edit(start, start, "return ");
        plan.tree(TreeEdit::Return { index });
        let line = line_base.saturating_add(line_of(text, start));
        plan.notices.push(format!("returned the value of the final expression (line {line})"));
    }
    None
}

/// A function the code defines as its entry point, to be called.
#[derive(Debug)]
enum Entry {
    Named { name: String, symbol: Option<SymbolId>, span: Span, exported: bool },
    Anonymous { prefix: (u32, u32), function: Span, is_last: bool, exported: bool },
}

fn call_entry(plan: &mut Plan, text: &str, semantic: &Semantic<'_>, entry: Entry, has_return: bool) {
    match entry {
        Entry::Named { name, symbol, span, exported } => {
            let called = symbol.is_some_and(|symbol| {
                semantic.symbol_references(symbol).any(|reference| {
                    let at = semantic.reference_span(reference);
                    at.start < span.start || at.end > span.end
                })
            });
            if called || has_return {
                return;
            }
            plan.append = format!("return await {name}();\n");
            plan.appended_for = Some(line_of(text, span.start));
            match symbol {
                Some(symbol) => plan.tree(TreeEdit::Call { name: name.clone(), symbol, span }),
                None => plan.text_only(),
            }
            let what = if exported { "exported" } else { "lone" };
            plan.notices.push(format!("called the {what} function `{name}` and returned its result"));
        }
        Entry::Anonymous { prefix, function, is_last, exported } => {
            let what = if exported { "exported function" } else { "function expression" };
            if has_return {
                // Keep it as a plain expression: the code returns on its own.
                plan.blank(text, prefix.0, prefix.1, ";(");
                plan.edit(function.end, function.end, ")");
            } else if is_last {
                plan.blank(text, prefix.0, prefix.1, "return await (");
                plan.edit(function.end, function.end, ")()");
                plan.notices.push(format!("called the {what} and returned its result"));
            } else {
                let name = fresh_name(text);
                plan.blank(text, prefix.0, prefix.1, &format!("const {name} = ("));
                plan.edit(function.end, function.end, ");");
                plan.append = format!("return await {name}();\n");
                plan.appended_for = Some(line_of(text, function.start));
                plan.notices.push(format!("called the {what} and returned its result"));
            }
        }
    }
}

/// `export default <value>`: returned when it is the last statement, else kept as an expression.
fn default_value(plan: &mut Plan, text: &str, prefix: (u32, u32), value: Span, is_last: bool, keyword: &str) {
    if is_last {
        plan.blank(text, prefix.0, prefix.1, "");
        plan.edit(value.start, value.start, "return ");
        plan.notices.push(format!("unwrapped `{keyword}` and returned its value"));
    } else {
        plan.blank(text, prefix.0, prefix.1, ";(");
        plan.edit(value.end, value.end, ")");
        plan.notices.push(format!("unwrapped `{keyword}`"));
    }
}

/// The name, when `expression` is an identifier bound to a function at the top level.
fn function_named_by(semantic: &Semantic<'_>, expression: &Expression<'_>) -> Option<String> {
    let Expression::Identifier(identifier) = expression.get_inner_expression() else {
        return None;
    };
    let reference = semantic.scoping().get_reference(identifier.reference_id.get()?);
    let symbol = reference.symbol_id()?;
    if semantic.scoping().symbol_scope_id(symbol) != semantic.scoping().root_scope_id() {
        return None;
    }
    let is_function = match semantic.symbol_declaration(symbol).kind() {
        AstKind::Function(_) => true,
        AstKind::VariableDeclarator(declarator) => {
            declarator.init.as_ref().is_some_and(|init| init.get_inner_expression().is_function())
        }
        _ => false,
    };
    is_function.then(|| identifier.name.to_string())
}

/// The one function declared at the top level that nothing outside it refers to. With several,
/// the one named `main`.
fn lone_function(program: &Program<'_>, semantic: &Semantic<'_>) -> Option<Entry> {
    use oxc::ast::ast::Declaration;
    let mut candidates = Vec::new();
    for statement in &program.body {
        let declaration = match statement {
            Statement::ExportDeclaration(export) => &export.declaration,
            statement => match statement.as_declaration() {
                Some(declaration) => declaration,
                None => continue,
            },
        };
        match declaration {
            Declaration::FunctionDeclaration(function) if !function.declare => {
                if let Some(id) = &function.id {
                    candidates.push((id.name.to_string(), id.symbol_id.get(), function.span));
                }
            }
            Declaration::VariableDeclaration(variables) if !variables.declare => {
                for declarator in &variables.declarations {
                    let (Some(id), Some(init)) = (declarator.id.get_binding_identifier(), &declarator.init)
                    else {
                        continue;
                    };
                    if init.get_inner_expression().is_function() {
                        candidates.push((id.name.to_string(), id.symbol_id.get(), declarator.span));
                    }
                }
            }
            _ => {}
        }
    }
    let uncalled: Vec<_> = candidates
        .into_iter()
        .filter(|(_, symbol, span)| {
            !symbol.is_some_and(|symbol| {
                semantic.symbol_references(symbol).any(|reference| {
                    let at = semantic.reference_span(reference);
                    at.start < span.start || at.end > span.end
                })
            })
        })
        .collect();
    let chosen = match uncalled.as_slice() {
        [one] => one,
        several => several.iter().find(|(name, _, _)| name == "main")?,
    };
    let (name, symbol, span) = chosen.clone();
    Some(Entry::Named { name, symbol, span, exported: false })
}

/// A name for an anonymous entry function that the text does not use.
fn fresh_name(text: &str) -> String {
    let mut name = "__entry".to_owned();
    let mut n = 1;
    while text.contains(&name) {
        n += 1;
        name = format!("__entry{n}");
    }
    name
}

/// The offset of `word` in `text[start..end]`.
fn find_word(text: &str, start: u32, end: u32, word: &str) -> Option<u32> {
    let found = slice(text, start, end).find(word)?;
    Some(start + u32::try_from(found).ok()?)
}

fn slice(text: &str, start: u32, end: u32) -> &str {
    text.get(start as usize..end as usize).unwrap_or("")
}

/// 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: u32) -> u32 {
    let before = text.get(..offset as usize).unwrap_or(text);
    let breaks = before.bytes().filter(|&b| b == b'\n').count();
    u32::try_from(breaks).map_or(u32::MAX, |b| b + 1)
}

//! TypeScript to JavaScript: oxc's transformer strips the types, its printer writes the body, and
//! the printer's source map says which input line each output line came from.

use std::path::Path;

use oxc::allocator::{Allocator, ArenaVec, TakeIn};
use oxc::ast::ast::{ExportDefaultDeclarationKind, Expression, Program, Statement};
use oxc::ast::builder::AstBuilder;
use oxc::codegen::{Codegen, CodegenOptions, CommentOptions};
use oxc::diagnostics::OxcDiagnostic;
use oxc::parser::Parser;
use oxc::semantic::{NodeId, Reference, ReferenceFlags, Scoping, SemanticBuilder, SymbolId};
use oxc::span::{GetSpan, Span};
use oxc::transformer::{TransformOptions, Transformer};

use super::rewrite::TreeEdit;
use super::{parse_options, typescript};

/// The printed JavaScript and, for each of its lines, the input line it came from (1-based).
#[derive(Debug)]
pub(super) struct Stripped {
    pub code: String,
    pub source_lines: Vec<u32>,
}

/// Applies tree edits to a program whose `scoping` came from its semantic pass, keeping the two
/// in step (a new call gets a resolved reference). `None` when an edit does not fit the program,
/// which the caller answers by parsing the edited text instead.
pub(super) fn apply_tree<'a>(
    allocator: &'a Allocator,
    program: &mut Program<'a>,
    scoping: &mut Scoping,
    edits: &[TreeEdit],
) -> Option<()> {
    let builder = AstBuilder::new(allocator);
    let mut removed = Vec::new();
    for edit in edits {
        match edit {
            TreeEdit::DropHashbang => program.hashbang = None,
            TreeEdit::Return { index } => to_return(program.body.get_mut(*index)?, &builder)?,
            TreeEdit::Unwrap { index } => unwrap(program.body.get_mut(*index)?, &builder)?,
            TreeEdit::Remove { index } => removed.push(*index),
            TreeEdit::Call { name, symbol, span } => {
                let call = return_call(allocator, scoping, name, *symbol, *span, &builder);
                program.body.push(call);
            }
        }
    }
    if !removed.is_empty() {
        let body = program.body.take_in(&builder);
        program.body = ArenaVec::from_iter_in(
            body.into_iter().enumerate().filter(|(index, _)| !removed.contains(index)).map(|(_, s)| s),
            &builder,
        );
    }
    Some(())
}

/// An expression statement, or `export default <value>`, becomes `return <value>`.
fn to_return<'a>(statement: &mut Statement<'a>, builder: &AstBuilder<'a>) -> Option<()> {
    let span = statement.span();
    let value = match statement {
        Statement::ExpressionStatement(statement) => statement.expression.take_in(builder),
        Statement::ExportDefaultDeclaration(export) => {
            export.declaration.as_expression_mut()?.take_in(builder)
        }
        _ => return None,
    };
    *statement = Statement::new_return_statement(span, Some(value), builder);
    Some(())
}

/// `export <declaration>` or `export default <named declaration>` becomes the declaration.
fn unwrap<'a>(statement: &mut Statement<'a>, builder: &AstBuilder<'a>) -> Option<()> {
    *statement = match statement {
        Statement::ExportDeclaration(export) => Statement::from(export.declaration.take_in(builder)),
        Statement::ExportDefaultDeclaration(export) => match export.declaration.take_in(builder) {
            ExportDefaultDeclarationKind::FunctionDeclaration(function) => {
                Statement::FunctionDeclaration(function)
            }
            ExportDefaultDeclarationKind::ClassDeclaration(class) => Statement::ClassDeclaration(class),
            ExportDefaultDeclarationKind::TSInterfaceDeclaration(interface) => {
                Statement::TSInterfaceDeclaration(interface)
            }
            _ => return None,
        },
        _ => return None,
    };
    Some(())
}

/// `return await <name>();`, its reference to the function's `symbol` resolved in `scoping`.
fn return_call<'a>(
    allocator: &'a Allocator,
    scoping: &mut Scoping,
    name: &str,
    symbol: SymbolId,
    span: Span,
    builder: &AstBuilder<'a>,
) -> Statement<'a> {
    let root = scoping.root_scope_id();
    let reference = scoping.create_reference(Reference::new_with_symbol_id(
        NodeId::DUMMY,
        symbol,
        root,
        ReferenceFlags::Read,
    ));
    scoping.add_resolved_reference(symbol, reference);
    let name = allocator.alloc_str(name);
    let callee = Expression::new_identifier_with_reference_id(span, name, reference, builder);
    let call = Expression::new_call_expression(span, callee, None, ArenaVec::new_in(builder), false, builder);
    let awaited = Expression::new_await_expression(span, call, builder);
    Statement::new_return_statement(span, Some(awaited), builder)
}

/// Parses `text` as TypeScript again (after edits) and strips it.
pub(super) fn reparse_to_javascript(text: &str) -> Result<Stripped, OxcDiagnostic> {
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, text, typescript()).with_options(parse_options()).parse();
    if let Some(error) = parsed.diagnostics.errors().next() {
        return Err(error.clone());
    }
    let mut program = parsed.program;
    let built = SemanticBuilder::new().with_enum_eval(true).build(&program);
    if let Some(error) = built.diagnostics.errors().next() {
        return Err(error.clone());
    }
    let scoping = built.semantic.into_scoping();
    to_javascript(&allocator, &mut program, scoping)
}

/// Strips a parsed TypeScript program whose semantic pass ran with enum evaluation on.
pub(super) fn to_javascript<'a>(
    allocator: &'a Allocator,
    program: &mut Program<'a>,
    scoping: Scoping,
) -> Result<Stripped, OxcDiagnostic> {
    let options = TransformOptions::default();
    let transformed =
        Transformer::new(allocator, Path::new("execute.ts"), &options).build_with_scoping(scoping, program);
    if let Some(error) = transformed.diagnostics.errors().next() {
        return Err(error.clone());
    }
    let printed = Codegen::new()
        .with_options(CodegenOptions {
            comments: CommentOptions::disabled(),
            source_map_path: Some("execute.ts".into()),
            ..CodegenOptions::default()
        })
        .build(program);
    let output_lines = printed.code.lines().count().max(1);
    let mut first_source: Vec<Option<u32>> = vec![None; output_lines];
    if let Some(map) = &printed.map {
        for token in map.get_tokens() {
            let slot = first_source.get_mut(token.get_dst_line() as usize);
            if let Some(slot @ None) = slot {
                *slot = Some(token.get_src_line().saturating_add(1));
            }
        }
    }
    // A line with no mapped token (a lone `}`) belongs with the line before it.
    let mut last = 1;
    let source_lines = first_source
        .into_iter()
        .map(|line| {
            last = line.unwrap_or(last);
            last
        })
        .collect();
    Ok(Stripped { code: printed.code, source_lines })
}

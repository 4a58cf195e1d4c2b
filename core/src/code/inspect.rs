//! Questions the rewrites ask of a parsed program: is it TypeScript, does it need modules, does
//! it return at the top level, what kind of statement is this.

use oxc::ast::ast::{
    ExportDefaultDeclarationKind, Expression, FunctionType, MethodDefinitionType, Program,
    PropertyDefinitionType, Statement, TSModuleReference, UnaryOperator,
};
use oxc::ast::{AstKind, AstType};
use oxc::semantic::Semantic;
use oxc::span::Span;

use super::{CodeErrorKind, Refusal};

const IMPORT_HINT: &str = "remove the import: each source is already a global object (for \
                           example `await github.searchIssues({ q })`), and `hub.search` finds \
                           more tools";

/// Refuses what needs a module system: `import`, `export … from`, `import()`, `import.meta`.
pub(super) fn refuse_modules(program: &Program<'_>, semantic: &Semantic<'_>) -> Result<(), Refusal> {
    let refuse = |span: Span, message: &str| Refusal {
        kind: CodeErrorKind::Import,
        message: message.into(),
        offset: span.start,
        hint: IMPORT_HINT.into(),
    };
    for statement in &program.body {
        match statement {
            Statement::ImportDeclaration(import) if import.import_kind.is_value() => {
                return Err(refuse(
                    import.span,
                    "`import` is not available: the code is the body of one async function, \
                     not a module",
                ));
            }
            Statement::ExportAllDeclaration(export) if export.export_kind.is_value() => {
                return Err(refuse(export.span, "`export … from` is not available: there are no modules"));
            }
            Statement::ExportFromDeclaration(export) if export.export_kind.is_value() => {
                return Err(refuse(export.span, "`export … from` is not available: there are no modules"));
            }
            Statement::TSImportEqualsDeclaration(import)
                if matches!(import.module_reference, TSModuleReference::ExternalModuleReference(_)) =>
            {
                return Err(refuse(
                    import.span,
                    "`import … = require(…)` is not available: there are no modules",
                ));
            }
            _ => {}
        }
    }
    for node in semantic.nodes().iter() {
        match node.kind() {
            AstKind::ImportExpression(import) => {
                return Err(refuse(import.span, "dynamic `import()` is not available in the sandbox"));
            }
            AstKind::ImportMeta(meta) => {
                return Err(refuse(meta.span, "`import.meta` is not available: the code is not a module"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// True for syntax that only TypeScript has: a node type of its own, or a TypeScript flag on a
/// JavaScript node (`x?`, `private`, `declare`, `abstract`, `!:`, overload signatures).
///
/// `AstType` lists the TypeScript node types together; oxc is pinned to one version, and the
/// tests in `tests/it/code.rs` notice if the order moves.
pub(super) fn is_typescript(kind: AstKind<'_>) -> bool {
    let ty = kind.ty() as u8;
    if (AstType::TSThisParameter as u8..=AstType::TSNonNullExpression as u8).contains(&ty)
        || ty == AstType::TSExportAssignment as u8
        || ty == AstType::TSNamespaceExportDeclaration as u8
        || ty == AstType::TSInstantiationExpression as u8
    {
        return true;
    }
    match kind {
        AstKind::FormalParameter(parameter) => {
            parameter.optional
                || parameter.accessibility.is_some()
                || parameter.readonly
                || parameter.r#override
        }
        AstKind::Function(function) => {
            function.declare
                || matches!(
                    function.r#type,
                    FunctionType::TSDeclareFunction | FunctionType::TSEmptyBodyFunctionExpression
                )
        }
        AstKind::Class(class) => class.r#abstract || class.declare,
        AstKind::PropertyDefinition(property) => {
            property.declare
                || property.optional
                || property.definite
                || property.readonly
                || property.r#override
                || property.accessibility.is_some()
                || property.r#type == PropertyDefinitionType::TSAbstractPropertyDefinition
        }
        AstKind::MethodDefinition(method) => {
            method.optional
                || method.r#override
                || method.accessibility.is_some()
                || method.r#type == MethodDefinitionType::TSAbstractMethodDefinition
        }
        AstKind::AccessorProperty(accessor) => {
            accessor.definite || accessor.r#override || accessor.accessibility.is_some()
        }
        AstKind::VariableDeclaration(declaration) => declaration.declare,
        AstKind::VariableDeclarator(declarator) => declarator.definite,
        _ => false,
    }
}

/// True when a `return` sits outside every function.
pub(super) fn returns_at_top_level(semantic: &Semantic<'_>) -> bool {
    let nodes = semantic.nodes();
    nodes.iter().any(|node| {
        matches!(node.kind(), AstKind::ReturnStatement(_))
            && !nodes
                .ancestor_kinds(node.id())
                .any(|kind| matches!(kind, AstKind::Function(_) | AstKind::ArrowFunctionExpression(_)))
    })
}

/// Statements that do nothing where they stand: skipped when looking for the final statement.
pub(super) fn is_passive(statement: &Statement<'_>) -> bool {
    match statement {
        Statement::FunctionDeclaration(_)
        | Statement::TSTypeAliasDeclaration(_)
        | Statement::TSInterfaceDeclaration(_)
        | Statement::EmptyStatement(_)
        | Statement::ImportDeclaration(_)
        | Statement::ExportAllDeclaration(_)
        | Statement::ExportFromDeclaration(_)
        | Statement::ExportNamedDeclaration(_)
        | Statement::TSNamespaceExportDeclaration(_) => true,
        Statement::VariableDeclaration(declaration) => declaration.declare,
        Statement::ExportDeclaration(export) => {
            use oxc::ast::ast::Declaration;
            matches!(
                export.declaration,
                Declaration::FunctionDeclaration(_)
                    | Declaration::TSTypeAliasDeclaration(_)
                    | Declaration::TSInterfaceDeclaration(_)
            )
        }
        Statement::ExportDefaultDeclaration(export) => {
            matches!(
                &export.declaration,
                ExportDefaultDeclarationKind::FunctionDeclaration(function) if function.id.is_some()
            ) || matches!(export.declaration, ExportDefaultDeclarationKind::TSInterfaceDeclaration(_))
        }
        _ => false,
    }
}

/// Statements that only declare: a program of these alone may have a lone function to call.
pub(super) fn is_declaration(statement: &Statement<'_>) -> bool {
    is_passive(statement)
        || matches!(
            statement,
            Statement::VariableDeclaration(_)
                | Statement::ClassDeclaration(_)
                | Statement::TSEnumDeclaration(_)
                | Statement::ExportDeclaration(_)
        )
}

/// Whether a final expression statement is worth returning. Assignments, updates, `void`,
/// `delete` and `console` calls are there for their effect.
pub(super) fn returnable(expression: &Expression<'_>) -> bool {
    match expression.without_parentheses() {
        Expression::AssignmentExpression(_) | Expression::UpdateExpression(_) => false,
        Expression::UnaryExpression(unary) => {
            !matches!(unary.operator, UnaryOperator::Void | UnaryOperator::Delete)
        }
        Expression::AwaitExpression(inner) => !is_console_call(&inner.argument),
        expression => !is_console_call(expression),
    }
}

fn is_console_call(expression: &Expression<'_>) -> bool {
    let Expression::CallExpression(call) = expression.without_parentheses() else { return false };
    call.callee
        .get_inner_expression()
        .as_member_expression()
        .is_some_and(|member| member.object().is_specific_id("console"))
}

//! The code pipeline: what a model sends to `execute` becomes the JavaScript body the sandbox runs.
//!
//! Models send code in many shapes. [`prepare`] accepts the common ones and says what it changed:
//!
//! 1. code over the size limit is refused, with a hint to split the work;
//! 2. a Markdown fenced block (```` ```ts ````) gives up its body, and the prose around it is dropped;
//! 3. the text is parsed as a TypeScript module that may `return` and `await` at the top level;
//! 4. `export default` is unwrapped and other `export` keywords dropped; `import` is refused,
//!    because the sandbox has no modules — every source is already a global;
//! 5. a lone function that nothing calls is called, and its result returned;
//! 6. a final expression statement is returned;
//! 7. TypeScript syntax is compiled away.
//!
//! Every rewrite adds one line to [`Prepared::notices`], so the model learns what changed.
//!
//! The body keeps the model's line numbers where it can. JavaScript that needs no rewrite comes
//! back byte for byte. Rewrites 4–6 are edits on the model's text that keep every line where it
//! was (a call to a lone function is appended as one extra line). Only TypeScript goes through a
//! printer; its source map feeds [`Prepared::lines`], so a runtime error in the body can still be
//! reported on the model's own line.
//!
//! A fence counts as Markdown unless it sits inside a `/* … */` comment of code that parses as a
//! whole.
//!
//! A dynamic `import()` and `import.meta` are refused here too, with a position, rather than
//! left to fail later inside the sandbox.
//!
//! Deeply nested code would exhaust the parser's stack, so a quick lexical scan bounds the
//! nesting before anything is parsed ([`MAX_NESTING`]).

mod depth;
mod fence;
mod inspect;
mod rewrite;
mod strip;

use std::fmt;

use oxc::allocator::Allocator;
use oxc::diagnostics::OxcDiagnostic;
use oxc::parser::{ParseOptions, Parser};
use oxc::semantic::SemanticBuilder;
use oxc::span::SourceType;

pub use depth::MAX_NESTING;

/// Default for `max_bytes`: the largest code one `execute` accepts.
pub const DEFAULT_MAX_BYTES: usize = 64 * 1024;

/// Code ready for the sandbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Prepared {
    /// JavaScript to run as the body of an async function: it may `await` and `return` at the top
    /// level. The sandbox driver wraps it as `(async () => {\n<body>\n})()`.
    pub body: String,
    /// One short line per rewrite, in the order the rewrites ran; empty when the code ran as sent.
    pub notices: Vec<String>,
    /// Where each line of `body` came from in the text the model sent.
    pub lines: LineMap,
}

impl Prepared {
    /// The line of the model's text that `body_line` (1-based, counted in `body`) came from.
    pub fn original_line(&self, body_line: u32) -> Option<u32> {
        self.lines.original_line(body_line)
    }
}

/// For each line of a prepared body, the line of the model's text it came from (both 1-based).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct LineMap {
    origin: Vec<u32>,
}

impl LineMap {
    /// The model's line for `body_line`, or `None` past the end of the body.
    pub fn original_line(&self, body_line: u32) -> Option<u32> {
        let index = usize::try_from(body_line.checked_sub(1)?).ok()?;
        self.origin.get(index).copied()
    }

    /// Number of body lines the map covers.
    pub fn len(&self) -> usize {
        self.origin.len()
    }

    pub fn is_empty(&self) -> bool {
        self.origin.is_empty()
    }

    /// The map as a list: entry N-1 is the model's line for body line N.
    pub fn to_vec(&self) -> Vec<u32> {
        self.origin.clone()
    }
}

/// Why code was refused, pointing at the model's own text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}{}", .message, At(*.line, *.column))]
pub struct CodeError {
    pub kind: CodeErrorKind,
    /// What is wrong, in lowercase, without a trailing period.
    pub message: String,
    /// 1-based line in the text the model sent (fence lines included), when the error has a place.
    pub line: Option<u32>,
    /// 1-based column, counted in characters.
    pub column: Option<u32>,
    /// What to do next.
    pub hint: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum CodeErrorKind {
    /// Over the byte limit.
    TooLarge,
    /// Nothing to run: blank, or comments only.
    Empty,
    /// Does not parse as JavaScript or TypeScript.
    Syntax,
    /// Uses modules: `import`, `export … from`, `import()` or `import.meta`.
    Import,
    /// Nests deeper than [`MAX_NESTING`].
    TooDeep,
    /// The only fenced blocks are in another language.
    Language,
    /// A rewrite produced code that no longer parses. A bug in this module, reported rather than
    /// hidden.
    Rewrite,
}

impl CodeErrorKind {
    /// Stable snake_case name, for error codes on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            CodeErrorKind::TooLarge => "too_large",
            CodeErrorKind::Empty => "empty",
            CodeErrorKind::Syntax => "syntax",
            CodeErrorKind::Import => "import",
            CodeErrorKind::TooDeep => "too_deep",
            CodeErrorKind::Language => "language",
            CodeErrorKind::Rewrite => "rewrite",
        }
    }
}

/// Why a program is refused, at a byte offset of the text parsed: a [`CodeError`] not yet given
/// its line and column in the model's text.
#[derive(Debug)]
struct Refusal {
    kind: CodeErrorKind,
    message: String,
    offset: u32,
    hint: String,
}

struct At(Option<u32>, Option<u32>);

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match (self.0, self.1) {
            (Some(line), Some(column)) => write!(f, " (line {line}, column {column})"),
            (Some(line), None) => write!(f, " (line {line})"),
            _ => Ok(()),
        }
    }
}

/// The hint for code that does not parse.
const SYNTAX_HINT: &str =
    "execute takes the body of an async function: statements, `await`, and a final `return`";

/// Turns what a model sent to `execute` into the body the sandbox runs. Never panics.
pub fn prepare(source: &str, max_bytes: usize) -> Result<Prepared, CodeError> {
    use std::cell::RefCell;

    use crate::recent::{MAX_KEPT_INPUT_BYTES, Recent, remembered};

    thread_local! {
        /// The last few sources prepared: preparing is a pure function of the text.
        static PREPARED: RefCell<Recent<(String, usize), Prepared>> = const { RefCell::new(Recent::new(8)) };
    }
    let work = || prepare_steps(source, max_bytes).and_then(parses_as_javascript);
    if source.len() > MAX_KEPT_INPUT_BYTES {
        return work();
    }
    remembered(&PREPARED, (source.to_owned(), max_bytes), work)
}

/// The body must also parse as JavaScript, as the sandbox parses it: the TypeScript parse lets
/// a backslash escape outside a string through (`\n<<n`, found by the `code` fuzz target).
fn parses_as_javascript(prepared: Prepared) -> Result<Prepared, CodeError> {
    let allocator = Allocator::default();
    let parsed =
        Parser::new(&allocator, &prepared.body, SourceType::mjs()).with_options(parse_options()).parse();
    let Some(error) = parsed.diagnostics.errors().next() else { return Ok(prepared) };
    let label = error.labels.iter().find(|label| label.primary()).or_else(|| error.labels.last());
    let body_line = label.and_then(|label| position(&prepared.body, label.offset() as usize).0);
    Err(CodeError {
        kind: CodeErrorKind::Syntax,
        message: format!("syntax error: {}", lowercase_first(&error.message)),
        line: body_line.and_then(|line| prepared.original_line(line)),
        column: None,
        hint: SYNTAX_HINT.to_owned(),
    })
}

fn prepare_steps(source: &str, max_bytes: usize) -> Result<Prepared, CodeError> {
    if source.len() > max_bytes {
        return Err(CodeError {
            kind: CodeErrorKind::TooLarge,
            message: format!("the code is {} bytes, over the limit of {max_bytes}", source.len()),
            line: None,
            column: None,
            hint: "split the work over several `execute` calls, and keep large data in tool \
                   results instead of the code"
                .into(),
        });
    }
    if source.trim().is_empty() {
        return Err(empty("the code is empty"));
    }
    let fences = fence::scan(source);
    match &fences {
        fence::Scan::Code(block)
            if fence::opens_with_fence(source) || !in_block_comment(source, block.outer.0) =>
        {
            return from_block(source, block);
        }
        fence::Scan::Other { info, offset } if fence::opens_with_fence(source) => {
            return Err(language(source, info, *offset));
        }
        _ => {}
    }
    match pipeline(source, Origin::whole(source), Vec::new()) {
        Err(error) if error.kind == CodeErrorKind::Syntax => match fences {
            fence::Scan::Other { info, offset } => Err(language(source, info, offset)),
            _ => Err(error),
        },
        done => done,
    }
}

/// True when byte `offset` of `source` is inside a `/* … */` comment. A fence line there is part
/// of the code, not Markdown around it.
fn in_block_comment(source: &str, offset: usize) -> bool {
    if !source.contains("/*") || depth::check(source).is_err() {
        return false;
    }
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, source, typescript()).with_options(parse_options()).parse();
    parsed
        .program
        .comments
        .iter()
        .any(|comment| (comment.span.start as usize) < offset && offset < comment.span.end as usize)
}

fn from_block(source: &str, block: &fence::Block<'_>) -> Result<Prepared, CodeError> {
    if block.body.trim().is_empty() {
        let mut error = empty("the fenced block is empty");
        (error.line, error.column) = position(source, block.start);
        return Err(error);
    }
    let origin = Origin { source, base: block.start };
    pipeline(block.body, origin, vec![block.notice(source)])
}

fn empty(message: &str) -> CodeError {
    CodeError {
        kind: CodeErrorKind::Empty,
        message: message.into(),
        line: None,
        column: None,
        hint: "send statements to run, ending with `return <value>`".into(),
    }
}

fn language(source: &str, info: &str, offset: usize) -> CodeError {
    let (line, column) = position(source, offset);
    CodeError {
        kind: CodeErrorKind::Language,
        message: format!("the code is in a ```{info} block, and execute runs JavaScript"),
        line,
        column,
        hint: "send JavaScript; TypeScript annotations are allowed and removed".into(),
    }
}

/// Where the parsed text sits inside what the model sent.
#[derive(Clone, Copy)]
struct Origin<'s> {
    source: &'s str,
    /// Byte offset of the parsed text in `source`.
    base: usize,
}

impl<'s> Origin<'s> {
    fn whole(source: &'s str) -> Self {
        Origin { source, base: 0 }
    }

    /// 1-based line and column in `source` of byte `offset` in the parsed text.
    fn position(self, offset: usize) -> (Option<u32>, Option<u32>) {
        position(self.source, self.base.saturating_add(offset))
    }

    /// The line in `source` of the parsed text's first line, minus one.
    fn line_base(self) -> u32 {
        position(self.source, self.base).0.map_or(0, |line| line - 1)
    }

    fn error(self, kind: CodeErrorKind, message: String, offset: u32, hint: String) -> CodeError {
        let (line, column) = self.position(offset as usize);
        CodeError { kind, message, line, column, hint }
    }
}

/// 1-based line and character column of byte `offset` in `text`, clamped to the text.
fn position(text: &str, offset: usize) -> (Option<u32>, Option<u32>) {
    let mut offset = offset.min(text.len());
    while !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line_start = before.rfind('\n').map_or(0, |i| i + 1);
    let line = before.bytes().filter(|&b| b == b'\n').count() + 1;
    let column = before[line_start..].chars().count() + 1;
    (u32::try_from(line).ok(), u32::try_from(column).ok())
}

/// Number of lines in `text`, counting a last line without a newline.
fn line_count(text: &str) -> u32 {
    let newlines = text.bytes().filter(|&b| b == b'\n').count();
    let lines = if text.ends_with('\n') { newlines } else { newlines + 1 };
    u32::try_from(lines).unwrap_or(u32::MAX)
}

fn parse_options() -> ParseOptions {
    ParseOptions { allow_return_outside_function: true, ..ParseOptions::default() }
}

fn typescript() -> SourceType {
    SourceType::ts().with_module(true)
}

/// Steps 3–7 on the chosen text.
fn pipeline(text: &str, origin: Origin<'_>, mut notices: Vec<String>) -> Result<Prepared, CodeError> {
    if let Err(deep) = depth::check(text) {
        return Err(origin.error(
            CodeErrorKind::TooDeep,
            format!("the code nests more than {MAX_NESTING} levels deep"),
            deep.offset,
            "split long expressions and deeply nested calls into statements with intermediate \
             variables"
                .into(),
        ));
    }
    let allocator = Allocator::default();
    let parsed = Parser::new(&allocator, text, typescript()).with_options(parse_options()).parse();
    if let Some(error) = parsed.diagnostics.errors().next() {
        return Err(syntax(origin, error));
    }
    let mut program = parsed.program;
    if program.body.is_empty() && program.directives.is_empty() {
        return Err(empty("the code has no statements, only comments"));
    }
    let line_base = origin.line_base();
    let (plan, scoping) = {
        let built = SemanticBuilder::new()
            .with_check_syntax_error(true)
            .with_build_nodes(true)
            .with_enum_eval(true)
            .build(&program);
        if let Some(error) = built.diagnostics.errors().next() {
            return Err(syntax(origin, error));
        }
        let plan = rewrite::plan(text, line_base, &program, &built.semantic)
            .map_err(|refusal| origin.error(refusal.kind, refusal.message, refusal.offset, refusal.hint))?;
        (plan, built.semantic.into_scoping())
    };
    notices.extend(plan.notices.iter().cloned());
    let edited = plan.apply(text);
    let text_lines = line_count(text);
    let to_original = |edited_line: u32| {
        if edited_line <= text_lines {
            line_base + edited_line
        } else {
            line_base + plan.appended_for.unwrap_or(text_lines)
        }
    };

    if !plan.typescript {
        let lines = (1..=line_count(&edited)).map(to_original).collect();
        return Ok(Prepared { body: edited, notices, lines: LineMap { origin: lines } });
    }
    // TypeScript: edit the tree already parsed when every rewrite has a tree form, else parse the
    // edited text again.
    let mut scoping = scoping;
    let stripped = match &plan.tree {
        Some(edits) if strip::apply_tree(&allocator, &mut program, &mut scoping, edits).is_some() => {
            strip::to_javascript(&allocator, &mut program, scoping)
        }
        _ => {
            drop(scoping);
            strip::reparse_to_javascript(&edited)
        }
    };
    let stripped = stripped.map_err(|error| CodeError {
        kind: CodeErrorKind::Rewrite,
        message: format!("could not rewrite the code: {}", lowercase_first(&error.message)),
        line: None,
        column: None,
        hint: "send plain statements that end with `return <value>`".into(),
    })?;
    notices.push("removed TypeScript type annotations".into());
    let lines = stripped.source_lines.iter().map(|&line| to_original(line)).collect();
    Ok(Prepared { body: stripped.code, notices, lines: LineMap { origin: lines } })
}

fn syntax(origin: Origin<'_>, error: &OxcDiagnostic) -> CodeError {
    let label = error.labels.iter().find(|label| label.primary()).or_else(|| error.labels.last());
    let (line, column) = label.map_or((None, None), |label| origin.position(label.offset() as usize));
    CodeError {
        kind: CodeErrorKind::Syntax,
        message: format!("syntax error: {}", lowercase_first(&error.message)),
        line,
        column,
        hint: error.help.as_deref().map_or_else(|| SYNTAX_HINT.to_owned(), lowercase_first),
    }
}

fn lowercase_first(text: &str) -> String {
    let trimmed = text.trim_end_matches('.');
    let mut chars = trimmed.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check_position(text: &str, offset: usize, expect: Expect) {
        expect.assert_eq(&format!("{:?}", position(text, offset)));
    }

    #[test]
    fn positions_count_lines_and_characters() {
        check_position("ab\ncd", 0, expect!["(Some(1), Some(1))"]);
        check_position("ab\ncd", 4, expect!["(Some(2), Some(2))"]);
        check_position("é\né", 5, expect!["(Some(2), Some(2))"]);
        // Inside a multi-byte character: the start of that character.
        check_position("éé", 3, expect!["(Some(1), Some(2))"]);
        check_position("ab", 99, expect!["(Some(1), Some(3))"]);
    }

    #[test]
    fn line_counts() {
        assert_eq!(line_count(""), 1);
        assert_eq!(line_count("a"), 1);
        assert_eq!(line_count("a\n"), 1);
        assert_eq!(line_count("a\nb"), 2);
    }

    #[test]
    fn errors_display_their_place() {
        let error = CodeError {
            kind: CodeErrorKind::Syntax,
            message: "syntax error: unexpected token".into(),
            line: Some(3),
            column: Some(7),
            hint: SYNTAX_HINT.into(),
        };
        expect!["syntax error: unexpected token (line 3, column 7)"].assert_eq(&error.to_string());
        assert_eq!(CodeErrorKind::TooDeep.as_str(), "too_deep");
    }
}

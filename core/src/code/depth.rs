//! A lexical bound on how deeply code nests, checked before the parser sees it.
//!
//! oxc's parser, semantic pass, transformer and printer all recurse over the syntax tree, and
//! none has a depth limit: `((((…))))` or `1+1+1+…` a few thousand levels deep overflows the
//! stack, which aborts the process rather than panicking. The worst case is small: a test thread
//! (2 MiB) in a debug build manages about 500 nested parentheses or 1,000 chained operators, and
//! a release build on wasm32 (1 MiB) about the same.
//!
//! So this scan, linear and allocation-light, estimates the depth of the tree from tokens. Each
//! open bracket counts two, and each operator one until the expression it belongs to ends (a
//! comma, a semicolon, a `case`, or a line break where a statement can end). A closed bracket
//! leaves one behind, for the call, member access or literal it was part of. The estimate errs
//! high: real code stays far below [`MAX_NESTING`], while any input that could overflow goes
//! over it.

/// The largest nesting estimate accepted.
pub const MAX_NESTING: usize = 512;

const BRACKET: usize = 2;

/// Where the estimate first went over [`MAX_NESTING`].
#[derive(Debug, PartialEq, Eq)]
pub(super) struct TooDeep {
    pub offset: u32,
}

/// Checks that `text` nests no deeper than [`MAX_NESTING`].
pub(super) fn check(text: &str) -> Result<(), TooDeep> {
    Scanner::new(text).run()
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Open {
    Root,
    Paren {
        control: bool,
    },
    Bracket,
    Brace {
        block: bool,
    },
    /// `${` inside a template literal.
    Substitution,
}

struct Frame {
    open: Open,
    /// Operators counted in the expression this frame is in the middle of.
    chain: usize,
    /// `<` not yet matched by `>`: type arguments a comma must not end.
    angles: usize,
}

/// What the previous token says about the next one.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Prev {
    /// Start of text, an operator, an open bracket, a keyword that takes an operand: a `/` here
    /// starts a regular expression.
    Operator,
    /// An identifier, literal, or closing bracket of an expression: a `/` divides, and a line
    /// break may end the statement.
    Operand,
    /// `)` of `if (…)`, `for (…)`, `while (…)`, `with (…)`: a statement follows.
    Control,
    /// `}` of a block or function body: a `/` starts a regular expression, and a statement may
    /// follow.
    BlockEnd,
}

struct Scanner<'t> {
    bytes: &'t [u8],
    at: usize,
    frames: Vec<Frame>,
    /// Sum of all frames' chains plus [`BRACKET`] per open bracket.
    total: usize,
    prev: Prev,
    /// The previous token lets the next `{` open a block (`)`, `=>`, `;`, `else`, …).
    block_next: bool,
    /// The previous token was `if`, `for`, `while` or `with`.
    control_next: bool,
    /// The previous token was `;`: the chain resets unless `else` follows.
    reset_pending: bool,
    /// The previous token was `.` or `?.`: a word is a property name, not a keyword.
    after_dot: bool,
    newline: bool,
}

impl<'t> Scanner<'t> {
    fn new(text: &'t str) -> Self {
        Scanner {
            bytes: text.as_bytes(),
            at: 0,
            frames: vec![Frame { open: Open::Root, chain: 0, angles: 0 }],
            total: 0,
            prev: Prev::Operator,
            block_next: true,
            control_next: false,
            reset_pending: false,
            after_dot: false,
            newline: false,
        }
    }

    fn peek(&self, ahead: usize) -> u8 {
        self.bytes.get(self.at + ahead).copied().unwrap_or(0)
    }

    fn run(mut self) -> Result<(), TooDeep> {
        while self.at < self.bytes.len() {
            let byte = self.bytes[self.at];
            match byte {
                b'\n' | b'\r' => {
                    self.newline = true;
                    self.at += 1;
                }
                b' ' | b'\t' | 0x0b | 0x0c => {
                    self.at += 1;
                    while matches!(self.bytes.get(self.at), Some(b' ' | b'\t')) {
                        self.at += 1;
                    }
                }
                b'/' if self.peek(1) == b'/' => self.skip_line(),
                b'/' if self.peek(1) == b'*' => self.skip_block_comment(),
                _ => self.token(byte)?,
            }
        }
        Ok(())
    }

    fn token(&mut self, byte: u8) -> Result<(), TooDeep> {
        let start = self.at;
        // After `.` a word is a property name, whatever it spells.
        let word = if is_ident_start(byte) {
            let word = self.word();
            Some(if self.after_dot { PLAIN } else { classify(word) })
        } else {
            None
        };
        self.settle_resets(byte, word);
        let after_dot = std::mem::take(&mut self.after_dot);
        match (byte, word) {
            (_, Some(_)) if after_dot => self.operand(),
            (_, Some(word)) => self.keyword_or_identifier(word, start)?,
            (b'\'' | b'"', _) => {
                self.skip_string(byte);
                self.operand();
            }
            (b'`', _) => {
                if self.prev == Prev::Operand {
                    // A tagged template: one more level, like a call.
                    self.count(1, start)?;
                }
                self.at += 1;
                self.template()?;
            }
            (b'0'..=b'9', _) => {
                self.skip_number();
                self.operand();
            }
            (b'.', _) if self.peek(1).is_ascii_digit() => {
                self.skip_number();
                self.operand();
            }
            (b'/', _) if self.prev != Prev::Operand => {
                self.skip_regex();
                self.operand();
            }
            (b'(' | b'[' | b'{', _) => self.open(byte, start)?,
            (b')' | b']' | b'}', _) => {
                self.at += 1;
                self.close()?;
            }
            (b',', _) => {
                // Siblings: arguments, elements, properties. Type arguments still open stay.
                self.at += 1;
                let angles = self.frames_top().angles;
                self.reset_to(angles);
                self.after_operator(false);
            }
            (b';', _) => {
                self.at += 1;
                self.reset_pending = true;
                self.after_operator(true);
            }
            _ => self.punctuator(start)?,
        }
        Ok(())
    }

    /// `(`, `[` or `{`: a paren after `if`, `for`, `while` or `with` is a control one, and a brace
    /// where a block may start is a block.
    fn open(&mut self, byte: u8, start: usize) -> Result<(), TooDeep> {
        self.at += 1;
        let open = match byte {
            b'(' => Open::Paren { control: self.control_next },
            b'[' => Open::Bracket,
            _ => Open::Brace { block: self.block_next },
        };
        self.push(open, start)
    }

    /// An operator or other punctuator: one level for the expression it belongs to. `<` and
    /// `>` also track type arguments, which a comma must not end.
    fn punctuator(&mut self, start: usize) -> Result<(), TooDeep> {
        let len = punctuator_len(&self.bytes[self.at..]);
        let op = &self.bytes[self.at..self.at + len];
        self.at += len;
        self.count(1, start)?;
        match op {
            b"++" | b"--" => self.operand(),
            b"<" => {
                self.frames_top().angles += 1;
                self.after_operator(false);
            }
            b">" | b">>" | b">>>" => {
                let top = self.frames_top();
                top.angles = top.angles.saturating_sub(op.len());
                self.after_operator(false);
            }
            _ => self.after_operator(op == b"=>"),
        }
        self.after_dot = op == b"." || op == b"?.";
        Ok(())
    }

    /// Applies a reset left by `;`, by a line break where a statement could end, or by a block
    /// followed by the next statement, now that the next token is known.
    fn settle_resets(&mut self, byte: u8, word: Option<Word>) {
        let continues = match word {
            Some(word) => self.after_dot || word.continuing,
            None => {
                !matches!(byte, b'!' | b'~' | b'{' | b'}' | b'\'' | b'"' | b'@' | b'#')
                    && !byte.is_ascii_digit()
            }
        };
        let else_follows = word.is_some_and(|word| word.else_branch);
        let statement_ends = (self.reset_pending && !else_follows)
            || (self.newline && matches!(self.prev, Prev::Operand | Prev::BlockEnd) && !continues)
            || (self.prev == Prev::BlockEnd && (word.is_some() || byte == b'{') && !continues);
        if statement_ends {
            self.reset_to(0);
            self.frames_top().angles = 0;
        }
        self.reset_pending = false;
        self.newline = false;
    }

    fn keyword_or_identifier(&mut self, word: Word, start: usize) -> Result<(), TooDeep> {
        if word.case {
            self.reset_to(0);
        }
        if word.operator {
            self.count(1, start)?;
        }
        if word.regex {
            self.after_operator(word.block);
            self.control_next = word.control;
        } else {
            self.operand();
            self.block_next = true;
        }
        Ok(())
    }

    fn frames_top(&mut self) -> &mut Frame {
        let last = self.frames.len() - 1;
        &mut self.frames[last]
    }

    fn operand(&mut self) {
        self.prev = Prev::Operand;
        self.block_next = false;
        self.control_next = false;
    }

    fn after_operator(&mut self, block_next: bool) {
        self.prev = Prev::Operator;
        self.block_next = block_next;
        self.control_next = false;
    }

    fn count(&mut self, n: usize, offset: usize) -> Result<(), TooDeep> {
        self.frames_top().chain += n;
        self.total += n;
        self.guard(offset)
    }

    fn guard(&self, offset: usize) -> Result<(), TooDeep> {
        if self.total > MAX_NESTING {
            return Err(TooDeep { offset: u32::try_from(offset).unwrap_or(u32::MAX) });
        }
        Ok(())
    }

    /// Ends the current expression: its chain drops to `keep`.
    fn reset_to(&mut self, keep: usize) {
        let top = self.frames_top();
        let dropped = top.chain.saturating_sub(keep);
        top.chain -= dropped;
        self.total -= dropped;
    }

    fn push(&mut self, open: Open, offset: usize) -> Result<(), TooDeep> {
        self.frames.push(Frame { open, chain: 0, angles: 0 });
        self.total += BRACKET;
        self.after_operator(matches!(open, Open::Brace { block: true }));
        self.guard(offset)
    }

    /// Closes the innermost bracket. Unbalanced closers are left to the parser to report.
    fn close(&mut self) -> Result<(), TooDeep> {
        if self.frames.len() == 1 {
            self.operand();
            return Ok(());
        }
        let Some(frame) = self.frames.pop() else { return Ok(()) };
        self.total -= frame.chain + BRACKET;
        match frame.open {
            Open::Substitution => return self.template(),
            Open::Paren { control: true } => {
                self.prev = Prev::Control;
                self.block_next = true;
                self.control_next = false;
            }
            Open::Brace { block: true } => {
                self.prev = Prev::BlockEnd;
                self.block_next = true;
                self.control_next = false;
            }
            Open::Paren { control: false } => {
                // `f(…) {` is a function body.
                self.operand();
                self.block_next = true;
                self.count(1, self.at.saturating_sub(1))?;
            }
            Open::Root | Open::Bracket | Open::Brace { block: false } => {
                self.operand();
                self.count(1, self.at.saturating_sub(1))?;
            }
        }
        Ok(())
    }

    /// Scans template text after a backtick or after the `}` closing a substitution.
    fn template(&mut self) -> Result<(), TooDeep> {
        while self.at < self.bytes.len() {
            match self.bytes[self.at] {
                b'\\' => self.at += 2,
                b'`' => {
                    self.at += 1;
                    self.operand();
                    return Ok(());
                }
                b'$' if self.peek(1) == b'{' => {
                    let start = self.at;
                    self.at += 2;
                    return self.push(Open::Substitution, start);
                }
                _ => self.at += 1,
            }
        }
        self.operand();
        Ok(())
    }

    fn word(&mut self) -> &'t [u8] {
        let start = self.at;
        while self.at < self.bytes.len() && is_ident_part(self.bytes[self.at]) {
            self.at += 1;
        }
        &self.bytes[start..self.at]
    }

    fn skip_line(&mut self) {
        while self.at < self.bytes.len() && self.bytes[self.at] != b'\n' {
            self.at += 1;
        }
    }

    fn skip_block_comment(&mut self) {
        self.at += 2;
        while self.at < self.bytes.len() {
            if self.bytes[self.at] == b'*' && self.peek(1) == b'/' {
                self.at += 2;
                return;
            }
            if self.bytes[self.at] == b'\n' {
                self.newline = true;
            }
            self.at += 1;
        }
    }

    /// Skips a string literal; an unterminated one ends at the line break.
    fn skip_string(&mut self, quote: u8) {
        self.at += 1;
        while self.at < self.bytes.len() {
            match self.bytes[self.at] {
                b'\\' => self.at += 2,
                b'\n' => return,
                byte => {
                    self.at += 1;
                    if byte == quote {
                        return;
                    }
                }
            }
        }
    }

    fn skip_number(&mut self) {
        while self.at < self.bytes.len() {
            let byte = self.bytes[self.at];
            if byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'.' {
                self.at += 1;
            } else {
                return;
            }
        }
    }

    /// Skips a regular expression literal; one never spans a line break.
    fn skip_regex(&mut self) {
        self.at += 1;
        let mut class = false;
        while self.at < self.bytes.len() {
            match self.bytes[self.at] {
                b'\\' => self.at += 2,
                b'\n' => return,
                b'[' => {
                    class = true;
                    self.at += 1;
                }
                b']' => {
                    class = false;
                    self.at += 1;
                }
                b'/' if !class => {
                    self.at += 1;
                    self.word();
                    return;
                }
                _ => self.at += 1,
            }
        }
    }
}

/// What a word means to the scan.
#[derive(Clone, Copy, PartialEq, Eq)]
struct Word {
    /// Nests what follows (`typeof`, `await`, `if`, `as`, …): counted like an operator.
    operator: bool,
    /// A `/` after it starts a regular expression.
    regex: bool,
    /// A `{` after it opens a block.
    block: bool,
    /// Its `(…)` is followed by a statement.
    control: bool,
    /// Continues the expression before a line break.
    continuing: bool,
    /// Starts a `switch` case: the expression before it is over.
    case: bool,
    /// `else`: the `if` before it is not over, even after a `;`.
    else_branch: bool,
}

const PLAIN: Word = Word {
    operator: false,
    regex: false,
    block: false,
    control: false,
    continuing: false,
    case: false,
    else_branch: false,
};

fn classify(word: &[u8]) -> Word {
    let operator = Word { operator: true, regex: true, ..PLAIN };
    match word {
        b"typeof" | b"void" | b"delete" | b"await" | b"new" | b"yield" | b"keyof" | b"infer" => operator,
        b"in" | b"instanceof" | b"as" | b"satisfies" | b"extends" => Word { continuing: true, ..operator },
        b"if" | b"for" | b"while" | b"with" => Word { control: true, ..operator },
        b"else" => Word { block: true, continuing: true, else_branch: true, ..operator },
        b"do" => Word { block: true, ..operator },
        b"return" | b"throw" | b"of" => Word { regex: true, ..PLAIN },
        b"try" => Word { regex: true, block: true, ..PLAIN },
        b"finally" => Word { regex: true, block: true, continuing: true, ..PLAIN },
        b"catch" => Word { continuing: true, ..PLAIN },
        b"case" | b"default" => Word { regex: true, case: true, ..PLAIN },
        _ => PLAIN,
    }
}

/// Length of the punctuator at the start of `rest`, longest match first; any other byte is one.
fn punctuator_len(rest: &[u8]) -> usize {
    let at = |i: usize| rest.get(i).copied().unwrap_or(0);
    let (first, second, third) = (at(0), at(1), at(2));
    match (first, second) {
        (b'>', b'>') if third == b'>' => {
            if at(3) == b'=' {
                4
            } else {
                3
            }
        }
        (b'.', b'.') if third == b'.' => 3,
        (b'=' | b'!', b'=') if third == b'=' => 3,
        (b'*', b'*') | (b'<', b'<') | (b'>', b'>') | (b'&', b'&') | (b'|', b'|') | (b'?', b'?')
            if third == b'=' =>
        {
            3
        }
        (b'=', b'>')
        | (b'=' | b'!' | b'<' | b'>' | b'+' | b'-' | b'*' | b'/' | b'%' | b'&' | b'|' | b'^', b'=')
        | (b'&', b'&')
        | (b'|', b'|')
        | (b'?', b'?' | b'.')
        | (b'+', b'+')
        | (b'-', b'-')
        | (b'*', b'*')
        | (b'<', b'<')
        | (b'>', b'>') => 2,
        _ => 1,
    }
}

fn is_ident_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || matches!(byte, b'_' | b'$' | b'\\') || byte >= 0x80
}

fn is_ident_part(byte: u8) -> bool {
    is_ident_start(byte) || byte.is_ascii_digit()
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    /// `ok`, or the offset where the estimate went over the limit.
    fn check(text: &str, expect: Expect) {
        let shown = match super::check(text) {
            Ok(()) => "ok".to_owned(),
            Err(deep) => format!("too deep at {}", deep.offset),
        };
        expect.assert_eq(&shown);
    }

    #[test]
    fn ordinary_code_passes() {
        check("const a = await github.searchIssues({ q: 'x' });\nreturn a.items", expect!["ok"]);
        let many_lines = "x = x + 1\n".repeat(5_000);
        check(&many_lines, expect!["ok"]);
        let many_statements = "if (a) { b(c.d, e[f]) } else { g() }\n".repeat(2_000);
        check(&many_statements, expect!["ok"]);
        let big_literal = format!("const data = [{}]", "{ a: 1, b: [2, 3] },".repeat(3_000));
        check(&big_literal, expect!["ok"]);
        // Brackets inside strings, comments, templates and regular expressions do not count.
        let hidden =
            "const s = '((((('; // ((((\n/* (((( */ const r = /\\((((/; const t = `((((`\n".repeat(200);
        check(&hidden, expect!["ok"]);
    }

    #[test]
    fn deep_nesting_fails() {
        check(&format!("{}1{}", "(".repeat(300), ")".repeat(300)), expect!["too deep at 256"]);
        check(&format!("1{}", "+1".repeat(600)), expect!["too deep at 1025"]);
        check(&format!("{}x", "!".repeat(600)), expect!["too deep at 512"]);
        check(&format!("a{}", "()".repeat(600)), expect!["too deep at 1023"]);
        check(&format!("a{}", "\n.b".repeat(600)), expect!["too deep at 1538"]);
        check(&"if (a) b; else ".repeat(600), expect!["too deep at 3828"]);
        check(&format!("`{}", "${`".repeat(300)), expect!["too deep at 769"]);
        check(&format!("{}1", "a ? 1 : ".repeat(600)), expect!["too deep at 2050"]);
    }
}

//! Markdown fences: finding the code a model wrapped in ```` ```ts ```` … ```` ``` ````.

/// Info strings taken as JavaScript or TypeScript (the first word, any case). Empty counts too.
const CODE_LANGUAGES: &[&str] =
    &["js", "javascript", "ts", "typescript", "jsx", "tsx", "mjs", "cjs", "mts", "cts", "es6", "node"];

/// The fenced block the pipeline takes.
#[derive(Debug, PartialEq, Eq)]
pub(super) struct Block<'s> {
    /// The text between the fence lines.
    pub body: &'s str,
    /// Byte offset of `body` in the source.
    pub start: usize,
    /// The fence as written (```` ``` ```` or `~~~`) and its info string.
    pub fence: &'s str,
    pub info: &'s str,
    /// JavaScript or TypeScript blocks in the source, this one included.
    pub blocks: usize,
    /// Byte range of the whole block, fences included.
    pub outer: (usize, usize),
}

impl Block<'_> {
    /// The notice saying where the code came from.
    pub fn notice(&self, source: &str) -> String {
        let fence = format!("{}{}", self.fence, self.info);
        if self.blocks > 1 {
            return format!(
                "took the code from the first of {} fenced blocks ({fence}) and ignored the rest",
                self.blocks
            );
        }
        let (from, to) = self.outer;
        let prose = !source[..from].trim().is_empty() || !source[to..].trim().is_empty();
        if prose {
            format!("took the code from the {fence} fenced block and dropped the text around it")
        } else {
            format!("took the code from the {fence} fenced block")
        }
    }
}

#[derive(Debug, PartialEq, Eq)]
pub(super) enum Scan<'s> {
    /// No fence line at all.
    None,
    /// The first JavaScript or TypeScript block.
    Code(Block<'s>),
    /// Only blocks in other languages; the first one's info string and offset.
    Other { info: &'s str, offset: usize },
}

/// True when the first line that is not blank opens a fence.
pub(super) fn opens_with_fence(source: &str) -> bool {
    lines(source).find(|line| !line.text.trim().is_empty()).is_some_and(|line| opening(line.text).is_some())
}

/// Finds the fenced blocks in `source`.
pub(super) fn scan(source: &str) -> Scan<'_> {
    let mut found: Option<Block<'_>> = None;
    let mut other: Option<(&str, usize)> = None;
    let mut blocks = 0;
    let mut lines = lines(source);
    while let Some(line) = lines.next() {
        let Some((fence, info)) = opening(line.text) else { continue };
        let start = line.end;
        let mut end = source.len();
        let mut outer_end = source.len();
        for inner in lines.by_ref() {
            if closes(inner.text, fence) {
                end = inner.start;
                outer_end = inner.end;
                break;
            }
        }
        if !is_code(info) {
            other.get_or_insert((info, line.start));
            continue;
        }
        blocks += 1;
        if found.is_none() {
            found = Some(Block {
                body: &source[start..end],
                start,
                fence,
                info,
                blocks: 0,
                outer: (line.start, outer_end),
            });
        }
    }
    match (found, other) {
        (Some(block), _) => Scan::Code(Block { blocks, ..block }),
        (None, Some((info, offset))) => Scan::Other { info, offset },
        (None, None) => Scan::None,
    }
}

struct Line<'s> {
    /// The line without its line break.
    text: &'s str,
    /// Byte offset of the line's start.
    start: usize,
    /// Byte offset just past the line break (or the end of the source).
    end: usize,
}

fn lines(source: &str) -> impl Iterator<Item = Line<'_>> {
    let mut start = 0;
    std::iter::from_fn(move || {
        if start >= source.len() {
            return None;
        }
        let rest = &source[start..];
        let (len, end) = match rest.find('\n') {
            Some(i) => (i, start + i + 1),
            None => (rest.len(), source.len()),
        };
        let text = rest[..len].strip_suffix('\r').unwrap_or(&rest[..len]);
        let line = Line { text, start, end };
        start = end;
        Some(line)
    })
}

/// The fence and info string when `line` opens a fence: up to three spaces, then three or more
/// backticks or tildes.
fn opening(line: &str) -> Option<(&str, &str)> {
    let indent = line.len() - line.trim_start_matches(' ').len();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let mark = rest.chars().next().filter(|&c| c == '`' || c == '~')?;
    let len = rest.len() - rest.trim_start_matches(mark).len();
    if len < 3 {
        return None;
    }
    let info = rest[len..].trim();
    if mark == '`' && info.contains('`') {
        return None;
    }
    Some((&rest[..len], info))
}

/// True when `line` closes a block opened with `fence`: the same mark, at least as long, and
/// nothing after it.
fn closes(line: &str, fence: &str) -> bool {
    let Some(mark) = fence.chars().next() else { return false };
    let trimmed = line.trim();
    let indent = line.len() - line.trim_start_matches(' ').len();
    indent <= 3 && trimmed.len() >= fence.len() && trimmed.chars().all(|c| c == mark)
}

fn is_code(info: &str) -> bool {
    let word = info.split(|c: char| c.is_whitespace() || c == '{' || c == ',').next().unwrap_or("");
    word.is_empty() || CODE_LANGUAGES.iter().any(|lang| word.eq_ignore_ascii_case(lang))
}

#[cfg(test)]
mod tests {
    use expect_test::{Expect, expect};

    use super::*;

    fn check(source: &str, expect: Expect) {
        let shown = match scan(source) {
            Scan::None => "none".to_owned(),
            Scan::Other { info, offset } => format!("other {info:?} at {offset}"),
            Scan::Code(block) => format!(
                "body {:?} at {}, {} block(s), notice: {}",
                block.body,
                block.start,
                block.blocks,
                block.notice(source)
            ),
        };
        expect.assert_eq(&format!("opens={} {shown}", opens_with_fence(source)));
    }

    #[test]
    fn fences() {
        check("return 1", expect!["opens=false none"]);
        check(
            "```ts\nreturn 1\n```",
            expect![[
                r#"opens=true body "return 1\n" at 6, 1 block(s), notice: took the code from the ```ts fenced block"#
            ]],
        );
        check(
            "Here you go:\n\n```js\nreturn 1\n```\nThis returns one.",
            expect![[
                r#"opens=false body "return 1\n" at 20, 1 block(s), notice: took the code from the ```js fenced block and dropped the text around it"#
            ]],
        );
        check(
            "```\nreturn 1\n```\n```ts\nreturn 2\n```\n",
            expect![[
                r#"opens=true body "return 1\n" at 4, 2 block(s), notice: took the code from the first of 2 fenced blocks (```) and ignored the rest"#
            ]],
        );
        check(
            "```bash\nnpm i\n```\n```typescript\nreturn 2\n```",
            expect![[
                r#"opens=true body "return 2\n" at 32, 1 block(s), notice: took the code from the ```typescript fenced block and dropped the text around it"#
            ]],
        );
        check("```python\nprint(1)\n```", expect![[r#"opens=true other "python" at 0"#]]);
        // No closing fence: the block runs to the end.
        check(
            "  ~~~~JavaScript\r\nreturn 1\r\n",
            expect![[
                r#"opens=true body "return 1\r\n" at 18, 1 block(s), notice: took the code from the ~~~~JavaScript fenced block"#
            ]],
        );
        // A shorter fence inside does not close a longer one.
        check(
            "````ts\nconst s = `\n```\n`\n````",
            expect![[
                r#"opens=true body "const s = `\n```\n`\n" at 7, 1 block(s), notice: took the code from the ````ts fenced block"#
            ]],
        );
        check("``not a fence``", expect!["opens=false none"]);
    }
}

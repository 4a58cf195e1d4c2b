//! Fenced code blocks highlighted at build time: syntect's grammars (with two-face's extra set,
//! which has TOML and TypeScript) turn the code into spans named by scope (`hl-string`,
//! `hl-comment`, …), and `site/assets/site.css` colours those names for the light and the dark
//! theme. No inline styles, no script; the twins keep the plain fenced code.

use std::sync::OnceLock;

use anyhow::{Context, Result};
use syntect::html::{ClassStyle, ClassedHTMLGenerator};
use syntect::parsing::{SyntaxReference, SyntaxSet};
use syntect::util::LinesWithEndings;

/// The prefix of every class the highlighter writes; the stylesheet uses the same.
const STYLE: ClassStyle = ClassStyle::SpacedPrefixed { prefix: "hl-" };

fn syntaxes() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(two_face::syntax::extra_newlines)
}

/// The grammar for a fence's info string, if it is one the site highlights.
fn syntax(lang: &str) -> Option<&'static SyntaxReference> {
    let token = match lang.split_whitespace().next()? {
        "sh" | "shell" | "bash" | "console" => "sh",
        "json" | "jsonc" => "json",
        "js" | "javascript" | "mjs" => "js",
        "ts" | "typescript" => "ts",
        "toml" => "toml",
        "rust" | "rs" => "rs",
        "yaml" | "yml" => "yaml",
        _ => return None,
    };
    syntaxes().find_syntax_by_extension(token).or_else(|| syntaxes().find_syntax_by_token(token))
}

/// `<pre><code class="language-LANG">` with highlighted spans, or `None` when the language is
/// not one the site highlights (the block is then written as pulldown-cmark writes it).
pub fn block(lang: &str, code: &str) -> Result<Option<String>> {
    let Some(syntax) = syntax(lang) else { return Ok(None) };
    let mut html = ClassedHTMLGenerator::new_with_class_style(syntax, syntaxes(), STYLE);
    for line in LinesWithEndings::from(code) {
        html.parse_html_for_line_which_includes_newline(line)
            .with_context(|| format!("highlighting a `{lang}` block"))?;
    }
    // The first word is one of the names matched above, so it needs no escaping.
    let lang = lang.split_whitespace().next().unwrap_or_default();
    Ok(Some(format!("<pre><code class=\"language-{lang}\">{}</code></pre>\n", html.finalize())))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_language_the_pages_use_has_a_grammar() {
        for lang in ["sh", "json", "js", "ts", "toml", "rust", "yaml"] {
            let html = block(lang, "x = 1\n").unwrap().unwrap_or_else(|| panic!("no grammar for `{lang}`"));
            assert!(html.contains("class=\"hl-"), "{lang}: {html}");
            assert!(!html.contains("style="), "{lang}: {html}");
        }
        assert!(block("text", "plain\n").unwrap().is_none());
        let html = block("json", "{\"a\": \"<b>\"}\n").unwrap().unwrap();
        assert!(html.contains("&lt;b&gt;") && !html.contains("<b>"), "{html}");
    }
}

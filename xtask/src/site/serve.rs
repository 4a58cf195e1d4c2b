//! `cargo xtask site --serve`: the built site on 127.0.0.1, answered as the Worker in
//! `site/worker.js` answers it — `/docs/x` from `docs/x/index.html`, its twin `docs/x.md` when
//! the request sends `Accept: text/markdown`, `Vary: Accept` on both, `404.html` otherwise.
//! For a local look and for the tests only: GET and HEAD, one request per connection.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

/// Serves `dir` on `port` until the process ends.
pub fn serve(dir: &Path, port: u16) -> Result<()> {
    let listener =
        TcpListener::bind(("127.0.0.1", port)).with_context(|| format!("binding 127.0.0.1:{port}"))?;
    eprintln!("xtask: serving {} at http://127.0.0.1:{port}/ (Ctrl-C stops)", dir.display());
    accept(listener, dir.to_owned());
    Ok(())
}

/// Serves `dir` on a free port from a background thread; returns the port (for the tests).
#[cfg(test)]
pub fn start(dir: &Path) -> Result<u16> {
    let listener = TcpListener::bind(("127.0.0.1", 0))?;
    let port = listener.local_addr()?.port();
    let dir = dir.to_owned();
    std::thread::spawn(move || accept(listener, dir));
    Ok(port)
}

fn accept(listener: TcpListener, dir: PathBuf) {
    for stream in listener.incoming().flatten() {
        let dir = dir.clone();
        std::thread::spawn(move || {
            let _ = answer(stream, &dir);
        });
    }
}

/// What a request for `path` (no query) gets: the file, its content type, whether it is a
/// page (so the answer varies by `Accept`), or `None` for a 404.
pub fn resolve(dir: &Path, path: &str, wants_markdown: bool) -> Option<(PathBuf, &'static str, bool)> {
    if path.split('/').any(|part| part == ".." || part.starts_with('.')) || !path.starts_with('/') {
        return None;
    }
    let rel = path.trim_start_matches('/').trim_end_matches('/');
    let has_extension = rel.rsplit('/').next().is_some_and(|last| last.contains('.'));
    if has_extension {
        let file = dir.join(rel);
        return file.is_file().then(|| (file.clone(), content_type(&file), false));
    }
    if wants_markdown {
        let twin = dir.join(if rel.is_empty() { "index.md".to_owned() } else { format!("{rel}.md") });
        if twin.is_file() {
            return Some((twin, "text/markdown; charset=utf-8", true));
        }
    }
    let page = if rel.is_empty() { dir.join("index.html") } else { dir.join(rel).join("index.html") };
    page.is_file().then_some((page, "text/html; charset=utf-8", true))
}

fn content_type(file: &Path) -> &'static str {
    match file.extension().and_then(|e| e.to_str()).unwrap_or_default() {
        "html" => "text/html; charset=utf-8",
        "md" => "text/markdown; charset=utf-8",
        "txt" => "text/plain; charset=utf-8",
        "json" => "application/json",
        "xml" => "application/xml",
        "css" => "text/css; charset=utf-8",
        "js" => "text/javascript; charset=utf-8",
        "svg" => "image/svg+xml",
        _ => "application/octet-stream",
    }
}

fn answer(stream: TcpStream, dir: &Path) -> Result<()> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    let mut wants_markdown = false;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':') {
            if name.eq_ignore_ascii_case("accept") && value.to_ascii_lowercase().contains("text/markdown") {
                wants_markdown = true;
            }
        }
    }
    let mut parts = request.split_whitespace();
    let method = parts.next().unwrap_or_default();
    let target = parts.next().unwrap_or("/");
    let path = target.split(['?', '#']).next().unwrap_or("/");
    let mut stream = stream;
    if method != "GET" && method != "HEAD" {
        write!(
            stream,
            "HTTP/1.1 405 Method Not Allowed\r\nAllow: GET, HEAD\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        )?;
        return Ok(());
    }
    let (status, file, kind, vary) = match resolve(dir, path, wants_markdown) {
        Some((file, kind, vary)) => ("200 OK", file, kind, vary),
        None => ("404 Not Found", dir.join("404.html"), "text/html; charset=utf-8", false),
    };
    let body = std::fs::read(&file).unwrap_or_default();
    let vary = if vary { "Vary: Accept\r\n" } else { "" };
    write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\n{vary}Connection: close\r\n\r\n",
        body.len()
    )?;
    if method == "GET" {
        stream.write_all(&body)?;
    }
    Ok(())
}

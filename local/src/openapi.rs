//! HTTP API sources from the CLI: reading an OpenAPI document (from a URL or a file, within
//! core's limits), choosing the base URL a person's calls go to, and turning the document's
//! operations into a tool list. Core reads the document (`openapi::document`); the calls
//! themselves go through the pool (`upstream/openapi.rs`).

use std::io::Read as _;
use std::path::Path;

use anyhow::{Context, Result, bail};
use capabilities_core::openapi::HttpApi;
use capabilities_core::openapi::document::{self, Document, ReadOptions, Server};
use futures_util::StreamExt;

use crate::error::UsageError;
use crate::sources::ToolList;

/// Whether what a person passed to `hub add` names an OpenAPI document rather than an MCP
/// server: a file that exists, or a URL whose path ends in `.json`, `.yaml` or `.yml`, or
/// names `openapi` or `swagger`.
pub fn looks_like_document(target: &str) -> bool {
    if !(target.starts_with("https://") || target.starts_with("http://")) {
        return Path::new(target).is_file();
    }
    let path = target.split(['?', '#']).next().unwrap_or_default().to_ascii_lowercase();
    let path = path.split("://").nth(1).and_then(|rest| rest.split_once('/')).map_or("", |(_, p)| p);
    [".json", ".yaml", ".yml"].iter().any(|ext| path.ends_with(ext))
        || path.contains("openapi")
        || path.contains("swagger")
}

/// A document as read, with where it came from.
pub struct Fetched {
    pub document: Document,
    /// The URL or the file's absolute path.
    pub location: String,
}

/// Reads and parses the document at `location` (a URL or a file path).
pub fn fetch(location: &str, allow_http: bool) -> Result<Fetched> {
    let options = ReadOptions::default();
    let (bytes, location) = if location.starts_with("https://") || location.starts_with("http://") {
        check_url(location, allow_http, "the document's URL")?;
        (download(location, options.max_bytes)?, location.to_owned())
    } else {
        let path = Path::new(location);
        let absolute = std::fs::canonicalize(path)
            .with_context(|| format!("reading the OpenAPI document `{location}`"))?;
        let file = std::fs::File::open(&absolute).with_context(|| format!("opening `{location}`"))?;
        let mut bytes = Vec::new();
        file.take(options.max_bytes as u64 + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("reading `{location}`"))?;
        (bytes, absolute.display().to_string())
    };
    let document = document::read(&bytes, &options)
        .map_err(|error| anyhow::anyhow!("`{location}` cannot be read as an API: {error}"))?;
    if document.operations.is_empty() {
        bail!("`{location}` describes no operations the hub can call; nothing was added");
    }
    Ok(Fetched { document, location })
}

/// The operations of `fetched` as a tool list, its problems printed as warnings.
pub fn tool_list(namespace: &str, fetched: &Fetched) -> ToolList {
    for problem in &fetched.document.problems {
        eprintln!("warning: {namespace}: {problem}");
    }
    let description = fetched.document.description.clone().or_else(|| {
        let title = fetched.document.title.trim();
        (!title.is_empty()).then(|| title.to_owned())
    });
    ToolList { entries: Vec::new(), description, records: Some(fetched.document.operations.clone()) }
}

/// Reads the document of a source again, for `hub refresh`.
pub fn reread(namespace: &str, api: &HttpApi) -> Result<ToolList> {
    let Some(location) = &api.document else {
        bail!("source `{namespace}` keeps no document location to read again; remove it and add it again");
    };
    let fetched = fetch(location, true)?;
    Ok(tool_list(namespace, &fetched))
}

/// The base URL calls go to: `chosen` when the person gave one, else the document's first
/// server with each variable set from `variables` (`name=value`) or its default. A relative
/// server URL is resolved against the document's URL.
pub fn base_url(
    fetched: &Fetched,
    chosen: Option<&str>,
    variables: &[String],
    allow_http: bool,
) -> Result<String> {
    let url = match chosen {
        Some(url) => url.trim_end_matches('/').to_owned(),
        None => {
            let Some(server) = fetched.document.servers.first() else {
                return relative_to_document(fetched, "/");
            };
            let filled = fill_variables(server, variables)?;
            if filled.starts_with("https://") || filled.starts_with("http://") {
                filled
            } else {
                relative_to_document(fetched, &filled)?
            }
        }
    };
    check_url(&url, allow_http, "the API's base URL")?;
    Ok(url.trim_end_matches('/').to_owned())
}

fn relative_to_document(fetched: &Fetched, path: &str) -> Result<String> {
    if !(fetched.location.starts_with("https://") || fetched.location.starts_with("http://")) {
        return Err(UsageError(format!(
            "the document names no server URL the hub can call (it says `{path}`, relative to a file): \
             give one with `--base-url https://…`"
        ))
        .into());
    }
    let base = reqwest::Url::parse(&fetched.location).context("the document's URL")?;
    Ok(base.join(path).context("resolving the server URL against the document's URL")?.to_string())
}

fn fill_variables(server: &Server, given: &[String]) -> Result<String> {
    let mut url = server.url.clone();
    for (name, variable) in &server.variables {
        let value = given
            .iter()
            .find_map(|pair| pair.split_once('=').filter(|(k, _)| k == name).map(|(_, v)| v.to_owned()))
            .unwrap_or_else(|| variable.default.clone());
        if !variable.values.is_empty() && !variable.values.contains(&value) {
            return Err(UsageError(format!(
                "server variable `{name}` may be one of {}, not `{value}`",
                variable.values.join(", ")
            ))
            .into());
        }
        url = url.replace(&format!("{{{name}}}"), &value);
    }
    if url.contains('{') {
        return Err(UsageError(format!(
            "the server URL `{url}` still holds a variable the document does not declare: give the base URL with `--base-url`"
        ))
        .into());
    }
    Ok(url)
}

/// https, or plain http on loopback, or plain http anywhere when the person said so.
fn check_url(url: &str, allow_http: bool, what: &str) -> Result<()> {
    match crate::upstream::check_url(url) {
        Ok(_) => Ok(()),
        Err(_) if allow_http && url.starts_with("http://") && reqwest::Url::parse(url).is_ok() => {
            eprintln!(
                "warning: {what} `{url}` is plain http: what crosses it (the credential too) can be read on the way"
            );
            Ok(())
        }
        Err(why) => Err(UsageError(format!(
            "{what}: {}; pass `--allow-http` to use plain http anyway",
            why.trim_start_matches("its URL ")
        ))
        .into()),
    }
}

/// Downloads at most `max` bytes (a larger answer fails before it is all read).
pub(crate) fn download(url: &str, max: usize) -> Result<Vec<u8>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .timeout(std::time::Duration::from_secs(60))
            .build()
            .context("building the HTTP client")?;
        let response = client.get(url).send().await.with_context(|| format!("downloading `{url}`"))?;
        let status = response.status();
        if !status.is_success() {
            bail!("downloading `{url}` answered HTTP {status}");
        }
        let mut body = Vec::new();
        let mut chunks = response.bytes_stream();
        while let Some(chunk) = chunks.next().await {
            let chunk = chunk.with_context(|| format!("downloading `{url}`"))?;
            body.extend_from_slice(&chunk);
            if body.len() > max {
                bail!("what `{url}` answers is larger than {} MiB; nothing was added", max / (1024 * 1024));
            }
        }
        Ok(body)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_told_from_servers() {
        assert!(looks_like_document("https://api.example.com/openapi.json"));
        assert!(looks_like_document("https://api.example.com/v3/api-docs.yaml"));
        assert!(looks_like_document("http://127.0.0.1:9/swagger/v1"));
        assert!(!looks_like_document("https://mcp.example.com/mcp"));
        assert!(!looks_like_document("https://openapi.example.com/mcp"));
        assert!(!looks_like_document("./no-such-file.json"));
    }
}

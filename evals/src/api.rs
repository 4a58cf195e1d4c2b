//! The HTTP API fixture: the store (`evals/fixtures/servers/store.mjs`) on loopback with Prism
//! in proxy mode in front (`prism proxy <document> <store> --errors`), so a request or an answer
//! that does not match `evals/fixtures/store.openapi.json` fails the call. Code mode reaches it
//! as an OpenAPI source of the hub; direct tools get one tool per operation from the hub's own
//! records of that source, each call made with core's request builder and answer shaping, as
//! a one-tool-per-endpoint server does.

use std::io::{BufRead, BufReader};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use capabilities_core::manifest::Manifest;
use capabilities_core::openapi::{HttpApi, HttpAuth, HttpOperation, request, response};
use serde_json::{Value, json};

/// The store's key, which the hub is given on stdin at `hub add` and the direct tools send.
pub const STORE_KEY: &str = "evals-store-key";
/// How long Prism may take to start listening.
const PRISM_START: Duration = Duration::from_secs(60);

/// One store server on one state file, behind its own Prism proxy.
pub struct StoreApi {
    store: Child,
    prism: Child,
    /// `http://127.0.0.1:<prism port>`: where requests go.
    pub base_url: String,
}

impl StoreApi {
    pub fn start(repo: &Path, state: &Path) -> Result<StoreApi> {
        let mut store = Command::new("node")
            .arg(repo.join("evals/fixtures/servers/store.mjs"))
            .env("FIXTURE_STATE", state)
            .env("STORE_KEY", STORE_KEY)
            // The server ends when its stdin closes, so it never outlives the harness.
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .context("running node: install Node.js 20 or later")?;
        let mut line = String::new();
        let stdout = store.stdout.take().context("the store has stdout")?;
        BufReader::new(stdout).read_line(&mut line).context("reading the store's port")?;
        let Some(upstream) = serde_json::from_str::<Value>(&line).ok().and_then(|v| v["listening"].as_u64())
        else {
            let _ = store.kill();
            let _ = store.wait();
            bail!("the store fixture did not report its port (it printed {line:?})");
        };
        let port = free_port()?;
        let prism_bin = repo.join("node/node_modules/.bin/prism");
        if !prism_bin.exists() {
            let _ = store.kill();
            let _ = store.wait();
            bail!("{} is missing: run `npm ci` in node/ (it pins @stoplight/prism-cli)", prism_bin.display());
        }
        let prism = Command::new(&prism_bin)
            .arg("proxy")
            .arg(repo.join("evals/fixtures/store.openapi.json"))
            .arg(format!("http://127.0.0.1:{upstream}"))
            .args(["--errors", "--host", "127.0.0.1", "--port", &port.to_string()])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("starting prism")?;
        let api = StoreApi { store, prism, base_url: format!("http://127.0.0.1:{port}") };
        let deadline = Instant::now() + PRISM_START;
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if Instant::now() > deadline {
                bail!("prism proxy did not listen on port {port} within {}s", PRISM_START.as_secs());
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(api)
    }

    /// The API as a source: requests to Prism, the key as a bearer token.
    pub fn http_api(&self) -> HttpApi {
        HttpApi { base_url: self.base_url.clone(), document: None, auth: Some(HttpAuth::bearer()) }
    }
}

impl Drop for StoreApi {
    fn drop(&mut self) {
        for child in [&mut self.prism, &mut self.store] {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn free_port() -> Result<u16> {
    let listener = TcpListener::bind(("127.0.0.1", 0)).context("finding a free loopback port")?;
    Ok(listener.local_addr()?.port())
}

/// One direct tool per operation of the hub's manifest of the API source: `<namespace>__<name>`,
/// with the operation each calls.
pub fn direct_tools(manifest: &Manifest) -> Vec<(String, Value, HttpOperation)> {
    manifest
        .tools
        .iter()
        .filter_map(|tool| {
            let record = &tool.record;
            let op = record.http.clone()?;
            let name = format!("{}__{}", manifest.namespace.as_str(), record.name);
            let definition = json!({
                "name": name,
                "description": record.description,
                "input_schema": record.input_schema,
            });
            Some((name, definition, op))
        })
        .collect()
}

/// Sends one operation's request as a direct tool does; the text the model reads and whether it
/// is an error.
pub fn call(
    client: &reqwest::Client,
    runtime: &tokio::runtime::Runtime,
    api: &HttpApi,
    op: &HttpOperation,
    arguments: &Value,
) -> Result<(bool, String)> {
    let req = match request::build(api, op, arguments, Some(STORE_KEY)) {
        Ok(req) => req,
        Err(err) => return Ok((true, err.to_string())),
    };
    let method = reqwest::Method::from_bytes(req.method.as_bytes()).context("an HTTP method")?;
    let mut builder = client.request(method, &req.url);
    for (name, value) in &req.headers {
        builder = builder.header(name, value);
    }
    if let Some(body) = req.body {
        builder = builder.body(body);
    }
    let (status, headers, body) = runtime.block_on(async {
        let answer = builder.send().await?;
        let status = answer.status().as_u16();
        let headers: Vec<(String, String)> = answer
            .headers()
            .iter()
            .map(|(n, v)| (n.as_str().to_owned(), v.to_str().unwrap_or_default().to_owned()))
            .collect();
        Ok::<_, reqwest::Error>((status, headers, answer.bytes().await?))
    })?;
    Ok(match response::shape(status, &headers, &body) {
        Ok(value) => (false, value.to_string()),
        Err(err) => (true, err.to_string()),
    })
}

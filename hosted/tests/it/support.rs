//! Test support: workerd serving the bundle on a free loopback port with its storage in a temp
//! dir, upstream MCP servers from `node/node_modules`, and a small HTTP/1.1 client with
//! timeouts (the watchdog: no request waits forever, and every process is killed on drop).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use capabilities_core::address::Namespace;
use capabilities_core::manifest::Manifest;
use serde_json::{Value, json};

pub const ADMIN_TOKEN: &str = "test-admin-token";
pub const SECRETS_KEY: &str = "test-secrets-key";

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_owned()
}

pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from)
}

/// The bundle `cargo xtask hosted build` wrote.
pub fn bundle() -> PathBuf {
    let dir = target_dir().join("hosted/bundle");
    assert!(
        dir.join("workerd.capnp").exists() && dir.join("index_bg.wasm").exists(),
        "no Worker bundle in {}: run `cargo xtask hosted build` first (`cargo xtask test` does)",
        dir.display()
    );
    dir
}

pub fn packages() -> PathBuf {
    let dir = repo().join("node/node_modules");
    assert!(
        dir.join(".bin/workerd").exists(),
        "node/node_modules has no workerd: run `cd node && npm ci` (or `cargo xtask test`)"
    );
    dir
}

pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

fn wait_for_port(port: u16, what: &str, child: &mut Child) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!("{what} exited ({status}) before listening on {port}");
        }
        assert!(Instant::now() < deadline, "{what} did not listen on {port} within 30 s");
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// The access settings workerd reads, none of them set unless a test says so.
const SETTINGS: [&str; 8] = [
    "HUB_PUBLIC_URL",
    "HUB_TOKEN_KEY",
    "HUB_ACCESS_TTL_S",
    "HUB_IDP",
    "HUB_IDP_ISSUER",
    "HUB_IDP_CLIENT_ID",
    "HUB_IDP_CLIENT_SECRET",
    "HUB_TEST_LOOPBACK_CLIENT_DOCUMENTS",
];

/// workerd serving the hub, killed on drop.
pub struct Workerd {
    child: Child,
    pub port: u16,
}

impl Workerd {
    /// Starts workerd with Durable Object storage in `storage`.
    pub fn start(storage: &Path) -> Workerd {
        Workerd::start_with(storage, &[("HUB_ADMIN_TOKEN", ADMIN_TOKEN), ("HUB_SECRETS_KEY", SECRETS_KEY)])
    }

    /// Starts workerd with only the secrets in `secrets` set in its environment.
    pub fn start_with(storage: &Path, secrets: &[(&str, &str)]) -> Workerd {
        Workerd::start_on(storage, free_port(), secrets)
    }

    /// Starts workerd on `port` (a test that must name the hub's address in its settings
    /// picks the port first).
    pub fn start_on(storage: &Path, port: u16, secrets: &[(&str, &str)]) -> Workerd {
        let bundle = bundle();
        let mut child = Command::new(packages().join(".bin/workerd"))
            .arg("serve")
            .arg(bundle.join("workerd.capnp"))
            .arg("--socket-addr")
            .arg(format!("http=127.0.0.1:{port}"))
            .arg("--directory-path")
            .arg(format!("storage={}", storage.display()))
            .env_remove("HUB_ADMIN_TOKEN")
            .env_remove("HUB_SECRETS_KEY")
            .env_remove("HUB_APPROVAL_KEY")
            .env_remove("HUB_ACCESS_TOKEN")
            .envs(SETTINGS.iter().map(|name| (name, "")))
            .envs(secrets.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting workerd");
        wait_for_port(port, "workerd", &mut child);
        Workerd { child, port }
    }

    /// SIGKILL, as a crash would.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// One JSON-RPC request to tenant `tenant`'s `/mcp`; the `result` (or the error object).
    pub fn rpc(&self, tenant: &str, method: &str, params: Value) -> Value {
        let body = json!({ "jsonrpc": "2.0", "id": 1, "method": method, "params": params });
        let (status, text) = post(self.port, &format!("/t/{tenant}/mcp"), None, &body.to_string());
        assert_eq!(status, 200, "{method}: HTTP {status}: {text}");
        let answer: Value = serde_json::from_str(&text).unwrap();
        answer.get("result").or_else(|| answer.get("error")).cloned().unwrap()
    }

    /// `tools/call execute`, its envelope.
    pub fn execute(&self, tenant: &str, arguments: Value) -> Value {
        let result = self.rpc(tenant, "tools/call", json!({ "name": "execute", "arguments": arguments }));
        result.get("structuredContent").cloned().unwrap_or_else(|| panic!("no envelope: {result}"))
    }

    /// Loads a tenant's configuration through the admin endpoint.
    pub fn load(&self, tenant: &str, load: &Value) -> (u16, String) {
        post(self.port, &format!("/t/{tenant}/admin/load"), Some(ADMIN_TOKEN), &load.to_string())
    }

    pub fn runs(&self, tenant: &str) -> Value {
        let (status, text) =
            request(self.port, "GET", &format!("/t/{tenant}/admin/runs"), Some(ADMIN_TOKEN), "");
        assert_eq!(status, 200, "{text}");
        serde_json::from_str(&text).unwrap()
    }
}

impl Drop for Workerd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A node MCP server on loopback, killed on drop.
pub struct Upstream {
    child: Child,
    pub port: u16,
}

impl Upstream {
    /// The counting fixture (hosted/tests/fixtures/counter-server.mjs).
    pub fn counter() -> Upstream {
        Upstream::counter_with(&[])
    }

    /// The counting fixture with MCP sessions it can forget.
    pub fn counter_with_sessions() -> Upstream {
        Upstream::counter_with(&["--sessions"])
    }

    fn counter_with(args: &[&str]) -> Upstream {
        let script = repo().join("hosted/tests/fixtures/counter-server.mjs");
        let mut child = Command::new("node")
            .arg(script)
            .args(args)
            .env("MCP_SDK_DIR", packages().join("@modelcontextprotocol/sdk"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting node: install Node.js");
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let port = serde_json::from_str::<Value>(&line)
            .ok()
            .and_then(|v| v["port"].as_u64())
            .unwrap_or_else(|| panic!("the counter fixture did not print its port: {line:?}"))
            as u16;
        Upstream { child, port }
    }

    /// `@modelcontextprotocol/server-everything` in streamable HTTP mode.
    pub fn everything() -> Upstream {
        let port = free_port();
        let mut child = Command::new("node")
            .arg(packages().join("@modelcontextprotocol/server-everything/dist/index.js"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting node: install Node.js");
        wait_for_port(port, "server-everything", &mut child);
        Upstream { child, port }
    }

    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// POSTs to /mcp per JSON-RPC method so far (counter fixture only).
    pub fn requests(&self) -> Value {
        let (status, text) = request(self.port, "GET", "/requests", None, "");
        assert_eq!(status, 200);
        serde_json::from_str(&text).unwrap()
    }

    /// Makes the counter fixture forget every session, as a restart would.
    pub fn forget_sessions(&self) {
        assert_eq!(request(self.port, "POST", "/forget", None, "").0, 200);
    }

    /// Calls per tool so far (counter fixture only).
    pub fn calls(&self) -> Value {
        let (status, text) = request(self.port, "GET", "/calls", None, "");
        assert_eq!(status, 200);
        serde_json::from_str(&text).unwrap()
    }

    /// The source's tools, read live: initialize, then `tools/list` on the session.
    pub fn manifest(&self, namespace: &str) -> Manifest {
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test", "version": "1"}}});
        let (status, head, _) = exchange(self.port, "POST", "/mcp", &[], &init.to_string());
        assert_eq!(status, 200);
        let session = head.lines().find_map(|l| {
            l.to_ascii_lowercase().strip_prefix("mcp-session-id:").map(|v| v.trim().to_owned())
        });
        let mut headers = vec![];
        if let Some(id) = &session {
            headers.push(format!("mcp-session-id: {id}"));
        }
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        exchange(self.port, "POST", "/mcp", &headers, &note.to_string());
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"});
        let (status, _, body) = exchange(self.port, "POST", "/mcp", &headers, &list.to_string());
        assert_eq!(status, 200, "{body}");
        let answer = body
            .lines()
            .filter_map(|l| l.strip_prefix("data: ").or(Some(l)))
            .find_map(|l| serde_json::from_str::<Value>(l).ok().filter(|v| v["id"] == 2))
            .unwrap_or_else(|| panic!("no tools/list answer in {body}"));
        let tools = answer["result"]["tools"].as_array().unwrap().clone();
        Manifest::from_tools_list(Namespace::new(namespace).unwrap(), &tools).0
    }
}

impl Drop for Upstream {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn post(port: u16, path: &str, token: Option<&str>, body: &str) -> (u16, String) {
    request(port, "POST", path, token, body)
}

pub fn request(port: u16, method: &str, path: &str, token: Option<&str>, body: &str) -> (u16, String) {
    let headers: Vec<String> = token.map(|t| format!("authorization: Bearer {t}")).into_iter().collect();
    let (status, _, body) = exchange(port, method, path, &headers, body);
    (status, body)
}

/// One HTTP/1.1 exchange with `Connection: close`; status, head and body (chunked decoded).
/// Waits at most 120 s for the answer.
pub fn exchange(
    port: u16,
    method: &str,
    path: &str,
    headers: &[String],
    body: &str,
) -> (u16, String, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connecting");
    stream.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\nconnection: close\r\n\
         content-type: application/json\r\naccept: application/json, text/event-stream\r\n\
         content-length: {}\r\n",
        body.len()
    );
    for header in headers {
        head.push_str(header);
        head.push_str("\r\n");
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body.as_bytes()).unwrap();
    let mut raw = Vec::new();
    if let Err(err) = stream.read_to_end(&mut raw) {
        // A server that sends an SSE stream and keeps it open: take what came.
        assert!(!raw.is_empty(), "{method} {path}: no answer ({err})");
    }
    let text = String::from_utf8_lossy(&raw).into_owned();
    let (head, rest) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    let status = head.split_whitespace().nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let chunked = head.to_ascii_lowercase().contains("transfer-encoding: chunked");
    let body = if chunked { dechunk(rest) } else { rest.to_owned() };
    (status, head.to_owned(), body)
}

fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let Ok(size) = usize::from_str_radix(size.trim(), 16) else { break };
        if size == 0 || after.len() < size {
            out.push_str(&after[..size.min(after.len())]);
            break;
        }
        out.push_str(&after[..size]);
        rest = after[size..].strip_prefix("\r\n").unwrap_or(&after[size..]);
    }
    out
}

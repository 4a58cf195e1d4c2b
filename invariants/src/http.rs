//! `LocalHttp`: the real binary's `hub serve --http --port 0`, driven with reqwest and the
//! bearer token from `<store>/http-token`, in one MCP session.

use std::io::{BufRead, BufReader};
use std::process::{Child, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

use crate::home::Home;
use crate::process::{Process, Sink, drain};
use crate::target::Target;

pub struct LocalHttp {
    home: Home,
    process: Process,
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    url: String,
    token: String,
    session: Option<String>,
    next_id: u64,
    profile: String,
}

impl LocalHttp {
    pub fn start(home: Home) -> LocalHttp {
        LocalHttp::start_profile(home, "default")
    }

    /// [`LocalHttp::start`] serving profile `profile`.
    pub fn start_profile(home: Home, profile: &str) -> LocalHttp {
        let stderr = Sink::default();
        let (child, url) = spawn(&home, &stderr, profile);
        let token = read_token(&home);
        let mut target = LocalHttp {
            home,
            process: Process::new(child, stderr),
            runtime: tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap(),
            // A fresh connection per request: a kept-alive one the server closed while idle
            // (during a long case) would fail the next request before it was sent.
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(60))
                .pool_max_idle_per_host(0)
                .build()
                .unwrap(),
            url,
            token,
            session: None,
            next_id: 1,
            profile: profile.to_owned(),
        };
        target.initialize();
        target
    }

    /// The served address, `http://127.0.0.1:<port>/mcp`.
    pub fn url(&self) -> &str {
        &self.url
    }

    fn initialize(&mut self) {
        self.session = None;
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "invariants", "version": "0"}}),
        );
        assert!(answer.get("result").is_some(), "initialize failed: {answer}");
        self.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// POSTs one message; the status, the session header and the body's JSON-RPC messages.
    fn post(&mut self, message: &Value) -> (u16, Vec<Value>) {
        let mut request = self
            .client
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("authorization", format!("Bearer {}", self.token))
            .body(message.to_string());
        if let Some(session) = &self.session {
            request = request.header("mcp-session-id", session);
        }
        let answered = self.runtime.block_on(async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            let session =
                response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
            Ok::<_, reqwest::Error>((status, session, response.text().await?))
        });
        let Ok((status, session, body)) = answered else {
            return (0, Vec::new());
        };
        if session.is_some() {
            self.session = session;
        }
        (status, messages(&body))
    }
}

/// The JSON-RPC messages in a body: one JSON value, or SSE `data:` lines.
pub(crate) fn messages(body: &str) -> Vec<Value> {
    if let Ok(value) = serde_json::from_str::<Value>(body) {
        return vec![value];
    }
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .filter_map(|data| serde_json::from_str(data.trim()).ok())
        .collect()
}

fn read_token(home: &Home) -> String {
    std::fs::read_to_string(home.path().join("http-token"))
        .expect("serve --http writes its token")
        .trim()
        .to_owned()
}

fn spawn(home: &Home, sink: &Sink, profile: &str) -> (Child, String) {
    let mut child = home
        .command(&["hub", "serve", "--http", "--port", "0", "--profile", profile])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary starts");
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut url = None;
    let mut line = String::new();
    while url.is_none() && stderr.read_line(&mut line).unwrap_or(0) > 0 {
        sink.lock().unwrap().extend_from_slice(line.as_bytes());
        url = line.trim().strip_prefix("serving on ").map(str::to_owned);
        line.clear();
    }
    let url = url.unwrap_or_else(|| panic!("serve --http printed no address: {:?}", child.try_wait()));
    drain(stderr, sink.clone());
    (child, url)
}

impl Target for LocalHttp {
    fn name(&self) -> &'static str {
        "local-http"
    }

    fn hub(&self) -> &Home {
        &self.home
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let (status, answers) =
            self.post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        answers.into_iter().find(|m| m["id"] == json!(id)).unwrap_or_else(
            || json!({"error": {"code": -1, "message": format!("no answer to {method} (HTTP {status})")}}),
        )
    }

    fn send(&mut self, message: Value) {
        self.post(&message);
    }

    fn stderr(&self) -> String {
        self.process.stderr()
    }

    fn pid(&self) -> u32 {
        self.process.pid()
    }

    fn kill(&mut self) {
        self.process.kill();
    }

    fn restart(&mut self) {
        self.process.kill();
        let (child, url) = spawn(&self.home, &self.process.sink(), &self.profile);
        self.process.replace(child);
        self.url = url;
        self.token = read_token(&self.home);
        self.initialize();
    }
}

impl Drop for LocalHttp {
    // Before the home goes.
    fn drop(&mut self) {
        self.process.kill();
    }
}

//! `Hosted`: the Worker bundle (`cargo xtask hosted build`) served by the real `workerd` on a
//! free loopback port, one tenant per target, its Durable Object storage in the case's scratch
//! directory. The person's channel is the admin HTTP API: a load carries the tenant's whole
//! configuration, so the target keeps what it loaded and sends it again after each change.

use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capabilities_core::address::Namespace;
use capabilities_core::manifest::Manifest;
use capabilities_core::policy::PolicyState;
use serde_json::{Value, json};

use crate::home::{Home, repo};
use crate::process::{Process, Sink, drain};
use crate::target::{Applicability, Need, SourceSpec, Target, Transport};

/// The Worker's admin token in every hosted target.
pub const ADMIN_TOKEN: &str = "invariants-admin-token";
const SECRETS_KEY: &str = "invariants-secrets-key";

/// The bundle directory `cargo xtask hosted build` writes.
pub fn bundle() -> PathBuf {
    let target = std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| repo().join("target"), PathBuf::from);
    let dir = target.join("hosted/bundle");
    assert!(
        dir.join("workerd.capnp").is_file() && dir.join("index_bg.wasm").is_file(),
        "no Worker bundle in {}: run `cargo xtask hosted build` first (`cargo xtask test` does)",
        dir.display()
    );
    dir
}

fn workerd_binary() -> PathBuf {
    let path = repo().join("node/node_modules/.bin/workerd");
    assert!(path.exists(), "{} is missing: run `cd node && npm ci` at the repository root", path.display());
    path
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// One workerd process serving the bundle; several tenants' targets may share it.
pub struct Workerd {
    process: Process,
    port: u16,
    storage: PathBuf,
}

impl Workerd {
    /// Starts workerd with its Durable Object storage in `storage` (created if missing).
    pub fn start(storage: &Path) -> Workerd {
        Workerd::start_on(storage, free_port())
    }

    /// [`Workerd::start`] listening on `port`.
    pub fn start_on(storage: &Path, port: u16) -> Workerd {
        std::fs::create_dir_all(storage).unwrap();
        let stderr = Sink::default();
        let child = spawn(storage, port, &stderr);
        Workerd { process: Process::new(child, stderr), port, storage: storage.to_owned() }
    }

    pub fn port(&self) -> u16 {
        self.port
    }

    pub fn kill(&mut self) {
        self.process.kill();
    }

    /// Starts again on the same storage (on a new port).
    pub fn restart(&mut self) {
        self.process.kill();
        let port = free_port();
        let child = spawn(&self.storage, port, &self.process.sink());
        self.process.replace(child);
        self.port = port;
    }
}

fn spawn(storage: &Path, port: u16, sink: &Sink) -> Child {
    let bundle = bundle();
    let mut child = Command::new(workerd_binary())
        .arg("serve")
        .arg(bundle.join("workerd.capnp"))
        .arg("--socket-addr")
        .arg(format!("http=127.0.0.1:{port}"))
        .arg("--directory-path")
        .arg(format!("storage={}", storage.display()))
        .env("HUB_ADMIN_TOKEN", ADMIN_TOKEN)
        .env("HUB_SECRETS_KEY", SECRETS_KEY)
        .env_remove("HUB_ACCESS_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("workerd starts");
    drain(child.stderr.take().unwrap(), sink.clone());
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        if let Ok(Some(status)) = child.try_wait() {
            panic!(
                "workerd exited ({status}) before listening: {}",
                String::from_utf8_lossy(&sink.lock().unwrap())
            );
        }
        assert!(Instant::now() < deadline, "workerd did not listen on {port} within 30 s");
        std::thread::sleep(Duration::from_millis(20));
    }
    child
}

/// What the person loaded into the tenant, sent whole on each change.
#[derive(Default)]
struct Loaded {
    sources: Vec<Value>,
    policy: PolicyState,
    secrets: Vec<Value>,
}

/// One tenant of a hosted hub.
pub struct Hosted {
    home: Home,
    workerd: Arc<Mutex<Workerd>>,
    tenant: String,
    loaded: Loaded,
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    next_id: u64,
}

impl Hosted {
    /// workerd on a storage directory in `home`'s scratch, serving tenant `acme`.
    pub fn start(home: Home) -> Hosted {
        Hosted::start_on(home, free_port())
    }

    /// [`Hosted::start`] with workerd listening on `port`.
    pub fn start_on(home: Home, port: u16) -> Hosted {
        let workerd = Arc::new(Mutex::new(Workerd::start_on(&home.scratch().join("workerd"), port)));
        Hosted::tenant_of(home, workerd, "acme")
    }

    /// Another tenant on the same workerd, with a home of its own for its fixtures.
    pub fn other_tenant(&self, tenant: &str) -> Hosted {
        Hosted::tenant_of(Home::new(), self.workerd.clone(), tenant)
    }

    fn tenant_of(home: Home, workerd: Arc<Mutex<Workerd>>, tenant: &str) -> Hosted {
        let mut target = Hosted {
            home,
            workerd,
            tenant: tenant.to_owned(),
            loaded: Loaded::default(),
            runtime: tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap(),
            client: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .pool_max_idle_per_host(0)
                .build()
                .unwrap(),
            next_id: 1,
        };
        let answer = target.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "invariants", "version": "0"}}),
        );
        assert!(answer.get("result").is_some(), "initialize failed: {answer}");
        target
    }

    pub fn tenant(&self) -> &str {
        &self.tenant
    }

    /// `http://127.0.0.1:<port>`.
    pub fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.workerd.lock().unwrap().port())
    }

    /// One HTTP exchange with the Worker: the status and the body.
    pub fn http(&self, method: &str, path: &str, token: Option<&str>, body: Option<&Value>) -> (u16, String) {
        let url = format!("{}{path}", self.origin());
        let mut request = match method {
            "GET" => self.client.get(&url),
            _ => self.client.post(&url),
        };
        request = request.header("accept", "application/json, text/event-stream");
        if let Some(token) = token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        if let Some(body) = body {
            request = request.header("content-type", "application/json").body(body.to_string());
        }
        let answered = self.runtime.block_on(async {
            let response = request.send().await?;
            let status = response.status().as_u16();
            Ok::<_, reqwest::Error>((status, response.text().await?))
        });
        answered.unwrap_or_else(|err| (0, format!("no answer: {err}")))
    }

    /// A person's admin request on this tenant.
    pub fn admin(&self, method: &str, rest: &str, body: Option<&Value>) -> (u16, String) {
        self.http(method, &format!("/t/{}/admin/{rest}", self.tenant), Some(ADMIN_TOKEN), body)
    }

    fn load(&mut self) {
        let load = json!({
            "sources": self.loaded.sources,
            "policy": self.loaded.policy,
            "secrets": self.loaded.secrets,
        });
        let (status, text) = self.admin("POST", "load", Some(&load));
        assert_eq!(status, 200, "{}: the admin load was refused: {text}", self.tenant);
    }

    /// The URL source `namespace` was added with.
    pub fn source_url(&self, namespace: &str) -> String {
        let source = self.loaded.sources.iter().find(|s| s["namespace"] == json!(namespace));
        source.and_then(|s| s["url"].as_str()).unwrap_or_else(|| panic!("no source `{namespace}`")).to_owned()
    }

    fn source_mut(&mut self, namespace: &str) -> &mut Value {
        self.loaded
            .sources
            .iter_mut()
            .find(|s| s["namespace"] == json!(namespace))
            .unwrap_or_else(|| panic!("no source `{namespace}` was added"))
    }
}

impl Hosted {
    /// An HTTP API source as `hub push` carries it: a person adds the document on this target's
    /// own store with the CLI (the local hub reads the document and reviews the operations),
    /// and its records are loaded as they are: the base URL as the source's URL and its origin
    /// as the reviewed one, the `api` record, the manifest, the connections, what review pinned
    /// and ruled, and the credential the person typed.
    fn add_api(&mut self, source: &SourceSpec, credential: Option<&str>) {
        crate::target::add_locally(&self.home, source);
        let ns = source.namespace.as_str();
        let read = |path: &str| -> Option<Value> {
            let bytes = std::fs::read(self.home.path().join(path)).ok()?;
            Some(serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{path} is JSON ({e})")))
        };
        let record = read(&format!("sources/{ns}.json")).expect("hub add wrote the source's record");
        let mut api = record["spec"]["transport"].clone();
        assert_eq!(api["type"], "openapi", "{ns} was added as an HTTP API: {record}");
        api.as_object_mut().unwrap().remove("type");
        let base_url = api["baseUrl"].as_str().expect("the API's base URL").to_owned();
        let manifest = read(&format!("manifests/{ns}.json")).expect("hub add wrote the manifest");
        let connections = read(&format!("connections/{ns}.json")).unwrap_or_else(|| json!({}));
        let policy: PolicyState =
            serde_json::from_value(read("policies/policy.json").expect("hub add wrote the policy")).unwrap();
        let ours = |address: &String| address.split_once('.').is_some_and(|(n, _)| n == ns);
        self.loaded.policy.reviewed.extend(policy.reviewed.into_iter().filter(|(a, _)| ours(a)));
        for rule in policy.rules {
            if !self.loaded.policy.rules.contains(&rule) {
                self.loaded.policy.rules.push(rule);
            }
        }
        self.loaded.sources.push(json!({
            "namespace": ns,
            "url": base_url,
            "reviewedOrigin": origin_of(&base_url),
            "manifest": manifest,
            "connections": connections.get("connections").cloned().unwrap_or_else(|| json!([])),
            "defaultConnection": connections.get("default").cloned().unwrap_or(Value::Null),
            "api": api,
        }));
        if let Some(value) = credential {
            let slot = capabilities_core::openapi::HttpAuth::SLOT;
            self.loaded
                .secrets
                .push(json!({"namespace": ns, "connection": "default", "values": [[slot, value]]}));
        }
        self.load();
    }
}

/// The tools an MCP server at `url` lists and its `initialize` instructions, read as a person's
/// tooling would: initialize, then `tools/list` on the session it opened (JSON or SSE answers).
pub fn list_tools(url: &str) -> (Vec<Value>, Option<String>) {
    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
    runtime.block_on(async {
        let post = |body: Value, session: Option<String>| {
            let mut request = client
                .post(url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body.to_string());
            if let Some(session) = session {
                request = request.header("mcp-session-id", session);
            }
            request.send()
        };
        let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "invariants", "version": "0"}}});
        let response = post(init, None).await.unwrap_or_else(|e| panic!("{url}: {e}"));
        let session =
            response.headers().get("mcp-session-id").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let initialized = response.text().await.unwrap_or_default();
        let instructions = crate::http::messages(&initialized)
            .into_iter()
            .find(|m| m["id"] == json!(1))
            .and_then(|m| m["result"]["instructions"].as_str().map(str::to_owned));
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let _ = post(note, session.clone()).await.map(drop);
        let list = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}});
        let body = post(list, session).await.unwrap().text().await.unwrap();
        let answer = crate::http::messages(&body)
            .into_iter()
            .find(|m| m["id"] == json!(2))
            .unwrap_or_else(|| panic!("{url}: no tools/list answer in {body}"));
        (answer["result"]["tools"].as_array().cloned().unwrap_or_default(), instructions)
    })
}

fn origin_of(url: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("an absolute URL");
    let host = rest.split('/').next().unwrap_or(rest);
    format!("{scheme}://{host}")
}

impl Target for Hosted {
    fn name(&self) -> &'static str {
        "hosted"
    }

    fn hub(&self) -> &Home {
        &self.home
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let (status, body) = self.http("POST", &format!("/t/{}/mcp", self.tenant), None, Some(&message));
        crate::http::messages(&body).into_iter().find(|m| m["id"] == json!(id)).unwrap_or_else(
            || json!({"error": {"code": -1, "message": format!("no answer to {method} (HTTP {status}): {body}")}}),
        )
    }

    fn send(&mut self, message: Value) {
        self.http("POST", &format!("/t/{}/mcp", self.tenant), None, Some(&message));
    }

    fn stderr(&self) -> String {
        self.workerd.lock().unwrap().process.stderr()
    }

    fn pid(&self) -> u32 {
        self.workerd.lock().unwrap().process.pid()
    }

    fn kill(&mut self) {
        self.workerd.lock().unwrap().kill();
    }

    fn restart(&mut self) {
        self.workerd.lock().unwrap().restart();
    }

    fn as_hosted(&self) -> Option<&Hosted> {
        Some(self)
    }

    fn applies(&self, need: Need) -> Applicability {
        match need {
            Need::TenantIsolation => Applicability::Applies,
            // A person decides through `POST /t/<tenant>/admin/approve`.
            Need::Approvals => Applicability::Applies,
            Need::StdioUpstream => Applicability::NotApplicable("hosted upstreams are HTTP(S) only"),
            Need::LocalStore => Applicability::NotApplicable(
                "it inspects the local hub's files; a hosted tenant keeps its configuration and runs \
                 in one SQLite database inside its Durable Object",
            ),
            Need::ApprovalPage => Applicability::NotApplicable(
                "the approval page on loopback is the local hub's; a hosted person approves through \
                 the admin API",
            ),
        }
    }

    fn add_source(&mut self, source: &SourceSpec) {
        let url = match &source.transport {
            Transport::Http { url } => url,
            Transport::OpenApi { credential, .. } => return self.add_api(source, credential.as_deref()),
            Transport::Stdio { .. } => {
                panic!("hosted upstreams are HTTP(S) only: add `{}` by URL", source.namespace)
            }
        };
        let namespace = Namespace::new(&source.namespace).unwrap();
        // The manifest as a local hub's push carries it: its tools and the source's description.
        let (tools, instructions) = list_tools(url);
        let (mut manifest, problems) = Manifest::from_tools_list(namespace, &tools);
        manifest.description =
            instructions.as_deref().and_then(capabilities_core::manifest::source_description);
        assert!(problems.is_empty(), "{}: {problems:?}", source.namespace);
        // Reviewed as proposed: reads allowed and the rest asking need no rule.
        for tool in &manifest.tools {
            self.loaded.policy.reviewed.insert(manifest.address(tool).to_string(), tool.digest);
        }
        let connections = if source.slots.is_empty() {
            json!([])
        } else {
            json!([{"name": "default", "slots": source.slots}])
        };
        self.loaded.sources.push(json!({
            "namespace": source.namespace,
            "url": url,
            "reviewedOrigin": origin_of(url),
            "manifest": manifest,
            "connections": connections,
        }));
        self.load();
    }

    fn set_secret(&mut self, namespace: &str, slot: &str, value: &str) {
        self.loaded.secrets.retain(|s| s["namespace"] != json!(namespace));
        self.loaded
            .secrets
            .push(json!({"namespace": namespace, "connection": "default", "values": [[slot, value]]}));
        self.load();
    }

    fn refresh(&mut self, namespace: &str, accept: bool) -> String {
        assert!(
            self.source_mut(namespace).get("api").is_none(),
            "`{namespace}` is an HTTP API: its refresh re-reads a document, which this target does not model"
        );
        let url = self.source_url(namespace);
        let before: Manifest =
            serde_json::from_value(self.source_mut(namespace)["manifest"].clone()).unwrap();
        let (tools, instructions) = list_tools(&url);
        let (mut after, _) = Manifest::from_tools_list(Namespace::new(namespace).unwrap(), &tools);
        after.description = instructions.as_deref().and_then(capabilities_core::manifest::source_description);
        // As the local refresh does: note what changed, and with `accept` pin every contract.
        let diff = capabilities_core::manifest::diff(&before, &after);
        for changed in &diff.changed {
            let Some(tool) = after.tools.iter().find(|t| t.record.name == changed.name) else { continue };
            let lines: Vec<String> = changed.changes.iter().map(ToString::to_string).collect();
            self.loaded.policy.note_changes(&after.address(tool).to_string(), &changed.after, &lines);
        }
        if accept {
            for tool in &after.tools {
                self.loaded.policy.pin(after.address(tool).to_string(), tool.digest);
            }
        }
        self.source_mut(namespace)["manifest"] = json!(after);
        self.load();
        format!("{namespace}:\n{diff}")
    }

    fn set_rules(&mut self, rules: Value) {
        self.loaded.policy.rules =
            serde_json::from_value(rules).expect("rules as the policy file holds them");
        self.load();
    }

    fn policy(&mut self) -> Value {
        json!(self.loaded.policy)
    }

    fn approve(&mut self, run: &str, choice: &str) -> bool {
        let (status, _) = self.admin("POST", "approve", Some(&json!({"run": run, "choice": choice})));
        status == 200
    }

    fn runs(&mut self) -> Value {
        let (status, text) = self.admin("GET", "runs", None);
        assert_eq!(status, 200, "{}: admin/runs: {text}", self.tenant);
        serde_json::from_str(&text).unwrap_or_else(|e| panic!("admin/runs is JSON ({e}): {text}"))
    }

    fn person_views(&mut self) -> Vec<String> {
        vec![self.admin("GET", "runs", None).1, self.admin("GET", "pending", None).1]
    }

    fn stored_files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let storage = self.workerd.lock().unwrap().storage.clone();
        crate::home::walk_files(&storage)
    }
}

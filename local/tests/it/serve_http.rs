//! `capabilities hub serve --http` as the real binary on an ephemeral port: the official
//! TypeScript SDK client over streamable HTTP (`tests/fixtures/http-client.mjs`), with and
//! without the reference memory server as a source, and a plain HTTP client sending what an
//! attacker would: no token, a wrong one, a foreign Host or Origin, an oversized or garbled body.
//!
//! Needs Node.js on PATH and `cd node && npm ci` at the repository root; the tests fail (never
//! skip) without them.

use std::io::{BufRead, BufReader};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use capabilities::serve::tools;
use capabilities_core::limits::Limits;
use nix::sys::signal::Signal;
use reqwest::StatusCode;
use serde_json::{Value, json};

use crate::support::{packages, repo};

/// A hub serving HTTP in a private store of its own, stopped (SIGTERM) on drop.
struct Server {
    child: Child,
    url: String,
    token: String,
    home: PathBuf,
    /// The temporary directory the store is in, when the server made it.
    _dir: Option<tempfile::TempDir>,
}

impl Server {
    fn start() -> Server {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let mut server = Server::start_in(dir.path());
        server._dir = Some(dir);
        server
    }

    fn home_of(dir: &Path) -> PathBuf {
        dir.join("hub")
    }

    fn home(&self) -> PathBuf {
        self.home.clone()
    }

    /// Starts a server on the store in `dir`/hub; `dir` must outlive it.
    fn start_in(dir: &Path) -> Server {
        let mut child = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .args(["hub", "serve", "--http", "--port", "0"])
            .env("CAPABILITIES_HOME", Server::home_of(dir))
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap());
        let mut url = None;
        let mut line = String::new();
        while url.is_none() && stderr.read_line(&mut line).unwrap() > 0 {
            eprint!("{line}");
            url = line.trim().strip_prefix("serving on ").map(str::to_owned);
            line.clear();
        }
        let url = url.unwrap_or_else(|| panic!("the server did not print its URL: {:?}", child.wait()));
        // Keep the pipe drained so the server never blocks on a full stderr.
        std::thread::spawn(move || {
            for line in stderr.lines().map_while(Result::ok) {
                eprintln!("{line}");
            }
        });
        let token = std::fs::read_to_string(Server::home_of(dir).join("http-token")).unwrap();
        Server { child, url, token: token.trim().to_owned(), home: Server::home_of(dir), _dir: None }
    }

    /// The SDK client's view: connect, list, make `calls`, end the session.
    fn sdk_client(&self, calls: Value) -> Value {
        let out = Command::new("node")
            .arg(repo().join("local/tests/fixtures/http-client.mjs"))
            .arg(calls.to_string())
            .env("MCP_SDK_DIR", packages().join("sdk"))
            .env("MCP_URL", &self.url)
            .env("MCP_TOKEN", &self.token)
            .stderr(Stdio::inherit())
            .output()
            .expect("node starts");
        assert!(out.status.success(), "the client failed: {}", String::from_utf8_lossy(&out.stdout));
        serde_json::from_slice(&out.stdout).expect("the client prints one JSON object")
    }

    /// Sends SIGTERM and waits for the exit.
    fn stop(&mut self) -> ExitStatus {
        self.signal(Signal::SIGTERM)
    }

    fn signal(&mut self, signal: Signal) -> ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, signal).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(Instant::now() < deadline, "the server did not stop within 20s of {signal}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            let _ = self.stop();
        }
    }
}

fn tool_names(tools: &Value) -> Vec<&str> {
    tools.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[test]
fn the_sdk_client_over_http_on_an_empty_hub() {
    let mut server = Server::start();
    assert!(server.url.starts_with("http://127.0.0.1:") && server.url.ends_with("/mcp"), "{}", server.url);
    let seen = server.sdk_client(json!([
        { "name": "execute", "arguments": { "code": "return 1+1" } },
        { "name": "search", "arguments": { "query": "create an issue" } },
    ]));
    assert_eq!(tool_names(&seen["tools"]), ["search", "describe", "execute"]);
    assert_eq!(seen["tools"], tools::surface_json(&Limits::DEFAULT)["tools"]);
    assert_eq!(seen["server"]["name"], json!("capabilities"));
    assert_eq!(seen["protocolVersion"], json!("2025-11-25"));
    let results = &seen["results"];
    assert_eq!(results[0]["structuredContent"]["status"], json!("completed"), "{results}");
    assert_eq!(results[0]["structuredContent"]["result"], json!(2));
    assert_eq!(results[0]["isError"], json!(false));
    assert!(results[1]["text"].as_str().unwrap().contains("no sources yet"), "{results}");
    assert!(server.stop().success(), "SIGTERM is a clean stop");
}

#[test]
fn the_token_file_is_private() {
    let server = Server::start();
    let path = server.home().join("http-token");
    assert_eq!(std::fs::metadata(&path).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(server.token.len(), 64);
    assert!(server.token.bytes().all(|b| b.is_ascii_hexdigit()), "{}", server.token);
    // A second start reads the same token rather than making a new one.
    let dir = tempfile::tempdir().unwrap();
    let mut first = Server::start_in(dir.path());
    assert!(first.signal(Signal::SIGINT).success(), "SIGINT is a clean stop");
    let again = Server::start_in(dir.path());
    assert_eq!(again.token, first.token);
}

/// Processes (not zombies) whose environment holds `needle`.
fn processes_with_env(needle: &str) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let pid = entry.file_name().to_string_lossy().into_owned();
        if !pid.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Ok(environ) = std::fs::read(entry.path().join("environ")) else { continue };
        if !environ.split(|&b| b == 0).any(|var| var == needle.as_bytes()) {
            continue;
        }
        let stat = std::fs::read_to_string(entry.path().join("stat")).unwrap_or_default();
        let state = stat.rsplit(')').next().and_then(|rest| rest.split_whitespace().next()).unwrap_or("?");
        if state != "Z" && state != "X" {
            found.push(pid);
        }
    }
    found
}

#[test]
fn the_sdk_client_reaches_the_memory_server_over_http() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let memory_file = dir.path().join("memory.jsonl");
    let env = format!("MEMORY_FILE_PATH={}", memory_file.display());
    let script = packages().join("server-memory/dist/index.js");
    let added = Command::new(env!("CARGO_BIN_EXE_capabilities"))
        .args(["hub", "add", "--yes", "--namespace", "memory", "--env", &env, "--", "node"])
        .arg(&script)
        .env("CAPABILITIES_HOME", Server::home_of(dir.path()))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(added.status.success(), "hub add failed: {}", String::from_utf8_lossy(&added.stderr));

    let mut server = Server::start_in(dir.path());
    let seen = server.sdk_client(json!([
        { "name": "execute", "arguments": { "code": "return await memory.readGraph({})" } },
        { "name": "execute", "arguments": { "code": "return (await memory.readGraph({})).entities.length" } },
    ]));
    let results = &seen["results"];
    assert_eq!(results[0]["structuredContent"]["status"], json!("completed"), "{results}");
    assert_eq!(results[0]["structuredContent"]["result"], json!({"entities": [], "relations": []}));
    assert_eq!(results[1]["structuredContent"]["result"], json!(0), "{results}");
    // The source's process stays up between calls and stops with the server.
    let alive = processes_with_env(&env);
    assert!(!alive.is_empty(), "the memory server is running while the hub serves");
    assert!(server.stop().success());
    let deadline = Instant::now() + Duration::from_secs(10);
    while !processes_with_env(&env).is_empty() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(processes_with_env(&env), Vec::<String>::new(), "the memory server outlived the hub");
}

/// Request headers, by name.
type Headers = Vec<(&'static str, String)>;

/// One raw HTTP exchange.
struct Answer {
    status: StatusCode,
    session: Option<String>,
    body: String,
}

impl Answer {
    /// The JSON-RPC message in the body: plain JSON, or the last `data:` line of an SSE stream.
    fn json(&self) -> Value {
        let text = self
            .body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .map(str::trim)
            .rfind(|l| !l.is_empty())
            .unwrap_or(&self.body);
        serde_json::from_str(text).unwrap_or_else(|_| panic!("not JSON: {}", self.body))
    }
}

/// A plain HTTP client on a runtime of its own.
struct Raw {
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
    url: String,
    port: u16,
}

impl Raw {
    fn new(url: &str) -> Raw {
        let port = url.rsplit(':').next().unwrap().trim_end_matches("/mcp").parse().unwrap();
        Raw {
            runtime: tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap(),
            client: reqwest::Client::new(),
            url: url.to_owned(),
            port,
        }
    }

    /// POSTs `body` with the MCP headers plus `headers` (which replace same-named ones).
    fn post(&self, body: impl Into<reqwest::Body>, headers: &[(&str, &str)]) -> Answer {
        self.runtime.block_on(async {
            let mut request = self
                .client
                .post(&self.url)
                .header("content-type", "application/json")
                .header("accept", "application/json, text/event-stream")
                .body(body);
            for (name, value) in headers {
                request = request.header(*name, *value);
            }
            let response = request.send().await.expect("the server answers");
            let status = response.status();
            let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
            Answer { status, session, body: response.text().await.unwrap() }
        })
    }
}

#[test]
fn refused_requests_run_nothing_and_the_server_stays_up() {
    let server = Server::start();
    let raw = Raw::new(&server.url);
    let bearer = format!("Bearer {}", server.token);
    let auth = [("authorization", bearer.as_str())];
    let initialize = |version: &str| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}})
        .to_string()
    };

    // Both current revisions negotiate to themselves.
    let newer = raw.post(initialize("2025-11-25"), &auth);
    assert_eq!(newer.status, StatusCode::OK, "{}", newer.body);
    assert_eq!(newer.json()["result"]["protocolVersion"], json!("2025-11-25"));
    let older = raw.post(initialize("2025-06-18"), &auth);
    assert_eq!(older.json()["result"]["protocolVersion"], json!("2025-06-18"));
    let session = older.session.expect("a session id");
    let in_session = [("authorization", bearer.as_str()), ("mcp-session-id", session.as_str())];
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"}).to_string();
    assert_eq!(raw.post(initialized, &in_session).status, StatusCode::ACCEPTED);

    let execute = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call",
        "params": {"name": "execute", "arguments": {"code": "return 'ran'"}}})
    .to_string();
    let wrong_token = format!("Bearer {}", "0".repeat(64));
    let host = format!("127.0.0.1:{}", raw.port);
    let evil_host = format!("evil.example:{}", raw.port);
    let session_only = [("mcp-session-id", session.as_str())];
    let with = |extra: &[(&'static str, &str)]| -> Headers {
        let mut headers: Headers = in_session.iter().map(|(n, v)| (*n, (*v).to_owned())).collect();
        for (name, value) in extra {
            headers.retain(|(n, _)| n != name);
            headers.push((name, (*value).to_owned()));
        }
        headers
    };
    let cases: Vec<(&str, Headers, StatusCode, i64)> = vec![
        (
            "no token",
            session_only.iter().map(|(n, v)| (*n, (*v).to_owned())).collect(),
            StatusCode::UNAUTHORIZED,
            -32001,
        ),
        ("wrong token", with(&[("authorization", &wrong_token)]), StatusCode::UNAUTHORIZED, -32001),
        ("foreign host", with(&[("host", &evil_host)]), StatusCode::FORBIDDEN, -32003),
        ("foreign origin", with(&[("origin", "http://evil.example")]), StatusCode::FORBIDDEN, -32003),
        (
            "rebound name",
            with(&[("host", "attacker.test"), ("origin", "http://attacker.test")]),
            StatusCode::FORBIDDEN,
            -32003,
        ),
    ];
    let mut seen = String::new();
    for (what, headers, status, code) in &cases {
        let headers: Vec<(&str, &str)> = headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let answer = raw.post(execute.clone(), &headers);
        assert_eq!(answer.status, *status, "{what}: {}", answer.body);
        assert_eq!(answer.json()["error"]["code"], json!(code), "{what}: {}", answer.body);
        if *status == StatusCode::UNAUTHORIZED {
            assert!(answer.body.contains("http-token"), "{what}: the refusal says where the token is");
        }
        seen.push_str(&format!("{what}: {}\n", answer.status));
    }
    let runs = server.home().join("runs");
    let count_runs = || {
        std::fs::read_dir(&runs)
            .map_or(0, |d| d.flatten().filter(|e| e.file_name().to_string_lossy().ends_with(".json")).count())
    };
    assert_eq!(count_runs(), 0, "a refused request ran code");

    // Bodies the server will not parse: each refused, none fatal.
    let oversized = vec![b' '; 5 * 1024 * 1024];
    let too_big = raw.post(oversized, &in_session);
    assert_eq!(too_big.status, StatusCode::PAYLOAD_TOO_LARGE, "{}", too_big.body);
    let garbage = raw.post("{\"jsonrpc\": \"2.0\", \"id\": 1, \"meth", &in_session);
    assert_eq!(garbage.status, StatusCode::BAD_REQUEST, "{}", garbage.body);
    assert_eq!(garbage.json()["error"]["code"], json!(-32700), "{}", garbage.body);
    let not_rpc = raw.post("[1, 2, 3]", &in_session);
    assert_eq!(not_rpc.json()["error"]["code"], json!(-32600), "{}", not_rpc.body);
    let elsewhere = raw.runtime.block_on(async {
        raw.client.post(server.url.replace("/mcp", "/admin")).header("authorization", &bearer).send().await
    });
    assert_eq!(elsewhere.unwrap().status(), StatusCode::NOT_FOUND);
    assert_eq!(count_runs(), 0);

    // After all of that, the same session still works, with an explicit good Host.
    let good = raw.post(execute, &[in_session[0], in_session[1], ("host", &host)]);
    assert_eq!(good.status, StatusCode::OK, "{}", good.body);
    assert_eq!(good.json()["result"]["structuredContent"]["result"], json!("ran"), "{}", good.body);
    assert_eq!(count_runs(), 1, "the accepted call made one run");
    let listed =
        raw.post(json!({"jsonrpc": "2.0", "id": 8, "method": "tools/list"}).to_string(), &in_session);
    assert_eq!(tool_names(&listed.json()["result"]["tools"]), ["search", "describe", "execute"]);
    expect_test::expect![[r#"
        no token: 401 Unauthorized
        wrong token: 401 Unauthorized
        foreign host: 403 Forbidden
        foreign origin: 403 Forbidden
        rebound name: 403 Forbidden
    "#]]
    .assert_eq(&seen);
}

#[test]
fn serve_needs_exactly_one_transport() {
    let dir = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .args(["hub", "serve"])
            .args(args)
            .env("CAPABILITIES_HOME", dir.path().join("hub"))
            .stdin(Stdio::null())
            .output()
            .unwrap();
        format!("{} {}", out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stderr).trim())
    };
    expect_test::expect![[r#"
        2 error: pick a transport: --stdio when an agent starts the hub itself, or --http to serve agents that connect to http://127.0.0.1:4790/mcp
        2 error: pass either --stdio or --http, not both"#]]
    .assert_eq(&format!("{}\n{}", run(&[]), run(&["--stdio", "--http"])));
    assert!(!dir.path().join("hub").exists(), "a usage error touches nothing");
}

/// A store with the reference memory server as source `memory`, for the approval tests.
fn memory_hub(dir: &Path) -> PathBuf {
    let memory_file = dir.join("memory.jsonl");
    let script = packages().join("server-memory/dist/index.js");
    let added = Command::new(env!("CARGO_BIN_EXE_capabilities"))
        .args(["hub", "add", "--yes", "--namespace", "memory", "--env"])
        .arg(format!("MEMORY_FILE_PATH={}", memory_file.display()))
        .args(["--", "node"])
        .arg(&script)
        .env("CAPABILITIES_HOME", Server::home_of(dir))
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(added.status.success(), "hub add failed: {}", String::from_utf8_lossy(&added.stderr));
    memory_file
}

/// How many lines of the memory server's file name entity `name`.
fn entity_lines(memory_file: &Path, name: &str) -> usize {
    let needle = format!("\"name\":\"{name}\"");
    std::fs::read_to_string(memory_file).unwrap_or_default().lines().filter(|l| l.contains(&needle)).count()
}

/// The stored run `id`.
fn stored_run(home: &Path, id: &str) -> Value {
    serde_json::from_slice(&std::fs::read(home.join("runs").join(format!("{id}.json"))).unwrap()).unwrap()
}

/// The official TypeScript SDK v2 client pinned to the stateless revision; `answer` is what the
/// person picks in each form it is handed.
fn stateless_client(server: &Server, calls: Value, answer: &str) -> Value {
    let client = packages().join("client");
    assert!(
        client.join("dist/index.mjs").is_file(),
        "{} is missing: run `cd node && npm ci`",
        client.display()
    );
    let out = Command::new("node")
        .arg(repo().join("local/tests/fixtures/mrtr-client.mjs"))
        .arg(calls.to_string())
        .env("MCP_CLIENT_DIR", client)
        .env("MCP_URL", &server.url)
        .env("MCP_TOKEN", &server.token)
        .env("ANSWER", answer)
        .stderr(Stdio::inherit())
        .output()
        .expect("node starts");
    assert!(out.status.success(), "the client failed: {}", String::from_utf8_lossy(&out.stdout));
    serde_json::from_slice(&out.stdout).expect("the client prints one JSON object")
}

#[test]
fn a_stateless_client_is_handed_the_approval_form_and_the_write_runs_once() {
    let code = r#"await memory.createEntities({entities:[{name:"e",entityType:"t",observations:[]}]});
        return (await memory.readGraph({})).entities.map(e => e.name)"#;
    for (answer, status, result, entities) in [
        ("once", "completed", json!(["e"]), 1),
        ("deny", "completed", json!("approval_denied"), 0),
        ("dismiss", "awaiting_approval", Value::Null, 0),
    ] {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        let memory_file = memory_hub(dir.path());
        let server = Server::start_in(dir.path());
        let code = if answer == "deny" {
            code.replace("await memory.createEntities", "try { await memory.createEntities")
                .replace("});\n", "}) } catch (e) { return e.code }\n")
        } else {
            code.to_owned()
        };
        let seen =
            stateless_client(&server, json!([{ "name": "execute", "arguments": { "code": code } }]), answer);
        assert_eq!(seen["protocolVersion"], "2026-07-28", "{seen}");
        let prompts = seen["prompts"].as_array().expect("prompts");
        assert_eq!(prompts.len(), 1, "{answer}: one form for the one write: {seen}");
        let message = prompts[0]["message"].as_str().unwrap();
        assert!(
            message.contains("Tool: memory.createEntities") && message.contains("\"name\": \"e\""),
            "{message}"
        );
        let envelope = &seen["results"][0]["structuredContent"];
        assert_eq!(envelope["status"], status, "{answer}: {seen}");
        assert_eq!(envelope["result"], result, "{answer}: {envelope}");
        assert_eq!(entity_lines(&memory_file, "e"), entities, "{answer}: the write ran {entities} time(s)");
        let run = stored_run(&server.home(), envelope["runId"].as_str().unwrap());
        match answer {
            "dismiss" => assert_eq!(run["decisions"], json!([]), "a dismissed form decides nothing"),
            _ => {
                assert_eq!(run["decisions"][0]["channel"], "elicitation", "{run}");
                assert_eq!(run["decisions"][0]["choice"], if answer == "deny" { "deny" } else { "once" });
            }
        }
    }
}

#[test]
fn a_signed_state_counts_once_and_a_forged_one_never() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let memory_file = memory_hub(dir.path());
    let server = Server::start_in(dir.path());
    let raw = Raw::new(&server.url);
    let bearer = format!("Bearer {}", server.token);
    let headers = [
        ("authorization", bearer.as_str()),
        ("mcp-protocol-version", "2026-07-28"),
        ("mcp-method", "tools/call"),
        ("mcp-name", "execute"),
    ];
    let call = |id: u32, retry: Value| {
        let mut params = json!({
            "name": "execute",
            "arguments": { "code": r#"return await memory.createEntities({entities:[{name:"f",entityType:"t",observations:[]}]})"# },
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" },
                "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
            },
        });
        if let (Some(params), Some(retry)) = (params.as_object_mut(), retry.as_object()) {
            params.extend(retry.clone());
        }
        raw.post(
            json!({"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params}).to_string(),
            &headers,
        )
        .json()
    };

    let asked = call(1, Value::Null);
    assert_eq!(asked["result"]["resultType"], "input_required", "{asked}");
    let state = asked["result"]["requestState"].as_str().expect("a signed state").to_owned();
    let pending_id = asked["result"]["inputRequests"].as_object().unwrap().keys().next().unwrap().clone();
    let run_id = state.split('.').nth(1).unwrap().to_owned();
    let accept = json!({ pending_id.clone(): { "action": "accept", "content": { "choice": "always" } } });

    // A state signed by another key, or edited to name another call, records nothing.
    let forged = format!("{}{}", &state[..state.len() - 4], "0000");
    let tampered = state.replacen(&pending_id, "p_000000000000", 1);
    for bad in [forged, tampered, "v1.garbage".to_owned()] {
        let answer = call(2, json!({ "inputResponses": accept, "requestState": bad }));
        assert_eq!(answer["result"]["isError"], true, "{answer}");
        assert!(
            answer["result"]["content"][0]["text"].as_str().unwrap().contains("not recorded"),
            "{answer}"
        );
    }
    assert_eq!(stored_run(&server.home(), &run_id)["decisions"], json!([]));
    assert_eq!(entity_lines(&memory_file, "f"), 0);

    // The right state sent with `search` is not read: search answers and records nothing.
    let search_headers = [headers[0], headers[1], headers[2], ("mcp-name", "search")];
    let searched = raw
        .post(
            json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {
                "name": "search",
                "arguments": { "query": "create entities" },
                "inputResponses": accept,
                "requestState": state,
                "_meta": {
                    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                    "io.modelcontextprotocol/clientInfo": { "name": "raw", "version": "0" },
                    "io.modelcontextprotocol/clientCapabilities": { "elicitation": { "form": {} } },
                },
            }})
            .to_string(),
            &search_headers,
        )
        .json();
    let found = searched["result"]["content"][0]["text"].as_str().unwrap_or_default();
    assert!(found.contains("memory.createEntities"), "{searched}");
    assert_eq!(stored_run(&server.home(), &run_id)["decisions"], json!([]));

    let done = call(3, json!({ "inputResponses": accept, "requestState": state }));
    assert_eq!(done["result"]["structuredContent"]["status"], "completed", "{done}");
    assert_eq!(
        done["result"]["structuredContent"]["runId"],
        run_id.as_str(),
        "the retry resumed the run, not a new one"
    );
    assert_eq!(entity_lines(&memory_file, "f"), 1);

    // The same state again: refused, and the code in the retried arguments does not run again.
    let again = call(4, json!({ "inputResponses": accept, "requestState": state }));
    assert_eq!(again["result"]["isError"], true, "{again}");
    assert!(again["result"]["content"][0]["text"].as_str().unwrap().contains("not recorded"), "{again}");
    assert_eq!(entity_lines(&memory_file, "f"), 1);
    assert_eq!(stored_run(&server.home(), &run_id)["decisions"].as_array().map(Vec::len), Some(1));
}

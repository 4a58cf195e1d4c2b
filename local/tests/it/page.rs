//! The approval page, end to end: `hub serve --stdio` with a client that cannot ask the person
//! (no elicitation), the reference memory server as the source, a `$BROWSER` that writes down
//! the address it is given, headless Chromium (`/usr/bin/chromium`, driven by playwright-core)
//! as the person, and raw HTTP requests as the attacker.
//!
//! Needs Node.js, `cd node && npm ci` and Debian's `chromium`; the tests fail (never skip)
//! without them. Screenshots land in `target/tmp/approval-page/`.

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::serve::{hub_home, memory_hub};
use crate::support::{http, playwright, repo};

const CREATE: &str = r#"await memory.createEntities({entities:[{name:"page-test",entityType:"t",observations:["o"]}]}); return "made""#;
const CREATE_OR_CODE: &str = r#"try { await memory.createEntities({entities:[{name:"denied",entityType:"t",observations:[]}]}); return "made" } catch (e) { return e.code }"#;

/// `hub serve --stdio` under a minimal JSON-RPC client that declares no elicitation.
struct Served {
    child: Child,
    stdin: ChildStdin,
    lines: mpsc::Receiver<String>,
    next_id: u64,
    urls: PathBuf,
    _browser_dir: tempfile::TempDir,
}

impl Served {
    fn start(home: &Path) -> Served {
        use std::os::unix::fs::PermissionsExt;
        let browser_dir = tempfile::tempdir().unwrap();
        let urls = browser_dir.path().join("urls.txt");
        let script = browser_dir.path().join("browser.sh");
        std::fs::write(&script, format!("#!/bin/sh\necho \"$1\" >> '{}'\n", urls.display())).unwrap();
        std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o700)).unwrap();
        let mut child = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .args(["hub", "serve", "--stdio"])
            .env("CAPABILITIES_HOME", home)
            .env("BROWSER", &script)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = child.stdout.take().unwrap();
        let (tx, lines) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let mut served = Served { child, stdin, lines, next_id: 1, urls, _browser_dir: browser_dir };
        served.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "page-test", "version": "0"}}),
        );
        served.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
        served
    }

    fn send(&mut self, message: Value) {
        writeln!(self.stdin, "{message}").unwrap();
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next_id;
        self.next_id += 1;
        self.send(json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| panic!("no answer to {method}"));
            let message: Value = serde_json::from_str(&line).expect("stdout holds JSON-RPC lines");
            if message["id"] == json!(id) {
                return message["result"].clone();
            }
        }
    }

    /// `execute` with `arguments`; the envelope and the text the model reads.
    fn execute(&mut self, arguments: Value) -> (Value, String) {
        let result = self.request("tools/call", json!({"name": "execute", "arguments": arguments}));
        (result["structuredContent"].clone(), result.to_string())
    }

    /// The `n`th address (1-based) the hub gave the browser.
    fn url(&self, n: usize) -> String {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&self.urls).unwrap_or_default();
            if let Some(line) = text.lines().nth(n - 1) {
                return line.to_owned();
            }
            assert!(Instant::now() < deadline, "the hub opened no page #{n} in the browser");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `http://127.0.0.1:<port>/p/<token>` into port and path.
fn split(url: &str) -> (u16, String) {
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("a loopback page: {url}"));
    let (port, path) = rest.split_once('/').unwrap();
    (port.parse().unwrap(), format!("/{path}"))
}

fn get(url: &str, host: &str) -> (u16, String) {
    let (port, path) = split(url);
    http(port, &format!("GET {path} HTTP/1.1\nHost: {host}"), "")
}

fn post(url: &str, origin: Option<&str>, form: &str) -> (u16, String) {
    let (port, path) = split(url);
    let origin = origin.map(|o| format!("\nOrigin: {o}")).unwrap_or_default();
    http(
        port,
        &format!(
            "POST {path} HTTP/1.1\nHost: 127.0.0.1:{port}{origin}\nContent-Type: application/x-www-form-urlencoded"
        ),
        form,
    )
}

fn csrf_of(page: &str) -> String {
    let start =
        page.find(r#"name="csrf" value=""#).expect("the page has a form") + r#"name="csrf" value=""#.len();
    page[start..].split('"').next().unwrap().to_owned()
}

fn decisions(home: &Path, run_id: &str) -> usize {
    let run: Value =
        serde_json::from_slice(&std::fs::read(home.join(format!("runs/{run_id}.json"))).unwrap()).unwrap();
    run["decisions"].as_array().map_or(0, Vec::len)
}

fn run_id(envelope: &Value) -> String {
    envelope["runId"].as_str().unwrap().to_owned()
}

/// The person, in Chromium: opens `url`, clicks `label`, returns what the page said after.
fn click(url: &str, label: &str, name: &str) -> String {
    let playwright = playwright();
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("approval-page");
    std::fs::create_dir_all(&shots).unwrap();
    let out = Command::new("node")
        .arg(repo().join("local/tests/fixtures/approval-browser.mjs"))
        .args([url, label, shots.join(name).to_str().unwrap()])
        .env("PLAYWRIGHT_CORE_DIR", &playwright)
        .output()
        .unwrap();
    assert!(out.status.success(), "the browser failed: {}", String::from_utf8_lossy(&out.stderr));
    let seen: Value = serde_json::from_slice(&out.stdout).unwrap();
    let before = seen["before"].as_str().unwrap();
    for shown in ["memory.createEntities", "Why it asks", "Expires", "Arguments", "Allow once", "Deny"] {
        assert!(before.contains(shown), "the page shows {shown}: {before}");
    }
    assert_eq!(seen["afterStatus"], json!(200), "{seen}");
    seen["after"].as_str().unwrap().to_owned()
}

#[test]
fn a_person_allows_once_and_denies_in_the_browser() {
    let home = hub_home();
    memory_hub(home.path());
    let mut served = Served::start(home.path());

    let (waiting, text) = served.execute(json!({"code": CREATE}));
    assert_eq!(waiting["status"], json!("awaiting_approval"), "{waiting}");
    let url = served.url(1);
    let token = url.rsplit('/').next().unwrap();
    assert!(!text.contains(token) && !text.contains("http://"), "the model never sees the page: {text}");
    assert!(text.contains("opened an approval page"), "{text}");

    // Resuming before a decision changes nothing and opens no second page.
    let (again, _) = served.execute(json!({"resume": run_id(&waiting)}));
    assert_eq!(again["status"], json!("awaiting_approval"));

    let after = click(&url, "Allow once", "allow-once");
    assert!(after.contains("Allowed once"), "{after}");
    let (done, _) = served.execute(json!({"resume": run_id(&waiting)}));
    assert_eq!(done["status"], json!("completed"), "{done}");
    assert_eq!(done["result"], json!("made"));
    let (graph, _) =
        served.execute(json!({"code": "return (await memory.readGraph({})).entities.map(e => e.name)"}));
    assert_eq!(graph["result"], json!(["page-test"]), "the entity exists exactly once: {graph}");
    // The page now says it was decided.
    let (status, page) = get(&url, &format!("127.0.0.1:{}", split(&url).0));
    assert_eq!(status, 200);
    assert!(page.contains("Already decided"), "{page}");

    let (waiting, _) = served.execute(json!({"code": CREATE_OR_CODE}));
    assert_eq!(waiting["status"], json!("awaiting_approval"), "{waiting}");
    let after = click(&served.url(2), "Deny", "deny");
    assert!(after.contains("Denied"), "{after}");
    let (done, _) = served.execute(json!({"resume": run_id(&waiting)}));
    assert_eq!(done["result"], json!("approval_denied"), "{done}");
    assert!(std::fs::read_to_string(&served.urls).unwrap().lines().count() == 2, "one page per pending call");
}

#[test]
fn attacks_on_the_page_are_refused_and_record_nothing() {
    let home = hub_home();
    memory_hub(home.path());
    let mut served = Served::start(home.path());
    let (first, _) = served.execute(json!({"code": CREATE}));
    let (second, _) = served.execute(json!({"code": CREATE_OR_CODE}));
    let (first_id, second_id) = (run_id(&first), run_id(&second));
    let (url, other_url) = (served.url(1), served.url(2));
    let (port, path) = split(&url);
    let host = format!("127.0.0.1:{port}");
    let origin = format!("http://127.0.0.1:{port}");

    let (status, page) = get(&url, &host);
    assert_eq!(status, 200, "{page}");
    let csrf = csrf_of(&page);
    let other_csrf = csrf_of(&get(&other_url, &host).1);
    let once = format!("csrf={csrf}&choice=once");

    let refused = [
        ("wrong Host", get(&url, &format!("attacker.example:{port}")).0, 403),
        ("localhost Host", get(&url, &format!("localhost:{port}")).0, 403),
        (
            "GET that tries to decide",
            {
                let (status, _) =
                    http(port, &format!("GET {path}?csrf={csrf}&choice=once HTTP/1.1\nHost: {host}"), "");
                status
            },
            200,
        ),
        ("foreign Origin", post(&url, Some("http://attacker.example"), &once).0, 403),
        ("no Origin", post(&url, None, &once).0, 403),
        ("missing CSRF token", post(&url, Some(&origin), "choice=once").0, 403),
        (
            "wrong CSRF token",
            post(&url, Some(&origin), &format!("csrf={}&choice=once", "0".repeat(64))).0,
            403,
        ),
        (
            "another call's CSRF token",
            post(&url, Some(&origin), &format!("csrf={other_csrf}&choice=once")).0,
            403,
        ),
        (
            "unknown token",
            post(&format!("http://127.0.0.1:{port}/p/{}", "f".repeat(64)), Some(&origin), &once).0,
            404,
        ),
        ("a choice that is not one", post(&url, Some(&origin), &format!("csrf={csrf}&choice=yes")).0, 400),
        ("PUT", http(port, &format!("PUT {path} HTTP/1.1\nHost: {host}"), "").0, 405),
        (
            "oversized form",
            post(&url, Some(&origin), &format!("csrf={csrf}&choice=once&pad={}", "x".repeat(8000))).0,
            413,
        ),
    ];
    for (attack, got, want) in refused {
        assert_eq!(got, want, "{attack}");
    }
    assert_eq!(decisions(home.path(), &first_id), 0, "nothing recorded by any attack");

    // An expired call cannot be decided.
    let record = home.path().join(format!("runs/{second_id}.json"));
    let mut run: Value = serde_json::from_slice(&std::fs::read(&record).unwrap()).unwrap();
    run["pending"][0]["expiresMs"] = json!(1);
    std::fs::write(&record, serde_json::to_vec(&run).unwrap()).unwrap();
    let (status, _) = post(&other_url, Some(&origin), &format!("csrf={other_csrf}&choice=once"));
    assert_eq!(status, 410, "expired");
    assert_eq!(decisions(home.path(), &second_id), 0);

    // The real decision counts once; the same token again is refused.
    let (status, page) = post(&url, Some(&origin), &once);
    assert_eq!(status, 200, "{page}");
    assert!(page.contains("Allowed once"));
    let (status, page) = post(&url, Some(&origin), &format!("csrf={csrf}&choice=deny"));
    assert_eq!(status, 409, "token reuse: {page}");
    assert!(page.contains("Already decided"));
    assert_eq!(decisions(home.path(), &first_id), 1);
    let (done, _) = served.execute(json!({"resume": first_id}));
    assert_eq!(done["status"], json!("completed"), "{done}");
}

//! OAuth connections end to end, with the real binary against `node/oauth/server.mjs`: a real
//! oidc-provider authorization server behind a tampering proxy, in front of a TypeScript SDK MCP
//! server that takes only its bearer tokens, signed in through the `$BROWSER` stand-in
//! (`node/oauth/browser`). Each test has a fixture process and a hub store of its own.
//!
//! Needs `cd node && npm ci` at the repository root (the pinned node and oidc-provider); the
//! Secret Service test also needs `dbus-run-session`, `gnome-keyring-daemon` and `secret-tool`.
//! The tests fail, never skip, without them.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::support::repo;

const BIN: &str = env!("CARGO_BIN_EXE_capabilities");

/// The hint every refused refresh must carry, in the envelope the person or model reads.
pub(crate) const AUTH_HINT: &str = "capabilities hub auth fx --connection default";

// ---- the fixture -------------------------------------------------------------------------------

/// `node/oauth/server.mjs` under the pinned node; it exits when its stdin closes (on drop).
pub(crate) struct Fixture {
    child: Child,
    stdin: Option<ChildStdin>,
    pub(crate) issuer: String,
    mcp: String,
    control: String,
    /// The REST API's base URL; its OpenAPI documents are `<api>/openapi*.json`.
    pub(crate) api: String,
    runtime: tokio::runtime::Runtime,
    client: reqwest::Client,
}

impl Fixture {
    pub(crate) fn start(access_ttl: u64) -> Fixture {
        let node = repo().join("node/node_modules/.bin/node");
        let script = repo().join("node/oauth/server.mjs");
        assert!(
            node.exists() && repo().join("node/node_modules/oidc-provider/package.json").is_file(),
            "the pinned node or oidc-provider is missing: run `cd node && npm ci` at the repository root"
        );
        let mut child = Command::new(node)
            .arg(script)
            .args(["--access-ttl", &access_ttl.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let said: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("fixture said {line:?}: {e}"));
        let text = |key: &str| said[key].as_str().unwrap_or_else(|| panic!("no {key} in {line}")).to_owned();
        Fixture {
            issuer: text("issuer"),
            mcp: text("mcp"),
            control: text("control"),
            api: text("api"),
            child,
            stdin,
            runtime: tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap(),
            // No pooled connections: node closes idle ones after 5 s, and a request sent on one
            // it is closing fails.
            client: reqwest::Client::builder().pool_max_idle_per_host(0).build().unwrap(),
        }
    }

    /// `POST /__control` with `body` (`{"mode": …}` or `{"revoke": true}`).
    pub(crate) fn control(&self, body: Value) {
        let answer: Value = self.runtime.block_on(async {
            let response = self.client.post(&self.control).json(&body).send().await.unwrap();
            assert!(response.status().is_success(), "control {body}: {}", response.status());
            response.json().await.unwrap()
        });
        assert_eq!(answer["ok"], json!(true), "control {body}: {answer}");
    }

    pub(crate) fn mode(&self, mode: &str) {
        self.control(json!({ "mode": mode }));
    }

    pub(crate) fn stats(&self) -> Value {
        let url = self.control.replace("/__control", "/__stats");
        self.runtime.block_on(async { self.client.get(url).send().await.unwrap().json().await.unwrap() })
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub(crate) fn count(stats: &Value, path: &[&str]) -> u64 {
    let mut value = stats;
    for key in path {
        value = &value[*key];
    }
    value.as_u64().unwrap_or_else(|| panic!("no {path:?} in {stats}"))
}

// ---- the hub -----------------------------------------------------------------------------------

/// One hub store in a private temporary directory, with the browser stand-in's log beside it.
pub(crate) struct Hub {
    dir: tempfile::TempDir,
}

#[derive(Debug)]
pub(crate) struct Ran {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
    pub(crate) took: Duration,
}

impl Ran {
    pub(crate) fn envelope(&self) -> Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("not an envelope ({e}): {}\n{}", self.stdout, self.stderr))
    }

    pub(crate) fn all(&self) -> String {
        format!("exit {}\nstdout: {}\nstderr: {}", self.code, self.stdout, self.stderr)
    }
}

impl Hub {
    pub(crate) fn new() -> Hub {
        let dir = tempfile::tempdir().unwrap();
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Hub { dir }
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    pub(crate) fn browser_log(&self) -> PathBuf {
        self.dir.path().join("browser.log")
    }

    /// The environment of every hub process: the store, the browser stand-in, the file store
    /// for secrets, and a sign-in wait short enough that a broken test does not hang.
    pub(crate) fn envs(&self) -> Vec<(&'static str, String)> {
        let home = self.dir.path().join("home").display().to_string();
        vec![
            ("CAPABILITIES_HOME", self.home().display().to_string()),
            ("CAPABILITIES_KEYCHAIN", "file".to_owned()),
            ("BROWSER", repo().join("node/oauth/browser").display().to_string()),
            ("BROWSER_STANDIN_LOG", self.browser_log().display().to_string()),
            ("CAPABILITIES_SIGN_IN_TIMEOUT_SECS", "60".to_owned()),
            ("HOME", home.clone()),
            ("XDG_RUNTIME_DIR", home),
            ("NO_COLOR", "1".to_owned()),
        ]
    }

    pub(crate) fn command(&self, args: &[&str], extra: &[(&str, &str)]) -> Command {
        let mut command = Command::new(BIN);
        command
            .arg("hub")
            .args(args)
            .env_remove("BROWSER_STANDIN_MODE")
            .envs(self.envs())
            .env(
                "DBUS_SESSION_BUS_ADDRESS",
                format!("unix:path={}", self.dir.path().join("no-bus").display()),
            )
            .envs(extra.iter().copied());
        command
    }

    pub(crate) fn run_with(&self, args: &[&str], extra: &[(&str, &str)]) -> Ran {
        let started = Instant::now();
        let out = self.command(args, extra).stdin(Stdio::null()).output().unwrap();
        Ran {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            took: started.elapsed(),
        }
    }

    pub(crate) fn run(&self, args: &[&str]) -> Ran {
        self.run_with(args, &[])
    }

    fn add(&self, fixture: &Fixture) -> Ran {
        self.add_with(fixture, &[])
    }

    fn add_with(&self, fixture: &Fixture, extra: &[(&str, &str)]) -> Ran {
        self.run_with(&["add", &fixture.mcp, "--namespace", "fx", "--yes"], extra)
    }

    /// `hub call fx.whoami --json`.
    fn whoami(&self) -> Ran {
        self.run(&["call", "fx.whoami", "--json"])
    }

    pub(crate) fn secrets_json(&self) -> Option<Value> {
        let text = std::fs::read_to_string(self.home().join("secrets.json")).ok()?;
        Some(serde_json::from_str(&text).expect("secrets.json parses"))
    }

    /// The stored token set of `fx/default`, parsed.
    pub(crate) fn tokens(&self) -> Value {
        let secrets = self.secrets_json().expect("secrets.json exists");
        let text = secrets["values"]["fx"]["default"]["#oauth"]
            .as_str()
            .unwrap_or_else(|| panic!("no fx/default/#oauth in {secrets}"));
        serde_json::from_str(text).unwrap()
    }

    pub(crate) fn browser_runs(&self) -> usize {
        std::fs::read_to_string(self.browser_log()).unwrap_or_default().lines().count()
    }

    /// Sleeps until the stored access token has expired (by the hub's own record), plus a bit.
    pub(crate) fn wait_past_expiry(&self) {
        let expires = self.tokens()["expiresMs"].as_u64().expect("the token set says when it expires");
        let now =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
        std::thread::sleep(Duration::from_millis(expires.saturating_sub(now) + 600));
    }

    /// Why `fx` is not cleanly absent: a record of it, or a secret under it.
    pub(crate) fn leftovers(&self) -> Vec<String> {
        let mut found = Vec::new();
        for record in ["sources/fx.json", "connections/fx.json", "manifests/fx.json"] {
            if self.home().join(record).exists() {
                found.push(record.to_owned());
            }
        }
        if let Some(secrets) = self.secrets_json()
            && secrets["values"].get("fx").is_some()
        {
            found.push(format!("secrets.json holds fx: {secrets}"));
        }
        found
    }

    /// Every file under the store with its bytes.
    pub(crate) fn files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
                let path = entry.path();
                if path.is_dir() {
                    walk(&path, out);
                } else if let Ok(bytes) = std::fs::read(&path) {
                    out.push((path, bytes));
                }
            }
        }
        let mut out = Vec::new();
        walk(&self.home(), &mut out);
        out
    }
}

pub(crate) fn holds(haystack: &[u8], needle: &str) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle.as_bytes())
}

fn require(tool: &str, package: &str) {
    let found = Command::new("sh")
        .args(["-c", &format!("command -v {tool}")])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(found, "`{tool}` is not on PATH: install it with `apt-get install {package}`");
}

/// The envelope of a call that failed for want of a sign-in: its code, and whether the hint
/// naming `hub auth` reached the envelope anywhere.
pub(crate) fn assert_auth_required(ran: &Ran) -> Value {
    assert_eq!(ran.code, 3, "{}", ran.all());
    let envelope = ran.envelope();
    assert_eq!(envelope["status"], "failed", "{}", ran.stdout);
    assert_eq!(envelope["error"]["code"], "auth_required", "{}", ran.stdout);
    let message = envelope["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("connection `default` of `fx` needs signing in again"), "{}", ran.stdout);
    envelope
}

pub(crate) fn hint_problem(what: &str, envelope: &Value) -> Option<String> {
    (!envelope.to_string().contains(AUTH_HINT))
        .then(|| format!("{what}: the envelope does not name `{AUTH_HINT}`: {envelope:#}"))
}

/// `hub add` with a signed-in connection: the records, the client, the tokens.
fn add_and_check(hub: &Hub, fixture: &Fixture) -> Ran {
    let added = hub.add(fixture);
    assert_eq!(added.code, 0, "{}", added.all());
    assert_eq!(added.stdout, "added `fx` with 2 tools\n");
    assert!(added.stderr.contains("`fx` asks you to sign in (OAuth)"), "{}", added.stderr);
    assert!(added.stderr.contains("signed in; the tokens are in"), "{}", added.stderr);
    let connections: Value =
        serde_json::from_slice(&std::fs::read(hub.home().join("connections/fx.json")).unwrap()).unwrap();
    let client = &connections["connections"][0]["oauth"];
    assert_eq!(connections["default"], "default", "{connections}");
    assert_eq!(client["issuer"], json!(fixture.issuer), "{connections}");
    assert_eq!(client["tokenEndpoint"], json!(format!("{}/token", fixture.issuer)), "{connections}");
    assert_eq!(client["resource"], json!(fixture.mcp), "{connections}");
    assert_eq!(client["registration"], "registered", "{connections}");
    assert_eq!(client["clientAuth"], "none", "{connections}");
    let tokens = hub.tokens();
    assert!(tokens["accessToken"].as_str().is_some_and(|t| t.len() > 20), "{tokens}");
    assert!(tokens["refreshToken"].as_str().is_some_and(|t| t.len() > 20), "{tokens}");
    assert_eq!(tokens.get("needsSignIn"), None, "{tokens}");
    added
}

fn assert_whoami(ran: &Ran, calls: u64) {
    assert_eq!(ran.code, 0, "{}", ran.all());
    let envelope = ran.envelope();
    assert_eq!(envelope["status"], "completed", "{}", ran.stdout);
    assert_eq!(envelope["result"], json!(format!("sub=alice calls={calls}")), "{}", ran.stdout);
}

/// Test 1's flow: add, call, wait past the access token's expiry, call again. Every command's
/// output and the token sets stored along the way.
fn sign_in_call_refresh(hub: &Hub, fixture: &Fixture) -> (Vec<Ran>, Vec<Value>) {
    let added = add_and_check(hub, fixture);
    let first_tokens = hub.tokens();
    let first = hub.whoami();
    assert_whoami(&first, 1);
    assert_eq!(hub.tokens(), first_tokens, "a good token is used as it is");
    hub.wait_past_expiry();
    let second = hub.whoami();
    assert_whoami(&second, 2);
    let refreshed = hub.tokens();
    assert_ne!(refreshed["accessToken"], first_tokens["accessToken"], "a new access token was stored");
    assert_ne!(refreshed["refreshToken"], first_tokens["refreshToken"], "the refresh token rotated");
    (vec![added, first, second], vec![first_tokens, refreshed])
}

// ---- 1. sign-in, call, refresh -----------------------------------------------------------------

#[test]
fn sign_in_then_an_expired_token_is_refreshed_without_a_prompt() {
    let fixture = Fixture::start(3);
    let hub = Hub::new();
    sign_in_call_refresh(&hub, &fixture);
    let stats = fixture.stats();
    assert_eq!(count(&stats, &["token_requests", "authorization_code"]), 1, "{stats}");
    assert!(count(&stats, &["token_requests", "refresh_token"]) >= 1, "{stats}");
    assert_eq!(count(&stats, &["refresh_failures"]), 0, "{stats}");
    assert_eq!(count(&stats, &["token_failures"]), 0, "{stats}");
    assert_eq!(count(&stats, &["registrations"]), 1, "{stats}");
    // Only the first, unauthenticated request was refused: the refresh came before expiry
    // bit, not after a 401.
    assert_eq!(count(&stats, &["mcp_401"]), 1, "{stats}");
    assert_eq!(count(&stats, &["tool_calls"]), 2, "{stats}");
    assert_eq!(
        hub.browser_runs(),
        1,
        "the browser opened once: {:?}",
        std::fs::read_to_string(hub.browser_log())
    );
}

// ---- 2. eight servers refreshing at once -------------------------------------------------------

/// One `hub serve --stdio` spoken to in raw JSON-RPC lines.
struct Stdio1 {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<std::process::ChildStdout>,
    next: u64,
}

impl Stdio1 {
    pub(crate) fn start(hub: &Hub) -> Stdio1 {
        let mut child = hub
            .command(&["serve", "--stdio"], &[])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap());
        let mut server = Stdio1 { child, stdin, stdout, next: 1 };
        let init = server.request(
            "initialize",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "oauth-test", "version": "0"}}),
        );
        assert!(init["result"]["protocolVersion"].is_string(), "{init}");
        writeln!(server.stdin, "{}", json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .unwrap();
        server
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        writeln!(self.stdin, "{}", json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .unwrap();
        let mut line = String::new();
        loop {
            line.clear();
            assert!(self.stdout.read_line(&mut line).unwrap() > 0, "serve --stdio closed stdout");
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == json!(id) {
                return message;
            }
        }
    }

    fn execute(&mut self, code: &str) -> Value {
        let answer = self.request("tools/call", json!({"name": "execute", "arguments": {"code": code}}));
        answer["result"]["structuredContent"].clone()
    }
}

impl Drop for Stdio1 {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn eight_servers_share_one_refresh_per_expiry() {
    const SERVERS: usize = 8;
    const RUN: Duration = Duration::from_secs(10);
    let ttl = 3;
    let fixture = Fixture::start(ttl);
    let hub = Arc::new(Hub::new());
    add_and_check(&hub, &fixture);
    let barrier = Arc::new(Barrier::new(SERVERS));
    let started = Instant::now();
    let threads: Vec<_> = (0..SERVERS)
        .map(|_| {
            let (hub, barrier) = (hub.clone(), barrier.clone());
            std::thread::spawn(move || {
                let mut server = Stdio1::start(&hub);
                barrier.wait();
                let until = Instant::now() + RUN;
                let mut seen = Vec::new();
                while Instant::now() < until {
                    seen.push(server.execute("return await fx.whoami({})"));
                    std::thread::sleep(Duration::from_millis(100));
                }
                seen
            })
        })
        .collect();
    let per_server: Vec<Vec<Value>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    let elapsed = started.elapsed();
    let counts: Vec<usize> = per_server.iter().map(Vec::len).collect();
    let seen: Vec<Value> = per_server.into_iter().flatten().collect();
    let failed: Vec<&Value> = seen
        .iter()
        .filter(|s| {
            s["status"] != "completed"
                || !s["result"].as_str().is_some_and(|r| r.starts_with("sub=alice calls="))
        })
        .collect();
    assert!(failed.is_empty(), "{} of {} calls failed, first: {:#}", failed.len(), seen.len(), failed[0]);
    let stats = fixture.stats();
    let refreshes = count(&stats, &["token_requests", "refresh_token"]);
    // A token this short is replaced a second early (the server counts whole seconds): one
    // refresh per 2 s of running.
    let expiries = elapsed.as_millis() as u64 / (ttl * 1000 - 1000);
    eprintln!(
        "calls per server {counts:?} in {elapsed:?}, {refreshes} refreshes, {expiries} expiries: {stats}"
    );
    // Each server kept calling across the expiries (a call takes longer on a loaded machine).
    assert!(counts.iter().all(|&n| n >= 4), "calls per server: {counts:?} in {elapsed:?}");
    assert_eq!(count(&stats, &["refresh_failures"]), 0, "{stats}");
    assert_eq!(count(&stats, &["token_failures"]), 0, "{stats}");
    assert_eq!(count(&stats, &["token_requests", "authorization_code"]), 1, "{stats}");
    assert!(refreshes >= 3, "the run crossed several expiries: {stats}");
    assert!(refreshes <= expiries + 2, "{refreshes} refreshes for {expiries} expiries: {stats}");
    assert_eq!(hub.browser_runs(), 1);
}

// ---- 3. revoked --------------------------------------------------------------------------------

#[test]
fn a_revoked_grant_asks_for_hub_auth_which_signs_in_again() {
    let fixture = Fixture::start(3);
    let hub = Hub::new();
    add_and_check(&hub, &fixture);
    fixture.control(json!({"revoke": true}));
    hub.wait_past_expiry();
    let refused = hub.whoami();
    let envelope = assert_auth_required(&refused);
    assert!(envelope["error"]["message"].as_str().unwrap().contains("invalid_grant"), "{}", refused.stdout);
    assert!(hub.tokens()["needsSignIn"].is_string(), "{}", hub.tokens());
    assert_eq!(count(&fixture.stats(), &["refresh_failures"]), 1);

    let auth = hub.run(&["auth", "fx", "--yes"]);
    assert_eq!(auth.code, 0, "{}", auth.all());
    assert!(auth.stdout.starts_with("signed in `fx` connection `default`"), "{}", auth.all());
    assert_eq!(hub.browser_runs(), 2);
    assert_eq!(hub.tokens().get("needsSignIn"), None, "{}", hub.tokens());
    let again = hub.whoami();
    assert_whoami(&again, 1);
    let stats = fixture.stats();
    assert_eq!(count(&stats, &["token_requests", "authorization_code"]), 2, "{stats}");
    if let Some(problem) = hint_problem("revoked grant", &envelope) {
        panic!("{problem}");
    }
}

// ---- 4. bad input stores nothing ---------------------------------------------------------------

fn refusals(fixture: &Fixture, cases: &[(&str, Option<&str>, &str)]) {
    let mut problems = Vec::new();
    for (mode, browser, phrase) in cases {
        fixture.mode(mode);
        let hub = Hub::new();
        let mut extra = vec![("CAPABILITIES_SIGN_IN_TIMEOUT_SECS", "2")];
        if let Some(browser) = browser {
            extra.push(("BROWSER_STANDIN_MODE", browser));
        }
        let ran = hub.add_with(fixture, &extra);
        let case = format!("{mode}/{}", browser.unwrap_or("normal"));
        eprintln!(
            "{case}: {:?} {}",
            ran.took,
            ran.stderr.lines().find(|l| l.starts_with("error:")).unwrap_or("")
        );
        if ran.code != 1 {
            problems.push(format!("{case}: exit {} (not 1)\n{}", ran.code, ran.all()));
        }
        if !ran.stderr.contains(phrase) || !ran.stderr.contains("nothing was stored") {
            problems
                .push(format!("{case}: stderr lacks {phrase:?} or \"nothing was stored\":\n{}", ran.stderr));
        }
        if !ran.stdout.is_empty() {
            problems.push(format!("{case}: stdout {:?}", ran.stdout));
        }
        let left = hub.leftovers();
        if !left.is_empty() {
            problems.push(format!("{case}: stored {left:?}"));
        }
        if *browser == Some("ignore")
            && !(ran.took >= Duration::from_secs(2) && ran.took < Duration::from_secs(15))
        {
            problems.push(format!("{case}: waited {:?} for a 2 s timeout", ran.took));
        }
    }
    fixture.mode("normal");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn a_bad_authorization_server_leaves_nothing_stored() {
    let fixture = Fixture::start(30);
    refusals(
        &fixture,
        &[
            ("issuer-mismatch", None, "named itself `http://evil.example`"),
            ("no-s256", None, "does not offer PKCE with S256"),
            (
                "plain-http-public",
                None,
                "`http://as.example.com/auth` is plain http to another machine; use https",
            ),
            ("token-wrong-type", None, "its token type is `mac`, and the hub sends only bearer tokens"),
            // rmcp's words (serde's), not the hub's "its answer has no `access_token`".
            ("token-no-access-token", None, "the authorization server's token answer has no `access_token`"),
            // rmcp's words; they say neither why nor that the answer was too big.
            ("token-huge", None, "gave no usable answer (none within 30 seconds, or one too large to read)"),
        ],
    );
    let stats = fixture.stats();
    assert_eq!(count(&stats, &["tool_calls"]), 0, "{stats}");
}

#[test]
fn a_bad_browser_answer_leaves_nothing_stored() {
    let fixture = Fixture::start(30);
    refusals(
        &fixture,
        &[
            ("normal", Some("deny"), "signing in was refused at the authorization server"),
            ("normal", Some("wrong-state"), "a `state` that is not the one this sign-in sent"),
            ("normal", Some("wrong-iss"), "named itself `http://evil.example`"),
            // It says "within 1 minutes" for a 2 s wait.
            ("normal", Some("ignore"), "nobody finished signing in within"),
        ],
    );
    let stats = fixture.stats();
    assert_eq!(count(&stats, &["token_requests", "authorization_code"]), 0, "no code was exchanged: {stats}");
}

/// rmcp's token request gives up after 30 s (measured 30.4 s).
#[test]
fn a_token_endpoint_that_never_answers_times_out() {
    let fixture = Fixture::start(30);
    refusals(
        &fixture,
        &[("token-hang", None, "gave no usable answer (none within 30 seconds, or one too large to read)")],
    );
}

// ---- 5. a refresh that works once --------------------------------------------------------------

#[test]
fn a_refused_second_refresh_drops_the_tokens_and_asks_for_a_sign_in() {
    let fixture = Fixture::start(3);
    let hub = Hub::new();
    add_and_check(&hub, &fixture);
    let signed_in = hub.tokens();
    fixture.mode("refresh-rotate-then-fail");
    hub.wait_past_expiry();
    assert_whoami(&hub.whoami(), 1);
    let rotated = hub.tokens();
    assert_ne!(rotated["refreshToken"], signed_in["refreshToken"], "rotated: {rotated}");
    hub.wait_past_expiry();
    let refused = hub.whoami();
    let envelope = assert_auth_required(&refused);
    assert!(envelope["error"]["message"].as_str().unwrap().contains("invalid_grant"), "{}", refused.stdout);
    let stored = hub.tokens();
    assert_eq!(stored["accessToken"], "", "{stored}");
    assert_eq!(stored.get("refreshToken"), None, "{stored}");
    assert!(stored["needsSignIn"].as_str().is_some_and(|why| why.contains("invalid_grant")), "{stored}");
    let stats = fixture.stats();
    assert_eq!(count(&stats, &["token_requests", "refresh_token"]), 2, "{stats}");
    assert_eq!(count(&stats, &["refresh_failures"]), 1, "{stats}");

    // Once marked, a call asks for a sign-in without trying the token endpoint again.
    assert_auth_required(&hub.whoami());
    assert_eq!(count(&fixture.stats(), &["token_requests", "refresh_token"]), 2);
    if let Some(problem) = hint_problem("refused refresh", &envelope) {
        panic!("{problem}");
    }
}

// ---- 6. always 401 -----------------------------------------------------------------------------

#[test]
fn a_server_that_refuses_every_token_fails_the_call_promptly() {
    let fixture = Fixture::start(30);
    let hub = Hub::new();
    add_and_check(&hub, &fixture);
    let before = fixture.stats();
    fixture.mode("always-401");
    let refused = hub.whoami();
    let envelope = assert_auth_required(&refused);
    assert!(refused.took < Duration::from_secs(10), "took {:?}", refused.took);
    assert!(envelope["error"]["message"].as_str().unwrap().contains("HTTP 401"), "{}", refused.stdout);
    let after = fixture.stats();
    let answered_401 = count(&after, &["mcp_401"]) - count(&before, &["mcp_401"]);
    let refreshes = count(&after, &["token_requests", "refresh_token"])
        - count(&before, &["token_requests", "refresh_token"]);
    assert!((1..=4).contains(&answered_401), "{answered_401} 401s: {after}");
    assert!(refreshes <= 1, "{refreshes} refreshes for one call: {after}");
    assert_eq!(count(&after, &["tool_calls"]), 0, "{after}");
    assert_eq!(hub.browser_runs(), 1, "no sign-in started by itself");
}

// ---- 7. no token leaks -------------------------------------------------------------------------

#[test]
fn no_token_reaches_a_file_or_the_output() {
    let fixture = Fixture::start(3);
    let hub = Hub::new();
    let (ran, token_sets) = sign_in_call_refresh(&hub, &fixture);
    let mut secrets = Vec::new();
    for set in &token_sets {
        for key in ["accessToken", "refreshToken"] {
            let value = set[key].as_str().unwrap().to_owned();
            // A JWT's signature alone is as good as a leak of the token.
            if let Some(signature) = value.rsplit('.').next().filter(|s| s.len() >= 20 && *s != value) {
                secrets.push(signature.to_owned());
            }
            secrets.push(value);
        }
    }
    let files = hub.files();
    assert!(files.iter().any(|(p, _)| p.to_string_lossy().ends_with(".journal.jsonl")), "runs were kept");
    let mut leaks = Vec::new();
    for secret in &secrets {
        for (path, bytes) in &files {
            if path.file_name().is_some_and(|n| n == "secrets.json") {
                continue;
            }
            if holds(bytes, secret) {
                leaks.push(path.display().to_string());
            }
        }
        for (i, ran) in ran.iter().enumerate() {
            if ran.stdout.contains(secret.as_str()) || ran.stderr.contains(secret.as_str()) {
                leaks.push(format!("output of command {i}"));
            }
        }
    }
    assert_eq!(leaks, Vec::<String>::new());
}

// ---- 8. a real Secret Service ------------------------------------------------------------------

#[test]
fn tokens_live_in_a_real_secret_service() {
    require("dbus-run-session", "dbus-daemon");
    require("gnome-keyring-daemon", "gnome-keyring");
    require("secret-tool", "libsecret-tools");
    let fixture = Fixture::start(3);
    let hub = Hub::new();
    let out = hub.dir.path().join("out");
    std::fs::create_dir_all(&out).unwrap();
    let script = r#"
        set -u
        printf pw | gnome-keyring-daemon --unlock --components=secrets >/dev/null || exit 20
        "$BIN" hub add "$MCP" --namespace fx --yes >"$OUT/add.out" 2>"$OUT/add.err" || exit 21
        secret-tool lookup service capabilities.sh username 'fx/default/#oauth' >"$OUT/first" || exit 22
        "$BIN" hub call fx.whoami --json >"$OUT/call1.json" 2>"$OUT/call1.err" || exit 23
        sleep 4
        "$BIN" hub call fx.whoami --json >"$OUT/call2.json" 2>"$OUT/call2.err" || exit 24
        secret-tool lookup service capabilities.sh username 'fx/default/#oauth' >"$OUT/second" || exit 25
    "#;
    let ran = Command::new("dbus-run-session")
        .args(["--", "sh", "-c", script])
        .envs(hub.envs())
        .env("CAPABILITIES_KEYCHAIN", "keychain")
        .env_remove("DBUS_SESSION_BUS_ADDRESS")
        .env_remove("BROWSER_STANDIN_MODE")
        .env("BIN", BIN)
        .env("MCP", &fixture.mcp)
        .env("OUT", &out)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let read = |name: &str| std::fs::read_to_string(out.join(name)).unwrap_or_default();
    let report = format!(
        "exit {:?}\nstderr: {}\nadd: {}{}\ncall1: {}{}\ncall2: {}{}",
        ran.status.code(),
        String::from_utf8_lossy(&ran.stderr),
        read("add.out"),
        read("add.err"),
        read("call1.json"),
        read("call1.err"),
        read("call2.json"),
        read("call2.err")
    );
    assert!(ran.status.success(), "{report}");
    assert_eq!(read("add.out"), "added `fx` with 2 tools\n", "{report}");
    assert!(read("add.err").contains("the tokens are in the OS keychain"), "{report}");
    for (file, calls) in [("call1.json", 1), ("call2.json", 2)] {
        let envelope: Value = serde_json::from_str(&read(file)).unwrap_or_else(|_| panic!("{report}"));
        assert_eq!(envelope["result"], json!(format!("sub=alice calls={calls}")), "{report}");
    }
    let first: Value = serde_json::from_str(&read("first")).unwrap_or_else(|_| panic!("{report}"));
    let second: Value = serde_json::from_str(&read("second")).unwrap_or_else(|_| panic!("{report}"));
    assert_ne!(first["accessToken"], second["accessToken"], "the refreshed token is in the keychain");
    assert_ne!(first["refreshToken"], second["refreshToken"]);
    let stats = fixture.stats();
    assert_eq!(count(&stats, &["token_requests", "authorization_code"]), 1, "{stats}");
    assert!(count(&stats, &["token_requests", "refresh_token"]) >= 1, "{stats}");
    assert_eq!(count(&stats, &["refresh_failures"]), 0, "{stats}");
    assert!(!hub.home().join("secrets.json").exists(), "no fallback file");
    for set in [&first, &second] {
        let token = set["accessToken"].as_str().unwrap();
        let files: Vec<_> =
            hub.files().into_iter().filter(|(_, b)| holds(b, token)).map(|(p, _)| p).collect();
        assert_eq!(files, Vec::<PathBuf>::new());
    }
}

// ---- 9. serve --http never passes a 401 on -----------------------------------------------------

#[test]
fn serve_http_answers_an_upstream_401_inside_a_200() {
    let fixture = Fixture::start(30);
    let hub = Hub::new();
    add_and_check(&hub, &fixture);
    let mut child = hub
        .command(&["serve", "--http", "--port", "0"], &[])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut url = None;
    let mut line = String::new();
    while url.is_none() && stderr.read_line(&mut line).unwrap() > 0 {
        url = line.trim().strip_prefix("serving on ").map(str::to_owned);
        line.clear();
    }
    std::thread::spawn(move || for _ in stderr.lines() {});
    struct Killed(Child);
    impl Drop for Killed {
        fn drop(&mut self) {
            let _ = self.0.kill();
            let _ = self.0.wait();
        }
    }
    let _server = Killed(child);
    let url = url.expect("the server printed its URL");
    let token = std::fs::read_to_string(hub.home().join("http-token")).unwrap().trim().to_owned();
    let bearer = format!("Bearer {token}");

    let post = |body: Value, session: Option<&str>| -> (u16, Option<String>, Value) {
        fixture.runtime.block_on(async {
            let mut request = fixture
                .client
                .post(&url)
                .header("authorization", &bearer)
                .header("accept", "application/json, text/event-stream")
                .json(&body);
            if let Some(session) = session {
                request = request.header("mcp-session-id", session);
            }
            let response = request.send().await.unwrap();
            let status = response.status().as_u16();
            let session = response.headers().get("mcp-session-id").map(|v| v.to_str().unwrap().to_owned());
            let text = response.text().await.unwrap();
            let json = text
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .map(str::trim)
                .rfind(|l| !l.is_empty())
                .unwrap_or(&text);
            (status, session, serde_json::from_str(json).unwrap_or(Value::Null))
        })
    };
    let (status, session, init) = post(
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25",
            "capabilities": {}, "clientInfo": {"name": "oauth-test", "version": "0"}}}),
        None,
    );
    assert_eq!(status, 200, "{init}");
    let session = session.expect("a session id");
    post(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}), Some(&session));
    let execute = |id: u64| {
        json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
               "params": {"name": "execute", "arguments": {"code": "return await fx.whoami({})"}}})
    };
    let (status, _, ok) = post(execute(2), Some(&session));
    assert_eq!(status, 200, "{ok}");
    assert_eq!(ok["result"]["structuredContent"]["result"], "sub=alice calls=1", "{ok}");

    fixture.mode("always-401");
    let (status, _, refused) = post(execute(3), Some(&session));
    assert_eq!(status, 200, "the hub's client gets no 401 of the source's: {refused}");
    assert_eq!(refused.get("error"), None, "a result, not a JSON-RPC error: {refused}");
    let envelope = &refused["result"]["structuredContent"];
    assert_eq!(envelope["status"], "failed", "{refused}");
    assert_eq!(envelope["error"]["code"], "auth_required", "{refused}");
    assert_eq!(refused["result"]["isError"], json!(true), "{refused}");
    assert!(count(&fixture.stats(), &["mcp_401"]) <= 1 + 4, "{}", fixture.stats());
}

// ---- 10. a harness's remote server, imported, signed in, refreshed -----------------------------

/// The closing journey of the OAuth work as a person meets it: Claude Code has the remote
/// server (added with its own CLI), `hub init --import` brings it in without failing and names
/// `hub auth`, which signs in and reads the tools; calls work, and after the token expires the
/// next one refreshes with no prompt.
#[test]
fn a_claude_code_remote_server_is_imported_signed_in_and_refreshed() {
    let fixture = Fixture::start(3);
    let hub = Hub::new();
    let claude = repo().join("node/node_modules/.bin/claude");
    assert!(claude.exists(), "{} is missing: run `cd node && npm ci`", claude.display());
    let home = hub.dir.path().join("home");
    let added = Command::new(&claude)
        .args(["mcp", "add", "--transport", "http", "-s", "user", "fixture", &fixture.mcp])
        .env("HOME", &home)
        .current_dir(&home)
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert!(added.status.success(), "claude mcp add: {}", String::from_utf8_lossy(&added.stderr));

    let init = hub.run(&["init", "--import", "--yes"]);
    assert_eq!(init.code, 0, "{}", init.all());
    assert!(
        init.stdout.contains("added `fixture`; it wants a sign-in before its tools can be read"),
        "{}",
        init.all()
    );
    assert!(init.stderr.contains("run `capabilities hub auth fixture` to sign in"), "{}", init.all());
    assert_eq!(hub.browser_runs(), 0, "importing opens no browser");

    let auth = hub.run(&["auth", "fixture", "--yes"]);
    assert_eq!(auth.code, 0, "{}", auth.all());
    assert!(auth.stdout.contains("read 2 tools of `fixture`"), "{}", auth.all());

    let call = |n: u64| {
        let ran = hub.run(&["call", "fixture.whoami", "--json"]);
        let envelope = ran.envelope();
        assert_eq!(envelope["status"], "completed", "{}", ran.all());
        assert_eq!(envelope["result"], json!(format!("sub=alice calls={n}")), "{}", ran.all());
    };
    call(1);
    let secrets = hub.secrets_json().unwrap();
    let tokens: Value =
        serde_json::from_str(secrets["values"]["fixture"]["default"]["#oauth"].as_str().unwrap()).unwrap();
    let expires = tokens["expiresMs"].as_u64().unwrap();
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64;
    std::thread::sleep(Duration::from_millis(expires.saturating_sub(now) + 600));
    call(2);
    let stats = fixture.stats();
    assert!(count(&stats, &["token_requests", "refresh_token"]) >= 1, "{stats}");
    assert_eq!(hub.browser_runs(), 1, "one sign-in, no prompt at the refresh");
}

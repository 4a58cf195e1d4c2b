//! OAuth connections on the hosted hub, for real: `node/oauth/server.mjs` (a real oidc-provider
//! authorization server in front of a TypeScript SDK MCP server that takes only its bearer
//! tokens), signed in with the local CLI (`hub add` through the `$BROWSER` stand-in), its
//! client and tokens loaded into workerd through `admin/load`, and workerd refreshing them.
//!
//! Needs `cd node && npm ci` (the pinned node and oidc-provider) and the local binary
//! (`cargo build -p capabilities`).

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use capabilities_core::address::ToolAddress;
use capabilities_core::manifest::Manifest;
use capabilities_core::policy::{Effect, PolicyState, Rule};
use serde_json::{Value, json};

use crate::hub::loaded;
use crate::support::{Workerd, post, repo, request, target_dir};

const WHOAMI: &str = "return await fx.whoami({})";

/// `node/oauth/server.mjs` under the pinned node; it exits when its stdin closes (on drop).
pub(crate) struct Fixture {
    child: Child,
    stdin: Option<ChildStdin>,
    /// The authorization server's issuer (its own origin).
    pub(crate) issuer: String,
    mcp: String,
    /// The MCP server's port, which also serves `/__control` and `/__stats`.
    port: u16,
}

impl Fixture {
    pub(crate) fn start(access_ttl: u64) -> Fixture {
        let node = repo().join("node/node_modules/.bin/node");
        assert!(
            node.exists() && repo().join("node/node_modules/oidc-provider/package.json").is_file(),
            "the pinned node or oidc-provider is missing: run `cd node && npm ci` at the repository root"
        );
        let mut child = Command::new(node)
            .arg(repo().join("node/oauth/server.mjs"))
            .args(["--access-ttl", &access_ttl.to_string()])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let said: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("the fixture said {line:?}: {e}"));
        let mcp = said["mcp"].as_str().unwrap_or_else(|| panic!("no mcp in {line}")).to_owned();
        let port = url::Url::parse(&mcp).unwrap().port().unwrap();
        let issuer = said["issuer"].as_str().unwrap_or_else(|| panic!("no issuer in {line}")).to_owned();
        Fixture { child, stdin, issuer, mcp, port }
    }

    fn origin(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    fn stats(&self) -> Value {
        let (status, text) = request(self.port, "GET", "/__stats", None, "");
        assert_eq!(status, 200, "{text}");
        serde_json::from_str(&text).unwrap()
    }

    /// Refresh grants the authorization server was asked for so far.
    fn refreshes(&self) -> u64 {
        let stats = self.stats();
        stats["token_requests"]["refresh_token"].as_u64().unwrap_or_else(|| panic!("{stats}"))
    }

    /// `POST /__control` with `{"mode": …}` or `{"revoke": true}`.
    pub(crate) fn control(&self, body: Value) {
        let (status, text) = post(self.port, "/__control", None, &body.to_string());
        assert_eq!(status, 200, "control {body}: {text}");
        assert_eq!(serde_json::from_str::<Value>(&text).unwrap()["ok"], json!(true), "{text}");
    }
}

impl Drop for Fixture {
    fn drop(&mut self) {
        drop(self.stdin.take());
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What the local hub keeps of the connection after signing in.
struct SignedIn {
    /// `connections[0]` of `connections/fx.json`: name, slots, the OAuth client.
    connection: Value,
    /// `secrets.json`'s `values.fx.default["#oauth"]`: the token set, as JSON text.
    tokens: String,
    manifest: Manifest,
}

impl SignedIn {
    fn token(&self, key: &str) -> String {
        let tokens: Value = serde_json::from_str(&self.tokens).unwrap();
        tokens[key].as_str().unwrap_or_else(|| panic!("no {key} in the token set")).to_owned()
    }

    fn expires_ms(&self) -> u64 {
        let tokens: Value = serde_json::from_str(&self.tokens).unwrap();
        tokens["expiresMs"].as_u64().expect("the token set says when it expires")
    }
}

/// Signs in to the fixture with the local CLI (`hub add`, the browser stand-in) in a store of
/// its own under `dir`, and reads back what it stored.
fn sign_in(fixture: &Fixture, dir: &Path) -> SignedIn {
    let bin = target_dir().join("debug/capabilities");
    assert!(bin.exists(), "no local binary at {}: run `cargo build -p capabilities`", bin.display());
    let home = dir.join("hub");
    std::fs::create_dir_all(dir.join("home")).unwrap();
    let out = Command::new(bin)
        .args(["hub", "add", &fixture.mcp, "--namespace", "fx", "--yes"])
        .env("CAPABILITIES_HOME", &home)
        .env("CAPABILITIES_KEYCHAIN", "file")
        .env("BROWSER", repo().join("node/oauth/browser"))
        .env("CAPABILITIES_SIGN_IN_TIMEOUT_SECS", "60")
        .env("HOME", dir.join("home"))
        .env("XDG_RUNTIME_DIR", dir.join("home"))
        .env("DBUS_SESSION_BUS_ADDRESS", format!("unix:path={}", dir.join("no-bus").display()))
        .env("NO_COLOR", "1")
        .env_remove("BROWSER_STANDIN_MODE")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let said = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "hub add failed: {said}");
    let read = |path: &str| -> Value {
        let text = std::fs::read_to_string(home.join(path)).unwrap_or_else(|e| panic!("{path}: {e}\n{said}"));
        serde_json::from_str(&text).unwrap()
    };
    let connection = read("connections/fx.json")["connections"][0].clone();
    assert!(connection["oauth"]["tokenEndpoint"].is_string(), "not an OAuth connection: {connection}");
    let secrets = read("secrets.json");
    let tokens = secrets["values"]["fx"]["default"]["#oauth"]
        .as_str()
        .unwrap_or_else(|| panic!("no fx/default/#oauth in secrets.json"))
        .to_owned();
    let manifest = serde_json::from_value(read("manifests/fx.json")).unwrap();
    SignedIn { connection, tokens, manifest }
}

/// The load of the fixture as `fx`: reviewed on the MCP server's origin, `fx.whoami` allowed,
/// the connection with its OAuth client, and its tokens as the `#oauth` value.
fn oauth_load(fixture: &Fixture, signed: &SignedIn) -> Value {
    let mut policy = PolicyState::default();
    for tool in &signed.manifest.tools {
        policy.reviewed.insert(signed.manifest.address(tool).to_string(), tool.digest);
    }
    policy.rules.push(Rule::on_tool(ToolAddress::parse("fx.whoami").unwrap(), Effect::Allow));
    json!({
        "sources": [{
            "namespace": "fx",
            "url": fixture.mcp,
            "reviewedOrigin": fixture.origin(),
            "manifest": signed.manifest,
            "connections": [signed.connection],
            "defaultConnection": signed.connection["name"],
        }],
        "policy": policy,
        "secrets": [{
            "namespace": "fx",
            "connection": signed.connection["name"],
            "values": [["#oauth", signed.tokens]],
        }],
    })
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as u64
}

fn sleep_until(ms: u64) {
    std::thread::sleep(Duration::from_millis(ms.saturating_sub(now_ms())));
}

fn assert_whoami(envelope: &Value) -> String {
    assert_eq!(envelope["status"], "completed", "{envelope}");
    let said = envelope["result"].as_str().unwrap_or_else(|| panic!("{envelope}"));
    assert!(said.starts_with("sub=alice calls="), "{envelope}");
    said.to_owned()
}

fn assert_auth_required(envelope: &Value) {
    assert_eq!(envelope["status"], "failed", "{envelope}");
    assert_eq!(envelope["error"]["code"], "auth_required", "{envelope}");
    let text = envelope.to_string();
    assert!(text.contains("connection `default` of `fx` needs signing in again"), "{envelope}");
    assert!(!text.contains("capabilities hub"), "a hosted answer names a local command: {envelope}");
}

/// What the guest sees of the `ToolError`: its code and hint.
const WHOAMI_CAUGHT: &str = "try { return await fx.whoami({}) } catch (e) { return [e.code, e.hint] }";

fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() { files.extend(walk(&path)) } else { files.push(path) }
    }
    files
}

/// The whole life of a connection on the hosted hub: the loaded token used, refreshed by
/// workerd once it expires (one refresh for calls that find it expired at once, so the
/// rotating server never sees a refresh token twice), the refreshed one reused, and after the
/// grant is revoked, `auth_required` naming the admin load, with no token in clear on disk.
#[test]
fn workerd_refreshes_an_oauth_connection_and_a_revoked_grant_needs_a_new_load() {
    let fixture = Fixture::start(3);
    let dir = tempfile::tempdir().unwrap();
    let signed = sign_in(&fixture, &dir.path().join("local"));
    let storage = dir.path().join("storage");
    std::fs::create_dir_all(&storage).unwrap();
    let hub = Workerd::start(&storage);
    loaded(&hub, "acme", &oauth_load(&fixture, &signed));

    // Past the signed-in token's expiry: workerd refreshes before the call.
    let before = fixture.refreshes();
    sleep_until(signed.expires_ms() + 600);
    let refreshed_at = now_ms();
    assert_eq!(assert_whoami(&hub.execute("acme", json!({"code": WHOAMI}))), "sub=alice calls=1");
    assert_eq!(fixture.refreshes(), before + 1, "workerd made one refresh grant: {}", fixture.stats());
    // The refreshed token is stored and used while it is valid.
    assert_eq!(assert_whoami(&hub.execute("acme", json!({"code": WHOAMI}))), "sub=alice calls=2");
    assert!(now_ms() - refreshed_at < 2_000, "too slow to tell a reuse from a refresh");
    assert_eq!(fixture.refreshes(), before + 1, "no refresh while the token is valid: {}", fixture.stats());

    // Three runs find it expired at once: one refresh between them, every run completes.
    sleep_until(refreshed_at + 3_800);
    let port = hub.port;
    let runs: Vec<_> = (0..3)
        .map(|_| {
            std::thread::spawn(move || {
                let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                    "params": {"name": "execute", "arguments": {"code": WHOAMI}}});
                post(port, "/t/acme/mcp", None, &body.to_string())
            })
        })
        .collect();
    for run in runs {
        let (status, text) = run.join().unwrap();
        assert_eq!(status, 200, "{text}");
        let answer: Value = serde_json::from_str(&text).unwrap();
        assert_whoami(&answer["result"]["structuredContent"]);
    }
    assert_eq!(fixture.refreshes(), before + 2, "one refresh for three runs: {}", fixture.stats());
    assert_eq!(fixture.stats()["refresh_failures"], 0, "{}", fixture.stats());

    // The grant is revoked; once the last access token expires, the refresh is refused.
    fixture.control(json!({"revoke": true}));
    sleep_until(now_ms() + 3_800);
    assert_auth_required(&hub.execute("acme", json!({"code": WHOAMI})));
    assert_eq!(fixture.refreshes(), before + 3, "{}", fixture.stats());
    // The refusal is kept: the next calls fail at once, without asking the server again, and
    // the `ToolError` says where a person fixes it: the admin load.
    let caught = hub.execute("acme", json!({"code": WHOAMI_CAUGHT}));
    assert_eq!(caught["status"], "completed", "{caught}");
    assert_eq!(caught["result"][0], "auth_required", "{caught}");
    let hint = caught["result"][1].as_str().unwrap_or_default();
    assert!(
        hint.contains(
            "a new admin load (`POST /t/acme/admin/load`) with a value for connection `default` of `fx`"
        ),
        "{caught}"
    );
    assert!(!hint.contains("capabilities hub"), "{caught}");
    assert_auth_required(&hub.execute("acme", json!({"code": WHOAMI})));
    assert_eq!(fixture.refreshes(), before + 3, "{}", fixture.stats());

    // No token is on disk in clear: not the loaded ones, nor any token set.
    let secrets = [signed.token("accessToken"), signed.token("refreshToken")];
    let files = walk(&storage);
    assert!(!files.is_empty(), "workerd stored nothing in {}", storage.display());
    for file in files {
        let bytes = std::fs::read(&file).unwrap();
        for needle in secrets.iter().map(String::as_str).chain(["accessToken", "refreshToken"]) {
            assert!(
                !bytes.windows(needle.len()).any(|w| w == needle.as_bytes()),
                "{} holds {}",
                file.display(),
                if needle.contains("Token") { needle } else { "a token" }
            );
        }
    }
}

/// A source that refuses the token (401 with its challenge) gets one more try with a refreshed
/// token; refused again, the call fails with `auth_required`, no token in what it says. The
/// refreshed token is kept: once the source takes tokens again, it is used without a refresh.
#[test]
fn a_refused_token_gets_one_refreshed_try_and_the_refreshed_token_is_kept() {
    let fixture = Fixture::start(120);
    let dir = tempfile::tempdir().unwrap();
    let signed = sign_in(&fixture, &dir.path().join("local"));
    let storage = dir.path().join("storage");
    std::fs::create_dir_all(&storage).unwrap();
    let hub = Workerd::start(&storage);
    loaded(&hub, "acme", &oauth_load(&fixture, &signed));
    let before = fixture.refreshes();

    fixture.control(json!({"mode": "always-401"}));
    let refused = hub.execute("acme", json!({"code": WHOAMI}));
    assert_eq!(refused["status"], "failed", "{refused}");
    assert_eq!(refused["error"]["code"], "auth_required", "{refused}");
    let text = refused.to_string();
    assert!(text.contains("HTTP 401"), "{refused}");
    assert!(!text.contains(&signed.token("accessToken")), "{refused}");
    assert_eq!(fixture.refreshes(), before + 1, "one refresh for the refused token: {}", fixture.stats());

    fixture.control(json!({"mode": "normal"}));
    assert_whoami(&hub.execute("acme", json!({"code": WHOAMI})));
    assert_eq!(fixture.refreshes(), before + 1, "the refreshed token was kept: {}", fixture.stats());
}

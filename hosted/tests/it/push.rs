//! Journey J5 for real: the local CLI (`target/debug/capabilities`) runs `hub login` (the
//! browser stand-in `node/oauth/browser` through workerd's sign-in, the OAuth fixture as the
//! identity provider, the site's own client ID metadata document served on loopback), `hub
//! push` and `hub status` against the Worker in workerd; then the TypeScript SDK client signs
//! in as the same person and runs J2, its write decided in the review inbox
//! (`tests/fixtures/inbox.mjs`, a browser over plain HTTP). Then the attacks on the push API
//! and the inbox, and I5 across two accounts.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::Instant;

use serde_json::{Value, json};

use crate::access::Hub;
use crate::support::{Upstream, packages, repo, target_dir};

/// The local CLI with a store of its own, pointed at the hub.
pub(crate) struct Local {
    dir: tempfile::TempDir,
    hub: String,
    document: String,
}

impl Local {
    pub(crate) fn new(hub: &Hub) -> Local {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("home")).unwrap();
        Local { dir, hub: hub.public(), document: site_document() }
    }

    pub(crate) fn home(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    pub(crate) fn run(&self, args: &[&str], stdin: &str) -> (bool, String, String) {
        let bin = target_dir().join("debug/capabilities");
        assert!(bin.exists(), "no local binary at {}: run `cargo build -p capabilities`", bin.display());
        let home = self.dir.path().join("home");
        let mut child = Command::new(bin)
            .args(args)
            .env("CAPABILITIES_HOME", self.home())
            .env("CAPABILITIES_KEYCHAIN", "file")
            .env("CAPABILITIES_HUB_URL", &self.hub)
            .env("CAPABILITIES_CLIENT_METADATA_URL", &self.document)
            .env("BROWSER", repo().join("node/oauth/browser"))
            .env("CAPABILITIES_SIGN_IN_TIMEOUT_SECS", "60")
            .env("HOME", &home)
            .env("XDG_RUNTIME_DIR", &home)
            .env("DBUS_SESSION_BUS_ADDRESS", format!("unix:path={}", home.join("no-bus").display()))
            .env("NO_COLOR", "1")
            .env_remove("BROWSER_STANDIN_MODE")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        let (stdout, stderr) = (
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        );
        (out.status.success(), stdout, stderr)
    }

    pub(crate) fn ok(&self, args: &[&str]) -> String {
        let (ok, stdout, stderr) = self.run(args, "");
        assert!(ok, "`capabilities {}` failed:\n{stdout}\n{stderr}", args.join(" "));
        stdout
    }

    pub(crate) fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let out = self.ok(&all);
        serde_json::from_str(out.trim()).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    /// The access token `hub login` keeps, read from the file keychain.
    pub(crate) fn access_token(&self) -> String {
        let text = std::fs::read_to_string(self.home().join("secrets.json")).unwrap();
        let secrets: Value = serde_json::from_str(&text).unwrap();
        let tokens = secrets["values"]["#hosted"]["login"]["#oauth"].as_str().expect("the login's tokens");
        let tokens: Value = serde_json::from_str(tokens).unwrap();
        tokens["accessToken"].as_str().unwrap().to_owned()
    }
}

/// Serves the site's client ID metadata document on loopback under its test name; its URL.
fn site_document() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let url = format!("https://127.0.0.1:{port}/oauth/client-metadata.json");
    let text = std::fs::read_to_string(repo().join("site/oauth/client-metadata.json")).unwrap();
    let mut document: Value = serde_json::from_str(&text).unwrap();
    document["client_id"] = json!(url);
    let body = document.to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut line = String::new();
            let _ = BufReader::new(stream.try_clone().unwrap()).read_line(&mut line);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    url
}

/// `tests/fixtures/inbox.mjs` with `args` (plus the hub): what it printed.
fn inbox(hub: &Hub, mut args: Value) -> Value {
    args["hub"] = json!(hub.public());
    let out = Command::new(packages().join(".bin/node"))
        .arg(repo().join("hosted/tests/fixtures/inbox.mjs"))
        .arg(args.to_string())
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "inbox.mjs {args} failed");
    serde_json::from_slice(&out.stdout).unwrap()
}

/// The SDK client signed in with a metadata document, its run waiting for a person; `resume`
/// lets it go on.
struct Cloud {
    child: Child,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
}

impl Cloud {
    fn start(hub: &Hub, code: &str) -> (Cloud, Value) {
        let args = json!({ "mcp": hub.mcp(), "mode": "cimd", "code": code, "resume": true });
        let mut child = Command::new(packages().join(".bin/node"))
            .arg(repo().join("hosted/tests/fixtures/sdk-sign-in.mjs"))
            .arg(args.to_string())
            .env("MCP_SDK_DIR", packages().join("@modelcontextprotocol/sdk"))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let stdin = child.stdin.take().unwrap();
        let mut stdout = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        stdout.read_line(&mut line).unwrap();
        let first: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("sdk-sign-in said {line:?}: {e}"));
        (Cloud { child, stdin, stdout }, first["waiting"].clone())
    }

    fn resume(mut self) -> Value {
        self.stdin.write_all(b"go\n").unwrap();
        let mut rest = String::new();
        self.stdout.read_to_string(&mut rest).unwrap();
        assert!(self.child.wait().unwrap().success(), "sdk-sign-in failed after resuming");
        serde_json::from_str::<Value>(rest.trim()).unwrap_or_else(|e| panic!("{rest:?}: {e}"))["envelope"]
            .clone()
    }
}

fn push_raw(hub: &Hub, token: Option<&str>, body: &Value) -> (u16, String, Value) {
    let headers: Vec<String> = token.map(|t| format!("authorization: Bearer {t}")).into_iter().collect();
    let (status, head, text) = hub.http("POST", "/hub/push", &headers, &body.to_string());
    (status, head, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

fn status_raw(hub: &Hub, token: &str) -> (u16, Value) {
    let (status, _, text) = hub.http("GET", "/hub/status", &[format!("authorization: Bearer {token}")], "");
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

/// An inbox form POST with `cookie`, from `origin`; the status and page.
fn decide_raw(hub: &Hub, cookie: Option<&str>, origin: &str, form: &[(&str, &str)]) -> (u16, String) {
    let body = url::form_urlencoded::Serializer::new(String::new()).extend_pairs(form).finish();
    let mut headers =
        vec![format!("origin: {origin}"), "content-type: application/x-www-form-urlencoded".to_owned()];
    if let Some(cookie) = cookie {
        headers.push(format!("cookie: hub_inbox={cookie}"));
    }
    let (status, _, text) = hub.http("POST", "/inbox/decide", &headers, &body);
    (status, text)
}

#[test]
fn login_push_status_then_a_cloud_client_runs_j2_with_the_write_decided_in_the_inbox() {
    let hub = Hub::start(&[]);
    let counter = Upstream::counter();
    let local = Local::new(&hub);
    let bin = target_dir().join("debug/capabilities");
    local.ok(&["hub", "add", &format!("{}/mcp", counter.origin()), "--namespace", "counter", "--yes"]);
    local.ok(&[
        "hub",
        "add",
        "--namespace",
        "tracker",
        "--yes",
        "--",
        bin.to_str().unwrap(),
        "example-server",
        "tracker",
    ]);

    let said = local.ok(&["hub", "login"]);
    assert!(said.contains(&format!("signed in to {}", hub.public())) && said.contains("alice"), "{said}");
    let alice = hub.tenant_of("alice");
    assert!(said.contains(&alice), "login names the tenant: {said}");

    let started = Instant::now();
    let pushed = local.json(&["hub", "push", "--yes"]);
    eprintln!("hub push of one source took {:?}", started.elapsed());
    assert_eq!(pushed["applied"], true, "{pushed}");
    assert_eq!(pushed["plan"]["added"], json!(["counter"]), "{pushed}");
    let left = &pushed["plan"]["leftOut"];
    assert_eq!(left[0]["namespace"], "tracker", "the stdio source is left out: {pushed}");
    assert!(left[0]["reason"].as_str().unwrap().contains("stdio"), "{left}");

    let status = local.json(&["hub", "status"]);
    assert_eq!(status["tenant"], alice.as_str(), "{status}");
    assert_eq!(status["sources"][0]["namespace"], "counter", "{status}");
    assert_eq!(status["sources"][0]["health"], "not_called", "{status}");
    assert_eq!(status["lastPush"]["sources"], 1, "{status}");
    assert_eq!(status["lastPush"]["hash"], pushed["hash"], "{status}");
    assert_eq!(status["waiting"], json!([]), "{status}");
    let again = local.json(&["hub", "push", "--yes"]);
    assert_eq!(again["plan"]["unchanged"], json!(["counter"]), "a second push changes nothing: {again}");

    // A cloud client signs in as the same person and runs J2; its write waits for the inbox.
    let (cloud, waiting) = Cloud::start(&hub, "return await counter.write({ text: 'from the cloud' })");
    assert_eq!(waiting["status"], "awaiting_approval", "{waiting}");
    let text = waiting.to_string();
    assert!(
        text.contains(&format!("{}/inbox", hub.public())),
        "the model is told where the person decides: {text}"
    );
    assert!(!text.contains("admin/approve"), "{text}");
    let human = local.ok(&["hub", "status"]);
    assert!(human.contains("waiting for you: 1 call") && human.contains("counter.write"), "{human}");
    assert!(human.contains("/inbox"), "{human}");

    let seen = inbox(&hub, json!({ "choice": "once" }));
    let page = seen["page"].as_str().unwrap();
    for fact in
        ["counter.write", "from the cloud", "Allow once", "Allow for this run", "Always allow", "Deny"]
    {
        assert!(page.contains(fact), "the inbox shows {fact}: {page}");
    }
    assert_eq!(seen["decided"]["status"], 200, "{seen}");
    assert!(seen["decided"]["page"].as_str().unwrap().contains("Allowed once"), "{seen}");
    assert_eq!(counter.calls()["write"], json!(null), "nothing ran before the client resumed");

    let done = cloud.resume();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(counter.calls()["write"], 1, "the write ran once");
    let status = local.json(&["hub", "status"]);
    assert_eq!(status["waiting"], json!([]), "{status}");
    assert_eq!(status["sources"][0]["lastCall"]["outcome"], "ok", "{status}");
    assert_eq!(status["sources"][0]["health"], "ok", "{status}");

    // The inbox again: the decided call is gone, and a replayed decision records nothing.
    let after = inbox(&hub, json!({}));
    assert!(!after["page"].as_str().unwrap().contains("from the cloud"), "{after}");
    assert!(after["page"].as_str().unwrap().contains("Nothing waits for you"), "{after}");

    // Arguments the schema refuses: the hosted hub fails the call before anyone is asked.
    let bad =
        hub.execute(&local.access_token(), json!({ "code": "return await counter.write({ text: 5 })" }));
    let envelope = &bad["structuredContent"];
    assert_eq!(envelope["status"], "failed", "{bad}");
    assert_eq!(envelope["error"]["code"], "invalid_arguments", "{bad}");
    assert!(envelope.to_string().contains("text: expected string, got integer"), "{bad}");
    assert_eq!(local.json(&["hub", "status"])["waiting"], json!([]), "no one is asked");
    assert_eq!(counter.calls()["write"], 1, "the source never saw it");

    let out = local.ok(&["hub", "logout"]);
    assert!(out.contains("signed out"), "{out}");
    let (ok, _, stderr) = local.run(&["hub", "status"], "");
    assert!(!ok && stderr.contains("hub login"), "{stderr}");
}

#[test]
fn the_push_api_and_the_inbox_refuse_attacks_and_no_account_reaches_another() {
    let hub = Hub::start(&[]);
    let counter = Upstream::counter();
    let local = Local::new(&hub);
    let url = format!("{}/mcp", counter.origin());
    local.ok(&["hub", "add", &url, "--namespace", "counter", "--yes"]);
    local.ok(&["hub", "add", &url, "--namespace", "keyed", "--header", "X-Api-Key", "--yes"]);
    let (ok, out, err) = local.run(&["hub", "auth", "keyed", "--stdin"], "sk-live-pushed-4711\n");
    assert!(ok, "{out}{err}");
    local.ok(&["hub", "login"]);

    // Without --secrets no value leaves the machine; the plan says which are missing.
    let first = local.json(&["hub", "push", "--yes"]);
    assert_eq!(first["plan"]["secrets"]["missing"], json!(["keyed/default X-Api-Key"]), "{first}");
    assert!(!hub.stored("sk-live-pushed-4711"));
    // With --secrets (and --yes, no prompt) it is sent, and stored only sealed.
    let second = local.json(&["hub", "push", "--secrets", "--yes"]);
    assert_eq!(second["plan"]["secrets"]["sent"], json!(["keyed/default X-Api-Key"]), "{second}");
    assert!(!hub.stored("sk-live-pushed-4711"), "the value is stored sealed only");
    let third = local.json(&["hub", "push", "--yes"]);
    assert_eq!(third["plan"]["secrets"]["kept"], json!(["keyed/default X-Api-Key"]), "{third}");
    let status = local.json(&["hub", "status"]);
    let keyed =
        status["sources"].as_array().unwrap().iter().find(|s| s["namespace"] == "keyed").unwrap().clone();
    assert_eq!(keyed["connections"][0]["missing"], json!([]), "{status}");

    let token = local.access_token();
    let plan = json!({ "sources": [], "policy": { "rules": [], "reviewed": {} } });
    // A hash that is not the plan's.
    let mut wrong = plan.clone();
    wrong["apply"] = json!("sha256:0000");
    let (code, _, said) = push_raw(&hub, Some(&token), &wrong);
    assert_eq!(code, 409, "{said}");
    assert!(said["error"].as_str().unwrap().contains("nothing was applied"), "{said}");
    assert_eq!(local.json(&["hub", "status"])["sources"].as_array().unwrap().len(), 2, "nothing was applied");
    // A plan that changed in between: made, then the hub changes, then applied blind.
    let (code, _, planned) = push_raw(&hub, Some(&token), &plan);
    assert_eq!(code, 200, "{planned}");
    assert_eq!(planned["plan"]["removed"], json!(["counter", "keyed"]), "{planned}");
    local.ok(&["hub", "remove", "keyed", "--yes"]);
    local.json(&["hub", "push", "--yes"]);
    let mut stale = plan.clone();
    stale["apply"] = planned["hash"].clone();
    let (code, _, said) = push_raw(&hub, Some(&token), &stale);
    assert_eq!(code, 409, "a plan that changed is not applied: {said}");
    assert_eq!(said["plan"]["removed"], json!(["counter"]), "{said}");
    // A secret value without --secrets.
    let sources = local.json(&["hub", "status"])["sources"].clone();
    assert_eq!(sources.as_array().unwrap().len(), 1);
    let (code, _, said) = push_raw(
        &hub,
        Some(&token),
        &json!({ "secrets": [{ "namespace": "counter", "connection": "default", "values": [["x", "sk-1"]] }] }),
    );
    assert_eq!(code, 400, "{said}");
    assert!(said["error"].as_str().unwrap().contains("--secrets"), "{said}");
    // No token, an /mcp-only token, junk.
    let (code, head, _) = push_raw(&hub, None, &plan);
    assert_eq!(code, 401);
    assert!(head.to_ascii_lowercase().contains("www-authenticate: bearer"), "{head}");
    let (_, mcp_only) = hub.tokens("mcp");
    let (code, head, _) = push_raw(&hub, mcp_only["access_token"].as_str(), &plan);
    assert_eq!(code, 403, "{head}");
    assert!(head.contains("insufficient_scope") && head.contains("hub:admin"), "{head}");
    let (code, _, said) = push_raw(&hub, Some(&token), &json!({ "sources": "all of them" }));
    assert_eq!(code, 400, "{said}");
    let (code, _) = status_raw(&hub, "hub_at.forged.token");
    assert_eq!(code, 401);

    // Alice's run waits for a person.
    local.ok(&["hub", "add", &url, "--namespace", "writer", "--yes"]);
    local.json(&["hub", "push", "--yes"]);
    let paused = hub.execute(&token, json!({ "code": "return await writer.write({ text: 'alice only' })" }));
    let run = paused["structuredContent"]["runId"].as_str().unwrap_or_else(|| panic!("{paused}")).to_owned();
    let alice_inbox = inbox(&hub, json!({}));
    let alice_form = alice_inbox["forms"][0].clone();
    let alice_cookie = alice_inbox["cookie"].as_str().unwrap().to_owned();
    assert_eq!(alice_form["run"], run.as_str(), "{alice_inbox}");

    // The inbox's own refusals, with alice's sign-in.
    let public = hub.public();
    let call = alice_form["call"].as_str().unwrap().to_owned();
    let csrf = alice_form["csrf"].as_str().unwrap().to_owned();
    let good = [("csrf", csrf.as_str()), ("run", run.as_str()), ("call", call.as_str()), ("choice", "once")];
    let forged =
        [("csrf", "hub_csrf.forged"), ("run", run.as_str()), ("call", call.as_str()), ("choice", "once")];
    assert_eq!(decide_raw(&hub, Some(&alice_cookie), &public, &forged).0, 403, "a forged CSRF token");
    assert_eq!(decide_raw(&hub, Some(&alice_cookie), "https://evil.example", &good).0, 403, "another origin");
    assert_eq!(decide_raw(&hub, None, &public, &good).0, 401, "no sign-in");
    assert_eq!(decide_raw(&hub, Some(&token), &public, &good).0, 401, "an /mcp token is no inbox cookie");
    let (code, _, _) = hub.http("GET", "/inbox/decide", &[format!("cookie: hub_inbox={alice_cookie}")], "");
    assert_eq!(code, 405, "no decision over GET");
    let (code, head, _) = hub.http("GET", "/inbox", &[], "");
    assert_eq!(code, 302, "the inbox sends a stranger to sign in");
    assert!(head.contains("/oauth/inbox"), "{head}");
    assert_eq!(local.json(&["hub", "status"])["waiting"][0]["runId"], run.as_str(), "nothing was decided");

    // I5: bob signs in with a local hub of his own; nothing of alice's reaches him through the
    // push API, the status or the inbox.
    hub.idp.control(json!({ "user": "bob" }));
    let bob_local = Local::new(&hub);
    bob_local.ok(&["hub", "add", &url, "--namespace", "writer", "--yes"]);
    bob_local.ok(&["hub", "login"]);
    let bob_status = bob_local.json(&["hub", "status"]);
    assert_ne!(bob_status["tenant"], hub.tenant_of("alice").as_str(), "{bob_status}");
    assert_eq!((&bob_status["sources"], &bob_status["waiting"]), (&json!([]), &json!([])), "{bob_status}");
    let bob_push = bob_local.json(&["hub", "push", "--yes"]);
    assert_eq!(bob_push["plan"]["removed"], json!([]), "bob's plan sees nothing of alice's: {bob_push}");
    let bob = bob_local.access_token();
    let (code, _, bob_plan) = push_raw(&hub, Some(&bob), &plan);
    assert_eq!((code, &bob_plan["plan"]["removed"]), (200, &json!(["writer"])), "{bob_plan}");
    let mine = hub.execute(&bob, json!({ "code": "return await writer.write({ text: 'bob only' })" }));
    assert_eq!(mine["structuredContent"]["status"], "awaiting_approval", "{mine}");
    let bob_inbox = inbox(&hub, json!({}));
    let bob_page = bob_inbox["page"].as_str().unwrap();
    assert!(bob_page.contains("bob only") && !bob_page.contains("alice only"), "{bob_page}");
    let bob_cookie = bob_inbox["cookie"].as_str().unwrap().to_owned();
    let bob_csrf = bob_inbox["forms"][0]["csrf"].as_str().unwrap().to_owned();
    // Bob names alice's run, then a run that does not exist, with his own sign-in and CSRF
    // token: the two answers are the same.
    let bob_decides = |run_id: &str| {
        let call = alice_form["call"].as_str().unwrap();
        let fields = [("csrf", bob_csrf.as_str()), ("run", run_id), ("call", call), ("choice", "always")];
        decide_raw(&hub, Some(&bob_cookie), &public, &fields)
    };
    let theirs = bob_decides(&run);
    let nobody = bob_decides("run_00000000000000000000000000");
    assert_eq!(theirs.0, 404, "{}", theirs.1);
    assert_eq!(theirs, nobody, "alice's run is indistinguishable from an unknown one");
    // Alice's cookie cannot decide bob's call either, nor can bob's token read alice's status.
    let (code, alice_sees) = status_raw(&hub, &token);
    assert_eq!(code, 200);
    assert!(!alice_sees.to_string().contains("bob only"), "{alice_sees}");
    assert_eq!(alice_sees["waiting"][0]["runId"], run.as_str(), "alice's call still waits");
    let resumed = hub.execute(&bob, json!({ "resume": run }));
    assert!(!resumed.to_string().contains("writer.write"), "{resumed}");
    let _ = alice_cookie;
}

/// A loopback listener standing in for a client's redirect URI: it answers every request.
fn redirect_listener() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut line = String::new();
            let _ = BufReader::new(stream.try_clone().unwrap()).read_line(&mut line);
            let body = "signed in; you can close this tab";
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    format!("http://127.0.0.1:{port}/callback")
}

#[test]
fn chromium_signs_in_consents_and_decides_a_call_in_the_inbox() {
    assert!(
        std::path::Path::new("/usr/bin/chromium").exists(),
        "/usr/bin/chromium is missing: install Debian's chromium (`apt-get install chromium`)"
    );
    let playwright = repo().join("node/node_modules/playwright-core");
    assert!(playwright.join("package.json").is_file(), "playwright-core is missing: run `cd node && npm ci`");
    let hub = Hub::start(&[]);
    let counter = Upstream::counter();
    let local = Local::new(&hub);
    local.ok(&["hub", "add", &format!("{}/mcp", counter.origin()), "--namespace", "counter", "--yes"]);
    local.ok(&["hub", "login"]);
    local.json(&["hub", "push", "--yes"]);

    // A client registers and sends the person to sign in; Chromium is the person.
    let redirect = redirect_listener();
    let registration = json!({ "client_name": "Chromium test client", "redirect_uris": [redirect],
                               "token_endpoint_auth_method": "none" });
    let (code, _, text) = hub.http("POST", "/oauth/register", &[], &registration.to_string());
    assert_eq!(code, 201, "{text}");
    let client: Value = serde_json::from_str(&text).unwrap();
    let client_id = client["client_id"].as_str().unwrap().to_owned();
    let verifier = "a-verifier-of-enough-length-for-pkce-0123456789abcdef";
    let challenge = capabilities_hosted::access::token::pkce_challenge(verifier);
    let query = url::form_urlencoded::Serializer::new(String::new())
        .extend_pairs([
            ("response_type", "code"),
            ("client_id", client_id.as_str()),
            ("redirect_uri", redirect.as_str()),
            ("state", "chromium-1"),
            ("code_challenge", challenge.as_str()),
            ("code_challenge_method", "S256"),
            ("scope", "mcp"),
            ("resource", hub.mcp().as_str()),
        ])
        .finish();
    let shots = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hosted-access");
    std::fs::create_dir_all(&shots).unwrap();
    let args = json!({ "authorize": format!("{}/oauth/authorize?{query}", hub.public()), "redirect": redirect,
                       "hub": hub.public(), "shots": shots });
    let mut child = Command::new(packages().join(".bin/node"))
        .arg(repo().join("hosted/tests/fixtures/access-browser.mjs"))
        .arg(args.to_string())
        .env("PLAYWRIGHT_CORE_DIR", &playwright)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    let consented: Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("access-browser said {line:?}: {e}"));
    let consent = consented["consent"].as_str().unwrap();
    assert!(consent.contains("Chromium test client") && consent.contains("127.0.0.1"), "{consent}");
    let back = url::Url::parse(consented["back"].as_str().unwrap()).unwrap();
    let param = |name: &str| back.query_pairs().find(|(k, _)| k == name).map(|(_, v)| v.into_owned());
    assert_eq!(param("iss").as_deref(), Some(hub.public().as_str()), "{back}");
    assert_eq!(param("state").as_deref(), Some("chromium-1"), "{back}");
    let (status, tokens) = hub.token(&[
        ("grant_type", "authorization_code"),
        ("code", &param("code").expect("a code")),
        ("client_id", &client_id),
        ("redirect_uri", &redirect),
        ("code_verifier", verifier),
        ("resource", &hub.mcp()),
    ]);
    assert_eq!(status, 200, "{tokens}");
    let token = tokens["access_token"].as_str().unwrap();
    let paused =
        hub.execute(token, json!({ "code": "return await counter.write({ text: 'seen in chromium' })" }));
    let run = paused["structuredContent"]["runId"].as_str().unwrap_or_else(|| panic!("{paused}")).to_owned();

    stdin.write_all(b"go\n").unwrap();
    drop(stdin);
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success(), "access-browser failed");
    let decided: Value = serde_json::from_str(rest.trim()).unwrap_or_else(|e| panic!("{rest:?}: {e}"));
    let inbox = decided["inbox"].as_str().unwrap();
    assert!(inbox.contains("counter.write") && inbox.contains("seen in chromium"), "{inbox}");
    assert_eq!(decided["decidedStatus"], 200, "{decided}");
    assert!(decided["decided"].as_str().unwrap().contains("Allowed once"), "{decided}");
    let done = hub.execute(token, json!({ "resume": run }));
    assert_eq!(done["structuredContent"]["status"], "completed", "{done}");
    assert_eq!(counter.calls()["write"], 1);
    for shot in ["consent.png", "inbox.png", "decided.png"] {
        assert!(shots.join(shot).is_file(), "{shot} was kept");
    }
}

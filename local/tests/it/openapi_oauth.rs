//! HTTP API sources that sign in with OAuth, end to end: the real binary, `node/oauth/server.mjs`
//! (oidc-provider as the authorization server, and a small REST API that takes only the JWT
//! access tokens it issued for the API's base URL), its OpenAPI 3.1 documents (an oauth2
//! authorization code flow, and openIdConnect discovery), and the `$BROWSER` stand-in. The
//! fixture and the hub helpers are `oauth.rs`'s; each test has a fixture and a store of its own.
//!
//! Needs `cd node && npm ci` at the repository root; fails, never skips, without it.

use std::io::Write as _;
use std::process::Stdio;

use serde_json::{Value, json};

use crate::oauth::{AUTH_HINT, Fixture, Hub, Ran, assert_auth_required, count, hint_problem, holds};

/// `hub add <document> --namespace fx --yes`.
fn add(hub: &Hub, fixture: &Fixture, document: &str, more: &[&str]) -> Ran {
    let url = format!("{}/{document}", fixture.api);
    let mut args = vec!["add", url.as_str(), "--namespace", "fx", "--yes"];
    args.extend_from_slice(more);
    hub.run(&args)
}

fn call(hub: &Hub, tool: &str) -> Ran {
    hub.run(&["call", &format!("fx.{tool}"), "--json"])
}

/// A completed `fx.whoami`: the API saw alice's token; `calls` counts the API's answered calls.
fn assert_whoami(ran: &Ran, calls: u64) {
    assert_eq!(ran.code, 0, "{}", ran.all());
    let envelope = ran.envelope();
    assert_eq!(envelope["status"], "completed", "{}", ran.stdout);
    assert_eq!(envelope["result"]["status"], 200, "{}", ran.stdout);
    assert_eq!(envelope["result"]["body"], json!({"sub": "alice", "calls": calls}), "{}", ran.stdout);
}

fn read(hub: &Hub, record: &str) -> Value {
    serde_json::from_slice(&std::fs::read(hub.home().join(record)).unwrap()).unwrap()
}

/// The added source and its OAuth connection, as the records say.
fn assert_signed_in(hub: &Hub, fixture: &Fixture, added: &Ran) {
    assert_eq!(added.code, 0, "{}", added.all());
    assert_eq!(added.stdout, "added `fx` with 3 tools\n", "{}", added.all());
    assert!(added.stderr.contains("`fx` asks you to sign in ("), "{}", added.stderr);
    assert!(
        added.stderr.contains(&format!("the access token goes only to {}", fixture.api)),
        "{}",
        added.stderr
    );
    let source = read(hub, "sources/fx.json");
    let api = &source["spec"]["transport"];
    assert_eq!(api["baseUrl"], json!(fixture.api), "{source}");
    assert!(
        source.to_string().contains(r#""auth":{"kind":"header","name":"Authorization","prefix":"Bearer "}"#),
        "{source}"
    );
    let connections = read(hub, "connections/fx.json");
    let connection = &connections["connections"][0];
    assert_eq!(connections["default"], "default", "{connections}");
    assert_eq!(connection["slots"], json!([]), "{connections}");
    let client = &connection["oauth"];
    assert_eq!(client["issuer"], json!(fixture.issuer), "{connections}");
    assert_eq!(client["tokenEndpoint"], json!(format!("{}/token", fixture.issuer)), "{connections}");
    assert_eq!(
        client["resource"],
        json!(fixture.api),
        "the tokens are for the API's base URL: {connections}"
    );
    assert_eq!(client["registration"], "registered", "{connections}");
    assert_eq!(client["scopes"], json!(["api:read", "api:write", "offline_access"]), "{connections}");
    let tokens = hub.tokens();
    assert!(tokens["accessToken"].as_str().is_some_and(|t| t.len() > 20), "{tokens}");
    assert!(tokens["refreshToken"].as_str().is_some_and(|t| t.len() > 20), "{tokens}");
}

/// Every token value of `sets` (and each JWT's signature alone) found in a file of the store
/// other than the secret file, or in the output of `ran`.
fn leaks(hub: &Hub, sets: &[Value], ran: &[&Ran]) -> Vec<String> {
    let mut secrets = Vec::new();
    for set in sets {
        for key in ["accessToken", "refreshToken"] {
            let Some(value) = set[key].as_str().filter(|v| !v.is_empty()) else { continue };
            if let Some(signature) = value.rsplit('.').next().filter(|s| s.len() >= 20 && *s != value) {
                secrets.push(signature.to_owned());
            }
            secrets.push(value.to_owned());
        }
    }
    assert!(!secrets.is_empty(), "no tokens to look for");
    let files = hub.files();
    assert!(files.iter().any(|(p, _)| p.to_string_lossy().ends_with(".journal.jsonl")), "runs were kept");
    let mut found = Vec::new();
    for secret in &secrets {
        for (path, bytes) in &files {
            if path.file_name().is_some_and(|n| n == "secrets.json") {
                continue;
            }
            if holds(bytes, secret) {
                found.push(path.display().to_string());
            }
        }
        for (i, ran) in ran.iter().enumerate() {
            if ran.stdout.contains(secret.as_str()) || ran.stderr.contains(secret.as_str()) {
                found.push(format!("output of command {i}"));
            }
        }
    }
    found
}

// ---- oauth2: sign in, call, refresh, a refused token, revoked ----------------------------------

#[test]
fn an_oauth2_api_signs_in_calls_refreshes_and_asks_again_when_revoked() {
    let fixture = Fixture::start(3);
    let hub = Hub::new();
    let added = add(&hub, &fixture, "openapi.json", &[]);
    assert_signed_in(&hub, &fixture, &added);
    assert_eq!(hub.browser_runs(), 1);
    let mut sets = vec![hub.tokens()];

    let first = call(&hub, "whoami");
    assert_whoami(&first, 1);
    // An operation with `security: []` gets no bearer.
    let open = call(&hub, "health");
    assert_eq!(open.envelope()["result"]["body"], json!({"up": true}), "{}", open.all());
    assert_eq!(count(&fixture.stats(), &["api_bearer_on_open"]), 0);

    // The access token expires: refreshed before the call, no prompt.
    hub.wait_past_expiry();
    let second = call(&hub, "whoami");
    assert_whoami(&second, 2);
    let refreshed = hub.tokens();
    assert_ne!(refreshed["accessToken"], sets[0]["accessToken"], "a new access token was stored");
    assert_ne!(refreshed["refreshToken"], sets[0]["refreshToken"], "the refresh token rotated");
    sets.push(refreshed);

    // The API refuses a token the hub still thinks good: one refresh, the call retried.
    let before = fixture.stats();
    fixture.control(json!({"revokeApiAccess": true}));
    let third = call(&hub, "whoami");
    assert_whoami(&third, 3);
    let after = fixture.stats();
    assert_eq!(count(&after, &["api_401"]) - count(&before, &["api_401"]), 1, "{after}");
    assert_eq!(
        count(&after, &["token_requests", "refresh_token"])
            - count(&before, &["token_requests", "refresh_token"]),
        1,
        "{after}"
    );
    sets.push(hub.tokens());

    // Everything revoked: the API refuses, the refresh is refused, and the call says to sign in.
    fixture.control(json!({"revoke": true}));
    let refused = call(&hub, "whoami");
    let envelope = assert_auth_required(&refused);
    if let Some(problem) = hint_problem("revoked API grant", &envelope) {
        panic!("{problem}");
    }
    assert!(refused.stdout.contains(AUTH_HINT), "{}", refused.stdout);
    assert_eq!(hub.browser_runs(), 1, "no sign-in started by itself");

    // `hub auth` signs in again, with the document's scheme.
    let auth = hub.run(&["auth", "fx", "--yes"]);
    assert_eq!(auth.code, 0, "{}", auth.all());
    assert!(auth.stdout.starts_with("signed in `fx` connection `default`"), "{}", auth.all());
    assert!(auth.stderr.contains("OAuth 2.0 scheme `oauth`"), "{}", auth.stderr);
    assert_eq!(hub.browser_runs(), 2);
    let again = call(&hub, "whoami");
    assert_whoami(&again, 4);
    sets.push(hub.tokens());

    let stats = fixture.stats();
    assert_eq!(count(&stats, &["token_requests", "authorization_code"]), 2, "{stats}");
    assert_eq!(count(&stats, &["registrations"]), 2, "{stats}");
    let found = leaks(&hub, &sets, &[&added, &first, &open, &second, &third, &refused, &auth, &again]);
    assert_eq!(found, Vec::<String>::new(), "a token left the keychain's file");
}

// ---- openIdConnect -----------------------------------------------------------------------------

#[test]
fn an_openid_connect_api_signs_in_through_discovery() {
    let fixture = Fixture::start(30);
    let hub = Hub::new();
    let added = add(&hub, &fixture, "openapi-oidc.json", &[]);
    assert_signed_in(&hub, &fixture, &added);
    assert!(added.stderr.contains("OpenID Connect scheme `oauth`, discovered at"), "{}", added.stderr);
    assert_whoami(&call(&hub, "whoami"), 1);
    // `--scope` chooses the scopes instead of the document.
    let hub = Hub::new();
    let added = add(&hub, &fixture, "openapi-oidc.json", &["--scope", "api:read"]);
    assert_eq!(added.code, 0, "{}", added.all());
    let connections = read(&hub, "connections/fx.json");
    assert_eq!(connections["connections"][0]["oauth"]["scopes"], json!(["api:read", "offline_access"]));
    assert_whoami(&call(&hub, "whoami"), 2);
}

// ---- a key and oauth2 --------------------------------------------------------------------------

#[test]
fn a_key_stays_the_default_unless_auth_oauth_is_asked_for() {
    let fixture = Fixture::start(30);
    let hub = Hub::new();
    let url = format!("{}/openapi-key-and-oauth.json", fixture.api);
    let mut child = hub
        .command(&["add", &url, "--namespace", "fx", "--yes", "--stdin"], &[])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"a-static-api-key\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let connections = read(&hub, "connections/fx.json");
    assert_eq!(connections["connections"][0]["slots"], json!(["credential"]), "{connections}");
    assert_eq!(connections["connections"][0].get("oauth"), None, "{connections}");
    assert_eq!(hub.browser_runs(), 0);

    let hub = Hub::new();
    let added = add(&hub, &fixture, "openapi-key-and-oauth.json", &["--auth", "oauth"]);
    assert_signed_in(&hub, &fixture, &added);
    assert_whoami(&call(&hub, "whoami"), 1);
}

// ---- bad documents add nothing -----------------------------------------------------------------

#[test]
fn a_document_the_hub_cannot_sign_in_for_adds_nothing() {
    let fixture = Fixture::start(30);
    let wrong_issuer =
        format!("`{}` where `{}/idp` was expected", fixture.issuer, fixture.api.trim_end_matches("/v1"));
    let cases = [
        (
            "openapi-implicit.json",
            "declares only the `implicit`, `password` flows, and the hub signs in only with the authorization code flow",
        ),
        (
            "openapi-http-token.json",
            "its token URL: its URL `http://as.example.com/token` is plain http to another machine; use https",
        ),
        ("openapi-wrong-issuer.json", wrong_issuer.as_str()),
        (
            "openapi-unregistered.json",
            "offers no dynamic client registration and takes no client ID metadata documents",
        ),
    ];
    let mut problems = Vec::new();
    for (document, phrase) in cases {
        let hub = Hub::new();
        let ran = add(&hub, &fixture, document, &[]);
        let nothing = ran.stderr.contains("nothing was added") || ran.stderr.contains("nothing was stored");
        if ran.code == 0 || !ran.stderr.contains(phrase) || !nothing {
            problems.push(format!(
                "{document}: wanted a failure saying {phrase:?} and \"nothing was added\":\n{}",
                ran.all()
            ));
        }
        if !ran.stdout.is_empty() {
            problems.push(format!("{document}: stdout {:?}", ran.stdout));
        }
        let left = hub.leftovers();
        if !left.is_empty() {
            problems.push(format!("{document}: stored {left:?}"));
        }
        if hub.browser_runs() != 0 {
            problems.push(format!("{document}: a browser was opened"));
        }
    }
    let stats = fixture.stats();
    assert_eq!(count(&stats, &["registrations"]), 0, "{stats}");
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

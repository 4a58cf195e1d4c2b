//! `cargo xtask hosted dev --sign-in`: the Worker with sign-in on, on this machine only. The
//! OAuth test fixture (`node/oauth/server.mjs`, a real oidc-provider that logs `alice` in by
//! itself) is the identity provider, the hub is registered with it, and the site's client ID
//! metadata document is served on loopback so `capabilities hub login` can sign in the way it
//! does against the real hub.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdin, Command, Stdio};

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

/// The fixture, stopped when this is dropped (its stdin closes).
pub(super) struct Idp {
    child: Child,
    _stdin: ChildStdin,
}

impl Drop for Idp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Starts the identity provider, registers the hub at it, serves the metadata document, and
/// puts the Worker's sign-in settings on `workerd`.
pub(super) fn setup(port: &str, workerd: &mut Command) -> Result<Idp> {
    let node = std::path::Path::new("node/node_modules/.bin/node");
    let mut child = Command::new(node)
        .arg("node/oauth/server.mjs")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("starting the OAuth fixture (node/oauth/server.mjs)")?;
    let stdin = child.stdin.take().context("the fixture's stdin")?;
    let mut line = String::new();
    BufReader::new(child.stdout.take().context("the fixture's stdout")?).read_line(&mut line)?;
    let said: Value =
        serde_json::from_str(&line).with_context(|| format!("the OAuth fixture said {line:?}"))?;
    let issuer = said["issuer"].as_str().context("the fixture named no issuer")?.to_owned();
    let public = format!("http://127.0.0.1:{port}");
    let registration = json!({
        "redirect_uris": [format!("{public}/oauth/callback")],
        "grant_types": ["authorization_code"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_basic",
    });
    let client = register(&issuer, &registration.to_string())?;
    let id = client["client_id"].as_str().context("no client_id in the registration")?;
    let secret = client["client_secret"].as_str().context("no client_secret in the registration")?;
    let document = serve_document()?;
    workerd
        .env("HUB_PUBLIC_URL", &public)
        .env("HUB_IDP", "oidc")
        .env("HUB_IDP_ISSUER", &issuer)
        .env("HUB_IDP_CLIENT_ID", id)
        .env("HUB_IDP_CLIENT_SECRET", secret)
        .env("HUB_TEST_LOOPBACK_CLIENT_DOCUMENTS", "1");
    if std::env::var_os("HUB_SECRETS_KEY").is_none() {
        workerd.env("HUB_SECRETS_KEY", "capabilities dev hub: not a secret");
    }
    eprintln!(
        "xtask: sign-in is on at {public}/mcp, with a test identity provider at {issuer} that signs \
         `alice` in by itself. In another terminal:\n\n  \
         export CAPABILITIES_HUB_URL={public} CAPABILITIES_CLIENT_METADATA_URL={document}\n  \
         capabilities hub login && capabilities hub push && capabilities hub status\n\n\
         and the review inbox is {public}/inbox"
    );
    Ok(Idp { child, _stdin: stdin })
}

/// Registers a client at the fixture (`POST /reg`); its answer.
fn register(issuer: &str, body: &str) -> Result<Value> {
    let address = issuer.strip_prefix("http://").context("the fixture's issuer is not http")?;
    let mut stream = TcpStream::connect(address).with_context(|| format!("connecting to {issuer}"))?;
    write!(
        stream,
        "POST /reg HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer)?;
    let (head, body) = answer.split_once("\r\n\r\n").context("the registration's answer has no body")?;
    if !head.starts_with("HTTP/1.1 201") {
        bail!("registering the hub at the fixture failed: {head}");
    }
    serde_json::from_str(body.trim()).context("the registration's answer is not JSON")
}

/// Serves `site/oauth/client-metadata.json` on a loopback port, named by its URL there (the
/// Worker reads `https://127.0.0.1:<port>/…` over http with the test setting on).
fn serve_document() -> Result<String> {
    let listener = TcpListener::bind("127.0.0.1:0")?;
    let port = listener.local_addr()?.port();
    let url = format!("https://127.0.0.1:{port}/oauth/client-metadata.json");
    let text = std::fs::read_to_string("site/oauth/client-metadata.json")?;
    let mut document: Value = serde_json::from_str(&text)?;
    document["client_id"] = json!(url);
    let body = document.to_string();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut line = String::new();
            let _ = BufReader::new(&stream).read_line(&mut line);
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    Ok(url)
}

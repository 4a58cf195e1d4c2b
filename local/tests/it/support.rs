//! Helpers every test module shares: where the repository is, and the npm packages the tests
//! run (checked, so a missing install fails loudly with what to do).

use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("the local crate sits in the repository").to_owned()
}

/// `node/node_modules/@modelcontextprotocol`, after checking that node and the packages are there.
pub fn packages() -> PathBuf {
    let node = Command::new("node").arg("--version").output();
    assert!(
        node.is_ok_and(|out| out.status.success()),
        "`node` is not on PATH: install Node.js 20 or later, then run `cd node && npm ci`"
    );
    let dir = repo().join("node/node_modules/@modelcontextprotocol");
    for package in ["server-everything", "server-memory", "sdk"] {
        assert!(
            dir.join(package).join("package.json").is_file(),
            "{} is missing: run `cd node && npm ci` at the repository root",
            dir.join(package).display()
        );
    }
    dir
}

/// The fixture's HTTP mode, killed on drop.
pub struct HttpFixture {
    pub child: Child,
    pub port: u16,
    pub other: u16,
}

impl HttpFixture {
    /// Starts `fixture-server.mjs http` and reads the ports it prints.
    pub fn start() -> HttpFixture {
        let script = repo().join("local/tests/fixtures/fixture-server.mjs");
        let mut child = Command::new("node")
            .arg(script)
            .arg("http")
            .env("MCP_SDK_DIR", packages().join("sdk"))
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .unwrap();
        let mut line = String::new();
        BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let ports: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("fixture said {line:?}: {e}"));
        HttpFixture {
            child,
            port: ports["port"].as_u64().unwrap() as u16,
            other: ports["other"].as_u64().unwrap() as u16,
        }
    }
}

impl Drop for HttpFixture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `node_modules/playwright-core`, after checking that it and Debian's Chromium are there.
pub fn playwright() -> PathBuf {
    assert!(
        Path::new("/usr/bin/chromium").exists(),
        "/usr/bin/chromium is missing: install Debian's chromium (`apt-get install chromium`)"
    );
    let dir = repo().join("node/node_modules/playwright-core");
    assert!(dir.join("package.json").is_file(), "playwright-core is missing: run `cd node && npm ci`");
    dir
}

/// Sends `head` (request line and headers, without the blank line) and `body` to a loopback
/// `port`; returns the status and the whole answer (headers, then body).
pub fn http_raw(port: u16, head: &str, body: &str) -> (u16, String) {
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    let length = if body.is_empty() { String::new() } else { format!("Content-Length: {}\r\n", body.len()) };
    write!(stream, "{}\r\n{length}Connection: close\r\n\r\n{body}", head.trim_end().replace('\n', "\r\n"))
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, answer)
}

/// [`http_raw`], with only the body of the answer.
pub fn http(port: u16, head: &str, body: &str) -> (u16, String) {
    let (status, answer) = http_raw(port, head, body);
    (status, answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default())
}

//! Helpers every test module shares: where the repository is, and the npm packages the tests
//! run (checked, so a missing install fails loudly with what to do).

use std::io::{BufRead, BufReader};
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

//! HTTP APIs as sources (journey J3), against Prism serving real OpenAPI documents as a
//! validating mock: a request that does not match the document is refused by Prism (HTTP 422),
//! and the tests fail on it. Needs `cd node && npm ci` (Prism and `@readme/oas-examples`).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use super::support::repo;

/// A document from `@readme/oas-examples`, checked to be installed.
fn example(path: &str) -> PathBuf {
    let file = repo().join("node/node_modules/@readme/oas-examples").join(path);
    assert!(file.is_file(), "{} is missing: run `cd node && npm ci` at the repository root", file.display());
    file
}

/// Prism mocking `document` on a free loopback port, validating requests; killed on drop.
pub struct Prism {
    child: Child,
    pub port: u16,
}

impl Prism {
    pub fn start(document: &Path) -> Prism {
        let bin = repo().join("node/node_modules/.bin/prism");
        assert!(bin.is_file(), "{} is missing: run `cd node && npm ci`", bin.display());
        let port = free_port();
        let child = Command::new(bin)
            .args(["mock", "--errors", "-h", "127.0.0.1", "-p", &port.to_string()])
            .arg(document)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("starting Prism");
        let prism = Prism { child, port };
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "Prism did not listen on {port} within 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        prism
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Prism {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// Serves one file at every path on a loopback port, as a site would serve its document.
fn serve_file(file: PathBuf, content_type: &'static str) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let mut stream = stream;
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                line.clear();
            }
            let body = std::fs::read(&file).unwrap();
            let head = format!(
                "HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    port
}

struct Hub {
    dir: tempfile::TempDir,
}

struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

impl Hub {
    fn new() -> Hub {
        Hub { dir: tempfile::tempdir().unwrap() }
    }

    fn run_with(&self, args: &[&str], stdin: &str) -> Ran {
        let mut child = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .arg("hub")
            .args(args)
            .env("CAPABILITIES_HOME", self.dir.path().join("hub"))
            .env("CAPABILITIES_KEYCHAIN", "file")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        child.stdin.take().unwrap().write_all(stdin.as_bytes()).unwrap();
        let Output { status, stdout, stderr } = child.wait_with_output().unwrap();
        Ran {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
    }

    fn run(&self, args: &[&str]) -> Ran {
        self.run_with(args, "")
    }

    fn json(&self, args: &[&str]) -> Value {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let ran = self.run(&all);
        serde_json::from_str(&ran.stdout)
            .unwrap_or_else(|e| panic!("{args:?} printed no JSON ({e}):\n{}\n{}", ran.stdout, ran.stderr))
    }

    fn file(&self, path: &str) -> String {
        std::fs::read_to_string(self.dir.path().join("hub").join(path)).unwrap_or_default()
    }
}

#[test]
fn an_api_is_added_with_its_key_asked_once_then_reads_run_and_writes_ask() {
    let document = example("3.0/json/petstore.json");
    let prism = Prism::start(&document);
    let doc_port = serve_file(document, "application/json");
    let hub = Hub::new();
    let url = format!("http://127.0.0.1:{doc_port}/openapi.json");
    let added = hub.run_with(&["add", &url, "--base-url", &prism.url(), "--stdin", "--yes"], "special-key\n");
    assert_eq!(added.code, 0, "{}\n{}", added.stdout, added.stderr);
    assert!(added.stdout.contains("added `swagger_petstore` with 20 tools"), "{}", added.stdout);
    assert!(added.stderr.contains("header `api_key`"), "{}", added.stderr);
    // The key is in the secret store, never in a record.
    assert!(!hub.file("sources/swagger_petstore.json").contains("special-key"));
    assert!(hub.file("sources/swagger_petstore.json").contains("\"type\": \"openapi\""));

    let found = hub.json(&["exec", "return await hub.search('find a pet by its id')"]);
    let text = found.to_string();
    assert!(text.contains("swagger_petstore.getPetById"), "{text}");
    let described = hub.json(&["exec", "return await hub.describe(['swagger_petstore.getPetById'])"]);
    let text = described.to_string();
    assert!(text.contains("petId: number") && text.contains("status: number"), "{text}");

    let read = hub.json(&[
        "exec",
        "const r = await swagger_petstore.getPetById({ petId: 7 }); \
         return { status: r.status, name: typeof r.body.name, ct: r.headers['content-type'] }",
    ]);
    assert_eq!(read["status"], "completed", "{read}");
    assert_eq!(read["result"]["status"], 200, "{read}");
    assert_eq!(read["result"]["name"], "string", "{read}");
    assert_eq!(read["result"]["ct"], "application/json", "{read}");

    // A write asks first, and runs once a person approves it.
    let paused = hub.run(&[
        "exec",
        "return (await swagger_petstore.placeOrder({ petId: 7, quantity: 1, status: 'placed' })).status",
    ]);
    assert_eq!(paused.code, 4, "{}{}", paused.stdout, paused.stderr);
    let start = paused.stdout.find("run_").expect("the output names a run");
    let run: String =
        paused.stdout[start..].chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
    let approved = hub.json(&["approve", &run, "--choice", "once"]);
    assert_eq!(approved["status"], "completed", "{approved}");
    assert_eq!(approved["result"], 200, "{approved}");

    // A request that breaks the document never reaches Prism as such: the schema refuses it.
    let bad = hub.json(&["exec", "return await swagger_petstore.getPetById({ petId: 'seven' })"]);
    assert!(bad.to_string().contains("invalid_arguments"), "{bad}");
    // A path parameter that climbs out of the base is refused before anything is sent.
    let climb =
        hub.json(&["exec", "return await swagger_petstore.getUserByName({ username: '../../admin' })"]);
    assert!(climb.to_string().contains("may not be empty, `.` or `..`"), "{climb}");
}

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

    /// Runs a command at a terminal (util-linux `script` gives it one), typing `typed`.
    fn run_at_terminal(&self, args: &[&str], typed: &str) -> Ran {
        let line = std::iter::once(env!("CARGO_BIN_EXE_capabilities").to_owned())
            .chain(std::iter::once("hub".to_owned()))
            .chain(args.iter().map(|a| format!("'{a}'")))
            .collect::<Vec<_>>()
            .join(" ");
        let mut child = Command::new("script")
            .args(["-q", "-e", "-c", &line, "/dev/null"])
            .env("CAPABILITIES_HOME", self.dir.path().join("hub"))
            .env("CAPABILITIES_KEYCHAIN", "file")
            .env("NO_COLOR", "1")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("util-linux `script` runs (apt-get install bsdutils)");
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(typed.as_bytes()).unwrap();
        // Keep the terminal open until the command is done: `script` ends it at end of input.
        let deadline = Instant::now() + Duration::from_secs(60);
        while child.try_wait().unwrap().is_none() {
            assert!(Instant::now() < deadline, "`{line}` did not finish");
            std::thread::sleep(Duration::from_millis(50));
        }
        drop(stdin);
        let Output { status, stdout, stderr } = child.wait_with_output().unwrap();
        Ran {
            code: status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&stdout).into_owned(),
            stderr: String::from_utf8_lossy(&stderr).into_owned(),
        }
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

    let listed = hub.json(&["list"]);
    assert_eq!(listed[0]["transport"], "openapi", "{listed}");
    assert_eq!(listed[0]["target"], prism.url(), "{listed}");
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

/// A small API of our own on loopback: `/notes` (GET lists, POST searches), `/logout` (a GET
/// that writes), `/big` (a 100 MB answer, streamed without a length) and `/liar` (HTML that
/// says it is JSON). Returns its port; it counts requests per path in `hits`.
fn notes_api(hits: std::sync::Arc<std::sync::Mutex<Vec<String>>>) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let hits = hits.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request = String::new();
                reader.read_line(&mut request).unwrap();
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let target = request.split(' ').take(2).collect::<Vec<_>>().join(" ");
                hits.lock().unwrap().push(target.clone());
                let reply = |status: &str, content_type: &str, body: &[u8]| {
                    format!(
                        "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                        body.len()
                    )
                    .into_bytes()
                    .into_iter()
                    .chain(body.iter().copied())
                    .collect::<Vec<u8>>()
                };
                let out = match target.split('?').next().unwrap() {
                    "GET /notes" | "POST /notes/search" | "POST /notes/find" => {
                        reply("200 OK", "application/json", br#"["a","b"]"#)
                    }
                    "GET /logout" => reply("204 No Content", "text/plain", b""),
                    "GET /liar" => reply("200 OK", "application/json", b"<html>not json</html>"),
                    // To another origin (another host name for the same server): not followed.
                    "GET /moved" => format!(
                        "HTTP/1.1 307 Temporary Redirect\r\nlocation: http://localhost:{port}/notes\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
                    )
                    .into_bytes(),
                    "GET /big" => {
                        let head =
                            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n";
                        let _ = stream.write_all(head.as_bytes());
                        let chunk = vec![b' '; 1 << 20];
                        for _ in 0..100 {
                            if stream.write_all(&chunk).is_err() {
                                return;
                            }
                        }
                        return;
                    }
                    _ => reply("404 Not Found", "application/json", br#"{"message":"no such note"}"#),
                };
                let _ = stream.write_all(&out);
            });
        }
    });
    port
}

fn notes_document(port: u16, search_path: &str) -> String {
    serde_json::json!({
        "openapi": "3.0.3",
        "info": { "title": "Notes", "version": "1", "description": "Short notes, kept by a team." },
        "servers": [{ "url": format!("http://127.0.0.1:{port}") }],
        "paths": {
            "/notes": {
                "get": { "operationId": "listNotes", "summary": "List every note",
                         "responses": { "200": { "description": "the notes",
                             "content": { "application/json": { "schema": { "type": "array", "items": { "type": "string" } } } } } } }
            },
            search_path: {
                "post": { "operationId": "searchNotes", "summary": "Search the notes (it only reads)",
                          "requestBody": { "content": { "application/json": { "schema": {
                              "type": "object", "properties": { "q": { "type": "string" } } } } } },
                          "responses": { "200": { "description": "matches" } } }
            },
            "/logout": { "get": { "operationId": "logout", "summary": "End the session (it writes)",
                                  "responses": { "204": { "description": "done" } } } },
            "/big": { "get": { "operationId": "big", "responses": { "200": { "description": "a lot" } } } },
            "/liar": { "get": { "operationId": "liar", "responses": { "200": { "description": "lies" } } } },
            "/missing": { "get": { "operationId": "missing", "responses": { "200": { "description": "never" } } } },
            "/moved": { "get": { "operationId": "moved", "responses": { "200": { "description": "elsewhere" } } } }
        }
    })
    .to_string()
}

/// A person overrides the method's default per operation at review (a POST that only reads is
/// allowed, a GET that writes asks); a refresh of a changed document says what changed in the
/// request and that operation asks again; oversized and lying answers fail with a clear error.
#[test]
fn an_api_is_reviewed_per_operation_and_refreshed_like_any_source() {
    let hits = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let port = notes_api(hits.clone());
    let hub = Hub::new();
    let doc = hub.dir.path().join("notes.json");
    std::fs::write(&doc, notes_document(port, "/notes/search")).unwrap();
    let added = hub.run(&["--no-input", "add", doc.to_str().unwrap()]);
    assert_eq!(added.code, 0, "{}\n{}", added.stdout, added.stderr);
    assert!(added.stdout.contains("added `notes` with 7 tools"), "{}", added.stdout);
    // Review, editing each tool: Enter keeps the proposal; searchNotes allowed, logout asks.
    let answers = "e\n\na\ns\n\n\n\n\n";
    let reviewed = hub.run_at_terminal(&["review"], answers);
    assert!(reviewed.stdout.contains("accepted 7 tools"), "{}", reviewed.stdout);
    assert_eq!(reviewed.code, 0, "{}\n{}", reviewed.stdout, reviewed.stderr);

    let search = hub.json(&["exec", "return (await notes.searchNotes({ q: 'a' })).body"]);
    assert_eq!(search["status"], "completed", "a POST that reads runs: {search}");
    assert_eq!(search["result"], serde_json::json!(["a", "b"]));
    let logout = hub.run(&["exec", "return (await notes.logout({})).status"]);
    assert_eq!(logout.code, 4, "a GET that writes asks: {}{}", logout.stdout, logout.stderr);
    assert!(!hits.lock().unwrap().iter().any(|h| h.starts_with("GET /logout")), "nothing was sent");

    let missing =
        hub.json(&["exec", "try { await notes.missing({}) } catch (e) { return [e.code, e.message] }"]);
    assert_eq!(missing["result"][0], "not_found", "{missing}");
    assert!(missing["result"][1].as_str().unwrap_or_default().contains("HTTP 404"), "{missing}");
    let big = hub.json(&["exec", "try { await notes.big({}) } catch (e) { return e.message }"]);
    assert!(big["result"].as_str().unwrap_or_default().contains("larger than 16 MiB"), "{big}");
    let moved = hub.json(&["exec", "try { await notes.moved({}) } catch (e) { return e.message }"]);
    assert!(
        moved["result"].as_str().unwrap_or_default().contains("redirect the hub does not follow"),
        "{moved}"
    );
    assert_eq!(
        hits.lock().unwrap().iter().filter(|h| h.starts_with("GET /notes")).count(),
        0,
        "not followed"
    );
    let liar = hub.json(&["exec", "try { await notes.liar({}) } catch (e) { return e.message }"]);
    assert!(liar["result"].as_str().unwrap_or_default().contains("not JSON"), "{liar}");

    // The document moves searchNotes: refresh says so, and the operation asks again.
    std::fs::write(&doc, notes_document(port, "/notes/find")).unwrap();
    let refreshed = hub.run(&["--no-input", "refresh", "notes"]);
    assert_eq!(refreshed.code, 0, "{}\n{}", refreshed.stdout, refreshed.stderr);
    assert!(
        refreshed.stdout.contains("request: POST /notes/search → POST /notes/find"),
        "{}",
        refreshed.stdout
    );
    let again = hub.run(&["exec", "return (await notes.searchNotes({ q: 'a' })).status"]);
    assert_eq!(again.code, 4, "a changed operation asks again: {}{}", again.stdout, again.stderr);
}

/// Bad documents and unsafe URLs are refused with what to do, and nothing is half-added.
#[test]
fn bad_documents_and_plain_http_are_refused_and_nothing_is_added() {
    let hub = Hub::new();
    let dir = hub.dir.path();
    let doc = dir.join("notes.json");
    std::fs::write(&doc, notes_document(9, "/notes/search")).unwrap();
    let http = hub.run(&["add", doc.to_str().unwrap(), "--base-url", "http://api.example.com"]);
    assert_eq!(http.code, 2, "{}", http.stderr);
    assert!(http.stderr.contains("--allow-http"), "{}", http.stderr);

    let external = dir.join("external.json");
    std::fs::write(
        &external,
        r#"{"openapi":"3.1.0","info":{"title":"x","version":"1"},"servers":[{"url":"https://x.example.com"}],
            "paths":{"/a":{"get":{"operationId":"a","responses":{"200":{"description":"ok",
            "content":{"application/json":{"schema":{"$ref":"https://evil.example.com/s.json"}}}}}}}}}"#,
    )
    .unwrap();
    let refused = hub.run(&["add", external.to_str().unwrap()]);
    assert_ne!(refused.code, 0);
    assert!(refused.stderr.contains("outside the document"), "{}", refused.stderr);

    let bomb = dir.join("bomb.yaml");
    let mut text = String::from(
        "openapi: 3.0.0\ninfo: {title: x, version: '1'}\na: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n",
    );
    for i in 1..9 {
        let prev = if i == 1 { "a".to_owned() } else { format!("a{}", i - 1) };
        text.push_str(&format!(
            "a{i}: &a{i} [*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev},*{prev}]\n"
        ));
    }
    text.push_str("paths: {}\n");
    std::fs::write(&bomb, text).unwrap();
    let exploded = hub.run(&["add", bomb.to_str().unwrap()]);
    assert_ne!(exploded.code, 0);
    assert!(exploded.stderr.contains("alias"), "{}", exploded.stderr);

    let huge = dir.join("huge.json");
    let mut file = std::fs::File::create(&huge).unwrap();
    file.write_all(br#"{"openapi":"3.0.0","info":{"title":"x","version":"1"},"x-pad":""#).unwrap();
    file.write_all(&vec![b'a'; 50 * 1024 * 1024]).unwrap();
    file.write_all(br#"","paths":{}}"#).unwrap();
    drop(file);
    let large = hub.run(&["add", huge.to_str().unwrap()]);
    assert_ne!(large.code, 0);
    assert!(large.stderr.contains("more than"), "{}", large.stderr);

    let listed = hub.json(&["list"]);
    assert_eq!(listed, serde_json::json!([]), "nothing was added: {listed}");
    assert!(
        !dir.join("hub/sources").exists() || std::fs::read_dir(dir.join("hub/sources")).unwrap().count() == 0
    );
}

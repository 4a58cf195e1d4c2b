//! HTTP APIs as sources on the hosted hub (journey J3, hosted): a local hub adds the petstore
//! OpenAPI document (`@readme/oas-examples`) with its key on stdin, `hub push --secrets` carries
//! the source to the person's tenant in workerd, and the hosted `/mcp` searches, describes and
//! runs its operations against Prism on loopback. Prism runs with `--errors`, so a request that
//! does not match the document (the `api_key` header missing, say) is answered with an error,
//! not a mock; its log says which requests reached it. Needs `cd node && npm ci`.

use std::io::{BufRead, BufReader};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::access::Hub;
use crate::push::Local;
use crate::support::{ADMIN_TOKEN, exchange, free_port, post, repo, request};

/// The key the person types; Prism takes any value of the `api_key` header.
const KEY: &str = "pets-key-4711-do-not-leak";

fn petstore() -> PathBuf {
    let file = repo().join("node/node_modules/@readme/oas-examples/3.0/json/petstore.json");
    assert!(file.is_file(), "{} is missing: run `cd node && npm ci`", file.display());
    file
}

/// Prism mocking a document on a free loopback port, validating requests; killed on drop.
struct Prism {
    child: Child,
    port: u16,
    /// Prism's log, line by line.
    log: Arc<Mutex<Vec<String>>>,
}

impl Prism {
    fn start(document: &Path) -> Prism {
        let bin = repo().join("node/node_modules/.bin/prism");
        assert!(bin.is_file(), "{} is missing: run `cd node && npm ci`", bin.display());
        let port = free_port();
        let mut child = Command::new(bin)
            .args(["mock", "--errors", "-h", "127.0.0.1", "-p", &port.to_string()])
            .arg(document)
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("starting Prism");
        let log = Arc::new(Mutex::new(Vec::new()));
        let lines = BufReader::new(child.stdout.take().unwrap());
        let kept = log.clone();
        std::thread::spawn(move || {
            for line in lines.lines().map_while(Result::ok) {
                kept.lock().unwrap().push(line);
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = child.try_wait() {
                panic!("Prism exited ({status}) before listening on {port}");
            }
            assert!(Instant::now() < deadline, "Prism did not listen on {port} within 60 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        Prism { child, port, log }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The requests Prism received so far, as it logs them: `get /pet/7`.
    fn requests(&self) -> Vec<String> {
        self.log
            .lock()
            .unwrap()
            .iter()
            .filter_map(|line| {
                let (_, rest) = line.split_once("[HTTP SERVER] ")?;
                let (request, _) = rest.split_once(" ℹ")?;
                Some(request.trim().to_owned())
            })
            .collect()
    }

    /// How many times Prism received `request` (`post /store/order`).
    fn received(&self, request: &str) -> usize {
        self.requests().iter().filter(|r| *r == request).count()
    }
}

impl Drop for Prism {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `tools/call` of `tool` on the hosted `/mcp` with `token`; the result.
fn call(hub: &Hub, token: &str, tool: &str, arguments: Value) -> Value {
    let (status, _, text) =
        hub.rpc(Some(token), "tools/call", json!({ "name": tool, "arguments": arguments }));
    assert_eq!(status, 200, "{tool}: {text}");
    serde_json::from_str::<Value>(&text).unwrap()["result"].clone()
}

/// The text the model reads of a result.
fn text(result: &Value) -> String {
    result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect()
}

/// `execute` of `code`; the envelope.
fn execute(hub: &Hub, token: &str, code: &str) -> Value {
    let result = hub.execute(token, json!({ "code": code }));
    assert!(!result.to_string().contains(KEY), "the key is in a result: {result}");
    result["structuredContent"].clone()
}

#[test]
fn a_pushed_api_searches_describes_reads_writes_once_approved_and_keeps_its_key() {
    let prism = Prism::start(&petstore());
    // Prism validates: without the key the read it answers is a 401, no pet.
    let (status, _, _) = exchange(prism.port, "GET", "/pet/1", &[], "");
    assert_eq!(status, 401, "Prism runs with --errors and checks the api_key header");

    let hub = Hub::start(&[]);
    let local = Local::new(&hub);
    let document = petstore();
    let (ok, out, err) = local.run(
        &[
            "hub",
            "add",
            document.to_str().unwrap(),
            "--namespace",
            "pets",
            "--base-url",
            &prism.url(),
            "--stdin",
            "--yes",
        ],
        &format!("{KEY}\n"),
    );
    assert!(ok, "hub add of the document failed:\n{out}\n{err}");
    assert!(out.contains("added `pets` with 20 tools"), "{out}");
    local.ok(&["hub", "login"]);
    let tenant = hub.tenant_of("alice");

    // Pushed without its key first: the read waits for the credential, and nothing reaches
    // Prism; once the key is pushed, the same run goes on.
    let pushed = local.json(&["hub", "push", "--yes"]);
    assert_eq!(pushed["applied"], true, "{pushed}");
    assert_eq!(pushed["plan"]["added"], json!(["pets"]), "{pushed}");
    assert_eq!(pushed["plan"]["leftOut"], json!([]), "{pushed}");
    assert_eq!(pushed["plan"]["secrets"]["missing"], json!(["pets/default credential"]), "{pushed}");
    let token = local.access_token();
    let keyless = execute(&hub, &token, "return (await pets.getPetById({ petId: 7 })).status");
    assert_eq!(keyless["status"], "awaiting_connection", "{keyless}");
    let message = keyless["pending"][0]["message"].as_str().unwrap();
    assert!(message.contains("needs credential") && message.contains("hub push --secrets"), "{message}");
    assert_eq!(prism.requests(), ["get /pet/1"], "nothing but the check above reached Prism");

    let pushed = local.json(&["hub", "push", "--secrets", "--yes"]);
    assert_eq!(pushed["plan"]["secrets"]["sent"], json!(["pets/default credential"]), "{pushed}");
    assert!(!hub.stored(KEY), "the key is stored sealed only");
    let resumed = hub.execute(&token, json!({ "resume": keyless["runId"] }));
    assert!(!resumed.to_string().contains(KEY), "{resumed}");
    let resumed = &resumed["structuredContent"];
    assert_eq!(resumed["status"], "completed", "{resumed}");
    assert_eq!(resumed["result"], 200, "Prism took the key it checks: {resumed}");
    assert_eq!(prism.received("get /pet/7"), 1, "{:?}", prism.requests());

    // search finds the operation, describe types it.
    let found = text(&call(&hub, &token, "search", json!({ "query": "find a pet by its id" })));
    assert!(found.contains("pets.getPetById"), "{found}");
    let described = text(&call(&hub, &token, "describe", json!({ "targets": ["pets.getPetById"] })));
    assert!(described.contains("petId: number") && described.contains("status: number"), "{described}");

    // A read runs at once, with the key Prism checks.
    let read = execute(
        &hub,
        &token,
        "const r = await pets.getPetById({ petId: 7 }); \
         return { status: r.status, name: typeof r.body.name, ct: r.headers['content-type'] }",
    );
    assert_eq!(read["status"], "completed", "{read}");
    assert_eq!(
        read["result"],
        json!({ "status": 200, "name": "string", "ct": "application/json" }),
        "{read}"
    );
    assert_eq!(prism.received("get /pet/7"), 2, "{:?}", prism.requests());

    // A write waits for a person, and runs once when the admin API approves it.
    let paused = execute(
        &hub,
        &token,
        "return (await pets.placeOrder({ petId: 7, quantity: 1, status: 'placed' })).status",
    );
    assert_eq!(paused["status"], "awaiting_approval", "{paused}");
    assert_eq!(paused["pending"][0]["address"], "pets.placeOrder", "{paused}");
    assert_eq!(prism.received("post /store/order"), 0, "nothing was sent before the approval");
    let run = paused["runId"].as_str().unwrap().to_owned();
    let approve = json!({ "run": run, "choice": "once" }).to_string();
    let (status, said) =
        post(hub.workerd.port, &format!("/t/{tenant}/admin/approve"), Some(ADMIN_TOKEN), &approve);
    assert_eq!(status, 200, "{said}");
    assert_eq!(prism.received("post /store/order"), 0, "deciding does not run the call; resuming does");
    let done = hub.execute(&token, json!({ "resume": run }));
    let done = &done["structuredContent"];
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["result"], 200, "{done}");
    let again = hub.execute(&token, json!({ "resume": run }));
    assert_eq!(again["structuredContent"]["status"], "completed", "{again}");
    assert_eq!(prism.received("post /store/order"), 1, "the write ran once: {:?}", prism.requests());

    // A path parameter that climbs out of the base is refused on the hub; Prism never sees it.
    let climb = execute(&hub, &token, "return await pets.getUserByName({ username: '../../admin' })");
    assert!(climb.to_string().contains("may not be empty, `.` or `..`"), "{climb}");
    // Arguments the document refuses never leave the hub either.
    let bad = execute(&hub, &token, "return await pets.getPetById({ petId: 'seven' })");
    assert_eq!(bad["error"]["code"], "invalid_arguments", "{bad}");
    let requests = prism.requests();
    assert!(!requests.iter().any(|r| r.contains("admin") || r.contains("/user")), "{requests:?}");
    assert!(!requests.iter().any(|r| r.contains("seven")), "{requests:?}");

    // The key is in no run, journal or record the hub keeps: its SQLite holds the journal of
    // these calls in plain text, and the key only sealed.
    let (status, runs) =
        request(hub.workerd.port, "GET", &format!("/t/{tenant}/admin/runs"), Some(ADMIN_TOKEN), "");
    assert_eq!(status, 200, "{runs}");
    assert!(runs.contains(&run) && !runs.contains(KEY), "{runs}");
    // Prism's mock order (its `shipDate`) is only in the journal's outcome of the write.
    assert!(hub.stored("2019-08-24T14:15:22Z"), "the journal is on disk, in plain text");
    assert!(!hub.stored(KEY), "the key is stored sealed only, after the calls too");
}

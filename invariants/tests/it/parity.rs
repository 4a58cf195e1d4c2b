//! Local and hosted answer `search` and `describe` with the same text for the same sources:
//! server-everything over streamable HTTP, added to a local hub with `hub add <url>` and loaded
//! into a hosted tenant through the admin API; and the petstore OpenAPI document
//! (`@readme/oas-examples`), added with `hub add <document>` (its key typed in once) and loaded
//! with its records as `hub push` carries them. Search and describe read only the records, so
//! nothing listens at the API's base URL.

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use capabilities_invariants::{Home, Kind, SourceSpec, Target, Transport, repo};
use serde_json::{Value, json};

/// `@modelcontextprotocol/server-everything` in streamable HTTP mode, killed on drop.
struct Everything(Child);

impl Drop for Everything {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn everything() -> (Everything, String) {
    let script = repo().join("node/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(script.is_file(), "{} is missing: run `cd node && npm ci`", script.display());
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new("node")
        .arg(script)
        .arg("streamableHttp")
        .env("PORT", port.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("node starts: install Node.js 20 or later");
    let server = Everything(child);
    let deadline = Instant::now() + Duration::from_secs(30);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "server-everything did not listen on {port}");
        std::thread::sleep(Duration::from_millis(25));
    }
    (server, format!("http://127.0.0.1:{port}/mcp"))
}

/// What the model reads of a tool result: its text, and whether it is an error.
fn shown(result: &Value) -> String {
    let text: String =
        result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect();
    format!("isError={}\n{text}", result["isError"])
}

#[test]
fn search_and_describe_match_between_local_and_hosted() {
    let (_server, url) = everything();
    let source = SourceSpec {
        namespace: "everything".to_owned(),
        transport: Transport::Http { url },
        slots: Vec::new(),
    };
    let document = repo().join("node/node_modules/@readme/oas-examples/3.0/json/petstore.json");
    assert!(document.is_file(), "{} is missing: run `cd node && npm ci`", document.display());
    let api = SourceSpec {
        namespace: "pets".to_owned(),
        transport: Transport::OpenApi {
            document: document.display().to_string(),
            base_url: "http://127.0.0.1:9/v3".to_owned(),
            credential: Some("pets-parity-key".to_owned()),
        },
        slots: Vec::new(),
    };
    let mut targets: Vec<Box<dyn Target>> =
        [Kind::Stdio, Kind::Hosted].into_iter().map(|kind| kind.start(Home::new())).collect();
    for target in &mut targets {
        target.add_source(&source);
        target.add_source(&api);
    }
    let calls = [
        ("search", json!({"query": "echo"})),
        ("search", json!({"query": "add two numbers"})),
        ("search", json!({"query": "long running operation with progress"})),
        ("search", json!({"query": "image", "limit": 3})),
        ("search", json!({"query": "resource"})),
        ("search", json!({"query": "zzzz no such thing"})),
        // Natural words (stems, stand-ins) and a weak match, which lists the namespaces.
        ("search", json!({"query": "ask the user a question with a form"})),
        ("search", json!({"query": "add up numbers, then bake sourdough bread"})),
        ("describe", json!({"targets": ["everything"]})),
        ("describe", json!({"targets": ["everything.echo"]})),
        ("describe", json!({"targets": ["everything.echo", "everything.getSum"]})),
        ("describe", json!({"targets": ["everything.nothing"]})),
        // The API's operations, alone and beside the MCP source's tools.
        ("search", json!({"query": "find a pet by its id"})),
        ("search", json!({"query": "place an order for a pet"})),
        ("search", json!({"query": "upload an image", "limit": 5})),
        ("search", json!({"query": "log a user in"})),
        ("describe", json!({"targets": ["pets"]})),
        ("describe", json!({"targets": ["pets.getPetById"]})),
        ("describe", json!({"targets": ["pets.placeOrder", "pets.uploadFile", "everything.echo"]})),
        ("describe", json!({"targets": ["pets.findPetsByStatus", "pets.updateUser"]})),
    ];
    let mut differ = Vec::new();
    for (tool, arguments) in &calls {
        let answers: Vec<String> =
            targets.iter_mut().map(|t| shown(&t.call(tool, arguments.clone()))).collect();
        assert!(answers[0].len() > 20, "{tool} {arguments}: {}", answers[0]);
        // The API's operations are there to compare, not missing on both sides alike.
        let expected = match (*tool, arguments["query"].as_str()) {
            ("search", Some("find a pet by its id")) => Some("pets.getPetById"),
            ("describe", None) if arguments["targets"] == json!(["pets.getPetById"]) => Some("petId: number"),
            _ => None,
        };
        if let Some(expected) = expected {
            assert!(answers[0].contains(expected), "{tool} {arguments}: {}", answers[0]);
        }
        eprintln!("{tool} {arguments}: {} bytes: {:.160}", answers[0].len(), answers[0].replace('\n', " / "));
        if answers[0] != answers[1] {
            differ.push(format!("{tool} {arguments}\n--- local\n{}\n--- hosted\n{}", answers[0], answers[1]));
        }
    }
    assert!(differ.is_empty(), "local and hosted differ:\n{}", differ.join("\n\n"));
    eprintln!("parity: {} search and describe answers byte-identical", calls.len());
}

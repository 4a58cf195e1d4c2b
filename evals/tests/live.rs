//! Live mode's plumbing against a loopback server that answers like the Messages API with
//! recorded responses: requests carry the key header, the tools of each mode and every earlier
//! result; tool calls reach the real hub and fixtures; success and usage land in the report.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::Command;
use std::sync::{Arc, Mutex};

use capabilities_evals::live::Api;
use capabilities_evals::{Driver, Hub, Setup, repo, run_suite, scratch};
use serde_json::{Value, json};

const KEY: &str = "test-key-not-real";

fn hub_binary() -> PathBuf {
    let node = Command::new("node").arg("--version").output();
    assert!(node.is_ok_and(|o| o.status.success()), "`node` is not on PATH: install Node.js 20 or later");
    let exe = std::env::current_exe().unwrap();
    let bin = exe.parent().and_then(|deps| deps.parent()).unwrap().join("capabilities");
    assert!(bin.exists(), "{} is missing: run `cargo build -p capabilities` first", bin.display());
    bin
}

fn tool_use(name: &str, input: Value) -> Value {
    json!([{"type": "tool_use", "id": format!("toolu_{name}"), "name": name, "input": input}])
}

/// The recorded answer for a request: code mode searches, executes, then answers; direct mode
/// calls the tool, then answers.
fn answer(request: &Value) -> Value {
    let code = request["tools"].as_array().unwrap().iter().any(|t| t["name"] == "execute");
    let turn = request["messages"].as_array().unwrap().len() / 2;
    let content = match (code, turn) {
        (true, 0) => tool_use("search", json!({"query": "add label to issue"})),
        (true, 1) => tool_use(
            "execute",
            json!({"code": "return await tracker.addLabels({ id: 42, labels: [\"security\"] })"}),
        ),
        (false, 0) => tool_use("tracker__add_labels", json!({"id": 42, "labels": ["security"]})),
        _ => json!([{"type": "text", "text": "Issue 42 now has the security label."}]),
    };
    let stop = if content[0]["type"] == "tool_use" { "tool_use" } else { "end_turn" };
    json!({"id": "msg_1", "type": "message", "role": "assistant", "model": request["model"], "content": content,
           "stop_reason": stop, "usage": {"input_tokens": 1000 * (turn + 1), "output_tokens": 20}})
}

fn serve(listener: TcpListener, seen: Arc<Mutex<Vec<(String, Value)>>>) {
    for stream in listener.incoming() {
        let Ok(mut stream) = stream else { break };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut head = String::new();
        let mut length = 0;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap() == 0 || line == "\r\n" {
                break;
            }
            if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = v.trim().parse().unwrap();
            }
            head.push_str(&line);
        }
        let mut body = vec![0; length];
        reader.read_exact(&mut body).unwrap();
        let request: Value = serde_json::from_slice(&body).unwrap();
        let reply = answer(&request).to_string();
        seen.lock().unwrap().push((head, request));
        write!(stream, "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}", reply.len()).unwrap();
    }
}

#[test]
fn live_mode_drives_both_modes_through_a_messages_api() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen = Arc::new(Mutex::new(Vec::new()));
    let recorded = Arc::clone(&seen);
    std::thread::spawn(move || serve(listener, recorded));

    let work = scratch().unwrap();
    let setup = Setup { repo: repo(), bin: hub_binary(), work: work.clone(), hub: Hub::Local };
    let driver = Driver::Live { api: Api::new(&base, "claude-test", KEY), only: vec!["label-issue".into()] };
    let result = run_suite(setup, &repo().join("evals/tasks"), &driver, |_| {});
    let _ = std::fs::remove_dir_all(&work);
    let (report, _) = result.unwrap();

    assert_eq!(report.tasks.len(), 1);
    let row = &report.tasks[0];
    assert!(row.code.success, "{:?}", row.code.failures);
    assert!(row.direct.success, "{:?}", row.direct.failures);
    assert_eq!(row.code.per_turn, vec![1000, 2000, 3000], "usage comes from the API");
    assert_eq!(row.direct.per_turn, vec![1000, 2000]);

    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 5, "three code-mode turns, two direct");
    for (head, request) in seen.iter() {
        assert!(head.contains(&format!("x-api-key: {KEY}")), "{head}");
        assert!(head.contains("anthropic-version: 2023-06-01"), "{head}");
        assert_eq!(request["model"], "claude-test");
    }
    let (_, code_last) = &seen[2];
    assert_eq!(code_last["tools"].as_array().unwrap().len(), 3, "code mode offers the hub's three tools");
    assert!(
        code_last["system"].as_str().unwrap().contains("search"),
        "the hub's instructions are the system prompt"
    );
    let results = code_last["messages"].to_string();
    assert!(results.contains("tracker.addLabels"), "the search result went back to the model: {results}");
    assert!(results.contains("completed"), "the execute envelope went back to the model: {results}");
    let (_, direct_last) = &seen[4];
    assert_eq!(
        direct_last["tools"].as_array().unwrap().len(),
        report.direct_tools,
        "direct mode offers every tool"
    );
    assert!(direct_last["messages"].to_string().contains("security"), "the tool result went back");
}

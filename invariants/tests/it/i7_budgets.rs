//! I7: every channel has a budget. A huge result (from code or from the upstream), a flood of
//! logs, an oversized search, a describe over many long tools and a pending call with a huge
//! argument each come back capped, and say so.

use capabilities_core::limits::Limits;
use capabilities_invariants::{Home, Kind, Need};
use serde_json::{Value, json};

use crate::support::{default_tools, on_each_target, skips, upstream_hub};

const LIMITS: Limits = Limits::DEFAULT;

/// The text the model reads for a tool result.
fn text(result: &Value) -> String {
    result["content"].as_array().into_iter().flatten().filter_map(|c| c["text"].as_str()).collect()
}

fn every_channel_is_capped(kind: Kind) {
    let mut target = kind.start(Home::new());
    let upstream = upstream_hub(&mut *target);
    // Many tools with long descriptions, for search and describe.
    let mut tools = default_tools();
    for i in 0..120 {
        tools.as_array_mut().unwrap().push(json!({
            "name": format!("filler_{i}"),
            "description": format!("Filler tool number {i} that searches records. {}", "Long words about records. ".repeat(120)),
            "readOnly": true,
            "props": {"query": {"type": "string", "description": "q ".repeat(400)}},
        }));
    }
    upstream.set_tools(&tools);
    target.refresh("up", true);
    // Result and logs share `inline_result_bytes` as written in JSON (escapes counted); the
    // rest of the envelope (run id, status, calls, notices) is small.
    let cap = LIMITS.inline_result_bytes + 2 * 1024;
    let mut cases = 0;

    for code in [
        r#"return "x".repeat(2_000_000)"#,
        r#"return Array.from({length: 200000}, (_, i) => ({i, s: "row"}))"#,
        r#"return await up.big({n: 3_000_000})"#,
        r#"return ["\"".repeat(1_000_000)]"#,
    ] {
        let result = target.call("execute", json!({"code": code}));
        let envelope = &result["structuredContent"];
        assert_eq!(
            envelope["truncated"]["result"],
            json!(true),
            "{}: `{code}` is marked truncated: status {}, error {}",
            target.name(),
            envelope["status"],
            envelope["error"]
        );
        let size = text(&result).len();
        assert!(size <= cap, "{}: `{code}` came back as {size} bytes, over {cap}", target.name());
        cases += 1;
    }

    let logs = target.call("execute", json!({"code": "for (let i = 0; i < 50000; i++) console.log('line ' + i + ' '.repeat(50)); return 1"}));
    assert_eq!(
        logs["structuredContent"]["truncated"]["logs"],
        json!(true),
        "{}: logs are marked truncated: {}",
        target.name(),
        text(&logs).len()
    );
    assert!(text(&logs).len() <= cap, "{}: logs came back as {} bytes", target.name(), text(&logs).len());
    cases += 1;

    // An oversized limit is refused; the largest allowed one is capped and says how many more.
    let refused = target.call("search", json!({"query": "records filler", "limit": 100_000}));
    assert_eq!(refused["isError"], json!(true), "{}: {refused}", target.name());
    let search = target.call("search", json!({"query": "records filler", "limit": LIMITS.search_max_limit}));
    let found = text(&search);
    let hits = found.matches("up.filler").count();
    assert!(hits > 0 && hits <= LIMITS.search_max_limit, "{}: search returned {hits} tools", target.name());
    assert!(found.contains("more matches"), "{}: search says it is cut: {found}", target.name());
    cases += 2;

    let targets: Vec<String> = (0..10).map(|i| format!("up.filler{i}")).collect();
    for targets in [json!(targets), json!(["up"])] {
        let described = target.call("describe", json!({"targets": targets}));
        let shown = text(&described);
        let tokens = capabilities_core::tokens::count(&shown);
        assert!(
            tokens <= LIMITS.describe_tokens + 200,
            "{}: describe {targets} is {tokens} tokens",
            target.name()
        );
        cases += 1;
    }
    let whole = text(&target.call("describe", json!({"targets": ["up"]})));
    assert!(whole.contains("more tools not shown"), "{}: describe says it is cut: {whole}", target.name());

    let waiting = target.execute(r#"return await up.write({key: "k".repeat(500_000)})"#);
    assert_eq!(waiting["status"], json!("awaiting_approval"), "{waiting}");
    assert!(
        waiting.to_string().len() <= cap,
        "{}: the pending envelope is {} bytes",
        target.name(),
        waiting.to_string().len()
    );
    // The approval page the hub opened shows a capped preview of the arguments.
    if !skips(&*target, "I7 approval page", Need::ApprovalPage) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
        let mut opened = target.hub().opened();
        while opened.is_empty() && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(100));
            opened = target.hub().opened();
        }
        let page =
            opened.last().unwrap_or_else(|| panic!("{}: the hub opened no approval page", target.name()));
        let (status, body) = get_page(page);
        assert_eq!(status, 200, "{}: {body}", target.name());
        assert!(
            body.len() <= LIMITS.approval_preview_bytes * 4 + 16 * 1024,
            "{}: the page is {} bytes",
            target.name(),
            body.len()
        );
        let longest = body.split(|c| c != 'k').map(str::len).max().unwrap_or(0);
        assert!(
            longest > 100 && longest <= LIMITS.approval_preview_bytes,
            "{}: the page shows {longest} bytes of the argument",
            target.name()
        );
        assert!(
            body.contains('…') || body.contains("&hellip;") || body.contains("&#8230;"),
            "{}: the page marks the preview as cut",
            target.name()
        );
        cases += 2;
    }

    // An upstream that floods stderr and dies: the error carries a short tail.
    if !skips(&*target, "I7 stderr tail", Need::StdioUpstream) {
        std::fs::write(upstream.crash(), "").unwrap();
        target.restart();
        let crashed = target.call("execute", json!({"code": "return await up.env({name: 'HOME'})"}));
        let said = text(&crashed);
        assert_eq!(crashed["structuredContent"]["status"], json!("failed"), "{}: {said}", target.name());
        let longest = said.split(|c| c != 'E').map(str::len).max().unwrap_or(0);
        assert!(longest > 0, "{}: the error shows the stderr tail: {said}", target.name());
        assert!(
            longest <= 8 * 1024 && said.len() <= cap,
            "{}: the stderr tail is {longest} bytes",
            target.name()
        );
        let doctor = target.cli(&["doctor"], None);
        let longest =
            (doctor.stdout.clone() + &doctor.stderr).split(|c| c != 'E').map(str::len).max().unwrap_or(0);
        assert!(longest <= 8 * 1024, "{}: doctor shows {longest} bytes of stderr", target.name());
        cases += 2;
    }
    eprintln!("I7 {}: {cases} channels", target.name());
}
on_each_target!(every_channel_is_capped);

/// GET an approval page address as the browser would; the status and the body.
fn get_page(url: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let rest = url.strip_prefix("http://127.0.0.1:").unwrap_or_else(|| panic!("a loopback page: {url}"));
    let (port, path) = rest.split_once('/').unwrap();
    let port: u16 = port.parse().unwrap();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();
    write!(stream, "GET /{path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n").unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let status = answer.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    (status, answer.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default())
}

/// The text of an elicitation prompt for a call with a huge argument is capped and marked.
#[test]
fn elicitation_text_is_capped() {
    let home = Home::new();
    let _upstream = upstream_hub(&mut capabilities_invariants::LocalStdio::start(home.clone()));
    let mut target = capabilities_invariants::LocalStdio::eliciting(home, json!({"action": "decline"}));
    use capabilities_invariants::Target as _;
    let envelope = target.execute(r#"return await up.write({key: "k".repeat(500_000)})"#);
    let asked = target.elicitations();
    assert_eq!(asked.len(), 1, "the hub asked through the client: {envelope}");
    let message = asked[0]["message"].as_str().unwrap();
    assert!(message.len() <= 8 * 1024, "the prompt is {} bytes", message.len());
    assert!(
        message.ends_with("[truncated]") || message.contains('…'),
        "the prompt is marked as cut: {message}"
    );
    eprintln!("I7 elicitation: the prompt is {} bytes", message.len());
}

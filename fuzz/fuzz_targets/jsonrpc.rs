//! Fuzz target: the served endpoint's entry, as one HTTP request reaches it — the gate's Host,
//! Origin and bearer-token checks on the headers, the JSON-RPC parse of the body, and for a
//! `tools/call` the tool's name and arguments checked and `search`, `describe` or the code
//! pipeline run on them (against the tool lists recorded from real MCP servers).
//!
//! The input is header lines (`Name: value`, and any line without a colon as the request
//! target), a blank line, then the body; without a blank line it is all body, sent with the
//! headers a good client sends. The property beyond "never panics": the gate lets a request
//! through only with an accepted Host and this server's token.

#![no_main]

use std::sync::OnceLock;

use capabilities::serve::gate::Gate;
use capabilities::serve::handler::dry_call;
use capabilities::serve::http::parse_message;
use capabilities::serve::token::{TOKEN_FILE, Token};
use capabilities_core::address::Namespace;
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::limits::Limits;
use capabilities_core::manifest::Manifest;
use capabilities_core::policy::{CompiledPolicy, PolicyState};
use capabilities_core::surface::Surface;
use http::{HeaderMap, HeaderName, HeaderValue, Uri};
use libfuzzer_sys::fuzz_target;
use rmcp::model::{ClientJsonRpcMessage, ClientRequest, JsonRpcMessage};
use serde_json::Value;

/// The token the seeds carry.
const TOKEN: &str = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
const PORT: u16 = 4790;

const SOURCES: [(&str, &str); 3] = [
    ("everything", include_str!("../../core/tests/data/tools/everything.json")),
    ("memory", include_str!("../../core/tests/data/tools/memory.json")),
    ("filesystem", include_str!("../../core/tests/data/tools/filesystem.json")),
];

fn gate() -> &'static Gate {
    static GATE: OnceLock<Gate> = OnceLock::new();
    GATE.get_or_init(|| {
        use std::os::unix::fs::PermissionsExt;
        let home = std::env::temp_dir().join(format!("capabilities-fuzz-{}", std::process::id()));
        std::fs::create_dir_all(&home).expect("a temporary directory");
        let path = home.join(TOKEN_FILE);
        std::fs::write(&path, TOKEN).expect("the token file");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("mode 600");
        let (token, _) = Token::load_or_create(&home).expect("the token");
        std::fs::remove_dir_all(&home).ok();
        Gate::new(PORT, token)
    })
}

fn surface() -> &'static Surface {
    static SURFACE: OnceLock<Surface> = OnceLock::new();
    SURFACE.get_or_init(|| {
        let mut views = Vec::new();
        for (namespace, tools) in SOURCES {
            let entries: Vec<Value> = serde_json::from_str(tools).expect("a recorded tool list");
            let (manifest, _) =
                Manifest::from_tools_list(Namespace::new(namespace).expect("a namespace"), &entries);
            views.push(SourceView {
                manifest,
                connections: vec!["default".to_owned()],
                default_connection: None,
            });
        }
        let catalog = Catalog::new(views);
        let mut state = PolicyState::default();
        for (address, tool) in catalog.tools() {
            state.reviewed.insert(address.to_string(), tool.digest);
        }
        Surface::new(catalog, CompiledPolicy::new(state).expect("a policy"), Limits::DEFAULT, capabilities::host::words())
    })
}

/// Headers and request target from the input's head; a good client's when there is no head.
fn request_head(head: Option<&[u8]>) -> (Uri, HeaderMap) {
    let mut headers = HeaderMap::new();
    let mut uri = Uri::from_static("/mcp");
    let Some(head) = head else {
        headers.insert(http::header::HOST, HeaderValue::from_static("127.0.0.1:4790"));
        let bearer = format!("Bearer {TOKEN}");
        headers.insert(http::header::AUTHORIZATION, HeaderValue::from_str(&bearer).expect("a header value"));
        return (uri, headers);
    };
    for line in head.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        match line.iter().position(|&b| b == b':') {
            Some(colon) => {
                let (name, value) = (&line[..colon], line[colon + 1..].trim_ascii_start());
                if let (Ok(name), Ok(value)) = (HeaderName::from_bytes(name), HeaderValue::from_bytes(value))
                {
                    headers.append(name, value);
                }
            }
            None => {
                if let Ok(target) = Uri::try_from(line) {
                    uri = target;
                }
            }
        }
    }
    (uri, headers)
}

fuzz_target!(|data: &[u8]| {
    let split = data.windows(2).position(|w| w == b"\n\n");
    let (head, body) = match split {
        Some(at) => (Some(&data[..at]), &data[at + 2..]),
        None => (None, data),
    };
    let (uri, headers) = request_head(head);
    if gate().check(&uri, &headers).is_ok() {
        let hosts = gate().hosts();
        let host = headers.get(http::header::HOST).map(HeaderValue::as_bytes).unwrap_or_default();
        assert!(hosts.iter().any(|h| h.as_bytes().eq_ignore_ascii_case(host)), "a foreign Host got through");
        let authorization =
            headers.get(http::header::AUTHORIZATION).map(HeaderValue::as_bytes).unwrap_or_default();
        assert!(
            authorization.windows(TOKEN.len()).any(|w| w == TOKEN.as_bytes()),
            "a request without the token got through"
        );
    } else if head.is_none() {
        panic!("a good client's headers were refused");
    }
    let Ok(message) = parse_message(body) else { return };
    let message: ClientJsonRpcMessage = message;
    if let JsonRpcMessage::Request(request) = message {
        if let ClientRequest::CallToolRequest(call) = request.request {
            let arguments = Value::Object(call.params.arguments.unwrap_or_default());
            let _ = dry_call(surface(), &call.params.name, arguments);
        }
    }
});

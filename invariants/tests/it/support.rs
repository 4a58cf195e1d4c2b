//! What the cases share: the fixture upstream added to a store, the canary secret in every
//! form it must never take, and the macro that runs a case on each target.

use std::path::PathBuf;

use capabilities_invariants::{Home, repo, sdk_dir};
use serde_json::{Value, json};

/// Runs the case `$case(kind)` once per local target, as tests `$case::local_stdio` and
/// `$case::local_http`.
macro_rules! on_each_target {
    ($case:ident) => {
        mod $case {
            #[test]
            fn local_stdio() {
                super::$case(capabilities_invariants::Kind::Stdio)
            }

            #[test]
            fn local_http() {
                super::$case(capabilities_invariants::Kind::Http)
            }
        }
    };
}
pub(crate) use on_each_target;

/// A secret with characters that every encoding changes (`/`, `+`, `=`, `!`).
pub const CANARY: &str = "cnry-Zq9/x+Tk7=pW3!mV-4c1e8b";

/// The canary as raw, base64 (padded, unpadded, URL-safe), hex (both cases) and URL-encoded.
pub fn canary_forms() -> Vec<String> {
    use base64::Engine as _;
    use base64::engine::general_purpose::{STANDARD, STANDARD_NO_PAD, URL_SAFE_NO_PAD};
    let bytes = CANARY.as_bytes();
    let url: String = bytes
        .iter()
        .map(|&b| {
            if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    vec![
        CANARY.to_owned(),
        STANDARD.encode(bytes),
        STANDARD_NO_PAD.encode(bytes),
        URL_SAFE_NO_PAD.encode(bytes),
        hex::encode(bytes),
        hex::encode_upper(bytes),
        url.clone(),
        url.to_lowercase(),
    ]
}

/// The forms of the canary `haystack` holds.
pub fn leaks(haystack: &[u8]) -> Vec<String> {
    canary_forms()
        .into_iter()
        .filter(|form| haystack.windows(form.len()).any(|w| w == form.as_bytes()))
        .collect()
}

/// The tool list the fixture serves until a case rewrites `tools.json`.
pub fn default_tools() -> Value {
    json!([
        {"name": "env", "description": "Returns one environment variable.", "readOnly": true,
         "props": {"name": {"type": "string"}, "encoding": {"type": "string"}, "fail": {"type": "boolean"}}},
        {"name": "write", "description": "Writes one key.", "readOnly": false, "props": {"key": {"type": "string"}}},
        {"name": "big", "description": "Returns a long string.", "readOnly": true, "props": {"n": {"type": "number"}}},
    ])
}

/// Files of the fixture upstream beside a store.
pub struct Upstream {
    /// Rewrite this to change the tool list the next `tools/list` sees.
    pub tools: PathBuf,
    /// One line per tool call the upstream received.
    pub count: PathBuf,
}

impl Upstream {
    pub fn set_tools(&self, tools: &Value) {
        std::fs::write(&self.tools, serde_json::to_vec_pretty(tools).unwrap()).unwrap();
    }

    /// While this file exists, the upstream floods stderr and exits at start.
    pub fn crash(&self) -> PathBuf {
        self.count.with_file_name("crash")
    }

    /// The calls the upstream received, one `<tool> <key>` line each.
    pub fn calls(&self) -> Vec<String> {
        std::fs::read_to_string(&self.count).unwrap_or_default().lines().map(str::to_owned).collect()
    }
}

/// Adds the fixture upstream as source `up` (tools reviewed as proposed: reads allowed, `write`
/// asks), with a credential slot `CANARY`, filled with the canary through `hub auth --stdin`.
pub fn upstream_hub(home: &Home) -> Upstream {
    let upstream = Upstream { tools: home.scratch().join("tools.json"), count: home.scratch().join("count") };
    upstream.set_tools(&default_tools());
    let fixture = repo().join("invariants/tests/fixtures/upstream.mjs");
    let sdk = format!("MCP_SDK_DIR={}", sdk_dir().display());
    let tools = format!("UPSTREAM_TOOLS={}", upstream.tools.display());
    let count = format!("UPSTREAM_COUNT={}", upstream.count.display());
    let crash = format!("UPSTREAM_CRASH={}", upstream.crash().display());
    home.cli(
        &[
            "add",
            "--yes",
            "--namespace",
            "up",
            "--env",
            "CANARY",
            "--env",
            &sdk,
            "--env",
            &tools,
            "--env",
            &count,
            "--env",
            &crash,
            "--",
            "node",
            fixture.to_str().unwrap(),
        ],
        None,
    )
    .expect_code(0);
    home.cli(&["auth", "up", "--stdin"], Some(&format!("{CANARY}\n"))).expect_code(0);
    upstream
}

//! What the cases share: the fixture upstream added to a store, the canary secret in every
//! form it must never take, and the macro that runs a case on each target.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};

use capabilities_invariants::{Applicability, Need, SourceSpec, Target, Transport, repo, sdk_dir};
use serde_json::{Value, json};

/// Runs the case `$case(kind)` once per target, as tests `$case::local_stdio`,
/// `$case::local_http` and `$case::hosted`.
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

            #[test]
            fn hosted() {
                super::$case(capabilities_invariants::Kind::Hosted)
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
    // One pass for all the forms: the stores searched hold megabytes, and this runs unoptimised.
    static FORMS: std::sync::LazyLock<(Vec<String>, aho_corasick::AhoCorasick)> =
        std::sync::LazyLock::new(|| {
            let forms = canary_forms();
            let searcher =
                aho_corasick::AhoCorasick::new(&forms).expect("the canary's forms make a searcher");
            (forms, searcher)
        });
    let (forms, searcher) = &*FORMS;
    let mut found = vec![false; forms.len()];
    for hit in searcher.find_overlapping_iter(haystack) {
        found[hit.pattern().as_usize()] = true;
    }
    forms.iter().zip(found).filter(|(_, found)| *found).map(|(form, _)| form.clone()).collect()
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

/// Files of the fixture upstream beside a store, and its process when it serves HTTP.
pub struct Upstream {
    /// Rewrite this to change the tool list the next `tools/list` sees.
    pub tools: PathBuf,
    /// One line per tool call the upstream received.
    pub count: PathBuf,
    server: Option<Child>,
}

impl Drop for Upstream {
    fn drop(&mut self) {
        if let Some(server) = &mut self.server {
            let _ = server.kill();
            let _ = server.wait();
        }
    }
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
/// asks), with a credential slot `CANARY` the person fills with the canary. Over stdio where
/// the target starts commands (the slot is an environment variable); else the fixture serves
/// HTTP on loopback and the slot is a header it reads back.
pub fn upstream_hub(target: &mut dyn Target) -> Upstream {
    let scratch = target.hub().scratch().to_owned();
    let mut upstream =
        Upstream { tools: scratch.join("tools.json"), count: scratch.join("count"), server: None };
    upstream.set_tools(&default_tools());
    let fixture = repo().join("invariants/tests/fixtures/upstream.mjs");
    let env = vec![
        ("MCP_SDK_DIR".to_owned(), sdk_dir().display().to_string()),
        ("UPSTREAM_TOOLS".to_owned(), upstream.tools.display().to_string()),
        ("UPSTREAM_COUNT".to_owned(), upstream.count.display().to_string()),
        ("UPSTREAM_CRASH".to_owned(), upstream.crash().display().to_string()),
    ];
    let transport = if target.applies(Need::StdioUpstream) == Applicability::Applies {
        Transport::Stdio { command: vec!["node".to_owned(), fixture.display().to_string()], env }
    } else {
        let mut server = Command::new("node")
            .arg(&fixture)
            .arg("http")
            .envs(env)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("node starts: install Node.js 20 or later");
        let mut line = String::new();
        BufReader::new(server.stdout.take().unwrap()).read_line(&mut line).unwrap();
        let ports: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("the fixture printed its ports ({e}): {line:?}"));
        upstream.server = Some(server);
        Transport::Http { url: format!("http://127.0.0.1:{}/mcp", ports["port"]) }
    };
    let source = SourceSpec { namespace: "up".to_owned(), transport, slots: vec!["CANARY".to_owned()] };
    target.add_source(&source);
    target.set_secret("up", "CANARY", CANARY);
    upstream
}

/// Says why `target` skips a case and returns true, when it does not meet `need`.
pub fn skips(target: &dyn Target, invariant: &str, need: Need) -> bool {
    let Applicability::NotApplicable(reason) = target.applies(need) else { return false };
    eprintln!("{invariant} {}: not applicable: {reason}", target.name());
    true
}

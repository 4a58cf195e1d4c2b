//! Live mode: a real model (the Anthropic Messages API) works each task in both modes, with
//! the same fixtures, success checks and report as the scripted suite.
//!
//! The key comes from `ANTHROPIC_API_KEY` and goes only into a request header: over `http://`
//! (a loopback server in tests) the harness speaks HTTP/1.1 itself; over `https://` it hands
//! the request to `curl` through its stdin config, never its arguments.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, bail};
use capabilities_core::tokens;
use serde_json::{Value, json};

use crate::modes::{Client, Message, Outcome, Suite, Transcript};
use crate::rpc::{Peer, result_text};
use crate::task::Task;

/// Turns a model gets per task before the harness stops it.
const MAX_TURNS: usize = 25;

#[derive(Clone)]
pub struct Api {
    pub base_url: String,
    pub model: String,
    key: String,
}

impl std::fmt::Debug for Api {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Api")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .finish_non_exhaustive()
    }
}

impl Api {
    /// From the environment: `ANTHROPIC_API_KEY` (required), `ANTHROPIC_BASE_URL`, `EVALS_MODEL`.
    pub fn from_env() -> Result<Api> {
        let key = std::env::var("ANTHROPIC_API_KEY").ok().filter(|k| !k.is_empty()).context(
            "live mode drives a real model and needs ANTHROPIC_API_KEY in the environment; the offline suite runs without it",
        )?;
        Ok(Api {
            base_url: std::env::var("ANTHROPIC_BASE_URL")
                .unwrap_or_else(|_| "https://api.anthropic.com".into()),
            model: std::env::var("EVALS_MODEL").unwrap_or_else(|_| "claude-sonnet-4-5".into()),
            key,
        })
    }

    pub fn new(base_url: &str, model: &str, key: &str) -> Api {
        Api { base_url: base_url.to_owned(), model: model.to_owned(), key: key.to_owned() }
    }

    /// One `POST /v1/messages`; the parsed response.
    pub fn messages(&self, body: &Value) -> Result<Value> {
        let url = format!("{}/v1/messages", self.base_url.trim_end_matches('/'));
        let text = if let Some(rest) = url.strip_prefix("http://") {
            self.plain_http(rest, &body.to_string())?
        } else {
            self.curl(&url, &body.to_string())?
        };
        let value: Value = serde_json::from_str(&text)
            .with_context(|| format!("the model API answered with non-JSON: {text:.200}"))?;
        if value["type"] == json!("error") {
            bail!("the model API refused the request: {}", value["error"]);
        }
        Ok(value)
    }

    fn plain_http(&self, rest: &str, body: &str) -> Result<String> {
        let (host, path) = rest.split_once('/').map_or((rest, "/".to_owned()), |(h, p)| (h, format!("/{p}")));
        let mut stream =
            std::net::TcpStream::connect(host).with_context(|| format!("connecting to {host}"))?;
        write!(
            stream,
            "POST {path} HTTP/1.1\r\nHost: {host}\r\nx-api-key: {}\r\nanthropic-version: 2023-06-01\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
            self.key,
            body.len()
        )?;
        let mut answer = String::new();
        stream.read_to_string(&mut answer)?;
        let (head, body) = answer.split_once("\r\n\r\n").context("the model API's answer has no body")?;
        let status: u16 = head.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
        if status != 200 {
            bail!("the model API answered {status}: {body:.300}");
        }
        Ok(body.to_owned())
    }

    fn curl(&self, url: &str, body: &str) -> Result<String> {
        let quote = |s: &str| s.replace('\\', "\\\\").replace('"', "\\\"");
        let config = format!(
            "url = \"{}\"\nrequest = \"POST\"\nheader = \"x-api-key: {}\"\nheader = \"anthropic-version: 2023-06-01\"\nheader = \"content-type: application/json\"\ndata-binary = \"{}\"\nsilent\nshow-error\nfail-with-body\n",
            quote(url),
            quote(&self.key),
            quote(body)
        );
        let mut child = Command::new("curl")
            .args(["--config", "-"])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .context("live mode over https needs `curl` on PATH")?;
        child.stdin.take().context("curl's stdin")?.write_all(config.as_bytes())?;
        let out = child.wait_with_output()?;
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        if !out.status.success() {
            bail!("the model API request failed: {}{text:.300}", String::from_utf8_lossy(&out.stderr));
        }
        Ok(text)
    }
}

/// Where a mode's tool calls go.
enum Tools<'a> {
    Hub(Client<'a>, &'a Suite),
    Direct(BTreeMap<String, Peer>, &'a Suite),
}

impl Tools<'_> {
    /// Runs one tool call; the text the model reads and whether it is an error.
    fn call(&mut self, name: &str, input: &Value) -> Result<(String, bool)> {
        match self {
            Tools::Hub(serve, suite) => {
                let result = serve.request("tools/call", json!({"name": name, "arguments": input}))?;
                let structured = &result["structuredContent"];
                if structured["status"] == json!("awaiting_approval") {
                    // A person approves, as they would on the page or the CLI; the model resumes.
                    if let Some(run) = structured["runId"].as_str() {
                        suite.approve(run, "once")?;
                    }
                }
                Ok((result_text(&result), result["isError"] == json!(true)))
            }
            Tools::Direct(peers, suite) => {
                let Some((source, tool)) = name.split_once("__") else {
                    return Ok((format!("there is no tool {name}"), true));
                };
                if !peers.contains_key(source) {
                    match suite.fixture(source) {
                        Ok(peer) => peers.insert(source.to_owned(), peer),
                        Err(_) => return Ok((format!("there is no tool {name}"), true)),
                    };
                }
                let peer = peers.get_mut(source).context("started above")?;
                let result = peer.request("tools/call", json!({"name": tool, "arguments": input}))?;
                Ok((result_text(&result), result["isError"] == json!(true)))
            }
        }
    }
}

/// Runs `task` with a live model: `code` through the hub, otherwise with direct tools.
pub fn run(suite: &Suite, api: &Api, task: &Task, code: bool) -> Result<Outcome> {
    let (mut tools, system, definitions, state) = if code {
        suite.reset(&suite.code_state)?;
        let (serve, _) = suite.client()?;
        (
            Tools::Hub(serve, suite),
            suite.instructions.clone(),
            suite.surface_tools.clone(),
            suite.code_state.clone(),
        )
    } else {
        suite.reset(&suite.direct_state)?;
        (
            Tools::Direct(BTreeMap::new(), suite),
            String::new(),
            suite.direct_tools.clone(),
            suite.direct_state.clone(),
        )
    };
    let mut conversation = vec![json!({"role": "user", "content": task.prompt})];
    let mut recorded = Vec::new();
    let mut per_turn = Vec::new();
    let mut failures = Vec::new();
    for turn in 0.. {
        if turn == MAX_TURNS {
            failures.push(format!("stopped after {MAX_TURNS} turns"));
            break;
        }
        let mut body =
            json!({"model": api.model, "max_tokens": 4096, "tools": definitions, "messages": conversation});
        if !system.is_empty() {
            body["system"] = json!(system);
        }
        let response = api.messages(&body)?;
        per_turn.push(response["usage"]["input_tokens"].as_u64().unwrap_or(0) as usize);
        let content = response["content"].as_array().cloned().unwrap_or_default();
        conversation.push(json!({"role": "assistant", "content": content}));
        recorded.push(Message::new("assistant", Value::Array(content.clone()).to_string()));
        let uses: Vec<&Value> = content.iter().filter(|b| b["type"] == json!("tool_use")).collect();
        if uses.is_empty() {
            break;
        }
        let mut results = Vec::new();
        for tool_use in uses {
            let (text, is_error) =
                tools.call(tool_use["name"].as_str().unwrap_or_default(), &tool_use["input"])?;
            recorded.push(Message::new("tool", text.clone()));
            results.push(json!({"type": "tool_result", "tool_use_id": tool_use["id"], "content": text, "is_error": is_error}));
        }
        conversation.push(json!({"role": "user", "content": results}));
    }
    drop(tools);
    let transcript = Transcript {
        fixed_tokens: if code { suite.surface_tokens } else { suite.direct_tokens },
        prompt_tokens: tokens::count(&task.prompt),
        messages: recorded,
    };
    let mut outcome = Outcome::new(transcript, failures, &suite.states(&state)?, task);
    // The API's own count of what the model read is the figure that matters here.
    outcome.turns = per_turn.len();
    outcome.input_tokens = per_turn.iter().sum();
    outcome.per_turn = per_turn;
    Ok(outcome)
}

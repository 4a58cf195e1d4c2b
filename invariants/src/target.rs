//! The `Target` trait: what the suite needs from a build of the hub — its MCP endpoint, its
//! serving process, and the person's channel (the CLI on a local store, the admin API on a
//! hosted tenant) — and the kinds of target.

use std::path::{Path, PathBuf};

use serde_json::{Value, json};

use crate::home::{Home, Ran};

/// Whether an invariant can be checked on a target at all.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum Applicability {
    Applies,
    /// Not applicable, with the reason.
    NotApplicable(&'static str),
}

/// What a case needs that not every build of the hub offers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Need {
    /// A person can approve a waiting run.
    Approvals,
    /// The case reads the local store's files.
    LocalStore,
    /// An upstream spoken to over stdio (a command the hub starts).
    StdioUpstream,
    /// The loopback approval page the local hub opens.
    ApprovalPage,
    /// Several tenants on one hub (I5).
    TenantIsolation,
}

/// How a person reaches an upstream MCP server.
#[derive(Debug, Clone)]
pub enum Transport {
    /// A command the hub starts, with plain (non-credential) environment variables.
    Stdio { command: Vec<String>, env: Vec<(String, String)> },
    /// A streamable HTTP endpoint.
    Http { url: String },
    /// An HTTP API described by an OpenAPI document (a file or a URL), its requests going to
    /// `base_url`; `credential` is typed in once at add (`--stdin`), or with `None` the API is
    /// added with `--auth none`.
    OpenApi { document: String, base_url: String, credential: Option<String> },
}

/// A source as a person adds it, its tools reviewed as proposed (reads allowed, the rest ask).
#[derive(Debug, Clone)]
pub struct SourceSpec {
    pub namespace: String,
    pub transport: Transport,
    /// Credential slots: environment variables for stdio, headers for HTTP.
    pub slots: Vec<String>,
}

/// One build of the hub, serving MCP over some transport on a private store.
///
/// The person-side methods (`add_source` … `stored_files`) default to the local CLI on the
/// target's store; a serving local hub reopens its store when its configuration changed.
pub trait Target {
    /// A short name for reports: `local-stdio`, `local-http`.
    fn name(&self) -> &'static str;

    /// The store and the CLI a person uses on it.
    fn hub(&self) -> &Home;

    /// Sends one JSON-RPC request; returns the whole answer (`result` or `error`).
    fn request(&mut self, method: &str, params: Value) -> Value;

    /// Sends a JSON-RPC message that expects no answer (a notification, or a response to a
    /// request the server may never have made).
    fn send(&mut self, message: Value);

    /// Everything the serving process wrote on stderr so far.
    fn stderr(&self) -> String;

    /// The serving process's id (to kill it from another thread mid-call).
    fn pid(&self) -> u32;

    /// Kills the serving process with SIGKILL, without waiting for anything to finish.
    fn kill(&mut self);

    /// Starts serving again on the same store (after `kill`, or to pick up a changed store).
    fn restart(&mut self);

    /// Whether a case's need is met by this build; local targets meet all but tenants.
    fn applies(&self, need: Need) -> Applicability {
        match need {
            Need::TenantIsolation => Applicability::NotApplicable(
                "a local hub serves one person; tenant isolation is the hosted hub's",
            ),
            _ => Applicability::Applies,
        }
    }

    /// The hosted hub behind this target, for cases that need its tenants or admin API.
    fn as_hosted(&self) -> Option<&crate::Hosted> {
        None
    }

    /// The store's directory.
    fn home(&self) -> &Path {
        self.hub().path()
    }

    /// Runs a `capabilities hub …` command as a person would.
    fn cli(&self, args: &[&str], stdin: Option<&str>) -> Ran {
        self.hub().cli(args, stdin)
    }

    /// A person adds `source`, accepting the proposed policy.
    fn add_source(&mut self, source: &SourceSpec) {
        add_locally(self.hub(), source);
    }

    /// A person fills credential `slot` of `namespace`'s default connection.
    fn set_secret(&mut self, namespace: &str, _slot: &str, value: &str) {
        self.cli(&["auth", namespace, "--stdin"], Some(&format!("{value}\n"))).expect_code(0);
    }

    /// A person re-reads `namespace`'s tools, accepting every proposal when `accept`; what the
    /// person was shown.
    fn refresh(&mut self, namespace: &str, accept: bool) -> String {
        let args: &[&str] = if accept {
            &["refresh", namespace, "--yes", "--no-input"]
        } else {
            &["refresh", namespace, "--no-input"]
        };
        let ran = self.cli(args, None);
        if accept {
            assert_eq!(ran.code, 0, "refresh {namespace}: {}\n{}", ran.stdout, ran.stderr);
        }
        ran.stdout
    }

    /// A person replaces the policy's rules (as JSON rules) and keeps what was reviewed.
    fn set_rules(&mut self, rules: Value) {
        let path = self.home().join("policies/policy.json");
        let mut policy: Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        policy["rules"] = rules;
        std::fs::write(&path, serde_json::to_vec_pretty(&policy).unwrap()).unwrap();
    }

    /// The policy as stored.
    fn policy(&mut self) -> Value {
        serde_json::from_slice(&std::fs::read(self.home().join("policies/policy.json")).unwrap()).unwrap()
    }

    /// A person decides the waiting call of `run` (`once`, `run`, `always`, `deny`); whether
    /// the decision was taken.
    fn approve(&mut self, run: &str, choice: &str) -> bool {
        self.cli(&["approve", run, "--choice", choice, "--no-input"], None).code == 0
    }

    /// The runs a person can list, as JSON (each with `runId`).
    fn runs(&mut self) -> Value {
        let ran = self.cli(&["runs", "--json"], None).expect_code(0);
        serde_json::from_str(&ran.stdout)
            .unwrap_or_else(|e| panic!("runs --json is JSON ({e}): {}", ran.stdout))
    }

    /// Everything else a person can read about the hub: each run shown, sources, connections,
    /// diagnostics, and a run of their own.
    fn person_views(&mut self) -> Vec<String> {
        let listed = self.runs();
        let mut views = vec![listed.to_string()];
        for id in run_ids(&listed) {
            let shown = self.cli(&["runs", "show", &id, "--json"], None);
            views.extend([shown.stdout, shown.stderr]);
        }
        for args in [
            &["list", "--json"][..],
            &["connections", "up"],
            &["doctor"],
            &["exec", "return await up.env({name: 'CANARY'})"],
        ] {
            let ran = self.cli(args, None);
            views.extend([ran.stdout, ran.stderr]);
        }
        views
    }

    /// Every file the hub keeps at rest, but the local secrets file (no keychain in tests).
    fn stored_files(&self) -> Vec<(PathBuf, Vec<u8>)> {
        let secrets = self.home().join("secrets.json");
        self.hub().files().into_iter().filter(|(path, _)| *path != secrets).collect()
    }

    /// `tools/call` of one of the hub's tools; the call's result (or the JSON-RPC error).
    fn call(&mut self, tool: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": tool, "arguments": arguments}));
        answer.get("result").cloned().unwrap_or(answer)
    }

    /// `execute` with `code`; the envelope (`structuredContent`), or the whole result when the
    /// hub answered without one.
    fn execute(&mut self, code: &str) -> Value {
        envelope(self.call("execute", json!({"code": code})))
    }

    /// `execute` resuming `run_id`; the envelope.
    fn resume(&mut self, run_id: &str) -> Value {
        envelope(self.call("execute", json!({"resume": run_id})))
    }
}

/// `hub add` of `source` on `hub`'s store, as a person runs it, accepting the proposed policy.
pub fn add_locally(hub: &Home, source: &SourceSpec) {
    let mut stdin = None;
    let mut args: Vec<String> = vec!["add".into(), "--yes".into(), "--no-input".into()];
    args.extend(["--namespace".into(), source.namespace.clone()]);
    match &source.transport {
        Transport::Stdio { command, env } => {
            for slot in &source.slots {
                args.extend(["--env".into(), slot.clone()]);
            }
            for (name, value) in env {
                args.extend(["--env".into(), format!("{name}={value}")]);
            }
            args.push("--".into());
            args.extend(command.iter().cloned());
        }
        Transport::Http { url } => {
            for slot in &source.slots {
                args.extend(["--header".into(), slot.clone()]);
            }
            args.push(url.clone());
        }
        Transport::OpenApi { document, base_url, credential } => {
            args.extend(["--base-url".into(), base_url.clone()]);
            match credential {
                Some(value) => {
                    args.push("--stdin".into());
                    stdin = Some(format!("{value}\n"));
                }
                None => args.extend(["--auth".into(), "none".into()]),
            }
            args.push(document.clone());
        }
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    hub.cli(&args, stdin.as_deref()).expect_code(0);
}

/// The run ids in a listing of runs.
pub fn run_ids(listed: &Value) -> Vec<String> {
    listed
        .as_array()
        .or_else(|| listed["runs"].as_array())
        .into_iter()
        .flatten()
        .filter_map(|r| r["runId"].as_str().or(r["id"].as_str()).map(str::to_owned))
        .collect()
}

fn envelope(result: Value) -> Value {
    match result.get("structuredContent") {
        Some(structured) if !structured.is_null() => structured.clone(),
        _ => result,
    }
}

/// The kinds of target the suite runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Stdio,
    Http,
    Hosted,
}

impl Kind {
    pub const ALL: [Kind; 3] = [Kind::Stdio, Kind::Http, Kind::Hosted];

    /// Starts serving `home` in this kind of target.
    pub fn start(self, home: Home) -> Box<dyn Target> {
        match self {
            Kind::Stdio => Box::new(crate::LocalStdio::start(home)),
            Kind::Http => Box::new(crate::LocalHttp::start(home)),
            Kind::Hosted => Box::new(crate::Hosted::start(home)),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Stdio => "local-stdio",
            Kind::Http => "local-http",
            Kind::Hosted => "hosted",
        }
    }
}

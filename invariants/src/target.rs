//! The `Target` trait: what the suite needs from a build of the hub, and the local kinds.

use std::path::Path;

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

/// One build of the hub, serving MCP over some transport on a private store.
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

    /// Whether tenant isolation (I5) applies to this build.
    fn tenant_isolation(&self) -> Applicability;

    /// The store's directory.
    fn home(&self) -> &Path {
        self.hub().path()
    }

    /// Runs a `capabilities hub …` command as a person would.
    fn cli(&self, args: &[&str], stdin: Option<&str>) -> Ran {
        self.hub().cli(args, stdin)
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

fn envelope(result: Value) -> Value {
    match result.get("structuredContent") {
        Some(structured) if !structured.is_null() => structured.clone(),
        _ => result,
    }
}

/// The local kinds of target the suite runs against.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Stdio,
    Http,
}

impl Kind {
    pub const ALL: [Kind; 2] = [Kind::Stdio, Kind::Http];

    /// Starts serving `home` in this kind of target.
    pub fn start(self, home: Home) -> Box<dyn Target> {
        match self {
            Kind::Stdio => Box::new(crate::LocalStdio::start(home)),
            Kind::Http => Box::new(crate::LocalHttp::start(home)),
        }
    }

    pub fn name(self) -> &'static str {
        match self {
            Kind::Stdio => "local-stdio",
            Kind::Http => "local-http",
        }
    }
}

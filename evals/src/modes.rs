//! Runs a task both ways and records what the model would read: code mode through the real hub
//! (`hub serve --stdio`, sources added with `hub add --yes`; or a hosted tenant in workerd, see
//! [`crate::hosted`]), direct tools against the fixture servers themselves with every tool
//! definition loaded up front.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use capabilities_core::manifest::Manifest;
use capabilities_core::openapi::HttpOperation;
use capabilities_core::tokens;
use serde::Serialize;
use serde_json::{Value, json};

use crate::api::{self, STORE_KEY, StoreApi};
use crate::check;
use crate::fixtures::{NAMESPACES, SOURCES, STORE, rules};
use crate::hosted::HostedHub;
use crate::rpc::{Peer, result_text};
use crate::task::{CodeStep, Task};

/// Which build of the hub code mode runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Hub {
    /// `hub serve --stdio` on a private store, fixture servers over stdio; a person approves
    /// with `hub approve`.
    Local,
    /// The Worker in workerd, one tenant, fixture servers over HTTP; a person approves through
    /// the admin API.
    Hosted,
}

/// Where things are: the repository, the `capabilities` binary and a scratch directory, and
/// which hub code mode runs on.
#[derive(Debug, Clone)]
pub struct Setup {
    pub repo: PathBuf,
    pub bin: PathBuf,
    pub work: PathBuf,
    pub hub: Hub,
}

/// An open MCP client of the hub code mode runs on.
pub(crate) enum Client<'a> {
    Local(Peer),
    Hosted(&'a HostedHub),
}

impl Client<'_> {
    /// One request; its `result`, or an error naming the method.
    pub(crate) fn request(&mut self, method: &str, params: Value) -> Result<Value> {
        match self {
            Client::Local(peer) => peer.request(method, params),
            Client::Hosted(hub) => hub.request(method, params),
        }
    }

    pub(crate) fn stop(self) {
        if let Client::Local(peer) = self {
            peer.stop();
        }
    }
}

/// One message the model reads, with its token count.
#[derive(Debug, Clone, Serialize)]
pub struct Message {
    pub role: &'static str,
    pub text: String,
    pub tokens: usize,
}

impl Message {
    pub(crate) fn new(role: &'static str, text: String) -> Message {
        Message { role, tokens: tokens::count(&text), text }
    }
}

/// A conversation: fixed context (tool definitions and instructions), the prompt, then
/// alternating calls and results.
#[derive(Debug, Clone, Serialize)]
pub struct Transcript {
    pub fixed_tokens: usize,
    pub prompt_tokens: usize,
    pub messages: Vec<Message>,
}

impl Transcript {
    /// Input tokens of each model turn: turn k reads the fixed context, the prompt and every
    /// message before its own call; the last turn reads everything and answers.
    pub fn turn_inputs(&self) -> Vec<usize> {
        let mut inputs = Vec::new();
        let mut context = self.fixed_tokens + self.prompt_tokens;
        for message in &self.messages {
            if message.role == "assistant" {
                inputs.push(context);
            }
            context += message.tokens;
        }
        inputs.push(context);
        inputs
    }
}

/// How one mode did on one task.
#[derive(Debug, Clone, Serialize)]
pub struct Outcome {
    pub success: bool,
    pub failures: Vec<String>,
    pub turns: usize,
    pub input_tokens: usize,
    pub per_turn: Vec<usize>,
    /// On a task with expected errors: what the mistake and its repair cost.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recovery: Option<Recovery>,
    /// Calls the task expects to fail `invalid_arguments`, each checked for a person asked, a
    /// pending call or a journal entry (code mode only).
    pub invalid_calls: usize,
    /// Of those, the ones a person was asked about or that reached the journal: must be none.
    pub invalid_calls_asked: usize,
    #[serde(skip)]
    pub transcript: Transcript,
}

/// The cost of a mistake: from the turn whose call failed as expected to the turn whose call
/// (other than a search or describe) first succeeded after the last such failure, inclusive.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Recovery {
    /// Turns whose call failed as the task expected.
    pub failed_turns: usize,
    pub turns: usize,
    /// Input tokens of those turns.
    pub input_tokens: usize,
}

/// How each model turn went, for [`Recovery`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Turn {
    /// A call that failed as the task expected.
    Failed,
    /// A search or describe.
    Lookup,
    /// A call that did work and did not fail.
    Worked,
    /// A call that failed unexpectedly.
    Broke,
}

impl Recovery {
    fn of(turns: &[Turn], per_turn: &[usize]) -> Option<Recovery> {
        let first = turns.iter().position(|t| *t == Turn::Failed)?;
        let last = turns.iter().rposition(|t| *t == Turn::Failed)?;
        let repaired = last + 1 + turns[last + 1..].iter().position(|t| *t == Turn::Worked)?;
        Some(Recovery {
            failed_turns: turns.iter().filter(|t| **t == Turn::Failed).count(),
            turns: repaired - first + 1,
            input_tokens: per_turn[first..=repaired].iter().sum(),
        })
    }
}

impl Outcome {
    pub(crate) fn new(
        transcript: Transcript,
        failures: Vec<String>,
        states: &BTreeMap<String, Value>,
        task: &Task,
    ) -> Outcome {
        Outcome::with_turns(transcript, &[], failures, states, task)
    }

    /// As [`Outcome::new`], with how each turn went (for a task with expected errors).
    pub(crate) fn with_turns(
        transcript: Transcript,
        turns: &[Turn],
        mut failures: Vec<String>,
        states: &BTreeMap<String, Value>,
        task: &Task,
    ) -> Outcome {
        for c in &task.check {
            match states.get(&c.source) {
                Some(state) => failures.extend(check::failure(c, state)),
                None => failures.push(format!("no final state for {}", c.source)),
            }
        }
        let per_turn = transcript.turn_inputs();
        let recovery = Recovery::of(turns, &per_turn);
        if turns.contains(&Turn::Failed) && recovery.is_none() {
            failures.push("no later call succeeded after the expected error: nothing recovered".into());
        }
        Outcome {
            success: failures.is_empty(),
            failures,
            turns: per_turn.len(),
            input_tokens: per_turn.iter().sum(),
            per_turn,
            recovery,
            invalid_calls: 0,
            invalid_calls_asked: 0,
            transcript,
        }
    }
}

/// The prepared fixtures and hub, shared by every task.
pub struct Suite {
    setup: Setup,
    seeds: PathBuf,
    pub(crate) code_state: PathBuf,
    pub(crate) direct_state: PathBuf,
    home: PathBuf,
    /// The hosted tenant, when code mode runs there.
    hosted: Option<HostedHub>,
    /// The HTTP API fixture, when this hub serves it: its direct tools' operations and the
    /// store behind Prism for each mode.
    store: Option<Store>,
    /// Instructions and tools of `hub serve`, as the model reads them.
    pub surface_text: String,
    pub surface_tokens: usize,
    /// Every fixture tool definition, as a client loading them all would present them.
    pub direct_text: String,
    pub direct_tokens: usize,
    pub direct_tool_count: usize,
    /// The same, as data for a model API: the hub's instructions and tools, and every fixture
    /// tool.
    pub instructions: String,
    pub surface_tools: Vec<Value>,
    pub direct_tools: Vec<Value>,
}

/// The store API for each mode, and what direct tools need to call it.
struct Store {
    /// Code mode's store, which the hub calls; held so it lives as long as the suite.
    _code: StoreApi,
    direct: StoreApi,
    operations: BTreeMap<String, HttpOperation>,
    client: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

/// The `namespace.tool` addresses a piece of code calls, for the fixture namespaces.
pub fn addresses(code: &str) -> Vec<String> {
    let mut found = Vec::new();
    for source in NAMESPACES {
        let needle = format!("{source}.");
        let mut rest = code;
        while let Some(at) = rest.find(&needle) {
            let before = rest[..at].chars().next_back();
            let after = &rest[at + needle.len()..];
            let name: String = after.chars().take_while(|c| c.is_ascii_alphanumeric() || *c == '_').collect();
            let called = after[name.len()..].starts_with('(');
            if !before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
                && called
                && !name.is_empty()
            {
                let address = format!("{source}.{name}");
                if !found.contains(&address) {
                    found.push(address);
                }
            }
            rest = &rest[at + needle.len()..];
        }
    }
    found
}

/// A tool definition as a model API receives it: name, description and input schema.
fn model_tool(name: &str, tool: &Value) -> Value {
    json!({"name": name, "description": tool["description"], "input_schema": tool["inputSchema"]})
}

impl Suite {
    pub fn prepare(setup: Setup) -> Result<Suite> {
        let seeds = setup.work.join("seeds");
        let code_state = setup.work.join("code-state");
        let direct_state = setup.work.join("direct-state");
        let home = setup.work.join("hub");
        for dir in [&seeds, &code_state, &direct_state] {
            std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        }
        let out = Command::new("node")
            .arg(setup.repo.join("evals/fixtures/seed.mjs"))
            .arg(&seeds)
            .output()
            .context("running node: install Node.js 20 or later")?;
        if !out.status.success() {
            bail!("seeding the fixtures failed: {}", String::from_utf8_lossy(&out.stderr));
        }
        let all: Value = serde_json::from_slice(&out.stdout).context("seed.mjs prints the tool lists")?;
        let mut direct = Vec::new();
        for source in SOURCES {
            for tool in all[source].as_array().into_iter().flatten() {
                let name = format!("{source}__{}", tool["name"].as_str().unwrap_or_default());
                direct.push(model_tool(&name, tool));
            }
        }
        let direct_text = Value::Array(direct.clone()).to_string();
        let mut suite = Suite {
            seeds,
            code_state,
            direct_state,
            home,
            hosted: None,
            store: None,
            surface_text: String::new(),
            surface_tokens: 0,
            direct_tokens: tokens::count(&direct_text),
            direct_text,
            direct_tool_count: direct.len(),
            instructions: String::new(),
            surface_tools: Vec::new(),
            direct_tools: direct,
            setup,
        };
        suite.reset(&suite.code_state)?;
        match suite.setup.hub {
            Hub::Local => {
                for source in SOURCES {
                    let state = suite.code_state.join(format!("{source}.json"));
                    let server = suite.setup.repo.join(format!("evals/fixtures/servers/{source}.mjs"));
                    let env = format!("FIXTURE_STATE={}", state.display());
                    let server = server.to_str().context("the repository path is UTF-8")?;
                    suite.hub(&[
                        "add",
                        "--yes",
                        "--namespace",
                        source,
                        "--env",
                        &env,
                        "--",
                        "node",
                        server,
                    ])?;
                }
                suite.add_store()?;
                suite.write_policy()?;
            }
            Hub::Hosted => {
                let hosted = HostedHub::start(&suite.setup.repo, &suite.code_state, rules(), None)?;
                // The store is added to a local hub first (its manifest gives the direct tools),
                // then to the tenant the way a push carries an HTTP API, its key sealed.
                suite.add_store()?;
                let base_url = suite.store.as_ref().map(|s| s._code.base_url.clone()).unwrap_or_default();
                let document = suite.setup.repo.join("evals/fixtures/store.openapi.json");
                hosted.add_api(STORE, &document, &base_url, STORE_KEY);
                suite.hosted = Some(hosted);
            }
        }
        let (mut client, init) = suite.client()?;
        let listed = client.request("tools/list", json!({}))?;
        client.stop();
        let tools: Vec<Value> = listed["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| model_tool(t["name"].as_str().unwrap_or_default(), t))
            .collect();
        let instructions = init["instructions"].as_str().unwrap_or_default();
        suite.surface_text = format!("{instructions}\n{}", Value::Array(tools.clone()));
        suite.instructions = instructions.to_owned();
        suite.surface_tools = tools;
        suite.surface_tokens = tokens::count(&suite.surface_text);
        Ok(suite)
    }

    /// The store API as an OpenAPI source, added as a person adds a document (the key on
    /// stdin), with Prism in front for each mode; direct tools get one tool per operation from
    /// the manifest the hub wrote.
    fn add_store(&mut self) -> Result<()> {
        let code = StoreApi::start(&self.setup.repo, &self.code_state.join(format!("{STORE}.json")))?;
        let direct = StoreApi::start(&self.setup.repo, &self.direct_state.join(format!("{STORE}.json")))?;
        let document = self.setup.repo.join("evals/fixtures/store.openapi.json");
        let document = document.to_str().context("the repository path is UTF-8")?;
        let args = ["add", document, "--namespace", STORE, "--base-url", &code.base_url, "--stdin", "--yes"];
        self.hub_with_stdin(&args, &format!("{STORE_KEY}\n"))?;
        let path = self.home.join(format!("manifests/{STORE}.json"));
        let manifest: Manifest =
            serde_json::from_slice(&std::fs::read(&path).context("hub add wrote the manifest")?)
                .with_context(|| format!("reading {}", path.display()))?;
        let mut operations = BTreeMap::new();
        for (name, definition, op) in api::direct_tools(&manifest) {
            self.direct_tools.push(definition);
            operations.insert(name, op);
        }
        if operations.is_empty() {
            bail!("the hub's manifest of `{STORE}` has no HTTP operations");
        }
        self.direct_text = Value::Array(self.direct_tools.clone()).to_string();
        self.direct_tokens = tokens::count(&self.direct_text);
        self.direct_tool_count = self.direct_tools.len();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build()?;
        let client = reqwest::Client::builder().timeout(std::time::Duration::from_secs(60)).build()?;
        self.store = Some(Store { _code: code, direct, operations, client, runtime });
        Ok(())
    }

    /// The namespaces this hub serves: the MCP fixtures and the store API.
    pub fn namespaces(&self) -> Vec<&'static str> {
        let mut all = SOURCES.to_vec();
        if self.store.is_some() {
            all.push(STORE);
        }
        all
    }

    /// True when every source the task's checks read, and its direct solution calls (but for a
    /// call meant to fail), is served here.
    pub fn serves(&self, task: &Task) -> bool {
        let served = self.namespaces();
        let called = task
            .direct
            .iter()
            .filter(|c| c.expect_error.is_empty())
            .filter_map(|c| c.call.split_once("__").map(|(ns, _)| ns));
        task.check.iter().map(|c| c.source.as_str()).chain(called).all(|ns| served.contains(&ns))
    }

    fn hub_with_stdin(&self, args: &[&str], input: &str) -> Result<String> {
        use std::io::Write;
        let mut child = self
            .command()
            .arg("hub")
            .args(args)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .context("running capabilities")?;
        child.stdin.take().context("piped stdin")?.write_all(input.as_bytes())?;
        let out = child.wait_with_output()?;
        if !out.status.success() {
            bail!(
                "`capabilities hub {}` failed: {}{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn write_policy(&self) -> Result<()> {
        let path = self.home.join("policies/policy.json");
        let mut policy: Value =
            serde_json::from_slice(&std::fs::read(&path).context("hub add wrote the policy")?)?;
        policy["rules"] = rules();
        std::fs::write(&path, serde_json::to_vec_pretty(&policy)?)?;
        Ok(())
    }

    fn command(&self) -> Command {
        let mut cmd = Command::new(&self.setup.bin);
        cmd.env("CAPABILITIES_HOME", &self.home)
            .env("CAPABILITIES_KEYCHAIN", "file")
            .env("NO_COLOR", "1")
            // The approval page must not open anywhere: in the evals a person answers on the CLI.
            .env("BROWSER", "true");
        cmd
    }

    pub(crate) fn hub(&self, args: &[&str]) -> Result<String> {
        let out = self.command().arg("hub").args(args).output().context("running capabilities")?;
        if !out.status.success() {
            bail!(
                "`capabilities hub {}` failed: {}{}",
                args.join(" "),
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    /// A client of the hub code mode runs on, and its `initialize` result: a fresh
    /// `hub serve --stdio`, or the hosted tenant's endpoint.
    pub(crate) fn client(&self) -> Result<(Client<'_>, Value)> {
        if let Some(hosted) = &self.hosted {
            return Ok((Client::Hosted(hosted), hosted.initialize()?));
        }
        let mut cmd = self.command();
        cmd.args(["hub", "serve", "--stdio"]);
        let (peer, init) = Peer::start("capabilities hub serve", cmd)?;
        Ok((Client::Local(peer), init))
    }

    /// A person's decision on a waiting run: `hub approve` on the local store, the admin API on
    /// the hosted tenant.
    pub(crate) fn approve(&self, run: &str, choice: &str) -> Result<()> {
        match &self.hosted {
            Some(hosted) => hosted.approve(run, choice),
            None => self.hub(&["approve", run, "--choice", choice]).map(drop),
        }
    }

    pub fn hub_kind(&self) -> Hub {
        self.setup.hub
    }

    pub(crate) fn reset(&self, state: &Path) -> Result<()> {
        for source in self.namespaces() {
            let name = format!("{source}.json");
            std::fs::copy(self.seeds.join(&name), state.join(&name))
                .with_context(|| format!("resetting {source}'s state"))?;
        }
        Ok(())
    }

    pub(crate) fn states(&self, dir: &Path) -> Result<BTreeMap<String, Value>> {
        let mut states = BTreeMap::new();
        for source in self.namespaces() {
            let path = dir.join(format!("{source}.json"));
            let text = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
            states.insert(source.to_owned(), serde_json::from_slice(&text)?);
        }
        Ok(states)
    }

    /// True when every check already holds on the seeded state: such a task proves nothing.
    pub fn vacuous(&self, task: &Task) -> Result<bool> {
        let seeds = self.states(&self.seeds)?;
        Ok(task.check.iter().all(|c| seeds.get(&c.source).is_some_and(|s| check::failure(c, s).is_none())))
    }

    /// The task in code mode, through the hub.
    pub fn run_code(&self, task: &Task) -> Result<Outcome> {
        self.reset(&self.code_state)?;
        let (mut serve, _) = self.client()?;
        let mut messages = Vec::new();
        let mut failures = Vec::new();
        let mut turns = Vec::new();
        let (mut invalid_calls, mut invalid_calls_asked) = (0, 0);
        let mut last_run: Option<String> = None;
        // What search and describe (and the errors read) have shown: a scripted model calls
        // only tools it has seen.
        let mut seen = String::new();
        for step in &task.code {
            match step {
                CodeStep::Call { call, arguments, expect_error } => {
                    let text = arguments.to_string();
                    let arguments: Value = match &last_run {
                        Some(run) => {
                            serde_json::from_str(&text.replace("\"$run\"", &json!(run).to_string()))?
                        }
                        None => arguments.clone(),
                    };
                    messages.push(Message::new(
                        "assistant",
                        json!({"name": call, "input": arguments}).to_string(),
                    ));
                    let result =
                        serve.request("tools/call", json!({"name": call, "arguments": arguments}))?;
                    let structured = &result["structuredContent"];
                    if let Some(run) = structured["runId"].as_str() {
                        last_run = Some(run.to_owned());
                    }
                    let text = result_text(&result);
                    let failed = result["isError"] == json!(true) || structured["status"] == json!("failed");
                    let lookup = call == "search" || call == "describe";
                    if lookup {
                        seen.push_str(&text);
                    }
                    if !expect_error.is_empty() {
                        failures.extend(expected_error(call, failed, &text, expect_error));
                        // A call meant to fail its contract must never reach a person or the
                        // journal: checked on what the task means, not on what the hub answered,
                        // so a hub that asks instead of refusing is caught here too.
                        if expect_error.iter().any(|e| e == "invalid_arguments") {
                            invalid_calls += 1;
                            let asked = self.asked_about(structured)?;
                            if !asked.is_empty() {
                                invalid_calls_asked += 1;
                                failures
                                    .push(format!("a call meant to fail validation {}", asked.join(", ")));
                            }
                        }
                        turns.push(Turn::Failed);
                        seen.push_str(&text);
                    } else {
                        if let Some(code) = arguments["code"].as_str() {
                            for address in addresses(code) {
                                if !seen.contains(&format!("{address}(")) {
                                    failures.push(format!(
                                        "the code calls {address} before search or describe showed it"
                                    ));
                                }
                            }
                        }
                        if failed {
                            failures.push(format!("{call} failed: {text}"));
                        }
                        turns.push(match (failed, lookup) {
                            (true, _) => Turn::Broke,
                            (false, true) => Turn::Lookup,
                            (false, false) => Turn::Worked,
                        });
                    }
                    messages.push(Message::new("tool", text));
                }
                CodeStep::Approve { approve } => {
                    let run = last_run.as_deref().context("an approval step needs an earlier run")?;
                    self.approve(run, approve)?;
                }
            }
        }
        serve.stop();
        let transcript = Transcript {
            fixed_tokens: self.surface_tokens,
            prompt_tokens: tokens::count(&task.prompt),
            messages,
        };
        let mut outcome =
            Outcome::with_turns(transcript, &turns, failures, &self.states(&self.code_state)?, task);
        outcome.invalid_calls = invalid_calls;
        outcome.invalid_calls_asked = invalid_calls_asked;
        Ok(outcome)
    }

    /// What the hub did about a run that just failed on a call's arguments that it should not
    /// have: the run waiting, a call pending or journaled, any run of the hub waiting for a
    /// person, or (local) a line in the run's journal. Empty when it did none of these.
    fn asked_about(&self, envelope: &Value) -> Result<Vec<String>> {
        let mut asked = Vec::new();
        if envelope["status"] != json!("failed") {
            asked.push(format!("left its run {}", envelope["status"]));
        }
        if envelope["pending"].as_array().is_some_and(|p| !p.is_empty()) {
            asked.push("has a pending call".to_owned());
        }
        if envelope["calls"].as_array().is_some_and(|c| !c.is_empty()) {
            asked.push(format!("journaled calls {}", envelope["calls"]));
        }
        let waiting = self.waiting_runs()?;
        if !waiting.is_empty() {
            asked.push(format!("left runs waiting for a person: {}", waiting.join(", ")));
        }
        if let (None, Some(run)) = (&self.hosted, envelope["runId"].as_str()) {
            let journal = self.home.join("runs").join(format!("{run}.journal.jsonl"));
            let text = std::fs::read_to_string(&journal).unwrap_or_default();
            // A served run's first line may hold its own first record; only calls count here.
            let calls: Vec<&str> = text
                .lines()
                .filter(|l| !l.trim().is_empty() && !l.starts_with(r#"{"kind":"start","#))
                .collect();
            if !calls.is_empty() {
                asked.push(format!("wrote its journal: {}", calls.join("\n")));
            }
        }
        Ok(asked)
    }

    /// The runs waiting for a person: `hub runs --status awaiting_input` on the local store, the
    /// admin API's pending list on the hosted tenant.
    fn waiting_runs(&self) -> Result<Vec<String>> {
        let listed: Value = match &self.hosted {
            Some(hosted) => hosted.pending()?,
            None => serde_json::from_str(&self.hub(&["runs", "--status", "awaiting_input", "--json"])?)
                .context("hub runs --json prints a list")?,
        };
        // `hub runs --json` prints `{ runs, unreadable }`; the admin API a list. Anything else
        // fails loudly rather than pass the gate on nothing.
        let Some(runs) = listed.get("runs").unwrap_or(&listed).as_array() else {
            bail!("the hub's list of waiting runs is not a list: {listed}");
        };
        Ok(runs.iter().map(|r| r["id"].as_str().or(r["runId"].as_str()).unwrap_or("?").to_owned()).collect())
    }

    /// A fixture server started directly, on the direct-tools state.
    pub(crate) fn fixture(&self, source: &str) -> Result<Peer> {
        if !SOURCES.contains(&source) {
            bail!("there is no fixture source `{source}`");
        }
        let mut cmd = Command::new("node");
        cmd.arg(self.setup.repo.join(format!("evals/fixtures/servers/{source}.mjs")))
            .env("FIXTURE_STATE", self.direct_state.join(format!("{source}.json")));
        Ok(Peer::start(source, cmd)?.0)
    }

    /// The task with direct tools: each call straight to its fixture server. A name the model
    /// was not given is refused as a direct client refuses it, without reaching any server.
    pub fn run_direct(&self, task: &Task) -> Result<Outcome> {
        self.reset(&self.direct_state)?;
        let mut peers: BTreeMap<String, Peer> = BTreeMap::new();
        let mut messages = Vec::new();
        let mut failures = Vec::new();
        let mut turns = Vec::new();
        for call in &task.direct {
            messages.push(Message::new(
                "assistant",
                json!({"name": call.call, "input": call.arguments}).to_string(),
            ));
            let given = self.direct_tools.iter().any(|t| t["name"] == json!(call.call));
            let store_op = self.store.as_ref().and_then(|s| Some((s, s.operations.get(&call.call)?)));
            let (failed, text) = match call.call.split_once("__") {
                Some(_) if given && store_op.is_some() => {
                    let (store, op) = store_op.context("matched above")?;
                    let api = store.direct.http_api();
                    api::call(&store.client, &store.runtime, &api, op, &call.arguments)?
                }
                Some((source, tool)) if given => {
                    if !peers.contains_key(source) {
                        peers.insert(source.to_owned(), self.fixture(source)?);
                    }
                    let peer = peers.get_mut(source).context("started above")?;
                    let result =
                        peer.request("tools/call", json!({"name": tool, "arguments": call.arguments}))?;
                    (result["isError"] == json!(true), result_text(&result))
                }
                _ if call.expect_error.is_empty() => {
                    bail!("task `{}`: direct call `{}` is not one of the tools", task.id, call.call)
                }
                _ => (true, format!("No such tool available: {}", call.call)),
            };
            if call.expect_error.is_empty() {
                if failed {
                    failures.push(format!("{} failed: {text}", call.call));
                }
                turns.push(if failed { Turn::Broke } else { Turn::Worked });
            } else {
                failures.extend(expected_error(&call.call, failed, &text, &call.expect_error));
                turns.push(Turn::Failed);
            }
            messages.push(Message::new("tool", text));
        }
        for (_, peer) in peers {
            peer.stop();
        }
        let transcript = Transcript {
            fixed_tokens: self.direct_tokens,
            prompt_tokens: tokens::count(&task.prompt),
            messages,
        };
        Ok(Outcome::with_turns(transcript, &turns, failures, &self.states(&self.direct_state)?, task))
    }
}

/// What is wrong with a call the task expects to fail: it succeeded, or its error text lacks
/// something the repair needs.
fn expected_error(call: &str, failed: bool, text: &str, expect: &[String]) -> Vec<String> {
    if !failed {
        return vec![format!("{call} was expected to fail but did not: {text}")];
    }
    expect
        .iter()
        .filter(|want| !text.contains(want.as_str()))
        .map(|want| {
            format!("the error of {call} does not say {want:?}, so the repair cannot be read from it: {text}")
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn addresses_are_the_fixture_calls_in_code() {
        let code = "const r = await tracker.listIssues({}); await chat.postMessage({}); x.tracker.nope(); tracker.listIssues; mytracker.foo()";
        assert_eq!(addresses(code), ["tracker.listIssues", "chat.postMessage"]);
    }
}

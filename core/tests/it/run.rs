//! Run engine tests: `execute`, `resume` and `cancel` through the real QuickJS sandbox against
//! the in-memory fakes — approvals, replay from the journal, limits, secrets and the envelope.
//!
//! [`Hub`] holds one of everything the engine borrows. Its catalog has two namespaces:
//!
//! - `notes`: `list` (read-only, echoes its arguments), `add` (writes), `broken` (read-only,
//!   unknown to the fake upstream, so every call fails);
//! - `chat`: `post` (writes, echoes), `whoami` (read-only, answers with the credential it was
//!   given, raw and base64, to prove scrubbing). Connections `work` (the default) and
//!   `personal` have secrets; `spare` has none yet.
//!
//! Every tool is reviewed at its current contract unless a test says otherwise, so policy asks
//! only for writes.
// Tests play the host, which supplies the sandbox's compute clock.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod approvals;
mod handles;
mod limits;
mod replay;
mod secrets;

use std::future::Future;
use std::pin::pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use capabilities_core::address::Namespace;
use capabilities_core::approval::{Channel, Choice, record_decision};
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::fakes::{
    CountingEntropy, FakeUpstream, ManualClock, MemoryBlobs, MemoryStore, TableSecrets, block_on,
};
use capabilities_core::limits::Limits;
use capabilities_core::manifest::{ContractDigest, Manifest};
use capabilities_core::policy::{CompiledPolicy, PolicyState, Rule};
use capabilities_core::ports::RunStore;
use capabilities_core::record::{JournalEntry, RunRecord, RunReport};
use capabilities_core::run::Engine;
use capabilities_core::sandbox::quickjs::{ComputeMeter, QuickJs};
use capabilities_core::surface::Surface;
use capabilities_core::surface::envelope::Envelope;
use serde_json::{Value, json};

/// The `work` connection's secret. Never seen outside the fake upstream.
pub(crate) const WORK_SECRET: &str = "sk-work-7f3a9c21d04e8b65";
pub(crate) const PERSONAL_SECRET: &str = "sk-personal-51be0c9a";

fn notes_tools() -> Value {
    json!([
        {
            "name": "list",
            "description": "Lists the notes that match a query. Read only.",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
            "annotations": {"readOnlyHint": true}
        },
        {
            "name": "add",
            "description": "Adds a note. Creates a new record.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
            "annotations": {"readOnlyHint": false}
        },
        {
            "name": "broken",
            "description": "Lists nothing: the fake upstream does not know it.",
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"readOnlyHint": true}
        }
    ])
}

fn chat_tools() -> Value {
    json!([
        {
            "name": "post",
            "description": "Posts a message to the team channel. Everyone sees it.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "annotations": {"readOnlyHint": false, "destructiveHint": false}
        },
        {
            "name": "whoami",
            "description": "Says which account the connection uses.",
            "inputSchema": {"type": "object", "properties": {}},
            "annotations": {"readOnlyHint": true}
        }
    ])
}

/// How a test wants its hub.
pub(crate) struct Setup {
    pub(crate) rules: Vec<Rule>,
    /// Addresses nobody reviewed.
    pub(crate) unreviewed: Vec<&'static str>,
    /// Addresses reviewed at another contract than the current one.
    pub(crate) stale: Vec<&'static str>,
    pub(crate) limits: Limits,
    pub(crate) delay_polls: usize,
}

impl Default for Setup {
    fn default() -> Setup {
        Setup {
            rules: Vec::new(),
            unreviewed: Vec::new(),
            stale: Vec::new(),
            limits: Limits::DEFAULT,
            delay_polls: 0,
        }
    }
}

/// One of everything the engine borrows.
pub(crate) struct Hub {
    pub(crate) surface: Surface,
    pub(crate) sandbox: QuickJs,
    pub(crate) upstream: FakeUpstream,
    pub(crate) secrets: TableSecrets,
    pub(crate) store: MemoryStore,
    pub(crate) blobs: MemoryBlobs,
    pub(crate) clock: ManualClock,
    pub(crate) entropy: CountingEntropy,
    pub(crate) limits: Limits,
}

fn manifest(namespace: &str, tools: Value) -> Manifest {
    let entries = tools.as_array().expect("a list").clone();
    let (manifest, problems) = Manifest::from_tools_list(Namespace::new(namespace).unwrap(), &entries);
    assert!(problems.is_empty(), "{problems:?}");
    manifest
}

/// A fake `chat.whoami`: the connection and its credential, raw, base64 and inside a header.
/// With `{ fail: true }` it fails with the token in its error text.
fn whoami(args: &Value, credentials: &capabilities_core::ports::Credentials) -> Value {
    let token = credentials.values.first().map(|(_, v)| v.clone()).unwrap_or_default();
    if args["fail"] == json!(true) {
        return json!({ "isError": true, "content": [{ "type": "text", "text": format!("token {token} expired") }] });
    }
    json!({
        "content": [],
        "structuredContent": {
            "connection": credentials.connection,
            "token": token,
            "base64": STANDARD.encode(&token),
            "basic": STANDARD.encode(format!("Bearer {token}")),
            "byToken": { token.clone(): "me" },
        }
    })
}

impl Hub {
    pub(crate) fn new() -> Hub {
        Hub::with(Setup::default())
    }

    pub(crate) fn with(setup: Setup) -> Hub {
        let catalog = Catalog::new(vec![
            SourceView {
                manifest: manifest("notes", notes_tools()),
                connections: vec![],
                default_connection: None,
            },
            SourceView {
                manifest: manifest("chat", chat_tools()),
                connections: vec!["work".into(), "personal".into(), "spare".into()],
                default_connection: Some("work".into()),
            },
        ]);
        let mut state = PolicyState { rules: setup.rules, ..PolicyState::default() };
        for (address, tool) in catalog.tools() {
            let address = address.to_string();
            if setup.unreviewed.contains(&address.as_str()) {
                continue;
            }
            let digest = if setup.stale.contains(&address.as_str()) {
                ContractDigest([0xaa; 32])
            } else {
                tool.digest
            };
            state.reviewed.insert(address, digest);
        }
        let policy = CompiledPolicy::new(state).expect("valid policy");
        let mut upstream = FakeUpstream::default()
            .with("notes", "list", FakeUpstream::echo())
            .with("notes", "add", FakeUpstream::echo())
            .with("chat", "post", FakeUpstream::echo())
            .with("chat", "whoami", Box::new(|args, credentials| Ok(whoami(args, credentials))));
        upstream.delay_polls = setup.delay_polls;
        let mut secrets = TableSecrets::default();
        secrets.table.insert(("chat".into(), "work".into()), vec![("TOKEN".into(), WORK_SECRET.into())]);
        secrets
            .table
            .insert(("chat".into(), "personal".into()), vec![("TOKEN".into(), PERSONAL_SECRET.into())]);
        let started = Instant::now();
        Hub {
            surface: Surface::new(catalog, policy, setup.limits, crate::words::local()),
            sandbox: QuickJs::new(ComputeMeter::clock(move || started.elapsed().as_micros() as u64)),
            upstream,
            secrets,
            store: MemoryStore::default(),
            blobs: MemoryBlobs::default(),
            clock: ManualClock::at(1_700_000_000_000),
            entropy: CountingEntropy::default(),
            limits: setup.limits,
        }
    }

    pub(crate) fn engine(&self) -> Engine<'_> {
        Engine {
            catalog: &self.surface.catalog,
            policy: &self.surface.policy,
            lookup: &self.surface,
            sandbox: &self.sandbox,
            upstream: &self.upstream,
            secrets: &self.secrets,
            store: &self.store,
            blobs: &self.blobs,
            clock: &self.clock,
            entropy: &self.entropy,
            limits: self.limits,
            words: &self.surface.words,
            profile: capabilities_core::record::DEFAULT_PROFILE,
        }
    }

    pub(crate) fn execute(&self, code: &str) -> Envelope {
        self.envelope(woken_block_on(self.engine().execute(code)))
    }

    pub(crate) fn resume(&self, run_id: &str) -> Envelope {
        self.envelope(woken_block_on(self.engine().resume(run_id)))
    }

    pub(crate) fn cancel(&self, run_id: &str) -> Envelope {
        self.envelope(block_on(self.engine().cancel(run_id)))
    }

    /// The envelope of a report, as a host renders it.
    fn envelope(&self, report: RunReport) -> Envelope {
        Envelope::render(report, &self.limits, &self.surface.words)
    }

    pub(crate) fn run(&self, run_id: &str) -> RunRecord {
        self.store.run(run_id).expect("the run is stored")
    }

    /// Records a person's decision on the stored run, as the host does: load, record, save.
    pub(crate) fn decide(&self, envelope: &Envelope, choice: Choice) {
        let [pending] = &envelope.pending[..] else {
            panic!("expected one pending call: {}", pretty(envelope))
        };
        self.decide_id(&envelope.run_id, &pending.id, choice);
    }

    pub(crate) fn decide_id(&self, run_id: &str, pending_id: &str, choice: Choice) {
        let mut run = self.run(run_id);
        record_decision(&mut run, pending_id, choice, Channel::Cli, self.clock.0.load(Ordering::SeqCst))
            .expect("the decision is recorded");
        self.store.put_run(run);
    }

    /// Upstream calls so far, one line each: `namespace.tool {args}`.
    pub(crate) fn calls(&self) -> Vec<String> {
        self.upstream.calls.lock().unwrap().iter().map(|(tool, args)| format!("{tool} {args}")).collect()
    }

    pub(crate) fn journal(&self, run_id: &str) -> Vec<JournalEntry> {
        self.store.journal(run_id)
    }

    /// The journal, one JSON line per entry.
    pub(crate) fn journal_text(&self, run_id: &str) -> String {
        self.journal(run_id).iter().map(|e| serde_json::to_string(e).unwrap() + "\n").collect()
    }

    pub(crate) fn append_journal(&self, run_id: &str, entry: JournalEntry) {
        block_on(self.store.append_journal(run_id, &entry)).expect("appended");
    }
}

/// Polls `future` again only after something woke it, and fails when it is pending with no wake
/// arranged: a stricter executor than [`block_on`] (which polls in a loop), so a lost wake-up
/// in the engine or the sandbox shows up as a failed test instead of a hang under tokio.
pub(crate) fn woken_block_on<F: Future>(future: F) -> F::Output {
    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
        fn wake_by_ref(self: &Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    let waker = Waker::from(Arc::clone(&flag));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        flag.0.store(false, Ordering::SeqCst);
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        assert!(flag.0.load(Ordering::SeqCst), "the future is pending and nothing will wake it");
    }
}

/// The envelope as pretty JSON, the form snapshots hold.
pub(crate) fn pretty(envelope: &Envelope) -> String {
    serde_json::to_string_pretty(&envelope.to_value()).unwrap()
}

/// `error.code` of an envelope, or `-`.
pub(crate) fn error_code(envelope: &Envelope) -> &str {
    envelope.error.as_ref().map_or("-", |e| e.code.as_str())
}

/// Runs `code` to its end with no person involved and returns `status result-or-error`.
pub(crate) fn outcome(hub: &Hub, code: &str) -> String {
    render(&hub.execute(code))
}

/// `completed <result JSON>` or `failed <code>: <message>`.
pub(crate) fn render(envelope: &Envelope) -> String {
    match (&envelope.result, &envelope.error) {
        (_, Some(error)) => format!("{} {}: {}", envelope.status, error.code, error.message),
        (Some(result), None) => format!("{} {result}", envelope.status),
        (None, None) => envelope.status.to_string(),
    }
}

#[test]
fn a_plain_return_completes_without_calls() {
    let hub = Hub::new();
    let envelope = hub.execute("return 1 + 1");
    expect_test::expect![[r#"
        {
          "runId": "run_157d487cbd7c3199",
          "status": "completed",
          "result": 2,
          "calls": []
        }"#]]
    .assert_eq(&pretty(&envelope));
    assert_eq!(hub.run(&envelope.run_id).attempts, 1);
}

#[test]
fn resuming_an_unknown_run_says_so() {
    let hub = Hub::new();
    expect_test::expect!["failed unknown_run: there is no run `run_nope`"]
        .assert_eq(&render(&hub.resume("run_nope")));
}

#[test]
fn hub_search_and_describe_work_inside_code() {
    let hub = Hub::new();
    let envelope = hub.execute(
        r#"const found = await hub.search("post a message");
           const described = await hub.describe(["chat.post"]);
           return [typeof found, typeof described, String(found).includes("chat.post")]"#,
    );
    expect_test::expect![[r#"completed ["string","string",true]"#]].assert_eq(&render(&envelope));
}

#[test]
fn an_uncaught_error_names_the_line_the_model_wrote() {
    let hub = Hub::new();
    let fenced =
        "```ts\nconst n: number = 1;\n\nfunction f(): void { throw new RangeError(\"bad\") }\nf()\n```";
    expect_test::expect!["failed uncaught_error: RangeError: bad (line 4)"].assert_eq(&outcome(&hub, fenced));
    expect_test::expect!["failed uncaught_error: TypeError: cannot read property 'x' of null (line 3)"]
        .assert_eq(&outcome(&hub, "const a = 1;\nconst o = null;\nreturn o.x"));
    // A forged stack at worst names a wrong line; nothing else changes.
    expect_test::expect!["failed uncaught_error: Error: forged"].assert_eq(&outcome(
        &hub,
        "const e = new Error('forged'); Object.defineProperty(e, 'stack', { value: 'code.js:99999' }); throw e",
    ));
}

#[test]
fn an_unknown_tool_is_a_catchable_error() {
    let hub = Hub::new();
    expect_test::expect![[r#"completed ["TypeError","notes has no tool \"lst\"; closest: notes.list. hub.search(query) finds tools by what they do"]"#]]
        .assert_eq(&outcome(&hub, "try { await notes.lst() } catch (e) { return [e.name, e.message] }"));
}

#[test]
fn a_source_that_does_not_exist_is_named_with_the_ones_that_do() {
    let hub = Hub::new();
    expect_test::expect!["failed unknown_source: ReferenceError: github is not defined (line 1); the hub has no source `github`, its sources are chat, notes"]
        .assert_eq(&outcome(&hub, "return await github.searchIssues({ q: 'bug' })"));
}

/// A write with arguments its schema refuses asks no one and reaches nothing: the guest gets
/// `invalid_arguments` naming the path and what was expected, with the tool's signature.
#[test]
fn arguments_the_schema_refuses_ask_no_one_and_reach_nothing() {
    let hub = Hub::new();
    let code = "try { await notes.add({ text: 42 }) } catch (e) { return [e.code, e.message, e.hint] }";
    let envelope = hub.execute(code);
    expect_test::expect![[r#"completed ["invalid_arguments","`notes.add` was not called, its arguments do not fit its schema: text: expected string, got integer","fix the arguments and call it again: notes.add(input: { text: string }): Promise<unknown>"]"#]]
        .assert_eq(&render(&envelope));
    assert!(hub.calls().is_empty(), "nothing reached the source: {:?}", hub.calls());
    let run_id = envelope.run_id.clone();
    let run = hub.run(&run_id);
    assert!(run.pending.is_empty(), "no person was asked");
    assert!(hub.journal(&run_id).is_empty(), "nothing was journaled as sent: {}", hub.journal_text(&run_id));
    // The same call with good arguments waits for a person as writes do.
    let asked = hub.execute("return await notes.add({ text: 'fine' })");
    assert_eq!(asked.status, capabilities_core::surface::envelope::EnvelopeStatus::AwaitingApproval);
}

#[test]
fn reads_reach_upstream_in_order_with_their_arguments() {
    let hub = Hub::new();
    outcome(&hub, "await notes.list({ q: 'a' }); await notes.list({ q: 'b' })");
    expect_test::expect![[r#"
        [
            "notes.list {\"q\":\"a\"}",
            "notes.list {\"q\":\"b\"}",
        ]
    "#]]
    .assert_debug_eq(&hub.calls());
}

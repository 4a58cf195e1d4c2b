//! Approvals over MCP elicitation: `hub serve --stdio` driven by the official TypeScript SDK
//! client (`tests/fixtures/elicit-client.mjs`), which declares form elicitation (or not) and
//! answers each prompt from a script, against the npm memory server as the hub's one source.
//!
//! Needs Node.js on PATH and `cd node && npm ci` at the repository root; the tests fail (never
//! skip) without them.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::{Value, json};

use crate::support::{packages, repo};

/// A value the model's code passes in an argument the preview must mask.
const CANARY: &str = "canary-7f3a9e-do-not-show";

/// One hub in a temporary directory with the memory server as source `memory`.
struct Hub {
    dir: tempfile::TempDir,
}

impl Hub {
    fn new() -> Hub {
        let hub = Hub { dir: tempfile::tempdir().expect("a temp dir") };
        let memory = packages().join("server-memory");
        let manifest: Value =
            serde_json::from_slice(&std::fs::read(memory.join("package.json")).expect("package.json"))
                .expect("package.json is JSON");
        let bin =
            memory.join(manifest["bin"]["mcp-server-memory"].as_str().expect("the package names its bin"));
        let env = format!("MEMORY_FILE_PATH={}", hub.memory_file().display());
        let out = Command::new(env!("CARGO_BIN_EXE_capabilities"))
            .args(["hub", "add", "--namespace", "memory", "--env", &env, "--yes", "--", "node"])
            .arg(&bin)
            .env("CAPABILITIES_HOME", hub.home())
            .stdin(Stdio::null())
            .output()
            .expect("the binary runs");
        assert!(out.status.success(), "hub add failed: {}", String::from_utf8_lossy(&out.stderr));
        hub
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("hub")
    }

    fn memory_file(&self) -> PathBuf {
        self.dir.path().join("memory.jsonl")
    }

    /// Makes `calls` through a client that answers prompts with `answers` (`None`: a client
    /// without elicitation) and returns what it saw.
    fn client(&self, calls: Value, answers: Option<&[&str]>) -> Value {
        let out = Command::new("node")
            .arg(repo().join("local/tests/fixtures/elicit-client.mjs"))
            .arg(calls.to_string())
            .arg(json!(answers).to_string())
            .env("MCP_SDK_DIR", packages().join("sdk"))
            .env("CAPABILITIES_BIN", env!("CARGO_BIN_EXE_capabilities"))
            .env("CAPABILITIES_HOME", self.home())
            .stderr(Stdio::inherit())
            .output()
            .expect("node starts");
        assert!(out.status.success(), "the client failed: {}", String::from_utf8_lossy(&out.stdout));
        serde_json::from_slice(&out.stdout).expect("the client prints one JSON object")
    }

    /// The stored run record.
    fn run(&self, run_id: &str) -> Value {
        let path = self.home().join("runs").join(format!("{run_id}.json"));
        serde_json::from_slice(&std::fs::read(&path).expect("the run is stored")).expect("the run is JSON")
    }

    /// How many lines of the memory server's file name entity `name`.
    fn entity_lines(&self, name: &str) -> usize {
        let text = std::fs::read_to_string(self.memory_file()).unwrap_or_default();
        text.lines().filter(|l| l.contains(&format!(r#""name":"{name}""#))).count()
    }
}

fn execute(code: &str) -> Value {
    json!({"name": "execute", "arguments": {"code": code}})
}

fn envelope(out: &Value, i: usize) -> &Value {
    let envelope = &out["results"][i]["structuredContent"];
    assert!(envelope.is_object(), "result {i} is an envelope: {}", out["results"][i]);
    envelope
}

/// Code that writes entity `name`, with a secret-looking argument beside it.
fn create(name: &str) -> String {
    format!(
        r#"await memory.createEntities({{entities:[{{name:"{name}",entityType:"t",observations:["x"]}}], token:"{CANARY}"}}); return "written""#
    )
}

const COUNT: &str = r#"return (await memory.readGraph({})).entities.length"#;

#[test]
fn accepting_once_records_resumes_and_writes_exactly_once() {
    let hub = Hub::new();
    let out = hub.client(json!([execute(&create("a")), execute(COUNT)]), Some(&["once"]));
    let first = envelope(&out, 0);
    assert_eq!(first["status"], "completed", "{first}");
    assert_eq!(first["result"], "written");
    assert_eq!(envelope(&out, 1)["result"], 1, "the graph holds the entity once");
    assert_eq!(hub.entity_lines("a"), 1);

    let asked = out["elicitations"].as_array().expect("a list");
    assert_eq!(asked.len(), 1, "{asked:?}");
    let message = asked[0]["message"].as_str().expect("a message");
    for shown in
        ["Tool: memory.createEntities", "Connection: default", "Why it asks:", "Expires: ", "\"name\": \"a\""]
    {
        assert!(message.contains(shown), "the prompt shows {shown:?}: {message}");
    }
    assert!(!message.contains(CANARY), "the prompt shows the secret: {message}");
    assert!(message.len() <= 4096);
    let choices: Vec<&str> = asked[0]["requestedSchema"]["properties"]["choice"]["oneOf"]
        .as_array()
        .expect("titled choices")
        .iter()
        .map(|c| c["const"].as_str().expect("a const"))
        .collect();
    assert_eq!(choices, ["once", "run", "always", "deny"]);
    let state = asked[0]["meta"]["sh.capabilities/approvalState"].as_str().expect("signed state");
    let run_id = first["runId"].as_str().expect("a run id");
    assert!(state.starts_with(&format!("v1.{run_id}.p_")), "{state}");

    let run = hub.run(run_id);
    assert_eq!(run["decisions"].as_array().map(Vec::len), Some(1), "{run}");
    assert_eq!(run["decisions"][0]["channel"], "elicitation");
    assert_eq!(run["decisions"][0]["choice"], "once");
    let key = std::fs::metadata(hub.home().join("approval-key")).expect("the key file");
    use std::os::unix::fs::PermissionsExt;
    assert_eq!((key.len(), key.permissions().mode() & 0o777), (32, 0o600));
}

#[test]
fn deny_and_decline_fail_the_call_inside_the_code() {
    let code = r#"try { await memory.createEntities({entities:[{name:"d",entityType:"t",observations:[]}]}); return "ran" } catch (e) { return e.code }"#;
    for answer in ["deny", "decline"] {
        let hub = Hub::new();
        let out = hub.client(json!([execute(code)]), Some(&[answer]));
        let first = envelope(&out, 0);
        assert_eq!(first["status"], "completed", "{answer}: {first}");
        assert_eq!(first["result"], "approval_denied", "{answer}");
        assert_eq!(hub.entity_lines("d"), 0);
        let run = hub.run(first["runId"].as_str().expect("a run id"));
        assert_eq!(run["decisions"][0]["choice"], "deny", "{answer}: {run}");
        assert_eq!(run["decisions"][0]["channel"], "elicitation");
    }
}

#[test]
fn a_dismissed_or_failed_prompt_leaves_the_call_pending() {
    for answer in ["cancel", "error", "maybe"] {
        let hub = Hub::new();
        let out = hub.client(json!([execute(&create("c")), execute(COUNT)]), Some(&[answer]));
        let first = envelope(&out, 0);
        assert_eq!(first["status"], "awaiting_approval", "{answer}: {first}");
        assert_eq!(out["elicitations"].as_array().map(Vec::len), Some(1), "{answer}");
        assert_eq!(envelope(&out, 1)["result"], 0, "{answer}: nothing was written");
        let run = hub.run(first["runId"].as_str().expect("a run id"));
        assert_eq!(run["decisions"], json!([]), "{answer}: {run}");
    }
}

#[test]
fn a_client_without_elicitation_gets_awaiting_approval_and_resume_runs_nothing() {
    let hub = Hub::new();
    let resume = json!({"name": "execute", "arguments": {"resume": "$runId"}});
    let out = hub.client(json!([execute(&create("n")), resume, execute(COUNT)]), None);
    let (mut first, mut again) = (envelope(&out, 0).clone(), envelope(&out, 1).clone());
    assert_eq!(first["status"], "awaiting_approval", "{first}");
    // The notices say what the hub did to reach the person (it tries its approval page).
    let (said, said_again) = (first["notices"].take(), again["notices"].take());
    assert!(said.to_string().contains("hub approve"), "{said}");
    assert!(said_again.to_string().contains("hub approve"), "{said_again}");
    assert_eq!(again, first, "resume before a decision answers the same pending envelope");
    assert_eq!(envelope(&out, 2)["result"], 0, "nothing ran");
    assert_eq!(hub.entity_lines("n"), 0);
    let run_id = first["runId"].as_str().expect("a run id");
    assert_eq!(hub.run(run_id)["decisions"], json!([]));
    assert!(!hub.home().join("runs").join(format!("{run_id}.nonces")).exists());
    assert!(!hub.home().join("approval-key").exists(), "nobody was asked");
}

#[test]
fn a_resumed_run_is_asked_about_and_a_loop_of_writes_asks_each_time() {
    let hub = Hub::new();
    // Paused by a client that cannot ask; resumed by one that can.
    let paused = hub.client(json!([execute(&create("r"))]), None);
    let run_id = envelope(&paused, 0)["runId"].as_str().expect("a run id").to_owned();
    let resume = json!({"name": "execute", "arguments": {"resume": run_id}});
    let out = hub.client(json!([resume]), Some(&["once"]));
    assert_eq!(envelope(&out, 0)["status"], "completed", "{out}");
    assert_eq!(hub.entity_lines("r"), 1);

    // "once" answers each call; the run goes on asking until it completes.
    let code = r#"for (const name of ["l1", "l2"]) { await memory.createEntities({entities:[{name,entityType:"t",observations:[]}]}) } return "both""#;
    let out = hub.client(json!([execute(code)]), Some(&["once", "once"]));
    assert_eq!(envelope(&out, 0)["result"], "both", "{out}");
    assert_eq!(out["elicitations"].as_array().map(Vec::len), Some(2));
    assert_eq!((hub.entity_lines("l1"), hub.entity_lines("l2")), (1, 1));
}

#[test]
fn the_key_file_and_nonces_stay_in_the_hub_home() {
    let hub = Hub::new();
    let out = hub.client(json!([execute(&create("k"))]), Some(&["run"]));
    let run_id = envelope(&out, 0)["runId"].as_str().expect("a run id").to_owned();
    let nonces = std::fs::read_to_string(hub.home().join("runs").join(format!("{run_id}.nonces")))
        .expect("the spent nonce is kept with the run");
    let state = out["elicitations"][0]["meta"]["sh.capabilities/approvalState"].as_str().expect("state");
    let nonce = state.split('.').nth(4).expect("a nonce field");
    assert_eq!(nonces, format!("{nonce}\n"));
    assert!(Path::new(&hub.home().join("approval-key")).is_file());
}

/// At the recorder's door, on a real paused run: a forged, expired, misdirected or spent state
/// records nothing; the state the hub signed for the call records once.
#[test]
fn only_a_fresh_state_signed_for_the_call_records() {
    use capabilities::platform::now_ms;
    use capabilities::recorder;
    use capabilities::serve::approvals::{self, ApprovalKey, KeyFile, StateError};
    use capabilities::store::Store;
    use capabilities_core::approval::{Channel, Choice, PendingCall};

    let hub = Hub::new();
    let out = hub.client(json!([execute(&create("f")), execute(&create("g"))]), None);
    let run_ids: Vec<String> =
        (0..2).map(|i| envelope(&out, i)["runId"].as_str().expect("a run id").to_owned()).collect();
    let store = Store::open(&hub.home()).expect("the store opens");
    let pending_of = |run_id: &str| -> PendingCall {
        serde_json::from_value(hub.run(run_id)["pending"][0].clone()).expect("a pending call")
    };
    let (run, other) = (run_ids[0].as_str(), run_ids[1].as_str());
    let pending = pending_of(run);
    let key = ApprovalKey::load_or_create(&hub.home()).expect("the key");
    let now = now_ms();
    let attempt = |state: &str| -> Result<(), String> {
        let claims = key.verify_for(state, run, &pending, now_ms()).map_err(|e| e.to_string())?;
        recorder::record_checked(
            &store,
            run,
            &[(pending.id.clone(), Choice::Once)],
            Channel::Elicitation,
            || approvals::consume_nonce(&store, &claims),
        )
        .map(|_| ())
        .map_err(|e| format!("{e:#}"))
    };

    let forged = ApprovalKey::from_bytes([9; 32]).sign(run, &pending, [1; 16], now + 60_000);
    assert_eq!(attempt(&forged), Err(StateError::BadSignature.to_string()));
    let expired = key.sign(run, &pending, [2; 16], now.saturating_sub(1));
    assert_eq!(attempt(&expired), Err(StateError::Expired.to_string()));
    let for_other_run = key.sign(other, &pending_of(other), [3; 16], now + 60_000);
    assert_eq!(attempt(&for_other_run), Err(StateError::Mismatch.to_string()));
    // A state whose nonce an earlier answer spent.
    let spent = key.sign(run, &pending, [4; 16], now + 60_000);
    approvals::consume_nonce(&store, &key.verify(&spent, now).expect("verifies")).expect("spent");
    assert_eq!(attempt(&spent), Err(StateError::Used.to_string()));
    assert_eq!(hub.run(run)["decisions"], json!([]), "nothing was recorded");

    let fresh = key.sign(run, &pending, [5; 16], now + 60_000);
    assert_eq!(attempt(&fresh), Ok(()));
    assert_eq!(hub.run(run)["decisions"][0]["channel"], "elicitation");
    assert!(attempt(&fresh).is_err(), "a state counts once");
    assert_eq!(hub.run(run)["decisions"].as_array().map(Vec::len), Some(1));
    assert_eq!(hub.run(other)["decisions"], json!([]));
}

/// A person who takes longer than the client's timeout: progress on the `execute` call keeps a
/// client that resets its timeout on progress waiting for the answer.
#[test]
fn progress_keeps_the_call_alive_while_the_person_thinks() {
    let hub = Hub::new();
    let mut call = execute(&create("s"));
    call["timeoutMs"] = json!(3000);
    let out = hub.client(json!([call]), Some(&["slow:once"]));
    assert_eq!(envelope(&out, 0)["status"], "completed", "{out}");
    assert!(out["results"][0]["progress"].as_u64().is_some_and(|n| n >= 2), "{out}");
    assert_eq!(hub.entity_lines("s"), 1);
}

#[test]
fn always_leaves_a_pinned_rule_so_the_next_run_is_not_asked() {
    let hub = Hub::new();
    let out = hub.client(json!([execute(&create("w1")), execute(&create("w2"))]), Some(&["always"]));
    assert_eq!(envelope(&out, 0)["status"], "completed", "{out}");
    assert_eq!(envelope(&out, 1)["status"], "completed", "{out}");
    assert_eq!(out["elicitations"].as_array().map(Vec::len), Some(1), "asked once");
    let policy: Value = serde_json::from_slice(
        &std::fs::read(hub.home().join("policies/policy.json")).expect("the policy is stored"),
    )
    .expect("the policy is JSON");
    assert_eq!(policy["rules"][0]["tool"], "memory.createEntities", "{policy}");
    assert_eq!(policy["rules"][0]["effect"], "allow");
    assert_eq!((hub.entity_lines("w1"), hub.entity_lines("w2")), (1, 1));
}

//! I6: resume never repeats a call. Runs of three counted writes are approved with
//! `hub approve --choice run` and resumed over MCP while the CLI and the serving process are
//! SIGKILLed at random points; after a restart every run settles in a definite state, the
//! upstream saw no write twice, and every run record and journal line parses.
//!
//! 20 runs per target; `INVARIANTS_LONG=1` (what `cargo xtask invariants --long` would set)
//! makes it 200. A second case kills a served hub while a new run's only call is in flight,
//! when that run's record is still only the first line of its journal.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use capabilities_invariants::{Applicability, Home, Kind, Need, run_ids};
use serde_json::{Value, json};

use crate::support::{on_each_target, skips, upstream_hub};

/// A small xorshift generator; the seed is printed so a failure can be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self, below: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % below
    }
}

fn runs() -> usize {
    if std::env::var_os("INVARIANTS_LONG").is_some() { 200 } else { 20 }
}

const DEFINITE: [&str; 4] = ["completed", "failed", "cancelled", "expired"];

fn kill_later(pid: u32, after: Duration) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        std::thread::sleep(after);
        let _ = std::process::Command::new("kill").args(["-KILL", &pid.to_string()]).status();
    })
}

/// Every run record parses as JSON and every journal line too.
fn corrupt_records(home: &Path) -> Vec<String> {
    let mut bad = Vec::new();
    for entry in std::fs::read_dir(home.join("runs")).into_iter().flatten().flatten() {
        let path = entry.path();
        let text = std::fs::read_to_string(&path).unwrap_or_default();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if name.ends_with(".journal.jsonl") {
            for (i, line) in text.lines().enumerate() {
                if serde_json::from_str::<Value>(line).is_err() {
                    bad.push(format!("{name} line {}", i + 1));
                }
            }
        } else if name.ends_with(".json") && serde_json::from_str::<Value>(&text).is_err() {
            bad.push(name);
        }
    }
    bad
}

fn resume_never_repeats_a_call(kind: Kind) {
    let seed = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64 | 1;
    eprintln!("I6 {}: seed {seed}", kind.name());
    let mut rng = Rng(seed);
    let mut target = kind.start(Home::new());
    if skips(&*target, "I6", Need::Approvals) {
        return;
    }
    let upstream = upstream_hub(&mut *target);
    let mut outcomes: BTreeMap<String, usize> = BTreeMap::new();
    let mut kills = 0;
    let total = runs();
    for i in 0..total {
        let code = format!(
            r#"for (const j of [0, 1, 2]) await up.write({{key: "r{i}-" + j, ms: 40}}); return "done""#
        );
        let first = target.execute(&code);
        assert_eq!(first["status"], json!("awaiting_approval"), "run {i}: {first}");
        let run = first["runId"].as_str().unwrap().to_owned();

        // The person approves; sometimes the CLI dies mid-way (a hosted person's admin request
        // is one HTTP exchange).
        if target.applies(Need::LocalStore) == Applicability::Applies {
            let mut approve = target
                .hub()
                .command(&["hub", "approve", &run, "--choice", "run", "--no-input"])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .spawn()
                .unwrap();
            if rng.next(2) == 0 {
                std::thread::sleep(Duration::from_millis(rng.next(400)));
                let _ = approve.kill();
                kills += 1;
            }
            let _ = approve.wait();
        } else {
            target.approve(&run, "run");
        }

        // The agent resumes; sometimes the hub dies mid-way.
        let killer =
            (rng.next(2) == 0).then(|| kill_later(target.pid(), Duration::from_millis(rng.next(300))));
        let resumed = target.resume(&run);
        if let Some(killer) = killer {
            killer.join().unwrap();
            target.restart();
            kills += 1;
        }

        // Settle: approve again if no decision was recorded, resume until the run is definite.
        let mut state = resumed;
        for _ in 0..20 {
            let status = state["status"].as_str().unwrap_or("").to_owned();
            if DEFINITE.contains(&status.as_str()) {
                break;
            }
            if status == "awaiting_approval" {
                target.approve(&run, "run");
            } else {
                std::thread::sleep(Duration::from_millis(100));
            }
            state = target.resume(&run);
        }
        let status = state["status"].as_str().unwrap_or("").to_owned();
        assert!(DEFINITE.contains(&status.as_str()), "run {i} ({run}) never settled: {state}");
        let calls = upstream.calls();
        for j in 0..3 {
            let key = format!("write r{i}-{j}");
            let seen = calls.iter().filter(|c| **c == key).count();
            assert!(seen <= 1, "{}: `{key}` reached the upstream {seen} times (seed {seed})", target.name());
            if status == "completed" {
                assert_eq!(seen, 1, "{}: run {run} completed without `{key}`", target.name());
            }
        }
        *outcomes.entry(status).or_default() += 1;
    }
    if target.applies(Need::LocalStore) == Applicability::Applies {
        let corrupt = corrupt_records(target.home());
        assert!(corrupt.is_empty(), "{}: corrupt records: {corrupt:?}", target.name());
    }
    eprintln!("I6 {}: {total} runs, {kills} kills, outcomes {outcomes:?}, 0 repeated calls", target.name());
}
on_each_target!(resume_never_repeats_a_call);

/// A served run's first record is the first line of the journal its hub prepared, not a file:
/// a hub killed while that run's only call is in flight leaves a run that `hub runs` lists,
/// whose record comes from that line, and that resumes to a definite end without the call
/// reaching the upstream again.
fn a_run_killed_before_its_record_file_resumes_from_its_journal(kind: Kind) {
    let mut target = kind.start(Home::new());
    if skips(&*target, "I6", Need::LocalStore) {
        return;
    }
    let upstream = upstream_hub(&mut *target);
    target.set_rules(json!([{"tool": "up.write", "effect": "allow"}]));
    // The first run's last record is written with a journal prepared beside it for the next.
    let warm = target.execute(r#"await up.write({key: "warm"}); return 1"#);
    assert_eq!(warm["status"], json!("completed"), "{warm}");
    let before: BTreeSet<String> = run_ids(&target.runs()).into_iter().collect();

    let killer = kill_later(target.pid(), Duration::from_millis(800));
    let cut = target.execute(r#"await up.write({key: "slow", ms: 4000}); return "done""#);
    killer.join().unwrap();
    assert!(cut.get("status").is_none(), "the hub answered before it was killed: {cut}");
    target.restart();

    let listed = target.runs();
    let new: Vec<String> = run_ids(&listed).into_iter().filter(|id| !before.contains(id)).collect();
    assert_eq!(new.len(), 1, "`hub runs` lists the run the client never heard of: {listed}");
    let run = &new[0];
    let runs = target.home().join("runs");
    assert!(!runs.join(format!("{run}.json")).exists(), "{run} has no record file");
    let journal = std::fs::read_to_string(runs.join(format!("{run}.journal.jsonl"))).unwrap();
    assert!(journal.starts_with(r#"{"kind":"start","record":{"#), "{journal}");
    assert!(journal.contains(r#""kind":"call""#), "the call's intent is in the journal: {journal}");

    let mut state = target.resume(run);
    for _ in 0..20 {
        if DEFINITE.contains(&state["status"].as_str().unwrap_or("")) {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        state = target.resume(run);
    }
    assert_eq!(state["status"], json!("failed"), "{state}");
    assert_eq!(state["error"]["code"], json!("outcome_unknown"), "{state}");
    let calls = upstream.calls();
    assert_eq!(calls.iter().filter(|c| *c == "write slow").count(), 1, "{calls:?}");
    let corrupt = corrupt_records(target.home());
    assert!(corrupt.is_empty(), "{}: corrupt records: {corrupt:?}", target.name());
}
on_each_target!(a_run_killed_before_its_record_file_resumes_from_its_journal);

//! Eight `hub serve --stdio` processes on one store, each making runs with reads and approved
//! writes interleaved with the others: no lost, torn or duplicated record, every write reached
//! the upstream exactly once, every journal line parses.

use std::collections::BTreeSet;

use capabilities_invariants::{Home, Kind};
use serde_json::{Value, json};

use crate::support::upstream_hub;

const PROCESSES: usize = 8;

/// Runs per process: 20 in the everyday suite, the full 200 under `cargo xtask invariants --long`.
fn runs() -> usize {
    if std::env::var_os("INVARIANTS_LONG").is_some() { 200 } else { 20 }
}

#[test]
fn eight_hubs_share_one_store() {
    let runs_each = runs();
    let home = Home::new();
    let upstream = upstream_hub(&mut *Kind::Stdio.start(home.clone()));
    let workers: Vec<_> = (0..PROCESSES)
        .map(|p| {
            let home = home.clone();
            std::thread::spawn(move || {
                let mut target = Kind::Stdio.start(home);
                let mut ids = Vec::new();
                for i in 0..runs_each {
                    let key = format!("p{p}-r{i}");
                    if i % 2 == 0 {
                        let done = target.execute("return await up.env({name: 'HOME'})");
                        assert_eq!(done["status"], json!("completed"), "{key}: {done}");
                        ids.push(done["runId"].as_str().unwrap().to_owned());
                        continue;
                    }
                    let waiting = target.execute(&format!(r#"return await up.write({{key: "{key}"}})"#));
                    assert_eq!(waiting["status"], json!("awaiting_approval"), "{key}: {waiting}");
                    let run = waiting["runId"].as_str().unwrap().to_owned();
                    assert!(target.approve(&run, "once"), "{key}: the approval was taken");
                    let done = target.resume(&run);
                    assert_eq!(done["status"], json!("completed"), "{key}: {done}");
                    ids.push(run);
                }
                ids
            })
        })
        .collect();
    let ids: Vec<String> = workers.into_iter().flat_map(|w| w.join().expect("a worker panicked")).collect();
    let unique: BTreeSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), PROCESSES * runs_each, "run ids are unique");

    // Every write once; every record whole and completed; every journal line parses.
    let calls = upstream.calls();
    for p in 0..PROCESSES {
        for i in (1..runs_each).step_by(2) {
            let key = format!("write p{p}-r{i}");
            assert_eq!(calls.iter().filter(|c| **c == key).count(), 1, "{key}: {calls:?}");
        }
    }
    let runs = home.path().join("runs");
    for id in &ids {
        let record: Value = serde_json::from_slice(&std::fs::read(runs.join(format!("{id}.json"))).unwrap())
            .unwrap_or_else(|e| panic!("{id}: a torn record: {e}"));
        assert_eq!(record["status"], json!("completed"), "{id}: {record}");
        if let Ok(journal) = std::fs::read_to_string(runs.join(format!("{id}.journal.jsonl"))) {
            for (n, line) in journal.lines().enumerate() {
                assert!(serde_json::from_str::<Value>(line).is_ok(), "{id} journal line {}: {line}", n + 1);
            }
        }
    }
    // `hub runs` shows the newest 50 unless told more.
    let all = ids.len().to_string();
    let listed = home.cli(&["runs", "--json", "--limit", &all], None).expect_code(0);
    for id in &ids {
        assert!(listed.stdout.contains(id.as_str()), "{id} is listed");
    }
    eprintln!(
        "concurrency: {PROCESSES} processes × {runs_each} runs, {} writes, all records whole",
        PROCESSES * runs_each / 2
    );
}

//! Replay: every attempt re-runs the code from the start, and calls the journal holds return
//! their recorded outcome — never a second upstream call, even after a crash.

use capabilities_core::approval::Choice;
use capabilities_core::record::{JournalEntry, RunOutput, RunStatus, call_digest};
use expect_test::expect;

use super::{Hub, Setup, render};

#[test]
fn the_journal_holds_call_before_outcome() {
    let hub = Hub::new();
    let paused = hub.execute(r#"await notes.list({ q: "a" }); await chat.post({ text: "b" })"#);
    hub.decide(&paused, Choice::Once);
    hub.resume(&paused.run_id);
    let text = hub.journal_text(&paused.run_id);
    let digest_list = call_digest("notes.list", None, &serde_json::json!({"q": "a"}));
    let digest_post = call_digest("chat.post", Some("work"), &serde_json::json!({"text": "b"}));
    let text = text.replace(&digest_list, "<list>").replace(&digest_post, "<post>");
    expect![[r#"
        {"kind":"call","seq":0,"address":"notes.list","digest":"<list>","at_ms":1700000000000}
        {"kind":"outcome","seq":0,"status":"ok","value":{"echo":{"q":"a"}},"ms":0}
        {"kind":"call","seq":1,"address":"chat.post","connection":"work","digest":"<post>","at_ms":1700000000000}
        {"kind":"outcome","seq":1,"status":"ok","value":{"echo":{"text":"b"}},"ms":0}
    "#]]
    .assert_eq(&text);
}

#[test]
fn a_journal_that_disagrees_with_the_code_is_divergence() {
    let hub = Hub::new();
    let paused = hub.execute(r#"await notes.list({ q: "a" }); await chat.post({ text: "b" })"#);
    assert_eq!(hub.journal(&paused.run_id).len(), 2);
    // As if the first attempt had listed something else: the code now makes another call.
    hub.store.truncate_journal(&paused.run_id, 0);
    hub.append_journal(
        &paused.run_id,
        JournalEntry::Call {
            seq: 0,
            address: "notes.list".into(),
            connection: None,
            digest: call_digest("notes.list", None, &serde_json::json!({"q": "other"})),
            at_ms: 0,
        },
    );
    hub.decide(&paused, Choice::Once);
    let failed = hub.resume(&paused.run_id);
    expect!["failed divergence: on resume, call #1 was `notes.list` with other arguments or connection than the journal holds"]
        .assert_eq(&render(&failed));
    assert_eq!(hub.upstream.count(), 1, "neither the list nor the post went upstream again");
    assert_eq!(hub.run(&paused.run_id).status, RunStatus::Failed);
}

#[test]
fn another_tool_at_a_journaled_position_is_divergence() {
    let hub = Hub::new();
    let paused = hub.execute(r#"await notes.list({ q: "a" }); await chat.post({ text: "b" })"#);
    hub.store.truncate_journal(&paused.run_id, 0);
    hub.append_journal(
        &paused.run_id,
        JournalEntry::Call {
            seq: 0,
            address: "notes.add".into(),
            connection: None,
            digest: call_digest("notes.add", None, &serde_json::json!({"q": "a"})),
            at_ms: 0,
        },
    );
    hub.decide(&paused, Choice::Once);
    expect!["failed divergence: on resume, call #1 was `notes.list` where the journal holds `notes.add`"]
        .assert_eq(&render(&hub.resume(&paused.run_id)));
    assert_eq!(hub.upstream.count(), 1);
}

#[test]
fn a_call_without_outcome_is_never_repeated() {
    let hub = Hub::new();
    let code = r#"try { return await notes.list({ q: "a" }) } catch (e) { return [e.code, e.message] }"#;
    let done = hub.execute(code);
    assert_eq!(done.status, "completed");
    // The hub stopped after writing `Call` and before `Outcome`, with the run still running.
    hub.store.truncate_journal(&done.run_id, 1);
    let mut run = hub.run(&done.run_id);
    run.status = RunStatus::Running;
    run.output = RunOutput::default();
    hub.store.put_run(run);

    let resumed = hub.resume(&done.run_id);
    expect![[r#"completed ["outcome_unknown","the hub stopped while `notes.list` was in flight; it is not repeated"]"#]]
        .assert_eq(&render(&resumed));
    assert_eq!(hub.upstream.count(), 1, "the call is not made again");
    // The unknown outcome is journaled, so a later attempt sees the same.
    let journal = hub.journal(&done.run_id);
    assert!(matches!(journal.last(), Some(JournalEntry::Outcome { seq: 0, .. })), "{journal:?}");
}

#[test]
fn a_crash_mid_write_is_reported_to_the_code_after_approval() {
    let hub = Hub::new();
    let paused = hub.execute(
        r#"const r = await notes.list({});
           const p = await chat.post({ text: "x" }).catch((e) => e.code);
           return [r, p]"#,
    );
    hub.decide(&paused, Choice::Once);
    assert_eq!(hub.resume(&paused.run_id).status, "completed");
    assert_eq!(hub.upstream.count(), 2);
    // Lose the post's outcome and re-open the run, as a crash during the post would leave it.
    hub.store.truncate_journal(&paused.run_id, 3);
    let mut run = hub.run(&paused.run_id);
    run.status = RunStatus::Running;
    hub.store.put_run(run);
    expect![[r#"completed [{"echo":{}},"outcome_unknown"]"#]].assert_eq(&render(&hub.resume(&paused.run_id)));
    assert_eq!(hub.upstream.count(), 2);
}

#[test]
fn a_pause_lets_calls_in_flight_settle_and_journals_them() {
    let hub = Hub::with(Setup { delay_polls: 3, ..Setup::default() });
    let paused = hub.execute(
        r#"const [list, post] = await Promise.all([notes.list({ q: "a" }), chat.post({ text: "b" })]);
           return { list, post }"#,
    );
    assert_eq!(paused.status, "awaiting_approval");
    let kinds: Vec<String> =
        hub.journal(&paused.run_id).iter().map(|e| format!("{} {}", kind(e), e.seq())).collect();
    expect![[r#"
        [
            "call 0",
            "outcome 0",
        ]
    "#]]
    .assert_debug_eq(&kinds);
    hub.decide(&paused, Choice::Once);
    expect![[r#"completed {"list":{"echo":{"q":"a"}},"post":{"echo":{"text":"b"}}}"#]]
        .assert_eq(&render(&hub.resume(&paused.run_id)));
    assert_eq!(hub.upstream.count(), 2);
}

fn kind(entry: &JournalEntry) -> &'static str {
    match entry {
        JournalEntry::Call { .. } => "call",
        JournalEntry::Outcome { .. } => "outcome",
    }
}

#[test]
fn time_and_randomness_are_the_same_on_every_attempt() {
    let hub = Hub::new();
    let code = r#"
        const before = [Date.now(), Math.random(), crypto.randomUUID()];
        console.log(JSON.stringify(before));
        await chat.post({ text: "x" });
        return { before, after: [Date.now(), Math.random()] };
    "#;
    let paused = hub.execute(code);
    let logged: serde_json::Value = serde_json::from_str(&paused.logs[0]).unwrap();
    // Time passes for the host between the attempts; the run's clock does not jump.
    hub.clock.advance(60_000);
    hub.decide(&paused, Choice::Once);
    let done = hub.resume(&paused.run_id);
    let result = done.result.clone().unwrap();
    assert_eq!(result["before"], logged, "the replayed attempt saw the same values");
    assert_eq!(done.logs, paused.logs);
    assert_eq!(result["before"][0], serde_json::json!(1_700_000_000_000u64));
    assert_ne!(result["after"][1], result["before"][1]);

    // Another run gets another seed.
    let other = hub.execute("return Math.random()");
    assert_ne!(other.result.unwrap(), result["before"][1]);
}

#[test]
fn a_failed_call_is_replayed_as_the_same_failure() {
    let hub = Hub::new();
    let paused = hub.execute(
        r#"const failed = await notes.broken().catch((e) => [e.code, e.message, e.retryable]);
           await chat.post({ text: "x" });
           return failed"#,
    );
    hub.decide(&paused, Choice::Once);
    let done = hub.resume(&paused.run_id);
    expect![[r#"completed ["invalid_arguments","notes.broken: the source refused the call's parameters: no tool broken",false]"#]]
        .assert_eq(&render(&done));
    assert_eq!(done.calls.iter().map(|c| c.ok).collect::<Vec<_>>(), [false, true]);
    assert_eq!(hub.upstream.count(), 2);
}

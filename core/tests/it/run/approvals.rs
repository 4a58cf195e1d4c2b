//! Approvals: a write pauses the run, a person decides on the stored run, resume continues —
//! and policy decides before any credential is touched.

use capabilities_core::address::ToolAddress;
use capabilities_core::approval::{Choice, PendingKind};
use capabilities_core::policy::{Effect, Rule};
use expect_test::expect;

use super::{Hub, Setup, error_code, pretty, render};

const READ_THEN_WRITE: &str = r#"
    const found = await notes.list({ q: "groceries" });
    const posted = await chat.post({ text: "shopping today" });
    return { found, posted };
"#;

#[test]
fn a_read_runs_without_asking() {
    let hub = Hub::new();
    let envelope = hub.execute(r#"return await notes.list({ q: "x" })"#);
    expect![[r#"
        {
          "runId": "run_157d487cbd7c3199",
          "status": "completed",
          "result": {
            "echo": {
              "q": "x"
            }
          },
          "calls": [
            {
              "address": "notes.list",
              "ok": true,
              "ms": 0
            }
          ]
        }"#]]
    .assert_eq(&pretty(&envelope));
    assert_eq!(hub.upstream.count(), 1);
}

#[test]
fn a_write_pauses_and_resume_before_a_decision_changes_nothing() {
    let hub = Hub::new();
    let paused = hub.execute(READ_THEN_WRITE);
    expect![[r#"
        {
          "runId": "run_157d487cbd7c3199",
          "status": "awaiting_approval",
          "calls": [
            {
              "address": "notes.list",
              "ok": true,
              "ms": 0
            }
          ],
          "pending": [
            {
              "id": "p_3f75dd7e2868",
              "kind": "approval",
              "address": "chat.post",
              "summary": "Posts a message to the team channel.",
              "message": "needs a person's approval (writes need approval). Tell the user; they can decide in the prompt or page the hub gave them, or with `capabilities hub approve run_157d487cbd7c3199`. Then call execute with {\"resume\": \"run_157d487cbd7c3199\"}."
            }
          ]
        }"#]]
    .assert_eq(&pretty(&paused));
    let text = paused.to_line();
    assert!(!text.contains("http") && !text.contains(super::WORK_SECRET), "{text}");
    assert_eq!(hub.upstream.count(), 1);

    let again = hub.resume(&paused.run_id);
    assert_eq!(again, paused);
    assert_eq!(hub.upstream.count(), 1, "no call before a decision");
    assert_eq!(hub.run(&paused.run_id).attempts, 1, "no attempt before a decision");
}

#[test]
fn approve_once_then_resume_replays_the_read_and_makes_the_write() {
    let hub = Hub::new();
    let paused = hub.execute(READ_THEN_WRITE);
    hub.decide(&paused, Choice::Once);
    let done = hub.resume(&paused.run_id);
    expect![[r#"
        {
          "runId": "run_157d487cbd7c3199",
          "status": "completed",
          "result": {
            "found": {
              "echo": {
                "q": "groceries"
              }
            },
            "posted": {
              "echo": {
                "text": "shopping today"
              }
            }
          },
          "calls": [
            {
              "address": "notes.list",
              "ok": true,
              "ms": 0
            },
            {
              "address": "chat.post",
              "ok": true,
              "ms": 0
            }
          ]
        }"#]]
    .assert_eq(&pretty(&done));
    // Exactly one upstream call per distinct call, over both attempts.
    expect![[r#"
        [
            "notes.list {\"q\":\"groceries\"}",
            "chat.post {\"text\":\"shopping today\"}",
        ]
    "#]]
    .assert_debug_eq(&hub.calls());
    let run = hub.run(&paused.run_id);
    assert_eq!((run.attempts, run.live_calls), (2, 2));
    // A finished run answers from the store.
    assert_eq!(hub.resume(&paused.run_id), done);
    assert_eq!(hub.upstream.count(), 2);
}

#[test]
fn once_covers_one_call_only() {
    let hub = Hub::new();
    let code = r#"await chat.post({ text: "a" }); await chat.post({ text: "b" }); return "both""#;
    let first = hub.execute(code);
    hub.decide(&first, Choice::Once);
    let second = hub.resume(&first.run_id);
    assert_eq!(second.status, "awaiting_approval");
    assert_ne!(second.pending[0].id, first.pending[0].id);
    hub.decide(&second, Choice::Once);
    expect![[r#"completed "both""#]].assert_eq(&render(&hub.resume(&first.run_id)));
    assert_eq!(hub.upstream.count(), 2);
}

#[test]
fn deny_rejects_inside_the_code_where_it_can_be_caught() {
    let hub = Hub::new();
    let paused = hub.execute(
        r#"try { await chat.post({ text: "hi" }); return "posted" } catch (e) { return [e.name, e.code, e.message] }"#,
    );
    hub.decide(&paused, Choice::Deny);
    expect![[r#"completed ["ToolError","approval_denied","a person denied `chat.post`"]"#]]
        .assert_eq(&render(&hub.resume(&paused.run_id)));
    assert_eq!(hub.upstream.count(), 0);
    assert_eq!(hub.secrets.resolved.load(std::sync::atomic::Ordering::SeqCst), 0);
}

#[test]
fn deny_uncaught_fails_the_run_with_its_code() {
    let hub = Hub::new();
    let paused = hub.execute(r#"await chat.post({ text: "hi" })"#);
    hub.decide(&paused, Choice::Deny);
    let failed = hub.resume(&paused.run_id);
    expect![[r#"
        {
          "code": "approval_denied",
          "message": "ToolError: a person denied `chat.post`",
          "hint": "a person denied this call; do not retry it, tell the user"
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&failed.error).unwrap());
    assert_eq!(hub.upstream.count(), 0);
}

#[test]
fn for_this_run_asks_once_for_a_loop() {
    let hub = Hub::new();
    let paused = hub
        .execute(r#"for (let i = 0; i < 5; i++) await chat.post({ text: `message ${i}` }); return "sent""#);
    assert_eq!(paused.pending.len(), 1);
    hub.decide(&paused, Choice::Run);
    let done = hub.resume(&paused.run_id);
    expect![[r#"completed "sent""#]].assert_eq(&render(&done));
    assert_eq!(done.calls.len(), 5);
    assert_eq!(hub.upstream.count(), 5);
    let run = hub.run(&paused.run_id);
    assert_eq!((run.attempts, run.decisions.len()), (2, 1));
}

#[test]
fn for_this_run_does_not_cover_another_tool() {
    let hub = Hub::new();
    let paused = hub.execute(r#"await chat.post({ text: "a" }); await notes.add({ text: "b" }); return 1"#);
    hub.decide(&paused, Choice::Run);
    let second = hub.resume(&paused.run_id);
    assert_eq!(second.pending[0].address, "notes.add");
    assert_eq!(hub.upstream.count(), 1);
}

#[test]
fn a_deny_rule_never_consults_secrets() {
    let address = ToolAddress::parse("chat.post").unwrap();
    let hub = Hub::with(Setup { rules: vec![Rule::on_tool(address, Effect::Deny)], ..Setup::default() });
    let envelope = hub.execute(r#"await chat.post({ text: "hi" })"#);
    expect![[r#"
        {
          "runId": "run_157d487cbd7c3199",
          "status": "failed",
          "error": {
            "code": "policy_denied",
            "message": "ToolError: policy denies `chat.post`: denied by rule on chat.post",
            "hint": "policy forbids this tool; pick another or ask the user to change policy"
          },
          "calls": [
            {
              "address": "chat.post",
              "ok": false,
              "ms": 0
            }
          ],
          "notices": [
            "returned the value of the final expression (line 1)"
          ]
        }"#]]
    .assert_eq(&pretty(&envelope));
    assert_eq!(hub.secrets.resolved.load(std::sync::atomic::Ordering::SeqCst), 0);
    assert_eq!(hub.upstream.count(), 0);
}

#[test]
fn a_deny_rule_is_catchable() {
    let address = ToolAddress::parse("chat.post").unwrap();
    let hub = Hub::with(Setup { rules: vec![Rule::on_tool(address, Effect::Deny)], ..Setup::default() });
    let envelope = hub.execute(r#"try { await chat.post({}) } catch (e) { return e.code }"#);
    expect![[r#"completed "policy_denied""#]].assert_eq(&render(&envelope));
}

#[test]
fn a_changed_contract_asks_and_names_the_change() {
    let hub = Hub::with(Setup { stale: vec!["chat.whoami"], ..Setup::default() });
    let paused = hub.execute("return (await chat.whoami()).connection");
    assert_eq!(paused.status, "awaiting_approval");
    let pending = &hub.run(&paused.run_id).pending[0];
    expect!["contract changed since review (sha256:aaaaaaaaaaaa… → sha256:c8c6f10d4e2a…)"]
        .assert_eq(&pending.reason);
    assert!(paused.pending[0].message.contains("contract changed since review"), "{}", pretty(&paused));
    assert_eq!(hub.upstream.count(), 0);
    hub.decide(&paused, Choice::Once);
    expect![[r#"completed "work""#]].assert_eq(&render(&hub.resume(&paused.run_id)));
}

#[test]
fn a_new_tool_asks_even_when_read_only() {
    let hub = Hub::with(Setup { unreviewed: vec!["notes.list"], ..Setup::default() });
    let paused = hub.execute("return await notes.list()");
    expect![[r#"awaiting_approval new tool, not reviewed yet"#]].assert_eq(&format!(
        "{} {}",
        paused.status,
        hub.run(&paused.run_id).pending[0].reason
    ));
}

#[test]
fn an_allow_rule_runs_a_write_without_asking() {
    let address = ToolAddress::parse("chat.post").unwrap();
    let hub = Hub::with(Setup { rules: vec![Rule::on_tool(address, Effect::Allow)], ..Setup::default() });
    expect![[r#"completed {"echo":{"text":"hi"}}"#]]
        .assert_eq(&render(&hub.execute(r#"return await chat.post({ text: "hi" })"#)));
}

#[test]
fn an_approval_expires() {
    let hub = Hub::new();
    let paused = hub.execute(r#"await chat.post({ text: "hi" })"#);
    hub.clock.advance(hub.limits.approval_ttl_ms);
    let expired = hub.resume(&paused.run_id);
    expect!["failed approval_expired: nobody decided the pending call in time"].assert_eq(&render(&expired));
    assert_eq!(error_code(&hub.resume(&paused.run_id)), "approval_expired");
    assert_eq!(hub.upstream.count(), 0);
}

#[test]
fn pending_previews_redact_sensitive_arguments() {
    let hub = Hub::new();
    let paused = hub.execute(r#"await chat.post({ text: "hi", apiKey: "abc123" })"#);
    expect![[r#"
        {
          "text": "hi",
          "apiKey": "[redacted]"
        }"#]]
    .assert_eq(&hub.run(&paused.run_id).pending[0].preview);
}

#[test]
fn cancel_ends_a_waiting_run_for_good() {
    let hub = Hub::new();
    let paused = hub.execute(READ_THEN_WRITE);
    let cancelled = hub.cancel(&paused.run_id);
    expect![[r#"
        {
          "runId": "run_157d487cbd7c3199",
          "status": "cancelled",
          "error": {
            "code": "cancelled",
            "message": "the run was cancelled"
          },
          "calls": [
            {
              "address": "notes.list",
              "ok": true,
              "ms": 0
            }
          ]
        }"#]]
    .assert_eq(&pretty(&cancelled));
    assert_eq!(hub.resume(&paused.run_id), cancelled);
    assert_eq!(hub.resume(&paused.run_id), cancelled);
    assert_eq!(hub.cancel(&paused.run_id), cancelled);
    assert_eq!(hub.upstream.count(), 1);
    assert_eq!(hub.run(&paused.run_id).attempts, 1);
}

#[test]
fn parallel_writes_wait_together_and_resume_only_when_all_are_decided() {
    let hub = Hub::new();
    let paused = hub.execute(
        r#"const [a, b] = await Promise.all([chat.post({ text: "a" }), notes.add({ text: "b" })]);
           return [a.echo.text, b.echo.text]"#,
    );
    let ids: Vec<(&str, PendingKind)> = paused.pending.iter().map(|p| (p.address.as_str(), p.kind)).collect();
    assert_eq!(ids, [("chat.post", PendingKind::Approval), ("notes.add", PendingKind::Approval)]);
    hub.decide_id(&paused.run_id, &paused.pending[0].id, Choice::Once);
    // One decision of two: resume still waits, with the same ids, and makes no call.
    let waiting = hub.resume(&paused.run_id);
    assert_eq!(waiting, paused);
    assert_eq!(hub.upstream.count(), 0);
    hub.decide_id(&paused.run_id, &paused.pending[1].id, Choice::Once);
    expect![[r#"completed ["a","b"]"#]].assert_eq(&render(&hub.resume(&paused.run_id)));
    assert_eq!(hub.upstream.count(), 2);
}

#[test]
fn a_decision_is_refused_once_the_run_moved_on() {
    let hub = Hub::new();
    let paused = hub.execute(r#"await chat.post({ text: "a" }); return 1"#);
    hub.decide(&paused, Choice::Once);
    let mut run = hub.run(&paused.run_id);
    let again = capabilities_core::approval::record_decision(
        &mut run,
        &paused.pending[0].id,
        Choice::Deny,
        capabilities_core::approval::Channel::Page,
        0,
    );
    expect![[r#"
        Err(
            AlreadyDecided(
                "p_3f75dd7e2868",
            ),
        )
    "#]]
    .assert_debug_eq(&again);
    hub.resume(&paused.run_id);
    let mut run = hub.run(&paused.run_id);
    let late = capabilities_core::approval::record_decision(
        &mut run,
        &paused.pending[0].id,
        Choice::Deny,
        capabilities_core::approval::Channel::Page,
        0,
    );
    assert!(late.is_err(), "{late:?}");
    assert_eq!(hub.upstream.count(), 1);
}

#[test]
fn always_covers_the_rest_of_the_run_and_asks_the_host_for_a_rule() {
    let hub = Hub::new();
    let paused =
        hub.execute(r#"for (let i = 0; i < 3; i++) await chat.post({ text: `m${i}` }); return "sent""#);
    let mut run = hub.run(&paused.run_id);
    let rule = capabilities_core::approval::record_decision(
        &mut run,
        &paused.pending[0].id,
        Choice::Always,
        capabilities_core::approval::Channel::Cli,
        0,
    )
    .unwrap()
    .expect("a rule to persist");
    assert_eq!(rule.address, "chat.post");
    hub.store.put_run(run);
    // Even before the host's policy holds the new rule, the run goes on without asking again.
    expect![[r#"completed "sent""#]].assert_eq(&render(&hub.resume(&paused.run_id)));
    assert_eq!(hub.upstream.count(), 3);
}

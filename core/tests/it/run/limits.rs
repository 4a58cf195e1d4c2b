//! Limits and failures: each ends the run with its own error code and a hint, never a panic,
//! and the envelope stays within the inline budget.

use std::sync::atomic::Ordering;

use capabilities_core::limits::Limits;
use expect_test::expect;

use super::{Hub, Setup, outcome, pretty};

#[test]
fn max_calls_stops_a_loop() {
    let hub = Hub::with(Setup { limits: Limits { max_calls: 3, ..Limits::DEFAULT }, ..Setup::default() });
    let envelope = hub.execute("for (let i = 0; i < 5; i++) await notes.list({ i }); return 'all'");
    expect![[r#"
        {
          "code": "max_calls",
          "message": "the run made more than 3 tool calls",
          "hint": "do the work in batches over several execute calls"
        }"#]]
    .assert_eq(&serde_json::to_string_pretty(&envelope.error).unwrap());
    assert_eq!(hub.upstream.count(), 3);
}

#[test]
fn max_calls_counts_live_calls_over_all_attempts_not_replays() {
    let limits = Limits { max_calls: 3, ..Limits::DEFAULT };
    let run = |code: &str| {
        let hub = Hub::with(Setup { limits, ..Setup::default() });
        let paused = hub.execute(code);
        hub.decide(&paused, capabilities_core::approval::Choice::Once);
        let done = hub.resume(&paused.run_id);
        format!("{} live={}", super::render(&done), hub.run(&paused.run_id).live_calls)
    };
    // The first read is replayed on resume: three live calls in all, within the limit.
    expect![[r#"completed "done" live=3"#]].assert_eq(&run(
        "await notes.list({ i: 0 }); await chat.post({}); await notes.list({ i: 1 }); return 'done'",
    ));
    // Two reads before the pause count in the second attempt too.
    expect![["failed max_calls: the run made more than 3 tool calls live=3"]]
        .assert_eq(&run("await notes.list({ i: 0 }); await notes.list({ i: 1 }); await chat.post({}); \
         await notes.list({ i: 2 }); return 'done'"));
}

#[test]
fn max_concurrent_holds_calls_in_flight() {
    let hub = Hub::with(Setup {
        limits: Limits { max_concurrent: 2, ..Limits::DEFAULT },
        delay_polls: 5,
        ..Setup::default()
    });
    let envelope = hub.execute(
        "const all = await Promise.all(Array.from({ length: 10 }, (_, i) => notes.list({ i }))); \
         return all.map((r) => r.echo.i)",
    );
    expect!["completed [0,1,2,3,4,5,6,7,8,9]"].assert_eq(&super::render(&envelope));
    assert_eq!(hub.upstream.count(), 10);
    assert_eq!(hub.upstream.max_in_flight.load(Ordering::SeqCst), 2);
}

#[test]
fn calls_overlap_up_to_the_default_limit() {
    let hub = Hub::with(Setup { delay_polls: 5, ..Setup::default() });
    hub.execute("await Promise.all(Array.from({ length: 20 }, (_, i) => notes.list({ i })))");
    assert_eq!(hub.upstream.max_in_flight.load(Ordering::SeqCst), Limits::DEFAULT.max_concurrent);
}

#[test]
fn errors_have_codes() {
    let hub = Hub::with(Setup { limits: Limits { compute_ms: 50, ..Limits::DEFAULT }, ..Setup::default() });
    let cases = [
        "while (true) {}",
        "throw 'a plain string'",
        "throw { code: 'mine' }",
        "throw new RangeError('too far')",
        "return () => 1",
        "return 10n",
        "const a = {}; a.self = a; return a",
        "await new Promise(() => {})",
        "return (",
        "let x = 1;\nlet x = 2;",
        "return undefined",
    ];
    let out: String = cases.iter().map(|code| format!("{code:?}\n  => {}\n", outcome(&hub, code))).collect();
    expect![[r#"
        "while (true) {}"
          => failed compute_limit: the code ran for more than 50 ms of compute
        "throw 'a plain string'"
          => failed uncaught_error: Thrown: a plain string
        "throw { code: 'mine' }"
          => failed uncaught_error: Thrown: { code: "mine" }
        "throw new RangeError('too far')"
          => failed uncaught_error: RangeError: too far (line 1)
        "return () => 1"
          => failed result_not_serializable: the returned value cannot be sent back as JSON: the result holds a function at result: send data, not code
        "return 10n"
          => failed result_not_serializable: the returned value cannot be sent back as JSON: the result holds a BigInt at result: convert it with Number(x) or String(x)
        "const a = {}; a.self = a; return a"
          => failed result_not_serializable: the returned value cannot be sent back as JSON: the result holds a cycle at result.self: it refers back to result
        "await new Promise(() => {})"
          => failed stalled: the code waits on a promise that can never settle
        "return ("
          => failed syntax_error: syntax error: expected `)` but found `EOF` (line 1, column 9)
        "let x = 1;\nlet x = 2;"
          => failed syntax_error: syntax error: identifier `x` has already been declared (line 2, column 5)
        "return undefined"
          => completed
    "#]].assert_eq(&out);
    assert_eq!(hub.upstream.count(), 0);
}

#[test]
fn a_syntax_error_names_line_and_column() {
    let hub = Hub::new();
    let envelope = hub.execute("const a = 1;\nconst b = ;\nreturn a");
    expect![[r#"
        {
          "runId": "run_157d487cbd7c3199",
          "status": "failed",
          "error": {
            "code": "syntax_error",
            "message": "syntax error: unexpected token (line 2, column 11)",
            "hint": "execute takes the body of an async function: statements, `await`, and a final `return`"
          },
          "calls": []
        }"#]]
    .assert_eq(&pretty(&envelope));
}

#[test]
fn result_and_logs_fit_the_inline_budget() {
    let hub = Hub::new();
    let envelope = hub.execute(
        "for (let i = 0; i < 40; i++) console.log(`line ${i} ` + 'x'.repeat(1000)); \
         return { text: 'y'.repeat(30000) }",
    );
    let truncated = envelope.truncated.clone().expect("something was cut");
    assert!(truncated.result && truncated.logs, "{truncated:?}");
    let line = envelope.to_line();
    assert!(line.len() <= 26 * 1024, "{}", line.len());
    let result = envelope.result.as_ref().and_then(|r| r.as_str()).unwrap();
    assert!(result.contains("of 30011 bytes; the whole is handle h_"), "{}", &result[result.len() - 160..]);
    let kinds: Vec<&str> = envelope.handles.iter().map(|h| h.kind.as_str()).collect();
    assert_eq!(kinds, ["result", "logs"]);
}

#[test]
fn logs_alone_over_budget_are_cut_and_marked() {
    let hub = Hub::new();
    let envelope = hub.execute("for (let i = 0; i < 100; i++) console.log('z'.repeat(500)); return 1");
    let truncated = envelope.truncated.clone().expect("logs were cut");
    assert!(truncated.logs && !truncated.result, "{truncated:?}");
    assert_eq!(envelope.result, Some(serde_json::json!(1)));
    assert!(envelope.to_line().len() <= 26 * 1024);
}

#[test]
fn a_small_result_is_not_marked() {
    let hub = Hub::new();
    let envelope = hub.execute("console.log('hello', { a: 1 }); return 'ok'");
    assert_eq!(envelope.truncated, None);
    assert_eq!(envelope.logs, ["hello { a: 1 }"]);
}

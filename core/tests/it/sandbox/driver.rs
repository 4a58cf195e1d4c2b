//! The driver: how attempts end, how calls cross the bridge, budgets and meters.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use capabilities_core::sandbox::quickjs::{ComputeMeter, QuickJs};
use capabilities_core::sandbox::{AttemptEnd, Cancel, GuestReply, LimitKind};
use expect_test::expect;
use serde_json::json;

use super::{FakeBridge, attempt, check, check_with, driver, failure, render, run, run_on};

#[test]
fn returns_values_as_json() {
    check("return 1", expect!["completed 1"]);
    check(
        "return { a: [1, 'two', null, true], b: { c: 1.5 } }",
        expect![[r#"completed {"a":[1,"two",null,true],"b":{"c":1.5}}"#]],
    );
    check("const x = 1;", expect!["completed undefined"]);
    check("return undefined", expect!["completed undefined"]);
}

#[test]
fn reports_syntax_errors_and_uncaught_exceptions() {
    check("return (", expect!["threw SyntaxError: unexpected token in expression: '}'"]);
    check("throw new Error('boom')", expect!["threw Error: boom"]);
    check("throw new TypeError('bad type')", expect!["threw TypeError: bad type"]);
    check("throw 42", expect!["threw Thrown: 42"]);
    check("throw null", expect!["threw Thrown: null"]);
    check("throw 'plain text'", expect!["threw Thrown: plain text"]);
    check("throw { reason: 'object' }", expect![[r#"threw Thrown: { reason: "object" }"#]]);
    check("null.x", expect!["threw TypeError: cannot read property 'x' of null"]);
}

#[test]
fn stack_lines_point_into_the_code_not_the_prelude() {
    let report = run("\nconst f = () => { throw new Error('deep') };\nf();");
    let AttemptEnd::Threw(error) = report.end else { panic!("expected a throw, got {:?}", report.end) };
    let stack = error.stack.unwrap_or_default();
    assert!(stack.contains("code.js:2"), "{stack}");
    let report = run("github.nope()");
    let AttemptEnd::Threw(error) = report.end else { panic!("expected a throw, got {:?}", report.end) };
    let stack = error.stack.unwrap_or_default();
    assert!(!stack.contains("prelude") && !stack.contains("<null>"), "{stack}");
}

#[test]
fn bridge_receives_arguments_and_options_as_json() {
    check(
        "return await github.searchIssues({ q: 'is:open', perPage: 5, nested: { list: [1, 'x'] } }, { connection: 'work' })",
        expect![[r#"
            completed {"tool":"github.searchIssues","args":{"q":"is:open","perPage":5,"nested":{"list":[1,"x"]}}}
            call 0 github.searchIssues {"q":"is:open","perPage":5,"nested":{"list":[1,"x"]}} {"connection":"work"}"#]],
    );
    check(
        "return await memory.readGraph()",
        expect![[r#"
        completed {"tool":"memory.readGraph","args":{}}
        call 0 memory.readGraph {} {}"#]],
    );
    check(
        "return await github.getIssue({ when: new Date(0), gone: undefined, nan: NaN })",
        expect![[r#"
        completed {"tool":"github.getIssue","args":{"when":"1970-01-01T00:00:00.000Z","nan":null}}
        call 0 github.getIssue {"when":"1970-01-01T00:00:00.000Z","nan":null} {}"#]],
    );
}

#[test]
fn arguments_are_serialised_when_the_call_is_made() {
    check(
        "const args = { q: 'first', list: [1] };
         const pending = github.searchIssues(args);
         args.q = 'changed'; args.list.push(2);
         return (await pending).args",
        expect![[r#"
            completed {"q":"first","list":[1]}
            call 0 github.searchIssues {"q":"first","list":[1]} {}"#]],
    );
}

#[test]
fn non_json_arguments_are_a_type_error_in_the_guest() {
    check(
        "const out = [];
         const bad = [
           { id: 10n },
           { f() {} },
           { s: Symbol('x') },
           { m: new Map() },
           (() => { const a = {}; a.self = a; return a })(),
           { bytes: new Uint8Array(2) },
         ];
         for (const args of bad) {
           try { await github.searchIssues(args) } catch (e) { out.push(e.name + ': ' + e.message) }
         }
         try { await github.searchIssues({}, { connection: () => 1 }) } catch (e) { out.push(e.message) }
         return out",
        expect![[
            r#"completed ["TypeError: tool arguments hold a BigInt at args.id: convert it with Number(x) or String(x)","TypeError: tool arguments hold a function at args.f: send data, not code","TypeError: tool arguments hold a symbol at args.s: send its description instead","TypeError: tool arguments hold a Map at args.m: turn it into an object with Object.fromEntries(map) or an array with [...map]","TypeError: tool arguments hold a cycle at args.self: it refers back to args","TypeError: tool arguments hold a Uint8Array at args.bytes: turn it into an array with Array.from(x)","call options hold a function at options.connection: send data, not code"]"#
        ]],
    );
}

/// Serialising arguments can run guest code (a `toJSON`, a getter) that starts another call
/// mid-walk; each walk keeps its own output, paths and cycle checks.
#[test]
fn a_tool_call_made_while_arguments_serialise_keeps_both_walks_apart() {
    check(
        "let inner;
         class Later { toJSON() { inner = github.getIssue({ nested: [true, { deep: 'x' }] }); return { replaced: 1 } } }
         class Bad { toJSON() { github.getIssue({ ok: 1 }); return { f() {} } } }
         const outer = { a: [1, new String('boxed'), new Number(2), new Date(0)], later: new Later(), z: 'last' };
         const first = await github.searchIssues(outer);
         const second = await inner;
         const errors = [];
         try { await github.searchIssues({ list: [0, new Bad()] }) } catch (e) { errors.push(e.message) }
         class InnerBad { toJSON() { github.getIssue({ g() {} }).catch(e => errors.push('inner: ' + e.message)); return 'kept' } }
         const third = await github.searchIssues([{ x: new InnerBad() }, 'after']);
         errors.push(third.args);
         return [first.args, second.args, errors]",
        expect![[r#"
            completed [{"a":[1,"boxed",2,"1970-01-01T00:00:00.000Z"],"later":{"replaced":1},"z":"last"},{"nested":[true,{"deep":"x"}]},["tool arguments hold a function at args.list[1].f: send data, not code","inner: tool arguments hold a function at args.g: send data, not code",[{"x":"kept"},"after"]]]
            call 0 github.getIssue {"nested":[true,{"deep":"x"}]} {}
            call 1 github.searchIssues {"a":[1,"boxed",2,"1970-01-01T00:00:00.000Z"],"later":{"replaced":1},"z":"last"} {}
            call 2 github.getIssue {"ok":1} {}
            call 3 github.searchIssues [{"x":"kept"},"after"] {}"#]],
    );
}

#[test]
fn tool_failures_reject_with_tool_errors() {
    let bridge = FakeBridge::new(|call| {
        let mut f = failure("policy_denied", &format!("{} is denied by policy", call.address));
        f.hint = Some("ask the user to allow it".into());
        f.status = Some(403);
        (0, GuestReply::Err(f))
    });
    check_with(
        bridge,
        "try { await github.createIssue({ title: 'x' }) } catch (e) {
           return [e instanceof ToolError, e instanceof Error, e.name, e.code, e.address, e.status, e.hint, e.retryable, e.message]
         }",
        expect![[r#"
            completed [true,true,"ToolError","policy_denied","github.createIssue",403,"ask the user to allow it",false,"github.createIssue is denied by policy"]
            call 0 github.createIssue {"title":"x"} {}"#]],
    );
    let bridge = FakeBridge::new(|_| (0, GuestReply::Err(failure("upstream_error", "the server said no"))));
    check_with(
        bridge,
        "await github.createIssue({})",
        expect![[r#"
        threw ToolError [upstream_error]: the server said no
        call 0 github.createIssue {} {}"#]],
    );
}

#[test]
fn concurrent_calls_are_all_in_flight_together() {
    let bridge = FakeBridge::echo();
    let report = run_on(
        &driver(),
        attempt(
            "const results = await Promise.all(Array.from({ length: 20 }, (_, i) => github.getIssue({ number: i })));
             return results.map((r) => r.args.number)",
        ),
        &bridge,
    );
    expect!["Completed(Some(Array [Number(0), Number(1), Number(2), Number(3), Number(4), Number(5), Number(6), Number(7), Number(8), Number(9), Number(10), Number(11), Number(12), Number(13), Number(14), Number(15), Number(16), Number(17), Number(18), Number(19)]))"].assert_eq(&format!("{:?}", report.end));
    assert_eq!(bridge.max_in_flight.get(), 20);
    assert_eq!(report.calls_issued, 20);
    let seqs: Vec<u32> = bridge.calls.borrow().iter().map(|c| c.seq).collect();
    assert_eq!(seqs, (0..20).collect::<Vec<_>>());
}

#[test]
fn answers_arriving_together_are_delivered_in_call_order() {
    // Later calls answer sooner; the guest still sees answers in the order it asked when they
    // arrive in the same turn.
    let bridge = FakeBridge::new(|call| (3 - call.seq as usize % 3, GuestReply::Ok(json!(call.seq))));
    check_with(
        bridge,
        "const order = [];
         await Promise.all([0, 1, 2].map((i) => github.getIssue({ i }).then((v) => order.push(v))));
         return order",
        expect![[r#"
            completed [0,1,2]
            call 0 github.getIssue {"i":0} {}
            call 1 github.getIssue {"i":1} {}
            call 2 github.getIssue {"i":2} {}"#]],
    );
}

#[test]
fn suspend_lets_calls_in_flight_settle_and_delivers_nothing() {
    // Call 0 is slow and succeeds; call 1 must wait for a person.
    let bridge = FakeBridge::new(|call| match call.seq {
        0 => (5, GuestReply::Ok(json!("slow"))),
        _ => (0, GuestReply::Suspend),
    });
    let report = run_on(
        &driver(),
        attempt(
            "const a = github.searchIssues({ q: 'slow' });
             const b = github.createIssue({ title: 'needs approval' });
             try { await b } catch (e) { console.log('delivered', e) }
             console.log('after', await a);
             return 'done'",
        ),
        &bridge,
    );
    expect![[r#"
        Suspended
        call 0 github.searchIssues {"q":"slow"} {}
        call 1 github.createIssue {"title":"needs approval"} {}"#]]
    .assert_eq(&render(&report, &bridge));
    assert_eq!(*bridge.completed.borrow(), [1, 0], "both futures ran to completion");
}

#[test]
fn calls_made_just_before_returning_still_go_out() {
    let bridge = FakeBridge::echo();
    check_with(
        bridge,
        "github.createIssue({ title: 'fire and forget' }); return 'returned'",
        expect![[r#"
        completed "returned"
        call 0 github.createIssue {"title":"fire and forget"} {}"#]],
    );
    let bridge = FakeBridge::new(|_| (1, GuestReply::Suspend));
    check_with(
        bridge,
        "github.createIssue({ title: 'needs approval' }); return 'returned'",
        expect![[r#"
        Suspended
        call 0 github.createIssue {"title":"needs approval"} {}"#]],
    );
}

#[test]
fn code_that_awaits_nothing_that_can_settle_stalls() {
    check("await new Promise(() => {})", expect!["Stalled"]);
    check(
        "const p = Array.from({ length: 100000 }, () => new Promise(() => {})); await Promise.all(p)",
        expect!["Limit(Memory)"],
    );
    check(
        "for (let i = 0; i < 100000; i++) new Promise((r) => r(i)).then(() => {}); return 'many promises settled'",
        expect!["Limit(Memory)"],
    );
}

fn limited(body: &str, compute_ms: u64) -> AttemptEnd {
    let mut a = attempt(body);
    a.limits.compute_ms = compute_ms;
    run_on(&driver(), a, &FakeBridge::echo()).end
}

#[test]
fn compute_runs_out_in_loops_of_every_kind() {
    for body in [
        "while (true) {}",
        "for (;;) { try { while (true) {} } catch {} finally { continue } }",
        "const spin = () => { Promise.resolve().then(spin) }; spin(); await new Promise(() => {})",
        "while (true) { await null }",
        "await github.searchIssues({}); while (true) {}",
        "setTimeout(() => { while (true) {} }, 10); await new Promise(() => {})",
        "const tick = () => setTimeout(tick, 0); tick(); await new Promise(() => {})",
        "await github.searchIssues({ get q() { while (true) {} } })",
        "return { get x() { while (true) {} } }",
        "class E extends Error { get message() { while (true) {} } }; throw new E()",
    ] {
        assert_eq!(limited(body, 200), AttemptEnd::Limit(LimitKind::Compute), "{body}");
    }
}

#[test]
fn compute_time_stands_still_while_calls_are_in_flight() {
    // A fake clock that jumps a minute on every bridge call: wall time passes, guest time
    // does not.
    let now = Arc::new(AtomicU64::new(0));
    let clock = Arc::clone(&now);
    let meter = ComputeMeter::clock(move || clock.load(Ordering::Relaxed));
    let advance = Arc::clone(&now);
    let bridge = FakeBridge::new(move |_| {
        advance.fetch_add(60_000_000, Ordering::Relaxed);
        (1, GuestReply::Ok(json!(null)))
    });
    let mut a = attempt("for (let i = 0; i < 5; i++) await github.getIssue({ i }); return 'done'");
    a.limits.compute_ms = 1_000;
    a.limits.wall_ms = 1_000_000;
    let report = run_on(&QuickJs::new(meter), a, &bridge);
    assert_eq!(report.end, AttemptEnd::Completed(Some(json!("done"))));
}

#[test]
fn wall_time_runs_out_across_calls() {
    let now = Arc::new(AtomicU64::new(0));
    let clock = Arc::clone(&now);
    let meter = ComputeMeter::clock(move || clock.load(Ordering::Relaxed));
    let advance = Arc::clone(&now);
    let bridge = FakeBridge::new(move |_| {
        advance.fetch_add(10_000_000, Ordering::Relaxed);
        (1, GuestReply::Ok(json!(null)))
    });
    let mut a = attempt("for (let i = 0; i < 5; i++) await github.getIssue({ i }); return 'done'");
    a.limits.wall_ms = 25_000;
    let report = run_on(&QuickJs::new(meter), a, &bridge);
    assert_eq!(report.end, AttemptEnd::Limit(LimitKind::Wall));
    assert_eq!(report.calls_issued, 3);
}

#[test]
fn a_tick_meter_stops_loops_without_a_clock() {
    let mut a = attempt("while (true) {}");
    a.limits.compute_ms = 50;
    let report = run_on(&QuickJs::new(ComputeMeter::ticks(1_000)), a, &FakeBridge::echo());
    assert_eq!(report.end, AttemptEnd::Limit(LimitKind::Compute));
    let report = run_on(&QuickJs::new(ComputeMeter::ticks(1_000)), attempt("return 2"), &FakeBridge::echo());
    assert_eq!(report.end, AttemptEnd::Completed(Some(json!(2))));
}

#[test]
fn the_cancel_flag_stops_the_attempt() {
    let cancel = Arc::new(Cancel::default());
    let quickjs = QuickJs::with_cancel(ComputeMeter::ticks(1), Arc::clone(&cancel));
    let flag = Arc::clone(&cancel);
    let bridge = FakeBridge::new(move |_| {
        flag.cancel();
        (1, GuestReply::Ok(json!(null)))
    });
    let report = run_on(&quickjs, attempt("await github.getIssue({}); while (true) {}"), &bridge);
    assert_eq!(report.end, AttemptEnd::Cancelled);
    // Still set: the next attempt stops at once.
    let report = run_on(&quickjs, attempt("while (true) {}"), &FakeBridge::echo());
    assert_eq!(report.end, AttemptEnd::Cancelled);
    cancel.clear();
    let report = run_on(&quickjs, attempt("return 'runs again'"), &FakeBridge::echo());
    assert_eq!(report.end, AttemptEnd::Completed(Some(json!("runs again"))));
}

#[test]
fn results_that_are_not_json_are_refused_with_a_path() {
    check(
        "return { items: [{ ok: 1 }, { fn() {} }] }",
        expect![[
            r#"Unserializable("the result holds a function at result.items[1].fn: send data, not code")"#
        ]],
    );
    check(
        "const a = { b: {} }; a.b.c = a; return a",
        expect![[r#"Unserializable("the result holds a cycle at result.b.c: it refers back to result")"#]],
    );
    // A cycle back to an object in the middle of the path names that object's own path.
    check(
        "const a = { list: [0, { b: {} }] }; a.list[1].b.c = a.list[1]; return a",
        expect![[
            r#"Unserializable("the result holds a cycle at result.list[1].b.c: it refers back to result.list[1]")"#
        ]],
    );
    check(
        "class Odd { toJSON() { return new Map() } } return { 'a b': [{ x: new Odd() }] }",
        expect![[
            r#"Unserializable("the result holds an object whose toJSON returned another class instance at result[\"a b\"][0].x: return plain data from toJSON")"#
        ]],
    );
    // Member names are quoted the same way the first time and when kept from an earlier walk.
    check(
        r#"const row = () => ({ ['__proto__']: 1, 'q"x': true, '0': null, '\ud800': -0, n: NaN, s: 's', u: undefined });
           return [row(), row()]"#,
        expect![[
            r#"completed [{"0":null,"__proto__":1,"q\"x":true,"�":0,"n":null,"s":"s"},{"0":null,"__proto__":1,"q\"x":true,"�":0,"n":null,"s":"s"}]"#
        ]],
    );
    check(
        "return { id: 1n }",
        expect![[
            r#"Unserializable("the result holds a BigInt at result.id: convert it with Number(x) or String(x)")"#
        ]],
    );
    check(
        "return [Symbol('s')]",
        expect![[
            r#"Unserializable("the result holds a symbol at result[0]: send its description instead")"#
        ]],
    );
    check(
        "return { byOwner: new Map([['a', 1]]) }",
        expect![[
            r#"Unserializable("the result holds a Map at result.byOwner: turn it into an object with Object.fromEntries(map) or an array with [...map]")"#
        ]],
    );
    check(
        "return new Set([1])",
        expect![[
            r#"Unserializable("the result holds a Set at result: turn it into an array with [...set]")"#
        ]],
    );
    check(
        "return { 'odd key': { list: [new Uint8Array(1)] } }",
        expect![[
            r#"Unserializable("the result holds a Uint8Array at result[\"odd key\"].list[0]: turn it into an array with Array.from(x)")"#
        ]],
    );
    check(
        "return github",
        expect![[
            r#"Unserializable("the result holds a function at result.searchIssues: send data, not code")"#
        ]],
    );
    check("return Promise.resolve(1).then((x) => x + 1)", expect!["completed 2"]);
    check(
        "return { p: Promise.resolve(1) }",
        expect![[r#"Unserializable("the result holds a Promise at result.p: await it first")"#]],
    );
}

#[test]
fn results_follow_json_where_json_is_clear() {
    check(
        "return { when: new Date(0), bad: new Date(NaN), gone: undefined, list: [undefined, NaN, -0, Infinity], s: new String('boxed') }",
        expect![[
            r#"completed {"when":"1970-01-01T00:00:00.000Z","bad":null,"list":[null,null,0,null],"s":"boxed"}"#
        ]],
    );
    check(
        "class Money { constructor(n) { this.n = n } toJSON() { return { amount: this.n, currency: 'EUR' } } }
         return [new Money(5)]",
        expect![[r#"completed [{"amount":5,"currency":"EUR"}]"#]],
    );
    check(
        "class Point { constructor() { this.x = 1; this.y = 2 } }; return new Point()",
        expect![[r#"completed {"x":1,"y":2}"#]],
    );
    check(
        "const e = new TypeError('bad'); e.code = 'E1'; return { e }",
        expect![[r#"completed {"e":{"name":"TypeError","message":"bad","code":"E1"}}"#]],
    );
    check("return 'lone \\ud800 surrogate'", expect![[r#"completed "lone � surrogate""#]]);
    // Strings and numbers the quick paths and the general one each take.
    check(
        r#"return ['plain', 'quote " in', 'back \\ slash', 'tab \t nl \n', 'nul \u0000', 'del \u007f',
                  'ls \u2028', 'pair \ud83d\udc4b', 'lone \ud800 x', 'low \udc00', '',
                  -0, 1e21, 5e-7, 0.1 + 0.2, 2 ** 53, -1.5, NaN, { 'key "q"': 'v', 'k\n': 1, e: '' }]"#,
        expect![[
            r#"completed ["plain","quote \" in","back \\ slash","tab \t nl \n","nul \u0000","del ","ls  ","pair 👋","lone � x","low �","",0,1e+21,5e-7,0.30000000000000004,9007199254740992,-1.5,null,{"key \"q\"":"v","k\n":1,"e":""}]"#
        ]],
    );
    check(
        "return Object.create(null, { visible: { value: 1, enumerable: true }, hidden: { value: 2 } })",
        expect![[r#"completed {"visible":1}"#]],
    );
}

#[test]
fn huge_results_are_refused_early() {
    // Past 64 Mi characters of JSON (the cap under handles), before the whole text is built.
    let mut a = attempt("return 'x'.repeat(100 * 1024 * 1024)");
    a.limits.memory_bytes = 512 * 1024 * 1024;
    let report = run_on(&driver(), a, &FakeBridge::echo());
    expect![[r#"Unserializable("the result is larger than 67108864 bytes as JSON")"#]]
        .assert_eq(&format!("{:?}", report.end));
    let mut a = attempt("const s = 'x'.repeat(30000); return Array.from({ length: 3000 }, () => s)");
    a.limits.memory_bytes = 512 * 1024 * 1024;
    let report = run_on(&driver(), a, &FakeBridge::echo());
    expect![[r#"Unserializable("the result is larger than 67108864 bytes as JSON")"#]]
        .assert_eq(&format!("{:?}", report.end));
}

#[test]
fn the_calls_issued_count_matches_the_bridge() {
    let report = run("for (let i = 0; i < 3; i++) await github.getIssue({ i });
         await hub.search('issues');
         return 1");
    assert_eq!(report.calls_issued, 3);
}

fn json_value() -> impl proptest::strategy::Strategy<Value = serde_json::Value> {
    use proptest::prelude::*;
    let leaf = prop_oneof![
        Just(json!(null)),
        any::<bool>().prop_map(|b| json!(b)),
        any::<i32>().prop_map(|n| json!(n)),
        // Never a whole number: JavaScript would hand `-424.0` back as the integer `-424`.
        (-1_000_000i64..1_000_000).prop_map(|n| json!((n as f64 + 0.5) / 1000.0)),
        any::<String>().prop_map(|s| json!(s)),
        Just(json!("__proto__")),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 0..6).prop_map(serde_json::Value::Array),
            proptest::collection::vec(
                (prop_oneof![any::<String>(), Just("__proto__".to_owned())], inner),
                0..6
            )
            .prop_map(|entries| serde_json::Value::Object(entries.into_iter().collect())),
        ]
    })
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]

    /// Any JSON survives the bridge both ways: a tool's answer reaches the guest intact, and
    /// the guest can send it on as arguments and return it unchanged.
    #[test]
    fn json_crosses_the_bridge_unchanged(value in json_value()) {
        let answer = value.clone();
        let bridge = FakeBridge::new(move |call| match call.seq {
            0 => (0, GuestReply::Ok(answer.clone())),
            _ => (0, GuestReply::Ok(json!(null))),
        });
        let report = run_on(
            &driver(),
            attempt("const v = await github.getIssue({}); await github.searchIssues(v); return v"),
            &bridge,
        );
        proptest::prop_assert_eq!(report.end, AttemptEnd::Completed(Some(value.clone())));
        let sent = bridge.calls.borrow()[1].args.clone();
        proptest::prop_assert_eq!(sent, value);
    }
}

//! Arguments and results the host reads straight from the guest's values
//! (`sandbox/quickjs/plain.rs`) against the same sent as text by the prelude's serializer: the host
//! must see the same JSON, and must never run guest code to read them.

use capabilities_core::sandbox::AttemptEnd;
use expect_test::expect;

use super::{FakeBridge, attempt, check, driver, render, run_on};

/// Each value sent twice: as plain data (read by the host), then under an object whose
/// prototype is its own, which only the serializer takes.
const VALUES: &[&str] = &[
    "'plain'",
    "''",
    "'é and 😀'",
    r#"'quote " backslash \\ newline \n nul \u0000 del \u007f'"#,
    r"'lone \ud800 surrogate'",
    "0",
    "-0",
    "1",
    "-1",
    "2 ** 31",
    "-(2 ** 31) - 1",
    "2 ** 53",
    "-(2 ** 53)",
    "2 ** 53 + 2",
    "2 ** 64",
    "1e21",
    "1.5",
    "0.1",
    "-2.5e-7",
    "Number.MAX_VALUE",
    "Number.MIN_VALUE",
    "NaN",
    "Infinity",
    "-Infinity",
    "true",
    "false",
    "null",
    "undefined",
    "[]",
    "{}",
    "[1, 'a', null, undefined, true, -0, NaN]",
    "[1, , 3]",
    "{ a: undefined, b: 1 }",
    "{ 2: 'two', 1: 'one', b: 'b', a: 'a' }",
    r#"JSON.parse('{"__proto__": 1, "x": [1]}')"#,
    "Object.assign(Object.create(null), { n: 1 })",
    "Object.defineProperty({ shown: 1 }, 'hidden', { value: 2, enumerable: false })",
    "{ [Symbol('s')]: 1, t: 2 }",
    "Object.assign([1, 2], { extra: 3 })",
    "{ get g() { return 'got' } }",
    "new Date(0)",
    "new String('boxed')",
    "{ nested: { deeper: { list: [[1], [2, [3]]] } } }",
    "(() => { let o = 1; for (let i = 0; i < 40; i++) o = { o }; return o })()",
    "'x'.repeat(10000)",
    "Array.from({ length: 1000 }, (_, i) => ({ i, s: String(i) }))",
];

#[test]
fn plain_arguments_reach_the_host_as_the_serializer_sends_them() {
    let mut shown = String::new();
    for value in VALUES {
        let body = format!(
            "const v = {value};
             const general = Object.assign(Object.create(Object.create(Object.prototype)), {{ x: v }});
             await github.getIssue({{ x: v }}, {{ why: [v] }});
             await github.getIssue(general, Object.assign(Object.create(Object.create(null)), {{ why: [v] }}));
             return 1"
        );
        let bridge = FakeBridge::echo();
        let report = run_on(&driver(), attempt(&body), &bridge);
        assert_eq!(
            report.end,
            AttemptEnd::Completed(Some(serde_json::json!(1))),
            "{value}: {}",
            render(&report, &bridge)
        );
        let calls = bridge.calls.borrow();
        assert_eq!(calls[0].args, calls[1].args, "{value}: the arguments differ");
        assert_eq!(calls[0].options, calls[1].options, "{value}: the options differ");
        let text = calls[0].args.to_string();
        if text.len() < 80 {
            shown.push_str(&format!("{value} → {text}\n"));
        }
    }
    expect![[r#"
        'plain' → {"x":"plain"}
        '' → {"x":""}
        'é and 😀' → {"x":"é and 😀"}
        'quote " backslash \\ newline \n nul \u0000 del \u007f' → {"x":"quote \" backslash \\ newline \n nul \u0000 del "}
        'lone \ud800 surrogate' → {"x":"lone � surrogate"}
        0 → {"x":0}
        -0 → {"x":0}
        1 → {"x":1}
        -1 → {"x":-1}
        2 ** 31 → {"x":2147483648}
        -(2 ** 31) - 1 → {"x":-2147483649}
        2 ** 53 → {"x":9007199254740992}
        -(2 ** 53) → {"x":-9007199254740992}
        2 ** 53 + 2 → {"x":9007199254740994}
        2 ** 64 → {"x":1.8446744073709552e+19}
        1e21 → {"x":1e+21}
        1.5 → {"x":1.5}
        0.1 → {"x":0.1}
        -2.5e-7 → {"x":-2.5e-7}
        Number.MAX_VALUE → {"x":1.7976931348623157e+308}
        Number.MIN_VALUE → {"x":5e-324}
        NaN → {"x":null}
        Infinity → {"x":null}
        -Infinity → {"x":null}
        true → {"x":true}
        false → {"x":false}
        null → {"x":null}
        undefined → {}
        [] → {"x":[]}
        {} → {"x":{}}
        [1, 'a', null, undefined, true, -0, NaN] → {"x":[1,"a",null,null,true,0,null]}
        [1, , 3] → {"x":[1,null,3]}
        { a: undefined, b: 1 } → {"x":{"b":1}}
        { 2: 'two', 1: 'one', b: 'b', a: 'a' } → {"x":{"1":"one","2":"two","b":"b","a":"a"}}
        JSON.parse('{"__proto__": 1, "x": [1]}') → {"x":{"__proto__":1,"x":[1]}}
        Object.assign(Object.create(null), { n: 1 }) → {"x":{"n":1}}
        Object.defineProperty({ shown: 1 }, 'hidden', { value: 2, enumerable: false }) → {"x":{"shown":1}}
        { [Symbol('s')]: 1, t: 2 } → {"x":{"t":2}}
        Object.assign([1, 2], { extra: 3 }) → {"x":[1,2]}
        { get g() { return 'got' } } → {"x":{"g":"got"}}
        new Date(0) → {"x":"1970-01-01T00:00:00.000Z"}
        new String('boxed') → {"x":"boxed"}
        { nested: { deeper: { list: [[1], [2, [3]]] } } } → {"x":{"nested":{"deeper":{"list":[[1],[2,[3]]]}}}}
    "#]].assert_eq(&shown);
}

#[test]
fn a_plain_result_is_the_one_finish_writes() {
    for value in VALUES {
        let ends: Vec<AttemptEnd> = [
            format!("const v = {value}; return {{ x: v, list: [v] }}"),
            format!(
                "const v = {value};
                 return Object.assign(Object.create(Object.create(Object.prototype)), {{ x: v, list: [v] }})"
            ),
        ]
        .iter()
        .map(|body| run_on(&driver(), attempt(body), &FakeBridge::echo()).end)
        .collect();
        assert!(matches!(ends[0], AttemptEnd::Completed(Some(_))), "{value}: {:?}", ends[0]);
        assert_eq!(ends[0], ends[1], "{value}: the results differ");
    }
    // `undefined` goes through `finish`; a bare string is read as it is.
    check("return undefined", expect!["completed undefined"]);
    check("return 'text'", expect![[r#"completed "text""#]]);
}

#[test]
fn the_host_runs_no_getter_and_enters_no_trap_to_read_arguments() {
    check(
        "let reads = 0;
         // A string: with an index getter on Array.prototype, pushing to an array would throw.
         let traps = '';
         const log = (what) => { traps += what + '; ' };
         const getter = { get a() { reads++; return 1 } };
         const proxy = new Proxy({ a: 1 }, {
           get(t, k, r) { log('get ' + String(k)); return Reflect.get(t, k, r) },
           ownKeys(t) { log('ownKeys'); return Reflect.ownKeys(t) },
           getOwnPropertyDescriptor(t, k) { log('descriptor ' + String(k)); return Reflect.getOwnPropertyDescriptor(t, k) },
           getPrototypeOf(t) { log('prototype'); return Reflect.getPrototypeOf(t) },
         });
         Object.defineProperty(Array.prototype, 1, { get() { reads++; return 'inherited' }, configurable: true });
         await github.getIssue({ getter });
         await github.getIssue({ proxy });
         await github.getIssue({ holes: [0, , 2] });
         delete Array.prototype[1];
         return [reads, traps]",
        expect![[r#"
            completed [2,"prototype; ownKeys; descriptor a; get a; "]
            call 0 github.getIssue {"getter":{"a":1}} {}
            call 1 github.getIssue {"proxy":{"a":1}} {}
            call 2 github.getIssue {"holes":[0,"inherited",2]} {}"#]],
    );
}

#[test]
fn arguments_too_large_as_text_are_refused_whichever_way_they_go() {
    // 700,000 control characters are 4.2 million characters as JSON text, escaped: over the
    // 4 MiB the serializer takes, though their UTF-8 is far below it.
    check(
        "try { await github.getIssue({ s: '\\u0001'.repeat(700000) }) } catch (e) { return [e.name, e.message] }",
        expect![[r#"completed ["TypeError","tool arguments are larger than 4194304 bytes as JSON"]"#]],
    );
    // 3 MiB of plain text fits as text, so it is sent (the host's bound is six characters a byte,
    // and the serializer's exact count takes it).
    let bridge = FakeBridge::echo();
    let report = run_on(
        &driver(),
        attempt(
            "const r = await github.getIssue({ s: 'a'.repeat(3 * 1024 * 1024) }); return r.args.s.length",
        ),
        &bridge,
    );
    assert_eq!(report.end, AttemptEnd::Completed(Some(serde_json::json!(3145728))));
    assert_eq!(bridge.calls.borrow()[0].args["s"].as_str().map(str::len), Some(3 * 1024 * 1024));
}

//! The guest prelude: every global it defines, as the guest sees it.

use capabilities_core::sandbox::{AttemptEnd, GuestReply};
use expect_test::expect;
use serde_json::json;

use super::{FakeBridge, attempt, check, check_with, driver, run_on};

#[test]
fn globals_are_the_language_plus_the_prelude() {
    check(
        "return Object.getOwnPropertyNames(globalThis).filter((n) => !/^[A-Z][a-zA-Z0-9]*(Error|Array)$/.test(n)).sort().join(' ')",
        expect![[
            r#"completed "Array ArrayBuffer AsyncDisposableStack BigInt Boolean DataView Date DisposableStack Error Function Infinity Iterator JSON Map Math NaN Number Object Promise Proxy Reflect RegExp Set String Symbol TextDecoder TextEncoder WeakMap WeakSet atob btoa clearTimeout console crypto decodeURI decodeURIComponent encodeURI encodeURIComponent escape github globalThis hub isFinite isNaN memory parseFloat parseInt performance queueMicrotask setTimeout structuredClone undefined unescape""#
        ]],
    );
}

#[test]
fn namespaces_are_frozen_globals_of_async_functions() {
    check(
        "'use strict';
         const out = [];
         out.push(Object.keys(github).join(','), typeof github.searchIssues, Object.isFrozen(github));
         out.push(github.searchIssues.name, github.searchIssues(undefined) instanceof Promise);
         for (const attempt of [
           () => { github.searchIssues = 1 },
           () => { github.extra = 1 },
           () => { delete github.getIssue },
           () => { Object.defineProperty(github, 'x', { value: 1 }) },
           () => { github.searchIssues.extra = 1 },
           () => { globalThis.github = {} },
           () => { delete globalThis.memory },
         ]) {
           try { attempt(); out.push('allowed') } catch (e) { out.push(e.name) }
         }
         out.push(typeof github.then, typeof github.toJSON, String(github), JSON.stringify(github));
         out.push(await Promise.resolve(github) === github);
         return out",
        expect![[r#"
            completed ["searchIssues,createIssue,getIssue,searchCode,listRepos","function",true,"searchIssues",true,"TypeError","TypeError","TypeError","TypeError","allowed","TypeError","TypeError","undefined","undefined","[object Object]","{}",true]
            call 0 github.searchIssues {} {}"#]],
    );
}

#[test]
fn unknown_tools_name_the_closest_ones() {
    check(
        "github.serchIssues({})",
        expect![[
            r#"threw TypeError: github has no tool "serchIssues"; closest: github.searchIssues. hub.search(query) finds tools by what they do"#
        ]],
    );
    check(
        "github.issues()",
        expect![[
            r#"threw TypeError: github has no tool "issues"; closest: github.searchIssues. hub.search(query) finds tools by what they do"#
        ]],
    );
    check(
        "github.zzzzzzzzzz()",
        expect![[
            r#"threw TypeError: github has no tool "zzzzzzzzzz"; it has searchIssues, createIssue, getIssue, searchCode, listRepos. hub.search(query) finds tools by what they do"#
        ]],
    );
    check(
        "memory.readgraph()",
        expect![[
            r#"threw TypeError: memory has no tool "readgraph"; closest: memory.readGraph. hub.search(query) finds tools by what they do"#
        ]],
    );
    check("return await notASource.anything()", expect!["threw ReferenceError: notASource is not defined"]);
}

#[test]
fn hub_search_and_describe_reach_the_bridge() {
    check(
        "return [
           await hub.search('open bugs'),
           await hub.search('issues', { namespace: 'github', limit: 3, ignored: true }),
           await hub.describe('github.searchIssues'),
           await hub.describe(['github.getIssue', 'memory']),
         ]",
        expect![[r#"
            completed ["results for open bugs","results for issues","declarations for [\"github.searchIssues\"]","declarations for [\"github.getIssue\",\"memory\"]"]
            search {"query":"open bugs"}
            search {"query":"issues","namespace":"github","limit":3}
            describe {"targets":["github.searchIssues"]}
            describe {"targets":["github.getIssue","memory"]}"#]],
    );
    check(
        "const out = [];
         try { await hub.search('fail') } catch (e) { out.push(e instanceof ToolError, e.code, e.address, e.message) }
         try { await hub.search(42) } catch (e) { out.push(e.name) }
         try { await hub.describe({}) } catch (e) { out.push(e.name) }
         out.push(Object.isFrozen(hub));
         return out",
        expect![[r#"
            completed [true,"lookup_failed","hub.search","search is broken today","TypeError","TypeError",true]
            search {"query":"fail"}"#]],
    );
}

#[test]
fn tool_error_is_a_usable_class() {
    check(
        "const e = new ToolError('custom', { code: 'mine', retryable: true });
         class Sub extends ToolError { constructor() { super('sub'); this.name = 'Sub' } }
         const s = new Sub();
         return [e.name, e.message, e.code, e.retryable, e instanceof Error, s.name, s.code, s instanceof ToolError]",
        expect![[r#"completed ["ToolError","custom","mine",true,true,"Sub","tool_error",true]"#]],
    );
    check(
        "throw new ToolError('by hand', { code: 'by_hand' })",
        expect!["threw ToolError [by_hand]: by hand"],
    );
}

#[test]
fn console_renders_values_like_node() {
    check(
        r#"console.log('plain', 'strings', 42, -0, 10n, true, null, undefined);
           console.info({ a: 1, 'b-c': [1, 'two', { deep: { deeper: { deepest: 1 } } }] });
           console.debug(new Map([['k', { v: 1 }]]), new Set([1, 2]), new Uint8Array([1, 2]));
           console.warn(Symbol('s'), function named() {}, () => {}, new Date(0), /re/g);
           console.error(new TypeError('shown with its stack'));
           const cyclic = { name: 'loop' }; cyclic.self = cyclic; console.log(cyclic);
           console.log({ get lazy() { throw new Error('never called') } });
           console.log('%s is %d years and %i days, %o', 'Ada', 36.5, 2.7, { x: 1 }, 'extra');
           console.log('100%% sure', '%s');
           console.log(Object.create(null), [], {}, new (class Thing { constructor() { this.a = 1 } })());
           console.log(Array.from({ length: 150 }, (_, i) => i).length, Array.from({ length: 102 }, (_, i) => i));
           console.log(github);"#,
        expect![[r#"
            completed undefined
            log plain strings 42 -0 10n true null undefined
            log { a: 1, "b-c": [ 1, "two", { deep: [Object] } ] }
            log [debug] Map(1) { "k" => { v: 1 } } Set(2) { 1, 2 } Uint8Array(2) [ 1, 2 ]
            log [warn] Symbol(s) [Function: named] [Function (anonymous)] 1970-01-01T00:00:00.000Z /re/g
            log [error] TypeError: shown with its stack
                at <anonymous> (code.js:5:30)
                at <anonymous> (code.js:13:1)
            log { name: "loop", self: [Circular] }
            log { lazy: [Getter] }
            log Ada is 36.5 years and 2 days, { x: 1 } extra
            log 100% sure %s
            log [Object: null prototype] {} [] {} Thing { a: 1 }
            log 150 [ 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63, 64, 65, 66, 67, 68, 69, 70, 71, 72, 73, 74, 75, 76, 77, 78, 79, 80, 81, 82, 83, 84, 85, 86, 87, 88, 89, 90, 91, 92, 93, 94, 95, 96, 97, 98, 99, ... 2 more items ]
            log { searchIssues: [Function: searchIssues], createIssue: [Function: createIssue], getIssue: [Function: getIssue], searchCode: [Function: searchCode], listRepos: [Function: listRepos] }"#]],
    );
}

#[test]
fn console_never_throws() {
    check(
        "const p = new Proxy({}, { ownKeys() { throw new Error('trap') }, getPrototypeOf() { throw new Error('trap') } });
         console.log(p);
         console.log({ toString() { throw new Error('no') } }, Object.create(null, { x: { get() { throw 1 }, enumerable: true } }));
         console.log('%s', { toString() { throw new Error('no') } });
         console.log = null;
         return 'still here'",
        expect![[r#"
            completed "still here"
            log {}
            log { toString: [Function: toString] } [Object: null prototype] { x: [Getter] }
            log { toString: [Function: toString] }"#]],
    );
}

#[test]
fn console_output_stays_within_its_budget() {
    let mut a = attempt(
        "for (let i = 0; i < 100000; i++) console.log('line ' + i + ' ' + 'x'.repeat(10));
         console.log('x'.repeat(10 * 1024 * 1024));
         return 'done'",
    );
    a.log_budget_bytes = 100;
    let report = run_on(&driver(), a, &FakeBridge::echo());
    expect![[r#"Completed(Some(String("done"))) ["line 0 xxxxxxxxxx", "line 1 xxxxxxxxxx", "line 2 xxxxxxxxxx", "line 3 xxxxxxxxxx", "line 4 xxxxxxxxxx", "line 5 xx"] true"#]].assert_eq(&format!("{:?} {:?} {}", report.end, report.logs, report.logs_truncated));
    let mut a = attempt("console.log('é'.repeat(100)); return 1");
    a.log_budget_bytes = 10;
    let report = run_on(&driver(), a, &FakeBridge::echo());
    expect![[r#"["éééé"] true"#]].assert_eq(&format!("{:?} {}", report.logs, report.logs_truncated));
}

#[test]
fn date_runs_on_the_logical_clock() {
    check(
        "const out = [Date.now(), new Date().toISOString(), typeof Date(), new Date(0).toISOString()];
         out.push(new Date(2020, 0, 1) instanceof Date, new Date() instanceof Date, Date.prototype.constructor === Date);
         out.push(new Date('2024-05-01T00:00:00Z').getTime(), Date.UTC(2000, 0, 1), Date.parse('2000-01-01T00:00:00Z'));
         out.push(performance.now());
         await new Promise((r) => setTimeout(r, 1500));
         out.push(Date.now() - out[0], performance.now());
         class Later extends Date {}
         out.push(new Later().getTime() === Date.now(), new Later(5).getTime());
         return out",
        expect![[r#"completed [1767225600000,"2026-01-01T00:00:00.000Z","string","1970-01-01T00:00:00.000Z",true,true,true,1714521600000,946684800000,946684800000,0,1500,1500,true,5]"#]],
    );
}

fn random_values(seed: u64) -> AttemptEnd {
    let mut a = attempt(
        "const bytes = crypto.getRandomValues(new Uint8Array(6));
         const words = crypto.getRandomValues(new Uint32Array(2));
         return [Math.random(), Math.random(), crypto.randomUUID(), Array.from(bytes), Array.from(words), Date.now()]",
    );
    a.seed = seed;
    run_on(&driver(), a, &FakeBridge::echo()).end
}

#[test]
fn randomness_comes_from_the_seed() {
    let first = random_values(7);
    assert_eq!(first, random_values(7), "same seed, same values");
    assert_ne!(first, random_values(8), "another seed, other values");
    expect![[r#"Completed(Some(Array [Number(0.045569337706165336), Number(0.327440318513607), String("36e1e342-dac0-41e7-a752-821dfccfc3c6"), Array [Number(206), Number(104), Number(55), Number(230), Number(252), Number(10)], Array [Number(1102073705), Number(465550927)], Number(1767225600000)]))"#]].assert_eq(&format!("{first:?}"));
    check(
        "const out = [];
         const uuid = crypto.randomUUID();
         out.push(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(uuid));
         for (const bad of [new Float64Array(1), [1, 2], new Uint8Array(65537)]) {
           try { crypto.getRandomValues(bad); out.push('filled') } catch (e) { out.push(e.name) }
         }
         const big = crypto.getRandomValues(new BigUint64Array(1));
         out.push(typeof big[0]);
         let low = 1, high = 0;
         for (let i = 0; i < 10000; i++) { const r = Math.random(); low = Math.min(low, r); high = Math.max(high, r) }
         out.push(low >= 0 && low < 0.01, high < 1 && high > 0.99);
         return out",
        expect![[r#"completed [true,"TypeMismatchError","TypeMismatchError","QuotaExceededError","bigint",true,true]"#]],
    );
}

#[test]
fn timers_fire_in_order_of_due_time_on_the_virtual_clock() {
    check(
        "const order = [];
         const start = Date.now();
         setTimeout(() => order.push('c@' + (Date.now() - start)), 30);
         setTimeout(() => order.push('a@' + (Date.now() - start)), 10);
         const cancelled = setTimeout(() => order.push('never'), 15);
         setTimeout((x, y) => order.push('b@' + (Date.now() - start) + x + y), 10, '+', 'args');
         setTimeout(() => order.push('zero@' + (Date.now() - start)));
         clearTimeout(cancelled);
         clearTimeout('not a timer');
         await new Promise((r) => setTimeout(r, 30000));
         return order",
        expect![[r#"completed ["zero@0","a@10","b@10+args","c@30"]"#]],
    );
    check(
        "const out = [];
         for (const attempt of [() => setTimeout(() => {}, 30001), () => setTimeout('code()', 1), () => setTimeout(() => {}, -5)]) {
           try { out.push(typeof attempt()) } catch (e) { out.push(e.name + ': ' + e.message) }
         }
         return out",
        expect![[r#"completed ["RangeError: setTimeout waits at most 30000 ms in the sandbox, not 30001","TypeError: setTimeout takes a function; text is never run as code","number"]"#]],
    );
    check(
        "setTimeout(() => { throw new RangeError('from a timer') }, 5); await new Promise(() => {})",
        expect!["threw RangeError: from a timer"],
    );
    check(
        "let n = 0; const t = () => { if (++n < 1000) setTimeout(t, 1000) }; t(); await new Promise((r) => setTimeout(r, 30000)); return [n, Date.now() % 100000000]",
        expect!["completed [30,25630000]"],
    );
}

#[test]
fn timers_wait_for_calls_in_flight() {
    let bridge = FakeBridge::new(|_| (3, GuestReply::Ok(json!("answer"))));
    check_with(
        bridge,
        "const timeout = new Promise((r) => setTimeout(() => r('timeout'), 1));
         return await Promise.race([github.getIssue({}), timeout])",
        expect![[r#"
            completed "answer"
            call 0 github.getIssue {} {}"#]],
    );
}

#[test]
fn structured_clone_copies_deeply() {
    check(
        "const src = { d: new Date(5), m: new Map([[1, { x: 1 }]]), s: new Set(['a']), list: [1, [2]], bytes: new Uint8Array([1, 2, 3]).subarray(1), re: /x/gi, n: null, big: 5n };
         src.self = src;
         const c = structuredClone(src);
         return [
           c !== src, c.self === c, c.d instanceof Date && c.d.getTime(), c.m.get(1).x, c.m.get(1) !== src.m.get(1),
           [...c.s], c.list[1] !== src.list[1], Array.from(c.bytes), c.bytes.buffer !== src.bytes.buffer, String(c.re), c.big === 5n,
         ]",
        expect![[r#"completed [true,true,5,1,true,["a"],true,[2,3],true,"/x/gi",true]"#]],
    );
    check(
        "const out = [];
         for (const bad of [() => {}, { f() {} }, Symbol('s'), new WeakMap(), Promise.resolve()]) {
           try { structuredClone(bad); out.push('cloned') } catch (e) { out.push(e.name + ': ' + e.message) }
         }
         return out",
        expect![[
            r#"completed ["DataCloneError: a function cannot be cloned","DataCloneError: a function cannot be cloned","DataCloneError: a symbol cannot be cloned","DataCloneError: WeakMap cannot be cloned","DataCloneError: Promise cannot be cloned"]"#
        ]],
    );
}

#[test]
fn text_encoder_and_decoder_speak_utf8() {
    check(
        r#"const enc = new TextEncoder();
           const bytes = enc.encode('héllo 👋 \ud800');
           const dec = new TextDecoder();
           const into = new Uint8Array(4);
           return [
             enc.encoding, Array.from(bytes), dec.decode(bytes), dec.decode(bytes.buffer), dec.decode(new DataView(bytes.buffer, 0, 2)),
             dec.decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41, 0xff, 0xc3, 0x41, 0xe2, 0x82])), dec.decode(),
             new TextDecoder('UTF8', { ignoreBOM: true }).decode(new Uint8Array([0xef, 0xbb, 0xbf, 0x41])).length,
             enc.encodeInto('a👋b', into), Array.from(into),
             (() => { try { new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array([0xff])) } catch (e) { return e.name } })(),
             (() => { try { new TextDecoder('latin1') } catch (e) { return e.name + ': ' + e.message } })(),
             dec.decode(enc.encode('x'.repeat(10000))).length,
           ]"#,
        expect![[
            r#"completed ["utf-8",[104,195,169,108,108,111,32,240,159,145,139,32,239,191,189],"héllo 👋 �","héllo 👋 �","h�","A��A�","",2,{"read":1,"written":1},[97,0,0,0],"TypeError","RangeError: TextDecoder supports utf-8 only, not \"latin1\"",10000]"#
        ]],
    );
}

#[test]
fn atob_and_btoa_round_trip() {
    check(
        "const out = [btoa(''), btoa('f'), btoa('fo'), btoa('foo'), btoa('\\xff\\x00'), atob('Zm9v'), atob(' Zm 8= '), atob('Zg')];
         for (const bad of [() => btoa('€'), () => atob('Z'), () => atob('Zm9v!')]) {
           try { bad(); out.push('ok') } catch (e) { out.push(e.name) }
         }
         return out",
        expect![[r#"completed ["","Zg==","Zm8=","Zm9v","/wA=","foo","fo","f","InvalidCharacterError","InvalidCharacterError","InvalidCharacterError"]"#]],
    );
}

#[test]
fn queue_microtask_and_promises_work() {
    check(
        "const order = [];
         queueMicrotask(() => order.push('micro'));
         await null;
         order.push('after await');
         return order",
        expect![[r#"completed ["micro","after await"]"#]],
    );
}

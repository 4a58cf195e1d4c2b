//! Hostile code: every test here is contained. The host never crashes; the attempt ends with
//! a plain error or a limit.

use capabilities_core::sandbox::{AttemptEnd, LimitKind};
use expect_test::expect;

use super::{FakeBridge, attempt, check, driver, run_on};

fn end_with_memory(body: &str, memory_bytes: usize) -> AttemptEnd {
    let mut a = attempt(body);
    a.limits.memory_bytes = memory_bytes;
    a.limits.compute_ms = 20_000;
    run_on(&driver(), a, &FakeBridge::echo()).end
}

#[test]
fn memory_bombs_hit_the_memory_limit() {
    for body in [
        "const a = []; while (true) a.push({ n: a.length, s: 'x' + a.length });",
        "let s = 'x'; while (true) s = s + s;",
        "const m = new Map(); for (let i = 0; ; i++) m.set(i, [i]);",
        "const a = []; while (true) a.push(new ArrayBuffer(1024 * 1024));",
        "new Array(1e8).fill(0)",
        "const parts = []; for (;;) parts.push('y'.repeat(1 << 16)); ",
    ] {
        let end = end_with_memory(body, 16 * 1024 * 1024);
        // QuickJS refuses some sizes outright ("invalid array length", "string too long").
        assert!(
            matches!(&end, AttemptEnd::Limit(LimitKind::Memory))
                || matches!(&end, AttemptEnd::Threw(e) if e.name == "RangeError" || e.name == "InternalError"),
            "{body}: {end:?}"
        );
    }
}

#[test]
fn memory_exhaustion_can_be_caught_and_the_attempt_goes_on() {
    let end = end_with_memory(
        "let caught = 'no';
         try { const a = []; while (true) a.push('z'.repeat(1000) + a.length) } catch (e) { caught = 'recovered' }
         return caught",
        16 * 1024 * 1024,
    );
    assert_eq!(end, AttemptEnd::Completed(Some("recovered".into())));
}

#[test]
fn deep_recursion_hits_the_stack_limit() {
    check("const f = (n) => f(n + 1) + 1; f(0)", expect!["Limit(Stack)"]);
    check("const f = async (n) => (await f(n + 1)) + 1; await f(0)", expect!["Limit(Stack)"]);
    check(
        "let depth = 0; const f = () => { depth++; f() }; try { f() } catch (e) { return [e.name, depth > 100] }",
        expect![[r#"completed ["RangeError",true]"#]],
    );
    check(
        "let a = []; for (let i = 0; i < 100000; i++) a = [a]; return JSON.stringify(a).length",
        expect!["Limit(Stack)"],
    );
    check(
        "let a = []; for (let i = 0; i < 100000; i++) a = [a]; return a",
        expect![[
            r#"Unserializable("the result holds nesting deeper than 64 levels at result[0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0][0]")"#
        ]],
    );
    check(
        "let a = []; for (let i = 0; i < 100000; i++) a = [a]; console.log(a); return structuredClone(a).length",
        expect![[r#"
        Limit(Stack)
        log [ [ [ [Array] ] ] ]"#]],
    );
    check(
        &format!("return {}1{}", "[".repeat(100_000), "]".repeat(100_000)),
        expect!["threw RangeError: Maximum call stack size exceeded"],
    );
}

#[test]
fn there_is_no_way_to_turn_text_into_code() {
    check(
        "const paths = {
           Function: () => Function('return 1'),
           newFunction: () => new Function('return 1'),
           async: () => (async () => {}).constructor('return 1'),
           generator: () => (function* () {}).constructor('yield 1'),
           asyncGenerator: () => (async function* () {}).constructor('yield 1'),
           prototype: () => Function.prototype.constructor('return 1'),
           fromArray: () => [].constructor.constructor('return 1'),
           fromObject: () => ({}).constructor.constructor('return 1'),
           fromFunction: () => Object.getPrototypeOf(function () {}).constructor('return 1'),
           reflect: () => Reflect.construct(Function, ['return 1']),
           reflectApply: () => Reflect.apply(Function, null, ['return 1']),
           bound: () => Function.bind(null, 'return 1')(),
           eval: () => eval('1'),
           indirectEval: () => (0, globalThis['ev' + 'al'])('1'),
           timerString: () => setTimeout('1', 0),
         };
         const out = {};
         for (const [name, path] of Object.entries(paths)) {
           try { out[name] = 'RAN: ' + path() } catch (e) { out[name] = e.name + ': ' + e.message }
         }
         out.instanceofStillWorks = (() => {}) instanceof Function && (async () => {}) instanceof Function;
         out.constructorIdentity = (function () {}).constructor === Function;
         return out",
        expect![[
            r#"completed {"Function":"TypeError: Function cannot turn text into code in the sandbox: write the function itself","newFunction":"TypeError: Function cannot turn text into code in the sandbox: write the function itself","async":"TypeError: AsyncFunction cannot turn text into code in the sandbox: write the function itself","generator":"TypeError: GeneratorFunction cannot turn text into code in the sandbox: write the function itself","asyncGenerator":"TypeError: AsyncGeneratorFunction cannot turn text into code in the sandbox: write the function itself","prototype":"TypeError: Function cannot turn text into code in the sandbox: write the function itself","fromArray":"TypeError: Function cannot turn text into code in the sandbox: write the function itself","fromObject":"TypeError: Function cannot turn text into code in the sandbox: write the function itself","fromFunction":"TypeError: Function cannot turn text into code in the sandbox: write the function itself","reflect":"TypeError: Function cannot turn text into code in the sandbox: write the function itself","reflectApply":"TypeError: Function cannot turn text into code in the sandbox: write the function itself","bound":"TypeError: Function cannot turn text into code in the sandbox: write the function itself","eval":"ReferenceError: eval is not defined","indirectEval":"TypeError: not a function","timerString":"TypeError: setTimeout takes a function; text is never run as code","instanceofStillWorks":true,"constructorIdentity":true}"#
        ]],
    );
}

#[test]
fn stack_frames_do_not_hand_out_functions() {
    check(
        "Error.prepareStackTrace = (e, frames) => frames.map((f) => typeof f.getFunction);
         let captured;
         try {
           await github.searchIssues({ get q() { captured = new Error('probe').stack; return 'x' } });
         } catch {}
         return [typeof captured, Array.isArray(captured)]",
        expect![[r#"
            completed ["string",false]
            call 0 github.searchIssues {"q":"x"} {}"#]],
    );
}

#[test]
fn modules_cannot_be_imported() {
    check(
        "return await import('prelude.js')",
        expect![
            "threw ReferenceError: Error resolving module 'prelude.js' from 'code.js': modules cannot be imported in the sandbox; tools are globals (hub.search finds them)"
        ],
    );
    check(
        "return await import('code.js')",
        expect![
            "threw ReferenceError: Error resolving module 'code.js' from 'code.js': modules cannot be imported in the sandbox; tools are globals (hub.search finds them)"
        ],
    );
    check(
        "return await import('fs')",
        expect![
            "threw ReferenceError: Error resolving module 'fs' from 'code.js': modules cannot be imported in the sandbox; tools are globals (hub.search finds them)"
        ],
    );
    check(
        "})(); import fs from 'fs'; (async () => {",
        expect!["threw ReferenceError: could not load module 'fs'"],
    );
}

#[test]
fn breaking_out_of_the_wrapper_changes_nothing() {
    check("})(); export const x = 1; (async () => { return 2", expect!["completed undefined"]);
    check("})(); await new Promise((r) => setTimeout(r, 5)); (async () => {", expect!["completed undefined"]);
    check(
        "})(); throw new Error('at module level'); (async () => {",
        expect!["threw Error: at module level"],
    );
}

#[test]
fn ambient_authority_is_absent() {
    check(
        "return ['fetch', 'require', 'process', 'Buffer', 'WebAssembly', 'SharedArrayBuffer', 'Atomics', 'eval', 'WeakRef', 'FinalizationRegistry', 'XMLHttpRequest', 'Deno', 'Bun', 'std', 'os', 'navigator', 'gc']
           .map((name) => name + ':' + typeof globalThis[name])",
        expect![[r#"completed ["fetch:undefined","require:undefined","process:undefined","Buffer:undefined","WebAssembly:undefined","SharedArrayBuffer:undefined","Atomics:undefined","eval:undefined","WeakRef:undefined","FinalizationRegistry:undefined","XMLHttpRequest:undefined","Deno:undefined","Bun:undefined","std:undefined","os:undefined","navigator:undefined","gc:undefined"]"#]],
    );
}

#[test]
fn host_functions_are_out_of_reach() {
    check(
        "const found = [];
         const seen = new Set();
         const visit = (o, path, depth) => {
           if (o === null || (typeof o !== 'object' && typeof o !== 'function') || seen.has(o) || depth > 4) return;
           seen.add(o);
           for (const key of Reflect.ownKeys(o)) {
             const name = String(key);
             if (['call', 'lookup', 'log', 'install', 'settle', 'fireTimer', 'finish', 'describeError'].includes(name)) found.push(path + '.' + name);
             let d; try { d = Object.getOwnPropertyDescriptor(o, key) } catch { continue }
             if (d && 'value' in d) visit(d.value, path + '.' + name, depth + 1);
           }
           try { visit(Object.getPrototypeOf(o), path + '.__proto__', depth + 1) } catch {}
         };
         visit(globalThis, 'globalThis', 0);
         // Only the language's own `call` and `log` may turn up.
         return found",
        expect![[r#"completed ["globalThis.Object.create.__proto__.call","globalThis.Math.log","globalThis.console.log"]"#]],
    );
}

#[test]
fn tampering_with_builtins_does_not_confuse_the_bridge() {
    check(
        "Object.defineProperty(Object.prototype, 'then', { get() { throw new Error('then getter') }, configurable: true });
         Object.prototype.toJSON = () => 'tampered';
         Object.defineProperty(Array.prototype, '0', { set() { throw new Error('index setter') }, configurable: true });
         Array.prototype.map = () => { throw new Error('map') };
         Array.prototype.join = () => 'joined';
         Array.prototype[Symbol.iterator] = function* () { yield 'iterator' };
         Promise.prototype.then = () => { throw new Error('then') };
         JSON.stringify = () => '{\"evil\":true}';
         JSON.parse = () => ({ evil: true });
         String.prototype.slice = () => 'sliced';
         String.prototype[Symbol.split] = () => ['split'];
         Reflect.apply = () => 'applied';
         Function.prototype.call = Function.prototype.apply = () => 'called';
         Object.keys = () => ['evil'];
         Map.prototype.set = () => { throw new Error('map set') };
         Math.imul = () => 0;
         const r = await github.searchIssues({ q: 'still fine', list: [1, 2] });
         console.log('logged', { a: [1, 2] });
         delete Object.prototype.then;
         return { args: r.args, random: Math.random() > 0, clone: structuredClone({ k: 1 }).k };",
        expect![[r#"
            completed {"args":{"q":"still fine","list":[1,2]},"random":true,"clone":1}
            log logged { a: [ 1, 2 ] }
            call 0 github.searchIssues {"q":"still fine","list":[1,2]} {}"#]],
    );
}

#[test]
fn rejections_of_bridge_calls_are_tool_errors_even_after_tampering() {
    let bridge = FakeBridge::new(|_| {
        (1, capabilities_core::sandbox::GuestReply::Err(super::failure("timeout", "too slow")))
    });
    super::check_with(
        bridge,
        "Error.prototype.name = 'Tampered';
         Object.defineProperty(Object.prototype, 'hint', { get() { return 'from the prototype' } });
         try { await github.getIssue({}) } catch (e) { return [e instanceof ToolError, e.code, e.hint, e.retryable] }",
        expect![[r#"
            completed [true,"timeout",null,false]
            call 0 github.getIssue {} {}"#]],
    );
}

#[test]
fn namespace_proxies_resist_introspection_tricks() {
    check(
        "const out = [];
         out.push(github instanceof Object && Object.prototype.isPrototypeOf(github));
         try { Object.setPrototypeOf(github, null); out.push('changed') } catch (e) { out.push(e.name) }
         try { Object.getPrototypeOf(github).searchIssues = 'x'; out.push(typeof github.searchIssues) } catch (e) { out.push(e.name) }
         out.push(github.searchIssues.toString().includes('native code') || github.searchIssues.toString());
         try { new github.searchIssues() } catch (e) { out.push(e.name) }
         return out",
        expect![[r#"completed [true,"TypeError","function",true,"TypeError"]"#]],
    );
}

#[test]
fn guest_exceptions_never_reach_the_host_as_panics() {
    for body in [
        "throw undefined",
        "throw Symbol('s')",
        "throw 10n",
        "throw new Proxy({}, { get() { throw new Error('trap') } })",
        "throw Object.create(null)",
        "const e = new Error('x'); Object.defineProperty(e, 'name', { get() { throw e } }); throw e",
        "const e = new Error('x'); e.stack = 42; throw e",
        "return new Proxy({}, { ownKeys() { throw new Error('no keys') } })",
        "return new Proxy([], { get(t, k) { return k === 'length' ? 1e12 : 1 } })",
        "await Promise.reject(new Error('rejected'))",
        "Promise.reject(new Error('unhandled')); return 'fine'",
        "github.getIssue({}).then(() => { throw new Error('later') }); return 'fine'",
    ] {
        let end = run_on(&driver(), attempt(body), &FakeBridge::echo()).end;
        assert!(!matches!(end, AttemptEnd::Internal(_)), "{body}: {end:?}");
    }
}

//! Guests made ahead of their attempt (`QuickJs::prepare`) and spent runtimes freed after the
//! answer (`QuickJs::free_spent_later`): each attempt still runs in a context nothing ran in.

use capabilities_core::sandbox::{AttemptEnd, LimitKind};
use expect_test::expect;

use super::{FakeBridge, attempt, driver, render, run_on};

/// Runs each body on one driver, preparing the next guest between attempts.
fn in_turn(bodies: &[&str]) -> String {
    let driver = driver().free_spent_later();
    let mut out = Vec::new();
    for body in bodies {
        driver.prepare().expect("a guest is prepared");
        assert!(driver.is_prepared());
        let bridge = FakeBridge::echo();
        let report = run_on(&driver, attempt(body), &bridge);
        assert!(!driver.is_prepared(), "the attempt took the prepared guest");
        out.push(render(&report, &bridge));
        driver.free_spent();
    }
    out.join("\n")
}

#[test]
fn nothing_an_attempt_leaves_reaches_the_next() {
    let got = in_turn(&[
        "globalThis.left = 1; Object.prototype.polluted = 2; Array.prototype.map = null; \
         Math.random = () => 4; return typeof left",
        "return [typeof left, ({}).polluted, typeof [].map, Math.random() === 4]",
        "memory.readGraph = 1; return 'changed'",
        "return await memory.readGraph()",
    ]);
    expect![[r#"
        completed "number"
        completed ["undefined",null,"function",false]
        threw TypeError: 'readGraph' is read-only
        completed {"tool":"memory.readGraph","args":{}}
        call 0 memory.readGraph {} {}"#]]
    .assert_eq(&got);
}

#[test]
fn a_prepared_guest_takes_the_attempts_own_heap_limit() {
    let driver = driver();
    driver.prepare().expect("a guest is prepared");
    let mut a = attempt("const a = []; for (;;) a.push('x'.repeat(1024));");
    a.limits.memory_bytes = 8 * 1024 * 1024;
    let report = run_on(&driver, a, &FakeBridge::echo());
    assert!(matches!(report.end, AttemptEnd::Limit(LimitKind::Memory)), "{:?}", report.end);
    // Without a prepared guest the next attempt builds its own.
    let report = run_on(&driver, attempt("return 2"), &FakeBridge::echo());
    assert!(matches!(report.end, AttemptEnd::Completed(Some(_))), "{:?}", report.end);
}

#[test]
fn a_syntax_error_spends_the_prepared_guest() {
    let driver = driver();
    driver.prepare().expect("a guest is prepared");
    let report = run_on(&driver, attempt("return ("), &FakeBridge::echo());
    assert!(matches!(report.end, AttemptEnd::Threw(_)), "{:?}", report.end);
    assert!(!driver.is_prepared());
}

/// What the guest can see of a namespace: its tools, that it is frozen, a call's address and the
/// error for a tool it lacks.
const LOOK: &str =
    "const out = [Object.keys(github).join(','), Object.isFrozen(github), github.getIssue.name, \
     github instanceof Object && Object.prototype.isPrototypeOf(github)];
     try { github.getIssu } catch (e) { out.push(e.message) }
     out.push(await github.getIssue({ n: 1 }));
     return out";

#[test]
fn a_namespace_built_ahead_is_the_one_its_first_use_builds() {
    let driver = driver().free_spent_later();
    let mut got = Vec::new();
    // The first attempt builds `github` on first use; the next guest gets it built ahead.
    for built_ahead in [&[][..], &["github"][..]] {
        driver.prepare().expect("a guest is prepared");
        assert_eq!(driver.prepared_namespaces(), built_ahead);
        let bridge = FakeBridge::echo();
        got.push(render(&run_on(&driver, attempt(LOOK), &bridge), &bridge));
        driver.free_spent();
    }
    assert_eq!(got[0], got[1], "built ahead and built on first use differ");
    expect![[r#"
        completed ["searchIssues,createIssue,getIssue,searchCode,listRepos",true,"getIssue",true,"github has no tool \"getIssu\"; closest: github.getIssue. hub.search(query) finds tools by what they do",{"tool":"github.getIssue","args":{"n":1}}]
        call 0 github.getIssue {"n":1} {}"#]]
    .assert_eq(&got[1]);
}

#[test]
fn a_namespace_whose_tools_changed_since_it_was_built_ahead_is_built_again() {
    let driver = driver().free_spent_later();
    let bridge = FakeBridge::echo();
    run_on(&driver, attempt("return github.getIssue.name"), &bridge);
    driver.free_spent();
    // Built ahead with the tools `github` had; the next attempt's `github` has others.
    driver.prepare().expect("a guest is prepared");
    assert_eq!(driver.prepared_namespaces(), ["github"]);
    let mut changed = attempt("return [Object.keys(github), await github.closeIssue({})]");
    changed.namespaces[0].tools = vec!["closeIssue".into()];
    let report = run_on(&driver, changed, &bridge);
    expect![[r#"
        completed [["closeIssue"],{"tool":"github.closeIssue","args":{}}]
        call 0 github.closeIssue {} {}"#]]
    .assert_eq(&render(&report, &bridge));
    // An attempt that uses no namespace leaves none to build ahead.
    driver.free_spent();
    run_on(&driver, attempt("return 1"), &bridge);
    driver.prepare().expect("a guest is prepared");
    assert!(driver.prepared_namespaces().is_empty());
}

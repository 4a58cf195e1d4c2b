//! `capabilities hub demo`, the README's first command: the whole task through the real engine
//! and two stdio sources from this binary, in a throwaway hub that is removed afterwards.

use std::process::Command;

#[test]
fn the_demo_reads_bugs_asks_once_and_posts_the_top_three() {
    let tmp = tempfile::tempdir().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_capabilities"))
        .args(["hub", "demo", "--yes"])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    for shown in [
        "── 2. search",
        "tracker.listIssues(",
        "declare const chat",
        "the run paused",
        "chat.postMessage wants to run with",
        "allowed once (--yes)",
        "completed",
        "ok   chat.postMessage",
        "tokens in all, with code mode",
    ] {
        assert!(stdout.contains(shown), "the demo shows `{shown}`:\n{stdout}");
    }
    let posted = stdout.split("\"posted\": [").nth(1).expect("the result names the posted bugs");
    let ids: Vec<&str> = posted.split(']').next().unwrap().split(',').map(str::trim).collect();
    assert_eq!(ids, ["101", "105", "103"], "the three most urgent open bugs, most urgent first");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "the throwaway hub is removed: {left:?}");
}

#[test]
fn the_demo_without_a_terminal_needs_yes() {
    let out = Command::new(env!("CARGO_BIN_EXE_capabilities"))
        .args(["hub", "demo", "--no-input"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("pass `--yes`"));
}

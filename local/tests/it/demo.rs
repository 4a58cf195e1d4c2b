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

/// At a terminal the demo asks before the post; answering no denies it, and the code sees
/// `approval_denied`.
#[test]
fn at_a_terminal_the_demo_asks_and_a_no_denies_the_post() {
    use std::io::Write;
    use std::process::Stdio;
    let found =
        Command::new("sh").args(["-c", "command -v script"]).output().is_ok_and(|o| o.status.success());
    assert!(found, "`script` is not on PATH: install it with `apt-get install bsdutils`");
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("terminal.log");
    let line = format!("'{}' hub demo", env!("CARGO_BIN_EXE_capabilities"));
    let mut child = Command::new("script")
        .args(["-qfec", &line])
        .arg(&log)
        .env("TMPDIR", tmp.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while !std::fs::read_to_string(&log).unwrap_or_default().contains("allow this post once? [Y/n]") {
        assert!(
            std::time::Instant::now() < deadline,
            "no question: {}",
            std::fs::read_to_string(&log).unwrap()
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    child.stdin.take().unwrap().write_all(b"n\n").unwrap();
    let out = child.wait_with_output().unwrap();
    let transcript = std::fs::read_to_string(&log).unwrap();
    assert!(transcript.contains("approval_denied"), "{transcript}");
    assert!(!transcript.contains("ok   chat.postMessage"), "{transcript}");
    assert_eq!(out.status.code(), Some(3), "a run that failed exits 3: {transcript}");
}

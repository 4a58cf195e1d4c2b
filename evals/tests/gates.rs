//! The offline evals as a test: runs every scripted task in both modes against the real hub
//! and the fixture servers, and holds the gates (fixed surface, multi-step reduction, success, no
//! approval asked for a call that fails validation).
//!
//! Needs Node.js on PATH and the `capabilities` binary built beside this test
//! (`cargo nextest run --workspace` builds it; alone: `cargo build -p capabilities`).

use std::path::PathBuf;
use std::process::Command;

use capabilities_evals::{Driver, Hub, Setup, repo, run_suite, scratch};

fn hub_binary() -> PathBuf {
    let node = Command::new("node").arg("--version").output();
    assert!(node.is_ok_and(|o| o.status.success()), "`node` is not on PATH: install Node.js 20 or later");
    let exe = std::env::current_exe().unwrap();
    // target/debug/deps/gates-… → target/debug/capabilities
    let bin = exe.parent().and_then(|deps| deps.parent()).unwrap().join("capabilities");
    assert!(bin.exists(), "{} is missing: run `cargo build -p capabilities` first", bin.display());
    bin
}

/// Runs every scripted task in both modes, code mode on `hub`, and holds the gates.
fn holds_the_gates(hub: Hub) {
    let work = scratch().unwrap();
    let setup = Setup { repo: repo(), bin: hub_binary(), work: work.clone(), hub };
    let result = run_suite(setup, &repo().join("evals/tasks"), &Driver::Scripted, |_| {});
    let _ = std::fs::remove_dir_all(&work);
    let (report, _) = result.unwrap();
    let failed: Vec<String> =
        report.gates.iter().filter(|g| !g.ok).map(|g| format!("{}: {}", g.name, g.detail)).collect();
    let rows: Vec<String> = report
        .tasks
        .iter()
        .flat_map(|r| r.code.failures.iter().chain(&r.direct.failures).map(move |f| format!("{}: {f}", r.id)))
        .collect();
    assert!(failed.is_empty(), "gates failed on the {hub:?} hub: {failed:#?}\n{rows:#?}");
    assert!(report.tasks.len() >= 30, "the suite keeps at least 30 tasks");
    for kind in ["single", "multi", "large", "approval", "recovery"] {
        assert!(
            report.tasks.iter().any(|r| serde_json::to_value(r.kind).unwrap() == kind),
            "the suite has {kind} tasks"
        );
    }
    // The store API's tasks (an OpenAPI source behind Prism) run on both hubs: on hosted the
    // store is added to the tenant as a push carries an HTTP API.
    let store = report.tasks.iter().filter(|r| r.id.starts_with("store-")).count();
    assert!(store >= 6, "the {hub:?} suite runs the store tasks, ran {store}");
    assert!(!report.left_out.iter().any(|id| id.starts_with("store-")), "{:?}", report.left_out);
}

#[test]
fn the_scripted_suite_holds_the_gates() {
    holds_the_gates(Hub::Local);
}

/// The same tasks with code mode on the hosted Worker in workerd: needs the bundle
/// `cargo xtask hosted build` writes (`cargo xtask test` builds it first).
#[test]
fn the_scripted_suite_holds_the_gates_on_the_hosted_hub() {
    holds_the_gates(Hub::Hosted);
}

#[test]
fn the_task_files_are_what_the_seeds_give() {
    let out =
        Command::new("node").arg(repo().join("evals/fixtures/tasks.mjs")).arg("--check").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
}

//! Only a person records a decision: across every crate's sources, exactly one place per hub
//! calls `record_decision` — `local/src/recorder.rs`, which the CLI, the approval page and
//! elicitation answers all go through, and `hosted/src/worker/recorder.rs`, which the hosted
//! admin endpoint and form answers go through.

use std::path::{Path, PathBuf};

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("reading {}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn only_the_recorder_records_a_decision() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let mut files = Vec::new();
    for krate in ["core", "local", "hosted", "invariants", "evals"] {
        rust_files(&root.join(krate).join("src"), &mut files);
    }
    assert!(files.len() > 20, "the walk found the sources");
    let mut callers = Vec::new();
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (i, line) in text.lines().enumerate() {
            let code = line.split("//").next().unwrap_or("");
            if code.contains("record_decision(") && !code.contains("fn record_decision(") {
                let relative = file.strip_prefix(root).unwrap().display().to_string();
                callers.push(format!("{relative}:{}", i + 1));
            }
        }
    }
    // One recorder per hub, added to this list deliberately.
    callers.sort();
    assert_eq!(callers.len(), 2, "record_decision must have one caller per hub: {callers:?}");
    assert!(callers[0].starts_with("hosted/src/worker/recorder.rs:"), "{callers:?}");
    assert!(callers[1].starts_with("local/src/recorder.rs:"), "{callers:?}");
}

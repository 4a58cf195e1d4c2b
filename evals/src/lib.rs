//! The offline eval harness: tasks, fixtures and token accounting that compare code mode
//! (search, describe, execute through the hub) with direct tools (every definition loaded).

pub mod api;
pub mod check;
pub mod fixtures;
pub mod hosted;
pub mod live;
pub mod modes;
pub mod recall;
pub mod report;
pub mod rpc;
pub mod scale;
pub mod task;

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};

pub use modes::{Hub, Outcome, Setup, Suite};
pub use report::Report;

/// The repository this crate sits in.
pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().map(Path::to_owned).unwrap_or_default()
}

/// A fresh scratch directory under the system's temp dir.
pub fn scratch() -> Result<PathBuf> {
    let nanos =
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_nanos()).unwrap_or(0);
    let dir = std::env::temp_dir().join(format!("capabilities-evals-{}-{nanos}", std::process::id()));
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    Ok(dir)
}

/// How the tasks are worked.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub enum Driver {
    /// The scripted reference solutions.
    Scripted,
    /// A real model through the Messages API; `only` narrows the tasks by id when not empty.
    Live { api: live::Api, only: Vec<String> },
}

/// Runs every task in `tasks_dir` in both modes; `each` sees every finished row.
pub fn run_suite(
    setup: Setup,
    tasks_dir: &Path,
    driver: &Driver,
    mut each: impl FnMut(&report::Row),
) -> Result<(Report, Vec<TaskTranscripts>)> {
    let mut tasks = task::load_all(tasks_dir)?;
    if let Driver::Live { only, .. } = driver {
        if !only.is_empty() {
            tasks.retain(|t| only.contains(&t.id));
        }
    }
    let scale = scale::measure(&setup)?;
    let suite = Suite::prepare(setup)?;
    let mut rows = Vec::new();
    let mut transcripts = Vec::new();
    let mut left_out = Vec::new();
    for task in &tasks {
        if !suite.serves(task) {
            left_out.push(task.id.clone());
            continue;
        }
        let (code, direct) = match driver {
            Driver::Scripted => (suite.run_code(task), suite.run_direct(task)),
            Driver::Live { api, .. } => {
                (live::run(&suite, api, task, true), live::run(&suite, api, task, false))
            }
        };
        let mut code = code.with_context(|| format!("task `{}` in code mode", task.id))?;
        let mut direct = direct.with_context(|| format!("task `{}` with direct tools", task.id))?;
        if suite.vacuous(task)? {
            for outcome in [&mut code, &mut direct] {
                outcome.success = false;
                outcome
                    .failures
                    .push("the check already holds on the seeded state; it proves nothing".into());
            }
        }
        transcripts.push(TaskTranscripts {
            id: task.id.clone(),
            code: code.transcript.clone(),
            direct: direct.transcript.clone(),
        });
        let row = report::Row {
            id: task.id.clone(),
            kind: task.kind,
            reduction_pct: report::reduction(code.input_tokens, direct.input_tokens),
            code,
            direct,
        };
        each(&row);
        rows.push(row);
    }
    let mut report = Report::new(
        suite.hub_kind(),
        suite.surface_tokens,
        suite.direct_tokens,
        suite.direct_tool_count,
        scale,
        rows,
    );
    report.left_out = left_out;
    Ok((report, transcripts))
}

/// Everything the model read in one task, both modes.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TaskTranscripts {
    pub id: String,
    pub code: modes::Transcript,
    pub direct: modes::Transcript,
}

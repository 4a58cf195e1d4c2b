//! Tasks as data: the prompt, the success check on the fixtures' final state, and one scripted
//! reference solution per mode.

use std::path::Path;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What kind of work a task is; everything but `Single` and `Recovery` counts as multi-step in
/// the gate (a recovery task's extra turns are the mistake's cost, reported on their own).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
#[non_exhaustive]
pub enum Kind {
    /// One tool call answers it.
    Single,
    /// Several calls across two or three sources.
    Multi,
    /// Large intermediate data: filtering hundreds of records or joining two sources.
    Large,
    /// A write that waits for a person's decision.
    Approval,
    /// A first attempt that makes a mistake models make (a wrong argument type, a misspelled
    /// tool, a missing namespace, a write with bad arguments), repaired from the error text.
    Recovery,
}

impl Kind {
    pub fn is_multi_step(self) -> bool {
        !matches!(self, Kind::Single | Kind::Recovery)
    }
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Task {
    pub id: String,
    pub kind: Kind,
    pub prompt: String,
    pub check: Vec<Check>,
    /// Code mode: `search`, `describe` and `execute` calls, with a person's approvals between.
    pub code: Vec<CodeStep>,
    /// Direct tools: one call per turn, named `<source>__<tool>`.
    pub direct: Vec<DirectCall>,
}

/// One step of a code-mode transcript.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged, deny_unknown_fields)]
pub enum CodeStep {
    /// A model turn: one call to the hub. `"$run"` in the arguments stands for the last run id.
    /// With `expect_error`, the call must fail and its error text hold every string: what the
    /// next turn's repair is read from.
    Call {
        call: String,
        arguments: Value,
        #[serde(default)]
        expect_error: Vec<String>,
    },
    /// A person decides, with `capabilities hub approve <last run> --choice <approve>`.
    Approve { approve: String },
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirectCall {
    pub call: String,
    pub arguments: Value,
    /// The call must fail, its error text holding every string (as for a code step).
    #[serde(default)]
    pub expect_error: Vec<String>,
}

/// Some record in `source`'s `collection` that matches `where` satisfies every `expect`; with
/// `count`, exactly that many records match both.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    pub source: String,
    pub collection: String,
    #[serde(default, rename = "where")]
    pub filter: serde_json::Map<String, Value>,
    #[serde(default)]
    pub expect: serde_json::Map<String, Value>,
    #[serde(default)]
    pub count: Option<usize>,
}

/// Every task in `dir/*.json` (each file an array of tasks), ordered by file then position.
pub fn load_all(dir: &Path) -> Result<Vec<Task>> {
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .with_context(|| format!("reading the tasks in {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    let mut tasks: Vec<Task> = Vec::new();
    for file in files {
        let text = std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
        let more: Vec<Task> = serde_json::from_str(&text)
            .with_context(|| format!("{} is not a list of tasks", file.display()))?;
        for task in more {
            if tasks.iter().any(|t| t.id == task.id) {
                bail!("task id `{}` appears twice; ids must be unique", task.id);
            }
            if task.code.is_empty() || task.direct.is_empty() || task.check.is_empty() {
                bail!("task `{}` needs a check and a solution for each mode", task.id);
            }
            tasks.push(task);
        }
    }
    Ok(tasks)
}

//! The report: a row per task with success and input tokens per mode, totals, and the gates.

use serde::Serialize;

use crate::modes::{Hub, Outcome};
use crate::scale::ScalePoint;
use crate::task::Kind;

/// The fixed surface may cost at most this many tokens.
pub const SURFACE_BUDGET: usize = 1_500;
/// Code mode's success rate may trail direct tools' by at most this many points.
pub const SUCCESS_GAP_POINTS: f64 = 2.0;
/// Code mode must read at least this share fewer input tokens on multi-step tasks, overall.
pub const MULTI_STEP_REDUCTION: f64 = 40.0;

#[derive(Debug, Clone, Serialize)]
pub struct Row {
    pub id: String,
    pub kind: Kind,
    pub code: Outcome,
    pub direct: Outcome,
    pub reduction_pct: f64,
}

#[derive(Debug, Clone, Serialize)]
pub struct Totals {
    pub tasks: usize,
    pub multi_step_tasks: usize,
    pub code_successes: usize,
    pub direct_successes: usize,
    pub code_input_tokens: usize,
    pub direct_input_tokens: usize,
    pub reduction_pct: f64,
    pub code_multi_step_tokens: usize,
    pub direct_multi_step_tokens: usize,
    pub multi_step_reduction_pct: f64,
    /// Over the recovery tasks: turns and input tokens from each mistake to its repair.
    pub recovery_tasks: usize,
    pub code_recovery_turns: usize,
    pub direct_recovery_turns: usize,
    pub code_recovery_tokens: usize,
    pub direct_recovery_tokens: usize,
    /// Code-mode calls that failed validation, and those a person was asked about or that were
    /// journaled (must be none).
    pub invalid_calls: usize,
    pub invalid_calls_asked: usize,
}

#[derive(Debug, Clone, Serialize)]
pub struct Gate {
    pub name: String,
    pub ok: bool,
    pub detail: String,
}

#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The hub code mode ran on.
    pub hub: Hub,
    /// `hub serve`'s instructions and three tool definitions.
    pub fixed_surface_tokens: usize,
    /// Every fixture tool definition, loaded up front in direct mode.
    pub direct_fixed_tokens: usize,
    pub direct_tools: usize,
    /// The hub's fixed surface with recorded real tool lists at 100, 250 and 500 tools.
    pub scale: Vec<ScalePoint>,
    pub tasks: Vec<Row>,
    /// Tasks over a source this hub does not serve (the store API on the hosted hub).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub left_out: Vec<String>,
    pub totals: Totals,
    pub gates: Vec<Gate>,
}

pub fn reduction(code: usize, direct: usize) -> f64 {
    if direct == 0 {
        return 0.0;
    }
    let pct = 100.0 * (direct as f64 - code as f64) / direct as f64;
    (pct * 10.0).round() / 10.0
}

fn rate(successes: usize, tasks: usize) -> f64 {
    if tasks == 0 { 0.0 } else { 100.0 * successes as f64 / tasks as f64 }
}

impl Report {
    pub fn new(
        hub: Hub,
        fixed_surface_tokens: usize,
        direct_fixed_tokens: usize,
        direct_tools: usize,
        scale: Vec<ScalePoint>,
        tasks: Vec<Row>,
    ) -> Report {
        let sum = |multi_only: bool, code: bool| -> usize {
            tasks
                .iter()
                .filter(|r| !multi_only || r.kind.is_multi_step())
                .map(|r| if code { r.code.input_tokens } else { r.direct.input_tokens })
                .sum()
        };
        let totals = Totals {
            tasks: tasks.len(),
            multi_step_tasks: tasks.iter().filter(|r| r.kind.is_multi_step()).count(),
            code_successes: tasks.iter().filter(|r| r.code.success).count(),
            direct_successes: tasks.iter().filter(|r| r.direct.success).count(),
            code_input_tokens: sum(false, true),
            direct_input_tokens: sum(false, false),
            reduction_pct: reduction(sum(false, true), sum(false, false)),
            code_multi_step_tokens: sum(true, true),
            direct_multi_step_tokens: sum(true, false),
            multi_step_reduction_pct: reduction(sum(true, true), sum(true, false)),
            recovery_tasks: tasks
                .iter()
                .filter(|r| r.code.recovery.is_some() || r.direct.recovery.is_some())
                .count(),
            code_recovery_turns: tasks.iter().filter_map(|r| r.code.recovery).map(|x| x.turns).sum(),
            direct_recovery_turns: tasks.iter().filter_map(|r| r.direct.recovery).map(|x| x.turns).sum(),
            code_recovery_tokens: tasks.iter().filter_map(|r| r.code.recovery).map(|x| x.input_tokens).sum(),
            direct_recovery_tokens: tasks
                .iter()
                .filter_map(|r| r.direct.recovery)
                .map(|x| x.input_tokens)
                .sum(),
            invalid_calls: tasks.iter().map(|r| r.code.invalid_calls).sum(),
            invalid_calls_asked: tasks.iter().map(|r| r.code.invalid_calls_asked).sum(),
        };
        let failed: Vec<String> = tasks
            .iter()
            .flat_map(|r| {
                let mut f = Vec::new();
                if !r.code.success {
                    f.push(format!("{} (code)", r.id));
                }
                if !r.direct.success {
                    f.push(format!("{} (direct)", r.id));
                }
                f
            })
            .collect();
        let gates = vec![
            Gate {
                name: "fixed surface".into(),
                ok: fixed_surface_tokens <= SURFACE_BUDGET,
                detail: format!("{fixed_surface_tokens} tokens, budget {SURFACE_BUDGET}"),
            },
            Gate {
                name: "fixed surface at scale".into(),
                ok: !scale.is_empty() && scale.iter().all(|p| p.hub_surface_tokens <= SURFACE_BUDGET),
                detail: scale
                    .iter()
                    .map(|p| format!("{} tokens at {} tools", p.hub_surface_tokens, p.tools))
                    .collect::<Vec<_>>()
                    .join(", "),
            },
            Gate {
                name: "multi-step reduction".into(),
                ok: totals.multi_step_reduction_pct >= MULTI_STEP_REDUCTION,
                detail: format!(
                    "{}% fewer input tokens over {} multi-step tasks, needs {MULTI_STEP_REDUCTION}%",
                    totals.multi_step_reduction_pct, totals.multi_step_tasks
                ),
            },
            Gate {
                name: "success no worse than direct".into(),
                ok: rate(totals.code_successes, totals.tasks) + SUCCESS_GAP_POINTS
                    >= rate(totals.direct_successes, totals.tasks),
                detail: format!(
                    "code mode {:.1}%, direct tools {:.1}%, allowed gap {SUCCESS_GAP_POINTS} points",
                    rate(totals.code_successes, totals.tasks),
                    rate(totals.direct_successes, totals.tasks)
                ),
            },
            Gate {
                name: "no approval for an invalid call".into(),
                ok: totals.invalid_calls > 0 && totals.invalid_calls_asked == 0,
                detail: format!(
                    "{} calls in code mode meant to fail validation; {} of them asked a person, waited or were journaled",
                    totals.invalid_calls, totals.invalid_calls_asked
                ),
            },
            Gate {
                name: "scripted tasks succeed".into(),
                ok: failed.is_empty(),
                detail: if failed.is_empty() {
                    format!("all {} tasks in both modes", tasks.len())
                } else {
                    format!("failed: {}", failed.join(", "))
                },
            },
        ];
        Report {
            hub,
            fixed_surface_tokens,
            direct_fixed_tokens,
            direct_tools,
            scale,
            tasks,
            left_out: Vec::new(),
            totals,
            gates,
        }
    }

    pub fn passed(&self) -> bool {
        self.gates.iter().all(|g| g.ok)
    }

    pub fn markdown(&self) -> String {
        let t = &self.totals;
        let mut md = String::new();
        md.push_str("# Evals: code mode against direct tools\n\n");
        md.push_str(
            "Written by `cargo xtask evals` from the scripted reference solutions in `evals/tasks/`, run\n",
        );
        md.push_str(match self.hub {
            Hub::Local => {
                "against the real hub (`hub serve --stdio`) and the fixture servers in `evals/fixtures/`.\n"
            }
            Hub::Hosted => {
                "against the hosted hub (the Worker in workerd, one tenant) and the fixture servers in\n\
                 `evals/fixtures/` over HTTP on loopback.\n"
            }
        });
        md.push_str(
            "Input tokens (o200k) are summed over every model turn; each turn reads the fixed context,\n",
        );
        md.push_str("the prompt and all earlier calls and results.\n\n");
        md.push_str(&format!(
            "Fixed context: code mode **{}** tokens (instructions and three tools); direct tools **{}** tokens ({} tool definitions).\n\n",
            self.fixed_surface_tokens, self.direct_fixed_tokens, self.direct_tools
        ));
        md.push_str(
            "How it counts: a result is the text content the model reads (structured duplicates left out);\n",
        );
        md.push_str(
            "a call is its name and input as JSON; no per-message overhead is added to either mode. Direct\n",
        );
        md.push_str(
            "tools are named `<source>__<tool>`, one call per turn, every result kept in context. In code\n",
        );
        md.push_str(match self.hub {
            Hub::Local => {
                "mode a write that needs a person pauses the run; the harness approves with `hub approve` as a\n"
            }
            Hub::Hosted => {
                "mode a write that needs a person pauses the run; the harness approves through the admin API as a\n"
            }
        });
        md.push_str("person would and the model spends a turn resuming it, while a direct client's own\n");
        md.push_str("confirmation costs the model nothing. Run ids and timings in results vary, so totals move by a\n");
        md.push_str("few tokens between runs.\n\n");
        if !self.left_out.is_empty() {
            md.push_str(&format!(
                "Not run on this hub, whose harness cannot add the store API as a source: {}.\n\n",
                self.left_out.join(", ")
            ));
        }
        md.push_str("## Gates\n\n");
        for g in &self.gates {
            md.push_str(&format!("- {} **{}**: {}\n", if g.ok { "pass" } else { "FAIL" }, g.name, g.detail));
        }
        md.push_str("\n## Fixed surface as sources grow\n\nRecorded real tool lists (`core/tests/data/tools/`) added as sources.\n\n| tools | sources | hub surface | direct definitions |\n|---:|---:|---:|---:|\n");
        for p in &self.scale {
            md.push_str(&format!(
                "| {} | {} | {} | {} |\n",
                p.tools, p.sources, p.hub_surface_tokens, p.direct_tokens
            ));
        }
        md.push_str("\n## Totals\n\n| | code mode | direct tools | reduction |\n|---|---:|---:|---:|\n");
        md.push_str(&format!(
            "| success | {}/{} | {}/{} | |\n",
            t.code_successes, t.tasks, t.direct_successes, t.tasks
        ));
        md.push_str(&format!(
            "| input tokens, all tasks | {} | {} | {}% |\n",
            t.code_input_tokens, t.direct_input_tokens, t.reduction_pct
        ));
        md.push_str(&format!(
            "| input tokens, {} multi-step tasks | {} | {} | {}% |\n",
            t.multi_step_tasks,
            t.code_multi_step_tokens,
            t.direct_multi_step_tokens,
            t.multi_step_reduction_pct
        ));
        md.push_str("\n## Recovery\n\nEach recovery task's first attempt makes a mistake models make; the next turns repair it\nfrom the error text alone, and the harness checks that the text says what the repair needs.\nTurns and input tokens count from the failing call to the first call after it that works\n(searches and describes between them included). Direct tools make the same mistake as a direct\ncall: a bad argument is refused by the fixture server (as the MCP SDKs validate), a name the\nmodel was not given by the client, with no hint, so the model repairs from the definitions it\nalready holds.\n\n| task | code turns | code tokens | direct turns | direct tokens |\n|---|---:|---:|---:|---:|\n");
        for r in self.tasks.iter().filter(|r| r.code.recovery.is_some() || r.direct.recovery.is_some()) {
            let cell = |o: &Outcome| match o.recovery {
                Some(x) => (x.turns.to_string(), x.input_tokens.to_string()),
                None => ("-".to_owned(), "-".to_owned()),
            };
            let (ct, ck) = cell(&r.code);
            let (dt, dk) = cell(&r.direct);
            md.push_str(&format!("| {} | {ct} | {ck} | {dt} | {dk} |\n", r.id));
        }
        md.push_str(&format!(
            "| **total** | {} | {} | {} | {} |\n",
            t.code_recovery_turns, t.code_recovery_tokens, t.direct_recovery_turns, t.direct_recovery_tokens
        ));
        md.push_str(&format!(
            "\nIn code mode {} calls failed validation (`invalid_arguments`); {} of them reached a person,\nleft a call pending or wrote the journal. A direct client that confirms writes asks before the\nserver sees the arguments.\n",
            t.invalid_calls, t.invalid_calls_asked
        ));
        md.push_str("\n## Tasks\n\n| task | kind | code ok | direct ok | code turns | direct turns | code tokens | direct tokens | reduction |\n|---|---|---|---|---:|---:|---:|---:|---:|\n");
        for r in &self.tasks {
            let kind = serde_json::to_value(r.kind)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {}% |\n",
                r.id,
                kind,
                if r.code.success { "yes" } else { "no" },
                if r.direct.success { "yes" } else { "no" },
                r.code.turns,
                r.direct.turns,
                r.code.input_tokens,
                r.direct.input_tokens,
                r.reduction_pct
            ));
        }
        md
    }
}

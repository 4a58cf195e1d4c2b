//! `capabilities hub dashboard`: the local dashboard on loopback — the calls every run waits
//! for, the tools waiting for review, recent runs and each source's health — opened in the
//! person's browser. It serves in the foreground until stopped; run again while it serves, it
//! reuses it and opens it once more.
//!
//! This file is the dashboard's [`Board`]: what it reads comes from `hub runs`' scan and the
//! source records; a decision goes through [`crate::recorder`], a review through
//! [`review::review_one`], as `hub approve` and `hub review` do.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::{Context, Result};
use capabilities_core::approval::{Channel, Choice};
use capabilities_core::policy::{Effect, ToolClass};
use capabilities_core::record::{CallOutcome, JournalEntry, RunStatus};
use clap::Args;
use serde_json::json;

use super::{print_stdout, review, runs};
use crate::config::HubConfig;
use crate::error::Exit;
use crate::page::dashboard::{
    self, Board, Dashboard, Health, ReviewRow, RunRow, SourceRow, Verdict, View, Waiting,
};
use crate::platform::now_ms;
use crate::recorder;
use crate::settings::Settings;
use crate::store::Store;
use crate::upstream::SourceTransport;

/// How many runs the page lists.
const RUNS_SHOWN: usize = 25;

#[derive(Debug, Args)]
pub struct DashboardArgs {
    /// Print the address without opening a browser.
    #[arg(long)]
    pub no_open: bool,
    /// Serve on this loopback port (default: any free port).
    #[arg(long, default_value_t = 0)]
    pub port: u16,
}

pub fn run(settings: &Settings, args: DashboardArgs) -> Result<ExitCode> {
    let home = settings.home.clone();
    Store::open(&home)?;
    if let Some(running) = dashboard::find_running(&home) {
        let url = dashboard::mint_ticket(&home, &running)?;
        announce(settings, &url, running.port, Some(running.pid), args.no_open)?;
        return Ok(Exit::Ok.into());
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .context("starting the async runtime")?;
    runtime.block_on(async {
        let board = Arc::new(LocalBoard { home: home.clone() });
        let served = Dashboard::bind(home.clone(), board, args.port).await.with_context(|| {
            if args.port == 0 {
                "starting the dashboard on 127.0.0.1".to_owned()
            } else {
                format!("starting the dashboard on 127.0.0.1:{} (is the port taken? pass another `--port`, or leave it out)", args.port)
            }
        })?;
        // Before the address is out: a signal from then on stops the dashboard cleanly.
        let stop = stopped().context("listening for Ctrl-C")?;
        let running = served.record_running()?;
        let url = dashboard::mint_ticket(&home, &running)?;
        announce(settings, &url, served.port(), None, args.no_open)?;
        eprintln!("serving the dashboard until Ctrl-C; `capabilities hub dashboard` again opens it once more");
        served.serve(stop).await;
        Ok::<_, anyhow::Error>(())
    })?;
    Ok(Exit::Ok.into())
}

/// Prints the address (data on stdout) and opens it unless asked not to.
fn announce(settings: &Settings, url: &str, port: u16, reused: Option<u32>, no_open: bool) -> Result<()> {
    let opened = !no_open && crate::page::open_browser(url);
    if settings.json {
        let value = json!({ "url": url, "port": port, "reused": reused.is_some(), "pid": reused.unwrap_or(std::process::id()), "opened": opened });
        print_stdout(&format!("{value}\n"))?;
    } else {
        print_stdout(&format!("{url}\n"))?;
    }
    if let Some(pid) = reused {
        eprintln!(
            "the dashboard already runs (process {pid}); this address opens it once, within 10 minutes"
        );
    } else {
        eprintln!("this address opens the dashboard once, within 10 minutes");
    }
    if !no_open && !opened {
        eprintln!("warning: could not open a browser here (set $BROWSER); open the address above");
    }
    Ok(())
}

/// Completes on Ctrl-C or SIGTERM; both are caught from the moment this returns.
fn stopped() -> std::io::Result<impl Future<Output = ()>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut interrupt = signal(SignalKind::interrupt())?;
    let mut terminate = signal(SignalKind::terminate())?;
    Ok(async move {
        tokio::select! {
            _ = interrupt.recv() => {}
            _ = terminate.recv() => {}
        }
    })
}

/// The dashboard over the store at `home`.
struct LocalBoard {
    home: PathBuf,
}

impl Board for LocalBoard {
    fn view(&self) -> Result<View> {
        let store = Store::open(&self.home)?;
        let now = now_ms();
        let (stored, unreadable) = runs::scan(&store);
        let mut view = View {
            now_ms: now,
            runs_total: stored.len(),
            unreadable: unreadable.into_iter().map(|u| (u.file, u.reason)).collect(),
            ..View::default()
        };
        for r in &stored {
            if r.record.status == RunStatus::AwaitingInput {
                for call in r.record.undecided().filter(|c| c.expires_ms > now) {
                    view.waiting.push(Waiting { run_id: r.record.id.to_string(), call: call.clone() });
                }
            }
        }
        for r in stored.iter().take(RUNS_SHOWN) {
            let row = runs::row_json(r);
            let words = |key: &str| -> Vec<String> {
                row[key]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .filter_map(|v| v.as_str().map(str::to_owned))
                    .collect()
            };
            view.runs.push(RunRow {
                id: r.record.id.to_string(),
                status: r.record.status.as_str().to_owned(),
                created_ms: r.record.created_ms,
                calls: row["calls"].as_u64().unwrap_or(0),
                failed_calls: row["failedCalls"].as_u64().unwrap_or(0),
                // Approvals and connections alike: a run waiting on neither only needs resuming.
                waiting: r
                    .record
                    .pending
                    .iter()
                    .filter(|p| !r.record.decisions.iter().any(|d| d.pending_id == p.id))
                    .count(),
                sources: words("sources"),
                code: row["code"].as_str().unwrap_or_default().to_owned(),
                error: row["error"].as_str().map(str::to_owned),
            });
        }
        // Each source's last call, from the journals (newest run first).
        let mut last: BTreeMap<String, (String, bool, u64)> = BTreeMap::new();
        for r in &stored {
            let mut settled: BTreeMap<u32, bool> = BTreeMap::new();
            for entry in &r.journal {
                if let JournalEntry::Outcome { seq, outcome, .. } = entry {
                    settled.insert(*seq, matches!(outcome, CallOutcome::Ok { .. }));
                }
            }
            for entry in r.journal.iter().rev() {
                if let JournalEntry::Call { seq, address, at_ms, .. } = entry
                    && let Some((ns, _)) = address.split_once('.')
                {
                    let newer = last.get(ns).is_none_or(|(_, _, at)| *at_ms > *at);
                    if newer {
                        let ok = settled.get(seq).copied().unwrap_or(false);
                        last.insert(ns.to_owned(), (address.clone(), ok, *at_ms));
                    }
                }
            }
        }
        let config = HubConfig::load(&store);
        view.problems = config.problems.clone();
        for (record, manifest, connections) in &config.sources {
            let ns = record.spec.namespace.clone();
            let (kind, target) = match &record.spec.transport {
                SourceTransport::Stdio { command, args, .. } => {
                    ("stdio", format!("{command} {}", args.join(" ")))
                }
                SourceTransport::Http { url, .. } => ("http", url.clone()),
                SourceTransport::OpenApi(api) => ("openapi", api.base_url.clone()),
            };
            let waiting_review =
                manifest.as_ref().map_or(0, |m| review::needs_review(m, &config.policy, None).len());
            let slots: Vec<String> = connections
                .connections
                .iter()
                .map(|c| if c.oauth.is_some() { format!("{} (OAuth)", c.name) } else { c.name.clone() })
                .collect();
            let mut notes = Vec::new();
            let health = match (manifest, last.get(&ns)) {
                (None, _) => {
                    notes.push(format!("no tool list; run `capabilities hub refresh {ns}`"));
                    Health::Problem
                }
                (Some(_), Some((address, false, at))) => {
                    notes.push(format!("last call {address} failed at {}", short_time(*at)));
                    Health::Attention
                }
                (Some(_), Some((address, true, at))) => {
                    notes.push(format!("last call {address} ok at {}", short_time(*at)));
                    Health::Ok
                }
                (Some(_), None) => {
                    notes.push("no calls yet".to_owned());
                    Health::Ok
                }
            };
            let health = if waiting_review > 0 && health == Health::Ok { Health::Attention } else { health };
            if waiting_review > 0 {
                notes.push(format!("{waiting_review} tool(s) to review"));
            }
            if !slots.is_empty() {
                notes.push(format!("connections: {}", slots.join(", ")));
            }
            view.sources.push(SourceRow {
                namespace: ns,
                kind: kind.to_owned(),
                target,
                tools: manifest.as_ref().map(|m| m.tools.len()),
                health,
                detail: notes.join("; "),
            });
            if let Some(manifest) = manifest {
                for item in review::needs_review(manifest, &config.policy, None) {
                    let class = match item.proposal.class {
                        ToolClass::ReadOnly => "read-only",
                        ToolClass::Writes => "writes",
                        _ => "destructive or undeclared",
                    };
                    let proposed = if item.proposal.effect == Effect::Allow { "allow" } else { "ask" };
                    view.reviews.push(ReviewRow {
                        address: item.proposal.address.to_string(),
                        digest: item.proposal.digest.to_string(),
                        changed: item.changes.is_some(),
                        class: class.to_owned(),
                        proposed: proposed.to_owned(),
                        flagged: item.proposal.flagged(),
                        summary: item.summary.clone(),
                        changes: item.changes.clone().unwrap_or_default(),
                        unchecked: item.unchecked.clone(),
                    });
                }
            }
        }
        Ok(view)
    }

    fn decide(&self, run_id: &str, call_id: &str, choice: Choice) -> Result<String> {
        let store = Store::open(&self.home)?;
        let decisions = [(call_id.to_owned(), choice)];
        let recorded = recorder::record(&store, run_id, &decisions, Channel::Page)?;
        let address = recorded.decided.first().map(|(call, _)| call.address.clone()).unwrap_or_default();
        let what = match choice {
            Choice::Once => "allowed once",
            Choice::Run => "allowed for the rest of the run",
            Choice::Always => "always allowed while its contract stays as it is",
            Choice::Deny => "denied",
        };
        let next = if recorded.all_decided {
            "The run continues when its agent resumes it."
        } else {
            "The run still waits for other decisions."
        };
        Ok(format!("{address} in run {run_id}: {what}. {next}"))
    }

    fn review(&self, address: &str, digest: &str, verdict: Verdict) -> Result<String> {
        let store = Store::open(&self.home)?;
        let item = review::review_one(&store, address, digest, verdict == Verdict::Approve)?;
        Ok(match verdict {
            Verdict::Approve => {
                let effect = if item.proposal.effect == Effect::Allow { "run" } else { "ask a person" };
                format!("{address}: approved; its calls {effect} while its contract stays as it is.")
            }
            Verdict::Reject => format!("{address}: rejected; its calls are denied."),
        })
    }
}

/// `YYYY-MM-DD HH:MM UTC` of a time.
fn short_time(ms: u64) -> String {
    capabilities_core::approval::state::utc_time(ms)
}

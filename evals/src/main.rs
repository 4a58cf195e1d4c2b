//! `evals`: runs the scripted suite in both modes and writes `report.md` and `report.json`.
//!
//! `cargo xtask evals` builds the hub and runs this. Options: `--out <dir>` (default
//! `evals/results`), `--transcripts` (also write every message read, under `<out>/transcripts`),
//! `--live` (drive a real model through the Anthropic Messages API; needs `ANTHROPIC_API_KEY`,
//! reads `ANTHROPIC_BASE_URL` and `EVALS_MODEL`; writes under `<out>/live`), `--task <id>`
//! (live only, repeatable: just these tasks), `--hosted` (code mode on the hosted Worker in
//! workerd instead of `hub serve --stdio`; needs the bundle `cargo xtask hosted build` writes;
//! the report goes under `<out>/hosted`), `--serve-hosted <port>` (no suite: a hosted tenant with
//! the fixture sources on that port, until stdin ends).

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use capabilities_evals::live::Api;
use capabilities_evals::{Driver, Hub, Setup, repo, run_suite, scratch};

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(err) => {
            eprintln!("evals: error: {err:#}");
            ExitCode::FAILURE
        }
    }
}

/// Tunes the index's ranking on the tuning query set and prints it as core's `Ranking::DEFAULT`.
fn tune() -> Result<bool> {
    use capabilities_core::index::Ranking;
    use capabilities_evals::recall::{self, Catalogs, Figures};
    let catalogs = Catalogs::load(&repo())?;
    let queries = recall::load(&repo().join("evals/queries/tuning.txt"))?;
    eprintln!("evals: tuning from {}", Figures::of(&recall::rank(&catalogs, &queries)));
    let best = recall::tune(&catalogs, &queries, Ranking::DEFAULT, |knob, value, figures| {
        eprintln!("evals:   {knob} = {value}: {figures}");
    });
    eprint!("{}", recall::as_rust(&best));
    Ok(true)
}

fn run() -> Result<bool> {
    let mut out = repo().join("evals/results");
    let mut transcripts = false;
    let mut live = false;
    let mut hub = Hub::Local;
    let mut only = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--out" => out = PathBuf::from(args.next().context("--out takes a directory")?),
            "--transcripts" => transcripts = true,
            "--live" => live = true,
            "--hosted" => hub = Hub::Hosted,
            "--serve-hosted" => {
                let port = args.next().and_then(|p| p.parse().ok());
                let port = port.context("--serve-hosted takes a port number")?;
                capabilities_evals::hosted::serve(&repo(), port)?;
                return Ok(true);
            }
            "--task" => only.push(args.next().context("--task takes a task id")?),
            "--tune" => return tune(),
            other => {
                bail!(
                    "unknown argument `{other}`; use --out <dir>, --transcripts, --live, --hosted or --task <id>"
                )
            }
        }
    }
    // Hosted and live results go beside the committed scripted local report, never over it.
    if out == repo().join("evals/results") {
        if hub == Hub::Hosted {
            out.push("hosted");
        }
        if live {
            out.push("live");
        }
    }
    let driver = if live { Driver::Live { api: Api::from_env()?, only } } else { Driver::Scripted };
    let bin = match std::env::var_os("CAPABILITIES_BIN") {
        Some(path) => PathBuf::from(path),
        None => std::env::current_exe()?.with_file_name("capabilities"),
    };
    if !bin.exists() {
        bail!("{} is missing: run `cargo build -p capabilities` (or set CAPABILITIES_BIN)", bin.display());
    }
    let work = scratch()?;
    let setup = Setup { repo: repo(), bin, work: work.clone(), hub };
    let result = run_suite(setup, &repo().join("evals/tasks"), &driver, |row| {
        eprintln!(
            "evals: {:<40} code {:>3} {:>7}  direct {:>3} {:>7}  {:>5}%",
            row.id,
            if row.code.success { "ok" } else { "NO" },
            row.code.input_tokens,
            if row.direct.success { "ok" } else { "NO" },
            row.direct.input_tokens,
            row.reduction_pct
        );
        for f in row.code.failures.iter().chain(&row.direct.failures) {
            eprintln!("evals:   {f}");
        }
    });
    let _ = std::fs::remove_dir_all(&work);
    let (report, recorded) = result?;
    std::fs::create_dir_all(&out)?;
    std::fs::write(out.join("report.md"), report.markdown())?;
    std::fs::write(out.join("report.json"), serde_json::to_string_pretty(&report)? + "\n")?;
    if transcripts {
        let dir = out.join("transcripts");
        std::fs::create_dir_all(&dir)?;
        for t in &recorded {
            std::fs::write(dir.join(format!("{}.json", t.id)), serde_json::to_string_pretty(t)?)?;
        }
    }
    for gate in &report.gates {
        eprintln!("evals: {} {}: {}", if gate.ok { "pass" } else { "FAIL" }, gate.name, gate.detail);
    }
    eprintln!("evals: wrote {}", out.join("report.md").display());
    Ok(report.passed())
}

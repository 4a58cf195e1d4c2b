//! `capabilities hub exec`: run code through the real engine, as `execute` would.

use std::io::Read;
use std::process::ExitCode;

use anyhow::{Context, Result};
use capabilities_core::surface::envelope::Envelope;
use capabilities_core::surface::envelope::EnvelopeStatus;
use clap::Args;

use super::print_stdout;
use crate::error::{Exit, UsageError};
use crate::host::Host;
use crate::settings::Settings;

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The code: the body of an async function (`return await ns.tool({...})`), or `-` to read
    /// it from stdin.
    pub code: String,
    /// Run it as this profile serves the hub (`hub profiles list`).
    #[arg(long, default_value = "default")]
    pub profile: String,
}

pub fn run(settings: &Settings, args: ExecArgs) -> Result<ExitCode> {
    let code = if args.code == "-" {
        let mut code = String::new();
        std::io::stdin().read_to_string(&mut code).context("reading code from stdin")?;
        code
    } else {
        args.code
    };
    if code.trim().is_empty() {
        return Err(
            UsageError("no code given: pass the code as an argument, or `-` to read stdin".into()).into()
        );
    }
    let host = Host::open_profile(&settings.home, &args.profile)?;
    let envelope = host.execute(&code)?;
    print_envelope(settings, &envelope)?;
    Ok(exit_for(&envelope).into())
}

/// The exit code a run's status maps to.
pub fn exit_for(envelope: &Envelope) -> Exit {
    match envelope.status {
        EnvelopeStatus::Completed => Exit::Ok,
        EnvelopeStatus::AwaitingApproval | EnvelopeStatus::AwaitingConnection => Exit::AwaitingInput,
        _ => Exit::RunFailed,
    }
}

/// Prints an envelope: JSON with `--json`, else a short report for people.
pub fn print_envelope(settings: &Settings, envelope: &Envelope) -> Result<()> {
    if settings.json {
        let mut text = serde_json::to_string_pretty(&envelope.to_value())?;
        text.push('\n');
        return print_stdout(&text);
    }
    print_stdout(&render_envelope(envelope))
}

/// The human-readable form of an envelope.
pub fn render_envelope(envelope: &Envelope) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let calls = envelope.calls.len();
    let _ = writeln!(
        out,
        "{}  {}  ({calls} call{})",
        envelope.status,
        envelope.run_id,
        if calls == 1 { "" } else { "s" }
    );
    if let Some(result) = &envelope.result {
        let pretty = serde_json::to_string_pretty(result).unwrap_or_default();
        let _ = writeln!(out, "result:\n{}", indent(&pretty));
    }
    if let Some(error) = &envelope.error {
        let _ = writeln!(out, "error: {} ({})", error.message, error.code);
        if let Some(hint) = &error.hint {
            let _ = writeln!(out, "hint: {hint}");
        }
    }
    for pending in &envelope.pending {
        let _ = writeln!(out, "waiting: {} — {}", pending.address, pending.summary);
        let _ = writeln!(out, "  decide with: capabilities hub approve {}", envelope.run_id);
    }
    if !envelope.calls.is_empty() {
        let _ = writeln!(out, "calls:");
        for call in &envelope.calls {
            let _ =
                writeln!(out, "  {} {} {} ms", if call.ok { "ok  " } else { "fail" }, call.address, call.ms);
        }
    }
    if !envelope.logs.is_empty() {
        let _ = writeln!(out, "logs:");
        for line in &envelope.logs {
            let _ = writeln!(out, "{}", indent(line));
        }
    }
    if let Some(truncated) = &envelope.truncated {
        let what: Vec<&str> = [("result", truncated.result), ("logs", truncated.logs)]
            .iter()
            .filter(|(_, t)| *t)
            .map(|(w, _)| *w)
            .collect();
        let _ = writeln!(out, "truncated: {}", what.join(", "));
    }
    for notice in &envelope.notices {
        let _ = writeln!(out, "note: {notice}");
    }
    out
}

fn indent(text: &str) -> String {
    text.lines().map(|l| format!("  {l}")).collect::<Vec<_>>().join("\n")
}

//! `capabilities hub runs` (filtered by status, source, time and text) and
//! `capabilities hub runs show <id>` (the envelope, then each call with its timing, decision
//! and scrubbed preview). A record or journal that cannot be read is named with the reason,
//! never dropped in silence; `hub doctor` uses the same scan.

use std::fmt::Write as _;
use std::process::ExitCode;
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Result, bail};
use capabilities_core::approval::state::{civil_date, utc_time};
use capabilities_core::pending::{Channel, Choice, DecisionRecord};
use capabilities_core::record::{CallOutcome, JournalEntry, RunRecord};
use clap::{Args, Subcommand};
use serde_json::{Value, json};

use super::print_stdout;
use crate::error::{Exit, UsageError};
use crate::host::Host;
use crate::settings::Settings;
use crate::store::Store;

const STATUSES: [&str; 6] = ["running", "awaiting_input", "completed", "failed", "cancelled", "expired"];

/// How much of a call's answer `runs show` prints.
const PREVIEW_CHARS: usize = 160;

#[derive(Debug, Args)]
pub struct RunsArgs {
    #[command(subcommand)]
    pub command: Option<RunsCommand>,
    /// Only runs with this status: running, awaiting_input, completed, failed, cancelled, expired.
    #[arg(long)]
    pub status: Option<String>,
    /// Only runs that called (or wait on) a tool of this source namespace.
    #[arg(long, value_name = "NAMESPACE")]
    pub source: Option<String>,
    /// Only runs started at or after this: an age (`30m`, `2h`, `7d`) or a UTC date
    /// (`2026-12-01`, `2026-12-01T09:30Z`).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    /// Only runs started before this; the same forms as `--since`.
    #[arg(long, value_name = "WHEN")]
    pub until: Option<String>,
    /// Only runs whose code, result, error or tool addresses contain this text (any case).
    #[arg(long)]
    pub text: Option<String>,
    /// At most this many runs, newest first.
    #[arg(long, default_value_t = 50)]
    pub limit: usize,
}

#[derive(Debug, Subcommand)]
pub enum RunsCommand {
    /// Show one run: its status, result or error, each call with its timing, decision and a
    /// preview of its answer, and what it waits for.
    Show {
        /// The run id (`run_…`).
        id: String,
        /// A receipt per call: the source's identity (package, version and integrity for an
        /// installed one; URL or command and the tool's contract digest), input and output
        /// digests, timing, decision and status, read from the journal.
        #[arg(long)]
        receipts: bool,
    },
}

/// A stored run with its journal.
pub(crate) struct StoredRun {
    pub record: RunRecord,
    pub journal: Vec<JournalEntry>,
}

/// A run file that cannot be read, and why.
pub(crate) struct Unreadable {
    pub file: String,
    pub reason: String,
}

/// Every stored run, newest first, and the files that cannot be read.
pub(crate) fn scan(store: &Store) -> (Vec<StoredRun>, Vec<Unreadable>) {
    let mut runs = Vec::new();
    let mut unreadable = Vec::new();
    for id in store.run_ids() {
        let record = match store.load_run_sync(&id) {
            Ok(Some(record)) => record,
            // Removed between the listing and the read.
            Ok(None) => continue,
            Err(err) => {
                unreadable.push(Unreadable { file: format!("runs/{id}.json"), reason: err.to_string() });
                continue;
            }
        };
        let journal = match store.read_journal_sync(&id) {
            Ok(journal) => journal,
            Err(err) => {
                unreadable
                    .push(Unreadable { file: format!("runs/{id}.journal.jsonl"), reason: err.to_string() });
                Vec::new()
            }
        };
        runs.push(StoredRun { record, journal });
    }
    (runs, unreadable)
}

pub fn run(settings: &Settings, args: RunsArgs) -> Result<ExitCode> {
    let host = Host::open(&settings.home)?;
    if let Some(RunsCommand::Show { id, receipts }) = &args.command {
        return show(settings, &host, id, *receipts);
    }
    let filter = Filter::from_args(&args, now_ms())?;
    let (runs, unreadable) = scan(host.store());
    let rows: Vec<&StoredRun> = runs.iter().filter(|r| filter.keeps(r)).take(args.limit).collect();
    if settings.json {
        let list = json!({
            "runs": rows.iter().map(|r| row_json(r)).collect::<Vec<_>>(),
            "unreadable": unreadable.iter().map(|u| json!({ "file": u.file, "reason": u.reason })).collect::<Vec<_>>(),
        });
        return print_stdout(&format!("{}\n", serde_json::to_string_pretty(&list)?))
            .map(|()| Exit::Ok.into());
    }
    let mut text = String::new();
    if rows.is_empty() {
        text.push_str(if filter.is_empty() { "no runs\n" } else { "no runs match\n" });
    }
    for r in &rows {
        let run = &r.record;
        let calls = calls(&r.journal).len();
        let _ = writeln!(
            text,
            "{}  {}  {:<14}  {calls:>3} call{}  {}",
            run.id,
            utc_time(run.created_ms),
            run.status.as_str(),
            if calls == 1 { " " } else { "s" },
            first_line(&run.body, 60),
        );
    }
    for u in &unreadable {
        let _ = writeln!(
            text,
            "cannot read {}: {} (remove it, or run `capabilities hub doctor`)",
            u.file, u.reason
        );
    }
    print_stdout(&text)?;
    Ok(Exit::Ok.into())
}

fn show(settings: &Settings, host: &Host, id: &str, receipts: bool) -> Result<ExitCode> {
    let Some(envelope) = host.show_run(id)? else {
        bail!("there is no run `{id}`; `capabilities hub runs` lists the runs kept (7 days)");
    };
    let Some(record) = host.store().load_run_sync(id)? else {
        bail!("there is no run `{id}`; `capabilities hub runs` lists the runs kept (7 days)");
    };
    let (journal, journal_problem) = match host.store().read_journal_sync(id) {
        Ok(journal) => (journal, None),
        Err(err) => (Vec::new(), Some(err.to_string())),
    };
    let calls = calls(&journal);
    if settings.json {
        let mut value = envelope.to_value();
        value["createdMs"] = json!(record.created_ms);
        value["updatedMs"] = json!(record.updated_ms);
        value["attempts"] = json!(record.attempts);
        value["journal"] = Value::Array(calls.iter().map(|c| c.to_json(&record.decisions)).collect());
        if let Some(problem) = &journal_problem {
            value["journalUnreadable"] = json!(problem);
        }
        if receipts {
            value["receipts"] = super::receipts::build(host.store(), &record, &journal)
                .iter()
                .map(super::receipts::Receipt::to_json)
                .collect();
        }
        return print_stdout(&format!("{}\n", serde_json::to_string_pretty(&value)?))
            .map(|()| Exit::Ok.into());
    }
    let mut text = super::exec::render_envelope(&envelope);
    let _ = writeln!(
        text,
        "started {}, {} attempt{}",
        utc_time(record.created_ms),
        record.attempts,
        if record.attempts == 1 { "" } else { "s" }
    );
    if !calls.is_empty() {
        let _ = writeln!(text, "journal:");
    }
    for call in &calls {
        let _ = writeln!(text, "  #{} {}", call.seq, call.line());
        if let Some(decision) = record.decisions.iter().find(|d| d.seq == call.seq) {
            let _ = writeln!(text, "      decided: {}", decision_words(decision));
        }
        if let Some(preview) = call.preview() {
            let _ = writeln!(text, "      {preview}");
        }
    }
    if receipts {
        let _ = writeln!(text, "receipts:");
        for receipt in super::receipts::build(host.store(), &record, &journal) {
            text.push_str(&receipt.render());
        }
    }
    if let Some(problem) = journal_problem {
        let _ = writeln!(text, "cannot read runs/{id}.journal.jsonl: {problem}");
    }
    print_stdout(&text)?;
    Ok(Exit::Ok.into())
}

/// One call as the journal holds it: announced, then (unless the hub stopped) settled.
struct JournalCall<'j> {
    seq: u32,
    address: &'j str,
    connection: Option<&'j str>,
    at_ms: u64,
    outcome: Option<(&'j CallOutcome, u64)>,
}

fn calls(journal: &[JournalEntry]) -> Vec<JournalCall<'_>> {
    let mut calls: Vec<JournalCall<'_>> = Vec::new();
    for entry in journal {
        match entry {
            JournalEntry::Call { seq, address, connection, at_ms, .. } => calls.push(JournalCall {
                seq: *seq,
                address,
                connection: connection.as_deref(),
                at_ms: *at_ms,
                outcome: None,
            }),
            JournalEntry::Outcome { seq, outcome, ms } => {
                if let Some(call) = calls.iter_mut().rev().find(|c| c.seq == *seq) {
                    call.outcome = Some((outcome, *ms));
                }
            }
        }
    }
    calls
}

impl JournalCall<'_> {
    fn line(&self) -> String {
        let on = self.connection.map(|c| format!(" (connection {c})")).unwrap_or_default();
        let at = clock(self.at_ms);
        match self.outcome {
            Some((CallOutcome::Ok { .. }, ms)) => format!("ok    {}{on}  at {at}, {ms} ms", self.address),
            Some((CallOutcome::Err { failure }, ms)) => {
                format!("fail  {}{on}  at {at}, {ms} ms: {}", self.address, failure.code)
            }
            None => format!(
                "????  {}{on}  at {at}: no outcome (the hub stopped while it was in flight)",
                self.address
            ),
        }
    }

    /// The start of what the call answered, already scrubbed when it was journaled.
    fn preview(&self) -> Option<String> {
        let text = match self.outcome? {
            (CallOutcome::Ok { value }, _) => serde_json::to_string(value).ok()?,
            (CallOutcome::Err { failure }, _) => failure.message.clone(),
        };
        Some(cap(&text, PREVIEW_CHARS))
    }

    fn to_json(&self, decisions: &[DecisionRecord]) -> Value {
        let mut value = json!({ "seq": self.seq, "address": self.address, "atMs": self.at_ms });
        if let Some(connection) = self.connection {
            value["connection"] = json!(connection);
        }
        match self.outcome {
            Some((outcome, ms)) => {
                value["ok"] = json!(outcome.is_ok());
                value["ms"] = json!(ms);
                if let CallOutcome::Err { failure } = outcome {
                    value["code"] = json!(failure.code);
                }
                value["preview"] = json!(self.preview());
            }
            None => value["ok"] = Value::Null,
        }
        if let Some(d) = decisions.iter().find(|d| d.seq == self.seq) {
            value["decision"] = json!({
                "choice": d.choice, "channel": d.channel, "atMs": d.at_ms,
            });
        }
        value
    }
}

fn decision_words(d: &DecisionRecord) -> String {
    let choice = match d.choice {
        Choice::Once => "allowed once",
        Choice::Run => "allowed for the run",
        Choice::Always => "allowed always",
        Choice::Deny => "denied",
    };
    let by = match d.channel {
        Channel::Cli => "by a person at the terminal",
        Channel::Page => "by a person on the approval page",
        Channel::Elicitation => "by a person in the client's prompt",
        Channel::Admin => "through the hosted hub's admin API",
        Channel::Inbox => "by a person in the hosted review inbox",
    };
    format!("{choice} {by}, {}", utc_time(d.at_ms))
}

/// What `hub runs` keeps.
struct Filter {
    status: Option<String>,
    source: Option<String>,
    since_ms: Option<u64>,
    until_ms: Option<u64>,
    text: Option<String>,
}

impl Filter {
    fn from_args(args: &RunsArgs, now_ms: u64) -> Result<Filter> {
        if let Some(status) = &args.status
            && !STATUSES.contains(&status.as_str())
        {
            let message = format!("unknown status `{status}`: use one of {}", STATUSES.join(", "));
            return Err(UsageError(message).into());
        }
        let when = |flag: &str, raw: &Option<String>| -> Result<Option<u64>> {
            raw.as_deref()
                .map(|raw| {
                    parse_when(raw, now_ms).ok_or_else(|| {
                        UsageError(format!(
                            "`--{flag} {raw}` is not an age (30m, 2h, 7d) or a UTC date (2026-12-01, 2026-12-01T09:30Z)"
                        ))
                        .into()
                    })
                })
                .transpose()
        };
        Ok(Filter {
            status: args.status.clone(),
            source: args.source.clone(),
            since_ms: when("since", &args.since)?,
            until_ms: when("until", &args.until)?,
            text: args.text.as_deref().map(str::to_lowercase),
        })
    }

    fn is_empty(&self) -> bool {
        self.status.is_none()
            && self.source.is_none()
            && self.since_ms.is_none()
            && self.until_ms.is_none()
            && self.text.is_none()
    }

    fn keeps(&self, r: &StoredRun) -> bool {
        let run = &r.record;
        if self.status.as_deref().is_some_and(|s| s != run.status.as_str()) {
            return false;
        }
        if self.since_ms.is_some_and(|t| run.created_ms < t)
            || self.until_ms.is_some_and(|t| run.created_ms >= t)
        {
            return false;
        }
        let addresses = || {
            r.journal
                .iter()
                .filter_map(|e| match e {
                    JournalEntry::Call { address, .. } => Some(address.as_str()),
                    JournalEntry::Outcome { .. } => None,
                })
                .chain(run.pending.iter().map(|p| p.address.as_str()))
        };
        if let Some(ns) = &self.source
            && !addresses().any(|a| a.split_once('.').is_some_and(|(n, _)| n == ns))
        {
            return false;
        }
        if let Some(needle) = &self.text {
            let mut haystack = run.body.to_lowercase();
            if let Some(result) = &run.output.result {
                haystack.push_str(&result.to_string().to_lowercase());
            }
            if let Some(error) = &run.output.error {
                haystack.push_str(&error.message.to_lowercase());
            }
            if !haystack.contains(needle.as_str())
                && !addresses().any(|a| a.to_lowercase().contains(needle.as_str()))
            {
                return false;
            }
        }
        true
    }
}

/// `30m`, `2h`, `7d`, `90s` ago; or `YYYY-MM-DD`, `YYYY-MM-DDTHH:MM[:SS]Z` in UTC.
fn parse_when(raw: &str, now_ms: u64) -> Option<u64> {
    let raw = raw.trim();
    if let Some(unit) = raw.chars().last().filter(char::is_ascii_alphabetic)
        && raw[..raw.len() - 1].bytes().all(|b| b.is_ascii_digit())
        && raw.len() > 1
    {
        let n: u64 = raw[..raw.len() - 1].parse().ok()?;
        let secs = match unit {
            's' => n,
            'm' => n.checked_mul(60)?,
            'h' => n.checked_mul(3600)?,
            'd' => n.checked_mul(86_400)?,
            'w' => n.checked_mul(7 * 86_400)?,
            _ => return None,
        };
        return Some(now_ms.saturating_sub(secs.checked_mul(1000)?));
    }
    let (date, time) = match raw.split_once(['T', ' ']) {
        Some((date, time)) => (date, Some(time.strip_suffix('Z').unwrap_or(time))),
        None => (raw, None),
    };
    let mut parts = date.split('-');
    let (y, m, d): (i64, i64, i64) =
        (parts.next()?.parse().ok()?, parts.next()?.parse().ok()?, parts.next()?.parse().ok()?);
    if parts.next().is_some()
        || !(1..=12).contains(&m)
        || !(1..=31).contains(&d)
        || !(1970..=9999).contains(&y)
    {
        return None;
    }
    let days = days_from_civil(y, m, d);
    // A day past the month's end (February 30) does not round-trip.
    if civil_date(days) != (y, m, d) {
        return None;
    }
    let mut secs = u64::try_from(days).ok()? * 86_400;
    if let Some(time) = time {
        let mut hms = time.split(':');
        let h: u64 = hms.next()?.parse().ok()?;
        let min: u64 = hms.next()?.parse().ok()?;
        let s: u64 = hms.next().map_or(Some(0), |s| s.parse().ok())?;
        if hms.next().is_some() || h > 23 || min > 59 || s > 59 {
            return None;
        }
        secs += h * 3600 + min * 60 + s;
    }
    secs.checked_mul(1000)
}

/// Days since 1970-01-01 of a (year, month, day) date; the inverse of `civil_date`.
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = if m > 2 { m - 3 } else { m + 9 };
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// `HH:MM:SS` UTC of a time.
fn clock(ms: u64) -> String {
    let secs = ms / 1000 % 86_400;
    format!("{:02}:{:02}:{:02}", secs / 3600, secs % 3600 / 60, secs % 60)
}

pub(crate) fn row_json(r: &StoredRun) -> Value {
    let run = &r.record;
    let calls = calls(&r.journal);
    let mut sources: Vec<&str> =
        calls.iter().filter_map(|c| c.address.split_once('.').map(|(ns, _)| ns)).collect();
    sources.sort_unstable();
    sources.dedup();
    json!({
        "id": run.id, "status": run.status.as_str(), "createdMs": run.created_ms,
        "updatedMs": run.updated_ms, "attempts": run.attempts, "pending": run.pending.len(),
        "calls": calls.len(), "failedCalls": calls.iter().filter(|c| matches!(c.outcome, Some((CallOutcome::Err { .. }, _)))).count(),
        "sources": sources, "code": first_line(&run.body, 120), "profile": run.profile,
        "error": run.output.error.as_ref().map(|e| &e.code),
    })
}

/// The first non-empty line of `text`, capped.
fn first_line(text: &str, chars: usize) -> String {
    cap(text.lines().map(str::trim).find(|l| !l.is_empty()).unwrap_or(""), chars)
}

fn cap(text: &str, chars: usize) -> String {
    if text.chars().count() <= chars {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(chars.saturating_sub(1)).collect();
    out.push('…');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ages_and_dates() {
        let now = 1_796_000_000_000;
        assert_eq!(parse_when("2h", now), Some(now - 7_200_000));
        assert_eq!(parse_when("7d", now), Some(now - 7 * 86_400_000));
        assert_eq!(parse_when("1970-01-02", now), Some(86_400_000));
        assert_eq!(parse_when("2026-12-01T09:30Z", now), Some(1_796_117_400_000));
        assert_eq!(parse_when("2026-12-01 09:30:15", now), Some(1_796_117_415_000));
        for bad in [
            "",
            "h",
            "2x",
            "-3d",
            "2026-02-30",
            "2026-13-01",
            "2026-12-01T25:00Z",
            "yesterday",
            "99999999999999999999d",
        ] {
            assert_eq!(parse_when(bad, now), None, "{bad}");
        }
    }

    #[test]
    fn days_round_trip() {
        for days in [0, 59, 60, 365, 11_016, 20_788, 2_932_896] {
            let (y, m, d) = civil_date(days);
            assert_eq!(days_from_civil(y, m, d), days);
        }
    }
}

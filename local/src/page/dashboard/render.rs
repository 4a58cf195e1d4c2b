//! The dashboard's HTML: core's page layout and call card, with the dashboard's sections
//! around them. Plain forms, no script; every value from the store is escaped (tool names,
//! descriptions and arguments come from upstream servers and may be hostile).

use std::fmt::Write as _;

use capabilities_core::approval::page::{card, choices, escape, layout};
use capabilities_core::approval::state::utc_time;

use super::{Health, View};

const STYLE: &str = "
main { max-width: 64rem; }
nav { display: flex; gap: 1rem; flex-wrap: wrap; margin: 0 0 1rem; }
section { margin-top: 2.5rem; }
section > h2 { font-size: 1.3rem; border-bottom: 1px solid var(--line); padding-bottom: .3rem; }
article { border: 1px solid var(--line); border-radius: 10px; padding: 1rem 1.25rem; margin: 1rem 0; }
article h3 { margin: 0 0 .75rem; font-size: 1.05rem; overflow-wrap: anywhere; }
table { border-collapse: collapse; width: 100%; font-size: .92rem; }
th, td { text-align: left; padding: .35rem .5rem; border-bottom: 1px solid var(--line); vertical-align: top; }
th { color: var(--muted); font-weight: 600; white-space: nowrap; }
td code { overflow-wrap: anywhere; }
td.nowrap { white-space: nowrap; }
.tag { display: inline-block; border: 1px solid var(--line); border-radius: 999px; padding: 0 .5rem; font-size: .85rem; }
.ok { color: inherit; } .attention { color: var(--accent); } .problem { color: var(--danger); font-weight: 600; }
.empty { color: var(--muted); }
form.review { margin-top: 1rem; display: flex; gap: .6rem; flex-wrap: wrap; }
";

/// The whole dashboard. `csrf(kind, target)` gives the token of the form that acts on
/// `target`.
pub(super) fn home(view: &View, csrf: &dyn Fn(&str, &[&str]) -> String) -> String {
    let mut body = String::new();
    let _ = write!(
        body,
        r##"<style>{STYLE}</style>
<h1>Hub dashboard</h1>
<p class="lead">{waiting} waiting for you · {reviews} to review · {runs} kept · {sources} · as of {now}. Reload for the latest.</p>
<nav><a href="#waiting">Waiting for you</a><a href="#review">Tools to review</a><a href="#runs">Runs</a><a href="#sources">Sources</a></nav>
"##,
        waiting = count(view.waiting.len(), "call", "calls"),
        reviews = count(view.reviews.len(), "tool", "tools"),
        runs = count(view.runs_total, "run", "runs"),
        sources = count(view.sources.len(), "source", "sources"),
        now = escape(&utc_time(view.now_ms)),
    );
    waiting(&mut body, view, csrf);
    reviews(&mut body, view, csrf);
    runs(&mut body, view);
    sources(&mut body, view);
    layout("Hub dashboard", &body)
}

fn waiting(out: &mut String, view: &View, csrf: &dyn Fn(&str, &[&str]) -> String) {
    out.push_str("<section id=\"waiting\">\n<h2>Waiting for you</h2>\n");
    if view.waiting.is_empty() {
        out.push_str("<p class=\"empty\">No call waits for a decision.</p>\n");
    }
    for w in &view.waiting {
        let token = csrf("decide", &[&w.run_id, &w.call.id]);
        let fields = [("csrf", token.as_str()), ("run", w.run_id.as_str()), ("call", w.call.id.as_str())];
        let _ = write!(
            out,
            "<article data-run=\"{run}\" data-call=\"{call}\">\n<h3><code>{address}</code> · run <code>{run}</code>, call #{seq}</h3>\n{card}\n{form}\n</article>\n",
            run = escape(&w.run_id),
            call = escape(&w.call.id),
            address = escape(&w.call.address),
            seq = w.call.seq,
            card = card(&w.call, view.now_ms),
            form = choices(&fields, Some("/decide")),
        );
    }
    out.push_str("<p class=\"note\">A run continues when its agent resumes it; \
        <code>capabilities hub approve &lt;run&gt;</code> decides and resumes from the terminal.</p>\n</section>\n");
}

fn reviews(out: &mut String, view: &View, csrf: &dyn Fn(&str, &[&str]) -> String) {
    out.push_str("<section id=\"review\">\n<h2>Tools to review</h2>\n");
    if view.reviews.is_empty() {
        out.push_str("<p class=\"empty\">Every tool's contract has been reviewed.</p>\n");
    }
    for r in &view.reviews {
        let token = csrf("review", &[&r.address, &r.digest]);
        let status = if r.changed { "changed" } else { "new" };
        let flag = if r.flagged { " <span class=\"tag problem\">flagged</span>" } else { "" };
        let summary = if r.summary.is_empty() { "(the tool does not say)" } else { r.summary.as_str() };
        let mut changes = String::new();
        for change in &r.changes {
            let _ = write!(changes, "<li>{}</li>", escape(change));
        }
        if !changes.is_empty() {
            changes = format!("<dt>What changed</dt><dd><ul>{changes}</ul></dd>");
        }
        let unchecked = r
            .unchecked
            .as_deref()
            .map(|why| format!("<dt>Arguments</dt><dd>go unchecked: {}</dd>", escape(why)))
            .unwrap_or_default();
        let _ = write!(
            out,
            r#"<article data-tool="{address}">
<h3><code>{address}</code> <span class="tag">{status}</span>{flag}</h3>
<dl>
  <dt>What it does</dt><dd>{summary}</dd>
  <dt>Kind</dt><dd>{class}</dd>
  <dt>Contract</dt><dd><code>{digest}</code></dd>
  <dt>If approved</dt><dd>policy {proposed}s its calls</dd>
  {changes}{unchecked}
</dl>
<form method="post" action="/review" class="review">
  <input type="hidden" name="csrf" value="{token}">
  <input type="hidden" name="address" value="{address}">
  <input type="hidden" name="digest" value="{digest}">
  <button type="submit" name="verdict" value="approve" class="primary">Approve</button>
  <button type="submit" name="verdict" value="reject" class="danger">Reject</button>
</form>
</article>
"#,
            address = escape(&r.address),
            summary = escape(summary),
            class = escape(&r.class),
            digest = escape(&r.digest),
            proposed = escape(&r.proposed),
            token = escape(&token),
        );
    }
    out.push_str("<p class=\"note\">Approve accepts this contract: read-only tools run, the rest ask. \
        Reject accepts that you saw it and denies its calls. A tool left here asks on every call.</p>\n</section>\n");
}

fn runs(out: &mut String, view: &View) {
    out.push_str("<section id=\"runs\">\n<h2>Runs</h2>\n");
    if view.runs.is_empty() {
        out.push_str("<p class=\"empty\">No runs kept (runs are kept 7 days).</p>\n");
    } else {
        out.push_str(
            "<table>\n<thead><tr><th>Run</th><th>Started</th><th>Status</th><th>Calls</th><th>Sources</th><th>Code</th></tr></thead>\n<tbody>\n",
        );
        for r in &view.runs {
            let failed =
                if r.failed_calls > 0 { format!(", {} failed", r.failed_calls) } else { String::new() };
            let waits = match (r.waiting, r.status.as_str()) {
                (0, "awaiting_input") => ", decided; continues when resumed".to_owned(),
                (0, _) => String::new(),
                (n, _) => format!(", {n} waiting"),
            };
            let error =
                r.error.as_deref().map(|e| format!(" <code>{}</code>", escape(e))).unwrap_or_default();
            let class = match r.status.as_str() {
                "failed" | "expired" => "problem",
                "awaiting_input" | "running" => "attention",
                _ => "ok",
            };
            let _ = writeln!(
                out,
                "<tr data-run=\"{id}\"><td><code>{id}</code></td><td class=\"nowrap\">{at}</td><td class=\"{class} nowrap\">{status}{error}</td><td class=\"nowrap\">{calls}{failed}{waits}</td><td>{sources}</td><td><code>{code}</code></td></tr>",
                id = escape(&r.id),
                at = escape(&utc_time(r.created_ms)),
                status = escape(&r.status),
                calls = r.calls,
                sources = escape(&r.sources.join(", ")),
                code = escape(&r.code),
            );
        }
        out.push_str("</tbody>\n</table>\n");
    }
    if view.runs_total > view.runs.len() {
        let _ = writeln!(
            out,
            "<p class=\"note\">The newest {} of {}; <code>capabilities hub runs</code> filters them all.</p>",
            view.runs.len(),
            view.runs_total
        );
    }
    for (file, reason) in &view.unreadable {
        let _ = writeln!(
            out,
            "<p class=\"problem\">Cannot read <code>{}</code>: {}</p>",
            escape(file),
            escape(reason)
        );
    }
    out.push_str("<p class=\"note\"><code>capabilities hub runs show &lt;run&gt;</code> shows a run's calls, timing and decisions.</p>\n</section>\n");
}

fn sources(out: &mut String, view: &View) {
    out.push_str("<section id=\"sources\">\n<h2>Sources</h2>\n");
    if view.sources.is_empty() {
        out.push_str("<p class=\"empty\">No sources yet: <code>capabilities hub import</code> or <code>capabilities hub add</code>.</p>\n");
    } else {
        out.push_str(
            "<table>\n<thead><tr><th>Namespace</th><th>Kind</th><th>Tools</th><th>Health</th></tr></thead>\n<tbody>\n",
        );
        for s in &view.sources {
            let (class, word) = match s.health {
                Health::Ok => ("ok", "ok"),
                Health::Attention => ("attention", "attention"),
                Health::Problem => ("problem", "problem"),
            };
            let tools = s.tools.map_or_else(|| "?".to_owned(), |n| n.to_string());
            let _ = writeln!(
                out,
                "<tr data-source=\"{ns}\"><td><code>{ns}</code></td><td>{kind} <code>{target}</code></td><td class=\"nowrap\">{tools}</td><td class=\"{class}\">{word}: {detail}</td></tr>",
                ns = escape(&s.namespace),
                kind = escape(&s.kind),
                target = escape(&s.target),
                detail = escape(&s.detail),
            );
        }
        out.push_str("</tbody>\n</table>\n");
    }
    for problem in &view.problems {
        let _ = writeln!(out, "<p class=\"problem\">{}</p>", escape(problem));
    }
    out.push_str("<p class=\"note\">From the hub's records and journals; <code>capabilities hub doctor</code> starts each source and lists its tools.</p>\n</section>\n");
}

/// What a form did (or why it did nothing), with the way back.
pub(super) fn done(title: &str, message: &str) -> String {
    layout(
        title,
        &format!(
            "<h1>{}</h1>\n<p>{}</p>\n<p class=\"note\"><a href=\"/\">Back to the dashboard</a></p>",
            escape(title),
            escape(message)
        ),
    )
}

fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use capabilities_core::approval::{PendingCall, PendingKind};
    use capabilities_core::manifest::ContractDigest;

    use super::super::{ReviewRow, RunRow, SourceRow, Waiting};
    use super::*;

    /// Every value that reaches the page from the store or an upstream server is escaped,
    /// in text and in attributes alike.
    #[test]
    fn hostile_values_stay_text() {
        let evil = r#"x"><script>alert(1)</script><img src=x onerror=alert(2)>'"#;
        let call = PendingCall {
            id: evil.to_owned(),
            kind: PendingKind::Approval,
            seq: 1,
            address: evil.to_owned(),
            connection: Some(evil.to_owned()),
            summary: evil.to_owned(),
            reason: evil.to_owned(),
            preview: evil.to_owned(),
            call_digest: evil.to_owned(),
            contract: ContractDigest([0; 32]),
            created_ms: 0,
            expires_ms: 60_000,
        };
        let view = View {
            now_ms: 0,
            waiting: vec![Waiting { run_id: evil.to_owned(), call }],
            reviews: vec![ReviewRow {
                address: evil.to_owned(),
                digest: evil.to_owned(),
                changed: true,
                class: evil.to_owned(),
                proposed: evil.to_owned(),
                flagged: true,
                summary: evil.to_owned(),
                changes: vec![evil.to_owned()],
                unchecked: Some(evil.to_owned()),
            }],
            runs: vec![RunRow {
                id: evil.to_owned(),
                status: evil.to_owned(),
                created_ms: 0,
                calls: 1,
                failed_calls: 1,
                waiting: 1,
                sources: vec![evil.to_owned()],
                code: evil.to_owned(),
                error: Some(evil.to_owned()),
            }],
            runs_total: 2,
            unreadable: vec![(evil.to_owned(), evil.to_owned())],
            sources: vec![SourceRow {
                namespace: evil.to_owned(),
                kind: evil.to_owned(),
                target: evil.to_owned(),
                tools: Some(1),
                health: Health::Problem,
                detail: evil.to_owned(),
            }],
            problems: vec![evil.to_owned()],
        };
        let page = home(&view, &|_, _| evil.to_owned());
        for raw in ["<script>alert", "<img", "x\">", "'\""] {
            assert!(!page.contains(raw), "{raw} reached the page unescaped");
        }
        assert!(page.matches("&lt;script&gt;alert(1)").count() >= 20, "the values are shown, as text");
    }
}

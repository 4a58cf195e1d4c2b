//! The HTML a person decides a call on: the local hub's approval page and the hosted hub's
//! review inbox show the same facts about a call and the same four choices. Plain, semantic
//! markup with inline styles for light and dark mode, no script and nothing loaded from
//! elsewhere. Every value from a run is escaped.

use crate::approval::Choice;
use crate::approval::state::civil_date;
use crate::pending::PendingCall;

/// The most argument text a page shows.
const MAX_PREVIEW_BYTES: usize = 4096;

const STYLE: &str = "
:root { color-scheme: light dark; --bg: #ffffff; --fg: #1b1b1f; --muted: #55565c; --line: #c9cad0;
  --accent: #0b57d0; --on-accent: #ffffff; --danger: #b3261e; --code: #f2f3f5; }
@media (prefers-color-scheme: dark) {
  :root { --bg: #151518; --fg: #ececf0; --muted: #a9aab2; --line: #3b3c42;
    --accent: #a8c7fa; --on-accent: #062e6f; --danger: #f2b8b5; --code: #212226; } }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--fg); font: 16px/1.5 system-ui, -apple-system, 'Segoe UI', sans-serif; }
main { max-width: 44rem; margin: 0 auto; padding: 2rem 1.25rem 3rem; }
h1 { font-size: 1.6rem; line-height: 1.25; margin: 0 0 .5rem; }
h2 { font-size: 1.05rem; margin: 1.5rem 0 .5rem; }
p.lead { margin: 0 0 1.25rem; color: var(--muted); }
code, pre { font-family: ui-monospace, 'SFMono-Regular', Menlo, Consolas, monospace; font-size: .92em; }
dl { display: grid; grid-template-columns: max-content 1fr; gap: .4rem 1.25rem; margin: 0; }
dt { color: var(--muted); }
dd { margin: 0; overflow-wrap: anywhere; }
pre { background: var(--code); border: 1px solid var(--line); border-radius: 8px; padding: .75rem 1rem;
  margin: 0; max-height: 22rem; overflow: auto; white-space: pre-wrap; overflow-wrap: anywhere; }
fieldset { border: 0; padding: 0; margin: 1.75rem 0 0; }
legend { font-weight: 600; margin-bottom: .6rem; padding: 0; }
.choices { display: flex; flex-wrap: wrap; gap: .6rem; }
button { font: inherit; padding: .6rem 1.1rem; border-radius: 8px; border: 1px solid var(--line);
  background: transparent; color: var(--fg); cursor: pointer; }
button.primary { background: var(--accent); border-color: var(--accent); color: var(--on-accent); font-weight: 600; }
button.danger { border-color: var(--danger); color: var(--danger); }
button:focus-visible { outline: 3px solid var(--accent); outline-offset: 2px; }
ul.help { color: var(--muted); font-size: .92rem; padding-left: 1.2rem; margin: 1rem 0 0; }
.note { color: var(--muted); font-size: .92rem; margin-top: 1.5rem; }
";

/// The page for an undecided call, with its four choices, posting `fields` (hidden inputs)
/// back to the page's own address.
pub fn form(call: &PendingCall, fields: &[(&str, &str)], now_ms: u64) -> String {
    let body = format!(
        r#"<h1>Allow this call?</h1>
<p class="lead">An agent's code wants to call <code>{address}</code>. It waits for your decision.</p>
{card}
{choices}"#,
        address = escape(&call.address),
        card = card(call, now_ms),
        choices = choices(fields, None),
    );
    layout(&format!("Allow {}?", call.address), &body)
}

/// What a person needs to decide `call`: the tool, its connection, what it does, why it asks,
/// when the question expires, and the arguments (redacted, capped).
pub fn card(call: &PendingCall, now_ms: u64) -> String {
    let connection = call.connection.as_deref().unwrap_or("default");
    let summary = if call.summary.is_empty() { "(the tool does not say)" } else { call.summary.as_str() };
    let (preview, cut) = cap(&call.preview, MAX_PREVIEW_BYTES);
    let cut_note = if cut { "\n… (cut at 4 KB)" } else { "" };
    let left = span(call.expires_ms.saturating_sub(now_ms));
    format!(
        r#"<dl>
  <dt>Tool</dt><dd><code>{address}</code></dd>
  <dt>Connection</dt><dd>{connection}</dd>
  <dt>What it does</dt><dd>{summary}</dd>
  <dt>Why it asks</dt><dd>{reason}</dd>
  <dt>Expires</dt><dd><time datetime="{iso}">in {left}, at {clock} UTC</time></dd>
</dl>
<h2>Arguments</h2>
<pre>{preview}{cut_note}</pre>"#,
        address = escape(&call.address),
        connection = escape(connection),
        summary = escape(summary),
        reason = escape(&call.reason),
        iso = iso(call.expires_ms),
        clock = &iso(call.expires_ms)[11..16],
        preview = escape(preview),
    )
}

/// The four choices as one form POST with `fields` as hidden inputs, to `action` (or the
/// page's own address).
pub fn choices(fields: &[(&str, &str)], action: Option<&str>) -> String {
    let action = action.map(|a| format!(" action=\"{}\"", escape(a))).unwrap_or_default();
    let hidden: String = fields
        .iter()
        .map(|(name, value)| {
            format!("  <input type=\"hidden\" name=\"{}\" value=\"{}\">\n", escape(name), escape(value))
        })
        .collect();
    format!(
        r#"<form method="post"{action}>
{hidden}  <fieldset>
    <legend>Your decision</legend>
    <div class="choices">
      <button type="submit" name="choice" value="once" class="primary">Allow once</button>
      <button type="submit" name="choice" value="run">Allow for this run</button>
      <button type="submit" name="choice" value="always">Always allow</button>
      <button type="submit" name="choice" value="deny" class="danger">Deny</button>
    </div>
    <ul class="help">
      <li><strong>Allow once</strong>: this call only.</li>
      <li><strong>Allow for this run</strong>: this tool, until the run ends.</li>
      <li><strong>Always allow</strong>: this tool from now on, while its contract stays as it is now.</li>
      <li><strong>Deny</strong>: the agent's code gets an <code>approval_denied</code> error.</li>
    </ul>
  </fieldset>
</form>"#
    )
}

/// What the page says after its own decision.
pub fn decided(call: &PendingCall, choice: Choice, back: Option<&str>) -> String {
    let (title, next) = match choice {
        Choice::Once => ("Allowed once", "The run continues when the agent resumes it."),
        Choice::Run => ("Allowed for this run", "The run continues when the agent resumes it."),
        Choice::Always => (
            "Always allowed",
            "The run continues when the agent resumes it; later calls to this tool run without asking \
             until its contract changes.",
        ),
        Choice::Deny => ("Denied", "When the agent resumes the run, its code gets an approval_denied error."),
    };
    let body = format!(
        r#"<h1>{title}</h1>
<p class="lead"><code>{address}</code></p>
<p>{next}</p>
{note}"#,
        note = note(back),
        address = escape(&call.address),
    );
    layout(title, &body)
}

/// A page whose call was decided before, here or elsewhere.
pub fn already(call: &PendingCall, choice: Option<Choice>, back: Option<&str>) -> String {
    let how = match choice {
        Some(Choice::Once) => " (allowed once)",
        Some(Choice::Run) => " (allowed for this run)",
        Some(Choice::Always) => " (always allowed)",
        Some(Choice::Deny) => " (denied)",
        None => "",
    };
    let body = format!(
        r#"<h1>Already decided</h1>
<p class="lead"><code>{address}</code></p>
<p>This call was already decided{how}. Nothing changed.</p>
{note}"#,
        note = note(back),
        address = escape(&call.address),
    );
    layout("Already decided", &body)
}

/// The page's last line: a link back to the inbox, or that the tab can close (a page of its own).
fn note(back: Option<&str>) -> String {
    match back {
        Some(url) => format!("<p class=\"note\"><a href=\"{}\">Back to the inbox</a></p>", escape(url)),
        None => "<p class=\"note\">You can close this tab.</p>".to_owned(),
    }
}

/// A short page with a title and one sentence.
pub fn notice(title: &str, text: &str) -> String {
    layout(title, &format!("<h1>{}</h1>\n<p>{}</p>", escape(title), escape(text)))
}

/// A whole page: `body` (already HTML) under `title`.
pub fn layout(title: &str, body: &str) -> String {
    format!(
        r#"<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta name="referrer" content="same-origin">
<title>{title} · capabilities</title>
<style>{STYLE}</style>
</head>
<body>
<main>
{body}
</main>
</body>
</html>
"#,
        title = escape(title),
    )
}

/// A duration as a person reads it: minutes up to two hours, then hours.
fn span(ms: u64) -> String {
    let minutes = ms.div_ceil(60_000);
    if minutes < 120 { format!("{minutes} min") } else { format!("{} h", minutes.div_ceil(60)) }
}

/// `text` cut to at most `max` bytes on a character boundary, and whether it was cut.
fn cap(text: &str, max: usize) -> (&str, bool) {
    if text.len() <= max {
        return (text, false);
    }
    let mut end = max;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    (&text[..end], true)
}

/// Text made safe for HTML.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// Milliseconds since the epoch as `YYYY-MM-DDTHH:MM:SSZ`.
fn iso(ms: u64) -> String {
    let secs = ms / 1000;
    let (days, rest) = (secs / 86_400, secs % 86_400);
    let (year, month, day) = civil_date(days as i64);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", rest / 3600, rest % 3600 / 60, rest % 60)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_utc() {
        assert_eq!(iso(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso(1_796_000_000_000), "2026-11-30T00:53:20Z");
        assert_eq!(iso(951_782_400_000), "2000-02-29T00:00:00Z");
    }

    #[test]
    fn values_are_escaped_and_capped() {
        assert_eq!(escape(r#"<script>"a"&'b'"#), "&lt;script&gt;&quot;a&quot;&amp;&#39;b&#39;");
        assert_eq!(cap("ééé", 3), ("é", true));
        assert_eq!(cap("abc", 3), ("abc", false));
    }
}

//! Every stable error code the engine gives a run or a call, with its message and hint, in one
//! place. Codes are part of the contract with the model (`ToolError.code`, the envelope's
//! `error.code`); hints say what to do next, and name a person's next step in the host's own
//! words ([`HostWords`]), never a command of one hub.

use crate::code::{CodeError, CodeErrorKind};
use crate::limits::Limits;
use crate::ports::{AttemptEnd, LimitKind, UpstreamError};
use crate::record::{RunError, ToolFailure};
use crate::wording::HostWords;

/// How an attempt's end leaves the run.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Ended {
    /// The code returned this value (`None` for `undefined`).
    Completed(Option<serde_json::Value>),
    /// The run waits for a person.
    Waiting,
    Failed(RunError),
    Cancelled(RunError),
}

/// The run's state after its attempt ended with `end`. `pending` says whether the attempt left
/// calls waiting for a person; `lines` maps the prepared body back to the model's text.
pub(super) fn attempt_end(
    end: AttemptEnd,
    pending: bool,
    limits: &Limits,
    lines: &[u32],
    namespaces: &[&str],
    signature: &dyn Fn(&str) -> Option<String>,
    words: &HostWords,
) -> Ended {
    match end {
        AttemptEnd::Completed(value) => Ended::Completed(value),
        AttemptEnd::Suspended if pending => Ended::Waiting,
        AttemptEnd::Suspended => {
            Ended::Failed(RunError::new("internal", "the attempt paused with nothing pending", None))
        }
        AttemptEnd::Unserializable(what) => Ended::Failed(RunError::new(
            "result_not_serializable",
            format!("the returned value cannot be sent back as JSON: {what}"),
            Some("return plain data: objects, arrays, strings, numbers, booleans, null"),
        )),
        AttemptEnd::Threw(err) if err.code.is_none() && unknown_name(&err).is_some() => {
            let name = unknown_name(&err).unwrap_or_default();
            let at = thrown_at(err.stack.as_deref(), lines)
                .map(|line| format!(" (line {line})"))
                .unwrap_or_default();
            Ended::Failed(unknown_source(name, &at, namespaces, words))
        }
        AttemptEnd::Threw(err) if err.code.is_none() && closest_tool(&err).is_some() => {
            let at = thrown_at(err.stack.as_deref(), lines)
                .map(|line| format!(" (line {line})"))
                .unwrap_or_default();
            let hint = match closest_tool(&err).and_then(signature) {
                Some(line) => format!("call it by its name: {line}"),
                None => "call a tool the error names, or find one with hub.search(\"what you want to do\")"
                    .to_owned(),
            };
            Ended::Failed(RunError::new(
                "unknown_tool",
                format!("{}: {}{at}", err.name, err.message),
                Some(&hint),
            ))
        }
        AttemptEnd::Threw(err) => {
            let code = err.code.clone().unwrap_or_else(|| "uncaught_error".to_owned());
            let hint = match code.as_str() {
                "approval_denied" => "a person denied this call; do not retry it, tell the user",
                "policy_denied" => "policy forbids this tool; pick another or ask the user to change policy",
                "auth_required" => {
                    "a connection needs a person to sign in again: tell the user the command the error \
                     names; retrying before that fails the same way"
                }
                // A hint the hub gave with the call's error says more than a generic one.
                _ => err
                    .hint
                    .as_deref()
                    .unwrap_or("catch errors around calls that may fail, or fix the code and run it again"),
            };
            let at = thrown_at(err.stack.as_deref(), lines)
                .map(|line| format!(" (line {line})"))
                .unwrap_or_default();
            Ended::Failed(RunError::new(&code, format!("{}: {}{at}", err.name, err.message), Some(hint)))
        }
        AttemptEnd::Limit(kind) => Ended::Failed(limit_error(kind, limits)),
        AttemptEnd::Stalled => Ended::Failed(RunError::new(
            "stalled",
            "the code waits on a promise that can never settle",
            Some("make sure every promise you await is resolved or rejected"),
        )),
        AttemptEnd::Cancelled => Ended::Cancelled(cancelled()),
        AttemptEnd::Internal(message) => Ended::Failed(RunError::new("internal", message, None)),
    }
}

/// The name a `ReferenceError` says is not defined, when it reads like a source's namespace
/// (`github.searchIssues(…)` with no `github` source).
fn unknown_name(err: &crate::ports::GuestError) -> Option<&str> {
    if err.name != "ReferenceError" {
        return None;
    }
    let name = err.message.strip_suffix(" is not defined")?;
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    plain.then_some(name)
}

/// The first tool a prelude `TypeError` for an unknown tool names as closest
/// (`tracker has no tool "addComent"; closest: tracker.addComment. …`).
fn closest_tool(err: &crate::ports::GuestError) -> Option<&str> {
    if err.name != "TypeError" || !err.message.contains(" has no tool \"") {
        return None;
    }
    let rest = &err.message[err.message.find("; closest: ")? + "; closest: ".len()..];
    let end = rest.find([',', ' ']).unwrap_or(rest.len());
    let address = rest[..end].trim_end_matches('.');
    address.contains('.').then_some(address)
}

/// Code used a name that is neither a source nor a variable: which sources there are, and how
/// to find a tool.
pub(super) fn unknown_source(name: &str, at: &str, namespaces: &[&str], words: &HostWords) -> RunError {
    if namespaces.is_empty() {
        return RunError::new(
            "unknown_source",
            format!("ReferenceError: {name} is not defined{at}; this hub has no sources yet"),
            Some(&format!("tell the user to add one with {}", words.add_source)),
        );
    }
    let mut listed: Vec<&str> = namespaces.iter().take(20).copied().collect();
    listed.sort_unstable();
    let more = namespaces.len().saturating_sub(listed.len());
    let more = if more > 0 { format!(" and {more} more") } else { String::new() };
    RunError::new(
        "unknown_source",
        format!(
            "ReferenceError: {name} is not defined{at}; the hub has no source `{name}`, its sources are {}{more}",
            listed.join(", ")
        ),
        Some("call a tool of one of those sources, or find one with hub.search(\"what you want to do\")"),
    )
}

/// The code pipeline refused the code.
pub(super) fn code_error(err: &CodeError) -> RunError {
    let code = match err.kind {
        CodeErrorKind::Syntax => "syntax_error".to_owned(),
        kind => format!("code_{}", kind.as_str()),
    };
    RunError { code, message: err.to_string(), hint: Some(err.hint.clone()) }
}

pub(super) fn limit_error(kind: LimitKind, limits: &Limits) -> RunError {
    match kind {
        LimitKind::Compute => RunError::new(
            "compute_limit",
            format!("the code ran for more than {} ms of compute", limits.compute_ms),
            Some("look for an endless loop, or do less work per execute"),
        ),
        LimitKind::Wall => RunError::new(
            "wall_limit",
            format!("the attempt took longer than {} ms", limits.wall_ms),
            Some("split the work into several execute calls"),
        ),
        LimitKind::Memory => RunError::new(
            "memory_limit",
            format!("the code used more than {} bytes of memory", limits.memory_bytes),
            Some("process less data at once"),
        ),
        LimitKind::Stack => RunError::new(
            "stack_limit",
            "the code recursed too deeply",
            Some("replace deep recursion with a loop"),
        ),
    }
}

pub(super) fn cancelled() -> RunError {
    RunError::new("cancelled", "the run was cancelled", None)
}

pub(super) fn approval_expired() -> RunError {
    RunError::new(
        "approval_expired",
        "nobody decided the pending call in time",
        Some("start the task again with a new execute"),
    )
}

pub(super) fn max_calls(limits: &Limits) -> RunError {
    RunError::new(
        "max_calls",
        format!("the run made more than {} tool calls", limits.max_calls),
        Some("do the work in batches over several execute calls"),
    )
}

pub(super) fn divergence(seq: u32, what: &str) -> RunError {
    RunError::new(
        "divergence",
        format!("on resume, call #{} was {what}", seq + 1),
        Some("the code must make the same calls in the same order on every attempt; start a new execute"),
    )
}

/// The journal could not be written: the run stops rather than risk repeating a call.
pub(super) fn journal_failed(err: &dyn std::fmt::Display, words: &HostWords) -> RunError {
    RunError::new(
        "store_failed",
        format!("the journal could not be written: {err}"),
        Some(&format!("run {}", words.diagnose)),
    )
}

/// The run's output is withheld: a credential it used cannot be scrubbed from it.
pub(super) fn output_withheld(words: &HostWords) -> RunError {
    RunError::new(
        "credential_unusable",
        "the run's output was withheld: a credential it used cannot be scrubbed",
        Some(&format!("set a longer value with {}", words.auth)),
    )
}

/// A tool failure with no upstream status, not worth retrying as it is.
pub(super) fn failure(code: &str, message: impl Into<String>, hint: Option<&str>) -> ToolFailure {
    ToolFailure {
        code: code.to_owned(),
        message: message.into(),
        hint: hint.map(str::to_owned),
        status: None,
        retryable: false,
    }
}

pub(super) fn outcome_unknown(address: &str) -> ToolFailure {
    failure(
        "outcome_unknown",
        format!("the hub stopped while `{address}` was in flight; it is not repeated"),
        Some("check the upstream for the effect before trying again"),
    )
}

pub(super) fn policy_denied(address: &str, reason: &str) -> ToolFailure {
    failure(
        "policy_denied",
        format!("policy denies `{address}`: {reason}"),
        Some("pick another tool, or ask the user to change the policy"),
    )
}

pub(super) fn approval_denied(address: &str) -> ToolFailure {
    failure(
        "approval_denied",
        format!("a person denied `{address}`"),
        Some("do not retry this call; tell the user what you wanted to do"),
    )
}

pub(super) fn credentials_unavailable(err: &dyn std::fmt::Display, words: &HostWords) -> ToolFailure {
    failure("credentials_unavailable", err.to_string(), Some(&format!("run {}", words.diagnose)))
}

pub(super) fn credential_unusable(
    namespace: &str,
    err: &dyn std::fmt::Display,
    words: &HostWords,
) -> ToolFailure {
    failure(
        "credential_unusable",
        format!("a credential of `{namespace}` cannot be kept out of results: {err}"),
        Some(&format!("set a longer value with {}", words.auth)),
    )
}

/// A connection whose credentials the source refuses, or whose OAuth tokens the authorization
/// server no longer takes: only a person can fix it, by signing in again.
pub(super) fn auth_required(namespace: &str, connection: &str, why: &str, words: &HostWords) -> ToolFailure {
    ToolFailure {
        code: "auth_required".to_owned(),
        message: format!(
            "connection `{connection}` of `{namespace}` needs signing in again with {}: {why}",
            words.auth_connection(namespace, connection)
        ),
        hint: Some(format!(
            "tell the user to run {}; retrying before that fails the same way",
            words.auth_connection(namespace, connection)
        )),
        status: None,
        retryable: false,
    }
}

/// Why a call waits for a connection's credential, as the person and the model read it.
pub(super) fn connection_reason(
    namespace: &str,
    connection: &str,
    slots: &[String],
    words: &HostWords,
) -> String {
    format!(
        "connection `{connection}` needs {}; run {}",
        slots.join(", "),
        words.auth_connection(namespace, connection)
    )
}

/// An upstream call that produced no result.
pub(super) fn upstream_failure(
    err: &UpstreamError,
    namespace: &str,
    connection: &str,
    words: &HostWords,
) -> ToolFailure {
    match err {
        UpstreamError::Timeout(ms) => ToolFailure {
            code: "timeout".to_owned(),
            message: format!("no answer within {ms} ms"),
            hint: Some("try again later or with a smaller request".to_owned()),
            status: None,
            retryable: true,
        },
        UpstreamError::Unavailable(why) => ToolFailure {
            code: "source_unavailable".to_owned(),
            message: why.clone(),
            hint: Some(format!("the user can run {}", words.diagnose)),
            status: None,
            retryable: true,
        },
        UpstreamError::Protocol(why) => ToolFailure {
            code: "upstream_protocol".to_owned(),
            message: why.clone(),
            hint: None,
            status: None,
            retryable: false,
        },
        UpstreamError::Unauthorized { message, .. } => auth_required(namespace, connection, message, words),
        // JSON-RPC's "invalid params": the source says what is wrong with the arguments.
        UpstreamError::Refused { message, status: Some(-32602) } => ToolFailure {
            code: "invalid_arguments".to_owned(),
            message: format!("the source refused the call's parameters: {message}"),
            hint: Some(
                "fix the arguments (hub.describe shows the tool's signature) and call it again".to_owned(),
            ),
            status: Some(-32602),
            retryable: false,
        },
        // An HTTP API's 400 or 422: the request's shape or values are what it refused.
        UpstreamError::Refused { message, status: Some(status @ (400 | 422)) } => ToolFailure {
            code: "invalid_arguments".to_owned(),
            message: message.clone(),
            hint: Some(
                "fix the arguments (hub.describe shows the tool's signature) and call it again".to_owned(),
            ),
            status: Some(*status),
            retryable: false,
        },
        // An HTTP API's 404, or MCP's "resource not found": the thing named does not exist.
        UpstreamError::Refused { message, status: Some(status @ (404 | 410 | -32002)) } => ToolFailure {
            code: "not_found".to_owned(),
            message: message.clone(),
            hint: Some(
                "check the identifiers in the arguments: a list or search call of the same source shows which exist"
                    .to_owned(),
            ),
            status: Some(*status),
            retryable: false,
        },
        UpstreamError::RateLimited { retry_after_s } => ToolFailure {
            code: "rate_limited".to_owned(),
            message: match retry_after_s {
                Some(s) => format!("the source is rate limiting calls; it asks to wait {s} s"),
                None => "the source is rate limiting calls".to_owned(),
            },
            hint: Some(match retry_after_s {
                Some(s) => format!("wait {s} s before calling it again, and make fewer calls"),
                None => "wait a little before calling it again, and make fewer calls".to_owned(),
            }),
            status: Some(429),
            retryable: true,
        },
        UpstreamError::Refused { message, status } => ToolFailure {
            code: "upstream_error".to_owned(),
            message: message.clone(),
            hint: None,
            status: *status,
            retryable: false,
        },
    }
}

/// The line of the model's text where a thrown error was raised: the innermost frame of the
/// run's own code in the guest's stack, mapped back through the code pipeline's line map. The
/// stack is the guest's to forge, which at worst names a wrong line.
fn thrown_at(stack: Option<&str>, lines: &[u32]) -> Option<u32> {
    const MODULE: &str = "code.js:";
    let stack = stack?;
    let start = stack.find(MODULE)? + MODULE.len();
    let digits: &str = &stack[start..][..stack[start..].bytes().take_while(u8::is_ascii_digit).count()];
    let body_line: u32 = digits.parse().ok()?;
    lines.get(usize::try_from(body_line.checked_sub(1)?).ok()?).copied()
}

/// A call whose arguments the tool's input schema refuses: never sent, never asked about.
/// Each problem is a path and what was expected; the hint is the tool's signature.
pub(crate) fn arguments_refused(address: &str, problems: &[String], signature: &str) -> ToolFailure {
    ToolFailure {
        code: "invalid_arguments".to_owned(),
        message: format!(
            "`{address}` was not called, its arguments do not fit its schema: {}",
            problems.join("; ")
        ),
        hint: Some(format!("fix the arguments and call it again: {signature}")),
        status: None,
        retryable: false,
    }
}

#[cfg(test)]
mod tests {
    use expect_test::expect;

    use super::*;
    use crate::ports::GuestError;

    fn words() -> HostWords {
        HostWords {
            decide: "<decide {run}>".to_owned(),
            auth: "<auth>".to_owned(),
            auth_connection: "<auth {namespace} {connection}>".to_owned(),
            diagnose: "<diagnose>".to_owned(),
            add_source: "<add>".to_owned(),
        }
    }

    fn run_line(e: &RunError) -> String {
        format!("{}: {} | {}", e.code, e.message, e.hint.as_deref().unwrap_or("-"))
    }

    fn tool_line(f: &ToolFailure) -> String {
        let retry = if f.retryable { " (retryable)" } else { "" };
        format!("{}{retry}: {} | {}", f.code, f.message, f.hint.as_deref().unwrap_or("-"))
    }

    /// The whole table: every code the engine reports, as the model reads it.
    #[test]
    fn every_failure_the_engine_reports() {
        let limits = Limits::default();
        let words = words();
        let thrown = |code: Option<&str>| GuestError {
            name: "ToolError".to_owned(),
            message: "boom".to_owned(),
            code: code.map(str::to_owned),
            hint: None,
            stack: Some("    at <anonymous> (code.js:2:5)".to_owned()),
        };
        let ends = [
            AttemptEnd::Suspended,
            AttemptEnd::Unserializable("a function".to_owned()),
            AttemptEnd::Threw(thrown(None)),
            AttemptEnd::Threw(thrown(Some("approval_denied"))),
            AttemptEnd::Threw(thrown(Some("policy_denied"))),
            AttemptEnd::Threw(thrown(Some("auth_required"))),
            AttemptEnd::Threw(GuestError {
                name: "ReferenceError".to_owned(),
                message: "github is not defined".to_owned(),
                code: None,
                hint: None,
                stack: Some("    at <anonymous> (code.js:2:5)".to_owned()),
            }),
            AttemptEnd::Threw(GuestError {
                name: "TypeError".to_owned(),
                message: "notes has no tool \"addNtoe\"; closest: notes.addNote, notes.addTag. hub.search(query) finds tools by what they do".to_owned(),
                code: None,
                hint: None,
                stack: Some("    at <anonymous> (code.js:1:5)".to_owned()),
            }),
            AttemptEnd::Threw(GuestError {
                name: "ReferenceError".to_owned(),
                message: "myVariable is not defined".to_owned(),
                code: None,
                hint: None,
                stack: None,
            }),
            AttemptEnd::Limit(LimitKind::Compute),
            AttemptEnd::Limit(LimitKind::Wall),
            AttemptEnd::Limit(LimitKind::Memory),
            AttemptEnd::Limit(LimitKind::Stack),
            AttemptEnd::Stalled,
            AttemptEnd::Cancelled,
            AttemptEnd::Internal("bug".to_owned()),
        ];
        let signature = |address: &str| {
            (address == "notes.addNote")
                .then(|| "notes.addNote(input: { text: string }): Promise<unknown>".to_owned())
        };
        let mut lines = Vec::new();
        for end in ends {
            match attempt_end(end, false, &limits, &[7, 9], &["chat", "notes"], &signature, &words) {
                Ended::Failed(e) => lines.push(format!("run  {}", run_line(&e))),
                Ended::Cancelled(e) => lines.push(format!("run  {} (cancelled)", run_line(&e))),
                other => lines.push(format!("run  {other:?}")),
            }
        }
        for e in [
            unknown_source("github", "", &[], &words),
            approval_expired(),
            max_calls(&limits),
            divergence(2, "`a.b` where the journal holds `a.c`"),
            journal_failed(&"disk full", &words),
            output_withheld(&words),
        ] {
            lines.push(format!("run  {}", run_line(&e)));
        }
        for f in [
            outcome_unknown("a.b"),
            policy_denied("a.b", "a rule denies it"),
            approval_denied("a.b"),
            credentials_unavailable(&"no keychain", &words),
            credential_unusable("a", &"too short", &words),
            upstream_failure(&UpstreamError::Timeout(5), "a", "work", &words),
            upstream_failure(&UpstreamError::Unavailable("gone".to_owned()), "a", "work", &words),
            upstream_failure(&UpstreamError::Protocol("bad".to_owned()), "a", "work", &words),
            upstream_failure(
                &UpstreamError::Refused {
                    message: "entities: expected array".to_owned(),
                    status: Some(-32602),
                },
                "a",
                "work",
                &words,
            ),
            upstream_failure(
                &UpstreamError::Refused {
                    message: "the API answered HTTP 422: {\"message\":\"labels must be a list\"}".to_owned(),
                    status: Some(422),
                },
                "a",
                "work",
                &words,
            ),
            upstream_failure(
                &UpstreamError::Refused {
                    message: "the API answered HTTP 404: Not Found".to_owned(),
                    status: Some(404),
                },
                "a",
                "work",
                &words,
            ),
            upstream_failure(&UpstreamError::RateLimited { retry_after_s: Some(30) }, "a", "work", &words),
            upstream_failure(&UpstreamError::RateLimited { retry_after_s: None }, "a", "work", &words),
            upstream_failure(
                &UpstreamError::Refused { message: "no".to_owned(), status: Some(403) },
                "a",
                "work",
                &words,
            ),
            upstream_failure(
                &UpstreamError::Unauthorized { message: "HTTP 401".to_owned(), challenge: None },
                "a",
                "work",
                &words,
            ),
            auth_required("a", "work", "the refresh token was revoked", &words),
        ] {
            lines.push(format!("call {}", tool_line(&f)));
        }
        lines.push(format!("wait {}", connection_reason("a", "work", &["TOKEN".to_owned()], &words)));
        expect![[r#"
            run  internal: the attempt paused with nothing pending | -
            run  result_not_serializable: the returned value cannot be sent back as JSON: a function | return plain data: objects, arrays, strings, numbers, booleans, null
            run  uncaught_error: ToolError: boom (line 9) | catch errors around calls that may fail, or fix the code and run it again
            run  approval_denied: ToolError: boom (line 9) | a person denied this call; do not retry it, tell the user
            run  policy_denied: ToolError: boom (line 9) | policy forbids this tool; pick another or ask the user to change policy
            run  auth_required: ToolError: boom (line 9) | a connection needs a person to sign in again: tell the user the command the error names; retrying before that fails the same way
            run  unknown_source: ReferenceError: github is not defined (line 9); the hub has no source `github`, its sources are chat, notes | call a tool of one of those sources, or find one with hub.search("what you want to do")
            run  unknown_tool: TypeError: notes has no tool "addNtoe"; closest: notes.addNote, notes.addTag. hub.search(query) finds tools by what they do (line 7) | call it by its name: notes.addNote(input: { text: string }): Promise<unknown>
            run  uncaught_error: ReferenceError: myVariable is not defined | catch errors around calls that may fail, or fix the code and run it again
            run  compute_limit: the code ran for more than 10000 ms of compute | look for an endless loop, or do less work per execute
            run  wall_limit: the attempt took longer than 90000 ms | split the work into several execute calls
            run  memory_limit: the code used more than 67108864 bytes of memory | process less data at once
            run  stack_limit: the code recursed too deeply | replace deep recursion with a loop
            run  stalled: the code waits on a promise that can never settle | make sure every promise you await is resolved or rejected
            run  cancelled: the run was cancelled | - (cancelled)
            run  internal: bug | -
            run  unknown_source: ReferenceError: github is not defined; this hub has no sources yet | tell the user to add one with <add>
            run  approval_expired: nobody decided the pending call in time | start the task again with a new execute
            run  max_calls: the run made more than 500 tool calls | do the work in batches over several execute calls
            run  divergence: on resume, call #3 was `a.b` where the journal holds `a.c` | the code must make the same calls in the same order on every attempt; start a new execute
            run  store_failed: the journal could not be written: disk full | run <diagnose>
            run  credential_unusable: the run's output was withheld: a credential it used cannot be scrubbed | set a longer value with <auth>
            call outcome_unknown: the hub stopped while `a.b` was in flight; it is not repeated | check the upstream for the effect before trying again
            call policy_denied: policy denies `a.b`: a rule denies it | pick another tool, or ask the user to change the policy
            call approval_denied: a person denied `a.b` | do not retry this call; tell the user what you wanted to do
            call credentials_unavailable: no keychain | run <diagnose>
            call credential_unusable: a credential of `a` cannot be kept out of results: too short | set a longer value with <auth>
            call timeout (retryable): no answer within 5 ms | try again later or with a smaller request
            call source_unavailable (retryable): gone | the user can run <diagnose>
            call upstream_protocol: bad | -
            call invalid_arguments: the source refused the call's parameters: entities: expected array | fix the arguments (hub.describe shows the tool's signature) and call it again
            call invalid_arguments: the API answered HTTP 422: {"message":"labels must be a list"} | fix the arguments (hub.describe shows the tool's signature) and call it again
            call not_found: the API answered HTTP 404: Not Found | check the identifiers in the arguments: a list or search call of the same source shows which exist
            call rate_limited (retryable): the source is rate limiting calls; it asks to wait 30 s | wait 30 s before calling it again, and make fewer calls
            call rate_limited (retryable): the source is rate limiting calls | wait a little before calling it again, and make fewer calls
            call upstream_error: no | -
            call auth_required: connection `work` of `a` needs signing in again with <auth a work>: HTTP 401 | tell the user to run <auth a work>; retrying before that fails the same way
            call auth_required: connection `work` of `a` needs signing in again with <auth a work>: the refresh token was revoked | tell the user to run <auth a work>; retrying before that fails the same way
            wait connection `work` needs TOKEN; run <auth a work>"#]].assert_eq(&lines.join("\n"));
    }
}

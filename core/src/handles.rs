//! Large results and logs as handles. What does not fit the inline budget (`inlineResultBytes`)
//! is kept whole in the host's blob store (the [`Blobs`] port), already scrubbed, and the
//! envelope carries a preview and a handle; `hub.read(handle, { offset, limit })` reads the text
//! back in slices, and an MCP client can read it whole as a resource.
//!
//! A handle is `h_<the run's 16 hex>_<32 hex>`: the run that made it and 128 random bits. It is
//! read only by the profile whose run made it (on hosted, inside the tenant's own storage), only
//! while that run is kept and its record lists the handle. Every other handle — unknown,
//! another run's, another profile's, expired — gets the same [`unknown_handle`] failure.
//!
//! A handle holds UTF-8 text: a result as its JSON, logs as their lines joined with `\n`.
//! Offsets and limits count bytes of that text. A slice never splits a character: it holds the
//! characters that start in `[offset, offset + limit)` (so it may run up to 3 bytes past the
//! limit), and `next` is where the following slice starts. Slices at a fixed stride tile the
//! text with nothing lost or repeated.
//!
//! Over MCP a handle is a resource: `capabilities://runs/<run>/handles/<handle>`, with
//! `?offset=<n>&limit=<n>` for a part (the same slice as `hub.read`, at most
//! [`RESOURCE_PART_BYTES`]; without them, the first part). The envelope's `resource_link`s name
//! the parts that together hold the whole, so no message exceeds what clients buffer (the
//! TypeScript SDK's stdio client takes 10 MB).

use serde::Serialize;
use serde_json::Value;

use crate::ports::{BlobBytes, Blobs, BoxFuture, Entropy, RunStore};
use crate::record::{HandleKind, HandleRecord, RunId, RunRecord, ToolFailure};

/// The largest result a run can return, in characters of JSON as the guest counts them (UTF-16
/// code units, never more than its UTF-8 bytes). Far beyond this the guest heap
/// (`memoryBytes`) runs out first.
pub const MAX_RESULT_CHARS: usize = 64 * 1024 * 1024;
/// Console output a run keeps, in bytes; past it lines are dropped and `truncated.logs` set.
pub const LOG_CAPTURE_BYTES: usize = 4 * 1024 * 1024;
/// A slice's length when `hub.read` is given no `limit`.
pub const DEFAULT_SLICE_BYTES: u64 = 1024 * 1024;
/// The longest slice; a larger `limit` is lowered to it.
pub const MAX_SLICE_BYTES: u64 = 4 * 1024 * 1024;
/// Handle resources' URIs: `capabilities://runs/<run>/handles/<handle>`.
pub const URI_SCHEME: &str = "capabilities://runs/";
/// The most one `resources/read` of a handle returns.
pub const RESOURCE_PART_BYTES: u64 = 4 * 1024 * 1024;

/// A handle's text checked for shape, so its parts are safe as file names and keys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Handle {
    text: String,
    run: RunId,
}

impl Handle {
    /// A new handle of run `run` from 16 unpredictable bytes.
    pub fn new(run: &RunId, random: [u8; 16]) -> Handle {
        let text = format!("h_{}_{}", &run[4..], hex::encode(random));
        Handle { text, run: run.clone() }
    }

    /// `text` as a handle, if it has the shape of one.
    pub fn parse(text: &str) -> Option<Handle> {
        let rest = text.strip_prefix("h_")?;
        let (run, random) = rest.split_once('_')?;
        let hex =
            |s: &str, n: usize| s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !hex(run, 16) || !hex(random, 32) {
            return None;
        }
        let run = RunId::parse(&format!("run_{run}"))?;
        Some(Handle { text: text.to_owned(), run })
    }

    /// The handle named by a resource URI, whose run segment must be the handle's own run.
    pub fn from_uri(uri: &str) -> Option<Handle> {
        let (run, handle) = uri.strip_prefix(URI_SCHEME)?.split_once("/handles/")?;
        Handle::parse(handle).filter(|h| h.run.as_str() == run)
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn run(&self) -> &RunId {
        &self.run
    }

    /// The resource URI an MCP client reads the whole text at.
    pub fn uri(&self) -> String {
        uri(&self.text)
    }
}

/// The media type of a handle's text.
pub fn mime_type(kind: HandleKind) -> &'static str {
    match kind {
        HandleKind::Result => "application/json",
        HandleKind::Logs => "text/plain",
    }
}

/// The resource URI of handle `handle` (as a record holds it).
pub fn uri(handle: &str) -> String {
    match Handle::parse(handle) {
        Some(h) => format!("{URI_SCHEME}{}/handles/{}", h.run.as_str(), h.text),
        None => String::new(),
    }
}

/// One slice of a handle's text, as `hub.read` returns it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Slice {
    pub text: String,
    /// Where `text` starts, in bytes (the asked offset, moved to a character boundary).
    pub offset: u64,
    /// Where the next slice starts.
    pub next: u64,
    /// The handle's whole length in bytes.
    pub bytes: u64,
    /// Whether `text` reaches the end.
    pub eof: bool,
}

/// Bytes a host reads for a slice of `limit`: room to finish the last character.
pub fn read_len(limit: u64) -> u64 {
    limit.saturating_add(4)
}

/// The resource URIs that together hold handle `handle` of `bytes` bytes: the handle's own URI
/// when one part holds it, else one `?offset=&limit=` URI per part.
pub fn part_uris(handle: &str, bytes: u64) -> Vec<String> {
    let base = uri(handle);
    if bytes <= RESOURCE_PART_BYTES {
        return vec![base];
    }
    (0..bytes.div_ceil(RESOURCE_PART_BYTES))
        .map(|i| format!("{base}?offset={}&limit={RESOURCE_PART_BYTES}", i * RESOURCE_PART_BYTES))
        .collect()
}

/// A handle resource URI: the handle and the part it names (the first part when it names none).
pub fn parse_resource_uri(uri: &str) -> Option<(Handle, u64, u64)> {
    let (path, query) = uri.split_once('?').unwrap_or((uri, ""));
    let handle = Handle::from_uri(path)?;
    let (mut offset, mut limit) = (0, RESOURCE_PART_BYTES);
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        let (key, value) = pair.split_once('=')?;
        if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let value: u64 = value.parse().ok()?;
        match key {
            "offset" => offset = value,
            "limit" if value >= 1 => limit = value.min(RESOURCE_PART_BYTES),
            _ => return None,
        }
    }
    Some((handle, offset, limit))
}

/// The slice of `limit` bytes at `offset`, from `got` (the blob's bytes from `offset`, as the
/// port returned them for [`read_len`]`(limit)`): the characters that start in
/// `[offset, offset + limit)`, so slices at any fixed stride tile the text exactly.
pub fn slice(got: &BlobBytes, offset: u64, limit: u64) -> Slice {
    let bytes = &got.bytes;
    if offset >= got.total || bytes.is_empty() {
        let end = offset.min(got.total);
        return Slice { text: String::new(), offset: end, next: end, bytes: got.total, eof: true };
    }
    let continuation = |b: u8| b & 0xc0 == 0x80;
    let boundary_from = |mut at: usize| {
        while at < bytes.len() && continuation(bytes[at]) {
            at += 1;
        }
        at
    };
    let start = boundary_from(0);
    let end = boundary_from(usize::try_from(limit).unwrap_or(usize::MAX).min(bytes.len())).max(start);
    // The blob is UTF-8 and both ends are character boundaries.
    let text = String::from_utf8(bytes[start..end].to_vec()).unwrap_or_default();
    let next = offset + end as u64;
    Slice { text, offset: offset + start as u64, next, bytes: got.total, eof: next >= got.total }
}

/// What `hub.read` was asked for, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReadRequest {
    pub handle: String,
    pub offset: u64,
    pub limit: u64,
}

/// `hub.read`'s arguments (`{ handle, offset?, limit? }`) checked: offsets are whole numbers of
/// bytes from 0, limits from 1; a limit over [`MAX_SLICE_BYTES`] is lowered to it.
pub fn parse_read(args: &Value) -> Result<ReadRequest, ToolFailure> {
    let Some(handle) = args.get("handle").and_then(Value::as_str) else {
        return Err(invalid("hub.read takes a handle string: hub.read(\"h_…\", { offset, limit })"));
    };
    let number = |name: &str, min: f64, default: u64| -> Result<u64, ToolFailure> {
        match args.get(name) {
            None | Some(Value::Null) => Ok(default),
            Some(value) => match value.as_f64() {
                Some(n) if n.fract() == 0.0 && n >= min => {
                    Ok(if n >= u64::MAX as f64 { u64::MAX } else { n as u64 })
                }
                _ => Err(invalid(&format!(
                    "hub.read's `{name}` is {value}: it takes a whole number of bytes from {min}"
                ))),
            },
        }
    };
    let offset = number("offset", 0.0, 0)?;
    let limit = number("limit", 1.0, DEFAULT_SLICE_BYTES)?.min(MAX_SLICE_BYTES);
    Ok(ReadRequest { handle: handle.to_owned(), offset, limit })
}

/// One slice of handle `handle`, read as profile `profile`.
pub async fn read(
    store: &dyn RunStore,
    blobs: &dyn Blobs,
    profile: &str,
    request: &ReadRequest,
) -> Result<Slice, ToolFailure> {
    let handle = Handle::parse(&request.handle);
    read_part(store, blobs, profile, handle, request.offset, request.limit, &request.handle)
        .await
        .map(|(_, s)| s)
}

/// The part of a handle that resource URI `uri` names, read as profile `profile`, with what the
/// run's record says of the handle.
pub async fn read_resource(
    store: &dyn RunStore,
    blobs: &dyn Blobs,
    profile: &str,
    uri: &str,
) -> Result<(HandleRecord, Slice), ToolFailure> {
    let (handle, offset, limit) = match parse_resource_uri(uri) {
        Some((handle, offset, limit)) => (Some(handle), offset, limit),
        None => (None, 0, 0),
    };
    read_part(store, blobs, profile, handle, offset, limit, uri).await
}

/// A slice of `handle` when a kept run of `profile` lists it; else `unknown_handle`, naming the
/// handle as the reader gave it (`shown`). Boxed, so its two callers share one copy of it (the
/// hosted bundle is measured in bytes).
fn read_part<'a>(
    store: &'a dyn RunStore,
    blobs: &'a dyn Blobs,
    profile: &'a str,
    handle: Option<Handle>,
    offset: u64,
    limit: u64,
    shown: &'a str,
) -> BoxFuture<'a, Result<(HandleRecord, Slice), ToolFailure>> {
    Box::pin(async move {
        let handle = handle.ok_or_else(|| unknown_handle(shown))?;
        let run = store.load_run(handle.run()).await.map_err(|e| store_failed(&e))?;
        let record = run
            .filter(|run| run.profile == profile)
            .and_then(|run| run.output.handles.into_iter().find(|h| h.handle == handle.as_str()))
            .ok_or_else(|| unknown_handle(shown))?;
        let got = blobs
            .read(handle.run(), handle.as_str(), offset, read_len(limit))
            .await
            .map_err(|e| store_failed(&e))?
            .ok_or_else(|| unknown_handle(shown))?;
        Ok((record, slice(&got, offset, limit)))
    })
}

/// Keeps what of `run`'s output does not fit `budget` bytes inline as handles: the result as
/// JSON, the logs as lines. The output keeps a preview, the kept lines and the handle records.
/// Its result and logs were scrubbed before this is called, so blobs hold only scrubbed text.
/// Should the blob store fail, the preview stays without a handle and a notice says why.
pub async fn spill(run: &mut RunRecord, blobs: &dyn Blobs, entropy: &dyn Entropy, budget: usize) {
    let result_json = run.output.result.as_ref().map(|v| serde_json::to_string(v).unwrap_or_default());
    let first = fit(result_json.as_deref(), &run.output.logs, budget, None);
    if !first.result_cut && !first.logs_cut {
        return;
    }
    let mut result_handle = None;
    if let (true, Some(json)) = (first.result_cut, result_json.as_deref()) {
        result_handle = keep(blobs, entropy, run, HandleKind::Result, json).await;
    }
    if first.logs_cut {
        let text = run.output.logs.join("\n");
        if keep(blobs, entropy, run, HandleKind::Logs, &text).await.is_none() {
            run.output.logs_truncated = true;
        }
    }
    let fitted = fit(result_json.as_deref(), &run.output.logs, budget, result_handle.as_deref());
    if let Some(preview) = fitted.preview {
        run.output.result = Some(Value::String(preview));
    }
    run.output.logs = fitted.logs;
}

/// Puts `text` in the blob store under a new handle of `run` and lists it in the run's output.
async fn keep(
    blobs: &dyn Blobs,
    entropy: &dyn Entropy,
    run: &mut RunRecord,
    kind: HandleKind,
    text: &str,
) -> Option<String> {
    let mut random = [0u8; 16];
    entropy.fill(&mut random);
    let handle = Handle::new(&run.id, random);
    match blobs.put(&run.id, handle.as_str(), text).await {
        Ok(()) => {
            let record = HandleRecord { handle: handle.text, kind, bytes: text.len() as u64 };
            let text = record.handle.clone();
            run.output.handles.push(record);
            Some(text)
        }
        Err(err) => {
            run.notices.push(format!("the whole {} could not be kept as a handle: {err}", kind.as_str()));
            None
        }
    }
}

/// Result and logs fitted into an inline budget.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fit {
    /// The result's preview, when it was cut: a string holding the start of its JSON.
    pub preview: Option<String>,
    pub logs: Vec<String>,
    pub result_cut: bool,
    pub logs_cut: bool,
}

/// Fits a result (as JSON) and logs into `budget` bytes of JSON together. The result has
/// priority; logs keep their first lines. A result that does not fit becomes a string preview
/// of its JSON, whose note names `handle` when there is one.
pub fn fit(result_json: Option<&str>, logs: &[String], budget: usize, handle: Option<&str>) -> Fit {
    let result_len = result_json.map_or(0, str::len);
    let logs_len: usize = logs.iter().map(|l| json_len(l) + 1).sum();
    let mut fit = Fit { preview: None, logs: Vec::new(), result_cut: false, logs_cut: false };
    if result_len + logs_len <= budget {
        fit.logs = logs.to_vec();
        return fit;
    }
    // Logs get up to a quarter of the budget when the result needs the rest.
    let log_share = if result_len > budget * 3 / 4 { budget / 4 } else { budget - result_len };
    let mut used = 0;
    for line in logs {
        let cost = json_len(line) + 1;
        if used + cost > log_share {
            let room = log_share.saturating_sub(used + 1);
            if room > 16 {
                // The cut line and its "…" (3 bytes) within the room, as JSON.
                let kept = clip_json(line, room - 3);
                used += json_len(kept) + 3 + 1;
                fit.logs.push(format!("{kept}…"));
            }
            fit.logs_cut = true;
            break;
        }
        used += cost;
        fit.logs.push(line.clone());
    }
    let result_room = budget.saturating_sub(used);
    if let Some(json) = result_json.filter(|json| json.len() > result_room) {
        fit.result_cut = true;
        let note = |cut: usize| match handle {
            Some(handle) => format!(
                "… [result cut at {cut} of {} bytes; the whole is handle {handle}: hub.read(\"{handle}\", {{ offset, limit }})]",
                json.len()
            ),
            None => format!("… [result cut at {cut} of {} bytes]", json.len()),
        };
        // The preview is a JSON string holding JSON: measured as it will be written, with room
        // for the note after it.
        let preview = clip_json(json, result_room.saturating_sub(json_len(&note(json.len())) + 8));
        fit.preview = Some(format!("{preview}{}", note(preview.len())));
    }
    fit
}

/// The bytes `c` takes inside a JSON string, as serde_json writes it.
fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// The length of `s` written as a JSON string, quotes included.
fn json_len(s: &str) -> usize {
    2 + s.chars().map(escaped_len).sum::<usize>()
}

/// The longest start of `s` that takes at most `max` bytes written as a JSON string.
fn clip_json(s: &str, max: usize) -> &str {
    let mut used = 2;
    for (at, c) in s.char_indices() {
        used += escaped_len(c);
        if used > max {
            return &s[..at];
        }
    }
    s
}

fn failure(code: &str, message: String, hint: Option<&str>) -> ToolFailure {
    ToolFailure {
        code: code.to_owned(),
        message,
        hint: hint.map(str::to_owned),
        status: None,
        retryable: false,
    }
}

/// A handle nobody can read here: unknown, another run's, profile's or tenant's, or expired.
/// The words never say which.
pub fn unknown_handle(handle: &str) -> ToolFailure {
    let shown: String = handle.chars().take(120).collect();
    failure(
        "unknown_handle",
        format!("there is no handle `{shown}`"),
        Some("a handle comes from an earlier execute's `handles` on this hub and profile; it lasts 7 days"),
    )
}

fn invalid(message: &str) -> ToolFailure {
    failure(
        "invalid_arguments",
        message.to_owned(),
        Some("hub.read(handle, { offset: 0, limit: 1048576 }) reads the first MiB"),
    )
}

fn store_failed(err: &dyn std::fmt::Display) -> ToolFailure {
    ToolFailure {
        retryable: true,
        ..failure("store_failed", format!("the hub could not read its store: {err}"), None)
    }
}

#[cfg(test)]
mod tests;

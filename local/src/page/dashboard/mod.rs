//! The dashboard: one loopback page where a person sees the whole hub and acts on it — the calls
//! every run waits for, the tools waiting for review, recent runs and each source's health.
//! `capabilities hub dashboard` starts it in the foreground (or reuses the one already running
//! for the same store) and opens it in the person's browser.
//!
//! What the page shows and what its forms do come from a [`Board`], which the command supplies:
//! this module knows the protections, not the store's records. A decision goes through the
//! board to the one recorder (`crate::recorder`), a review through `hub review`'s own code.
//!
//! Opening it takes a one-time ticket: its address (`/open/<token>`) is printed and handed to
//! the browser, and works once, within ten minutes, on the listener it was made for. A ticket is a file named by the token's
//! SHA-256 in the store's `dashboard/` directory (mode 700), so a second `hub dashboard` can
//! hand the running one a new ticket without talking to it. Spending a ticket sets a cookie;
//! every form also carries a CSRF token bound to that cookie and to what the form decides.

mod render;
mod server;

use std::fs;
use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use capabilities_core::approval::{Choice, PendingCall};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

pub use server::Dashboard;

use super::random_hex;
use crate::platform::now_ms;
use crate::store::write_atomic;

/// How long an address printed by `hub dashboard` opens the page.
const TICKET_TTL_MS: u64 = 10 * 60 * 1000;
/// The record of the running dashboard, in the store.
const RUNNING_FILE: &str = "dashboard.json";
/// Where tickets wait to be spent, in the store.
const TICKETS_DIR: &str = "dashboard";

/// What the dashboard shows and does; the command implements it over the store. Each method
/// is called on a blocking thread.
pub trait Board: Send + Sync + 'static {
    /// Everything the page shows, read now.
    fn view(&self) -> Result<View>;
    /// Records a person's `choice` on pending call `call_id` of run `run_id`; returns what to
    /// tell them.
    fn decide(&self, run_id: &str, call_id: &str, choice: Choice) -> Result<String>;
    /// Records a person's review of the tool at `address`, whose contract they saw as `digest`;
    /// returns what to tell them.
    fn review(&self, address: &str, digest: &str, verdict: Verdict) -> Result<String>;
}

/// A person's review of a tool's contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Accept the contract with the proposed policy.
    Approve,
    /// Accept that it was seen, and refuse its calls.
    Reject,
}

/// The page's content, read from the store when the page is shown.
#[derive(Debug, Clone, Default)]
pub struct View {
    pub now_ms: u64,
    pub waiting: Vec<Waiting>,
    pub reviews: Vec<ReviewRow>,
    pub runs: Vec<RunRow>,
    /// Runs kept in all (the page lists the newest).
    pub runs_total: usize,
    /// Run files that cannot be read: (file, reason).
    pub unreadable: Vec<(String, String)>,
    pub sources: Vec<SourceRow>,
    /// Source records that cannot be read.
    pub problems: Vec<String>,
}

/// An undecided call of a run.
#[derive(Debug, Clone)]
pub struct Waiting {
    pub run_id: String,
    pub call: PendingCall,
}

/// A tool whose current contract nobody accepted yet.
#[derive(Debug, Clone)]
pub struct ReviewRow {
    pub address: String,
    /// The contract digest the person sees and decides on (`sha256:…`).
    pub digest: String,
    pub changed: bool,
    /// `read-only`, `writes` or `destructive or undeclared`.
    pub class: String,
    /// What policy does after an approval: `allow` or `ask`.
    pub proposed: String,
    pub flagged: bool,
    pub summary: String,
    pub changes: Vec<String>,
    pub unchecked: Option<String>,
}

/// One run in the history.
#[derive(Debug, Clone)]
pub struct RunRow {
    pub id: String,
    pub status: String,
    pub created_ms: u64,
    pub calls: u64,
    pub failed_calls: u64,
    pub waiting: usize,
    pub sources: Vec<String>,
    pub code: String,
    pub error: Option<String>,
}

/// One source and what the hub knows of its health without starting it.
#[derive(Debug, Clone)]
pub struct SourceRow {
    pub namespace: String,
    /// `stdio`, `http` or `openapi`, and where it runs or answers.
    pub kind: String,
    pub target: String,
    pub tools: Option<usize>,
    pub health: Health,
    pub detail: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Health {
    Ok,
    Attention,
    Problem,
}

/// The dashboard already running for a store.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Running {
    pub port: u16,
    pub pid: u32,
    /// Tells this listener from another that took the port since.
    pub instance: String,
}

/// The dashboard running for the store at `home`, when one answers on its port.
pub fn find_running(home: &Path) -> Option<Running> {
    let bytes = fs::read(home.join(RUNNING_FILE)).ok()?;
    let running: Running = serde_json::from_slice(&bytes).ok()?;
    let answer = probe(running.port).ok()?;
    (answer.trim() == running.instance).then_some(running)
}

/// Asks the listener on `port` which dashboard it is.
fn probe(port: u16) -> std::io::Result<String> {
    let address = std::net::SocketAddr::from(([127, 0, 0, 1], port));
    let mut stream = TcpStream::connect_timeout(&address, Duration::from_secs(1))?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    write!(stream, "GET /alive HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n")?;
    let mut answer = String::new();
    stream.take(4096).read_to_string(&mut answer)?;
    if !answer.starts_with("HTTP/1.1 200") {
        return Err(std::io::Error::other("not a dashboard"));
    }
    Ok(answer.split_once("\r\n\r\n").map(|(_, body)| body.to_owned()).unwrap_or_default())
}

/// Makes a one-time address that opens the `running` dashboard (only that one: a ticket names
/// the listener it was made for).
pub fn mint_ticket(home: &Path, running: &Running) -> Result<String> {
    let dir = home.join(TICKETS_DIR);
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(&dir)
        .with_context(|| format!("creating {}", dir.display()))?;
    let token = random_hex::<32>();
    let expires = now_ms() + TICKET_TTL_MS;
    write_atomic(&dir.join(ticket_name(&token)), format!("{expires} {}", running.instance).as_bytes())?;
    Ok(format!("http://127.0.0.1:{}/open/{token}", running.port))
}

fn ticket_name(token: &str) -> String {
    format!("{}.ticket", hex::encode(Sha256::digest(token.as_bytes())))
}

/// Spends `token`: true the first time, when it was minted for the dashboard `instance` of
/// this store and has not expired.
fn spend_ticket(home: &Path, instance: &str, token: &str) -> bool {
    if token.len() != 64 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return false;
    }
    let path = home.join(TICKETS_DIR).join(ticket_name(token));
    let Ok(text) = fs::read_to_string(&path) else { return false };
    // Whoever removes the file spends the ticket; a second request finds it gone.
    if fs::remove_file(&path).is_err() {
        return false;
    }
    let Some((expires, minted_for)) = text.trim().split_once(' ') else { return false };
    minted_for == instance && expires.parse::<u64>().is_ok_and(|expires| now_ms() < expires)
}

/// Removes tickets past their expiry.
fn sweep_tickets(home: &Path) {
    let now = now_ms();
    for entry in fs::read_dir(home.join(TICKETS_DIR)).into_iter().flatten().flatten() {
        let path: PathBuf = entry.path();
        let expired = fs::read_to_string(&path)
            .ok()
            .and_then(|t| t.split_whitespace().next()?.parse::<u64>().ok())
            .is_none_or(|expires| expires <= now);
        if expired && path.extension().is_some_and(|e| e == "ticket") {
            let _ = fs::remove_file(&path);
        }
    }
}

//! The approval page: when the client cannot ask the person itself, the hub process that holds
//! a waiting run serves one small page per pending call on loopback and opens it in the
//! person's browser. The person's choice goes through [`crate::recorder`]; the run resumes on
//! the model's next `execute {resume}`.
//!
//! The page's address carries a one-time token that only the browser gets: it never reaches an
//! envelope, a log or the journal. The listener starts on the first page and stops once no page
//! is open and nothing happened for a while.

pub mod dashboard;
mod server;

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use capabilities_core::approval::{Choice, PendingCall, PendingKind};

use crate::platform::random_bytes;
use crate::store::Store;

/// How long the listener stays up with no open page and no request.
const IDLE: Duration = Duration::from_secs(300);

/// What a hub process tells a person when a run waits for them.
pub trait Notifier: Send + Sync {
    /// Makes sure the person learns that run `run_id` waits for their decisions. Returns one
    /// line for the model saying what was done — never an address or a token.
    fn notify(&self, run_id: &str) -> impl Future<Output = String> + Send;
}

/// The approval pages of one hub process.
#[derive(Clone)]
pub struct ApprovalPages {
    inner: Arc<Inner>,
}

impl std::fmt::Debug for ApprovalPages {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ApprovalPages").finish_non_exhaustive()
    }
}

struct Inner {
    home: PathBuf,
    state: Mutex<State>,
}

#[derive(Default)]
struct State {
    /// The port of the running listener, if one runs.
    port: Option<u16>,
    /// Pages by their one-time token.
    pages: HashMap<String, Page>,
    last_activity: Option<Instant>,
}

/// One pending call's page.
#[derive(Debug, Clone)]
struct Page {
    run_id: String,
    call: PendingCall,
    /// Bound to this page: a form from anywhere else does not carry it.
    csrf: String,
    /// Set once the page recorded a decision; the token is spent.
    decided: Option<Choice>,
}

impl ApprovalPages {
    /// Pages for the hub whose store is at `home`.
    pub fn new(home: PathBuf) -> ApprovalPages {
        ApprovalPages { inner: Arc::new(Inner { home, state: Mutex::new(State::default()) }) }
    }

    /// Opens a page for each undecided approval of `run_id` that has none yet, and returns the
    /// addresses of the new ones (for the browser only).
    async fn open_pages(&self, run_id: &str, pending: &[PendingCall]) -> std::io::Result<Vec<String>> {
        // The listener may stop for idleness between starting and registering; then start
        // it again.
        let (port, mut state) = loop {
            let port = server::ensure_listening(self).await?;
            let state = self.inner.lock();
            if state.port == Some(port) {
                break (port, state);
            }
        };
        state.last_activity = Some(Instant::now());
        let mut urls = Vec::new();
        for call in pending.iter().filter(|p| p.kind == PendingKind::Approval) {
            let known = state.pages.values().any(|p| p.run_id == run_id && p.call.id == call.id);
            if known {
                continue;
            }
            let token = random_hex::<32>();
            urls.push(format!("http://127.0.0.1:{port}/p/{token}"));
            let page = Page {
                run_id: run_id.to_owned(),
                call: call.clone(),
                csrf: random_hex::<32>(),
                decided: None,
            };
            state.pages.insert(token, page);
        }
        Ok(urls)
    }
}

impl Notifier for ApprovalPages {
    async fn notify(&self, run_id: &str) -> String {
        let fallback = format!("a person can also decide with `capabilities hub approve {run_id}`");
        let home = self.inner.home.clone();
        let id = run_id.to_owned();
        let run = tokio::task::spawn_blocking(move || {
            Store::open(&home)?.load_run_sync(&id).map_err(anyhow::Error::from)
        })
        .await;
        let pending: Vec<PendingCall> = match run {
            Ok(Ok(Some(run))) => run.undecided().cloned().collect(),
            _ => return format!("could not read the run to open its approval page; {fallback}"),
        };
        match self.open_pages(run_id, &pending).await {
            Ok(urls) if urls.is_empty() => {
                format!("the approval page is already open in the person's browser; {fallback}")
            }
            Ok(urls) => {
                let opened = urls.iter().filter(|url| open_browser(url)).count();
                if opened == urls.len() {
                    format!("opened an approval page in the person's browser; {fallback}")
                } else {
                    format!("could not open a browser on this machine; {fallback}")
                }
            }
            Err(err) => format!("could not start the approval page ({err}); {fallback}"),
        }
    }
}

impl Inner {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panic while holding the lock leaves plain data behind; keep serving it.
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Opens `url` in the person's browser: each command of `$BROWSER` (colon-separated, `%s`
/// standing for the address), else the desktop's opener. True when a command started.
pub fn open_browser(url: &str) -> bool {
    let mut commands: Vec<Vec<String>> = Vec::new();
    if let Ok(browser) = std::env::var("BROWSER") {
        for command in browser.split(':').filter(|c| !c.trim().is_empty()) {
            let mut words: Vec<String> = command.split_whitespace().map(str::to_owned).collect();
            if words.iter().any(|w| w.contains("%s")) {
                words.iter_mut().for_each(|w| *w = w.replace("%s", url));
            } else {
                words.push(url.to_owned());
            }
            commands.push(words);
        }
    }
    let opener = if cfg!(target_os = "macos") { "open" } else { "xdg-open" };
    commands.push(vec![opener.to_owned(), url.to_owned()]);
    for words in commands {
        let Some((program, args)) = words.split_first() else { continue };
        let child = std::process::Command::new(program)
            .args(args)
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn();
        if let Ok(mut child) = child {
            // Reap it whenever it exits, without holding anything up.
            let _ =
                std::thread::Builder::new().name("capabilities-browser".into()).spawn(move || child.wait());
            return true;
        }
    }
    false
}

pub(crate) fn random_hex<const N: usize>() -> String {
    // Without OS randomness no token is safe; stopping is right.
    hex::encode(random_bytes::<N>().expect("the OS random number generator is available"))
}

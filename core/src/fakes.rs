//! In-memory fakes of every port, for tests of the core and of hosts. Behind the `fakes`
//! feature; never used by a real hub.

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::Poll;

use serde_json::{Value, json};

use crate::address::Namespace;
use crate::ports::{
    BlobBytes, Blobs, BoxFuture, Clock, Credentials, Entropy, RunStore, Secrets, SecretsError, StoreError,
    Upstream, UpstreamError, UpstreamRequest,
};
use crate::record::{JournalEntry, RunRecord};

/// A clock that only moves when told to.
#[derive(Debug, Default)]
pub struct ManualClock(pub AtomicU64);

impl ManualClock {
    pub fn at(ms: u64) -> ManualClock {
        ManualClock(AtomicU64::new(ms))
    }

    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> u64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Entropy from a counter: ids are predictable in tests.
#[derive(Debug, Default)]
pub struct CountingEntropy(AtomicU64);

impl Entropy for CountingEntropy {
    fn fill(&self, buf: &mut [u8]) {
        let n = self.0.fetch_add(1, Ordering::SeqCst) + 1;
        let bytes = n.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes();
        for (i, b) in buf.iter_mut().enumerate() {
            *b = bytes[i % 8] ^ (i as u8);
        }
    }
}

/// A run store in memory.
#[derive(Debug, Default)]
pub struct MemoryStore {
    runs: Mutex<BTreeMap<String, RunRecord>>,
    journals: Mutex<BTreeMap<String, Vec<JournalEntry>>>,
}

impl MemoryStore {
    pub fn journal(&self, id: &str) -> Vec<JournalEntry> {
        self.journals.lock().expect("not poisoned").get(id).cloned().unwrap_or_default()
    }

    pub fn run(&self, id: &str) -> Option<RunRecord> {
        self.runs.lock().expect("not poisoned").get(id).cloned()
    }

    /// Replaces a stored run, as another process would.
    pub fn put_run(&self, run: RunRecord) {
        self.runs.lock().expect("not poisoned").insert(run.id.to_string(), run);
    }

    /// Drops the last `n` journal lines, as a crash before they were written would.
    pub fn truncate_journal(&self, id: &str, keep: usize) {
        if let Some(j) = self.journals.lock().expect("not poisoned").get_mut(id) {
            j.truncate(keep);
        }
    }
}

impl RunStore for MemoryStore {
    fn save_run<'a>(&'a self, run: &'a RunRecord) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.runs.lock().expect("not poisoned").insert(run.id.to_string(), run.clone());
            Ok(())
        })
    }

    fn load_run<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<RunRecord>, StoreError>> {
        Box::pin(async move { Ok(self.runs.lock().expect("not poisoned").get(id).cloned()) })
    }

    fn append_journal<'a>(
        &'a self,
        id: &'a str,
        entry: &'a JournalEntry,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            self.journals.lock().expect("not poisoned").entry(id.to_owned()).or_default().push(entry.clone());
            Ok(())
        })
    }

    fn read_journal<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Vec<JournalEntry>, StoreError>> {
        Box::pin(async move { Ok(self.journal(id)) })
    }
}

/// Blobs in memory, by run and handle; `failing` makes every put fail, as a full disk would.
#[derive(Debug, Default)]
pub struct MemoryBlobs {
    blobs: Mutex<BTreeMap<(String, String), String>>,
    pub failing: std::sync::atomic::AtomicBool,
}

impl MemoryBlobs {
    /// The stored text of a blob.
    pub fn text(&self, run: &str, handle: &str) -> Option<String> {
        self.blobs.lock().expect("not poisoned").get(&(run.to_owned(), handle.to_owned())).cloned()
    }

    /// Every blob of run `run` goes, as when the host prunes the run.
    pub fn remove_run(&self, run: &str) {
        self.blobs.lock().expect("not poisoned").retain(|(r, _), _| r != run);
    }
}

impl Blobs for MemoryBlobs {
    fn put<'a>(
        &'a self,
        run: &'a str,
        handle: &'a str,
        text: &'a str,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        Box::pin(async move {
            if self.failing.load(Ordering::Relaxed) {
                return Err(StoreError::Io(format!("blobs/{run}"), "no space left".to_owned()));
            }
            self.blobs
                .lock()
                .expect("not poisoned")
                .insert((run.to_owned(), handle.to_owned()), text.to_owned());
            Ok(())
        })
    }

    fn read<'a>(
        &'a self,
        run: &'a str,
        handle: &'a str,
        offset: u64,
        len: u64,
    ) -> BoxFuture<'a, Result<Option<BlobBytes>, StoreError>> {
        Box::pin(async move {
            Ok(self.text(run, handle).map(|text| {
                let bytes = text.as_bytes();
                let start = usize::try_from(offset).unwrap_or(usize::MAX).min(bytes.len());
                let end = start.saturating_add(usize::try_from(len).unwrap_or(usize::MAX)).min(bytes.len());
                BlobBytes { bytes: bytes[start..end].to_vec(), total: bytes.len() as u64 }
            }))
        })
    }
}

/// Secrets from a table: `(namespace, connection) → values`. A connection listed with no
/// values is "missing".
#[derive(Debug, Default)]
pub struct TableSecrets {
    pub table: BTreeMap<(String, String), Vec<(String, String)>>,
    pub resolved: AtomicUsize,
    /// What a connection's credentials become once the source refuses them (an OAuth token
    /// refreshed); a connection not listed has nothing better.
    pub refreshed: BTreeMap<(String, String), Vec<(String, String)>>,
    /// Every refusal reported, with the challenge that came with it.
    pub rejections: Mutex<Vec<Option<String>>>,
}

impl Secrets for TableSecrets {
    fn resolve<'a>(
        &'a self,
        namespace: &'a Namespace,
        connection: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Credentials, SecretsError>> {
        Box::pin(async move {
            self.resolved.fetch_add(1, Ordering::SeqCst);
            let Some(name) = connection else { return Ok(Credentials::default()) };
            match self.table.get(&(namespace.to_string(), name.to_owned())) {
                Some(values) if !values.is_empty() => {
                    Ok(Credentials { connection: Some(name.to_owned()), values: values.clone() })
                }
                _ => Err(SecretsError::Missing {
                    namespace: namespace.to_string(),
                    connection: name.to_owned(),
                    slots: vec!["TOKEN".to_owned()],
                }),
            }
        })
    }

    fn rejected<'a>(
        &'a self,
        namespace: &'a Namespace,
        rejected: &'a Credentials,
        challenge: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Credentials>, SecretsError>> {
        Box::pin(async move {
            self.rejections.lock().expect("not poisoned").push(challenge.map(str::to_owned));
            let Some(name) = rejected.connection.as_deref() else { return Ok(None) };
            Ok(self
                .refreshed
                .get(&(namespace.to_string(), name.to_owned()))
                .map(|values| Credentials { connection: Some(name.to_owned()), values: values.clone() }))
        })
    }
}

/// What a fake tool does when called.
pub type FakeTool = Box<dyn Fn(&Value, &Credentials) -> Result<Value, UpstreamError> + Send + Sync>;

/// Upstream sources in memory. Counts every call and the most calls in flight at once.
#[derive(Default)]
pub struct FakeUpstream {
    tools: BTreeMap<(String, String), FakeTool>,
    /// Every call made: `(namespace.tool, arguments)`.
    pub calls: Mutex<Vec<(String, Value)>>,
    in_flight: AtomicUsize,
    pub max_in_flight: AtomicUsize,
    /// Polls each call waits before answering, so calls overlap.
    pub delay_polls: usize,
}

impl std::fmt::Debug for FakeUpstream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FakeUpstream").field("tools", &self.tools.keys().collect::<Vec<_>>()).finish()
    }
}

impl FakeUpstream {
    pub fn with(mut self, namespace: &str, tool: &str, f: FakeTool) -> FakeUpstream {
        self.tools.insert((namespace.to_owned(), tool.to_owned()), f);
        self
    }

    /// A tool that returns its arguments back as structured content.
    pub fn echo() -> FakeTool {
        Box::new(|args, _| Ok(json!({ "content": [], "structuredContent": { "echo": args } })))
    }

    pub fn count(&self) -> usize {
        self.calls.lock().expect("not poisoned").len()
    }
}

impl Upstream for FakeUpstream {
    fn call<'a>(&'a self, request: UpstreamRequest<'a>) -> BoxFuture<'a, Result<Value, UpstreamError>> {
        Box::pin(async move {
            let key = (request.namespace.to_string(), request.tool.to_owned());
            self.calls
                .lock()
                .expect("not poisoned")
                .push((format!("{}.{}", key.0, key.1), request.arguments.clone()));
            let now = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
            self.max_in_flight.fetch_max(now, Ordering::SeqCst);
            let mut polls = self.delay_polls;
            std::future::poll_fn(|cx| {
                if polls == 0 {
                    Poll::Ready(())
                } else {
                    polls -= 1;
                    cx.waker().wake_by_ref();
                    Poll::Pending
                }
            })
            .await;
            self.in_flight.fetch_sub(1, Ordering::SeqCst);
            match self.tools.get(&key) {
                Some(tool) => tool(request.arguments, request.credentials),
                None => Err(UpstreamError::Refused {
                    message: format!("no tool {}", key.1),
                    status: Some(-32602),
                }),
            }
        })
    }
}

/// Runs a future to completion on the current thread. Enough for tests of single-threaded
/// engine code; wakes are handled by re-polling.
pub fn block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::task::{Context, Waker};
    let mut future = std::pin::pin!(future);
    let mut cx = Context::from_waker(Waker::noop());
    loop {
        // The fakes wake themselves, so there is never anything to wait for but another poll.
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

/// Words for where a person acts on a hub, for tests and benchmarks that need some: each names
/// its place plainly, so a test can see which one a text used.
pub fn words() -> crate::wording::HostWords {
    crate::wording::HostWords {
        decide: "the approve command for {run}".to_owned(),
        auth: "the auth command".to_owned(),
        auth_connection: "the auth command for {namespace} --connection {connection}".to_owned(),
        diagnose: "the doctor command".to_owned(),
        add_source: "the add command".to_owned(),
    }
}

/// A bridge whose every call answers `{ "ok": true }` at once, and whose search and describe
/// answer nothing: for measuring and testing a driver without an engine.
#[derive(Debug, Default)]
pub struct NoOpBridge;

impl crate::ports::Bridge for NoOpBridge {
    fn call(
        &self,
        _call: crate::ports::GuestCall,
    ) -> crate::ports::LocalBoxFuture<'_, crate::ports::GuestReply> {
        Box::pin(std::future::ready(crate::ports::GuestReply::Ok(serde_json::json!({ "ok": true }))))
    }

    fn search(&self, _args: serde_json::Value) -> Result<String, String> {
        Ok(String::new())
    }

    fn describe(&self, _args: serde_json::Value) -> Result<String, String> {
        Ok(String::new())
    }
}

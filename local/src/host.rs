//! The local host: opens the store, builds the catalog and policy from it, and runs the core's
//! engine with the native adapters — the QuickJS sandbox, MCP sources, the keychain, the file
//! store, the system clock and OS randomness.
//!
//! The engine's futures hold a JS runtime and are not `Send`, so every run is driven on a
//! current-thread runtime: the CLI's own thread, or a worker thread under `serve`. Each thread
//! builds that runtime once and keeps it for the runs it drives after.

use std::cell::OnceCell;
use std::path::Path;
use std::sync::OnceLock;
use std::time::Instant;

use anyhow::{Context, Result};
use capabilities_core::handles::{self, Slice};
use capabilities_core::limits::Limits;
use capabilities_core::record::{HandleRecord, ToolFailure, call_summaries};
use capabilities_core::run::Engine;
use capabilities_core::sandbox::quickjs::{ComputeMeter, QuickJs};
use capabilities_core::surface::Surface;
use capabilities_core::surface::direct::{self, DirectTools};
use capabilities_core::surface::envelope::Envelope;
use capabilities_core::wording::HostWords;

use crate::cancel::Watched;
use crate::config::{HubConfig, POLICY};
use crate::platform::{OsEntropy, SystemClock};
use crate::profiles;
use crate::secrets::LocalSecrets;
use crate::store::{Store, is_run_id};
use crate::upstream::{PoolOptions, PooledUpstream, SourcePool};

/// An open hub, ready to run code.
pub struct Host {
    store: Store,
    config: HubConfig,
    surface: Surface,
    upstream: PooledUpstream,
    limits: Limits,
    /// The profile this host serves; the engine resumes only its runs.
    profile: String,
    /// The profile's tools under their direct-mode names, when it is in direct mode.
    direct: Option<Direct>,
    /// The sources' credentials, with the secret store once a run has opened it.
    secrets: LocalSecrets,
    /// Sources' connections live on this runtime, so they outlive each run's own runtime.
    sources_runtime: Option<tokio::runtime::Runtime>,
}

impl Drop for Host {
    fn drop(&mut self) {
        self.upstream.pool().shutdown();
        // Dropping a runtime inside async code panics; this never blocks.
        if let Some(runtime) = self.sources_runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Host {
    /// Opens the hub whose store is at `home`.
    pub fn open(home: &Path) -> Result<Host> {
        Host::open_with(Store::open(home)?, profiles::DEFAULT)
    }

    /// [`Host::open`] as profile `profile` serves the hub.
    pub fn open_profile(home: &Path, profile: &str) -> Result<Host> {
        Host::open_with(Store::open(home)?, profile)
    }

    /// [`Host::open`] as the profile that started run `run_id` serves the hub (the default
    /// profile when there is no such run), so a person's decision or cancel from the terminal
    /// resumes it with the sources and rules it started with.
    pub fn open_for_run(home: &Path, run_id: &str) -> Result<Host> {
        let store = Store::open(home)?;
        let profile = match is_run_id(run_id).then(|| store.load_run_sync(run_id)) {
            Some(Ok(Some(run))) => run.profile,
            _ => profiles::DEFAULT.to_owned(),
        };
        Host::open_with(store, &profile)
    }

    /// [`Host::open`] for a server: run records are written behind the run (see
    /// [`crate::store`]); the server calls [`crate::store::wait_for_writes`] before it exits.
    pub fn open_for_server(home: &Path, profile: &str) -> Result<Host> {
        let mut store = Store::open(home)?;
        store.write_records_behind();
        Host::open_with(store, profile)
    }

    /// Opens the hub as profile `profile` serves it: only its sources and tools, its rules
    /// over the hub's policy.
    fn open_with(store: Store, profile: &str) -> Result<Host> {
        for warning in &store.warnings {
            warn(warning);
        }
        let config = HubConfig::load(&store);
        for problem in &config.problems {
            warn(problem);
        }
        let profile = profiles::require(&store, profile)?;
        let full = profiles::full_catalog(&config);
        // `default` serves `*`: on a hub with no sources yet that matches nothing, and says so
        // in `hub list`; only a person's own patterns are worth a warning.
        let unmatched = if profile.name == profiles::DEFAULT { Vec::new() } else { profile.unmatched(&full) };
        for pattern in unmatched {
            warn(&format!("profile `{}` serves `{pattern}`, which matches no tool of the hub", profile.name));
        }
        let pool = SourcePool::with_sources(
            PoolOptions::default(),
            config.sources.iter().map(|(s, _, _)| s.spec.clone()),
        );
        let limits = Limits::DEFAULT;
        let (mut surface, invalid) = profile.surface(&full, config.policy.clone(), limits, words())?;
        surface.skills = skill_docs(&store);
        surface.skill_files = Some(Box::new(crate::skills::SkillFiles::new(&store)));
        if let Some(err) = invalid {
            warn(&format!("{POLICY} is invalid ({err}); every tool asks until it is fixed"));
        }
        let sources_runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("capabilities-sources")
            .enable_all()
            .build()
            .context("starting the runtime for MCP sources")?;
        let upstream = PooledUpstream::new(pool, sources_runtime.handle().clone());
        let direct = profile.direct(&surface).map(|tools| Direct::new(&surface, tools));
        let profile = profile.name;
        let secrets = LocalSecrets::new(&config, &store);
        Ok(Host {
            secrets,
            store,
            config,
            surface,
            upstream,
            limits,
            profile,
            direct,
            sources_runtime: Some(sources_runtime),
        })
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    pub fn config(&self) -> &HubConfig {
        &self.config
    }

    pub fn surface(&self) -> &Surface {
        &self.surface
    }

    /// The profile's tools as direct mode lists them; `None` in code mode.
    pub fn direct(&self) -> Option<&Direct> {
        self.direct.as_ref()
    }

    /// Runs `code` as a new run, on this thread.
    pub fn execute(&self, code: &str) -> Result<Envelope> {
        self.with_engine(Op::Execute(code), self.limits)
    }

    /// Resumes a run, on this thread.
    pub fn resume(&self, run_id: &str) -> Result<Envelope> {
        self.with_engine(Op::Resume(run_id), self.run_limits())
    }

    /// Cancels a run.
    pub fn cancel(&self, run_id: &str) -> Result<Envelope> {
        self.with_engine(Op::Cancel(run_id), self.run_limits())
    }

    /// Calls the tool direct mode lists as `name` with `arguments`, as a run of its own: the
    /// same policy, approvals, journal and scrubbing as `execute`. `None` when no tool has the
    /// name.
    pub fn call_direct(&self, name: &str, arguments: &serde_json::Value) -> Result<Option<Envelope>> {
        let Some(address) = self.direct.as_ref().and_then(|d| d.tools.address(name)) else {
            return Ok(None);
        };
        let code = direct::call_code(address, arguments);
        self.with_engine(Op::Execute(&code), direct::limits(self.limits)).map(Some)
    }

    /// The limits runs of this profile were started with.
    fn run_limits(&self) -> Limits {
        match self.direct {
            Some(_) => direct::limits(self.limits),
            None => self.limits,
        }
    }

    /// A stored run as an envelope, without running anything.
    pub fn show_run(&self, run_id: &str) -> Result<Option<Envelope>> {
        if !is_run_id(run_id) {
            return Ok(None);
        }
        let Some(run) = self.store.load_run_sync(run_id).map_err(|e| anyhow::anyhow!("{e}"))? else {
            return Ok(None);
        };
        let calls =
            self.store.read_journal_sync(run_id).map(|entries| call_summaries(&entries)).unwrap_or_default();
        Ok(Some(Envelope::from_run(&run, calls, &self.limits, &self.surface.words)))
    }

    /// The part of a handle that resource URI `uri` names, when this profile's run made it
    /// (MCP `resources/read`); an unknown, foreign or expired handle fails the same way.
    pub fn read_handle(&self, uri: &str) -> Result<(HandleRecord, Slice), ToolFailure> {
        // The store answers at once: its futures never wait.
        let read = handles::read_resource(&self.store, &self.store, &self.profile, uri);
        futures_util::FutureExt::now_or_never(read).unwrap_or_else(|| Err(handles::unknown_handle(uri)))
    }

    fn with_engine(&self, op: Op<'_>, limits: Limits) -> Result<Envelope> {
        RUN_RUNTIME.with(|cell| {
            let runtime = match cell.get() {
                Some(runtime) => runtime,
                None => {
                    let built = tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                        .context("starting the run's async runtime")?;
                    cell.get_or_init(|| built)
                }
            };
            SANDBOX.with(|sandbox| {
                let sandbox = sandbox.get_or_init(new_sandbox);
                // Normally freed by `after_answer`; a caller that never calls it frees here.
                sandbox.free_spent();
                self.run_engine(runtime, sandbox, op, limits)
            })
        })
    }

    fn run_engine(
        &self,
        runtime: &tokio::runtime::Runtime,
        sandbox: &QuickJs,
        op: Op<'_>,
        limits: Limits,
    ) -> Result<Envelope> {
        // A person may cancel a running attempt from another process (`hub cancel`).
        let sandbox = Watched::new(sandbox, self.store.root(), matches!(op, Op::Execute(_)));
        let engine = Engine {
            catalog: &self.surface.catalog,
            policy: &self.surface.policy,
            lookup: &self.surface,
            sandbox: &sandbox,
            upstream: &self.upstream,
            secrets: &self.secrets,
            store: &self.store,
            blobs: &self.store,
            clock: &SystemClock,
            entropy: &OsEntropy,
            limits,
            words: &self.surface.words,
            profile: &self.profile,
        };
        let _kept = crate::store::keep_journal_open();
        let report = runtime.block_on(async {
            match op {
                Op::Execute(code) => engine.execute(code).await,
                Op::Resume(id) => engine.resume(id).await,
                Op::Cancel(id) => engine.cancel(id).await,
            }
        });
        Ok(Envelope::render(report, &limits, &self.surface.words))
    }
}

/// The hub's skills as `search` and `describe` show them: each one in the lock whose folder
/// still holds its `SKILL.md` (a changed skill shows as it is now; `hub skills list` says so).
fn skill_docs(store: &Store) -> Vec<capabilities_core::surface::skills::SkillDoc> {
    let library = crate::skills::Library::new(store);
    let Ok(lock) = library.lock() else { return Vec::new() };
    lock.skills
        .into_iter()
        .filter_map(|(name, locked)| {
            let dir = library.dir().join(&name);
            let skill_md = std::fs::read_to_string(dir.join("SKILL.md")).ok()?;
            let files = locked
                .files
                .keys()
                .map(|path| (path.clone(), std::fs::metadata(dir.join(path)).map_or(0, |m| m.len())))
                .collect();
            Some(capabilities_core::surface::skills::SkillDoc::new(name, locked.description, skill_md, files))
        })
        .collect()
}

/// A direct-mode profile's tools: their names, and their MCP definitions built once.
pub struct Direct {
    pub tools: DirectTools,
    pub definitions: Vec<rmcp::model::Tool>,
}

impl Direct {
    /// `tools` (the profile's, named) with their rmcp definitions.
    fn new(surface: &Surface, tools: DirectTools) -> Direct {
        let definitions = tools
            .definitions(&surface.catalog)
            .into_iter()
            .filter_map(|definition| match serde_json::from_value(definition) {
                Ok(tool) => Some(tool),
                Err(err) => {
                    warn(&format!("a tool's definition cannot be listed in direct mode: {err}"));
                    None
                }
            })
            .collect();
        Direct { tools, definitions }
    }
}

thread_local! {
    /// This thread's runtime for runs, built on its first run: building one per run costs more
    /// than a small run itself.
    static RUN_RUNTIME: OnceCell<tokio::runtime::Runtime> = const { OnceCell::new() };

    /// This thread's sandbox driver, built on its first run. Between runs it holds the next
    /// attempt's runtime and context, prepared by [`after_answer`]; every attempt still takes
    /// a runtime nothing ran in before.
    static SANDBOX: OnceCell<QuickJs> = const { OnceCell::new() };
}

/// A sandbox driver whose attempts leave their runtime to be freed after the answer.
fn new_sandbox() -> QuickJs {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    let epoch = *EPOCH.get_or_init(Instant::now);
    QuickJs::with_cancel(ComputeMeter::clock(move || epoch.elapsed().as_micros() as u64), Default::default())
        .free_spent_later()
}

/// Work for a thread that has just handed over a run's answer: it frees the runtime of the
/// attempt that ended and prepares the next attempt's, so neither costs the next run. Does
/// nothing on a thread that never ran code.
pub fn after_answer() {
    SANDBOX.with(|sandbox| {
        if let Some(sandbox) = sandbox.get() {
            sandbox.free_spent();
            if let Err(err) = sandbox.prepare() {
                warn(&err);
            }
        }
    });
}

/// How the local hub names where a person acts: its CLI commands.
pub fn words() -> HostWords {
    HostWords {
        decide: "`capabilities hub approve {run}`".to_owned(),
        auth: "`capabilities hub auth`".to_owned(),
        auth_connection: "`capabilities hub auth {namespace} --connection {connection}`".to_owned(),
        diagnose: "`capabilities hub doctor`".to_owned(),
        add_source: "`capabilities hub add`".to_owned(),
    }
}

/// Where a person decides on run `run_id` once no prompt is open: the engine's wording for a
/// waiting run, repeated by the prompts that ask in the client.
pub fn later(run_id: &str) -> String {
    words().decide(run_id)
}

/// What to do with the engine.
enum Op<'a> {
    Execute(&'a str),
    Resume(&'a str),
    Cancel(&'a str),
}

fn warn(message: &str) {
    eprintln!("warning: {message}");
}

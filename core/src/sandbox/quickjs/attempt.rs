//! One attempt inside QuickJS: a fresh runtime and context, the prelude, the code, and the loop
//! that moves calls between the guest and the bridge until the code settles or must stop.

use std::cell::RefCell;
use std::rc::Rc;

use futures_util::future::{FutureExt, ready};
use futures_util::stream::{FuturesUnordered, StreamExt};
use rquickjs::context::intrinsic::{
    Date, Json, MapSet, Promise as PromiseIntrinsic, Proxy, RegExp, TypedArrays,
};
use rquickjs::{
    CatchResultExt, CaughtError, Context, Ctx, Function, Object, Persistent, Promise, Runtime, Value,
};

use super::bridge::{GuestBridge, GuestRequest, Logs, LookupKind};
use super::compile::{CompileError, MAX_STACK_BYTES, NoModules, compile_module, load_module};
use super::memory::{GuestAllocator, Heap};
use super::meter::{Budget, Stop};
use super::plain;
use crate::ports::LocalBoxFuture;
use crate::prelude;
use crate::sandbox::{
    Attempt, AttemptEnd, AttemptReport, Bridge, GuestError, GuestNamespace, GuestReply, LimitKind,
    ToolFailure,
};

/// What the guest context is built with. No `Eval`: nothing in the guest can compile text.
/// No `WeakRef` (garbage collection would become observable) and no `Performance` (the
/// prelude's `performance.now()` runs on the logical clock).
pub(crate) type GuestIntrinsics = (Date, RegExp, Json, Proxy, MapSet, TypedArrays, PromiseIntrinsic);

/// The module name of a run's code, as it appears in stack traces.
const CODE_MODULE: &str = "code.js";
/// Results above this many characters of JSON are refused before they leave the guest; the
/// engine keeps what does not fit inline as a handle.
pub(crate) const MAX_RESULT_BYTES: usize = crate::handles::MAX_RESULT_CHARS;
// A result read as plain data is never one the prelude's `finish` would refuse as too large.
const _: () = assert!(plain::MAX_TEXT <= MAX_RESULT_BYTES);
/// Allocation, in bytes, before the first garbage collection of an attempt.
const GC_THRESHOLD_BYTES: usize = 4 * 1024 * 1024;
/// Extra heap granted once the code has settled, so the result or the error can still be
/// read from a guest that used its whole budget.
const FINISH_HEADROOM_BYTES: usize = 16 * 1024 * 1024;

/// Wraps the body so that line N of the body is line N in stack traces.
fn wrap(body: &str) -> String {
    format!("export default (async () => {{{body}\n}})();\n")
}

/// Expands the run's seed into the four words of the prelude's generator (SplitMix64).
fn seed_words(seed: u64) -> [u32; 4] {
    let mut state = seed;
    let mut next = || {
        state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    };
    let (a, b) = (next(), next());
    [(a >> 32) as u32, a as u32, (b >> 32) as u32, b as u32]
}

/// The host's answer to one request, ready to settle into the guest.
enum Reply {
    Call(GuestReply),
    Lookup(Result<String, String>),
}

type InFlight<'a> = FuturesUnordered<LocalBoxFuture<'a, (u32, Reply)>>;

/// A live guest. Field order is drop order: handles into the runtime go before the context,
/// and the context before the runtime.
struct Guest {
    api: Persistent<Object<'static>>,
    /// The API's `settle`, asked for once: every answer goes through it.
    settle: Persistent<Function<'static>>,
    code: Option<Code>,
    context: Context,
    runtime: Runtime,
    budget: Rc<Budget>,
    heap: Rc<Heap>,
    /// What a plain result is read against.
    realm: plain::Realm,
}

/// The evaluated code module: its evaluation promise and its namespace (`default` holds the
/// promise of the wrapped body), and that promise once the module has evaluated: the driver
/// asks after it between every two segments.
struct Code {
    evaluation: Persistent<Promise<'static>>,
    namespace: Persistent<Object<'static>>,
    main: RefCell<Option<Persistent<Promise<'static>>>>,
}

fn internal(what: &str) -> impl FnOnce(rquickjs::Error) -> AttemptEnd + '_ {
    move |e| AttemptEnd::Internal(format!("{what}: {e}"))
}

/// Where an attempt's guest comes from and where it goes when the attempt is over.
pub(crate) struct Lifecycle {
    /// A guest made ahead by [`Fresh::new`], never used before; built on the spot when absent.
    pub(crate) fresh: Option<Fresh>,
    /// Where the spent guest is left for the host to free later; freed at once when absent.
    pub(crate) spent: Option<Rc<SpentGuests>>,
}

/// Guests whose attempts are over, kept only until the host frees them. Nothing runs in them
/// again.
#[derive(Default)]
pub(crate) struct SpentGuests(RefCell<Vec<Guest>>);

impl SpentGuests {
    fn keep(&self, guest: Guest) {
        // Should the list be busy (it never is: attempts on one driver do not overlap), the
        // guest is freed here instead.
        if let Ok(mut spent) = self.0.try_borrow_mut() {
            spent.push(guest);
        }
    }

    /// Frees every spent guest.
    pub(crate) fn free(&self) {
        let spent = match self.0.try_borrow_mut() {
            Ok(mut spent) => std::mem::take(&mut *spent),
            Err(_) => return,
        };
        drop(spent);
    }
}

/// Runs one attempt to its end; also gives the namespaces its code used, to build ahead for the
/// next attempt.
pub(crate) async fn run(
    budget: Budget,
    mut attempt: Attempt,
    bridge: &dyn Bridge,
    lifecycle: Lifecycle,
) -> (AttemptReport, Vec<GuestNamespace>) {
    let budget = Rc::new(budget);
    let mut calls_issued = 0;
    let fresh = match budget.check() {
        Some(stop) => Err(stop_end(stop)),
        None => lifecycle.fresh.map_or_else(|| Fresh::new(Vec::new()), Ok),
    };
    let (end, logs, touched) = match fresh {
        Err(end) => (end, Logs::default(), Vec::new()),
        Ok(fresh) => {
            let host = Rc::clone(&fresh.host);
            let end = match Guest::start(budget, &mut attempt, fresh) {
                Ok(guest) => guest.drive(&host, bridge, &mut calls_issued, lifecycle.spent.as_deref()).await,
                Err(end) => end,
            };
            (end, host.take_logs(), host.take_touched())
        }
    };
    (AttemptReport { end, logs: logs.lines, logs_truncated: logs.truncated, calls_issued }, touched)
}

/// What every attempt builds before it sees its own code or configuration: a new runtime and
/// context with the prelude evaluated and installed with its host functions (every global but
/// the namespaces, and nothing that depends on the run), leaving the prelude's `configure` for
/// the attempt to call with its namespaces, seed and clock. Made ahead of an attempt so the
/// attempt skips that work; it is handed to at most one attempt and dropped with it, so no
/// guest code ever runs in a context another attempt used.
pub(crate) struct Fresh {
    configure: Persistent<Function<'static>>,
    /// What the host functions fill, for the attempt's driver loop.
    host: Rc<GuestBridge>,
    /// What the attempt's plain result is read against.
    realm: plain::Realm,
    context: Context,
    runtime: Runtime,
    heap: Rc<Heap>,
}

impl Fresh {
    /// A runtime and context with the prelude installed and `namespaces` built into it (as
    /// their first use would build them), for an attempt that has not started yet.
    pub(crate) fn new(namespaces: Vec<GuestNamespace>) -> Result<Fresh, AttemptEnd> {
        // The ceiling is the attempt's, set when an attempt takes this guest; what the prelude
        // allocated here counts against it then, as when it is built inside the attempt.
        let heap = Heap::new(usize::MAX);
        let runtime = Runtime::new_with_alloc(GuestAllocator::new(Rc::clone(&heap)))
            .map_err(internal("cannot start a runtime"))?;
        runtime.set_max_stack_size(MAX_STACK_BYTES);
        // QuickJS collects first at 256 KiB, which a fresh context with the prelude nearly
        // fills, so short runs paid for a collection every few bridge calls. The budget still
        // caps the heap; collections grow their threshold from here as usual.
        runtime.set_gc_threshold(GC_THRESHOLD_BYTES);
        runtime.set_loader(NoModules, NoModules);
        let prelude = prelude::bytecode().map_err(AttemptEnd::Internal)?;
        let context =
            Context::custom::<GuestIntrinsics>(&runtime).map_err(internal("cannot start a context"))?;
        let host = GuestBridge::new();
        let (configure, realm) = context.with(|ctx| -> Result<_, AttemptEnd> {
            let module = load_module(&ctx, prelude).catch(&ctx).map_err(caught("cannot load the prelude"))?;
            let (module, _) = module.eval().catch(&ctx).map_err(caught("cannot evaluate the prelude"))?;
            let install: Function = module.get("install").map_err(internal("the prelude has no install"))?;
            let (functions, realm) = host.object(&ctx).map_err(internal("cannot build the host object"))?;
            let installed: Object =
                install.call((functions,)).catch(&ctx).map_err(caught("cannot install the prelude"))?;
            let configure: Function =
                installed.get("configure").map_err(internal("the prelude has no configure"))?;
            let premake: Function =
                installed.get("premake").map_err(internal("the prelude has no premake"))?;
            for namespace in namespaces {
                let Ok(tools) = serde_json::to_string(&namespace.tools) else { continue };
                // One that cannot be built ahead is built on first use, as any other.
                if premake.call::<_, ()>((namespace.name.as_str(), tools)).catch(&ctx).is_ok() {
                    host.premade(namespace);
                }
            }
            Ok((Persistent::save(&ctx, configure), realm))
        })?;
        Ok(Fresh { configure, host, realm, context, runtime, heap })
    }

    /// The names of the namespaces built into this guest.
    pub(crate) fn premade(&self) -> Vec<String> {
        self.host.premade_names()
    }
}

impl Guest {
    fn start(budget: Rc<Budget>, attempt: &mut Attempt, fresh: Fresh) -> Result<Guest, AttemptEnd> {
        fresh.heap.set_limit(attempt.limits.memory_bytes);
        let handler_budget = Rc::clone(&budget);
        fresh.runtime.set_interrupt_handler(Some(Box::new(move || handler_budget.interrupt())));

        let code = budget.segment(|| compile_module(CODE_MODULE, &wrap(&attempt.body), true)).map_err(
            |e| match e {
                CompileError::Syntax(e) => AttemptEnd::Threw(e),
                CompileError::Internal(e) => AttemptEnd::Internal(e),
            },
        )?;
        let names = fresh.host.begin(attempt.log_budget_bytes, std::mem::take(&mut attempt.namespaces));
        let installed = fresh.context.with(|ctx| -> Result<_, AttemptEnd> {
            let configure =
                fresh.configure.clone().restore(&ctx).map_err(internal("the prelude has no configure"))?;
            // Plain values and arrays: no guest code has run in this context yet, so nothing
            // can have changed how an array built here is read.
            let api: Object = configure
                .call((
                    names,
                    seed_words(attempt.seed).to_vec(),
                    attempt.clock_origin_ms,
                    attempt.limits.max_timeout_ms as f64,
                    attempt.log_budget_bytes as f64,
                    MAX_RESULT_BYTES as f64,
                ))
                .catch(&ctx)
                .map_err(caught("cannot configure the prelude"))?;
            let settle: Function = api.get("settle").map_err(internal("the prelude has no settle"))?;
            Ok((Persistent::save(&ctx, api), Persistent::save(&ctx, settle)))
        });
        let (api, settle) = installed.map_err(|end| budget.stopped().map_or(end, stop_end))?;

        // Field by field, the handle first: it must go before the context and runtime.
        let Fresh { configure, host, realm, context, runtime, heap } = fresh;
        drop((configure, host));
        let mut guest = Guest { api, settle, code: None, context, runtime, budget, heap, realm };
        guest.run_jobs()?;
        let evaluated = guest.budget.segment(|| {
            guest.context.with(|ctx| {
                let evaluate = || {
                    let module = load_module(&ctx, &code).catch(&ctx)?;
                    let (module, evaluation) = module.eval().catch(&ctx)?;
                    let namespace = module.namespace().catch(&ctx)?;
                    Ok(Code {
                        evaluation: Persistent::save(&ctx, evaluation),
                        namespace: Persistent::save(&ctx, namespace),
                        main: RefCell::new(None),
                    })
                };
                evaluate().map_err(|caught| thrown(&ctx, caught))
            })
        });
        match evaluated {
            Ok(code) => guest.code = Some(code),
            Err(Ok(reason)) => return Err(guest.stopped_or(|g| g.error_end(reason))),
            Err(Err(e)) => {
                return Err(guest.stopped_or(|_| AttemptEnd::Internal(format!("cannot run the code: {e}"))));
            }
        }
        Ok(guest)
    }

    /// Moves calls between the guest and the bridge until the code settles or must stop, then
    /// lets calls already made finish (their answers are not delivered).
    async fn drive<'a>(
        self,
        host: &Rc<GuestBridge>,
        bridge: &'a dyn Bridge,
        calls_issued: &mut u32,
        spent: Option<&SpentGuests>,
    ) -> AttemptEnd {
        let mut in_flight: InFlight<'a> = FuturesUnordered::new();
        let end = self.drive_loop(host, bridge, calls_issued, &mut in_flight).await;
        match spent {
            Some(spent) => spent.keep(self),
            None => drop(self),
        }
        match end {
            // Calls the code made before it settled still go out: it asked for them, and the
            // engine journals them. If one of them must wait for a person, so must the run.
            AttemptEnd::Completed(_) | AttemptEnd::Unserializable(_) => {
                forward(host, bridge, calls_issued, &mut in_flight);
                if drain(&mut in_flight).await { AttemptEnd::Suspended } else { end }
            }
            AttemptEnd::Threw(_) => {
                forward(host, bridge, calls_issued, &mut in_flight);
                drain(&mut in_flight).await;
                end
            }
            AttemptEnd::Suspended
            | AttemptEnd::Limit(LimitKind::Compute | LimitKind::Memory | LimitKind::Stack) => {
                drain(&mut in_flight).await;
                end
            }
            // Out of wall time, cancelled or broken: abandon what is in flight.
            _ => end,
        }
    }

    async fn drive_loop<'a>(
        &self,
        host: &Rc<GuestBridge>,
        bridge: &'a dyn Bridge,
        calls_issued: &mut u32,
        in_flight: &mut InFlight<'a>,
    ) -> AttemptEnd {
        loop {
            if let Err(end) = self.run_jobs() {
                return end;
            }
            if let Some(settled) = self.outcome() {
                return self.finish(settled);
            }
            forward(host, bridge, calls_issued, in_flight);
            if in_flight.is_empty() {
                // Nothing the host owes the guest: time jumps to the next timer, if any.
                match self.fire_timer() {
                    Ok(true) => continue,
                    // Out of memory, a promise chain can stop dead: say why.
                    Ok(false) if self.heap.exhausted() => return AttemptEnd::Limit(LimitKind::Memory),
                    Ok(false) => return AttemptEnd::Stalled,
                    Err(end) => return end,
                }
            }
            // Woken by the first answer, or by a cancel from outside while calls are in flight.
            let first = std::future::poll_fn(|cx| {
                if self.budget.cancelled() {
                    return std::task::Poll::Ready(None);
                }
                self.budget.wake_on_cancel(cx.waker());
                in_flight.poll_next_unpin(cx)
            })
            .await;
            let Some(first) = first else {
                if let Some(stop) = self.budget.check() {
                    return stop_end(stop);
                }
                continue;
            };
            let mut batch = vec![first];
            while let Some(Some(next)) = in_flight.next().now_or_never() {
                batch.push(next);
            }
            if let Some(stop) = self.budget.check() {
                return stop_end(stop);
            }
            if batch.iter().any(|(_, reply)| matches!(reply, Reply::Call(GuestReply::Suspend))) {
                return AttemptEnd::Suspended;
            }
            // Answers that arrived together are delivered in the order the guest asked.
            batch.sort_by_key(|(ticket, _)| *ticket);
            if let Err(end) = self.settle(batch) {
                return end;
            }
        }
    }

    /// Calls the prelude's API inside a segment; an exception becomes the attempt's end.
    fn with_api<R>(
        &self,
        f: impl for<'js> FnOnce(&Ctx<'js>, Object<'js>) -> rquickjs::Result<R>,
    ) -> Result<R, AttemptEnd> {
        let out = self.budget.segment(|| {
            self.context.with(|ctx| {
                let api = self.api.clone().restore(&ctx).map_err(|e| Err(e.to_string()))?;
                f(&ctx, api).catch(&ctx).map_err(|caught| thrown(&ctx, caught))
            })
        });
        match out {
            Ok(r) => Ok(r),
            Err(Ok(reason)) => Err(self.stopped_or(|g| g.error_end(reason))),
            Err(Err(e)) => Err(self.stopped_or(|_| AttemptEnd::Internal(format!("the prelude failed: {e}")))),
        }
    }

    /// Delivers host answers into the guest.
    fn settle(&self, batch: Vec<(u32, Reply)>) -> Result<(), AttemptEnd> {
        self.with_api(|ctx, _| {
            let settle = self.settle.clone().restore(ctx)?;
            for (ticket, reply) in batch {
                let (ok, text) = match reply {
                    Reply::Call(GuestReply::Ok(value)) => (true, serde_json::to_string(&value)),
                    Reply::Call(GuestReply::Err(failure)) => (false, serde_json::to_string(&failure)),
                    Reply::Call(GuestReply::Suspend) => continue,
                    Reply::Lookup(Ok(text)) => (true, serde_json::to_string(&text)),
                    Reply::Lookup(Err(message)) => (
                        false,
                        serde_json::to_string(&ToolFailure {
                            code: "lookup_failed".into(),
                            message,
                            hint: None,
                            status: None,
                            retryable: false,
                        }),
                    ),
                };
                let text = text.unwrap_or_else(|e| {
                    format!(r#"{{"code":"internal","message":"the host could not encode this answer: {e}"}}"#)
                });
                settle.call::<_, ()>((ticket, ok, text))?;
            }
            Ok(())
        })
    }

    /// Fires the earliest virtual timer; `false` when there is none.
    fn fire_timer(&self) -> Result<bool, AttemptEnd> {
        let fired = self.with_api(|_, api| {
            let fire: Function = api.get("fireTimer")?;
            let fired: Value = fire.call(())?;
            Ok(match fired.as_string() {
                Some(text) => Err(text.to_string()?),
                None => Ok(fired.as_int() == Some(1)),
            })
        })?;
        match fired {
            Ok(fired) => Ok(fired),
            Err(text) => Err(match serde_json::from_str::<GuestError>(&text) {
                Ok(error) => self.classify(error),
                Err(e) => AttemptEnd::Internal(format!("cannot read the guest's error: {e}")),
            }),
        }
    }

    /// The attempt's end if the budget or cancel flag stopped the guest, else `otherwise`.
    fn stopped_or(&self, otherwise: impl FnOnce(&Guest) -> AttemptEnd) -> AttemptEnd {
        match self.budget.stopped() {
            Some(stop) => stop_end(stop),
            None => otherwise(self),
        }
    }

    /// Runs every pending job (promise reactions) with the guest clock running.
    fn run_jobs(&self) -> Result<(), AttemptEnd> {
        self.budget.segment(|| {
            loop {
                match self.runtime.execute_pending_job() {
                    Ok(true) => {
                        if let Some(stop) = self.budget.stopped() {
                            return Err(stop_end(stop));
                        }
                    }
                    Ok(false) => return Ok(()),
                    Err(job) => {
                        if let Some(stop) = self.budget.stopped() {
                            return Err(stop_end(stop));
                        }
                        let reason = job.0.with(|ctx| Persistent::save(&ctx, ctx.catch()));
                        return Err(self.error_end(reason));
                    }
                }
            }
        })
    }

    /// Whether the code has settled, and how.
    fn outcome(&self) -> Option<Settled> {
        let code = self.code.as_ref()?;
        self.context.with(|ctx| {
            let main = code.main.borrow().as_ref().map(|main| main.clone().restore(&ctx));
            let promise = match main {
                Some(main) => main.ok()?,
                None => {
                    let evaluation = code.evaluation.clone().restore(&ctx).ok()?;
                    match evaluation.result::<Value>() {
                        None => return None,
                        Some(Err(_)) => return Some(Settled::Rejected(Persistent::save(&ctx, ctx.catch()))),
                        Some(Ok(_)) => {}
                    }
                    let namespace = code.namespace.clone().restore(&ctx).ok()?;
                    let main: Value = match namespace.get("default") {
                        Ok(main) => main,
                        Err(_) => return Some(Settled::Rejected(Persistent::save(&ctx, ctx.catch()))),
                    };
                    let Some(promise) = main.as_promise().cloned() else {
                        return Some(Settled::Resolved(Persistent::save(&ctx, main)));
                    };
                    *code.main.borrow_mut() = Some(Persistent::save(&ctx, promise.clone()));
                    promise
                }
            };
            match promise.result::<Value>() {
                None => None,
                Some(Ok(value)) => Some(Settled::Resolved(Persistent::save(&ctx, value))),
                Some(Err(_)) => Some(Settled::Rejected(Persistent::save(&ctx, ctx.catch()))),
            }
        })
    }

    /// Gives the guest room to finish, then turns what it settled with into the attempt's end.
    fn finish(&self, settled: Settled) -> AttemptEnd {
        self.heap.grant(FINISH_HEADROOM_BYTES);
        match settled {
            Settled::Rejected(reason) => self.error_end(reason),
            Settled::Resolved(value) => {
                let text = self.budget.segment(|| {
                    self.context.with(|ctx| -> rquickjs::Result<Finished> {
                        let value = value.restore(&ctx)?;
                        // Plain data is read as it is; anything else is written by the prelude.
                        if let Some(plain) = plain::read_result(&ctx, &self.realm, &value) {
                            return Ok(Finished::Plain(plain));
                        }
                        let api = self.api.clone().restore(&ctx)?;
                        let finish: Function = api.get("finish")?;
                        finish.call((value,)).map(Finished::Text)
                    })
                });
                match text {
                    Ok(Finished::Plain(plain)) => AttemptEnd::Completed(Some(plain)),
                    Ok(Finished::Text(text)) => result_end(&text),
                    Err(_) if self.heap.exhausted() => AttemptEnd::Limit(LimitKind::Memory),
                    Err(e) => {
                        self.stopped_or(|_| AttemptEnd::Internal(format!("cannot read the result: {e}")))
                    }
                }
            }
        }
    }

    /// Turns a thrown value into the attempt's end: a limit when it is QuickJS reporting one,
    /// else the guest's error made plain.
    fn error_end(&self, reason: Persistent<Value<'static>>) -> AttemptEnd {
        if let Some(stop) = self.budget.stopped() {
            return stop_end(stop);
        }
        self.heap.grant(FINISH_HEADROOM_BYTES);
        let described = self.budget.segment(|| {
            self.context.with(|ctx| {
                let describe = || -> rquickjs::Result<String> {
                    let api = self.api.clone().restore(&ctx)?;
                    let describe: Function = api.get("describeError")?;
                    describe.call((reason.restore(&ctx)?,))
                };
                describe().catch(&ctx).map_err(|e| e.to_string())
            })
        });
        let error = match described.map(|text| serde_json::from_str::<GuestError>(&text)) {
            Ok(Ok(error)) => error,
            Ok(Err(e)) => return AttemptEnd::Internal(format!("cannot read the guest's error: {e}")),
            Err(e) => {
                return self.stopped_or(|g| {
                    if g.heap.exhausted() {
                        AttemptEnd::Limit(LimitKind::Memory)
                    } else {
                        AttemptEnd::Internal(format!("cannot describe the guest's error: {e}"))
                    }
                });
            }
        };
        self.classify(error)
    }

    /// QuickJS reports exhausted memory and stack as ordinary errors, and throws `null` when
    /// it cannot even allocate the error: report those as limits. An error after the heap
    /// ran out is put down to the heap.
    fn classify(&self, error: GuestError) -> AttemptEnd {
        if self.heap.exhausted() {
            return AttemptEnd::Limit(LimitKind::Memory);
        }
        match (error.name.as_str(), error.message.as_str()) {
            ("InternalError", "out of memory") => AttemptEnd::Limit(LimitKind::Memory),
            ("RangeError", "Maximum call stack size exceeded") => AttemptEnd::Limit(LimitKind::Stack),
            ("InternalError", "interrupted") => AttemptEnd::Limit(LimitKind::Compute),
            _ => AttemptEnd::Threw(error),
        }
    }
}

/// How the code settled, with the value or reason kept alive across `Context::with`.
enum Settled {
    Resolved(Persistent<Value<'static>>),
    Rejected(Persistent<Value<'static>>),
}

fn stop_end(stop: Stop) -> AttemptEnd {
    match stop {
        Stop::Limit(kind) => AttemptEnd::Limit(kind),
        Stop::Cancelled => AttemptEnd::Cancelled,
    }
}

/// The thrown value behind a caught error, kept alive past `Context::with`; or, when nothing
/// was thrown, the host-side error's text.
fn thrown<'js>(ctx: &Ctx<'js>, caught: CaughtError<'js>) -> Result<Persistent<Value<'static>>, String> {
    match caught {
        CaughtError::Exception(e) => Ok(Persistent::save(ctx, e.into_value())),
        CaughtError::Value(v) => Ok(Persistent::save(ctx, v)),
        CaughtError::Error(e) => Err(e.to_string()),
    }
}

fn caught(what: &'static str) -> impl FnOnce(CaughtError<'_>) -> AttemptEnd {
    move |e| AttemptEnd::Internal(format!("{what}: {e}"))
}

/// Hands the guest's new requests to the bridge. Lookups are answered on the spot.
fn forward<'a>(
    host: &GuestBridge,
    bridge: &'a dyn Bridge,
    calls_issued: &mut u32,
    in_flight: &mut InFlight<'a>,
) {
    for request in host.take_requests() {
        match request {
            GuestRequest::Call { ticket, call } => {
                *calls_issued = calls_issued.saturating_add(1);
                in_flight.push(Box::pin(bridge.call(call).map(move |reply| (ticket, Reply::Call(reply)))));
            }
            GuestRequest::Lookup { ticket, kind, args } => match kind {
                LookupKind::Search => {
                    in_flight.push(Box::pin(ready((ticket, Reply::Lookup(bridge.search(args))))));
                }
                LookupKind::Describe => {
                    in_flight.push(Box::pin(ready((ticket, Reply::Lookup(bridge.describe(args))))));
                }
                LookupKind::Read | LookupKind::Skill => {
                    let answer =
                        if kind == LookupKind::Read { bridge.read(args) } else { bridge.skill(args) };
                    in_flight.push(Box::pin(answer.map(move |answer| {
                        let reply = match answer {
                            Ok(slice) => GuestReply::Ok(slice),
                            Err(failure) => GuestReply::Err(failure),
                        };
                        (ticket, Reply::Call(reply))
                    })));
                }
            },
        }
    }
}

/// Awaits every call still in flight; says whether any of them asked to suspend.
async fn drain(in_flight: &mut InFlight<'_>) -> bool {
    let mut suspended = false;
    while let Some((_, reply)) = in_flight.next().await {
        suspended |= matches!(reply, Reply::Call(GuestReply::Suspend));
    }
    suspended
}

/// The value the code returned: read as plain data, or the prelude's `finish` answer.
enum Finished {
    Plain(serde_json::Value),
    Text(String),
}

/// Reads the prelude's `finish` answer: `U`, `J<json>` or `E<reason>`.
fn result_end(text: &str) -> AttemptEnd {
    match text.split_at_checked(1) {
        Some(("U", _)) => AttemptEnd::Completed(None),
        Some(("J", json)) => match serde_json::from_str(json) {
            Ok(value) => AttemptEnd::Completed(Some(value)),
            Err(e) => AttemptEnd::Unserializable(format!("the result is not valid JSON: {e}")),
        },
        Some(("E", reason)) => AttemptEnd::Unserializable(reason.to_owned()),
        _ => AttemptEnd::Internal(format!("unexpected answer from the prelude's finish: {text:.40}")),
    }
}

//! The QuickJS sandbox driver (rquickjs): runs a run's code, one attempt at a time, in a fresh
//! QuickJS runtime with the guest prelude loaded and every budget enforced.
//!
//! The same driver runs natively and compiled to wasm32 inside the hosted Worker, so guest
//! behaviour is the same everywhere. What differs is only how time is measured, which the host
//! chooses with a [`ComputeMeter`]. Each attempt gets:
//! - a fresh runtime and context, without QuickJS's eval intrinsic (no code from text), and a
//!   module resolver that refuses every import;
//! - the heap limit (`memoryBytes`), a 256 KiB stack ceiling, and an interrupt handler that
//!   stops the guest when its compute time (`computeMs`, counted only while JavaScript runs),
//!   the attempt's wall time (`wallMs`) or the cancel flag says so;
//! - the prelude from bytecode compiled once per process, configured for the attempt.
//!
//! The driver decides nothing about tools: every call goes to the [`Bridge`], whose answers it
//! delivers in the order the guest asked. Timers are virtual: when nothing is in flight, the
//! guest clock jumps to the next timer instead of sleeping.

mod attempt;
mod bridge;
pub(crate) mod compile;
mod memory;
mod meter;
mod plain;
#[cfg(target_arch = "wasm32")]
mod wasm;

use std::cell::RefCell;
use std::rc::Rc;
use std::sync::Arc;

pub use meter::{ComputeMeter, MicrosClock};

use crate::ports::LocalBoxFuture;
use crate::sandbox::{Attempt, AttemptReport, Bridge, Cancel, GuestNamespace, Sandbox};

/// The QuickJS driver. Cheap to keep: all per-attempt state lives in the attempt's future,
/// except a guest made ahead by [`QuickJs::prepare`] and, with [`QuickJs::free_spent_later`],
/// guests whose attempts are over.
pub struct QuickJs {
    meter: ComputeMeter,
    cancel: Arc<Cancel>,
    /// A runtime and context with the prelude evaluated, for the next attempt only.
    spare: RefCell<Option<attempt::Fresh>>,
    /// Where attempts leave their spent guest, when the host frees them itself.
    spent: Option<Rc<attempt::SpentGuests>>,
    /// The namespaces the last attempt used: [`QuickJs::prepare`] builds them into the next
    /// guest.
    warm: RefCell<Vec<GuestNamespace>>,
}

impl std::fmt::Debug for QuickJs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("QuickJs")
            .field("meter", &self.meter)
            .field("cancel", &self.cancel)
            .field("prepared", &self.spare.try_borrow().map(|s| s.is_some()).unwrap_or(true))
            .field("free_spent_later", &self.spent.is_some())
            .finish()
    }
}

impl QuickJs {
    pub fn new(meter: ComputeMeter) -> QuickJs {
        QuickJs::with_cancel(meter, Arc::default())
    }

    /// A driver whose attempts stop, as [`crate::sandbox::AttemptEnd::Cancelled`], once `cancel`
    /// is set: it is read while JavaScript runs, and it wakes an attempt that waits on calls in
    /// flight, which are then abandoned. The host clears it before the driver's next attempt.
    pub fn with_cancel(meter: ComputeMeter, cancel: Arc<Cancel>) -> QuickJs {
        QuickJs { meter, cancel, spare: RefCell::new(None), spent: None, warm: RefCell::new(Vec::new()) }
    }

    /// The flag that cancels this driver's attempts.
    pub fn cancel_flag(&self) -> Arc<Cancel> {
        Arc::clone(&self.cancel)
    }

    /// Attempts leave their runtime to [`QuickJs::free_spent`] instead of freeing it before
    /// they report, so a host can answer first and free it after. Nothing runs in a spent
    /// runtime again.
    pub fn free_spent_later(mut self) -> QuickJs {
        self.spent = Some(Rc::default());
        self
    }

    /// Frees the runtimes of attempts that are over (see [`QuickJs::free_spent_later`]).
    pub fn free_spent(&self) {
        if let Some(spent) = &self.spent {
            spent.free();
        }
    }

    /// Builds the next attempt's runtime and context and installs the prelude in it now, while
    /// the host has nothing else to do, unless one is waiting already; and this thread's
    /// compiler, when the next compile would have to replace it. Only the next attempt on
    /// this driver takes it, and no other attempt ever does: every attempt still runs in a
    /// context nothing ran in before. The namespaces the last attempt used are built into it
    /// too, before any guest code runs; the next attempt uses them if its namespaces have the
    /// same tools, and builds its own on first use otherwise.
    pub fn prepare(&self) -> Result<(), String> {
        compile::prepare()?;
        if self.spare.try_borrow().map_or(true, |spare| spare.is_some()) {
            return Ok(());
        }
        // Taken, not copied: the attempt that takes this guest leaves its own.
        let warm = self.warm.try_borrow_mut().map(|mut warm| std::mem::take(&mut *warm)).unwrap_or_default();
        let fresh = attempt::Fresh::new(warm).map_err(|end| format!("cannot prepare a sandbox: {end:?}"))?;
        if let Ok(mut spare) = self.spare.try_borrow_mut() {
            *spare = Some(fresh);
        }
        Ok(())
    }

    /// The namespaces built into the guest that waits for the next attempt.
    pub fn prepared_namespaces(&self) -> Vec<String> {
        match self.spare.try_borrow() {
            Ok(spare) => spare.as_ref().map(attempt::Fresh::premade).unwrap_or_default(),
            Err(_) => Vec::new(),
        }
    }

    /// Whether a guest made by [`QuickJs::prepare`] waits for the next attempt.
    pub fn is_prepared(&self) -> bool {
        self.spare.try_borrow().is_ok_and(|spare| spare.is_some())
    }
}

impl Sandbox for QuickJs {
    fn run<'a>(&'a self, attempt: Attempt, bridge: &'a dyn Bridge) -> LocalBoxFuture<'a, AttemptReport> {
        // Taken before the first await: two attempts can never share it.
        let fresh = self.spare.try_borrow_mut().ok().and_then(|mut spare| spare.take());
        let spent = self.spent.clone();
        Box::pin(async move {
            let budget = meter::Budget::new(
                self.meter.clone(),
                Arc::clone(&self.cancel),
                attempt.limits.compute_ms,
                attempt.limits.wall_ms,
            );
            let (report, touched) =
                attempt::run(budget, attempt, bridge, attempt::Lifecycle { fresh, spent }).await;
            if let Ok(mut warm) = self.warm.try_borrow_mut() {
                *warm = touched;
            }
            report
        })
    }
}

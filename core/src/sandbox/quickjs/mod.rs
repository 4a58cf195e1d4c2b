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
pub(crate) mod compile;
mod host;
mod memory;
mod meter;
#[cfg(target_arch = "wasm32")]
mod wasm;

use std::sync::Arc;
use std::sync::atomic::AtomicBool;

pub use meter::{ComputeMeter, MicrosClock};

use crate::ports::LocalBoxFuture;
use crate::sandbox::{Attempt, AttemptReport, Bridge, Sandbox};

/// The QuickJS driver. Cheap to keep: all per-attempt state lives in the attempt's future.
#[derive(Debug)]
pub struct QuickJs {
    meter: ComputeMeter,
    cancel: Arc<AtomicBool>,
}

impl QuickJs {
    pub fn new(meter: ComputeMeter) -> QuickJs {
        QuickJs { meter, cancel: Arc::new(AtomicBool::new(false)) }
    }

    /// A driver whose attempts stop, as [`crate::sandbox::AttemptEnd::Cancelled`], once `cancel`
    /// is set. The flag is read while JavaScript runs and between bridge answers; a host that
    /// must not wait for an answer in flight also drops the attempt's future. The host clears
    /// the flag before reusing the driver.
    pub fn with_cancel(meter: ComputeMeter, cancel: Arc<AtomicBool>) -> QuickJs {
        QuickJs { meter, cancel }
    }

    /// The flag that cancels this driver's attempts.
    pub fn cancel_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.cancel)
    }
}

impl Sandbox for QuickJs {
    fn run<'a>(&'a self, attempt: Attempt, bridge: &'a dyn Bridge) -> LocalBoxFuture<'a, AttemptReport> {
        Box::pin(async move {
            let budget = meter::Budget::new(
                self.meter.clone(),
                Arc::clone(&self.cancel),
                attempt.limits.compute_ms,
                attempt.limits.wall_ms,
            );
            attempt::run(budget, attempt, bridge).await
        })
    }
}

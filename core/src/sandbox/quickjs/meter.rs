//! How guest time is measured and budgets are enforced: the host-supplied [`ComputeMeter`] and
//! the per-attempt [`Budget`] the interrupt handler and the driver loop both consult.
//!
//! Guest time accrues only inside a *segment*, while the driver is running JavaScript (module
//! evaluation, pending jobs, settling a call, firing a timer); it stands still while the driver
//! awaits bridge futures. Wall time runs across the whole attempt.

use std::cell::Cell;
use std::sync::Arc;

use crate::sandbox::Cancel;

use crate::sandbox::LimitKind;

/// A monotonic clock in microseconds, supplied by the host (core never reads a clock itself).
pub type MicrosClock = Arc<dyn Fn() -> u64 + Send + Sync>;

/// How the driver measures guest compute time and attempt wall time.
#[derive(Clone)]
pub struct ComputeMeter {
    clock: Option<MicrosClock>,
    micros_per_tick: Option<u64>,
}

impl ComputeMeter {
    /// Measure both guest time and wall time with a monotonic clock (native hosts).
    pub fn clock(now_micros: impl Fn() -> u64 + Send + Sync + 'static) -> ComputeMeter {
        ComputeMeter { clock: Some(Arc::new(now_micros)), micros_per_tick: None }
    }

    /// Count guest time in interrupt-handler invocations, each worth `micros_per_tick`, for
    /// hosts whose clock stands still while JavaScript runs (Workers). Without a clock the
    /// driver cannot see wall time: the host bounds it around the attempt's future.
    pub fn ticks(micros_per_tick: u64) -> ComputeMeter {
        ComputeMeter { clock: None, micros_per_tick: Some(micros_per_tick.max(1)) }
    }

    /// Count guest time in ticks and measure wall time with `now_micros`.
    pub fn ticks_with_wall_clock(
        micros_per_tick: u64,
        now_micros: impl Fn() -> u64 + Send + Sync + 'static,
    ) -> ComputeMeter {
        ComputeMeter { clock: Some(Arc::new(now_micros)), micros_per_tick: Some(micros_per_tick.max(1)) }
    }
}

impl std::fmt::Debug for ComputeMeter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ComputeMeter")
            .field("clock", &self.clock.is_some())
            .field("micros_per_tick", &self.micros_per_tick)
            .finish()
    }
}

/// Why the guest was stopped from outside its own code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    Limit(LimitKind),
    Cancelled,
}

/// One attempt's budgets. Shared (behind an `Rc`) by the interrupt handler and the driver.
pub(crate) struct Budget {
    meter: ComputeMeter,
    cancel: Arc<Cancel>,
    compute_limit_us: u64,
    wall_limit_us: u64,
    wall_start: u64,
    spent_us: Cell<u64>,
    segment_start: Cell<Option<u64>>,
    ticks: Cell<u64>,
    stopped: Cell<Option<Stop>>,
}

impl Budget {
    pub(crate) fn new(meter: ComputeMeter, cancel: Arc<Cancel>, compute_ms: u64, wall_ms: u64) -> Budget {
        let wall_start = meter.clock.as_ref().map_or(0, |now| now());
        Budget {
            meter,
            cancel,
            compute_limit_us: compute_ms.saturating_mul(1000),
            wall_limit_us: wall_ms.saturating_mul(1000),
            wall_start,
            spent_us: Cell::new(0),
            segment_start: Cell::new(None),
            ticks: Cell::new(0),
            stopped: Cell::new(None),
        }
    }

    fn now(&self) -> Option<u64> {
        self.meter.clock.as_ref().map(|now| now())
    }

    /// Guest compute time so far, in microseconds.
    pub(crate) fn guest_us(&self) -> u64 {
        match self.meter.micros_per_tick {
            Some(per_tick) => self.ticks.get().saturating_mul(per_tick),
            None => {
                let running = match (self.segment_start.get(), self.now()) {
                    (Some(start), Some(now)) => now.saturating_sub(start),
                    _ => 0,
                };
                self.spent_us.get().saturating_add(running)
            }
        }
    }

    fn wall_us(&self) -> u64 {
        match self.now() {
            Some(now) => now.saturating_sub(self.wall_start),
            None => self.guest_us(),
        }
    }

    /// The first reason to stop, if any; sticky once found.
    pub(crate) fn check(&self) -> Option<Stop> {
        if let Some(stop) = self.stopped.get() {
            return Some(stop);
        }
        let stop = if self.cancel.is_cancelled() {
            Some(Stop::Cancelled)
        } else if self.guest_us() > self.compute_limit_us {
            Some(Stop::Limit(LimitKind::Compute))
        } else if self.wall_us() > self.wall_limit_us {
            Some(Stop::Limit(LimitKind::Wall))
        } else {
            None
        };
        if stop.is_some() {
            self.stopped.set(stop);
        }
        stop
    }

    /// Whether the host cancelled the attempt.
    pub(crate) fn cancelled(&self) -> bool {
        self.cancel.is_cancelled()
    }

    /// Wakes `waker` when the attempt is cancelled from outside.
    pub(crate) fn wake_on_cancel(&self, waker: &std::task::Waker) {
        self.cancel.wake_on_cancel(waker);
    }

    pub(crate) fn stopped(&self) -> Option<Stop> {
        self.stopped.get()
    }

    /// The interrupt handler's body: count a tick, then say whether to stop the guest.
    pub(crate) fn interrupt(&self) -> bool {
        self.ticks.set(self.ticks.get().saturating_add(1));
        self.check().is_some()
    }

    /// Runs `f` (which runs JavaScript) with the guest clock running.
    pub(crate) fn segment<R>(&self, f: impl FnOnce() -> R) -> R {
        if self.segment_start.get().is_some() {
            // Already inside a segment: the outer one counts this time.
            return f();
        }
        let start = self.now();
        self.segment_start.set(start);
        let out = f();
        if let (Some(start), Some(end)) = (start, self.now()) {
            self.spent_us.set(self.spent_us.get().saturating_add(end.saturating_sub(start)));
        }
        self.segment_start.set(None);
        out
    }
}

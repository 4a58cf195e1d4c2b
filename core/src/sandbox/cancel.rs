//! Stopping an attempt from outside: a host holds a [`Cancel`] for each driver and sets it when
//! a person cancels the run (locally, `hub cancel` from another process). A driver reads it
//! while the guest runs and, while the guest waits on calls, is woken by it, so an attempt
//! stops whether the code is busy or a call is in flight.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Waker;

/// A flag that cancels a driver's attempts, with the waker of the attempt waiting on it.
#[derive(Debug, Default)]
pub struct Cancel {
    set: AtomicBool,
    waiting: Mutex<Option<Waker>>,
}

impl Cancel {
    /// Cancels the attempt running now, if any, and every later one until [`Cancel::clear`].
    pub fn cancel(&self) {
        self.set.store(true, Ordering::SeqCst);
        let waker = self.waiting.lock().ok().and_then(|mut waiting| waiting.take());
        if let Some(waker) = waker {
            waker.wake();
        }
    }

    /// Lets attempts run again.
    pub fn clear(&self) {
        self.set.store(false, Ordering::SeqCst);
    }

    pub fn is_cancelled(&self) -> bool {
        self.set.load(Ordering::SeqCst)
    }

    /// Wakes `waker` on the next [`Cancel::cancel`]; the driver calls this each time it waits.
    pub(crate) fn wake_on_cancel(&self, waker: &Waker) {
        if let Ok(mut waiting) = self.waiting.lock() {
            match waiting.as_ref() {
                Some(old) if old.will_wake(waker) => {}
                _ => *waiting = Some(waker.clone()),
            }
        }
    }
}

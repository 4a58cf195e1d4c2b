//! When an answer has left for the client. The thread that hands the server a call's answer
//! still has work after it: the run's records go to the writer threads, and the spent sandbox
//! is freed and the next one prepared (about 1 ms of CPU). Started at once, that work takes the
//! cores the server needs to write the answer out: on two cores the answer waited up to 0.15 ms
//! for one. So that thread waits here until the answer has been written, for a short while at
//! most. The stdio server counts the messages it writes, the HTTP server the response bodies it
//! has handed to their connections; where nothing counts, nothing waits.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// The longest a thread waits for its answer to leave: an answer that cannot be written yet
/// (a client not reading) does not hold the work after it for longer.
pub const MAX_WAIT: Duration = Duration::from_millis(2);

static COUNTING: AtomicBool = AtomicBool::new(false);
static SENT: Mutex<u64> = Mutex::new(0);
static CHANGED: Condvar = Condvar::new();

/// From now on, the messages written to clients are counted: a server calls this before it
/// serves.
pub fn count_messages() {
    COUNTING.store(true, Ordering::Release);
}

/// A message was written whole to the client.
pub fn message_sent() {
    if !COUNTING.load(Ordering::Acquire) {
        return;
    }
    *SENT.lock().unwrap_or_else(PoisonError::into_inner) += 1;
    CHANGED.notify_all();
}

/// The count of messages sent so far, taken before an answer is handed over; `None` when
/// nothing counts them.
pub fn ticket() -> Option<u64> {
    COUNTING.load(Ordering::Acquire).then(|| *SENT.lock().unwrap_or_else(PoisonError::into_inner))
}

/// Waits until a message has been sent since `ticket` was taken, or [`MAX_WAIT`] has passed.
/// Another call's answer may be the one seen: the wait is only about leaving the cores free
/// while an answer goes out, never about which answer.
pub fn wait_sent(ticket: u64) {
    let deadline = Instant::now() + MAX_WAIT;
    let mut sent = SENT.lock().unwrap_or_else(PoisonError::into_inner);
    while *sent == ticket {
        let Some(left) = deadline.checked_duration_since(Instant::now()) else { return };
        sent = CHANGED.wait_timeout(sent, left).unwrap_or_else(PoisonError::into_inner).0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_thread_waits_only_while_nothing_was_sent_since_its_ticket() {
        assert_eq!(ticket(), None, "nothing counts before a server starts");
        count_messages();
        let first = ticket().unwrap();
        message_sent();
        let started = Instant::now();
        wait_sent(first);
        assert!(started.elapsed() < MAX_WAIT, "a message was sent: no wait");
        // Nothing sent since this ticket: the wait ends on its own.
        let second = ticket().unwrap();
        assert_eq!(second, first + 1);
        let started = Instant::now();
        wait_sent(second);
        assert!(started.elapsed() >= MAX_WAIT);
    }
}

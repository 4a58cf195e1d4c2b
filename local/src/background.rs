//! Work that must never hold up an answer: the record writers between records, and a run
//! thread preparing its next guest after it has answered.
//!
//! On Linux such a thread runs at the idle scheduling class meanwhile. Woken at the normal
//! class, a thread takes the core of the thread that woke it (the scheduler favours a thread
//! just woken), and a two-core machine then makes the answer wait for work that could have
//! waited instead: handing a record to a writer cost a one-call run about 60 µs on tmpfs. An
//! idle-class thread runs on a free core, or when no other thread wants one; on a busy machine
//! the kernel still gives it a small share, so it is never stopped for good.

/// Puts the calling thread at the idle scheduling class (`true`) or back at the normal one
/// (`false`). Elsewhere than on Linux, and should the call fail, nothing changes.
#[cfg(target_os = "linux")]
pub(crate) fn set(idle: bool) {
    use nix::libc;
    let policy = if idle { libc::SCHED_IDLE } else { libc::SCHED_OTHER };
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `param` is a valid `sched_param` that outlives the call, and pid 0 names the
    // calling thread; the call reads nothing else.
    #[allow(unsafe_code)]
    let _ = unsafe { libc::sched_setscheduler(0, policy, &param) };
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn set(_idle: bool) {}

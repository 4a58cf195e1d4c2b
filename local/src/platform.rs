//! Time and randomness from the OS: the system clock and `getrandom`, as the core's `Clock` and
//! `Entropy` ports and as plain functions for the rest of the local hub.

use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Result, anyhow};
use capabilities_core::ports::{Clock, Entropy};

/// Wall-clock time from the OS.
#[derive(Debug, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> u64 {
        now_ms()
    }
}

/// Milliseconds since the Unix epoch; 0 for a clock set before it.
pub fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// Randomness from the OS.
#[derive(Debug, Clone, Copy)]
pub struct OsEntropy;

impl Entropy for OsEntropy {
    fn fill(&self, buf: &mut [u8]) {
        // Without OS randomness nothing the hub makes is safe to use; stopping is right.
        getrandom::fill(buf).expect("the OS random number generator is available");
    }
}

/// `N` random bytes from the OS; an error when it has none to give.
pub fn random_bytes<const N: usize>() -> Result<[u8; N]> {
    let mut bytes = [0u8; N];
    getrandom::fill(&mut bytes).map_err(|e| anyhow!("no randomness available: {e}"))?;
    Ok(bytes)
}

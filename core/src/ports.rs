//! Ports: the traits through which the pure core reaches the world. Each host (the native
//! binary, the Cloudflare Worker) supplies adapters; tests use the in-memory fakes.
//!
//! Who drives whom: the run engine drives every port. A port never calls back into the engine.
//! Futures are `Send` natively and not on wasm32, where Workers futures are `!Send`; the
//! [`MaybeSend`] alias switches on the target, never on a feature.

use std::future::Future;
use std::pin::Pin;

#[cfg(not(target_arch = "wasm32"))]
mod send {
    /// `Send` natively; nothing on wasm32.
    pub trait MaybeSend: Send {}
    impl<T: Send + ?Sized> MaybeSend for T {}
    /// `Sync` natively; nothing on wasm32.
    pub trait MaybeSync: Sync {}
    impl<T: Sync + ?Sized> MaybeSync for T {}
}

#[cfg(target_arch = "wasm32")]
mod send {
    /// `Send` natively; nothing on wasm32.
    pub trait MaybeSend {}
    impl<T: ?Sized> MaybeSend for T {}
    /// `Sync` natively; nothing on wasm32.
    pub trait MaybeSync {}
    impl<T: ?Sized> MaybeSync for T {}
}

pub use send::{MaybeSend, MaybeSync};

/// A boxed future that is `Send` where the target has threads.
#[cfg(not(target_arch = "wasm32"))]
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
/// A boxed future that is `Send` where the target has threads.
#[cfg(target_arch = "wasm32")]
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// A boxed future that never needs to be `Send` (the sandbox holds a JS runtime).
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// Wall-clock time in milliseconds since the Unix epoch, for records and expiry. The run's
/// guest clock is logical and does not come from here.
pub trait Clock: MaybeSend + MaybeSync {
    fn now_ms(&self) -> u64;
}

/// Unpredictable bytes, for run ids, seeds and nonces.
pub trait Entropy: MaybeSend + MaybeSync {
    fn fill(&self, buf: &mut [u8]);
}

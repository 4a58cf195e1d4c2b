//! `Send` where the target has threads: the aliases every port and future in core is written
//! with. Natively they are `Send`/`Sync`; on wasm32, where Workers futures are `!Send`, they
//! are nothing. The switch is on the target, never on a feature, which unification would leak
//! into native builds.

use std::future::Future;
use std::pin::Pin;

#[cfg(not(target_arch = "wasm32"))]
mod aliases {
    /// `Send` natively; nothing on wasm32.
    pub trait MaybeSend: Send {}
    impl<T: Send + ?Sized> MaybeSend for T {}
    /// `Sync` natively; nothing on wasm32.
    pub trait MaybeSync: Sync {}
    impl<T: Sync + ?Sized> MaybeSync for T {}
}

#[cfg(target_arch = "wasm32")]
mod aliases {
    /// `Send` natively; nothing on wasm32.
    pub trait MaybeSend {}
    impl<T: ?Sized> MaybeSend for T {}
    /// `Sync` natively; nothing on wasm32.
    pub trait MaybeSync {}
    impl<T: ?Sized> MaybeSync for T {}
}

pub use aliases::{MaybeSend, MaybeSync};

/// A boxed future that is `Send` where the target has threads.
#[cfg(not(target_arch = "wasm32"))]
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;
/// A boxed future that is `Send` where the target has threads.
#[cfg(target_arch = "wasm32")]
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// A boxed future that never needs to be `Send` (the sandbox holds a JS runtime).
pub type LocalBoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

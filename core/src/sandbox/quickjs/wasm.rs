//! The one symbol QuickJS needs from its host on `wasm32-unknown-unknown`.
//!
//! rquickjs's wasm shim imports `__rquickjs_host_now_us` for QuickJS's own clock calls. The
//! guest never sees that clock (the prelude's `Date` and `performance` run on the logical
//! clock), so it reads zero: nothing here depends on the Worker's time.

/// Microseconds since the epoch, as QuickJS's C code asks for them: always zero.
#[allow(unsafe_code)]
// SAFETY: `no_mangle` exports this symbol under its exact name so the linker resolves the C
// shim's import to it. It is the only definition of that name in the build, it takes no
// arguments, touches no memory and returns a plain `f64`, matching the C declaration
// `double __rquickjs_host_now_us(void)`.
#[unsafe(no_mangle)]
pub extern "C" fn __rquickjs_host_now_us() -> f64 {
    0.0
}

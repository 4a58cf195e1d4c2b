//! Time and randomness inside workerd: `Date.now()` (which stands still while JavaScript runs,
//! so guest compute is metered by a counter instead) and `crypto.getRandomValues`.

use capabilities_core::ports::{Clock, Entropy};
use worker::js_sys;
use worker::wasm_bindgen::JsCast;

/// Wall-clock milliseconds from the Worker's `Date.now()`.
pub(crate) struct WorkerClock;

impl Clock for WorkerClock {
    fn now_ms(&self) -> u64 {
        js_sys::Date::now() as u64
    }
}

/// Microseconds from `Date.now()`, for the attempt's wall budget.
pub(crate) fn now_micros() -> u64 {
    (js_sys::Date::now() * 1000.0) as u64
}

/// Randomness from the Web Crypto API.
pub(crate) struct WorkerEntropy;

impl Entropy for WorkerEntropy {
    fn fill(&self, buf: &mut [u8]) {
        // Without randomness nothing the hub makes is safe to use; stopping is right.
        random(buf).expect("crypto.getRandomValues is available in workerd");
    }
}

fn random(buf: &mut [u8]) -> Result<(), worker::wasm_bindgen::JsValue> {
    let crypto = js_sys::Reflect::get(&js_sys::global(), &"crypto".into())?;
    let get: js_sys::Function = js_sys::Reflect::get(&crypto, &"getRandomValues".into())?.dyn_into()?;
    // getRandomValues fills at most 65,536 bytes per call.
    for chunk in buf.chunks_mut(65_536) {
        let array = js_sys::Uint8Array::new_with_length(chunk.len() as u32);
        get.call1(&crypto, &array)?;
        array.copy_to(chunk);
    }
    Ok(())
}

/// The text of secret `name`, if the Worker has it and it is not empty. Read by hand: an
/// environment binding workerd left unset is `null`, which `Env::secret` cannot take.
pub(crate) fn secret_text(env: &worker::Env, name: &str) -> Option<String> {
    js_sys::Reflect::get(env, &name.into()).ok()?.as_string().filter(|text| !text.is_empty())
}

//! A tool call's arguments, and the value the code returns, read straight from the guest's values
//! when they are plain data, the common case: no JSON text is written by the prelude's serializer
//! nor parsed again here, which was most of what a bridged call cost.
//!
//! [`read`] and [`read_result`] give `None` for anything they do not fully understand, and the
//! prelude then takes its general path (the serializer in `prelude.js`), which writes text, says
//! where what cannot be sent is, and runs `toJSON`. So this reader only has to be right about what it accepts,
//! which is exactly:
//!
//! - `null`, booleans, strings that are well-formed UTF-16 (a lone surrogate goes the general
//!   way, which replaces it), and numbers that are integers no larger than 2^53 in magnitude
//!   (others go the general way, whose decimal text decides how the host's JSON holds them) or
//!   not finite (`null`, as JSON writes them);
//! - objects of the ordinary class whose prototype is the realm's own `Object.prototype` or
//!   `null`, every own enumerable string-keyed property a data property (a getter could run guest
//!   code), in `Object.keys` order, members whose value is `undefined` left out;
//! - arrays of the ordinary class whose prototype is the realm's own `Array.prototype` and whose
//!   every index below `length` is an own data property (a hole is read through the prototype
//!   chain), `undefined` elements as `null`;
//! - at most [`MAX_DEPTH`] levels deep (a cycle goes the general way, which names it), and at most
//!   [`MAX_TEXT`] characters of JSON text by an upper bound of its length (six characters for every
//!   byte of a string, as if each were escaped): a quarter of what the general path takes, so
//!   nothing it would refuse as too large is taken here, and the walk, which no interrupt can
//!   stop, stays short however the values share their parts.
//!
//! Nothing here calls into the guest: a proxy, a getter or an exotic object is seen for what it
//! is (its class, or the flags of its property) before anything of it is read, and reading the
//! own data properties of an ordinary object or array runs no code. The values given are the same
//! `serde_json` values the general path's text parses to.

// The reader walks the guest's values through QuickJS's C API, which rquickjs exposes only with
// getters and traps that may run guest code: each call is explained where it is made.
#![allow(unsafe_code)]

use rquickjs::{Ctx, Object, qjs};
use serde_json::{Map, Value};

/// How deep the reader goes before leaving a value to the general path.
const MAX_DEPTH: usize = 32;
/// The JSON text the reader takes at most, by its upper bound: a quarter of the general path's
/// limit for a call's arguments (`MAX_ARGS_CHARS` in `prelude.js`, 4 MiB). Larger arguments go
/// the general way.
pub(crate) const MAX_TEXT: usize = 1024 * 1024;
/// The largest integer every JSON reader holds exactly.
const MAX_EXACT: f64 = 9_007_199_254_740_992.0;

/// What the reader compares a guest's objects against, read from the realm before any guest code
/// ran. Addresses only, for identity: the realm keeps both prototypes alive as long as it lives.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Realm {
    object_prototype: usize,
    array_prototype: usize,
    object_class: qjs::JSClassID,
    array_class: qjs::JSClassID,
}

impl Realm {
    /// Reads the realm's `Object.prototype` and `Array.prototype`. Must run before any guest code,
    /// while the globals are the realm's own.
    pub(crate) fn new(ctx: &Ctx<'_>) -> rquickjs::Result<Realm> {
        let object: Object = ctx.globals().get("Object")?;
        let object_prototype: Object = object.get("prototype")?;
        let array: Object = ctx.globals().get("Array")?;
        let array_prototype: Object = array.get("prototype")?;
        let (object_raw, array_raw) = (object_prototype.as_raw(), array_prototype.as_raw());
        // SAFETY: both are live objects (held above); reading a value's pointer and class id
        // touches nothing else.
        unsafe {
            Ok(Realm {
                object_prototype: qjs::JS_VALUE_GET_PTR(object_raw) as usize,
                array_prototype: qjs::JS_VALUE_GET_PTR(array_raw) as usize,
                object_class: qjs::JS_GetClassID(object_raw),
                array_class: qjs::JS_GetClassID(array_raw),
            })
        }
    }
}

/// A call's arguments or options as JSON when they are plain data as described above; `None`
/// sends them the general way. `undefined` reads as `{}`, as the prelude sends them left out.
pub(crate) fn read(ctx: &Ctx<'_>, realm: &Realm, value: &rquickjs::Value<'_>) -> Option<Value> {
    // SAFETY: reading the tag of a live value.
    if unsafe { qjs::JS_VALUE_GET_TAG(value.as_raw()) } == qjs::JS_TAG_UNDEFINED {
        return Some(Value::Object(Map::new()));
    }
    read_result(ctx, realm, value)
}

/// What the code returned, as JSON when it is plain data as described above; `None` sends it the
/// general way (the prelude's `finish`), `undefined` included.
pub(crate) fn read_result(ctx: &Ctx<'_>, realm: &Realm, value: &rquickjs::Value<'_>) -> Option<Value> {
    let mut reader = Reader { ctx: ctx.as_raw().as_ptr(), realm, text: 0 };
    let raw = value.as_raw();
    // SAFETY: `raw` is a live value held by `value` for this whole call.
    if unsafe { qjs::JS_VALUE_GET_TAG(raw) } == qjs::JS_TAG_UNDEFINED {
        return None;
    }
    // SAFETY: as above.
    unsafe { reader.value(raw, 0) }
}

struct Reader<'r> {
    ctx: *mut qjs::JSContext,
    realm: &'r Realm,
    /// The upper bound of the JSON text so far.
    text: usize,
}

/// A value QuickJS handed over with a reference of its own, freed when dropped.
struct Owned {
    ctx: *mut qjs::JSContext,
    raw: qjs::JSValue,
}

impl Drop for Owned {
    fn drop(&mut self) {
        // SAFETY: `raw` carries one reference this guard owns, and its context outlives the read.
        unsafe { qjs::JS_FreeValue(self.ctx, self.raw) }
    }
}

/// The own property enumeration QuickJS allocated, freed when dropped.
struct Names {
    ctx: *mut qjs::JSContext,
    tab: *mut qjs::JSPropertyEnum,
    len: u32,
}

impl Names {
    fn atoms(&self) -> &[qjs::JSPropertyEnum] {
        if self.tab.is_null() {
            return &[];
        }
        // SAFETY: QuickJS filled `len` entries at `tab`, alive until `drop`.
        unsafe { std::slice::from_raw_parts(self.tab, self.len as usize) }
    }
}

impl Drop for Names {
    fn drop(&mut self) {
        if !self.tab.is_null() {
            // SAFETY: the table and its atoms came from `JS_GetOwnPropertyNames` and are freed once.
            unsafe { qjs::JS_FreePropertyEnum(self.ctx, self.tab, self.len) }
        }
    }
}

impl Reader<'_> {
    /// Drops the exception a failed call left (out of memory): the general path will meet the
    /// same condition and report it.
    fn drop_exception(&self) {
        // SAFETY: taking the pending exception hands over its reference, freed at once.
        unsafe { qjs::JS_FreeValue(self.ctx, qjs::JS_GetException(self.ctx)) };
    }

    fn spend(&mut self, chars: usize) -> Option<()> {
        self.text = self.text.checked_add(chars)?;
        (self.text <= MAX_TEXT).then_some(())
    }

    /// SAFETY: `raw` must be a live value for the duration of the call.
    unsafe fn value(&mut self, raw: qjs::JSValue, depth: usize) -> Option<Value> {
        // SAFETY: reading the tag and payload of a live value.
        let tag = unsafe { qjs::JS_VALUE_GET_TAG(raw) };
        match tag {
            qjs::JS_TAG_NULL => {
                self.spend(4)?;
                Some(Value::Null)
            }
            qjs::JS_TAG_BOOL => {
                self.spend(5)?;
                // SAFETY: as above.
                Some(Value::Bool(unsafe { qjs::JS_VALUE_GET_BOOL(raw) }))
            }
            qjs::JS_TAG_INT => {
                self.spend(11)?;
                // SAFETY: as above.
                Some(Value::from(unsafe { qjs::JS_VALUE_GET_INT(raw) }))
            }
            qjs::JS_TAG_FLOAT64 => {
                self.spend(17)?;
                // SAFETY: as above.
                number(unsafe { qjs::JS_VALUE_GET_FLOAT64(raw) })
            }
            qjs::JS_TAG_STRING | qjs::JS_TAG_STRING_ROPE => {
                // SAFETY: `raw` is a live string.
                let text = unsafe { self.string(raw) }?;
                self.spend(text.len().checked_mul(6)?.checked_add(2)?)?;
                Some(Value::String(text))
            }
            // SAFETY: `raw` is a live object.
            qjs::JS_TAG_OBJECT if depth < MAX_DEPTH => unsafe { self.object(raw, depth) },
            // Symbols, BigInts, functions' kin and anything deeper: the general path.
            _ => None,
        }
    }

    /// A string's text when it is well-formed. SAFETY: `raw` must be a live string.
    unsafe fn string(&self, raw: qjs::JSValue) -> Option<String> {
        let mut len = 0usize;
        // SAFETY: converting a string value (UTF-8, not CESU-8) runs no guest code (`js_force_tostring` returns a
        // string as it is); the buffer is freed below. A lone surrogate comes out as its 3-byte
        // form, which is not UTF-8, so `from_utf8` refuses it.
        let ptr = unsafe { qjs::JS_ToCStringLen(self.ctx, &mut len, raw) };
        if ptr.is_null() {
            self.drop_exception();
            return None;
        }
        // SAFETY: QuickJS wrote `len` bytes at `ptr`, alive until freed below.
        let bytes = unsafe { std::slice::from_raw_parts(ptr.cast::<u8>(), len) };
        let text = std::str::from_utf8(bytes).ok().map(str::to_owned);
        // SAFETY: `ptr` came from `JS_ToCStringLen2` and is freed once.
        unsafe { qjs::JS_FreeCString(self.ctx, ptr) };
        text
    }

    /// SAFETY: `raw` must be a live object.
    unsafe fn object(&mut self, raw: qjs::JSValue, depth: usize) -> Option<Value> {
        // SAFETY: reading the class id of a live object. Proxies, functions, wrappers, dates,
        // errors and every other exotic or host object have a class of their own.
        let class = unsafe { qjs::JS_GetClassID(raw) };
        let array = if class == self.realm.object_class {
            false
        } else if class == self.realm.array_class {
            true
        } else {
            return None;
        };
        // SAFETY: the prototype of an object that is not a proxy is read from its shape; the
        // reference it comes with is owned by the guard.
        let prototype = Owned { ctx: self.ctx, raw: unsafe { qjs::JS_GetPrototype(self.ctx, raw) } };
        // SAFETY: reading the tag and pointer of a live value.
        let (proto_tag, proto) =
            unsafe { (qjs::JS_VALUE_GET_TAG(prototype.raw), qjs::JS_VALUE_GET_PTR(prototype.raw) as usize) };
        let plain_prototype = match (array, proto_tag) {
            (false, qjs::JS_TAG_NULL) => true,
            (false, qjs::JS_TAG_OBJECT) => proto == self.realm.object_prototype,
            (true, qjs::JS_TAG_OBJECT) => proto == self.realm.array_prototype,
            _ => false,
        };
        if !plain_prototype {
            return None;
        }
        // SAFETY: `raw` is a live ordinary object or array.
        if array { unsafe { self.array(raw, depth) } } else { unsafe { self.members(raw, depth) } }
    }

    /// SAFETY: `raw` must be a live ordinary object.
    unsafe fn members(&mut self, raw: qjs::JSValue, depth: usize) -> Option<Value> {
        let mut names = Names { ctx: self.ctx, tab: std::ptr::null_mut(), len: 0 };
        let flags = (qjs::JS_GPN_STRING_MASK | qjs::JS_GPN_ENUM_ONLY) as i32;
        // SAFETY: listing an ordinary object's own keys reads its shape and runs no guest code;
        // the table is owned by `names`. The flags are those of `Object.keys`, hence its order.
        if unsafe { qjs::JS_GetOwnPropertyNames(self.ctx, &mut names.tab, &mut names.len, raw, flags) } < 0 {
            self.drop_exception();
            return None;
        }
        self.spend(2)?;
        let mut map = Map::new();
        for entry in names.atoms() {
            // SAFETY: `entry.atom` is alive while `names` is.
            let value = unsafe { self.own(raw, entry.atom) }?;
            // SAFETY: `value.raw` is live while the guard is.
            if unsafe { qjs::JS_VALUE_GET_TAG(value.raw) } == qjs::JS_TAG_UNDEFINED {
                continue;
            }
            // SAFETY: turning an atom into its string runs no guest code; the guard owns it.
            let key = Owned { ctx: self.ctx, raw: unsafe { qjs::JS_AtomToString(self.ctx, entry.atom) } };
            // SAFETY: `key.raw` is a live value (a string, or an exception when out of memory,
            // which `string` does not accept as a string tag and so is refused below).
            if unsafe { qjs::JS_VALUE_GET_TAG(key.raw) } == qjs::JS_TAG_EXCEPTION {
                self.drop_exception();
                return None;
            }
            // SAFETY: `key.raw` is a live string.
            let key = unsafe { self.string(key.raw) }?;
            self.spend(key.len().checked_mul(6)?.checked_add(4)?)?;
            // SAFETY: `value.raw` is live while the guard is.
            let value = unsafe { self.value(value.raw, depth + 1) }?;
            map.insert(key, value);
        }
        Some(Value::Object(map))
    }

    /// SAFETY: `raw` must be a live ordinary array.
    unsafe fn array(&mut self, raw: qjs::JSValue, depth: usize) -> Option<Value> {
        // SAFETY: an array's `length` is an own data property of its own.
        let length = unsafe { self.own(raw, qjs::JS_ATOM_length as qjs::JSAtom) }?;
        // SAFETY: reading the tag and payload of a live value.
        let length = match unsafe { qjs::JS_VALUE_GET_TAG(length.raw) } {
            qjs::JS_TAG_INT => usize::try_from(unsafe { qjs::JS_VALUE_GET_INT(length.raw) }).ok()?,
            _ => return None,
        };
        self.spend(2)?;
        let mut items = Vec::with_capacity(length.min(1024));
        for index in 0..length {
            self.spend(1)?;
            let index = u32::try_from(index).ok()?;
            // SAFETY: taking an index's atom runs no guest code (below 2^31 it is the number
            // itself, allocating nothing).
            let atom = unsafe { qjs::JS_NewAtomUInt32(self.ctx, index) };
            // SAFETY: `atom` is live until freed below.
            let element = unsafe { self.own(raw, atom) };
            // SAFETY: `atom` came from `JS_NewAtomUInt32` and is freed once.
            unsafe { qjs::JS_FreeAtom(self.ctx, atom) };
            let element = element?;
            // SAFETY: `element.raw` is live while the guard is.
            if unsafe { qjs::JS_VALUE_GET_TAG(element.raw) } == qjs::JS_TAG_UNDEFINED {
                self.spend(4)?;
                items.push(Value::Null);
                continue;
            }
            // SAFETY: as above.
            items.push(unsafe { self.value(element.raw, depth + 1) }?);
        }
        Some(Value::Array(items))
    }

    /// The value of own data property `atom` of `raw`, read without running any accessor;
    /// `None` when `raw` lacks it or it is an accessor.
    /// SAFETY: `raw` must be a live ordinary object or array and `atom` a live atom.
    unsafe fn own(&self, raw: qjs::JSValue, atom: qjs::JSAtom) -> Option<Owned> {
        let mut descriptor = qjs::JSPropertyDescriptor {
            flags: 0,
            value: qjs::JS_UNDEFINED,
            getter: qjs::JS_UNDEFINED,
            setter: qjs::JS_UNDEFINED,
        };
        // SAFETY: reading an own property's descriptor of an ordinary object or array runs no
        // guest code (accessors are returned, not called); the references it fills are owned
        // by the guards below.
        let found = unsafe { qjs::JS_GetOwnProperty(self.ctx, &mut descriptor, raw, atom) };
        if found < 0 {
            self.drop_exception();
        }
        if found <= 0 {
            return None;
        }
        let value = Owned { ctx: self.ctx, raw: descriptor.value };
        let _accessors = (
            Owned { ctx: self.ctx, raw: descriptor.getter },
            Owned { ctx: self.ctx, raw: descriptor.setter },
        );
        (descriptor.flags & qjs::JS_PROP_GETSET as i32 == 0).then_some(value)
    }
}

/// A number as the general path's text would parse: integers up to 2^53 exactly, non-finite
/// numbers as `null`; anything else goes the general way.
fn number(n: f64) -> Option<Value> {
    if !n.is_finite() {
        return Some(Value::Null);
    }
    if n.fract() != 0.0 || n.abs() > MAX_EXACT {
        return None;
    }
    // Exact: an integer no larger than 2^53 in magnitude; -0 writes as "0".
    Some(Value::from(n as i64))
}

#[cfg(test)]
mod tests {
    use rquickjs::{CatchResultExt, Context, Runtime};
    use serde_json::json;

    use super::*;
    use crate::sandbox::quickjs::attempt::GuestIntrinsics;

    /// What the reader makes of each expression: its JSON, or `None` for the general path.
    fn reads(expressions: &[&str]) -> Vec<Option<Value>> {
        let runtime = Runtime::new().unwrap();
        let context =
            Context::custom::<(GuestIntrinsics, rquickjs::context::intrinsic::Eval)>(&runtime).unwrap();
        context.with(|ctx| {
            let realm = Realm::new(&ctx).unwrap();
            expressions
                .iter()
                .map(|expression| {
                    let value: rquickjs::Value = ctx.eval(format!("({expression})")).catch(&ctx).unwrap();
                    read(&ctx, &realm, &value)
                })
                .collect()
        })
    }

    #[test]
    fn plain_data_is_read() {
        let got = reads(&[
            "undefined",
            "null",
            "'text'",
            "'a' + String(1)",
            "[1, -0, 2.0, 2 ** 53, -(2 ** 53), NaN, undefined, true]",
            "({ b: 1, a: { c: [] }, skipped: undefined })",
            "Object.assign(Object.create(null), { n: 'x' })",
            "Object.freeze({ frozen: 1 })",
        ]);
        assert_eq!(
            got,
            [
                Some(json!({})),
                Some(json!(null)),
                Some(json!("text")),
                Some(json!("a1")),
                Some(json!([
                    1,
                    0,
                    2,
                    9_007_199_254_740_992_i64,
                    -9_007_199_254_740_992_i64,
                    null,
                    null,
                    true
                ])),
                Some(json!({ "b": 1, "a": { "c": [] } })),
                Some(json!({ "n": "x" })),
                Some(json!({ "frozen": 1 })),
            ]
        );
    }

    #[test]
    fn anything_else_goes_the_general_way() {
        let got = reads(&[
            "'lone \\ud800'",
            "1.5",
            "2 ** 53 + 2",
            "10n",
            "Symbol('s')",
            "() => 1",
            "({ f() {} })",
            "({ get g() { return 1 } })",
            "new Proxy({}, {})",
            "new Proxy([], {})",
            "[1, , 3]",
            "new Date(0)",
            "new String('s')",
            "new Map()",
            "new Uint8Array(2)",
            "new Error('e')",
            "new (class A {})()",
            "Object.create({ inherited: 1 })",
            "Object.setPrototypeOf([1], Object.prototype)",
            "Object.setPrototypeOf({ a: 1 }, Array.prototype)",
            "(() => { const o = {}; o.self = o; return o })()",
            "(() => { let o = {}; for (let i = 0; i < 40; i++) o = { o }; return o })()",
            "'x'.repeat(200000)",
            "[{ a: 1 }, { b: new Date(0) }]",
        ]);
        for (index, got) in got.iter().enumerate() {
            assert_eq!(got, &None, "expression {index} was read as plain data");
        }
    }
}

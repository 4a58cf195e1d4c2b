// The guest prelude: the globals a run's code finds in the sandbox.
//
// Both sandbox drivers load this module before any guest code runs and call `install` once.
// `install` first copies every built-in it relies on into local bindings ("primordials"), so
// code that later rewrites prototypes or globals (Object.prototype, Array.prototype.map,
// Promise.prototype.then, JSON.stringify, ...) cannot change how arguments leave the sandbox,
// how results come back, or how logs are kept. The rules this file follows:
//   - never call a method through a prototype at run time: call the captured copy;
//   - never spread, destructure or for-of an array (iterators can be replaced);
//   - keep internal lists in objects without a prototype, so no inherited setter fires;
//   - quote strings with the captured JSON.stringify, which consults nothing the guest can
//     reach when given a primitive (or by hand, when there is nothing to escape); write a
//     number as its string form, which is what JSON.stringify writes for a finite one.
// `install` takes the host functions (call, lookup, log, tools), builds everything that is the
// same for every attempt and returns `configure` and `premake`, so a host can run it ahead, while
// idle, in a context no attempt has used yet, and build there the namespaces it expects. The
// attempt then calls `configure` once with its configuration (namespace names, seed, clock,
// budgets), and gets back the handful the driver needs; none of them is ever reachable from a
// global.

let installed = false;

export function install(host) {
  if (installed) throw new TypeError("the prelude is installed once per attempt");
  installed = true;

  // ---- primordials ---------------------------------------------------------------------

  const G = globalThis;
  const ObjectCtor = Object;
  const ObjectPrototype = Object.prototype;
  const ArrayPrototype = Array.prototype;
  const freeze = Object.freeze;
  const defineProperty = Object.defineProperty;
  const getOwnPropertyDescriptor = Object.getOwnPropertyDescriptor;
  const getPrototypeOf = Object.getPrototypeOf;
  const objectKeys = Object.keys;
  const objectCreate = Object.create;
  const objectIs = Object.is;
  const hasOwn = Object.hasOwn;
  const ReflectApply = Reflect.apply;
  const ReflectConstruct = Reflect.construct;
  const ReflectGet = Reflect.get;
  const ReflectOwnKeys = Reflect.ownKeys;
  // `uncurry(f)(self, ...args)` is `f.call(self, ...args)` through the original `call`, bound
  // now: no array is built per call, and a later change to Function.prototype cannot reach it.
  const uncurry = ReflectApply(Function.prototype.bind, Function.prototype.bind, [Function.prototype.call]);

  const objectToString = uncurry(ObjectPrototype.toString);
  const ArrayIsArray = Array.isArray;
  const arrayJoin = uncurry(Array.prototype.join);
  const JSONStringify = JSON.stringify;
  const JSONParse = JSON.parse;
  const StringCtor = String;
  const fromCharCode = String.fromCharCode;
  const charCodeAt = uncurry(String.prototype.charCodeAt);
  const stringSlice = uncurry(String.prototype.slice);
  const stringIndexOf = uncurry(String.prototype.indexOf);
  const toLowerCase = uncurry(String.prototype.toLowerCase);
  const toWellFormed = String.prototype.toWellFormed
    ? uncurry(String.prototype.toWellFormed)
    : (s) => s;
  const stringValueOf = uncurry(String.prototype.valueOf);
  const numberValueOf = uncurry(Number.prototype.valueOf);
  const booleanValueOf = uncurry(Boolean.prototype.valueOf);
  const symbolToString = uncurry(Symbol.prototype.toString);
  const NumberIsFinite = Number.isFinite;
  const NumberIsNaN = Number.isNaN;
  const MathFloor = Math.floor;
  const MathMin = Math.min;
  const imul = Math.imul;
  const NativeDate = Date;
  const DatePrototype = Date.prototype;
  const dateGetTime = uncurry(DatePrototype.getTime);
  const dateToISOString = uncurry(DatePrototype.toISOString);
  const dateToString = uncurry(DatePrototype.toString);
  const NativeRegExp = RegExp;
  const regexpToString = uncurry(RegExp.prototype.toString);
  const regexpExec = uncurry(RegExp.prototype.exec);
  const regexpSource = uncurry(getOwnPropertyDescriptor(RegExp.prototype, "source").get);
  const regexpFlags = uncurry(getOwnPropertyDescriptor(RegExp.prototype, "flags").get);
  const NativePromise = Promise;
  const promiseReject = (e) => ReflectApply(Promise.reject, NativePromise, [e]);
  const NativeProxy = Proxy;
  const MapCtor = Map;
  const mapGet = uncurry(Map.prototype.get);
  const mapSet = uncurry(Map.prototype.set);
  const mapHas = uncurry(Map.prototype.has);
  const mapForEach = uncurry(Map.prototype.forEach);
  const mapSize = uncurry(getOwnPropertyDescriptor(Map.prototype, "size").get);
  const SetCtor = Set;
  const setAdd = uncurry(Set.prototype.add);
  const setForEach = uncurry(Set.prototype.forEach);
  const setSize = uncurry(getOwnPropertyDescriptor(Set.prototype, "size").get);
  const ErrorCtor = Error;
  const TypeErrorCtor = TypeError;
  const RangeErrorCtor = RangeError;
  const errorCtors = {
    __proto__: null,
    Error,
    TypeError,
    RangeError,
    SyntaxError,
    ReferenceError,
    EvalError,
    URIError,
  };
  const Uint8ArrayCtor = Uint8Array;
  const TypedArrayPrototype = getPrototypeOf(Uint8Array.prototype);
  const typedArrayTag = uncurry(getOwnPropertyDescriptor(TypedArrayPrototype, Symbol.toStringTag).get);
  const typedArrayBuffer = uncurry(getOwnPropertyDescriptor(TypedArrayPrototype, "buffer").get);
  const typedArrayOffset = uncurry(getOwnPropertyDescriptor(TypedArrayPrototype, "byteOffset").get);
  const typedArrayByteLength = uncurry(getOwnPropertyDescriptor(TypedArrayPrototype, "byteLength").get);
  const typedArrayLength = uncurry(getOwnPropertyDescriptor(TypedArrayPrototype, "length").get);
  const typedArrayCtors = {
    __proto__: null,
    Int8Array,
    Uint8Array,
    Uint8ClampedArray,
    Int16Array,
    Uint16Array,
    Int32Array,
    Uint32Array,
    Float32Array,
    Float64Array,
    BigInt64Array,
    BigUint64Array,
  };
  if (typeof Float16Array === "function") typedArrayCtors.Float16Array = Float16Array;
  const ArrayBufferCtor = ArrayBuffer;
  const arrayBufferByteLength = uncurry(getOwnPropertyDescriptor(ArrayBuffer.prototype, "byteLength").get);
  const arrayBufferSlice = uncurry(ArrayBuffer.prototype.slice);
  const DataViewCtor = DataView;
  const dataViewBuffer = uncurry(getOwnPropertyDescriptor(DataView.prototype, "buffer").get);
  const dataViewOffset = uncurry(getOwnPropertyDescriptor(DataView.prototype, "byteOffset").get);
  const dataViewByteLength = uncurry(getOwnPropertyDescriptor(DataView.prototype, "byteLength").get);
  const BigIntCtor = BigInt;
  const bigintAsUintN = BigInt.asUintN;

  const hostCall = host.call;
  const hostCallPlain = host.callPlain;
  const hostLookup = host.lookup;
  const hostLog = host.log;
  const hostTools = host.tools;

  // Internal lists: arrays without a prototype (no inherited index setter can fire), filled
  // by assignment and joined with the captured Array.prototype.join.
  const setPrototypeOf = Object.setPrototypeOf;
  const list = () => setPrototypeOf([], null);
  const push = (l, v) => {
    l[l.length] = v;
  };
  const joinList = (l, sep) => arrayJoin(l, sep);
  const data = (value, enumerable, writable, configurable) => ({
    __proto__: null,
    value,
    enumerable,
    writable,
    configurable,
  });
  const defineData = (obj, key, value) => defineProperty(obj, key, data(value, true, true, true));
  const defineHidden = (obj, key, value) => defineProperty(obj, key, data(value, false, true, true));
  const defineGlobal = (name, value) => defineProperty(G, name, data(value, false, true, true));
  const defineFixedGlobal = (name, value) => {
    const existing = getOwnPropertyDescriptor(G, name);
    if (existing !== undefined && existing.configurable) delete G[name];
    defineProperty(G, name, data(value, false, false, false));
  };
  const named = (name, fn) => {
    defineProperty(fn, "name", data(name, false, false, true));
    return fn;
  };
  const errorWithName = (Ctor, name, message) => {
    const e = new Ctor(message);
    defineHidden(e, "name", name);
    return e;
  };

  // ---- removals: code from text, shared memory, ambient I/O names ----------------------

  for (const name of ["eval", "SharedArrayBuffer", "Atomics", "WebAssembly", "fetch", "require", "process", "Buffer"]) {
    delete G[name];
  }
  // CallSite objects would hand out the functions on the stack, prelude closures included.
  delete ErrorCtor.prepareStackTrace;

  const blockCodeFromText = (proto, name, global) => {
    const message = name + " cannot turn text into code in the sandbox: write the function itself";
    const blocked = {
      [name]: function () {
        throw new TypeErrorCtor(message);
      },
    }[name];
    defineProperty(blocked, "prototype", data(proto, false, false, false));
    freeze(blocked);
    const previous = getOwnPropertyDescriptor(proto, "constructor");
    defineProperty(proto, "constructor", data(blocked, false, previous.writable, previous.configurable));
    if (global) defineGlobal(name, blocked);
  };
  blockCodeFromText(Function.prototype, "Function", true);
  blockCodeFromText(getPrototypeOf(async function () {}), "AsyncFunction", false);
  blockCodeFromText(getPrototypeOf(function* () {}), "GeneratorFunction", false);
  blockCodeFromText(getPrototypeOf(async function* () {}), "AsyncGeneratorFunction", false);

  // ---- the logical clock and the seeded generator --------------------------------------

  // Set by `configure` from the run's clock origin and seed.
  let originMs = 0;
  let clockMs = 0;
  let maxTimeoutMs = 0;

  // xoshiro128**, seeded by the host from the run's seed.
  let s0 = 1;
  let s1 = 0;
  let s2 = 0;
  let s3 = 0;
  const rotl = (x, k) => (x << k) | (x >>> (32 - k));
  const nextU32 = () => {
    const result = imul(rotl(imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    return result;
  };
  const random = () => ((nextU32() >>> 5) * 67108864 + (nextU32() >>> 6)) / 9007199254740992;

  const DateShim = {
    Date: function (...args) {
      if (new.target === undefined) return dateToString(new NativeDate(clockMs));
      if (args.length === 0) return ReflectConstruct(NativeDate, [clockMs], new.target);
      return ReflectConstruct(NativeDate, args, new.target);
    },
  }.Date;
  defineProperty(DateShim, "prototype", data(DatePrototype, false, false, false));
  defineProperty(DateShim, "length", data(7, false, false, true));
  defineHidden(DateShim, "now", named("now", () => clockMs));
  defineHidden(DateShim, "parse", NativeDate.parse);
  defineHidden(DateShim, "UTC", NativeDate.UTC);
  defineHidden(DatePrototype, "constructor", DateShim);
  defineGlobal("Date", DateShim);

  defineHidden(Math, "random", named("random", () => random()));

  const performanceNow = named("now", () => clockMs - originMs);

  const HEX = "0123456789abcdef";
  const crypto = freeze({
    randomUUID: named("randomUUID", () => {
      let out = "";
      for (let i = 0; i < 16; i++) {
        let b = nextU32() & 0xff;
        if (i === 6) b = (b & 0x0f) | 0x40;
        if (i === 8) b = (b & 0x3f) | 0x80;
        if (i === 4 || i === 6 || i === 8 || i === 10) out += "-";
        out += HEX[b >>> 4] + HEX[b & 15];
      }
      return out;
    }),
    getRandomValues: named("getRandomValues", (array) => {
      const tag = typedArrayTag(array);
      if (tag === undefined || tag === "Float16Array" || tag === "Float32Array" || tag === "Float64Array") {
        throw errorWithName(TypeErrorCtor, "TypeMismatchError", "getRandomValues takes an integer typed array");
      }
      const length = typedArrayByteLength(array);
      if (length > 65536) {
        throw errorWithName(RangeErrorCtor, "QuotaExceededError", "getRandomValues fills at most 65536 bytes at once");
      }
      const bytes = new Uint8ArrayCtor(typedArrayBuffer(array), typedArrayOffset(array), length);
      for (let i = 0; i < length; i += 4) {
        let word = nextU32();
        for (let k = 0; k < 4 && i + k < length; k++) {
          bytes[i + k] = word & 0xff;
          word >>>= 8;
        }
      }
      return array;
    }),
  });
  defineGlobal("crypto", crypto);

  // ---- JSON out of the sandbox -------------------------------------------------------------

  const MAX_DEPTH = 64;
  const FAIL = freeze({ __proto__: null });
  let failMessage = "";

  const isIdentifier = (key) => {
    if (key.length === 0) return false;
    for (let i = 0; i < key.length; i++) {
      const c = charCodeAt(key, i);
      const letter = (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || c === 36 || c === 95;
      if (!letter && !(i > 0 && c >= 48 && c <= 57)) return false;
    }
    return true;
  };
  // Where a value sits: the keys of the first `count` objects being walked (the root's key is
  // the label, such as "args"), then `key`, the value's own.
  const pathText = (count, key) => {
    let out = "";
    for (let i = 0; i <= count; i++) {
      const k = i < count ? sKeys[i] : key;
      if (i === 0) out += k;
      else if (typeof k === "number") out += "[" + k + "]";
      else if (isIdentifier(k)) out += "." + k;
      else out += "[" + JSONStringify(k) + "]";
    }
    return out;
  };
  const tagOf = (o) => {
    try {
      return objectToString(o);
    } catch {
      return "[object Object]";
    }
  };
  const isError = (o) => tagOf(o) === "[object Error]";
  const kindHint = {
    __proto__: null,
    "[object Map]": ["a Map", "turn it into an object with Object.fromEntries(map) or an array with [...map]"],
    "[object Set]": ["a Set", "turn it into an array with [...set]"],
    "[object WeakMap]": ["a WeakMap", "copy what you need into a plain object"],
    "[object WeakSet]": ["a WeakSet", "copy what you need into an array"],
    "[object Promise]": ["a Promise", "await it first"],
    "[object RegExp]": ["a RegExp", "send its text (re.source) instead"],
    "[object ArrayBuffer]": ["an ArrayBuffer", "turn it into an array with Array.from(new Uint8Array(buffer))"],
    "[object DataView]": ["a DataView", "turn it into an array of numbers first"],
    "[object Symbol]": ["a Symbol", "send its description instead"],
    "[object BigInt]": ["a BigInt", "convert it with Number(x) or String(x)"],
    "[object Generator]": ["a generator", "collect its values into an array first"],
    "[object AsyncGenerator]": ["an async generator", "collect its values into an array first"],
  };

  // Serialises `root` as JSON text. Stricter than JSON.stringify where JSON.stringify would
  // silently lose data: functions, symbols, BigInts, cycles, Maps and Sets are refused with
  // the path where they sit. `undefined` object members are dropped and become `null` in
  // arrays, as in JSON. Throws FAIL (with failMessage set) when refused.
  //
  // Every tool call serialises its arguments, so the walk is built once rather than per call:
  // its state lives in the variables below, and a serialisation started while another is under
  // way (a toJSON or getter that calls a tool) saves and restores them. The objects being
  // walked, root first, and the key each sits at are two stacks `sDepth` deep, whose slots are
  // emptied on the way out rather than popped: a path is written from them only for a refusal,
  // so a walk allocates nothing for its bookkeeping.
  let sOut = "";
  let sSize = 0;
  let sMax = 0;
  let sSubject = "";
  let sAncestors = list();
  let sKeys = list();
  let sDepth = 0;
  let serializing = false;
  // Refuses the value at `key` under the first `count` objects being walked.
  const sFail = (what, count, key, hint) => {
    const verb = sSubject === "the result" ? "holds" : "hold";
    failMessage = sSubject + " " + verb + " " + what + " at " + pathText(count, key) + (hint ? ": " + hint : "");
    throw FAIL;
  };
  const sTooLarge = () => {
    failMessage = sSubject + " " + (sSubject === "the result" ? "is" : "are") + " larger than " + sMax + " bytes as JSON";
    throw FAIL;
  };
  const sEmit = (s) => {
    sSize += s.length;
    if (sSize > sMax) sTooLarge();
    sOut += s;
  };
  // What JSON must escape (quote, backslash, control characters) and surrogates: a string
  // without any is its own JSON text between quotes, which saves the costly general path.
  // Matched with the captured exec, which reads nothing a guest can reach.
  const NEEDS_ESCAPE = /["\\\u0000-\u001f\ud800-\udfff]/;
  const sQuoted = (s) => {
    if (s.length > sMax - sSize) sTooLarge();
    if (regexpExec(NEEDS_ESCAPE, s) === null) return '"' + s + '"';
    return JSONStringify(toWellFormed(s));
  };
  const sQuote = (s) => sEmit(sQuoted(s));
  // Member names repeat from call to call: the quoted form of up to MAX_KEPT_KEYS short ones
  // is kept, which skips the check and the copies above.
  const MAX_KEPT_KEYS = 512;
  const keptKeys = { __proto__: null };
  let keptKeyCount = 0;
  const sQuotedKey = (key) => {
    const kept = keptKeys[key];
    if (kept !== undefined) return kept;
    const quoted = sQuoted(key);
    if (key.length <= 64 && keptKeyCount < MAX_KEPT_KEYS) {
      keptKeys[key] = quoted;
      keptKeyCount++;
    }
    return quoted;
  };
  // A finite number's JSON text is its string form, as JSON.stringify writes it.
  const numberText = (n) => (NumberIsFinite(n) ? "" + n : "null");
  const sWalk = (v, key) => {
    switch (typeof v) {
      case "string":
        sQuote(v);
        return;
      case "number":
        sEmit(numberText(v));
        return;
      case "boolean":
        sEmit(v ? "true" : "false");
        return;
      case "undefined":
        sEmit("null");
        return;
      case "bigint":
        sFail("a BigInt", sDepth, key, "convert it with Number(x) or String(x)");
      case "symbol":
        sFail("a symbol", sDepth, key, "send its description instead");
      case "function":
        sFail("a function", sDepth, key, "send data, not code");
      default:
        if (v === null) {
          sEmit("null");
          return;
        }
        sWalkObject(v, key);
    }
  };
  const sWalkMembers = (o, keys, first) => {
    for (let i = 0; i < keys.length; i++) {
      const key = keys[i];
      const value = o[key];
      if (value === undefined) continue;
      const head = (first ? "" : ",") + sQuotedKey(key) + ":";
      first = false;
      // A string, number or boolean member, the most common, in one piece.
      switch (typeof value) {
        case "string":
          sEmit(head + sQuoted(value));
          break;
        case "number":
          sEmit(head + numberText(value));
          break;
        case "boolean":
          sEmit(head + (value ? "true" : "false"));
          break;
        default:
          sEmit(head);
          sWalk(value, key);
      }
    }
  };
  // Leaves the object at `depth`: its slots are emptied so nothing it holds is kept.
  const sLeave = (depth) => {
    sAncestors[depth] = undefined;
    sKeys[depth] = undefined;
    sDepth = depth;
  };
  const sWalkObject = (o, key) => {
    const depth = sDepth;
    const ancestors = sAncestors;
    for (let i = 0; i < depth; i++) {
      if (ancestors[i] === o) {
        sFail("a cycle", depth, key, "it refers back to " + pathText(i, sKeys[i]));
      }
    }
    if (depth >= MAX_DEPTH) sFail("nesting deeper than " + MAX_DEPTH + " levels", depth, key, "");
    ancestors[depth] = o;
    sKeys[depth] = key;
    sDepth = depth + 1;
    if (ArrayIsArray(o)) {
      const length = o.length;
      sEmit("[");
      for (let i = 0; i < length; i++) {
        if (i > 0) sEmit(",");
        sWalk(o[i], i);
      }
      sEmit("]");
    } else {
      const proto = getPrototypeOf(o);
      let done = false;
      if (proto !== ObjectPrototype && proto !== null) {
        const tag = tagOf(o);
        let time;
        let isDate = false;
        if (tag === "[object Date]") {
          try {
            time = dateGetTime(o);
            isDate = true;
          } catch {}
        }
        if (isDate) {
          if (NumberIsNaN(time)) sEmit("null");
          else sQuote(dateToISOString(o));
          done = true;
        } else if (tag === "[object String]" || tag === "[object Number]" || tag === "[object Boolean]") {
          let unwrapped;
          let isWrapper = false;
          try {
            unwrapped =
              tag === "[object String]" ? stringValueOf(o) : tag === "[object Number]" ? numberValueOf(o) : booleanValueOf(o);
            isWrapper = true;
          } catch {}
          if (isWrapper) {
            sLeave(depth);
            sWalk(unwrapped, key);
            return;
          }
        } else if (kindHint[tag] !== undefined) {
          sFail(kindHint[tag][0], depth, key, kindHint[tag][1]);
        } else if (typedArrayTag(o) !== undefined) {
          sFail("a " + typedArrayTag(o), depth, key, "turn it into an array with Array.from(x)");
        } else if (tag === "[object Error]") {
          sEmit("{");
          let name = "Error";
          let message = "";
          try {
            name = StringCtor(o.name);
            message = StringCtor(o.message);
          } catch {}
          sEmit('"name":');
          sQuote(name);
          sEmit(',"message":');
          sQuote(message);
          sWalkMembers(o, objectKeys(o), false);
          sEmit("}");
          done = true;
        } else {
          const toJSON = o.toJSON;
          if (typeof toJSON === "function") {
            const replacement = ReflectApply(toJSON, o, [depth === 0 ? "" : StringCtor(key)]);
            sLeave(depth);
            if (replacement !== null && typeof replacement === "object" && getPrototypeOf(replacement) !== ObjectPrototype && getPrototypeOf(replacement) !== null && !ArrayIsArray(replacement)) {
              sFail("an object whose toJSON returned another class instance", depth, key, "return plain data from toJSON");
            }
            sWalk(replacement, key);
            return;
          }
        }
      }
      if (!done) {
        sEmit("{");
        sWalkMembers(o, objectKeys(o), true);
        sEmit("}");
      }
    }
    sLeave(depth);
  };
  const serializeNested = (root, subject, label, maxChars) => {
    const out = sOut;
    const size = sSize;
    const max = sMax;
    const outerSubject = sSubject;
    const ancestors = sAncestors;
    const keys = sKeys;
    const depth = sDepth;
    sAncestors = list();
    sKeys = list();
    sDepth = 0;
    serializing = false;
    try {
      return serialize(root, subject, label, maxChars);
    } finally {
      serializing = true;
      sOut = out;
      sSize = size;
      sMax = max;
      sSubject = outerSubject;
      sAncestors = ancestors;
      sKeys = keys;
      sDepth = depth;
    }
  };
  const serialize = (root, subject, label, maxChars) => {
    if (serializing) return serializeNested(root, subject, label, maxChars);
    serializing = true;
    // One growing string: QuickJS appends in place to a string nothing else holds.
    sOut = "";
    sSize = 0;
    sMax = maxChars;
    sSubject = subject;
    try {
      sWalk(root, label);
      return sOut;
    } finally {
      serializing = false;
      sOut = "";
      // Left by a refusal or a throw partway down.
      if (sDepth !== 0) {
        sDepth = 0;
        sAncestors.length = 0;
        sKeys.length = 0;
      }
    }
  };

  // ---- console ---------------------------------------------------------------------------

  const STOP = freeze({ __proto__: null });
  const INSPECT_DEPTH = 2;
  const MAX_ITEMS = 100;

  // Node-like, single-line rendering of any value for console output. Never calls getters,
  // stops writing once `max` characters are out.
  const inspect = (value, max) => {
    const w = { __proto__: null, parts: list(), length: 0 };
    const write = (s) => {
      if (w.length + s.length > max) {
        push(w.parts, stringSlice(s, 0, max - w.length));
        w.length = max;
        throw STOP;
      }
      w.length += s.length;
      push(w.parts, s);
    };
    const seen = list();
    const functionLabel = (f) => {
      let name = "";
      try {
        const d = getOwnPropertyDescriptor(f, "name");
        if (d !== undefined && typeof d.value === "string") name = d.value;
      } catch {}
      return name === "" ? "[Function (anonymous)]" : "[Function: " + name + "]";
    };
    const keyText = (key) => (typeof key === "symbol" ? "[" + symbolToString(key) + "]" : isIdentifier(key) ? key : JSONStringify(key));
    const className = (o) => {
      try {
        const proto = getPrototypeOf(o);
        if (proto === null) return "[Object: null prototype]";
        const d = getOwnPropertyDescriptor(proto, "constructor");
        if (d !== undefined && typeof d.value === "function") {
          const n = getOwnPropertyDescriptor(d.value, "name");
          if (n !== undefined && typeof n.value === "string") return n.value;
        }
      } catch {}
      return "";
    };
    const errorText = (e) => {
      let name = "Error";
      let message = "";
      let stack = "";
      try {
        name = StringCtor(e.name);
        message = StringCtor(e.message);
        const s = e.stack;
        if (typeof s === "string") stack = cleanStack(s);
      } catch {}
      return (message === "" ? name : name + ": " + message) + (stack === "" ? "" : "\n" + stack);
    };
    const item = (v, depth) => {
      switch (typeof v) {
        case "string":
          write(depth === 0 ? v : JSONStringify(v));
          return;
        case "number":
          write(objectIs(v, -0) ? "-0" : "" + v);
          return;
        case "bigint":
          write("" + v + "n");
          return;
        case "boolean":
          write(v ? "true" : "false");
          return;
        case "undefined":
          write("undefined");
          return;
        case "symbol":
          write(symbolToString(v));
          return;
        case "function":
          write(functionLabel(v));
          return;
      }
      if (v === null) {
        write("null");
        return;
      }
      for (let i = 0; i < seen.length; i++) {
        if (seen[i] === v) {
          write("[Circular]");
          return;
        }
      }
      const tag = tagOf(v);
      if (tag === "[object Error]") {
        write(errorText(v));
        return;
      }
      if (tag === "[object Date]") {
        let time = NaN;
        try {
          time = dateGetTime(v);
        } catch {}
        write(NumberIsNaN(time) ? "Invalid Date" : dateToISOString(v));
        return;
      }
      if (tag === "[object RegExp]") {
        try {
          write(regexpToString(v));
          return;
        } catch {}
      }
      if (tag === "[object Promise]") {
        write("Promise {}");
        return;
      }
      const isArray = ArrayIsArray(v);
      const typed = isArray ? undefined : typedArrayTag(v);
      if (depth > INSPECT_DEPTH) {
        write(isArray ? "[Array]" : typed !== undefined ? "[" + typed + "]" : "[" + (className(v) || "Object") + "]");
        return;
      }
      push(seen, v);
      let first = true;
      const sep = () => {
        write(first ? " " : ", ");
        first = false;
      };
      if (isArray || typed !== undefined) {
        const length = isArray ? v.length : typedArrayLength(v);
        write(isArray ? "[" : typed + "(" + length + ") [");
        const shown = MathMin(length, MAX_ITEMS);
        for (let i = 0; i < shown; i++) {
          sep();
          item(v[i], depth + 1);
        }
        if (length > shown) {
          sep();
          write("... " + (length - shown) + " more items");
        }
        write(first ? "]" : " ]");
      } else if (tag === "[object Map]" || tag === "[object Set]") {
        const isMap = tag === "[object Map]";
        let count = 0;
        try {
          count = isMap ? mapSize(v) : setSize(v);
        } catch {}
        write((isMap ? "Map(" : "Set(") + count + ") {");
        let shown = 0;
        const each = (value, key) => {
          if (shown++ >= MAX_ITEMS) return;
          sep();
          if (isMap) {
            item(key, depth + 1);
            write(" => ");
          }
          item(value, depth + 1);
        };
        try {
          if (isMap) mapForEach(v, each);
          else setForEach(v, each);
        } catch (e) {
          if (e === STOP) throw e;
        }
        if (count > MAX_ITEMS) {
          sep();
          write("... " + (count - MAX_ITEMS) + " more items");
        }
        write(first ? "}" : " }");
      } else {
        const name = className(v);
        if (name !== "" && name !== "Object") write(name + " ");
        write("{");
        let keys = list();
        try {
          keys = ReflectOwnKeys(v);
        } catch {}
        for (let i = 0; i < keys.length; i++) {
          const key = keys[i];
          let d;
          try {
            d = getOwnPropertyDescriptor(v, key);
          } catch {}
          if (d === undefined || !d.enumerable) continue;
          sep();
          write(keyText(key) + ": ");
          if (d.get !== undefined || d.set !== undefined) {
            write(d.get !== undefined && d.set !== undefined ? "[Getter/Setter]" : d.get !== undefined ? "[Getter]" : "[Setter]");
          } else {
            item(d.value, depth + 1);
          }
        }
        write(first ? "}" : " }");
      }
      seen.length = seen.length - 1;
    };
    try {
      item(value, 0);
    } catch (e) {
      if (e !== STOP) {
        try {
          write("[unprintable]");
        } catch {}
      }
    }
    return joinList(w.parts, "");
  };

  const formatArgs = (args, max) => {
    let out = "";
    let start = 0;
    if (typeof args[0] === "string" && stringIndexOf(args[0], "%") !== -1 && args.length > 1) {
      const f = args[0];
      let next = 1;
      let i = 0;
      while (i < f.length && out.length <= max) {
        const c = charCodeAt(f, i);
        if (c === 37 && i + 1 < f.length) {
          const d = f[i + 1];
          if (d === "%") {
            out += "%";
            i += 2;
            continue;
          }
          if (next < args.length && (d === "s" || d === "d" || d === "i" || d === "f" || d === "o" || d === "O" || d === "j")) {
            const a = args[next++];
            if (d === "s") out += typeof a === "string" ? a : inspect(a, max - out.length);
            else if (d === "d" || d === "i" || d === "f") {
              let n = NaN;
              try {
                n = typeof a === "bigint" ? a : +a;
              } catch {}
              out += d === "i" && typeof n === "number" ? "" + (n < 0 ? -MathFloor(-n) : MathFloor(n)) : typeof n === "bigint" ? n + "n" : "" + n;
            } else out += inspect(a, max - out.length);
            i += 2;
            continue;
          }
        }
        out += f[i];
        i++;
      }
      start = next;
    }
    for (let i = start; i < args.length && out.length <= max; i++) {
      if (i > 0) out += " ";
      out += inspect(args[i], max - out.length);
    }
    return out.length > max ? stringSlice(out, 0, max + 1) : out;
  };

  let logRemaining = 0;
  const emitLog = (prefix, args) => {
    try {
      if (logRemaining <= 0) {
        logRemaining = hostLog("");
        return;
      }
      // One character is at least one byte, so `logRemaining` characters always cover
      // what the host can still keep; the host trims to the byte.
      logRemaining = hostLog(toWellFormed(prefix + formatArgs(args, logRemaining)));
    } catch {}
  };
  const consoleMethod = (name, prefix) => named(name, (...args) => emitLog(prefix, args));
  // Not frozen: code may replace a method, as in Node; that changes only its own output.
  const console = {
    log: consoleMethod("log", ""),
    info: consoleMethod("info", ""),
    debug: consoleMethod("debug", "[debug] "),
    warn: consoleMethod("warn", "[warn] "),
    error: consoleMethod("error", "[error] "),
  };
  defineGlobal("console", console);

  // ---- errors ------------------------------------------------------------------------------

  class ToolError extends ErrorCtor {
    constructor(message, details) {
      super(message);
      const d = details !== null && typeof details === "object" ? details : { __proto__: null };
      defineData(this, "code", d.code === undefined ? "tool_error" : StringCtor(d.code));
      defineData(this, "address", d.address === undefined ? undefined : StringCtor(d.address));
      defineData(this, "status", d.status === undefined ? undefined : d.status);
      defineData(this, "hint", d.hint === undefined ? undefined : StringCtor(d.hint));
      defineData(this, "retryable", !!d.retryable);
    }
  }
  defineHidden(ToolError.prototype, "name", "ToolError");
  const ToolErrorPrototype = ToolError.prototype;
  defineFixedGlobal("ToolError", ToolError);

  const cleanStack = (stack) => {
    let out = "";
    let start = 0;
    while (start < stack.length) {
      let end = stringIndexOf(stack, "\n", start);
      if (end === -1) end = stack.length;
      const line = stringSlice(stack, start, end);
      // The prelude is compiled without line tables: its frames read "(<null>:0:1)".
      const ours = stringIndexOf(line, "prelude.js") !== -1 || stringIndexOf(line, "(<null>") !== -1;
      if (!ours && line !== "") out += (out === "" ? "" : "\n") + line;
      start = end + 1;
    }
    return out;
  };

  // The uncaught exception, made plain for the host: { name, message, code?, stack? }.
  const describeError = (e) => {
    const d = { __proto__: null, name: "Thrown", message: "" };
    if (e !== null && typeof e === "object" && isError(e)) {
      try {
        d.name = StringCtor(e.name);
      } catch {
        d.name = "Error";
      }
      try {
        d.message = StringCtor(e.message);
      } catch {}
      let proto = null;
      try {
        proto = getPrototypeOf(e);
      } catch {}
      for (let p = proto; p !== null; p = getPrototypeOf(p)) {
        if (p === ToolErrorPrototype) {
          try {
            d.code = StringCtor(e.code);
          } catch {}
          try {
            if (typeof e.hint === "string") d.hint = e.hint;
          } catch {}
          break;
        }
      }
      try {
        const s = e.stack;
        if (typeof s === "string") {
          const cleaned = cleanStack(s);
          if (cleaned !== "") d.stack = cleaned;
        }
      } catch {}
    } else {
      d.message = typeof e === "string" ? e : inspect(e, 2000);
    }
    // Built by hand: the native JSON.stringify fills internal arrays through their prototype
    // when given an object, so a guest's Array.prototype setter would run. Given a string, it
    // does not.
    let text = '{"name":' + JSONStringify(d.name) + ',"message":' + JSONStringify(d.message);
    if (d.code !== undefined) text += ',"code":' + JSONStringify(d.code);
    if (d.hint !== undefined) text += ',"hint":' + JSONStringify(d.hint);
    if (d.stack !== undefined) text += ',"stack":' + JSONStringify(d.stack);
    return text + "}";
  };

  // ---- the bridge ------------------------------------------------------------------------

  // Indexed by ticket: the resolving functions of the call's promise and the address asked.
  // The host numbers tickets from 0 in the order they are asked for, so the arrays stay dense;
  // a settled slot is emptied, never deleted (a hole would make QuickJS turn the array into a
  // slower object). The captured constructor hands its resolving functions to `capture`,
  // which runs before it returns: no record object per call, as Promise.withResolvers makes.
  const pendingResolve = list();
  const pendingReject = list();
  const pendingAddress = list();
  let capturedResolve;
  let capturedReject;
  const capture = (resolve, reject) => {
    capturedResolve = resolve;
    capturedReject = reject;
  };
  const track = (ticket, address) => {
    const promise = new NativePromise(capture);
    pendingResolve[ticket] = capturedResolve;
    pendingReject[ticket] = capturedReject;
    pendingAddress[ticket] = address;
    capturedResolve = capturedReject = undefined;
    return promise;
  };
  const MAX_ARGS_CHARS = 4 * 1024 * 1024;
  const argumentsText = (value, subject, label) => {
    try {
      return serialize(value, subject, label, MAX_ARGS_CHARS);
    } catch (e) {
      if (e === FAIL) throw new TypeErrorCtor(failMessage);
      throw e;
    }
  };

  // A namespace's function for one tool, making the call itself: a bridged call's cost is
  // mostly QuickJS entering functions, so it enters no wrapper. The host reads arguments and
  // options that are plain data straight from the values (no getter, proxy or class instance,
  // nothing it would have to run); for anything else it answers -1 and they go as text,
  // through the serializer, which runs `toJSON` and says what cannot be sent.
  const toolFunction = (address, tool) =>
    ({
      [tool](args, options) {
        try {
          let ticket = hostCallPlain(address, args, options);
          if (ticket < 0) {
            const argsText = args === undefined ? "{}" : argumentsText(args, "tool arguments", "args");
            const optionsText = options === undefined ? "{}" : argumentsText(options, "call options", "options");
            ticket = hostCall(address, argsText, optionsText);
          }
          return track(ticket, address);
        } catch (e) {
          return promiseReject(e);
        }
      },
    })[tool];

  const editDistance = (a, b) => {
    let previous = list();
    for (let j = 0; j <= b.length; j++) push(previous, j);
    for (let i = 1; i <= a.length; i++) {
      const current = list();
      push(current, i);
      for (let j = 1; j <= b.length; j++) {
        const cost = a[i - 1] === b[j - 1] ? 0 : 1;
        push(current, MathMin(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost));
      }
      previous = current;
    }
    return previous[b.length];
  };
  const unknownToolMessage = (namespace, tools, name) => {
    const wanted = toLowerCase(name);
    const scored = list();
    for (let i = 0; i < tools.length; i++) {
      const tool = toLowerCase(tools[i]);
      let score = editDistance(wanted, tool);
      if (wanted.length >= 3 && (stringIndexOf(tool, wanted) !== -1 || stringIndexOf(wanted, tool) !== -1)) score = MathMin(score, 1);
      if (score <= MathMin(4, 1 + MathFloor(wanted.length / 3))) push(scored, { __proto__: null, score, tool: tools[i] });
    }
    // A short insertion sort: tool lists are small.
    for (let i = 1; i < scored.length; i++) {
      const x = scored[i];
      let j = i - 1;
      while (j >= 0 && scored[j].score > x.score) {
        scored[j + 1] = scored[j];
        j--;
      }
      scored[j + 1] = x;
    }
    let text = namespace + " has no tool " + JSONStringify(name);
    if (scored.length > 0) {
      const names = list();
      for (let i = 0; i < scored.length && i < 3; i++) push(names, namespace + "." + scored[i].tool);
      text += "; closest: " + joinList(names, ", ");
    } else if (tools.length > 0) {
      const names = list();
      for (let i = 0; i < tools.length && i < 8; i++) push(names, tools[i]);
      text += "; it has " + joinList(names, ", ") + (tools.length > 8 ? " and " + (tools.length - 8) + " more" : "");
    }
    return text + ". hub.search(query) finds tools by what they do";
  };

  // Runs on first use of a namespace, possibly after guest code has run: the namespace is
  // filled while it has no prototype, so no inherited setter can see the assignments. Its tools
  // are its own properties, so a call reads one directly; a name it does not have falls through
  // to its prototype, a proxy whose `get` says what the namespace has instead. The proxy's
  // target is an empty object of its own whose prototype is Object.prototype, so methods,
  // `instanceof Object` and `await` of a namespace work as on any object.
  const makeNamespace = (namespace, tools) => {
    const target = objectCreate(null);
    for (let i = 0; i < tools.length; i++) {
      const tool = tools[i];
      target[tool] = toolFunction(namespace + "." + tool, tool);
    }
    const handler = freeze({
      __proto__: null,
      get(t, key, receiver) {
        if (typeof key === "symbol" || key in t || key === "then" || key === "toJSON") return ReflectGet(t, key, receiver);
        throw new TypeErrorCtor(unknownToolMessage(namespace, tools, key));
      },
    });
    setPrototypeOf(target, new NativeProxy(objectCreate(ObjectPrototype), handler));
    return freeze(target);
  };

  const lookup = (kind, args) => {
    try {
      const text = serialize(args, "hub." + kind + " arguments", "args", MAX_ARGS_CHARS);
      return track(hostLookup(kind, text), "hub." + kind);
    } catch (e) {
      return promiseReject(e === FAIL ? new TypeErrorCtor(failMessage) : e);
    }
  };
  const hub = freeze({
    search: named("search", (query, options) => {
      if (typeof query !== "string") return promiseReject(new TypeErrorCtor("hub.search takes a query string"));
      const args = { __proto__: null, query };
      if (options !== null && typeof options === "object") {
        if (options.namespace !== undefined) args.namespace = options.namespace;
        if (options.limit !== undefined) args.limit = options.limit;
      }
      return lookup("search", args);
    }),
    describe: named("describe", (target) => {
      if (typeof target === "string") return lookup("describe", { __proto__: null, targets: [target] });
      if (ArrayIsArray(target)) return lookup("describe", { __proto__: null, targets: target });
      return promiseReject(new TypeErrorCtor("hub.describe takes an address such as \"github.createIssue\" or a list of them"));
    }),
    // hub.read(handle, { offset, limit }): a slice of a result or logs an earlier run kept as a
    // handle, { text, offset, next, bytes, eof }. The host checks every argument.
    read: named("read", (handle, options) => {
      const args = { __proto__: null, handle };
      if (options !== null && typeof options === "object") {
        if (options.offset !== undefined) args.offset = options.offset;
        if (options.limit !== undefined) args.limit = options.limit;
      }
      return lookup("read", args);
    }),
    // hub.skill(name, path): the text of one file of a skill the hub has (SKILL.md without a
    // path). A skill is instructions to read; it grants nothing.
    skill: named("skill", (name, path) => {
      if (typeof name !== "string") return promiseReject(new TypeErrorCtor("hub.skill takes a skill's name: hub.skill(\"release-notes\", \"SKILL.md\")"));
      const args = { __proto__: null, name };
      if (path !== undefined) args.path = path;
      return lookup("skill", args);
    }),
  });
  defineFixedGlobal("hub", hub);

  // Each namespace is a fixed global whose object, and the list of its tools, are built on first
  // use: a hub may hold thousands of tools, and an attempt touches few of them. Defined by
  // `configure` from the namespaces' names; the host gives a namespace's tools when asked.
  // JSON text, parsed with the captured parser: an array built by the host would be filled
  // through whatever index setters the guest put on Array.prototype.
  const toolList = (text) => {
    const given = JSONParse(text);
    const tools = list();
    for (let j = 0; j < given.length; j++) push(tools, given[j]);
    return tools;
  };
  // Namespaces the host had built ahead, with the runtime, before any attempt: building one
  // costs about a microsecond per tool, which for an API of a thousand operations is most of
  // a short run. The host asks for the namespaces its last attempt used.
  let configured = false;
  const premade = { __proto__: null };
  const premake = (name, text) => {
    if (configured) throw new TypeErrorCtor("namespaces are built ahead only before the attempt");
    premade[name] = makeNamespace(name, toolList(text));
  };
  const defineNamespaces = (names) => {
    for (let i = 0; i < names.length; i++) {
      const name = names[i];
      let made;
      const make = () => {
        // Empty when the host built this namespace ahead with the tools it has now.
        const text = hostTools(name);
        if (text === "" && premade[name] !== undefined) return premade[name];
        return makeNamespace(name, toolList(text));
      };
      const get = named(name, () => (made === undefined ? (made = make()) : made));
      const existing = getOwnPropertyDescriptor(G, name);
      if (existing !== undefined && existing.configurable) delete G[name];
      defineProperty(G, name, { __proto__: null, get, set: undefined, enumerable: false, configurable: false });
    }
  };

  // ---- virtual timers ----------------------------------------------------------------------

  const timers = { __proto__: null };
  const heap = list();
  let nextTimerId = 1;
  let timerOrder = 0;
  const before = (a, b) => a.due < b.due || (a.due === b.due && a.order < b.order);
  const heapPush = (entry) => {
    let i = heap.length;
    push(heap, entry);
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!before(heap[i], heap[parent])) break;
      const t = heap[i];
      heap[i] = heap[parent];
      heap[parent] = t;
      i = parent;
    }
  };
  const heapPop = () => {
    const top = heap[0];
    const last = heap[heap.length - 1];
    heap.length = heap.length - 1;
    if (heap.length > 0) {
      heap[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < heap.length && before(heap[l], heap[m])) m = l;
        if (r < heap.length && before(heap[r], heap[m])) m = r;
        if (m === i) break;
        const t = heap[i];
        heap[i] = heap[m];
        heap[m] = t;
        i = m;
      }
    }
    return top;
  };
  const setTimeout = named("setTimeout", (callback, delay, ...args) => {
    if (typeof callback !== "function") {
      throw new TypeErrorCtor("setTimeout takes a function; text is never run as code");
    }
    let ms = delay === undefined ? 0 : +delay;
    if (!(ms > 0)) ms = 0;
    ms = MathFloor(ms);
    if (ms > maxTimeoutMs) {
      throw new RangeErrorCtor("setTimeout waits at most " + maxTimeoutMs + " ms in the sandbox, not " + ms);
    }
    const id = nextTimerId++;
    const entry = { __proto__: null, id, due: clockMs + ms, order: timerOrder++, callback, args };
    timers[id] = entry;
    heapPush(entry);
    return id;
  });
  const clearTimeout = named("clearTimeout", (id) => {
    if (typeof id === "number") delete timers[id];
  });
  defineGlobal("setTimeout", setTimeout);
  defineGlobal("clearTimeout", clearTimeout);

  // ---- structuredClone, TextEncoder, TextDecoder, atob, btoa ------------------------------

  const dataCloneError = (message) => errorWithName(ErrorCtor, "DataCloneError", message);
  const structuredClone = named("structuredClone", (value) => {
    const seen = new MapCtor();
    const clone = (v) => {
      if (typeof v === "function") throw dataCloneError("a function cannot be cloned");
      if (typeof v === "symbol") throw dataCloneError("a symbol cannot be cloned");
      if (typeof v !== "object" || v === null) return v;
      if (mapHas(seen, v)) return mapGet(seen, v);
      const tag = tagOf(v);
      let out;
      if (ArrayIsArray(v)) {
        out = [];
        mapSet(seen, v, out);
        const length = v.length;
        for (let i = 0; i < length; i++) {
          if (hasOwn(v, i)) defineData(out, i, clone(v[i]));
        }
        out.length = length;
        return out;
      }
      const typed = typedArrayTag(v);
      if (typed !== undefined) {
        out = new typedArrayCtors[typed](clone(typedArrayBuffer(v)), typedArrayOffset(v), typedArrayLength(v));
        mapSet(seen, v, out);
        return out;
      }
      switch (tag) {
        case "[object Date]":
          out = new NativeDate(dateGetTime(v));
          mapSet(seen, v, out);
          return out;
        case "[object RegExp]":
          out = new NativeRegExp(regexpSource(v), regexpFlags(v));
          mapSet(seen, v, out);
          return out;
        case "[object Map]":
          out = new MapCtor();
          mapSet(seen, v, out);
          mapForEach(v, (val, key) => mapSet(out, clone(key), clone(val)));
          return out;
        case "[object Set]":
          out = new SetCtor();
          mapSet(seen, v, out);
          setForEach(v, (val) => setAdd(out, clone(val)));
          return out;
        case "[object ArrayBuffer]":
          out = arrayBufferSlice(v, 0, arrayBufferByteLength(v));
          mapSet(seen, v, out);
          return out;
        case "[object DataView]":
          out = new DataViewCtor(clone(dataViewBuffer(v)), dataViewOffset(v), dataViewByteLength(v));
          mapSet(seen, v, out);
          return out;
        case "[object Error]": {
          let name = "Error";
          let message = "";
          try {
            name = StringCtor(v.name);
            message = StringCtor(v.message);
          } catch {}
          const Ctor = errorCtors[name] === undefined ? ErrorCtor : errorCtors[name];
          out = new Ctor(message);
          if (errorCtors[name] === undefined) defineHidden(out, "name", name);
          mapSet(seen, v, out);
          return out;
        }
        case "[object Boolean]":
          return ObjectCtor(booleanValueOf(v));
        case "[object Number]":
          return ObjectCtor(numberValueOf(v));
        case "[object String]":
          return ObjectCtor(stringValueOf(v));
        case "[object Object]":
        case "[object Arguments]":
          out = {};
          mapSet(seen, v, out);
          {
            const keys = objectKeys(v);
            for (let i = 0; i < keys.length; i++) defineData(out, keys[i], clone(v[keys[i]]));
          }
          return out;
        default:
          throw dataCloneError(stringSlice(tag, 8, tag.length - 1) + " cannot be cloned");
      }
    };
    return clone(value);
  });
  defineGlobal("structuredClone", structuredClone);

  const utf8Length = (s) => {
    let n = 0;
    for (let i = 0; i < s.length; i++) {
      const c = charCodeAt(s, i);
      if (c < 0x80) n += 1;
      else if (c < 0x800) n += 2;
      else if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (charCodeAt(s, i + 1) & 0xfc00) === 0xdc00) {
        n += 4;
        i++;
      } else n += 3;
    }
    return n;
  };
  // Writes UTF-8 for `s` into `bytes` until it is full; returns [code units read, bytes written].
  const utf8Write = (s, bytes, capacity) => {
    let j = 0;
    let i = 0;
    for (; i < s.length; i++) {
      let c = charCodeAt(s, i);
      let units = 1;
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length && (charCodeAt(s, i + 1) & 0xfc00) === 0xdc00) {
        c = 0x10000 + ((c - 0xd800) << 10) + (charCodeAt(s, i + 1) - 0xdc00);
        units = 2;
      } else if (c >= 0xd800 && c <= 0xdfff) {
        c = 0xfffd;
      }
      const need = c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4;
      if (j + need > capacity) break;
      if (need === 1) bytes[j++] = c;
      else if (need === 2) {
        bytes[j++] = 0xc0 | (c >> 6);
        bytes[j++] = 0x80 | (c & 63);
      } else if (need === 3) {
        bytes[j++] = 0xe0 | (c >> 12);
        bytes[j++] = 0x80 | ((c >> 6) & 63);
        bytes[j++] = 0x80 | (c & 63);
      } else {
        bytes[j++] = 0xf0 | (c >> 18);
        bytes[j++] = 0x80 | ((c >> 12) & 63);
        bytes[j++] = 0x80 | ((c >> 6) & 63);
        bytes[j++] = 0x80 | (c & 63);
      }
      i += units - 1;
    }
    return [i, j];
  };
  class TextEncoder {
    get encoding() {
      return "utf-8";
    }
    encode(input) {
      const s = input === undefined ? "" : StringCtor(input);
      const bytes = new Uint8ArrayCtor(utf8Length(s));
      utf8Write(s, bytes, bytes.length);
      return bytes;
    }
    encodeInto(input, destination) {
      const s = StringCtor(input);
      if (typedArrayTag(destination) !== "Uint8Array") throw new TypeErrorCtor("encodeInto writes into a Uint8Array");
      const done = utf8Write(s, destination, typedArrayLength(destination));
      return { read: done[0], written: done[1] };
    }
  }
  freeze(TextEncoder.prototype);
  defineGlobal("TextEncoder", TextEncoder);

  const bytesOf = (input) => {
    if (input === undefined) return new Uint8ArrayCtor(0);
    if (typedArrayTag(input) !== undefined) {
      return new Uint8ArrayCtor(typedArrayBuffer(input), typedArrayOffset(input), typedArrayByteLength(input));
    }
    try {
      return new Uint8ArrayCtor(dataViewBuffer(input), dataViewOffset(input), dataViewByteLength(input));
    } catch {}
    try {
      arrayBufferByteLength(input);
      return new Uint8ArrayCtor(input);
    } catch {}
    throw new TypeErrorCtor("TextDecoder.decode takes an ArrayBuffer, a typed array or a DataView");
  };
  const UTF8_LABELS = { __proto__: null, "utf-8": true, utf8: true, "unicode-1-1-utf-8": true, unicode11utf8: true, unicode20utf8: true, "x-unicode20utf8": true };
  class TextDecoder {
    #fatal;
    #ignoreBOM;
    constructor(label, options) {
      if (label !== undefined) {
        let l = toLowerCase(StringCtor(label));
        let a = 0;
        let b = l.length;
        while (a < b && charCodeAt(l, a) <= 32) a++;
        while (b > a && charCodeAt(l, b - 1) <= 32) b--;
        l = stringSlice(l, a, b);
        if (UTF8_LABELS[l] !== true) throw new RangeErrorCtor("TextDecoder supports utf-8 only, not " + JSONStringify(l));
      }
      this.#fatal = options !== null && typeof options === "object" && !!options.fatal;
      this.#ignoreBOM = options !== null && typeof options === "object" && !!options.ignoreBOM;
    }
    get encoding() {
      return "utf-8";
    }
    get fatal() {
      return this.#fatal;
    }
    get ignoreBOM() {
      return this.#ignoreBOM;
    }
    decode(input) {
      const bytes = bytesOf(input);
      const length = bytes.length;
      const fatal = this.#fatal;
      const chunks = list();
      let units = list();
      const unit = (u) => {
        push(units, u);
        if (units.length >= 4096) {
          push(chunks, ReflectApply(fromCharCode, null, units));
          units = list();
        }
      };
      const invalid = () => {
        if (fatal) throw new TypeErrorCtor("the input is not valid UTF-8");
        unit(0xfffd);
      };
      let i = 0;
      if (!this.#ignoreBOM && length >= 3 && bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) i = 3;
      while (i < length) {
        const b0 = bytes[i];
        if (b0 < 0x80) {
          unit(b0);
          i++;
          continue;
        }
        let need = 0;
        let cp = 0;
        let lower = 0x80;
        let upper = 0xbf;
        if (b0 >= 0xc2 && b0 <= 0xdf) {
          need = 1;
          cp = b0 & 0x1f;
        } else if (b0 >= 0xe0 && b0 <= 0xef) {
          if (b0 === 0xe0) lower = 0xa0;
          if (b0 === 0xed) upper = 0x9f;
          need = 2;
          cp = b0 & 0xf;
        } else if (b0 >= 0xf0 && b0 <= 0xf4) {
          if (b0 === 0xf0) lower = 0x90;
          if (b0 === 0xf4) upper = 0x8f;
          need = 3;
          cp = b0 & 7;
        } else {
          invalid();
          i++;
          continue;
        }
        let j = i + 1;
        let ok = true;
        for (let k = 0; k < need; k++, j++) {
          if (j >= length) {
            ok = false;
            break;
          }
          const bx = bytes[j];
          if (bx < lower || bx > upper) {
            ok = false;
            break;
          }
          lower = 0x80;
          upper = 0xbf;
          cp = (cp << 6) | (bx & 0x3f);
        }
        i = j;
        if (!ok) {
          invalid();
          continue;
        }
        if (cp >= 0x10000) {
          cp -= 0x10000;
          unit(0xd800 + (cp >> 10));
          unit(0xdc00 + (cp & 0x3ff));
        } else unit(cp);
      }
      push(chunks, ReflectApply(fromCharCode, null, units));
      return joinList(chunks, "");
    }
  }
  freeze(TextDecoder.prototype);
  defineGlobal("TextDecoder", TextDecoder);

  const B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  const invalidCharacter = (message) => errorWithName(ErrorCtor, "InvalidCharacterError", message);
  const btoa = named("btoa", (input) => {
    const s = StringCtor(input);
    const out = list();
    for (let i = 0; i < s.length; i += 3) {
      const a = charCodeAt(s, i);
      const b = i + 1 < s.length ? charCodeAt(s, i + 1) : 0;
      const c = i + 2 < s.length ? charCodeAt(s, i + 2) : 0;
      if (a > 255 || b > 255 || c > 255) {
        throw invalidCharacter("btoa takes Latin-1 text; encode other text as UTF-8 bytes first");
      }
      const n = (a << 16) | (b << 8) | c;
      push(out, B64[n >> 18] + B64[(n >> 12) & 63] + (i + 1 < s.length ? B64[(n >> 6) & 63] : "=") + (i + 2 < s.length ? B64[n & 63] : "="));
    }
    return joinList(out, "");
  });
  const b64Value = (c) => {
    if (c >= 65 && c <= 90) return c - 65;
    if (c >= 97 && c <= 122) return c - 71;
    if (c >= 48 && c <= 57) return c + 4;
    if (c === 43) return 62;
    if (c === 47) return 63;
    return -1;
  };
  const atob = named("atob", (input) => {
    const raw = StringCtor(input);
    const values = list();
    for (let i = 0; i < raw.length; i++) {
      const c = charCodeAt(raw, i);
      if (c === 9 || c === 10 || c === 12 || c === 13 || c === 32) continue;
      push(values, c);
    }
    let n = values.length;
    if (n % 4 === 0 && n > 0 && values[n - 1] === 61) {
      n--;
      if (values[n - 1] === 61) n--;
    }
    if (n % 4 === 1) throw invalidCharacter("atob was given text that is not base64");
    const out = list();
    let bits = 0;
    let count = 0;
    let text = "";
    for (let i = 0; i < n; i++) {
      const v = b64Value(values[i]);
      if (v < 0) throw invalidCharacter("atob was given text that is not base64");
      bits = (bits << 6) | v;
      count += 6;
      if (count >= 8) {
        count -= 8;
        text += fromCharCode((bits >> count) & 0xff);
        if (text.length >= 4096) {
          push(out, text);
          text = "";
        }
      }
    }
    push(out, text);
    return joinList(out, "");
  });
  defineGlobal("btoa", btoa);
  defineGlobal("atob", atob);

  // ---- what the driver calls ---------------------------------------------------------------

  let MAX_RESULT_CHARS = 0;
  const api = freeze({
    __proto__: null,
    // Delivers a host answer: `ok` with JSON text, or a ToolError description.
    settle: (ticket, ok, text) => {
      const resolve = pendingResolve[ticket];
      if (resolve === undefined) return;
      const reject = pendingReject[ticket];
      const address = pendingAddress[ticket];
      pendingResolve[ticket] = pendingReject[ticket] = pendingAddress[ticket] = undefined;
      if (ok) {
        let value;
        try {
          value = JSONParse(text);
        } catch (e) {
          reject(e);
          return;
        }
        if (value === null || typeof value !== "object") {
          resolve(value);
          return;
        }
        // Whether reading `then` on it finds nothing without running guest code: its prototype
        // chain is the untouched intrinsic one (Object.prototype's own prototype cannot be
        // changed) and no link of it has `then`. Checking is cheaper than hiding `then`.
        const proto = getPrototypeOf(value);
        const unreachable =
          !hasOwn(ObjectPrototype, "then") &&
          (proto === ObjectPrototype ||
            (proto === ArrayPrototype && !hasOwn(ArrayPrototype, "then") && getPrototypeOf(ArrayPrototype) === ObjectPrototype));
        if (!unreachable && !hasOwn(value, "then")) {
          // Resolving reads `value.then`; an own `undefined` hides any `then` the guest put on
          // Object.prototype for that one read, so the answer is delivered as it came.
          defineProperty(value, "then", data(undefined, false, true, true));
          resolve(value);
          delete value.then;
        } else {
          resolve(value);
        }
        return;
      }
      const f = JSONParse(text);
      const own = (key) => (hasOwn(f, key) ? f[key] : undefined);
      const details = { __proto__: null, code: own("code"), address, status: own("status"), hint: own("hint"), retryable: own("retryable") };
      reject(new ToolError(own("message"), details));
    },
    // Fires the earliest timer: 0 when there is none, 1 when one ran, or the description of
    // what its callback threw.
    fireTimer: () => {
      while (heap.length > 0) {
        const entry = heapPop();
        if (timers[entry.id] !== entry) continue;
        delete timers[entry.id];
        if (entry.due > clockMs) clockMs = entry.due;
        try {
          ReflectApply(entry.callback, undefined, entry.args);
        } catch (e) {
          return describeError(e);
        }
        return 1;
      }
      return 0;
    },
    // The returned value as "J<json>", "U" for undefined, or "E<why it cannot be sent>".
    finish: (value) => {
      if (value === undefined) return "U";
      try {
        return "J" + serialize(value, "the result", "result", MAX_RESULT_CHARS);
      } catch (e) {
        if (e === FAIL) return "E" + failMessage;
        if (e !== null && typeof e === "object" && isError(e)) {
          let message = "";
          try {
            message = StringCtor(e.message);
          } catch {}
          if (message === "Maximum call stack size exceeded") return "Ethe result is nested too deeply to serialise";
        }
        return "Ereading the result threw " + inspect(e, 500);
      }
    },
    describeError,
  });

  // Called by the host before any guest code runs, so the arrays it passes are read as built.
  const configure = (namespaces, seed, clockOriginMs, timeoutMs, logBudgetBytes, maxResultBytes) => {
    if (configured) throw new TypeErrorCtor("the prelude is configured once per attempt");
    configured = true;
    originMs = +clockOriginMs;
    clockMs = originMs;
    maxTimeoutMs = +timeoutMs;
    s0 = seed[0] | 0;
    s1 = seed[1] | 0;
    s2 = seed[2] | 0;
    s3 = seed[3] | 0;
    if ((s0 | s1 | s2 | s3) === 0) s0 = 1;
    defineGlobal("performance", freeze({ now: performanceNow, timeOrigin: originMs }));
    logRemaining = +logBudgetBytes;
    MAX_RESULT_CHARS = +maxResultBytes;
    defineNamespaces(namespaces);
    return api;
  };
  return freeze({ __proto__: null, configure, premake });
}

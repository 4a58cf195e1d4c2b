//! Turning JavaScript text into QuickJS bytecode, away from the guest.
//!
//! The guest context is built without QuickJS's eval intrinsic, so nothing inside it can turn
//! text into code: `eval`, `Function` and its async and generator siblings all fail in C,
//! whatever the prelude does. The prelude and each attempt's code are therefore compiled here,
//! in a separate runtime that guest code never reaches, and loaded into the guest as bytecode.

use std::cell::RefCell;

use rquickjs::context::intrinsic::{Eval, RegExpCompiler};
use rquickjs::loader::{ImportAttributes, Loader, Resolver};
use rquickjs::{CatchResultExt, CaughtError, Context, Ctx, Module, Runtime, WriteOptions};

use crate::recent::{MAX_KEPT_INPUT_BYTES, Recent, remembered};
use crate::sandbox::GuestError;

/// Why text did not become bytecode.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum CompileError {
    /// The text is not valid JavaScript: the guest's own mistake.
    Syntax(GuestError),
    /// The compiler itself could not run.
    Internal(String),
}

/// Compiles started per compiler context before it is replaced: a declared module stays
/// registered in its context until the context is dropped.
const COMPILES_PER_CONTEXT: u32 = 8;
const COMPILER_MEMORY_BYTES: usize = 64 * 1024 * 1024;
/// QuickJS's stack ceiling; must stay at or below 256 KiB for wasm32.
pub(crate) const MAX_STACK_BYTES: usize = 256 * 1024;

struct Compiler {
    /// Holds its runtime alive.
    context: Context,
    compiles: u32,
}

thread_local! {
    static COMPILER: RefCell<Option<Compiler>> = const { RefCell::new(None) };
}

fn new_compiler() -> Result<Compiler, String> {
    let runtime = Runtime::new().map_err(|e| format!("cannot start the compiler runtime: {e}"))?;
    runtime.set_memory_limit(COMPILER_MEMORY_BYTES);
    runtime.set_max_stack_size(MAX_STACK_BYTES);
    let context = Context::custom::<(Eval, RegExpCompiler)>(&runtime)
        .map_err(|e| format!("cannot start the compiler context: {e}"))?;
    Ok(Compiler { context, compiles: 0 })
}

/// Replaces this thread's compiler now if its next compile would replace it, so no compile
/// pays for starting one; called while the host has nothing else to do.
pub(crate) fn prepare() -> Result<(), String> {
    COMPILER.with(|cell| {
        let Ok(mut slot) = cell.try_borrow_mut() else { return Ok(()) };
        if slot.as_ref().is_none_or(|c| c.compiles >= COMPILES_PER_CONTEXT) {
            *slot = None;
            *slot = Some(new_compiler()?);
        }
        Ok(())
    })
}

/// Compiles `source` as an ES module named `name` and returns its bytecode. Without `debug`
/// the bytecode carries no line numbers (smaller, faster to load; fine for the prelude, whose
/// frames are hidden from the guest anyway).
pub(crate) fn compile_module(name: &str, source: &str, debug: bool) -> Result<Vec<u8>, CompileError> {
    thread_local! {
        /// The last few compiles that succeeded, by name, source and debug: compiling is a pure
        /// function of them, and the bytecode is loaded into a fresh runtime every time.
        static COMPILED: RefCell<Recent<(String, String, bool), Vec<u8>>> = const { RefCell::new(Recent::new(8)) };
    }
    if source.len() > MAX_KEPT_INPUT_BYTES {
        return compile_uncached(name, source, debug);
    }
    remembered(&COMPILED, (name.to_owned(), source.to_owned(), debug), || {
        compile_uncached(name, source, debug)
    })
}

fn compile_uncached(name: &str, source: &str, debug: bool) -> Result<Vec<u8>, CompileError> {
    COMPILER.with(|cell| {
        let mut slot =
            cell.try_borrow_mut().map_err(|_| CompileError::Internal("compiler re-entered".into()))?;
        if slot.as_ref().is_none_or(|c| c.compiles >= COMPILES_PER_CONTEXT) {
            *slot = None;
            *slot = Some(new_compiler().map_err(CompileError::Internal)?);
        }
        let Some(compiler) = slot.as_mut() else {
            return Err(CompileError::Internal("compiler missing".into()));
        };
        compiler.compiles += 1;
        let result = compiler.context.with(|ctx| {
            let module =
                Module::declare(ctx.clone(), name, source).catch(&ctx).map_err(|e| syntax_error(&ctx, e))?;
            module
                .write(WriteOptions { strip_source: true, strip_debug: !debug, ..WriteOptions::default() })
                .map_err(|e| CompileError::Internal(format!("cannot write bytecode: {e}")))
        });
        if result.is_err() {
            // A failed compile can leave the context in an odd state; start afresh next time.
            *slot = None;
        }
        result
    })
}

fn syntax_error(_ctx: &Ctx<'_>, caught: CaughtError<'_>) -> CompileError {
    match caught {
        CaughtError::Exception(e) => {
            let message = e.message().unwrap_or_default();
            let name = e
                .as_object()
                .get::<_, Option<String>>("name")
                .ok()
                .flatten()
                .unwrap_or_else(|| "SyntaxError".to_owned());
            let stack = e.stack().filter(|s| !s.is_empty());
            CompileError::Syntax(GuestError { name, message, code: None, hint: None, stack })
        }
        CaughtError::Value(v) => CompileError::Syntax(GuestError {
            name: "SyntaxError".into(),
            message: format!("{v:?}"),
            code: None,
            hint: None,
            stack: None,
        }),
        CaughtError::Error(e) => CompileError::Internal(format!("cannot compile: {e}")),
    }
}

/// Loads bytecode produced by [`compile_module`] into `ctx` as a declared module.
#[allow(unsafe_code)]
pub(crate) fn load_module<'js>(ctx: &Ctx<'js>, bytecode: &[u8]) -> rquickjs::Result<Module<'js>> {
    // SAFETY: `Module::load` trusts its input to be well-formed QuickJS bytecode. Every byte
    // slice that reaches this function was written by `Module::write` in `compile_module`, in
    // this same process, by the same QuickJS build; guest code never supplies bytecode.
    unsafe { Module::load(ctx.clone(), bytecode) }
}

/// Refuses every module specifier, so `import()` and static imports fail, including imports
/// of modules already loaded by name (the prelude, the code itself).
pub(crate) struct NoModules;

const NO_MODULES: &str =
    "modules cannot be imported in the sandbox; tools are globals (hub.search finds them)";

impl Resolver for NoModules {
    fn resolve<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        base: &str,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<String> {
        Err(rquickjs::Error::new_resolving_message(base, name, NO_MODULES))
    }
}

impl Loader for NoModules {
    fn load<'js>(
        &mut self,
        _ctx: &Ctx<'js>,
        name: &str,
        _attributes: Option<ImportAttributes<'js>>,
    ) -> rquickjs::Result<Module<'js>> {
        Err(rquickjs::Error::new_loading_message(name, NO_MODULES))
    }
}

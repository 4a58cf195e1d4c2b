//! Benchmarks for the QuickJS sandbox driver: the raw cost of a QuickJS attempt beside what the
//! driver adds, for no call, one call and a hundred sequential calls through a bridge that
//! answers at once.
//!
//! - `raw_floor`: runtime + context + the prelude's bytecode loaded and evaluated + a
//!   precompiled `return 1` module run, straight on rquickjs.
//! - `driver_return_1`: the same `return 1` through [`QuickJs`] (compile included).
//! - `driver_one_call` and `driver_100_calls`: bridged calls; the per-call overhead is
//!   `(driver_100_calls - driver_return_1) / 100`.
// The bench plays the native host, which owns the clock; loading bytecode is what the floor measures.
#![allow(clippy::disallowed_types, clippy::disallowed_methods, unsafe_code)]

use std::future::Future;
use std::hint::black_box;
use std::pin::pin;
use std::task::{Context as TaskContext, Poll, Waker};
use std::time::Instant;

use capabilities_core::fakes::NoOpBridge;
use capabilities_core::limits::Limits;
use capabilities_core::prelude;
use capabilities_core::sandbox::quickjs::{ComputeMeter, QuickJs};
use capabilities_core::sandbox::{Attempt, AttemptEnd, GuestNamespace, Sandbox};
use criterion::{Criterion, criterion_group, criterion_main};
use rquickjs::context::intrinsic::{
    Date, Eval, Json, MapSet, Promise, Proxy, RegExp, RegExpCompiler, TypedArrays,
};
use rquickjs::{Context, Module, Runtime, WriteOptions};

/// The bridge answers at once, so every poll makes progress.
fn block_on<F: Future>(future: F) -> F::Output {
    let mut future = pin!(future);
    let mut cx = TaskContext::from_waker(Waker::noop());
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
    }
}

fn attempt(body: &str) -> Attempt {
    Attempt {
        run_id: "run_0000000000000001".to_owned(),
        body: body.to_owned(),
        namespaces: vec![GuestNamespace {
            name: "github".into(),
            tools: vec!["getIssue".into(), "searchIssues".into()],
        }],
        seed: 1,
        clock_origin_ms: 0.0,
        limits: Limits::DEFAULT,
        log_budget_bytes: 4096,
    }
}

fn compile(name: &str, source: &str) -> Vec<u8> {
    let runtime = Runtime::new().expect("runtime");
    let context = Context::custom::<(Eval, RegExpCompiler)>(&runtime).expect("context");
    context.with(|ctx| {
        Module::declare(ctx.clone(), name, source)
            .and_then(|m| m.write(WriteOptions { strip_source: true, ..WriteOptions::default() }))
            .expect("compiles")
    })
}

fn raw_floor(prelude: &[u8], code: &[u8]) -> i32 {
    let runtime = Runtime::new().expect("runtime");
    runtime.set_memory_limit(64 * 1024 * 1024);
    runtime.set_max_stack_size(256 * 1024);
    runtime.set_interrupt_handler(Some(Box::new(|| false)));
    let context = Context::custom::<(Date, RegExp, Json, Proxy, MapSet, TypedArrays, Promise)>(&runtime)
        .expect("context");
    context.with(|ctx| {
        // SAFETY: both byte strings were written by `Module::write` above, in this process.
        let prelude = unsafe { Module::load(ctx.clone(), prelude) }.expect("prelude loads");
        prelude.eval().expect("prelude evaluates");
        // SAFETY: as above.
        let code = unsafe { Module::load(ctx.clone(), code) }.expect("code loads");
        let (code, _) = code.eval().expect("code evaluates");
        let main: rquickjs::Promise = code.get("default").expect("default export");
        while ctx.execute_pending_job() {}
        main.result::<i32>().and_then(Result::ok).expect("returns 1")
    })
}

fn bench(c: &mut Criterion) {
    let start = Instant::now();
    let driver = QuickJs::new(ComputeMeter::clock(move || start.elapsed().as_micros() as u64));
    let prelude = compile(prelude::MODULE_NAME, prelude::SOURCE);
    let code = compile("code.js", "export default (async () => {return 1\n})();\n");

    let run = |body: &str| {
        let report = block_on(driver.run(attempt(body), &NoOpBridge));
        assert!(matches!(report.end, AttemptEnd::Completed(Some(_))), "{:?}", report.end);
        report
    };
    let hundred = "for (let i = 0; i < 100; i++) await github.getIssue({ number: i }); return 1";

    let mut group = c.benchmark_group("sandbox");
    group.bench_function("raw_floor", |b| b.iter(|| black_box(raw_floor(&prelude, &code))));
    group.bench_function("driver_return_1", |b| b.iter(|| black_box(run("return 1"))));
    group.bench_function("driver_one_call", |b| {
        b.iter(|| black_box(run("return await github.getIssue({ number: 1 })")))
    });
    group.bench_function("driver_100_calls", |b| b.iter(|| black_box(run(hundred))));
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);

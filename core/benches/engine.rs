//! Benchmarks for the run engine: what `Engine::execute` adds on top of a bare QuickJS attempt,
//! with the in-memory fakes behind every port.
//!
//! - `sandbox_return_1`: the floor — [`QuickJs`] runs `return 1` against a bridge that does
//!   nothing.
//! - `execute_return_1`: the same code through the engine (code preparation, run record,
//!   store, envelope).
//! - `execute_one_call` and `execute_100_calls`: read-only tool calls, each decided by policy,
//!   journaled twice and answered by the fake upstream; the per-call overhead is
//!   `(execute_100_calls - execute_return_1) / 100`.
//! - `after_answer`: what `hub serve` does between two runs, off the clock: free the last
//!   attempt's runtime and prepare the next.
//! - `prepared/…`: the same, with the next attempt's runtime, context and installed prelude
//!   made off the clock (`QuickJs::prepare`) and the last attempt's runtime freed off the clock
//!   (`QuickJs::free_spent_later`), as `hub serve` does after each answer: what a served run
//!   waits for. `prepared/sandbox_return_1_1223_tools` is the floor for a hub as
//!   large as GitHub's API: what the size of the catalog adds to every attempt;
//!   `prepared/sandbox_use_1223_tools` an attempt that uses that namespace, as the one before
//!   it did. `prepared/sandbox_100_calls` is the sandbox's share of a bridged call: the same
//!   100 calls answered at once by a bridge that does nothing, no engine behind it.
// The bench plays the native host, which owns the sandbox's compute clock.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

use std::hint::black_box;
use std::time::Instant;

use capabilities_core::address::Namespace;
use capabilities_core::catalog::{Catalog, SourceView};
use capabilities_core::fakes::{self, NoOpBridge};
use capabilities_core::fakes::{
    CountingEntropy, FakeUpstream, ManualClock, MemoryBlobs, MemoryStore, TableSecrets, block_on,
};
use capabilities_core::limits::Limits;
use capabilities_core::manifest::Manifest;
use capabilities_core::policy::{CompiledPolicy, PolicyState};
use capabilities_core::run::Engine;
use capabilities_core::sandbox::quickjs::{ComputeMeter, QuickJs};
use capabilities_core::sandbox::{Attempt, AttemptEnd, GuestNamespace, Sandbox};
use capabilities_core::surface::Surface;
use capabilities_core::surface::envelope::Envelope;
use criterion::{Criterion, criterion_group, criterion_main};
use serde_json::json;

fn surface() -> Surface {
    let tools = vec![
        json!({
            "name": "list",
            "description": "Lists notes.",
            "inputSchema": {"type": "object", "properties": {"q": {"type": "string"}}},
            "annotations": {"readOnlyHint": true}
        }),
        json!({
            "name": "add",
            "description": "Adds a note.",
            "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}},
            "annotations": {"readOnlyHint": false}
        }),
    ];
    let (manifest, _) = Manifest::from_tools_list(Namespace::new("notes").expect("a namespace"), &tools);
    let catalog =
        Catalog::new(vec![SourceView { manifest, connections: Vec::new(), default_connection: None }]);
    let mut state = PolicyState::default();
    for (address, tool) in catalog.tools() {
        state.reviewed.insert(address.to_string(), tool.digest);
    }
    Surface::new(catalog, CompiledPolicy::new(state).expect("valid policy"), Limits::DEFAULT, fakes::words())
}

fn bench(c: &mut Criterion) {
    let start = Instant::now();
    let meter = ComputeMeter::clock(move || start.elapsed().as_micros() as u64);
    // Frees each attempt's runtime before it reports; `served` leaves it for later, as a hub does.
    let unserved = QuickJs::new(meter.clone());
    let served = QuickJs::new(meter).free_spent_later();
    let surface = surface();
    let upstream = FakeUpstream::default().with("notes", "list", FakeUpstream::echo());
    let secrets = TableSecrets::default();
    let clock = ManualClock::at(1_700_000_000_000);
    let entropy = CountingEntropy::default();

    // A hub as large as GitHub's API description: 1,223 tools.
    let large = vec![GuestNamespace {
        name: "github".into(),
        tools: (0..1223).map(|i| format!("reposGetContentOfSomething{i}")).collect(),
    }];
    let floor_with = |sandbox: &QuickJs, namespaces: &Vec<GuestNamespace>, body: &str| {
        let attempt = Attempt {
            run_id: "run_0000000000000001".to_owned(),
            body: body.to_owned(),
            namespaces: namespaces.clone(),
            seed: 1,
            clock_origin_ms: 0.0,
            limits: Limits::DEFAULT,
            log_budget_bytes: Limits::DEFAULT.inline_result_bytes,
        };
        let report = block_on(sandbox.run(attempt, &NoOpBridge));
        assert!(matches!(report.end, AttemptEnd::Completed(Some(_))), "{:?}", report.end);
        report
    };
    let small = vec![GuestNamespace { name: "notes".into(), tools: vec!["list".into(), "add".into()] }];
    let floor = |sandbox: &QuickJs| floor_with(sandbox, &small, "return 1");
    // A fresh store per run, so runs and journals do not pile up across iterations.
    let execute = |sandbox: &QuickJs, code: &str| {
        let store = MemoryStore::default();
        let blobs = MemoryBlobs::default();
        let engine = Engine {
            catalog: &surface.catalog,
            policy: &surface.policy,
            lookup: &surface,
            sandbox,
            upstream: &upstream,
            secrets: &secrets,
            store: &store,
            blobs: &blobs,
            clock: &clock,
            entropy: &entropy,
            limits: Limits::DEFAULT,
            words: &surface.words,
            profile: capabilities_core::record::DEFAULT_PROFILE,
        };
        let envelope = Envelope::render(block_on(engine.execute(code)), &Limits::DEFAULT, &surface.words);
        assert_eq!(envelope.status, "completed", "{}", envelope.to_line());
        upstream.calls.lock().expect("not poisoned").clear();
        envelope
    };
    let hundred = "for (let i = 0; i < 100; i++) await notes.list({ q: String(i) }); return 1";

    let mut group = c.benchmark_group("engine");
    let sandbox = &unserved;
    group.bench_function("sandbox_return_1", |b| b.iter(|| black_box(floor(sandbox))));
    group.bench_function("execute_return_1", |b| b.iter(|| black_box(execute(sandbox, "return 1"))));
    group.bench_function("execute_one_call", |b| {
        b.iter(|| black_box(execute(sandbox, "return await notes.list({ q: 'a' })")))
    });
    group.bench_function("execute_100_calls", |b| b.iter(|| black_box(execute(sandbox, hundred))));
    // Each iteration's guest is prepared, and the last one's runtime freed, before its clock
    // starts: a served run leaves its runtime to be freed after the answer has gone.
    let sandbox = &served;
    let run = |code: &'static str| move || drop(black_box(execute(sandbox, code)));
    group.bench_function("prepared/sandbox_return_1", |b| {
        after_prepare(sandbox, b, || drop(black_box(floor(sandbox))))
    });
    // What a hub's size adds to every attempt: the guest learns each namespace's tools.
    group.bench_function("prepared/sandbox_return_1_1223_tools", |b| {
        after_prepare(sandbox, b, || drop(black_box(floor_with(sandbox, &large, "return 1"))))
    });
    // An attempt that uses that namespace, as the last one did: the namespace is built with
    // the next guest, off the clock.
    group.bench_function("prepared/sandbox_use_1223_tools", |b| {
        after_prepare(sandbox, b, || drop(black_box(floor_with(sandbox, &large, "github; return 1"))))
    });
    group.bench_function("prepared/sandbox_100_calls", |b| {
        after_prepare(sandbox, b, || drop(black_box(floor_with(sandbox, &small, hundred))))
    });
    group.bench_function("prepared/execute_return_1", |b| after_prepare(sandbox, b, run("return 1")));
    group.bench_function("prepared/execute_one_call", |b| {
        after_prepare(sandbox, b, run("return await notes.list({ q: 'a' })"))
    });
    group.bench_function("prepared/execute_100_calls", |b| after_prepare(sandbox, b, run(hundred)));
    // What a served run's thread does once the answer has gone: free the spent runtime and
    // prepare the next guest. Off the caller's clock, but on a CPU the next call may want.
    group.bench_function("after_answer", |b| {
        b.iter_custom(|iters| {
            let mut took = std::time::Duration::ZERO;
            for _ in 0..iters {
                drop(black_box(floor(sandbox)));
                let start = Instant::now();
                sandbox.free_spent();
                sandbox.prepare().expect("a prepared guest");
                took += start.elapsed();
            }
            took
        })
    });
    group.finish();
}

/// Times `run` only, each time with the last guest freed and the next one prepared before the
/// clock starts, as `hub serve` does after each answer.
fn after_prepare(sandbox: &QuickJs, b: &mut criterion::Bencher<'_>, run: impl Fn()) {
    b.iter_custom(|iters| {
        let mut took = std::time::Duration::ZERO;
        for _ in 0..iters {
            sandbox.free_spent();
            sandbox.prepare().expect("a prepared guest");
            let start = Instant::now();
            run();
            took += start.elapsed();
        }
        took
    })
}

criterion_group!(benches, bench);
criterion_main!(benches);

//! Sandbox tests: the QuickJS driver and the guest prelude, run against a scripted bridge.
//!
//! `check(body, expect)` runs one attempt and renders what came out — how it ended, the
//! console lines, and every call the bridge saw — as text.
// Tests may read a real clock: they play the host, which supplies core's time.
#![allow(clippy::disallowed_types, clippy::disallowed_methods)]

mod driver;
mod hostile;
mod plain;
mod prelude;
mod prepared;

use std::cell::{Cell, RefCell};
use std::future::Future;
use std::pin::{Pin, pin};
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Instant;

use capabilities_core::limits::Limits;
use capabilities_core::ports::LocalBoxFuture;
use capabilities_core::sandbox::quickjs::{ComputeMeter, QuickJs};
use capabilities_core::sandbox::{
    Attempt, AttemptEnd, AttemptReport, Bridge, GuestCall, GuestNamespace, GuestReply, Sandbox, ToolFailure,
};
use expect_test::Expect;
use serde_json::{Value, json};

/// What the scripted bridge answers to one call: how many times its future yields first, and
/// the reply.
pub(crate) type Script = Box<dyn Fn(&GuestCall) -> (usize, GuestReply)>;

/// A bridge that records every call and answers from a script.
pub(crate) struct FakeBridge {
    pub(crate) calls: RefCell<Vec<GuestCall>>,
    pub(crate) lookups: RefCell<Vec<(&'static str, Value)>>,
    pub(crate) completed: RefCell<Vec<u32>>,
    pub(crate) max_in_flight: Cell<usize>,
    in_flight: Cell<usize>,
    script: Script,
}

impl FakeBridge {
    pub(crate) fn new(script: impl Fn(&GuestCall) -> (usize, GuestReply) + 'static) -> FakeBridge {
        FakeBridge {
            calls: RefCell::default(),
            lookups: RefCell::default(),
            completed: RefCell::default(),
            max_in_flight: Cell::new(0),
            in_flight: Cell::new(0),
            script: Box::new(script),
        }
    }

    /// Answers every call with `{ tool, args }` after one yield.
    pub(crate) fn echo() -> FakeBridge {
        FakeBridge::new(|call| (1, GuestReply::Ok(json!({ "tool": call.address, "args": call.args }))))
    }
}

impl Bridge for FakeBridge {
    fn call(&self, call: GuestCall) -> LocalBoxFuture<'_, GuestReply> {
        let (yields, reply) = (self.script)(&call);
        let seq = call.seq;
        self.calls.borrow_mut().push(call);
        Box::pin(async move {
            self.in_flight.set(self.in_flight.get() + 1);
            self.max_in_flight.set(self.max_in_flight.get().max(self.in_flight.get()));
            for _ in 0..yields {
                YieldNow(false).await;
            }
            self.in_flight.set(self.in_flight.get() - 1);
            self.completed.borrow_mut().push(seq);
            reply
        })
    }

    fn search(&self, args: Value) -> Result<String, String> {
        let query = args["query"].as_str().unwrap_or_default().to_owned();
        self.lookups.borrow_mut().push(("search", args));
        if query == "fail" {
            Err("search is broken today".into())
        } else {
            Ok(format!("results for {query}"))
        }
    }

    fn describe(&self, args: Value) -> Result<String, String> {
        let text = format!("declarations for {}", args["targets"]);
        self.lookups.borrow_mut().push(("describe", args));
        Ok(text)
    }
}

/// A future that is pending once, waking itself.
struct YieldNow(bool);

impl Future for YieldNow {
    type Output = ();
    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        if self.0 {
            Poll::Ready(())
        } else {
            self.0 = true;
            cx.waker().wake_by_ref();
            Poll::Pending
        }
    }
}

/// Runs a future to completion on this thread.
pub(crate) fn block_on<F: Future>(future: F) -> F::Output {
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Waker::from(Arc::new(Unpark(std::thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut future = pin!(future);
    loop {
        if let Poll::Ready(out) = future.as_mut().poll(&mut cx) {
            return out;
        }
        std::thread::park();
    }
}

/// A driver measuring time with the real monotonic clock, as the native host does.
pub(crate) fn driver() -> QuickJs {
    let start = Instant::now();
    QuickJs::new(ComputeMeter::clock(move || start.elapsed().as_micros() as u64))
}

pub(crate) fn namespaces() -> Vec<GuestNamespace> {
    vec![
        GuestNamespace {
            name: "github".into(),
            tools: ["searchIssues", "createIssue", "getIssue", "searchCode", "listRepos"]
                .map(String::from)
                .to_vec(),
        },
        GuestNamespace { name: "memory".into(), tools: vec!["createEntities".into(), "readGraph".into()] },
    ]
}

/// The attempt every test starts from: generous compute (tests run unoptimised), a modest
/// heap so memory tests are quick.
pub(crate) fn attempt(body: &str) -> Attempt {
    Attempt {
        run_id: "run_0000000000000007".to_owned(),
        body: body.to_owned(),
        namespaces: namespaces(),
        seed: 7,
        clock_origin_ms: 1_767_225_600_000.0,
        limits: Limits { compute_ms: 5_000, memory_bytes: 32 * 1024 * 1024, ..Limits::DEFAULT },
        log_budget_bytes: 4096,
    }
}

pub(crate) fn run_on(driver: &QuickJs, attempt: Attempt, bridge: &FakeBridge) -> AttemptReport {
    block_on(driver.run(attempt, bridge))
}

pub(crate) fn run(body: &str) -> AttemptReport {
    run_on(&driver(), attempt(body), &FakeBridge::echo())
}

/// The attempt's end, logs and calls as text.
pub(crate) fn render(report: &AttemptReport, bridge: &FakeBridge) -> String {
    let mut out = match &report.end {
        AttemptEnd::Completed(None) => "completed undefined".to_owned(),
        AttemptEnd::Completed(Some(value)) => format!("completed {value}"),
        AttemptEnd::Threw(e) => {
            let code = e.code.as_deref().map(|c| format!(" [{c}]")).unwrap_or_default();
            format!("threw {}{code}: {}", e.name, e.message)
        }
        other => format!("{other:?}"),
    };
    for line in &report.logs {
        out.push_str(&format!("\nlog {line}"));
    }
    if report.logs_truncated {
        out.push_str("\nlogs truncated");
    }
    for call in bridge.calls.borrow().iter() {
        out.push_str(&format!("\ncall {} {} {} {}", call.seq, call.address, call.args, call.options));
    }
    for (kind, args) in bridge.lookups.borrow().iter() {
        out.push_str(&format!("\n{kind} {args}"));
    }
    if report.calls_issued as usize != bridge.calls.borrow().len() {
        out.push_str(&format!(
            "\ncalls_issued {} but the bridge saw {}",
            report.calls_issued,
            bridge.calls.borrow().len()
        ));
    }
    out
}

pub(crate) fn check(body: &str, expect: Expect) {
    let bridge = FakeBridge::echo();
    let report = run_on(&driver(), attempt(body), &bridge);
    expect.assert_eq(&render(&report, &bridge));
}

pub(crate) fn check_with(bridge: FakeBridge, body: &str, expect: Expect) {
    let report = run_on(&driver(), attempt(body), &bridge);
    expect.assert_eq(&render(&report, &bridge));
}

pub(crate) fn failure(code: &str, message: &str) -> ToolFailure {
    ToolFailure { code: code.into(), message: message.into(), hint: None, status: None, retryable: false }
}

//! An HTTP API operation called through `execute` (code, sandbox, policy, journal, the pool's
//! request, the answer shaped) against the same request made directly with the same HTTP client
//! (reqwest, connections kept alive), both against Prism mocking a real petstore document on
//! loopback. Compare the medians: the issue's target is at most 1.3×.
//!
//! The direct request is timed three ways: back to back (`direct_reqwest`); after the same
//! pause as the hub's calls get (`direct_reqwest_spaced`): between two of them the hub frees and
//! prepares a guest, time in which Prism goes idle, and a server woken from idle answers later
//! (the pause is measured here, the median of that work after warm-up calls, and is busy, as
//! that work is, and off the clock); and after that very work (`direct_reqwest_after_hub_work`),
//! which also leaves the CPU's caches as the hub's own requests find them.
//!
//! Before criterion's groups, the direct request and the call through `execute` are also timed
//! in turn, round after round (`side_by_side`), and their medians and ratio printed: the fairest
//! comparison this machine allows, since both meet Prism and the machine in the same moments.
//!
//! `cargo bench -p capabilities --bench openapi` (needs `cd node && npm ci`;
//! `SIDE_BY_SIDE_ROUNDS=N` sets the rounds, 1,000 by default). Without a Secret Service the key
//! lives in the hub's fallback file; to time the keychain people have, run it in a D-Bus
//! session with gnome-keyring unlocked and `CAPABILITIES_KEYCHAIN=keychain`:
//!
//! ```sh
//! dbus-run-session -- sh -c 'printf pw | gnome-keyring-daemon --unlock --components=secrets;
//!   CAPABILITIES_KEYCHAIN=keychain cargo bench -p capabilities --bench openapi'
//! ```

use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use capabilities::host::Host;
use criterion::{Criterion, criterion_group, criterion_main};

struct Prism(Child);

impl Drop for Prism {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap()
}

fn prism(document: &Path) -> (Prism, u16) {
    let bin = repo().join("node/node_modules/.bin/prism");
    assert!(bin.is_file(), "{} is missing: run `cd node && npm ci`", bin.display());
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(bin)
        .args(["mock", "--errors", "-h", "127.0.0.1", "-p", &port.to_string()])
        .arg(document)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "Prism did not start");
        std::thread::sleep(Duration::from_millis(100));
    }
    (Prism(child), port)
}

fn bench(c: &mut Criterion) {
    let document = repo().join("node/node_modules/@readme/oas-examples/3.0/json/petstore.json");
    let (_prism, port) = prism(&document);
    let base = format!("http://127.0.0.1:{port}");
    let dir = tempfile::tempdir().unwrap();
    let home = dir.path().join("hub");
    let mut add = Command::new(env!("CARGO_BIN_EXE_capabilities"))
        .args([
            "hub",
            "add",
            document.to_str().unwrap(),
            "--namespace",
            "pets",
            "--base-url",
            &base,
            "--stdin",
            "--yes",
        ])
        .env("CAPABILITIES_HOME", &home)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    add.stdin.take().unwrap().write_all(b"special-key\n").unwrap();
    assert!(add.wait().unwrap().success(), "hub add failed");
    // `hub add` and the host below read `CAPABILITIES_KEYCHAIN` from the same environment, so
    // they open the same secret store.

    let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let client = reqwest::Client::builder().build().unwrap();
    let url = format!("{base}/pet/7");
    let direct = || {
        runtime.block_on(async {
            let answer = client
                .get(&url)
                .header("api_key", "special-key")
                // What the hub sends (`core/src/openapi/request.rs`): the same request, byte for byte.
                .header("accept", "application/json, */*;q=0.5")
                .send()
                .await
                .unwrap();
            assert_eq!(answer.status().as_u16(), 200);
            let _: serde_json::Value = answer.json().await.unwrap();
        })
    };
    // As `hub serve` opens it, run records written behind the run: what a harness meets.
    let host = Host::open_for_server(&home, "default").unwrap();
    let code = "return (await pets.getPetById({ petId: 7 })).status";
    let through = || {
        let envelope = host.execute(code).unwrap();
        let text = serde_json::to_string(&envelope).unwrap();
        assert!(text.contains("200"), "{text}");
    };
    direct();
    // What freeing the spent guest and preparing the next takes after a hub call, measured.
    let mut pauses: Vec<Duration> = (0..30)
        .map(|_| {
            through();
            let started = Instant::now();
            capabilities::host::after_answer();
            started.elapsed()
        })
        .collect();
    pauses.sort();
    let spacing = pauses[pauses.len() / 2];
    eprintln!("openapi bench: the hub's work after each call, median of 30: {spacing:?}");
    side_by_side(&host, &direct, &through);
    let mut group = c.benchmark_group("openapi_call");
    group.sample_size(60).measurement_time(Duration::from_secs(8));
    group.bench_function("direct_reqwest", |b| b.iter(direct));
    group.bench_function("direct_reqwest_spaced", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let pause = Instant::now();
                while pause.elapsed() < spacing {
                    std::hint::spin_loop();
                }
                let started = Instant::now();
                direct();
                spent += started.elapsed();
            }
            spent
        })
    });
    // The direct request again, each after the work the hub does between two of its calls (a
    // run of `return 1`, its answer, freeing and preparing a guest), off the clock: the state
    // of the caches and of Prism that the hub's own requests meet. What `through_execute` adds
    // over this is the hub's own time on a call.
    group.bench_function("direct_reqwest_after_hub_work", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let records = capabilities::store::answer_first();
                let _ = host.execute("return 1").unwrap();
                drop(records);
                capabilities::host::after_answer();
                let started = Instant::now();
                direct();
                spent += started.elapsed();
            }
            spent
        })
    });
    // `hub serve` hands the run's last record to the writer threads, frees the spent attempt and
    // prepares the next one after it has answered, off the caller's clock
    // (`serve::handler::on_own_thread`): the same here, outside the timing.
    group.bench_function("through_execute", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                let records = capabilities::store::answer_first();
                let started = Instant::now();
                through();
                spent += started.elapsed();
                drop(records);
                capabilities::host::after_answer();
            }
            spent
        })
    });
    // The same call in code never sent before: nothing of its preparing or compiling is kept
    // from an earlier run (the hub keeps the last few, and a model often sends the same code).
    let mut sent = 0u64;
    group.bench_function("through_execute_new_code", |b| {
        b.iter_custom(|iters| {
            let mut spent = Duration::ZERO;
            for _ in 0..iters {
                sent += 1;
                let code = format!("{code} // {sent}");
                let records = capabilities::store::answer_first();
                let started = Instant::now();
                let envelope = host.execute(&code).unwrap();
                spent += started.elapsed();
                assert!(serde_json::to_string(&envelope).unwrap().contains("200"));
                drop(records);
                capabilities::host::after_answer();
            }
            spent
        })
    });
    group.finish();
    capabilities::store::wait_for_writes();
}

/// The direct request and the call through `execute` timed in turn, round after round, the
/// order swapped every round so neither always follows the other, and each after the same work
/// of the hub between two calls (off the clock): Prism's and the machine's swings fall on both
/// alike, which criterion's groups, timed one after the other, cannot promise. Prints the
/// medians and their ratio, the figure the issue's target is about.
fn side_by_side(host: &Host, direct: &dyn Fn(), through: &dyn Fn()) {
    let rounds: usize =
        std::env::var("SIDE_BY_SIDE_ROUNDS").ok().and_then(|n| n.parse().ok()).unwrap_or(1000);
    // A run of `return 1`, its last record, freeing it and preparing the next guest: what the
    // hub does between two calls, and what leaves the caches as a call finds them.
    let hub_work = || {
        let records = capabilities::store::answer_first();
        let _ = host.execute("return 1").unwrap();
        drop(records);
        capabilities::host::after_answer();
    };
    let timed = |call: &dyn Fn()| {
        hub_work();
        let records = capabilities::store::answer_first();
        let started = Instant::now();
        call();
        let took = started.elapsed();
        drop(records);
        took
    };
    // Prism is a Node program: its answers keep getting faster for thousands of requests as
    // its code is compiled. A slower Prism would flatter the ratio, so it is warmed up first.
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_secs(8) {
        direct();
        through();
        capabilities::host::after_answer();
    }
    let (mut straight, mut hub) = (Vec::with_capacity(rounds), Vec::with_capacity(rounds));
    for round in 0..rounds + 20 {
        let (d, t) = if round % 2 == 0 {
            let d = timed(direct);
            (d, timed(through))
        } else {
            let t = timed(through);
            (timed(direct), t)
        };
        // The first rounds warm both up.
        if round >= 20 {
            straight.push(d);
            hub.push(t);
        }
    }
    capabilities::host::after_answer();
    let median = |xs: &mut Vec<Duration>| {
        xs.sort();
        xs[xs.len() / 2]
    };
    let (d, t) = (median(&mut straight), median(&mut hub));
    eprintln!(
        "openapi side by side, {rounds} rounds: direct {:.3} ms, through execute {:.3} ms, ratio {:.2}",
        d.as_secs_f64() * 1e3,
        t.as_secs_f64() * 1e3,
        t.as_secs_f64() / d.as_secs_f64()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);

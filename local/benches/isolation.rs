//! An isolated stdio server's start → first `tools/list` (bubblewrap, the memory server's
//! entry point run with node) against the same server started unisolated, each start a fresh
//! pool and process. Prints both medians and their ratio; the goal is at most 1.2×.
//!
//! `cargo bench -p capabilities --bench isolation` (needs `bwrap` and `cd node && npm ci`).

use std::collections::BTreeMap;
use std::io::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use capabilities::upstream::{Isolation, PoolOptions, SourcePool, SourceSpec, SourceTransport};
use capabilities_core::ports::Credentials;

const ROUNDS: usize = 21;

fn spec(server: &Path, isolation: Option<Isolation>) -> SourceSpec {
    SourceSpec {
        namespace: "memory".to_owned(),
        transport: SourceTransport::Stdio {
            command: "node".to_owned(),
            args: vec![server.to_string_lossy().into_owned()],
            env: BTreeMap::from([("MEMORY_FILE_PATH".to_owned(), "/tmp/bench-memory.jsonl".to_owned())]),
            env_slots: Vec::new(),
            cwd: None,
            isolation,
        },
    }
}

fn first_list(runtime: &tokio::runtime::Runtime, spec: &SourceSpec) -> Duration {
    let pool = SourcePool::new(PoolOptions::default());
    pool.register(spec.clone());
    let started = Instant::now();
    let tools = runtime.block_on(pool.list_tools(spec, &Credentials::default())).expect("tools/list");
    let took = started.elapsed();
    assert_eq!(tools.len(), 9);
    pool.shutdown();
    took
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
    let server = repo.join("node/node_modules/@modelcontextprotocol/server-memory/dist/index.js");
    assert!(server.is_file(), "{} is missing: run `cd node && npm ci`", server.display());
    let state = tempfile::tempdir().unwrap();
    let isolation = Isolation {
        read_only: Vec::new(),
        state: state.path().to_string_lossy().into_owned(),
        hidden: Vec::new(),
        net: false,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let plain = spec(&server, None);
    let boxed = spec(&server, Some(isolation));
    // Warm the page cache and node's compile cache alike for both.
    first_list(&runtime, &plain);
    first_list(&runtime, &boxed);
    let (mut unisolated, mut isolated) = (Vec::new(), Vec::new());
    for _ in 0..ROUNDS {
        unisolated.push(first_list(&runtime, &plain));
        isolated.push(first_list(&runtime, &boxed));
    }
    let (u, i) = (median(unisolated), median(isolated));
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        "start → first tools/list, median of {ROUNDS}: unisolated {:.1} ms, isolated {:.1} ms, ratio {:.2}×",
        u.as_secs_f64() * 1e3,
        i.as_secs_f64() * 1e3,
        i.as_secs_f64() / u.as_secs_f64()
    );
}

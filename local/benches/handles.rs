//! `hub.read` of a 1 MiB slice of a 10 MB handle in the file store (the target: at most
//! 5 ms). Two measures: the host's side alone (the run record checked, the blob file read, the
//! slice cut on character boundaries), and the whole path from code, as `execute` runs eight
//! reads against the same `execute` with none; a read costs the difference over eight.
//!
//! `cargo bench -p capabilities --bench handles`.

use std::hint::black_box;

use capabilities::host::Host;
use capabilities_core::handles::{self, ReadRequest};
use criterion::{Criterion, criterion_group, criterion_main};
use futures_util::FutureExt;

const MIB: u64 = 1024 * 1024;

fn bench_read(c: &mut Criterion) {
    let dir = tempfile::tempdir().unwrap();
    let host = Host::open(&dir.path().join("hub")).unwrap();
    let big = host.execute("return 'x'.repeat(10 * 1024 * 1024)").unwrap();
    let handle = big.handles[0].handle.clone();
    let store = host.store();

    let mut group = c.benchmark_group("handles");
    group.bench_function("hub.read 1 MiB, host side", |b| {
        let mut offset = 0;
        b.iter(|| {
            let request = ReadRequest { handle: handle.clone(), offset, limit: MIB };
            let slice = handles::read(store, store, "default", &request).now_or_never().unwrap().unwrap();
            assert_eq!(slice.text.len() as u64, MIB);
            offset = (offset + MIB) % (8 * MIB);
            black_box(slice)
        });
    });
    let eight = format!(
        "let n = 0; for (let i = 0; i < 8; i++) n += (await hub.read({handle:?}, {{ offset: i * 1048576, limit: 1048576 }})).text.length; return n"
    );
    group.sample_size(20);
    group.bench_function("execute with 8 × hub.read 1 MiB", |b| {
        b.iter(|| {
            let envelope = host.execute(&eight).unwrap();
            assert_eq!(envelope.result, Some(serde_json::json!(8 * MIB)));
        });
    });
    group.bench_function("execute with no read", |b| {
        b.iter(|| {
            let envelope =
                host.execute("let n = 0; for (let i = 0; i < 8; i++) n += 1048576; return n").unwrap();
            assert_eq!(envelope.result, Some(serde_json::json!(8 * MIB)));
        });
    });
    group.finish();
}

criterion_group!(benches, bench_read);
criterion_main!(benches);

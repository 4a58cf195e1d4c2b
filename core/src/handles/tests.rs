//! Handles: their shape, slicing by bytes on character boundaries, the checks of `hub.read`'s
//! arguments, and the binding of a handle to its run and profile.

use expect_test::{Expect, expect};
use serde_json::json;

use super::*;
use crate::fakes::{CountingEntropy, MemoryBlobs, MemoryStore, block_on};
use crate::record::{RunOutput, RunStatus};

fn run_id(n: u8) -> RunId {
    RunId::from_bytes([n; 8])
}

#[test]
fn handles_name_their_run_and_nothing_else_parses() {
    let h = Handle::new(&run_id(1), [0xab; 16]);
    assert_eq!(h.as_str(), "h_0101010101010101_abababababababababababababababab");
    assert_eq!(h.run().as_str(), "run_0101010101010101");
    assert_eq!(Handle::parse(h.as_str()), Some(h.clone()));
    assert_eq!(
        h.uri(),
        "capabilities://runs/run_0101010101010101/handles/h_0101010101010101_abababababababababababababababab"
    );
    assert_eq!(Handle::from_uri(&h.uri()), Some(h.clone()));
    // A URI whose run is not the handle's names no handle.
    let other = format!("capabilities://runs/{}/handles/{}", run_id(2).as_str(), h.as_str());
    assert_eq!(Handle::from_uri(&other), None);
    for bad in [
        "",
        "h_",
        "h_0101010101010101",
        "h_0101010101010101_ABABABABABABABABABABABABABABABAB",
        "h_0101010101010101_abab",
        "h_../../etc/passwd_abababababababababababababababab",
        "run_0101010101010101",
    ] {
        assert_eq!(Handle::parse(bad), None, "{bad}");
    }
}

fn check_slice(text: &str, offset: u64, limit: u64, expect: Expect) {
    let bytes = text.as_bytes();
    let start = (offset as usize).min(bytes.len());
    let end = start.saturating_add(read_len(limit) as usize).min(bytes.len());
    let got = BlobBytes { bytes: bytes[start..end].to_vec(), total: bytes.len() as u64 };
    let s = slice(&got, offset, limit);
    expect.assert_eq(&format!(
        "{:?} offset={} next={} bytes={} eof={}",
        s.text, s.offset, s.next, s.bytes, s.eof
    ));
}

#[test]
fn slices_count_bytes_and_never_split_a_character() {
    check_slice("hello world", 0, 5, expect![[r#""hello" offset=0 next=5 bytes=11 eof=false"#]]);
    check_slice("hello world", 6, 100, expect![[r#""world" offset=6 next=11 bytes=11 eof=true"#]]);
    // "é" is two bytes: a slice holds the characters that start in it, so one ending inside "é"
    // runs to its end and the next, starting inside it, begins after it.
    check_slice("aé b", 0, 2, expect![[r#""aé" offset=0 next=3 bytes=5 eof=false"#]]);
    check_slice("aé b", 2, 10, expect![[r#"" b" offset=3 next=5 bytes=5 eof=true"#]]);
    // A slice too short for the character it starts at holds that one character; one inside a
    // character holds none, and moves on.
    check_slice("😀x", 0, 1, expect![[r#""😀" offset=0 next=4 bytes=5 eof=false"#]]);
    check_slice("😀x", 1, 2, expect![[r#""" offset=4 next=4 bytes=5 eof=false"#]]);
    // Past the end: empty, at the end, eof.
    check_slice("abc", 3, 10, expect![[r#""" offset=3 next=3 bytes=3 eof=true"#]]);
    check_slice("abc", u64::MAX, 10, expect![[r#""" offset=3 next=3 bytes=3 eof=true"#]]);
}

#[test]
fn resource_uris_name_a_handle_and_a_part() {
    let h = Handle::new(&run_id(1), [0xab; 16]);
    assert_eq!(part_uris(h.as_str(), 100), [h.uri()]);
    let parts = part_uris(h.as_str(), 2 * RESOURCE_PART_BYTES + 1);
    assert_eq!(parts.len(), 3);
    assert_eq!(parts[2], format!("{}?offset=8388608&limit=4194304", h.uri()));
    let parsed: Vec<_> = parts.iter().map(|u| parse_resource_uri(u).map(|(_, o, l)| (o, l))).collect();
    assert_eq!(parsed, [Some((0, 4194304)), Some((4194304, 4194304)), Some((8388608, 4194304))]);
    assert_eq!(parse_resource_uri(&h.uri()), Some((h.clone(), 0, RESOURCE_PART_BYTES)));
    assert_eq!(
        parse_resource_uri(&format!("{}?limit=99999999", h.uri())).map(|p| p.2),
        Some(RESOURCE_PART_BYTES)
    );
    for bad in ["?offset=-1", "?limit=0", "?offset=1&x=2", "?offset=", "?offset=1e3", "/../x"] {
        assert_eq!(parse_resource_uri(&format!("{}{bad}", h.uri())), None, "{bad}");
    }
}

#[test]
fn slices_at_a_fixed_stride_tile_the_text() {
    let text: String = (0..3000).map(|i| ["a", "é", "😀", "\"", "\n", "€"][i % 6]).collect();
    let bytes = text.as_bytes();
    for stride in [1, 2, 3, 5, 64] {
        let mut joined = String::new();
        let mut at = 0;
        while at < bytes.len() {
            let end = (at + read_len(stride) as usize).min(bytes.len());
            let got = BlobBytes { bytes: bytes[at..end].to_vec(), total: bytes.len() as u64 };
            joined.push_str(&slice(&got, at as u64, stride).text);
            at += stride as usize;
        }
        assert_eq!(joined, text, "stride {stride}");
    }
}

#[test]
fn following_next_reads_the_whole_text_back() {
    let text: String = (0..5000).map(|i| ["a", "é", "😀", "\"", "\n"][i % 5]).collect();
    for limit in [1, 2, 3, 7, 1000] {
        let mut offset = 0;
        let mut read = String::new();
        loop {
            let bytes = text.as_bytes();
            let end = (offset as usize + read_len(limit) as usize).min(bytes.len());
            let got = BlobBytes { bytes: bytes[offset as usize..end].to_vec(), total: bytes.len() as u64 };
            let s = slice(&got, offset, limit);
            read.push_str(&s.text);
            offset = s.next;
            if s.eof {
                break;
            }
        }
        assert_eq!(read, text, "limit {limit}");
    }
}

fn check_read(args: serde_json::Value, expect: Expect) {
    let got = match parse_read(&args) {
        Ok(r) => format!("ok {} {} {}", r.handle, r.offset, r.limit),
        Err(f) => format!("{}: {}", f.code, f.message),
    };
    expect.assert_eq(&got);
}

#[test]
fn read_arguments_are_checked_and_huge_limits_lowered() {
    check_read(json!({"handle": "h_x"}), expect!["ok h_x 0 1048576"]);
    check_read(json!({"handle": "h_x", "offset": 10, "limit": 99}), expect!["ok h_x 10 99"]);
    check_read(json!({"handle": "h_x", "limit": 1e12}), expect!["ok h_x 0 4194304"]);
    check_read(json!({"handle": "h_x", "offset": 1e300}), expect!["ok h_x 18446744073709551615 1048576"]);
    check_read(
        json!({"handle": "h_x", "limit": -1}),
        expect!["invalid_arguments: hub.read's `limit` is -1: it takes a whole number of bytes from 1"],
    );
    check_read(
        json!({"handle": "h_x", "limit": 0}),
        expect!["invalid_arguments: hub.read's `limit` is 0: it takes a whole number of bytes from 1"],
    );
    check_read(
        json!({"handle": "h_x", "offset": -5}),
        expect!["invalid_arguments: hub.read's `offset` is -5: it takes a whole number of bytes from 0"],
    );
    check_read(
        json!({"handle": "h_x", "offset": 1.5}),
        expect!["invalid_arguments: hub.read's `offset` is 1.5: it takes a whole number of bytes from 0"],
    );
    check_read(
        json!({"handle": "h_x", "offset": "3"}),
        expect![[
            r#"invalid_arguments: hub.read's `offset` is "3": it takes a whole number of bytes from 0"#
        ]],
    );
    check_read(
        json!({}),
        expect![[r#"invalid_arguments: hub.read takes a handle string: hub.read("h_…", { offset, limit })"#]],
    );
}

/// A completed run of `profile` whose result is `size` bytes of JSON, spilled as the engine does.
fn spilled_run(store: &MemoryStore, blobs: &MemoryBlobs, n: u8, profile: &str, size: usize) -> RunRecord {
    thread_local!(static ENTROPY: CountingEntropy = CountingEntropy::default());
    let mut run = RunRecord {
        id: run_id(n),
        status: RunStatus::Completed,
        created_ms: 0,
        updated_ms: 0,
        body: String::new(),
        notices: Vec::new(),
        lines: Vec::new(),
        seed: 0,
        clock_origin_ms: 0,
        attempts: 1,
        live_calls: 0,
        pending: Vec::new(),
        decisions: Vec::new(),
        output: RunOutput {
            result: Some(json!("x".repeat(size))),
            logs: (0..2000).map(|i| format!("line {i}")).collect(),
            ..RunOutput::default()
        },
        profile: profile.to_owned(),
    };
    ENTROPY.with(|entropy| block_on(spill(&mut run, blobs, entropy, 24 * 1024)));
    block_on(store.save_run(&run)).unwrap();
    run
}

fn read_as(store: &MemoryStore, blobs: &MemoryBlobs, profile: &str, handle: &str) -> Result<Slice, String> {
    let request = ReadRequest { handle: handle.to_owned(), offset: 0, limit: 10 };
    block_on(read(store, blobs, profile, &request)).map_err(|f| format!("{}: {}", f.code, f.message))
}

#[test]
fn spilled_output_fits_inline_and_keeps_the_whole() {
    let (store, blobs) = (MemoryStore::default(), MemoryBlobs::default());
    let run = spilled_run(&store, &blobs, 1, "default", 100_000);
    let kinds: Vec<_> = run.output.handles.iter().map(|h| (h.kind, h.bytes)).collect();
    assert_eq!(kinds, [(HandleKind::Result, 100_002), (HandleKind::Logs, 18_889)]);
    let preview = run.output.result.as_ref().and_then(Value::as_str).unwrap();
    assert!(preview.starts_with("\"xxx"), "{preview:.40}");
    assert!(preview.contains(&run.output.handles[0].handle), "the preview names the handle");
    let inline = serde_json::to_string(&run.output.result).unwrap().len()
        + serde_json::to_string(&run.output.logs).unwrap().len();
    assert!(inline <= 24 * 1024, "{inline}");
    let kept = blobs.text(&run.id, &run.output.handles[0].handle).unwrap();
    assert_eq!(kept, serde_json::to_string(&json!("x".repeat(100_000))).unwrap());
    let logs = blobs.text(&run.id, &run.output.handles[1].handle).unwrap();
    assert!(logs.starts_with("line 0\nline 1\n") && logs.ends_with("line 1999"));
    // A run that fits keeps nothing.
    let small = spilled_run(&store, &blobs, 2, "default", 10);
    assert!(small.output.handles.is_empty());
}

#[test]
fn a_handle_reads_only_from_its_own_run_and_profile() {
    let (store, blobs) = (MemoryStore::default(), MemoryBlobs::default());
    let run = spilled_run(&store, &blobs, 1, "default", 100_000);
    let handle = run.output.handles[0].handle.clone();
    expect![[r#"Ok(Slice { text: "\"xxxxxxxxx", offset: 0, next: 10, bytes: 100002, eof: false })"#]]
        .assert_eq(&format!("{:?}", read_as(&store, &blobs, "default", &handle)));

    let unknown = |h: &str| format!("unknown_handle: there is no handle `{h}`");
    // Another profile's run: the same words as a handle that never was.
    assert_eq!(read_as(&store, &blobs, "work", &handle), Err(unknown(&handle)));
    let never = Handle::new(&run.id, [7; 16]);
    assert_eq!(read_as(&store, &blobs, "default", never.as_str()), Err(unknown(never.as_str())));
    // The random part of a real handle under another (real) run of the same profile.
    let other = spilled_run(&store, &blobs, 2, "default", 100_000);
    let moved = format!("h_{}_{}", &other.id[4..], &handle[19..]);
    assert_eq!(read_as(&store, &blobs, "default", &moved), Err(unknown(&moved)));
    // The run is gone (pruned, expired): so is the handle.
    blobs.remove_run(&run.id);
    assert_eq!(read_as(&store, &blobs, "default", &handle), Err(unknown(&handle)));
    assert_eq!(read_as(&store, &blobs, "default", "../runs/x"), Err(unknown("../runs/x")));
}

#[test]
fn a_failing_blob_store_leaves_the_preview_and_says_why() {
    let (store, blobs) = (MemoryStore::default(), MemoryBlobs::default());
    blobs.failing.store(true, std::sync::atomic::Ordering::Relaxed);
    let run = spilled_run(&store, &blobs, 1, "default", 100_000);
    assert!(run.output.handles.is_empty());
    assert!(run.output.logs_truncated);
    expect![[r#"
        the whole result could not be kept as a handle: store I/O failed on `blobs/run_0101010101010101`: no space left
        the whole logs could not be kept as a handle: store I/O failed on `blobs/run_0101010101010101`: no space left"#]]
    .assert_eq(&run.notices.join("\n"));
}

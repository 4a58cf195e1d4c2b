//! Writes the `o200k_base` token table that `src/tokens.rs` embeds: every token's length byte
//! in rank order, then every token's bytes in the same order. (Lengths apart from the bytes
//! compress about 55 KB smaller under gzip than interleaved, which the hosted bundle feels.) tiktoken-rs embeds the same table as base64
//! text with the ranks spelled out; that text is about 0.6 MB more after gzip, which the hosted
//! Worker's bundle pays for, and every process decoded it before counting its first token.

// A build script runs on the build machine, before the crate exists: the sans-I/O rule in
// clippy.toml is for the crate's own code.
#![allow(clippy::disallowed_methods)]

use std::path::PathBuf;

/// Tokens in `o200k_base` below its special tokens; ranks 0 to 199,997 with no gap.
const TOKENS: u32 = 199_998;

fn main() {
    println!("cargo::rerun-if-changed=build.rs");
    let bpe = tiktoken_rs::o200k_base().expect("tiktoken-rs embeds the o200k_base table");
    let mut lengths = Vec::with_capacity(TOKENS as usize);
    let mut bytes = Vec::with_capacity(1_400_000);
    for rank in 0..TOKENS {
        let token = bpe.decode_bytes(&[rank]).unwrap_or_else(|_| panic!("o200k_base has no rank {rank}"));
        let len = u8::try_from(token.len()).expect("an o200k_base token is shorter than 256 bytes");
        lengths.push(len);
        bytes.extend_from_slice(&token);
    }
    let mut table = lengths;
    table.extend_from_slice(&bytes);
    assert!(bpe.decode_bytes(&[TOKENS]).is_err(), "o200k_base has more than {TOKENS} tokens");
    let out = PathBuf::from(std::env::var_os("OUT_DIR").expect("cargo sets OUT_DIR"));
    std::fs::write(out.join("o200k_base.bin"), table).expect("writing the token table");
}

//! Writes the `o200k_base` token table that `src/tokens.rs` embeds: every token's length byte
//! in rank order, then every token's bytes in the same order, LZMA-compressed. tiktoken-rs
//! embeds the same table as base64 text with the ranks spelled out, which is about 0.6 MB more
//! after gzip. The hosted Worker's bundle is limited by its size after gzip: the plain table is
//! 1.6 MB, 992 KB under gzip, and 814 KB as LZMA (which gzip cannot shrink further), so LZMA
//! gives the bundle about 175 KB back for a small decoder and one decode at first count.

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
    std::fs::write(out.join("o200k_base.lzma"), compress(&table)).expect("writing the token table");
}

/// The table in the `.lzma` format lzma-rs reads, at xz's strongest setting; four literal
/// context bits suit the text-like token bytes, and the dictionary covers the whole table.
fn compress(table: &[u8]) -> Vec<u8> {
    use std::io::Write;

    use liblzma::stream::{LzmaOptions, PRESET_EXTREME, Stream};
    let mut options = LzmaOptions::new_preset(9 | PRESET_EXTREME).expect("xz's preset 9e exists");
    options.literal_context_bits(4).dict_size(4 << 20);
    let stream = Stream::new_lzma_encoder(&options).expect("an LZMA encoder with preset 9e");
    let mut encoder = liblzma::write::XzEncoder::new_stream(Vec::new(), stream);
    encoder.write_all(table).expect("compressing the token table");
    encoder.finish().expect("compressing the token table")
}

//! The one token counter every budget uses (describe output, the fixed surface, previews).
//!
//! It counts with the `o200k_base` encoding, from a compact table compiled into the binary (see
//! `build.rs`), so counting never downloads anything. The encoder is built (the table decoded)
//! once per process, at the first count, and shared.

use std::sync::OnceLock;

use rustc_hash::FxHashMap;
use tiktoken_rs::{CoreBPE, O200K_BASE_PAT_STR, Rank};

/// Every `o200k_base` token's length in rank order (one byte each), then their bytes; LZMA.
static TABLE: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/o200k_base.lzma"));
/// Tokens in the table (ranks 0 to 199,997).
const TOKENS: usize = 199_998;

fn encoder() -> &'static CoreBPE {
    static ENCODER: OnceLock<CoreBPE> = OnceLock::new();
    ENCODER.get_or_init(build)
}

/// Decodes the table and builds the encoder: what the first count in a process pays
/// (benchmarked in `benches/describe.rs`; everything else goes through [`count`]).
#[doc(hidden)]
pub fn build() -> CoreBPE {
    let mut table = Vec::with_capacity(1_600_000);
    lzma_rs::lzma_decompress(&mut &TABLE[..], &mut table).expect("the embedded token table decodes");
    let mut ranks: FxHashMap<Vec<u8>, Rank> = FxHashMap::default();
    ranks.reserve(200_000);
    let (lengths, mut rest) = table.split_at(TOKENS);
    for (rank, &len) in lengths.iter().enumerate() {
        let Some((token, tail)) = rest.split_at_checked(usize::from(len)) else { break };
        ranks.insert(token.to_vec(), rank as Rank);
        rest = tail;
    }
    let special: FxHashMap<String, Rank> =
        [("<|endoftext|>".to_owned(), 199_999), ("<|endofprompt|>".to_owned(), 200_018)]
            .into_iter()
            .collect();
    CoreBPE::new(ranks, special, O200K_BASE_PAT_STR).expect("the o200k pattern compiles")
}

/// Tokens in `text` under `o200k_base`.
pub fn count(text: &str) -> usize {
    encoder().encode_ordinary(text).len()
}

#[cfg(test)]
mod tests {
    #[test]
    fn counts_offline() {
        assert_eq!(super::count(""), 0);
        assert_eq!(super::count("hello world"), 2);
        assert!(
            super::count(
                "declare const github: { createIssue(input: { title: string }): Promise<unknown> };"
            ) > 10
        );
    }

    #[test]
    fn the_compact_table_encodes_as_tiktoken_does() {
        let reference = tiktoken_rs::o200k_base().unwrap();
        for text in [
            "hello world",
            "declare const github: { createIssue(input: { title: string }): Promise<unknown> };",
            "Ünïcödé ✓ 日本語のテキスト 🚀🚀 emoji, tabs\tand\nnewlines   spaces",
            "<|endoftext|> is ordinary text here",
            &"abc123 ".repeat(500),
        ] {
            assert_eq!(super::encoder().encode_ordinary(text), reference.encode_ordinary(text), "{text}");
        }
    }
}

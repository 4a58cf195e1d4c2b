//! The one token counter every budget uses (describe output, the fixed surface, previews).
//!
//! It counts with the `o200k_base` encoding from `tiktoken-rs`, whose tables are compiled into
//! the binary, so counting never downloads anything. The encoder is built once per process
//! (≈ 0.2 s) and shared.

use std::sync::OnceLock;

use tiktoken_rs::CoreBPE;

fn encoder() -> &'static CoreBPE {
    static ENCODER: OnceLock<CoreBPE> = OnceLock::new();
    ENCODER.get_or_init(|| tiktoken_rs::o200k_base().expect("the o200k tables are embedded"))
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
}

//! Token counting with OpenAI's `cl100k_base` encoding (tiktoken-rs; the BPE
//! ranks are compiled into the binary, so this works offline).
//!
//! The encoder is built once, on first use, and shared. Counting is
//! `encode_ordinary(text).len()`: special-token text such as
//! `<|endoftext|>` is counted as ordinary text.

use std::sync::OnceLock;
use tiktoken_rs::CoreBPE;

static BPE: OnceLock<Option<CoreBPE>> = OnceLock::new();

fn bpe() -> Option<&'static CoreBPE> {
    BPE.get_or_init(|| tiktoken_rs::cl100k_base().ok()).as_ref()
}

/// The number of `cl100k_base` tokens in `text`.
///
/// Building the encoder from its embedded ranks cannot fail in practice; if
/// it ever did, this falls back to one token per 4 bytes (rounded up) rather
/// than panicking.
pub fn count_tokens(text: &str) -> usize {
    if text.is_empty() {
        return 0;
    }
    match bpe() {
        Some(bpe) => bpe.encode_ordinary(text).len(),
        None => text.len().div_ceil(4),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_counts() {
        assert_eq!(count_tokens(""), 0);
        assert_eq!(count_tokens("hello world"), 2);
        // "tiktoken is great!" is 6 tokens in cl100k_base.
        assert_eq!(count_tokens("tiktoken is great!"), 6);
        assert_eq!(count_tokens("<|endoftext|>"), count_tokens("<|endoftext|>"));
        assert!(count_tokens("<|endoftext|>") > 1);
    }
}

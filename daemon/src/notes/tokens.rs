//! Swival's token counts for memory budgets: tiktoken's `cl100k_base`,
//! or, where it cannot load, Swival's fallback of one token a byte.

use std::sync::LazyLock;
use tiktoken_rs::CoreBPE;

/// The encoder, loaded on first use; `None` when its data would not load.
static ENCODER: LazyLock<Option<CoreBPE>> = LazyLock::new(|| tiktoken_rs::cl100k_base().ok());

/// The number of tokens in `text` (Swival's `count_tokens`).
pub fn count(text: &str) -> usize {
    match ENCODER.as_ref() {
        Some(bpe) => bpe.encode_ordinary(text).len(),
        None => text.len(),
    }
}

/// `text` cut to at most `max` tokens (Swival's `truncate_to_tokens`); a
/// character split by the cut is replaced, as tiktoken's decode does.
pub fn truncate(text: &str, max: usize) -> String {
    let Some(bpe) = ENCODER.as_ref() else {
        let bytes = &text.as_bytes()[..max.min(text.len())];
        return String::from_utf8_lossy(bytes).into_owned();
    };
    let tokens = bpe.encode_ordinary(text);
    if tokens.len() <= max {
        return text.to_owned();
    }
    match bpe.decode_bytes(&tokens[..max]) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).into_owned(),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_are_cl100k_base() {
        // tiktoken: len(enc.encode("hello world")) == 2.
        assert_eq!(count("hello world"), 2);
        assert_eq!(truncate("hello world again", 2), "hello world");
        assert_eq!(truncate("short", 10), "short");
    }
}

//! Finding where a run of plain string bytes ends, eight bytes at a time.
//!
//! A JSON string's contents run until a quote, a backslash or a control character (U+0000 to
//! U+001F): [`plain_len`] gives the length of that run. Whole words of eight bytes are tested at
//! once; the word holding the first such byte, and the bytes after the last whole word, are
//! looked at one byte at a time, so the answer is always the byte-by-byte one. It decides
//! nothing: [`crate::canonical_text`] reads a string's contents with it, and the whole-file pass
//! of `verify` that counts values skips strings with it.

/// One in every byte of a word.
const ONES: u64 = u64::from_ne_bytes([0x01; 8]);
/// The high bit of every byte of a word.
const HIGHS: u64 = u64::from_ne_bytes([0x80; 8]);

/// The high bit of some byte of the result is set exactly when some byte of `word` is below `n`
/// (for `n` at most 0x80).
const fn below(word: u64, n: u8) -> u64 {
    word.wrapping_sub(ONES * n as u64) & !word & HIGHS
}

/// Nonzero exactly when some byte of `word` is a quote, a backslash or a control character.
const fn stops(word: u64) -> u64 {
    below(word, 0x20)
        | below(word ^ (ONES * b'"' as u64), 1)
        | below(word ^ (ONES * b'\\' as u64), 1)
}

/// Whether `byte` ends a run of plain string bytes.
const fn is_stop(byte: u8) -> bool {
    byte == b'"' || byte == b'\\' || byte < 0x20
}

/// The number of bytes at the start of `bytes` that are neither a quote, a backslash nor a
/// control character (all of `bytes` when none is).
pub fn plain_len(bytes: &[u8]) -> usize {
    let mut at = 0;
    for chunk in bytes.chunks_exact(8) {
        let Ok(word) = <[u8; 8]>::try_from(chunk).map(u64::from_ne_bytes) else {
            break;
        };
        if stops(word) != 0 {
            break;
        }
        at += 8;
    }
    let rest = bytes.get(at..).unwrap_or_default();
    at + rest.iter().position(|&b| is_stop(b)).unwrap_or(rest.len())
}

#[cfg(test)]
#[path = "trusted_tests/scan.rs"]
mod tests;

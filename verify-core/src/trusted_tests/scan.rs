//! Unit tests of `scan`: the word-at-a-time run length is the byte-by-byte one.
use super::*;
use proptest::prelude::*;

/// The answer byte by byte.
fn plain_len_bytewise(bytes: &[u8]) -> usize {
    bytes
        .iter()
        .position(|&b| is_stop(b))
        .unwrap_or(bytes.len())
}

/// Every byte value at every place of runs up to three words long, among plain bytes of
/// several kinds (ASCII, the high bit set, one below and one above each stop byte).
#[test]
fn every_byte_at_every_place_stops_where_it_should() {
    for filler in [b'a', 0xff, 0x80, 0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f] {
        for len in 0..=24 {
            for at in 0..len {
                for byte in 0..=255u8 {
                    let mut bytes = vec![filler; len];
                    bytes[at] = byte;
                    let expected = plain_len_bytewise(&bytes);
                    assert_eq!(
                        plain_len(&bytes),
                        expected,
                        "{filler:#x} {len} {at} {byte:#x}"
                    );
                    if is_stop(byte) {
                        assert_eq!(expected, at);
                    } else {
                        assert_eq!(expected, len);
                    }
                }
            }
        }
    }
}

/// The word test alone is exact: a word is flagged when, and only when, one of its bytes is a
/// stop (a word wrongly flagged would cost only time; one wrongly passed would skip a stop).
#[test]
fn a_word_is_flagged_exactly_when_it_holds_a_stop() {
    for filler in 0..=255u8 {
        for byte in 0..=255u8 {
            for at in 0..8 {
                let mut bytes = [filler; 8];
                bytes[at] = byte;
                let flagged = stops(u64::from_ne_bytes(bytes)) != 0;
                assert_eq!(
                    flagged,
                    is_stop(filler) || is_stop(byte),
                    "{filler:#x} {byte:#x} {at}"
                );
            }
        }
    }
}

#[test]
fn a_run_without_a_stop_is_whole() {
    assert_eq!(plain_len(b""), 0);
    assert_eq!(plain_len("0123456789abcdef\u{e9}\u{1f600}".as_bytes()), 22);
    assert_eq!(plain_len(b"abcdefgh\"abcdefg"), 8);
    assert_eq!(plain_len(b"abcdefg\\"), 7);
    assert_eq!(plain_len(b"abcdefghijklmnop\x1f"), 16);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(4000))]
    /// Any bytes at all, and bytes drawn mostly from the plain ones.
    #[test]
    fn word_at_a_time_is_byte_by_byte(bytes in prop::collection::vec(any::<u8>(), 0..80)) {
        prop_assert_eq!(plain_len(&bytes), plain_len_bytewise(&bytes));
    }

    #[test]
    fn long_plain_runs_end_at_the_first_stop(
        bytes in prop::collection::vec(prop::sample::select(vec![b'a', 0x7f, 0xc3, 0x20, b'"', b'\\', 0x00, 0x1f, 0x80]), 0..200)
    ) {
        prop_assert_eq!(plain_len(&bytes), plain_len_bytewise(&bytes));
    }
}

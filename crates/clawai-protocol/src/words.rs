//! Eight bytes at a time: which bytes of a `u64` word equal a byte, or fall below one,
//! without a branch per byte (the "has zero byte" trick). Short strings are scanned
//! this way on every message: the skim's string ends, the audit trail's escapes (and
//! the one-pass reader's string ends, the same bytes: [`first_to_escape`]) and the
//! policy's test for plain paths.
//!
//! A flag is the high bit of a byte. Every byte that matches is flagged and the lowest
//! flag is always a match, but a byte just above a match may be flagged too (a borrow
//! runs upwards): callers take the lowest flag, or confirm a flag byte by byte.

/// `0x01` in every byte.
const ONES: u64 = 0x0101_0101_0101_0101;
/// `0x80` in every byte.
const HIGHS: u64 = 0x8080_8080_8080_8080;

/// Eight bytes as one word, the first byte lowest. Panics unless `eight` has 8 bytes.
pub fn load(eight: &[u8]) -> u64 {
    u64::from_le_bytes(eight.try_into().expect("eight bytes"))
}

/// Up to eight bytes as one word, the first byte lowest, the missing ones set to `pad`
/// (a byte the caller's test does not flag): the tail of a string tested like the rest.
pub fn load_padded(bytes: &[u8], pad: u8) -> u64 {
    let mut eight = [pad; 8];
    eight[..bytes.len()].copy_from_slice(bytes);
    u64::from_le_bytes(eight)
}

/// Flags the bytes of `word` equal to `b` (an ASCII byte: bytes of 0x80 and above are
/// never flagged).
pub fn bytes_equal(word: u64, b: u8) -> u64 {
    debug_assert!(b.is_ascii());
    (word ^ (ONES * u64::from(b))).wrapping_sub(ONES) & !word & HIGHS
}

/// Flags the bytes of `word` below `limit` (an ASCII byte: at 0x80 a borrow from a
/// match below could hide a match above).
pub fn bytes_below(word: u64, limit: u8) -> u64 {
    debug_assert!(limit.is_ascii());
    word.wrapping_sub(ONES * u64::from(limit)) & !word & HIGHS
}

/// The index of the lowest flagged byte.
pub fn first_flagged(flags: u64) -> Option<usize> {
    (flags != 0).then(|| (flags.trailing_zeros() / 8) as usize)
}

/// The index of the first byte that a JSON string must escape: `"`, `\\` or a control
/// character. Eight bytes at a time, the tail too, padded with a byte that needs no
/// escape: the audit trail's escaper and the one-pass reader's string end.
#[inline]
pub fn first_to_escape(bytes: &[u8]) -> Option<usize> {
    // The lowest flag of each test is a true match, so the lowest of all of them is.
    let flagged =
        |word: u64| first_flagged(bytes_below(word, 0x20) | bytes_equal(word, b'"') | bytes_equal(word, b'\\'));
    let mut chunks = bytes.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        if let Some(i) = flagged(load(chunk)) {
            return Some(offset + i);
        }
        offset += 8;
    }
    let tail = chunks.remainder();
    if tail.is_empty() {
        return None;
    }
    flagged(load_padded(tail, b' ')).map(|i| offset + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What the flags must say about `bytes` for the byte test `is`.
    fn check(bytes: [u8; 8], flags: u64, is: impl Fn(u8) -> bool) -> Result<(), String> {
        let flagged = |i: usize| flags & (0x80 << (8 * i)) != 0;
        if let Some(missed) = (0..8).find(|&i| is(bytes[i]) && !flagged(i)) {
            return Err(format!("byte {missed} of {bytes:?} missed"));
        }
        if let Some(first) = first_flagged(flags).filter(|&i| !is(bytes[i])) {
            return Err(format!("lowest flag on byte {first} of {bytes:?}, which does not match"));
        }
        if flags & !HIGHS != 0 {
            return Err("flags outside the high bits".into());
        }
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]
        #[test]
        fn equal_flags_every_match_and_the_lowest_flag_is_one(
            bytes in proptest::array::uniform8(proptest::sample::select(vec![0u8, 1, b'"', b'#', b'!', b'\\', b']', b'/', b'.', 0x7f, 0x80, 0xA2, 0xDC, 0xff])),
            b in proptest::sample::select(vec![0u8, 1, b'"', b'\\', b'/', b'.', b'%', 0x7f]),
        ) {
            let result = check(bytes, bytes_equal(load(&bytes), b), |x| x == b);
            proptest::prop_assert!(result.is_ok(), "{:?}", result);
        }

        #[test]
        fn below_flags_every_match_and_the_lowest_flag_is_one(
            bytes in proptest::array::uniform8(proptest::prelude::any::<u8>()),
            limit in 0u8..0x80,
        ) {
            let result = check(bytes, bytes_below(load(&bytes), limit), |x| x < limit);
            proptest::prop_assert!(result.is_ok(), "{:?}", result);
        }

        #[test]
        fn first_to_escape_finds_the_first_quote_backslash_or_control(
            bytes in proptest::collection::vec(proptest::sample::select(vec![0u8, 0x1f, b' ', b'"', b'\\', b'a', 0x7f, 0x80, 0xff]), 0..40),
        ) {
            let expected = bytes.iter().position(|&b| b == b'"' || b == b'\\' || b < 0x20);
            proptest::prop_assert_eq!(first_to_escape(&bytes), expected);
        }
    }
}

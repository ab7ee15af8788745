//! What the tools return of bytes they read: text, cut at a cap. A leaf.

/// Keeps at most `cap` bytes of `bytes` as text: the valid UTF-8 up to there (a
/// character cut at the end is dropped), or `None` when the bytes are not text.
pub(crate) fn text_prefix(bytes: &[u8], cap: usize) -> Option<&str> {
    let kept = &bytes[..bytes.len().min(cap)];
    match std::str::from_utf8(kept) {
        Ok(text) => Some(text),
        // Only a character cut by the cap, in its last 3 bytes, is forgiven.
        Err(error) if error.error_len().is_none() && kept.len() - error.valid_up_to() < 4 => {
            Some(std::str::from_utf8(&kept[..error.valid_up_to()]).expect("valid up to here"))
        }
        Err(_) => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_text_prefix_drops_only_a_character_cut_at_the_cap() {
        assert_eq!(text_prefix("héllo".as_bytes(), 2), Some("h"));
        assert_eq!(text_prefix("héllo".as_bytes(), 3), Some("hé"));
        assert_eq!(text_prefix(b"ab\xffcd", 5), None);
        assert_eq!(text_prefix(b"abc", 10), Some("abc"));
    }
}

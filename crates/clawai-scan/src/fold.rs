//! The normalised reading the instruction detectors look at: hidden characters removed,
//! NFKC, and letters that only look like ASCII folded to it (UTS 39 confusables), so
//! `ig\u{200B}nore`, `ｉｇｎｏｒｅ` and Cyrillic `іgnоrе` all read `ignore`.

use std::borrow::Cow;

use unicode_normalization::UnicodeNormalization;

use crate::hidden::{classify, plain_ascii};

/// The folded reading of `text`. ASCII text without control characters is returned as it
/// is (the common case, and no allocation). Case is kept: the detectors ignore it.
pub(crate) fn fold(text: &str) -> Cow<'_, str> {
    if plain_ascii(text) {
        return Cow::Borrowed(text);
    }
    let visible = text.chars().filter(|&c| classify(c).is_none());
    let mut out = String::with_capacity(text.len());
    let mut one = [0u8; 4];
    for c in visible.nfkc() {
        if c.is_ascii() {
            out.push(c);
            continue;
        }
        // Only a character whose whole skeleton is ASCII is replaced: an accented letter
        // keeps its accent (its skeleton has a combining mark), and ASCII itself is never
        // re-mapped (UTS 39 would turn "m" into "rn" and "l" into "I").
        let skeleton: String = unicode_security::skeleton(c.encode_utf8(&mut one)).collect();
        if !skeleton.is_empty() && skeleton.is_ascii() {
            out.push_str(&skeleton);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_look_alikes_and_removes_hidden() {
        assert_eq!(fold("ig\u{200B}nore"), "ignore");
        assert_eq!(fold("ｉｇｎｏｒｅ"), "ignore");
        assert_eq!(fold("\u{456}gn\u{43E}r\u{435}"), "ignore");
        assert_eq!(fold("Grüße"), "Grüße");
        assert!(matches!(fold("plain text"), Cow::Borrowed(_)));
    }
}

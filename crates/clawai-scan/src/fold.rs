//! The normalised reading the instruction detectors look at: hidden characters removed,
//! NFKC, and letters that only look like ASCII folded to it (UTS 39 confusables), so
//! `ig\u{200B}nore`, `ｉｇｎｏｒｅ` and Cyrillic `іgnоrе` all read `ignore`.

#[cfg(test)]
use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::HashMap;

use unicode_normalization::{IsNormalized, UnicodeNormalization, is_nfkc_quick};

use crate::hidden::classify;
#[cfg(test)]
use crate::hidden::plain_ascii;

/// How many characters' foldings are remembered per thread (what one language and its
/// punctuation use; an attacker's thousands of distinct characters are folded anew).
const MEMO_LIMIT: usize = 4096;

thread_local! {
    static MEMO: RefCell<HashMap<char, Option<Box<str>>>> = RefCell::new(HashMap::new());
}

/// The folded reading of `text`. ASCII text without control characters is returned as it
/// is (the common case, and no allocation). Case is kept.
#[cfg(test)]
pub(crate) fn fold(text: &str) -> Cow<'_, str> {
    if plain_ascii(text) { Cow::Borrowed(text) } else { Cow::Owned(fold_owned(text)) }
}

/// [`fold`] of a text known not to be plain ASCII.
pub(crate) fn fold_owned(text: &str) -> String {
    let visible = text.chars().filter(|&c| classify(c).is_none()).map(|c| match c {
        // Line and paragraph separators break lines as `\n` does.
        '\u{2028}' | '\u{2029}' => '\n',
        _ => c,
    });
    let mut out = String::with_capacity(text.len());
    if is_nfkc_quick(visible.clone()) == IsNormalized::Yes {
        push_skeletons(&mut out, visible);
    } else {
        push_skeletons(&mut out, visible.nfkc());
    }
    out
}

fn push_skeletons(out: &mut String, chars: impl Iterator<Item = char>) {
    MEMO.with_borrow_mut(|memo| {
        for c in chars {
            if c.is_ascii() {
                out.push(c);
                continue;
            }
            let folded = match memo.get(&c) {
                Some(folded) => folded.clone(),
                None => {
                    let folded = ascii_skeleton(c);
                    if memo.len() < MEMO_LIMIT {
                        memo.insert(c, folded.clone());
                    }
                    folded
                }
            };
            match folded {
                Some(ascii) => out.push_str(&ascii),
                None => out.push(c),
            }
        }
    });
}

/// The UTS 39 skeleton of `c` when it is all ASCII: only such a character is replaced.
/// An accented letter keeps its accent (its skeleton has a combining mark), and ASCII
/// itself is never re-mapped (UTS 39 would turn "m" into "rn" and "l" into "I").
fn ascii_skeleton(c: char) -> Option<Box<str>> {
    let mut one = [0u8; 4];
    let skeleton: String = unicode_security::skeleton(c.encode_utf8(&mut one)).collect();
    (!skeleton.is_empty() && skeleton.is_ascii()).then(|| skeleton.into_boxed_str())
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
        assert_eq!(fold("e\u{301}"), "é");
        assert_eq!(fold("a\u{2028}b"), "a\nb");
        assert!(matches!(fold("plain text"), Cow::Borrowed(_)));
    }
}

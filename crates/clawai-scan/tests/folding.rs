//! Folding (hidden characters removed, NFKC, look-alike letters to ASCII) never turns
//! clean text into a finding: random word sequences and windows of the real corpus, and
//! the same text rewritten in fullwidth or Cyrillic look-alikes, stay clean.

mod support;

use std::sync::LazyLock;

use clawai_scan::{ItemKind, scan_item, scan_text};
use proptest::prelude::*;

static STRINGS: LazyLock<Vec<String>> = LazyLock::new(support::corpus_strings);
static WORDS: LazyLock<Vec<String>> = LazyLock::new(|| {
    // Only words that are clean on their own: a real description shows "`<!--" in a
    // code span and "--secret <secret>" as a placeholder, but taken out of their place
    // and joined to random words, they are the comment and the tag they look like.
    let mut words: Vec<String> = STRINGS
        .iter()
        .flat_map(|s| s.split_whitespace().map(str::to_owned))
        .filter(|word| {
            !word.contains("<!--")
                && scan_text(word).is_empty()
                && scan_item(ItemKind::Tool, &serde_json::json!({"name": "t", "description": word}), &[]).is_empty()
        })
        .collect();
    words.sort();
    words.dedup();
    words
});

fn clean(text: &str) -> Result<(), TestCaseError> {
    prop_assert_eq!(scan_text(text), vec![], "result {:?}", text);
    let tool = serde_json::json!({"name": "t", "description": text});
    prop_assert_eq!(scan_item(ItemKind::Tool, &tool, &[]), vec![], "description {:?}", text);
    Ok(())
}

/// `text` with `swap` applied to every character that is not the base of an emoji
/// sequence (a keycap "1️⃣" stays as it is: a fullwidth "１" takes no emoji selector).
fn rewrite(text: &str, swap: impl Fn(char) -> char) -> String {
    let chars: Vec<char> = text.chars().collect();
    let base = |i: usize| chars.get(i + 1).is_some_and(|&n| matches!(n, '\u{FE00}'..='\u{FE0F}' | '\u{20E3}'));
    chars.iter().enumerate().map(|(i, &c)| if base(i) { c } else { swap(c) }).collect()
}

/// ASCII letters, digits and punctuation as their fullwidth forms (NFKC folds them back).
fn fullwidth(text: &str) -> String {
    rewrite(text, |c| if ('!'..='~').contains(&c) { char::from_u32(c as u32 + 0xFEE0).unwrap() } else { c })
}

/// Latin letters as the Cyrillic letters that look the same (confusable folding undoes it).
fn cyrillic(text: &str) -> String {
    rewrite(text, |c| match c {
        'a' => 'а',
        'c' => 'с',
        'e' => 'е',
        'o' => 'о',
        'p' => 'р',
        'x' => 'х',
        'y' => 'у',
        'i' => 'і',
        _ => c,
    })
}

#[test]
fn the_corpus_is_large_enough() {
    assert!(STRINGS.len() > 3000, "{} strings", STRINGS.len());
    assert!(WORDS.len() > 3000, "{} words", WORDS.len());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn random_word_sequences_stay_clean(picks in prop::collection::vec(any::<prop::sample::Index>(), 1..60)) {
        let text: Vec<&str> = picks.iter().map(|i| WORDS[i.index(WORDS.len())].as_str()).collect();
        let text = text.join(" ");
        clean(&text)?;
        clean(&fullwidth(&text))?;
        clean(&cyrillic(&text))?;
    }

    #[test]
    fn windows_and_joins_of_corpus_strings_stay_clean(
        first in any::<prop::sample::Index>(),
        second in any::<prop::sample::Index>(),
        from in any::<prop::sample::Index>(),
        to in any::<prop::sample::Index>(),
    ) {
        let one = &STRINGS[first.index(STRINGS.len())];
        let two = &STRINGS[second.index(STRINGS.len())];
        // Cut at whitespace, so no emoji sequence is split from its joiner or selector.
        let cuts: Vec<usize> = std::iter::once(0)
            .chain(one.char_indices().filter(|(_, c)| c.is_whitespace()).map(|(i, _)| i))
            .chain(std::iter::once(one.len()))
            .collect();
        let (a, b) = (cuts[from.index(cuts.len())], cuts[to.index(cuts.len())]);
        let window = &one[a.min(b)..a.max(b)];
        let joined = format!("{window} {two}");
        clean(&joined)?;
        clean(&fullwidth(&joined))?;
        clean(&cyrillic(&joined))?;
    }
}

//! Query words the index does not know, widened to words it does.
//!
//! A known word matches only itself. An unknown word of at least 3 letters matches the
//! known words it starts (a partial word: `conf` → `config`, `configuration`); failing
//! that, one of at least 4 letters matches the known words within one edit (two from 7
//! letters on; an edit is an insertion, a deletion, a substitution or a swap of two
//! neighbours), so `memroy` finds `memory`. Widened matches count less than exact ones.

use std::collections::BTreeMap;

/// How much a match through a prefix counts against an exact one.
const PREFIX_WEIGHT: f32 = 0.7;
/// How much a match within one edit counts.
const ONE_EDIT_WEIGHT: f32 = 0.6;
/// How much a match within two edits counts.
const TWO_EDITS_WEIGHT: f32 = 0.4;
/// At most this many known words stand for one partial word (the shortest win: the
/// closest to what was typed).
const MAX_PREFIX_MATCHES: usize = 16;

/// Every known term: by spelling for exact and prefix look-ups, and by length in letters
/// so that the edit-distance scan only compares words whose length is within reach.
#[derive(Debug, Clone, Default)]
pub(super) struct Vocabulary {
    by_spelling: BTreeMap<String, u32>,
    by_length: Vec<Vec<(Box<[char]>, u32)>>,
}

impl Vocabulary {
    /// The vocabulary of these terms (spelling → term number).
    pub(super) fn new(by_spelling: BTreeMap<String, u32>) -> Vocabulary {
        let mut by_length: Vec<Vec<(Box<[char]>, u32)>> = Vec::new();
        for (known, &term) in &by_spelling {
            let letters: Box<[char]> = known.chars().collect();
            if by_length.len() <= letters.len() {
                by_length.resize_with(letters.len() + 1, Vec::new);
            }
            by_length[letters.len()].push((letters, term));
        }
        Vocabulary { by_spelling, by_length }
    }

    /// The known terms `word` stands for, with how much each counts (1 for the word itself).
    pub(super) fn expand(&self, word: &str) -> Vec<(u32, f32)> {
        if let Some(&term) = self.by_spelling.get(word) {
            return vec![(term, 1.0)];
        }
        let letters = word.chars().count();
        if letters >= 3 {
            let mut prefixed: Vec<(&String, u32)> = self
                .by_spelling
                .range(word.to_owned()..)
                .take_while(|(known, _)| known.starts_with(word))
                .map(|(known, &term)| (known, term))
                .collect();
            if !prefixed.is_empty() {
                prefixed.sort_by_key(|(known, _)| (known.len(), known.as_str()));
                prefixed.truncate(MAX_PREFIX_MATCHES);
                return prefixed.into_iter().map(|(_, term)| (term, PREFIX_WEIGHT)).collect();
            }
        }
        if letters < 4 {
            return Vec::new();
        }
        let max_edits = if letters >= 7 { 2 } else { 1 };
        let typed: Vec<char> = word.chars().collect();
        let mut scratch = Vec::new();
        let lengths = letters.saturating_sub(max_edits)..=letters + max_edits;
        let candidates = lengths.filter_map(|length| self.by_length.get(length)).flatten();
        candidates
            .filter_map(|(known, term)| match edit_distance(&typed, known, max_edits, &mut scratch) {
                1 => Some((*term, ONE_EDIT_WEIGHT)),
                2 if max_edits >= 2 => Some((*term, TWO_EDITS_WEIGHT)),
                _ => None,
            })
            .collect()
    }
}

/// Optimal-string-alignment distance between `a` and `b`, or `limit + 1` once it is sure
/// to exceed `limit`.
/// `table` is scratch space, reused between calls to spare an allocation per word.
fn edit_distance(a: &[char], b: &[char], limit: usize, table: &mut Vec<usize>) -> usize {
    let width = b.len() + 1;
    table.clear();
    table.resize(width * (a.len() + 1), 0);
    let at = |i: usize, j: usize| i * width + j;
    for (j, cell) in table.iter_mut().take(width).enumerate() {
        *cell = j;
    }
    for i in 1..=a.len() {
        table[at(i, 0)] = i;
        let mut row_min = i;
        for j in 1..=b.len() {
            let cost = usize::from(a[i - 1] != b[j - 1]);
            let mut best = (table[at(i - 1, j)] + 1).min(table[at(i, j - 1)] + 1).min(table[at(i - 1, j - 1)] + cost);
            if i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] {
                best = best.min(table[at(i - 2, j - 2)] + 1);
            }
            table[at(i, j)] = best;
            row_min = row_min.min(best);
        }
        if row_min > limit {
            return limit + 1;
        }
    }
    table[at(a.len(), b.len())]
}

#[cfg(test)]
mod tests {
    use super::{Vocabulary, edit_distance};

    fn vocabulary(words: &[&str]) -> Vocabulary {
        Vocabulary::new(words.iter().zip(0..).map(|(w, i)| ((*w).to_owned(), i)).collect())
    }

    fn distance(a: &str, b: &str) -> usize {
        let a: Vec<char> = a.chars().collect();
        let b: Vec<char> = b.chars().collect();
        edit_distance(&a, &b, 5, &mut Vec::new())
    }

    #[test]
    fn edit_distance_counts_swaps_as_one_edit() {
        assert_eq!(distance("memroy", "memory"), 1);
        assert_eq!(distance("swarm", "swarm"), 0);
        assert_eq!(distance("agnt", "agent"), 1);
        assert_eq!(distance("kitten", "sitting"), 3);
    }

    #[test]
    fn a_known_word_matches_only_itself() {
        let known = vocabulary(&["config", "configuration", "memory"]);
        assert_eq!(known.expand("config"), [(0, 1.0)]);
    }

    #[test]
    fn a_partial_word_matches_the_words_it_starts() {
        let known = vocabulary(&["config", "configuration", "memory"]);
        let terms: Vec<u32> = known.expand("conf").into_iter().map(|(t, _)| t).collect();
        assert_eq!(terms, [0, 1]);
        assert!(known.expand("co").is_empty(), "two letters are too few to guess from");
    }

    #[test]
    fn a_misspelt_word_matches_words_one_edit_away() {
        let known = vocabulary(&["memory", "member", "swarm"]);
        let terms: Vec<u32> = known.expand("memroy").into_iter().map(|(t, _)| t).collect();
        assert_eq!(terms, [0]);
        assert!(known.expand("zzzz").is_empty());
    }
}

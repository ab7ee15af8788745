//! The ranking `search_tools` runs: lexical alone, or lexical and embedding fused.

use super::fusion::fuse;
use super::vectors::Vectors;
use super::{Hit, Index};

/// How deep each ranking is read before fusion (at least the limit asked for). On BFCL
/// (`docs/gateway.md`) the top 10 of each fused best: deeper lists let the weaker
/// ranking's tail outvote the stronger's head (pooled nDCG@10 .789 at 10, .787 at 20,
/// .785 at 30).
pub const FUSION_DEPTH: usize = 10;

/// The best `limit` documents for `query` among those `admit` accepts.
///
/// Without `semantic` (no model, or nothing embedded yet) this is exactly
/// [`Index::search`]. With it (the documents' vectors and the query's), both rankings are
/// filtered by `admit` before they are cut and fused, so a rejected document neither
/// appears nor moves an admitted one.
pub fn rank(
    index: &Index,
    semantic: Option<(&Vectors, &[f32])>,
    query: &str,
    limit: usize,
    admit: impl Fn(usize) -> bool + Copy,
) -> Vec<Hit> {
    match semantic {
        None => index.search(query, limit, admit),
        Some((vectors, query_vector)) => {
            let depth = limit.max(FUSION_DEPTH);
            let lexical = index.search(query, depth, admit);
            let nearest = vectors.nearest(query_vector, depth, admit);
            fuse(&lexical, &nearest, limit)
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::{Index, Vectors, rank};
    use crate::search::Document;

    fn doc(id: usize, name: &str, description: &str) -> Document {
        Document {
            id,
            name: format!("srv__{name}"),
            server: "srv".to_owned(),
            description: description.to_owned(),
            parameters: Vec::new(),
        }
    }

    fn unit(v: &[f32]) -> Vec<f32> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt().max(1e-6);
        v.iter().map(|x| x / norm).collect()
    }

    fn catalog() -> Index {
        Index::new(vec![
            doc(0, "add", "Add two numbers"),
            doc(1, "send_email", "Send an email"),
            doc(2, "symptom_search", "Look up medical symptoms"),
            doc(3, "delete_everything", "Erase all data"),
        ])
    }

    /// Vectors in which `add` (0) is nearest to the query and `delete_everything` (3) is
    /// nearer still: only a filter keeps 3 out.
    fn vectors() -> Vectors {
        let mut vectors = Vectors::new(4, 3);
        vectors.set(0, &unit(&[1.0, 0.1, 0.0]));
        vectors.set(1, &unit(&[0.0, 1.0, 0.0]));
        vectors.set(2, &unit(&[0.0, 0.0, 1.0]));
        vectors.set(3, &unit(&[1.0, 0.0, 0.0]));
        vectors
    }

    fn ids(hits: &[crate::search::Hit]) -> Vec<usize> {
        hits.iter().map(|h| h.id).collect()
    }

    #[test]
    fn the_embedding_finds_what_no_word_matches() {
        let query = unit(&[1.0, 0.0, 0.0]);
        let index = catalog();
        assert!(rank(&index, None, "what is 17 plus 25", 5, |_| true).is_empty());
        let hits = rank(&index, Some((&vectors(), &query)), "what is 17 plus 25", 2, |_| true);
        assert_eq!(ids(&hits), [3, 0]);
    }

    #[test]
    fn a_rejected_document_is_never_a_hit_however_near() {
        let query = unit(&[1.0, 0.0, 0.0]);
        let hits = rank(&catalog(), Some((&vectors(), &query)), "erase data add numbers", 5, |id| id != 3);
        assert!(!ids(&hits).contains(&3), "{hits:?}");
        assert_eq!(hits[0].id, 0);
    }

    #[test]
    fn without_vectors_the_ranking_is_the_lexical_one() {
        let index = catalog();
        let query = "send email numbers";
        let lexical = index.search(query, 5, |_| true);
        assert_eq!(rank(&index, None, query, 5, |_| true), lexical);
    }

    proptest! {
        /// Nothing of a rejected document reaches the result: with its vector changed at
        /// will, the hits and their scores are the same.
        #[test]
        fn rejected_vectors_do_not_leak_through_scores(
            rejected in proptest::collection::vec(any::<bool>(), 4),
            seen in proptest::collection::vec(-1.0f32..1.0, 12),
            other in proptest::collection::vec(-1.0f32..1.0, 12),
            query in proptest::collection::vec(-1.0f32..1.0, 3),
            words in "(add|email|symptoms|erase|data|numbers| ){1,6}",
        ) {
            let index = catalog();
            let query = unit(&query);
            let mut first = Vectors::new(4, 3);
            let mut second = Vectors::new(4, 3);
            for id in 0..4 {
                first.set(id, &unit(&seen[id * 3..id * 3 + 3]));
                let changed = if rejected[id] { &other } else { &seen };
                second.set(id, &unit(&changed[id * 3..id * 3 + 3]));
            }
            let admit = |id: usize| !rejected[id];
            let a = rank(&index, Some((&first, &query)), &words, 4, admit);
            let b = rank(&index, Some((&second, &query)), &words, 4, admit);
            prop_assert_eq!(&a, &b);
            prop_assert!(a.iter().all(|hit| !rejected[hit.id]));
        }
    }
}

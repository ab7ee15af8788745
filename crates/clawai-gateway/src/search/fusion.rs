//! Reciprocal-rank fusion of the lexical and the embedding rankings.
//!
//! Why ranks and not scores: BM25F scores are unbounded and depend on the query's length,
//! cosines sit in a narrow band that depends on the model; ranks need no calibration
//! between the two. Each list gives a document `weight / (K + rank)` (rank from 1), and a
//! document's fused score is the sum over the lists it is in (Cormack, Clarke & Büttcher
//! 2009, K = 60). Equal weights, chosen on BFCL (`docs/gateway.md`): weighting the
//! lexical list 1.25–2× won back part of what multi-request questions lose to the
//! embedding but cost .016 pooled nDCG@10; K = 20 changed nothing.

use std::collections::HashMap;

use super::Hit;

/// The rank offset: how fast a lower rank stops counting.
pub const RRF_K: f32 = 60.0;
/// The weight of the lexical ranking; the embedding ranking's is 1.
pub const LEXICAL_WEIGHT: f32 = 1.0;

/// The best `limit` documents of the two rankings (each best first), fused; equal fused
/// scores in ascending id order. Only documents in one of the lists can be returned: the
/// caller has filtered both before ranking.
pub fn fuse(lexical: &[Hit], semantic: &[Hit], limit: usize) -> Vec<Hit> {
    fuse_with(lexical, semantic, limit, RRF_K, LEXICAL_WEIGHT)
}

/// [`fuse`] with another rank offset `k` and lexical weight (to compare them on a
/// benchmark).
pub fn fuse_with(lexical: &[Hit], semantic: &[Hit], limit: usize, k: f32, lexical_weight: f32) -> Vec<Hit> {
    let mut fused: HashMap<usize, f32> = HashMap::with_capacity(lexical.len() + semantic.len());
    for (list, weight) in [(lexical, lexical_weight), (semantic, 1.0)] {
        for (rank, hit) in list.iter().enumerate() {
            *fused.entry(hit.id).or_default() += weight / (k + rank as f32 + 1.0);
        }
    }
    let mut hits: Vec<Hit> = fused.into_iter().map(|(id, score)| Hit { id, score }).collect();
    hits.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
    hits.truncate(limit);
    hits
}

#[cfg(test)]
mod tests {
    use super::{Hit, RRF_K, fuse};

    fn hits(ids: &[usize]) -> Vec<Hit> {
        ids.iter().enumerate().map(|(rank, &id)| Hit { id, score: 10.0 - rank as f32 }).collect()
    }

    fn ids(hits: &[Hit]) -> Vec<usize> {
        hits.iter().map(|h| h.id).collect()
    }

    #[test]
    fn a_document_both_rankings_like_beats_one_only_one_puts_first() {
        let fused = fuse(&hits(&[1, 2, 3]), &hits(&[4, 2, 5]), 5);
        assert_eq!(fused[0].id, 2);
        assert_eq!(ids(&fused), [2, 1, 4, 3, 5]);
    }

    #[test]
    fn scores_are_the_sum_of_reciprocal_ranks() {
        let fused = fuse(&hits(&[7]), &hits(&[8, 7]), 2);
        let expected = 1.0 / (RRF_K + 1.0) + 1.0 / (RRF_K + 2.0);
        assert_eq!(fused[0].id, 7);
        assert!((fused[0].score - expected).abs() < 1e-6);
        assert!((fused[1].score - 1.0 / (RRF_K + 1.0)).abs() < 1e-6);
    }

    #[test]
    fn an_empty_ranking_leaves_the_other_in_its_order() {
        assert_eq!(ids(&fuse(&hits(&[3, 1, 2]), &[], 10)), [3, 1, 2]);
        assert_eq!(ids(&fuse(&[], &hits(&[9, 4]), 10)), [9, 4]);
        assert!(fuse(&[], &[], 10).is_empty());
    }

    #[test]
    fn limit_keeps_the_best_and_ties_go_to_the_lower_id() {
        let fused = fuse(&hits(&[5, 6]), &hits(&[6, 5]), 1);
        assert_eq!(ids(&fused), [5]);
    }
}

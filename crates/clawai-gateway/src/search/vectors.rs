//! Exact nearest-neighbour search over the embedded documents.
//!
//! Why exact and not HNSW (seed 001 names it): at the sizes a gateway has (measured up to
//! 5,000 tools, see `docs/gateway.md`) one pass of dot products over unit vectors is a
//! fraction of a millisecond, returns the true nearest neighbours, costs no build time
//! when the catalog changes, and makes filtering before ranking trivial (an approximate
//! graph walk would have to be told to skip what a caller may not see).

use super::Hit;

/// Unit vectors of the documents, by [`super::Document::id`]; a document whose text is
/// not embedded yet has none (it is ranked lexically only until it is).
#[derive(Debug, Clone, Default)]
pub struct Vectors {
    dimension: usize,
    /// `dimension` floats per document, in id order (zeros where absent).
    data: Vec<f32>,
    present: Vec<bool>,
}

impl Vectors {
    /// Room for `documents` vectors of `dimension` floats, none present yet.
    pub fn new(documents: usize, dimension: usize) -> Vectors {
        Vectors { dimension, data: vec![0.0; documents * dimension], present: vec![false; documents] }
    }

    /// Sets document `id`'s vector; one of another dimension, or an id out of range, is
    /// ignored (the document stays lexical-only).
    pub fn set(&mut self, id: usize, vector: &[f32]) {
        if vector.len() != self.dimension || id >= self.present.len() {
            return;
        }
        self.data[id * self.dimension..(id + 1) * self.dimension].copy_from_slice(vector);
        self.present[id] = true;
    }

    /// How many documents have a vector.
    pub fn embedded(&self) -> usize {
        self.present.iter().filter(|p| **p).count()
    }

    /// The number of documents (with a vector or not).
    pub fn documents(&self) -> usize {
        self.present.len()
    }

    /// The length of each vector.
    pub fn dimension(&self) -> usize {
        self.dimension
    }

    /// The `limit` documents nearest to `query` (by cosine: all vectors are unit length)
    /// among those `admit` accepts, best first; equal scores in ascending id order.
    ///
    /// A rejected document is skipped before it is counted, so it never takes a place in
    /// the ranking and its similarity is never returned. `admit` is asked about documents
    /// in order of similarity until `limit` are admitted.
    pub fn nearest(&self, query: &[f32], limit: usize, mut admit: impl FnMut(usize) -> bool) -> Vec<Hit> {
        if limit == 0 || query.len() != self.dimension || self.dimension == 0 {
            return Vec::new();
        }
        let mut scored: Vec<Hit> = self
            .data
            .chunks_exact(self.dimension)
            .enumerate()
            .filter(|(id, _)| self.present[*id])
            .map(|(id, vector)| Hit { id, score: dot(query, vector) })
            .collect();
        scored.sort_unstable_by(|a, b| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id)));
        scored.into_iter().filter(|hit| admit(hit.id)).take(limit).collect()
    }
}

/// The dot product, in eight lanes so the compiler vectorises it.
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0f32; 8];
    let (a_chunks, b_chunks) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = a_chunks.remainder().iter().zip(b_chunks.remainder()).map(|(x, y)| x * y).sum();
    for (x, y) in a_chunks.zip(b_chunks) {
        for lane in 0..8 {
            lanes[lane] += x[lane] * y[lane];
        }
    }
    lanes.iter().sum::<f32>() + tail
}

#[cfg(test)]
mod tests {
    use super::Vectors;

    fn unit(v: &[f32]) -> Vec<f32> {
        let norm = v.iter().map(|x| x * x).sum::<f32>().sqrt();
        v.iter().map(|x| x / norm).collect()
    }

    fn table() -> Vectors {
        let mut vectors = Vectors::new(4, 2);
        vectors.set(0, &unit(&[1.0, 0.0]));
        vectors.set(1, &unit(&[0.0, 1.0]));
        vectors.set(2, &unit(&[1.0, 0.2]));
        vectors
    }

    #[test]
    fn nearest_first_and_absent_documents_are_not_ranked() {
        let hits = table().nearest(&unit(&[1.0, 0.1]), 10, |_| true);
        assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), [2, 0, 1]);
        assert!(hits[0].score > 0.99);
    }

    #[test]
    fn rejected_documents_take_no_place() {
        let hits = table().nearest(&unit(&[1.0, 0.1]), 2, |id| id != 2);
        assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), [0, 1]);
    }

    #[test]
    fn wrong_sizes_are_ignored() {
        let mut vectors = table();
        vectors.set(3, &[1.0, 0.0, 0.0]);
        vectors.set(9, &[1.0, 0.0]);
        assert_eq!(vectors.embedded(), 3);
        assert!(vectors.nearest(&[1.0, 0.0, 0.0], 5, |_| true).is_empty());
        assert!(vectors.nearest(&[1.0, 0.0], 0, |_| true).is_empty());
    }
}

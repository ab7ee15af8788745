//! The BM25F index and its ranking.

use std::collections::{BTreeMap, HashSet};

use super::expand::Vocabulary;
use super::tokens::words;
use super::{Document, Hit};

/// Fields of a document, in the order of [`FIELD_WEIGHTS`].
const FIELDS: usize = 4;
/// Name parts, server, description, parameters: a word naming the tool says the most.
const FIELD_WEIGHTS: [f32; FIELDS] = [3.0, 1.5, 1.0, 0.5];
/// The position of the name parts in [`FIELD_WEIGHTS`].
const NAME_FIELD: usize = 0;
/// Term-frequency saturation.
const K1: f32 = 1.2;
/// Length normalisation, per field.
const B: f32 = 0.75;

/// One document's share of one term: its BM25F weight for that term, ready to add.
#[derive(Debug, Clone, Copy)]
struct Posting {
    /// Position of the document in [`Index::ids`].
    doc: u32,
    /// idf × tf̃ / (k1 + tf̃), computed once at build time (it does not depend on the query).
    weight: f32,
    /// The same without the name field: what a digit-only query word scores. An id, an
    /// amount or a year in a request says nothing about which tool (`v2`, `s3` do).
    weight_without_name: f32,
}

/// Tool documents, tokenised and weighted for [`Index::search`].
#[derive(Debug, Clone, Default)]
pub struct Index {
    /// Each document's [`Document::id`], by position.
    ids: Vec<usize>,
    /// Every known term and its number (position in `postings`).
    vocabulary: Vocabulary,
    /// For each term, the documents that have it.
    postings: Vec<Vec<Posting>>,
}

impl Index {
    /// Builds the index over `docs` (corpus statistics are fixed here).
    pub fn new(docs: Vec<Document>) -> Index {
        let fields: Vec<[Vec<String>; FIELDS]> = docs.iter().map(document_fields).collect();
        let mut average = [0f32; FIELDS];
        for doc in &fields {
            for (sum, field) in average.iter_mut().zip(doc) {
                *sum += field.len() as f32;
            }
        }
        let count = fields.len().max(1) as f32;
        for sum in &mut average {
            *sum = (*sum / count).max(1.0);
        }

        let mut vocabulary = BTreeMap::new();
        let mut frequencies: Vec<Vec<(u32, [u16; FIELDS])>> = Vec::new();
        for (position, doc) in fields.iter().enumerate() {
            let mut counts: BTreeMap<u32, [u16; FIELDS]> = BTreeMap::new();
            for (f, field) in doc.iter().enumerate() {
                for word in field {
                    let next = vocabulary.len() as u32;
                    let term = *vocabulary.entry(word.clone()).or_insert(next);
                    if term == next {
                        frequencies.push(Vec::new());
                    }
                    let slot = &mut counts.entry(term).or_default()[f];
                    *slot = slot.saturating_add(1);
                }
            }
            for (term, tf) in counts {
                frequencies[term as usize].push((position as u32, tf));
            }
        }

        let postings = frequencies
            .into_iter()
            .map(|docs_with_term| {
                let df = docs_with_term.len() as f32;
                let idf = (1.0 + (count - df + 0.5) / (df + 0.5)).ln();
                docs_with_term
                    .into_iter()
                    .map(|(doc, tf)| {
                        let lengths = fields[doc as usize].each_ref().map(|f| f.len() as f32);
                        let field_tf = |f: usize| {
                            let norm = 1.0 - B + B * lengths[f] / average[f];
                            FIELD_WEIGHTS[f] * f32::from(tf[f]) / norm
                        };
                        let pseudo_tf: f32 = (0..FIELDS).map(field_tf).sum();
                        let without_name: f32 = (NAME_FIELD + 1..FIELDS).map(field_tf).sum();
                        Posting {
                            doc,
                            weight: idf * pseudo_tf / (K1 + pseudo_tf),
                            weight_without_name: idf * without_name / (K1 + without_name),
                        }
                    })
                    .collect()
            })
            .collect();
        Index { ids: docs.iter().map(|d| d.id).collect(), vocabulary: Vocabulary::new(vocabulary), postings }
    }

    /// The number of documents indexed.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// Whether no document is indexed.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// The best `limit` documents for `query` among those `admit` accepts (called with a
    /// [`Document::id`]), best first; equal scores in ascending id order.
    ///
    /// A document `admit` rejects is never scored, so it is never returned and cannot
    /// push an admitted one out. `admit` is asked at most once per document and search,
    /// and only about documents that share a word with the query. Documents sharing no word with the query are not
    /// returned: an empty or stop-words-only query returns nothing.
    pub fn search(&self, query: &str, limit: usize, admit: impl Fn(usize) -> bool) -> Vec<Hit> {
        if limit == 0 || self.ids.is_empty() {
            return Vec::new();
        }
        let mut query_words = words(query);
        let mut seen = HashSet::new();
        query_words.retain(|w| seen.insert(w.clone()));

        // Per document: 0 = not asked yet, 1 = admitted, 2 = rejected.
        let mut admitted = vec![0u8; self.ids.len()];
        let mut scores = vec![0f32; self.ids.len()];
        let mut touched: Vec<u32> = Vec::new();
        // A word standing for several terms (a prefix) counts once per document: its best.
        let mut word_best = vec![0f32; self.ids.len()];
        let mut word_touched: Vec<u32> = Vec::new();

        for word in &query_words {
            let digits_only = word.bytes().all(|b| b.is_ascii_digit());
            for (term, share) in self.vocabulary.expand(word) {
                for posting in &self.postings[term as usize] {
                    let doc = posting.doc as usize;
                    if admitted[doc] == 0 {
                        admitted[doc] = if admit(self.ids[doc]) { 1 } else { 2 };
                    }
                    if admitted[doc] != 1 {
                        continue;
                    }
                    let weight = share * if digits_only { posting.weight_without_name } else { posting.weight };
                    if weight <= 0.0 {
                        continue;
                    }
                    if word_best[doc] == 0.0 {
                        word_touched.push(posting.doc);
                    }
                    word_best[doc] = word_best[doc].max(weight);
                }
            }
            for doc in word_touched.drain(..) {
                let d = doc as usize;
                if scores[d] == 0.0 {
                    touched.push(doc);
                }
                scores[d] += word_best[d];
                word_best[d] = 0.0;
            }
        }

        let mut hits: Vec<Hit> = touched
            .into_iter()
            .map(|doc| Hit { id: self.ids[doc as usize], score: scores[doc as usize] })
            .filter(|hit| hit.score > 0.0)
            .collect();
        let order = |a: &Hit, b: &Hit| b.score.total_cmp(&a.score).then(a.id.cmp(&b.id));
        if hits.len() > limit {
            hits.select_nth_unstable_by(limit - 1, order);
            hits.truncate(limit);
        }
        hits.sort_unstable_by(order);
        hits
    }
}

/// A document's words per field: name parts, server, description, parameters.
///
/// The name's `SERVER__` prefix is left to the server field so that a server's name does
/// not count three times over in every one of its tools.
fn document_fields(doc: &Document) -> [Vec<String>; FIELDS] {
    let own_name =
        doc.name.strip_prefix(doc.server.as_str()).and_then(|rest| rest.strip_prefix("__")).unwrap_or(&doc.name);
    let mut parameters = Vec::new();
    for (name, description) in &doc.parameters {
        parameters.extend(words(name));
        parameters.extend(words(description));
    }
    [words(own_name), words(&doc.server), words(&doc.description), parameters]
}

#[cfg(test)]
mod tests {
    use super::{Document, Index};

    fn doc(id: usize, name: &str, description: &str, parameters: &[(&str, &str)]) -> Document {
        Document {
            id,
            name: format!("srv__{name}"),
            server: "srv".to_owned(),
            description: description.to_owned(),
            parameters: parameters.iter().map(|(n, d)| ((*n).to_owned(), (*d).to_owned())).collect(),
        }
    }

    fn ids(index: &Index, query: &str) -> Vec<usize> {
        index.search(query, 10, |_| true).into_iter().map(|h| h.id).collect()
    }

    #[test]
    fn a_word_in_the_name_outranks_the_same_word_in_a_parameter() {
        let index = Index::new(vec![
            doc(1, "task_create", "Create a job", &[("memory", "Memory budget")]),
            doc(2, "memory_create", "Create an entry", &[]),
        ]);
        assert_eq!(ids(&index, "memory"), [2, 1]);
    }

    #[test]
    fn camel_case_names_are_found_by_their_parts() {
        let index = Index::new(vec![
            doc(1, "getUserById", "Fetch one record", &[]),
            doc(2, "listUsers", "Fetch many records", &[]),
        ]);
        assert_eq!(ids(&index, "user by id"), [1, 2]);
    }

    #[test]
    fn equal_scores_come_in_id_order_and_limit_keeps_the_best() {
        let docs = (0..10).rev().map(|i| doc(i, &format!("same_{i}"), "identical words", &[]));
        let index = Index::new(docs.collect());
        assert_eq!(ids(&index, "identical"), (0..10).collect::<Vec<_>>());
        let top: Vec<usize> = index.search("identical", 3, |_| true).iter().map(|h| h.id).collect();
        assert_eq!(top, [0, 1, 2]);
    }

    #[test]
    fn rejected_documents_are_not_scored() {
        let index =
            Index::new(vec![doc(7, "memory_store", "Store a value", &[]), doc(8, "memory_list", "List values", &[])]);
        let hits = index.search("memory store", 5, |id| id != 7);
        assert_eq!(hits.iter().map(|h| h.id).collect::<Vec<_>>(), [8]);
    }

    #[test]
    fn admit_is_asked_once_per_matching_document() {
        let index = Index::new(vec![
            doc(1, "memory_store", "Store a value in memory", &[("key", "Memory key")]),
            doc(2, "memory_list", "List memory values", &[]),
            doc(3, "swarm_init", "Start a swarm", &[]),
        ]);
        let asked = std::cell::RefCell::new(Vec::new());
        index.search("memory store value key", 5, |id| {
            asked.borrow_mut().push(id);
            true
        });
        let mut asked = asked.into_inner();
        asked.sort_unstable();
        assert_eq!(asked, [1, 2]);
    }

    #[test]
    fn digit_only_query_words_do_not_score_against_names() {
        let index = Index::new(vec![
            doc(1, "get_2024_report", "Fetch a yearly report", &[]),
            doc(2, "order_status", "Status of order 2024 or any other", &[]),
            doc(3, "s3_upload", "Upload a file", &[]),
        ]);
        assert_eq!(ids(&index, "2024"), [2]);
        assert_eq!(ids(&index, "report 2024"), [1, 2]);
        assert_eq!(ids(&index, "s3"), [3]);
    }

    #[test]
    fn queries_without_known_words_return_nothing() {
        let index = Index::new(vec![doc(1, "memory_store", "Store a value", &[])]);
        assert!(ids(&index, "").is_empty());
        assert!(ids(&index, "the of a").is_empty());
        assert!(ids(&index, "zebra").is_empty());
        assert!(index.search("memory", 0, |_| true).is_empty());
        assert!(Index::new(Vec::new()).search("memory", 5, |_| true).is_empty());
    }
}

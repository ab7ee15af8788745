//! Search quality over a 200-tool claude-flow-like server, and what filtering keeps out.
//!
//! `search_golden_recall_at_5` prints and keeps recall@5 of the golden queries
//! (`tests/fixtures/search-golden.json`); the leak tests check that a document `admit`
//! rejects never comes back and does not change what else comes back.

mod search_support;

use std::collections::HashSet;

use clawai_gateway::search::{Hit, Index};
use proptest::prelude::*;
use search_support::{SERVER, documents, golden};

fn names_of(hits: &[Hit], index_names: &[String]) -> Vec<String> {
    hits.iter().map(|hit| index_names[hit.id].clone()).collect()
}

#[test]
fn search_golden_recall_at_5() {
    let docs = documents(SERVER, 0);
    let names: Vec<String> = docs.iter().map(|d| d.name.clone()).collect();
    let index = Index::new(docs);
    let queries = golden();
    assert!(queries.len() >= 50, "the golden file has {} queries", queries.len());

    let mut total = 0.0;
    let mut misses = Vec::new();
    for golden in &queries {
        let top = names_of(&index.search(&golden.query, 5, |_| true), &names);
        let found = golden.expected.iter().filter(|name| top.contains(name)).count();
        total += found as f64 / golden.expected.len() as f64;
        if found < golden.expected.len() {
            misses.push(format!("  {:?}: expected {:?}, got {:?}", golden.query, golden.expected, top));
        }
    }
    let recall = total / queries.len() as f64;
    println!("recall@5 over {} golden queries: {recall:.3}", queries.len());
    for miss in &misses {
        println!("{miss}");
    }
    assert!(recall >= 0.8, "recall@5 is {recall:.3}, below 0.8:\n{}", misses.join("\n"));
}

#[test]
fn a_rejected_tool_is_absent_even_when_it_is_the_best_match() {
    let docs = documents(SERVER, 0);
    let store = docs.iter().position(|d| d.name == "claude-flow__memory_store").expect("in fixture");
    let index = Index::new(docs);
    let open = index.search("memory_store store a value in memory", 5, |_| true);
    assert_eq!(open[0].id, store, "the check needs the tool to be the best match when admitted");
    let filtered = index.search("memory_store store a value in memory", 200, |id| id != store);
    assert!(filtered.iter().all(|hit| hit.id != store));
    assert!(!filtered.is_empty(), "the other memory tools still match");
}

/// Queries the property test draws from: golden queries, tool names, words of the
/// fixture and noise.
fn query_strategy() -> impl Strategy<Value = String> {
    let golden: Vec<String> = golden().into_iter().map(|g| g.query).collect();
    let names: Vec<String> = documents(SERVER, 0).into_iter().map(|d| d.name).collect();
    let words: Vec<&'static str> = vec![
        "memory", "swarm", "agent", "task", "create", "list", "status", "delete", "github", "pull", "request", "conf",
        "memroy", "stor", "a", "the", "neural", "perf", "hive",
    ];
    prop_oneof![
        proptest::sample::select(golden),
        proptest::sample::select(names),
        proptest::collection::vec(proptest::sample::select(words), 0..6).prop_map(|w| w.join(" ")),
        "[a-zA-Z_ -]{0,30}",
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    /// With any admit set and any query: no rejected tool comes back, and what comes back
    /// is exactly the unfiltered ranking with the rejected tools taken out (a rejected
    /// tool neither appears nor displaces an admitted one).
    #[test]
    fn rejected_tools_never_appear_nor_displace_others(
        admitted in proptest::collection::vec(any::<bool>(), 200),
        query in query_strategy(),
        limit in 1usize..25,
    ) {
        let index = Index::new(documents(SERVER, 0));
        let hits = index.search(&query, limit, |id| admitted[id]);
        for hit in &hits {
            prop_assert!(admitted[hit.id], "rejected tool {} returned for {:?}", hit.id, query);
        }
        let expected: Vec<usize> = index
            .search(&query, usize::MAX, |_| true)
            .into_iter()
            .filter(|hit| admitted[hit.id])
            .take(limit)
            .map(|hit| hit.id)
            .collect();
        let got: Vec<usize> = hits.iter().map(|hit| hit.id).collect();
        prop_assert_eq!(got, expected);
        let distinct: HashSet<usize> = hits.iter().map(|hit| hit.id).collect();
        prop_assert_eq!(distinct.len(), hits.len());
        prop_assert!(hits.windows(2).all(|w| w[0].score >= w[1].score));
    }
}

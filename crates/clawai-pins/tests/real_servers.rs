//! No false alarms on the servers people run: the captured listings of real MCP servers
//! (`crates/clawai-scan/tests/corpus/`: tools, prompts, resource templates and
//! `instructions`, with their versions) go through the pins as a proxy or a gateway puts
//! them, with the scan on at its default `quarantine_on = "warn"`, and nothing is held:
//! each server alone; all of them one after another sharing one pin store, in several
//! orders; the same server under two names; and all of them again after the first round.

use std::path::Path;

use clawai_pins::{Identity, Kind, ScanSettings, Tracker};
use serde_json::json;

const SCAN: ScanSettings = ScanSettings { on: true, quarantine_on: clawai_pins::Severity::Warn };

use clawai_testkit::corpus::{Dump, dumps as corpus};

/// What a proxy does with one server's start: its `initialize` result, then every list.
/// Returns what was held, as `server kind name: why`.
fn start(dir: &Path, name: &str, dump: &Dump) -> Vec<String> {
    let identity = Identity::command(name, &["npx".to_owned(), "-y".to_owned(), dump.package.clone()]);
    let pins = Tracker::open(dir, identity).unwrap();
    let mut held = Vec::new();
    let init = json!({"protocolVersion": "2025-06-18", "capabilities": {}, "instructions": dump.value["instructions"]});
    if pins.filter_instructions(&serde_json::to_vec(&init).unwrap(), SCAN).is_some() {
        held.push(format!("{name}: instructions held"));
    }
    for (method, member) in
        [("tools/list", "tools"), ("prompts/list", "prompts"), ("resources/templates/list", "resourceTemplates")]
    {
        let items = dump.value[member].clone();
        let result = serde_json::to_vec(&json!({ member: items })).unwrap();
        let filtered = pins.filter_list(method, &result, SCAN).expect("a list result");
        for compared in filtered.compared.iter().filter(|c| c.seen.is_held()) {
            held.push(format!("{name} {method} {}: {:?} {:?}", compared.name, compared.seen, compared.finding));
        }
    }
    // At call time too: nothing refused.
    let file = pins.snapshot();
    for kind in Kind::ALL {
        for item in file.items(kind).keys() {
            if let Some(refusal) = pins.refusal(kind, item) {
                held.push(format!("{name} {kind:?} {item}: refused {refusal:?}"));
            }
        }
    }
    held
}

fn assert_nothing_held(held: Vec<String>, case: &str) {
    assert!(held.is_empty(), "{case}: {} held:\n{}", held.len(), held.join("\n"));
}

#[test]
fn the_corpus_has_the_servers_people_run() {
    let dumps = corpus();
    assert!(dumps.len() >= 25, "the corpus has {} servers", dumps.len());
    let names: Vec<&str> = dumps.iter().map(|d| d.server.as_str()).collect();
    for wanted in
        ["everything", "filesystem", "claude-code", "claude-flow", "playwright", "github", "fetch", "git", "time"]
    {
        assert!(names.contains(&wanted), "{wanted} is missing from {names:?}");
    }
    let tools: usize = dumps.iter().map(|d| d.value["tools"].as_array().map_or(0, Vec::len)).sum();
    assert!(tools >= 600, "{tools} tools");
}

#[test]
fn each_server_alone_has_nothing_held() {
    for dump in corpus() {
        let dir = tempfile::tempdir().unwrap();
        assert_nothing_held(start(dir.path(), &dump.server, &dump), &dump.server);
    }
}

#[test]
fn all_servers_sharing_one_store_in_several_orders_have_nothing_held() {
    let dumps = corpus();
    let n = dumps.len();
    // In file order, reversed, and interleaved from both ends; each twice (a second
    // start of every server, the others all pinned now).
    let forward: Vec<usize> = (0..n).collect();
    let backward: Vec<usize> = (0..n).rev().collect();
    let interleaved: Vec<usize> =
        (0..n.div_ceil(2)).flat_map(|i| [i, n - 1 - i]).take(n).collect::<Vec<_>>().into_iter().collect();
    for (label, order) in [("forward", forward), ("backward", backward), ("interleaved", interleaved)] {
        let dir = tempfile::tempdir().unwrap();
        for round in 0..2 {
            for &i in &order {
                let dump = &dumps[i];
                assert_nothing_held(start(dir.path(), &dump.server, dump), &format!("{label}, round {round}"));
            }
        }
    }
}

#[test]
fn the_same_server_under_two_names_has_nothing_held() {
    for dump in corpus() {
        let dir = tempfile::tempdir().unwrap();
        assert_nothing_held(start(dir.path(), &dump.server, &dump), &dump.server);
        let second = format!("{}-2", dump.server);
        assert_nothing_held(start(dir.path(), &second, &dump), &second);
        // And the first again, now that the second is pinned too.
        assert_nothing_held(start(dir.path(), &dump.server, &dump), &dump.server);
    }
}

/// Behind a gateway the servers start at once: one server's first listing can come
/// between another's `initialize` and its first listing. Its instructions, which name
/// its own tools, are not another server's words then either.
#[test]
fn a_server_listed_between_another_s_start_and_its_listing_holds_nothing() {
    let dumps = corpus();
    let everything = dumps.iter().find(|d| d.server == "everything").expect("everything is in the corpus");
    let dir = tempfile::tempdir().unwrap();
    let first =
        Tracker::open(dir.path(), Identity::command("everything", &["npx".to_owned(), everything.package.clone()]))
            .unwrap();
    let init = json!({"protocolVersion": "2025-06-18", "instructions": everything.value["instructions"]});
    assert_eq!(first.filter_instructions(&serde_json::to_vec(&init).unwrap(), SCAN), None);
    // The second name starts and lists everything before the first lists anything.
    assert_nothing_held(start(dir.path(), "everything-2", everything), "everything-2");
    assert_nothing_held(start(dir.path(), "everything", everything), "everything, listed after");
}

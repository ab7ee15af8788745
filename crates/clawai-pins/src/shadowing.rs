//! Tool shadowing decided the same whichever server started first.
//!
//! A description that tells the model how to use another server's tool (tool
//! shadowing) can only be recognised once that other server's tools are known. When the
//! shadowing server starts first, its tools are pinned before the tool it names exists
//! anywhere; so when a server lists tool names for the first time, the items the other
//! servers in the same pin store have pinned are read again for those names, and one
//! that directs the model at them (a `cross_server_tool_name` finding at or above
//! `quarantine_on`) is quarantined in its own store file, as it would have been had the
//! servers started the other way round. The owner's tracker sees the change at its next
//! call or listing (it re-reads its file when someone else wrote it).
//!
//! The same holds for a server's own `instructions`: they name the server's own tools,
//! which are not known when the instructions arrive (`initialize` comes before
//! `tools/list`), so their cross-server check waits for the server's first complete tool
//! list ([`judge_instructions`]); until then only what needs no other server is checked.

use std::collections::BTreeSet;

use clawai_scan::{Class, ItemKind, Scanner};
use serde_json::Value;

use crate::canonical::Kind;
use crate::screen::{Flag, ScanSettings};
use crate::store::{Entry, PinFile, PinStore};

/// The current value of every item of `file` (the live version when one waits): the
/// server's own words, which are never another server's tool.
fn own_listing(file: &PinFile) -> Vec<Value> {
    Kind::ALL
        .iter()
        .flat_map(|&kind| file.items(kind).values())
        .filter_map(|entry| entry.live.as_ref().or(entry.pinned.as_ref()))
        .map(|version| version.value.clone())
        .collect()
}

fn item_kind(kind: Kind) -> ItemKind {
    match kind {
        Kind::Tool => ItemKind::Tool,
        Kind::Prompt => ItemKind::Prompt,
        Kind::ResourceTemplate => ItemKind::ResourceTemplate,
    }
}

/// The cross-server findings of `value` that quarantine under `settings`.
fn shadowing(scanner: &Scanner, kind: ItemKind, value: &Value, listing: &[Value], settings: ScanSettings) -> Vec<Flag> {
    let found = scanner.scan_listed_item(kind, value, listing);
    found
        .into_iter()
        .filter(|f| f.class == Class::CrossServerToolName && f.severity >= settings.quarantine_on)
        .map(Flag::from)
        .collect()
}

/// Holds the pinned version of `entry` as quarantined by `flags`. Returns false when
/// nothing is pinned and unheld (nothing to hold).
fn hold(entry: &mut Entry, flags: Vec<Flag>) -> bool {
    if entry.live.is_some() || entry.removed {
        return false;
    }
    let Some(mut version) = entry.pinned.take() else { return false };
    version.findings.get_or_insert_with(Vec::new).extend(flags);
    version.quarantined = true;
    entry.live = Some(version);
    // Held only by the scan: if the scan stops holding it (a higher `quarantine_on`),
    // it is pinned again as it was.
    entry.held_on_sight = true;
    true
}

/// `new_names`, tools `server` (pins `own` in `store`) lists for the first time, read
/// against every other server's pins in the same store: an item that directs the
/// model at one of them is quarantined in its server's file. Returns what was held, as
/// (server, kind, name, finding), for the log.
pub(crate) fn quarantine_others(
    store: &PinStore,
    own: &str,
    server: &str,
    new_names: &BTreeSet<String>,
    settings: ScanSettings,
) -> Vec<(String, &'static str, String, Flag)> {
    let mut held = Vec::new();
    if !settings.on || new_names.is_empty() {
        return held;
    }
    for name in store.names().unwrap_or_default() {
        if name == own {
            continue;
        }
        let Ok(Some(mut file)) = store.load(&name) else { continue };
        // A server whose first complete tool list is not in yet is judged when it is
        // (its items against every name known then, its instructions against the others'
        // names less its own): before that, its own names are not known, and the same
        // server under another name would look like another server.
        if file.server == server || !file.was_listed(Kind::Tool) {
            continue;
        }
        // A name that server lists itself is its own word.
        let names: Vec<&str> =
            new_names.iter().filter(|name| !file.tools.contains_key(*name)).map(String::as_str).collect();
        if names.is_empty() {
            continue;
        }
        let scanner = Scanner::new(&names);
        let listing = own_listing(&file);
        let owner = file.server.clone();
        let mut changed = false;
        for kind in Kind::ALL {
            for (name, entry) in file.items_mut(kind).iter_mut() {
                let Some(pinned) = entry.pinned.as_ref().filter(|_| entry.live.is_none()) else { continue };
                let flags = shadowing(&scanner, item_kind(kind), &pinned.value, &listing, settings);
                if let Some(worst) = crate::screen::worst(&flags).cloned()
                    && hold(entry, flags)
                {
                    held.push((owner.clone(), kind_word(Some(kind)), name.clone(), worst));
                    changed = true;
                }
            }
        }
        if let Some(entry) = file.instructions.as_mut()
            && let Some(pinned) = entry.pinned.as_ref().filter(|_| entry.live.is_none())
        {
            let flags = shadowing(&scanner, ItemKind::Instructions, &pinned.value, &listing, settings);
            if let Some(worst) = crate::screen::worst(&flags).cloned()
                && hold(entry, flags)
            {
                held.push((owner.clone(), kind_word(None), "instructions".to_owned(), worst));
                changed = true;
            }
        }
        if changed && let Err(e) = store.save(&name, &file) {
            tracing::warn!("{e}; the quarantine found by reading it again is not recorded");
        }
    }
    held
}

/// The server's own `instructions`, pinned before its tools were known, judged for
/// other servers' tool names now that its first complete tool list is in (`others`:
/// the other servers' tool names, less its own). Returns the finding that quarantined
/// them, if one did.
pub(crate) fn judge_instructions(file: &mut PinFile, others: &[&str], settings: ScanSettings) -> Option<Flag> {
    if !settings.on || others.is_empty() {
        return None;
    }
    let listing = own_listing(file);
    let entry = file.instructions.as_mut()?;
    let pinned = entry.pinned.as_ref().filter(|_| entry.live.is_none())?;
    let scanner = Scanner::new(others).excluding(&listing);
    let flags = shadowing(&scanner, ItemKind::Instructions, &pinned.value, &listing, settings);
    let worst = crate::screen::worst(&flags).cloned()?;
    hold(entry, flags).then_some(worst)
}

/// How the log names a kind (`None`: the instructions).
pub(crate) fn kind_word(kind: Option<Kind>) -> &'static str {
    match kind {
        Some(Kind::Tool) => "tool",
        Some(Kind::Prompt) => "prompt",
        Some(Kind::ResourceTemplate) => "resource template",
        None => "instructions",
    }
}

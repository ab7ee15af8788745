//! The pins of one running server, as a proxy or gateway uses them: list results
//! compared and filtered as they pass, calls checked, and the store file re-read when a
//! person approved something meanwhile (`clawai pins approve` and the `clawai ui` page
//! write the same file, through `review::approve`).

use std::collections::{BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use serde_json::Value;

use crate::canonical::Kind;
use crate::compare::Compared;
use crate::error::PinError;
use crate::identity::Identity;
use crate::screen::{Flag, ScanSettings, Screen};
use crate::shadowing;
use crate::store::{self, Entry, PinFile, PinStore};
use clawai_store::Version as DocumentVersion;

/// What a list result became.
#[derive(Debug, Default)]
pub struct Filtered {
    /// The result to pass on instead, when something was left out of it (`None`: pass
    /// the result as it is).
    pub result: Option<Vec<u8>>,
    /// Every item of the page, compared.
    pub compared: Vec<Compared>,
    /// The server's instructions changed: nothing of it is listed.
    pub blocked: bool,
    /// Items the server's list no longer has (the listing was complete).
    pub removed: Vec<String>,
    /// This page ended the listing (no `nextCursor`): the whole list was compared.
    pub complete: bool,
}

/// Why a call is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The server's instructions changed since they were approved (or the scan
    /// quarantined them: `finding`, the worst of its findings).
    Blocked {
        /// The worst finding that quarantined the instructions, if the scan did.
        finding: Option<Flag>,
    },
    /// The item changed, or is new, since the server's items were approved.
    Held,
    /// The scan found hidden or instruction-like text in the item (new, or changed
    /// since it was approved).
    Quarantined {
        /// The worst finding.
        finding: Flag,
        /// A version of it was approved before, and this one differs.
        changed: bool,
    },
}

struct Inner {
    file: PinFile,
    /// The version of the pins as last read or written here.
    stamp: Option<DocumentVersion>,
    /// Names seen so far in the listing under way, per kind (every page until one
    /// without `nextCursor`).
    walks: HashMap<Kind, BTreeSet<String>>,
}

/// The pins of one server identity, shared by the sessions that talk to it.
pub struct Tracker {
    store: PinStore,
    /// The server's pins' name in the store.
    name: String,
    identity: Identity,
    inner: Mutex<Inner>,
    /// Who wants to know when a person's approval releases something (each session's
    /// client is told to list again); dropped listeners are forgotten.
    listeners: Mutex<Vec<Weak<Listener>>>,
    /// True once the thread that looks at the file for approvals runs.
    watching: AtomicBool,
}

/// Told which kinds a person's approval released (see [`Tracker::subscribe`]).
pub type Listener = dyn Fn(&[Kind]) + Send + Sync;

/// How often the store file is looked at for a person's approval.
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// How many times a listing is compared again when someone else wrote the pins between
/// this tracker's reading and writing them.
const SAVE_ATTEMPTS: usize = 3;

impl std::fmt::Debug for Tracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tracker").field("name", &self.name).field("identity", &self.identity).finish_non_exhaustive()
    }
}

impl Tracker {
    /// The pins of `identity` in `dir` (created on first write). A store file that
    /// does not parse is an error naming it.
    pub fn open(dir: &Path, identity: Identity) -> Result<Tracker, PinError> {
        Tracker::open_in(PinStore::dir(dir), identity)
    }

    /// The pins of `identity` in `store` (the store the process chose at start-up).
    pub fn open_in(store: PinStore, identity: Identity) -> Result<Tracker, PinError> {
        let name = store::name_of(&identity);
        let stamp = store.version(&name);
        let file = store.load(&name)?.unwrap_or_else(|| PinFile::new(&identity));
        Ok(Tracker {
            store,
            name,
            identity,
            inner: Mutex::new(Inner { file, stamp, walks: HashMap::new() }),
            listeners: Mutex::new(Vec::new()),
            watching: AtomicBool::new(false),
        })
    }

    /// Where the server's pins are (the store file, locally).
    pub fn path(&self) -> PathBuf {
        self.store.location(&self.name)
    }

    /// The server's name.
    pub fn server(&self) -> &str {
        &self.identity.server
    }

    fn inner(&self) -> MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Calls `listener` with the kinds a person's approval released, whoever notices it
    /// first (a call re-reading the file, or a thread that looks at it twice a second,
    /// started by the first subscriber). Held weakly: dropping the listener unsubscribes.
    pub fn subscribe(self: &Arc<Self>, listener: &Arc<Listener>) {
        self.listeners.lock().unwrap_or_else(|p| p.into_inner()).push(Arc::downgrade(listener));
        if self.watching.swap(true, Ordering::SeqCst) {
            return;
        }
        let tracker = Arc::downgrade(self);
        let started = std::thread::Builder::new().name("clawai-pins-watch".into()).spawn(move || {
            loop {
                std::thread::sleep(WATCH_EVERY);
                let Some(tracker) = tracker.upgrade() else { return };
                tracker.refresh();
            }
        });
        if let Err(e) = started {
            tracing::warn!(
                "cannot watch {} for approvals ({e}); clients learn of them when they list again",
                self.path().display()
            );
        }
    }

    /// Re-reads the store file if someone else wrote it since (a person approved or
    /// reset something). Returns the kinds of which something held before is no longer
    /// held, after telling the subscribers: their clients should list them again. A
    /// file that cannot be read now leaves the pins as they were (logged).
    pub fn refresh(&self) -> Vec<Kind> {
        let released = self.reread();
        if !released.is_empty() {
            let listeners: Vec<Arc<Listener>> = {
                let mut listeners = self.listeners.lock().unwrap_or_else(|p| p.into_inner());
                listeners.retain(|l| l.strong_count() > 0);
                listeners.iter().filter_map(Weak::upgrade).collect()
            };
            for listener in listeners {
                listener(&released);
            }
        }
        released
    }

    fn reread(&self) -> Vec<Kind> {
        let mut inner = self.inner();
        let now = self.store.version(&self.name);
        if now == inner.stamp {
            return Vec::new();
        }
        let fresh = match self.store.load(&self.name) {
            Ok(Some(file)) => file,
            // A shared store (versions it counts) that lost the pins (Redis back without
            // its data: no version either) gets them back from here: nothing held is
            // released by a loss. Locally, a file removed is a reset (`clawai pins
            // reset`); in a shared store a reset removes the pins and counts their
            // version on, which tells it from a loss.
            Ok(None) if now.is_none() && inner.stamp.is_some_and(|stamp| stamp.count().is_some()) => {
                tracing::warn!("{}: the shared pins were gone; written again from this replica's copy", self.name);
                inner.stamp = None;
                self.save(&mut inner);
                return Vec::new();
            }
            Ok(None) => PinFile::new(&self.identity),
            Err(e) => {
                tracing::warn!("{e}; the pins in use stay as they were");
                inner.stamp = now;
                return Vec::new();
            }
        };
        let held = |file: &PinFile, kind: Kind| -> BTreeSet<String> {
            file.items(kind).iter().filter(|(_, e)| e.state().is_held()).map(|(n, _)| n.clone()).collect()
        };
        let unblocked = inner.file.blocked() && !fresh.blocked();
        let released: Vec<Kind> = Kind::ALL
            .into_iter()
            .filter(|&kind| unblocked || !held(&inner.file, kind).is_subset(&held(&fresh, kind)))
            .collect();
        inner.file = fresh;
        inner.stamp = now;
        released
    }

    /// Writes the pins unless someone else (another replica, a person approving) wrote
    /// them since they were read here: false then, and nothing is written.
    fn save(&self, inner: &mut Inner) -> bool {
        match self.store.save_if(&self.name, &inner.file, inner.stamp) {
            Ok(true) => {
                inner.stamp = self.store.version(&self.name);
                true
            }
            Ok(false) => false,
            Err(e) => {
                tracing::warn!("{e}; the pins are kept in memory for this session");
                true
            }
        }
    }

    /// Runs `observe` on the pins as they are in the store and writes them when it
    /// changed them. When someone else wrote them in between (another replica's first
    /// sight of the same server, a person's approval), theirs are read and `observe`
    /// runs again on them: the first writer wins, and a listing that differs from what
    /// it wrote is held.
    fn observing<T>(&self, mut observe: impl FnMut(&mut Inner) -> (T, bool)) -> T {
        let mut attempts = 0;
        loop {
            self.refresh();
            let mut inner = self.inner();
            let (observed, changed) = observe(&mut inner);
            attempts += 1;
            if !changed || self.save(&mut inner) {
                return observed;
            }
            if attempts == SAVE_ATTEMPTS {
                tracing::warn!("{}: the pins kept changing while they were written; kept in memory", self.name);
                return observed;
            }
        }
    }

    /// Compares a list result (`tools/list`, `prompts/list`, `resources/templates/list`)
    /// with the pins, scans what is new or changed as `scan` says, records it, and
    /// leaves out of it what is held (changed, added or quarantined).
    /// `None` for a method that lists nothing pinned or a result that is not an object
    /// with the list (passed on as it is).
    pub fn filter_list(&self, method: &str, result: &[u8], scan: ScanSettings) -> Option<Filtered> {
        let (kind, member) = Kind::of_list_method(method)?;
        let mut members: serde_json::Map<String, Value> = serde_json::from_slice(result).ok()?;
        let Value::Array(items) = members.remove(member)? else { return None };
        let last_page = members.get("nextCursor").is_none_or(Value::is_null);
        let (compared, removed, blocked) = self.observing(|inner| {
            let (compared, mut changed) = {
                let names = self.other_servers_tools();
                inner.file.observe_items(kind, &items, &Screen::new(scan, names))
            };
            let walk = inner.walks.entry(kind).or_default();
            walk.extend(compared.iter().map(|c| c.name.clone()));
            let mut removed = Vec::new();
            let mut first_complete = false;
            if last_page {
                first_complete = !inner.file.was_listed(kind);
                let listed = inner.walks.remove(&kind);
                let (gone, more) = inner.file.finish_listing(kind, listed.as_ref());
                removed = gone;
                changed |= more;
            }
            changed |= self.after_observing(inner, kind, &compared, first_complete, scan);
            ((compared, removed, inner.file.blocked()), changed)
        });
        self.screen_others(kind, &compared, scan);
        let held = compared.iter().any(|c| c.seen.is_held());
        let result = if blocked {
            members.insert(member.to_owned(), Value::Array(Vec::new()));
            members.remove("nextCursor");
            Some(serde_json::to_vec(&members).expect("a JSON value encodes"))
        } else if held {
            let kept: Vec<Value> =
                items.into_iter().zip(&compared).filter(|(_, c)| !c.seen.is_held()).map(|(item, _)| item).collect();
            members.insert(member.to_owned(), Value::Array(kept));
            Some(serde_json::to_vec(&members).expect("a JSON value encodes"))
        } else {
            None
        };
        Some(Filtered { result, compared, blocked, removed, complete: last_page })
    }

    /// A server's complete list of one kind (every page read), as a gateway that lists
    /// its servers itself holds it: compared with the pins and recorded like
    /// [`Tracker::filter_list`] (what it no longer has is marked removed), and what is
    /// held taken out of `items`. With the server's instructions changed, `items` is
    /// emptied. Returns every item compared, in the order given.
    pub fn retain_approved(&self, kind: Kind, items: &mut Vec<Value>, scan: ScanSettings) -> Vec<Compared> {
        let (compared, blocked) = self.observing(|inner| {
            let (compared, mut changed) = {
                let names = self.other_servers_tools();
                inner.file.observe_items(kind, items, &Screen::new(scan, names))
            };
            let listed: BTreeSet<String> = compared.iter().map(|c| c.name.clone()).collect();
            inner.walks.remove(&kind);
            let first_complete = !inner.file.was_listed(kind);
            changed |= inner.file.finish_listing(kind, Some(&listed)).1;
            changed |= self.after_observing(inner, kind, &compared, first_complete, scan);
            ((compared, inner.file.blocked()), changed)
        });
        self.screen_others(kind, &compared, scan);
        if blocked {
            items.clear();
        } else {
            let mut held = compared.iter().map(|c| c.seen.is_held());
            items.retain(|_| !held.next().unwrap_or(true));
        }
        compared
    }

    /// Compares the `instructions` of an `initialize` (or `server/discover`) result with
    /// the pinned ones, scanning them when new or changed as `scan` says. When they
    /// changed, or the scan quarantined them, the server is blocked, and the result to
    /// pass on instead, without them, is returned (the model never reads instructions
    /// nobody approved).
    pub fn filter_instructions(&self, result: &[u8], scan: ScanSettings) -> Option<Vec<u8>> {
        let mut members: serde_json::Map<String, Value> = serde_json::from_slice(result).ok()?;
        let instructions = members.get("instructions").and_then(Value::as_str);
        let seen = self.observing(|inner| {
            let (seen, changed) = if inner.file.was_listed(Kind::Tool) {
                let names = self.other_servers_tools();
                inner.file.observe_instructions(instructions, &Screen::new(scan, names))
            } else {
                // They name the server's own tools, not known yet: the cross-server check
                // waits for its first complete tool list (`shadowing::judge_instructions`).
                inner.file.observe_instructions(instructions, &Screen::alone(scan))
            };
            if seen.is_held() && changed {
                let finding = inner.file.instructions.as_ref().and_then(Entry::quarantined_by).cloned();
                self.log_held("instructions", "instructions", finding.as_ref());
            }
            (seen, changed)
        });
        if seen.is_held() && members.remove("instructions").is_some() {
            return Some(serde_json::to_vec(&members).expect("a JSON value encodes"));
        }
        None
    }

    /// Whether a call to the item `name` of `kind` is refused: the server is blocked,
    /// or the item is held. A name no list showed is left to the server to answer (as
    /// an unknown name: conformance suites check how). The store file is re-read first
    /// when someone else wrote it, so an approval, or a hold, counts from the next call.
    pub fn refusal(&self, kind: Kind, name: &str) -> Option<Refusal> {
        // Re-read first: an approval releases from the next call, and a hold another
        // server's first listing wrote here (`shadowing::quarantine_others`) holds from it.
        self.refresh();
        self.inner().file.refusal(kind, name)
    }

    /// Whether a `resources/read` of `uri` is refused: the server is blocked, or the URI
    /// fits the `uriTemplate` of a held resource template (its live or its pinned
    /// version: [`crate::template::fits`]). With the refusal, the template's name (empty
    /// when the server is blocked).
    pub fn resource_refusal(&self, uri: &str) -> Option<(String, Refusal)> {
        let name = {
            let inner = self.inner();
            if inner.file.blocked() {
                String::new()
            } else {
                let fits = |version: Option<&crate::Version>| {
                    version
                        .and_then(|v| v.value.get("uriTemplate"))
                        .and_then(Value::as_str)
                        .is_some_and(|template| crate::template::fits(template, uri))
                };
                inner
                    .file
                    .items(Kind::ResourceTemplate)
                    .iter()
                    .find(|(_, entry)| {
                        entry.state().is_held() && (fits(entry.live.as_ref()) || fits(entry.pinned.as_ref()))
                    })
                    .map(|(name, _)| name.clone())?
            }
        };
        self.refusal(Kind::ResourceTemplate, &name).map(|refusal| (name, refusal))
    }

    /// The message a refused call gets: what happened and the command to review it.
    pub fn refusal_text(&self, kind: Kind, name: &str, refusal: &Refusal) -> String {
        let server = self.server();
        let what = match kind {
            Kind::Tool => "tool",
            Kind::Prompt => "prompt",
            Kind::ResourceTemplate => "resource template",
        };
        match refusal {
            Refusal::Blocked { finding: None } => format!(
                "server `{server}` changed its instructions since they were approved, so clawai holds all of it: \
                 review with `clawai pins diff {server}` and approve with `clawai pins approve {server} instructions --hash HASH`"
            ),
            Refusal::Blocked { finding: Some(finding) } => format!(
                "clawai quarantined the instructions of server `{server}`, so it holds all of it: the scan found {}: \
                 review with `clawai pins diff {server}` and approve with `clawai pins approve {server} instructions --hash HASH`",
                found(finding)
            ),
            Refusal::Held => format!(
                "{what} `{name}` of server `{server}` changed since it was approved: run `clawai pins diff {server} {name}` \
                 to review it, then `clawai pins approve {server} {name} --hash HASH`"
            ),
            Refusal::Quarantined { finding, changed } => format!(
                "{what} `{name}` of server `{server}` {}is quarantined: the scan found {} (hidden or instruction-like text \
                 meant for the model): run `clawai pins diff {server} {name}` to review it, then \
                 `clawai pins approve {server} {name} --hash HASH`",
                if *changed { "changed since it was approved and " } else { "" },
                found(finding)
            ),
        }
    }

    /// What follows a comparison of one list, under the lock: each item held by it is
    /// logged (once: at the listing that held it), and after the server's first complete
    /// tool list its instructions are judged for other servers' tool names. Returns
    /// whether the store changed.
    fn after_observing(
        &self,
        inner: &mut Inner,
        kind: Kind,
        compared: &[Compared],
        first_complete: bool,
        scan: ScanSettings,
    ) -> bool {
        for held in compared.iter().filter(|c| c.fresh && c.seen.is_held()) {
            let what = match held.seen {
                crate::Seen::Changed => "changed since it was approved",
                crate::Seen::Added => "added after the first listing",
                crate::Seen::Unnamed => "an item without a name",
                _ => "quarantined by the scan",
            };
            let name = if held.name.is_empty() { "(no name)" } else { held.name.as_str() };
            self.log_held_as(shadowing::kind_word(Some(kind)), name, what, held.finding.as_ref());
        }
        if !(first_complete && kind == Kind::Tool) {
            return false;
        }
        let names = crate::store::other_servers_tool_names(&self.store, &self.name, &self.identity.server);
        let names: Vec<&str> = names.iter().map(String::as_str).collect();
        match shadowing::judge_instructions(&mut inner.file, &names, scan) {
            Some(finding) => {
                self.log_held("instructions", "instructions", Some(&finding));
                true
            }
            None => false,
        }
    }

    /// After a list is recorded: the tools it shows for the first time are looked for
    /// in the other servers' pins (see [`shadowing::quarantine_others`]).
    fn screen_others(&self, kind: Kind, compared: &[Compared], scan: ScanSettings) {
        if kind != Kind::Tool {
            return;
        }
        let new: BTreeSet<String> = compared
            .iter()
            .filter(|c| {
                c.fresh && matches!(c.seen, crate::Seen::FirstSight | crate::Seen::Added | crate::Seen::Quarantined)
            })
            .map(|c| c.name.clone())
            .filter(|name| !name.is_empty())
            .collect();
        for (server, what, name, finding) in
            shadowing::quarantine_others(&self.store, &self.name, self.server(), &new, scan)
        {
            let review = if what == "instructions" {
                String::new()
            } else {
                format!(" {}", clawai_scan::escape_invisible(&name))
            };
            tracing::warn!(
                "clawai holds {what} `{}` of server `{server}`: it directs the model at a tool of server `{}`: {}; \
                 review with `clawai pins diff {server}{review}`",
                clawai_scan::escape_invisible(&name),
                self.server(),
                found(&finding),
            );
        }
    }

    fn log_held(&self, what: &str, name: &str, finding: Option<&Flag>) {
        let why = if finding.is_some() { "quarantined by the scan" } else { "changed since they were approved" };
        self.log_held_as(what, name, why, finding);
    }

    /// One warning, at the moment something is held: what, why, and the commands that
    /// review and approve it.
    fn log_held_as(&self, what: &str, name: &str, why: &str, finding: Option<&Flag>) {
        let server = self.server();
        let name = clawai_scan::escape_invisible(name);
        let found = finding.map(|f| format!(": {}", found(f))).unwrap_or_default();
        let target = if what == "instructions" { String::new() } else { format!(" {name}") };
        tracing::warn!(
            "clawai holds {what}{} of server `{server}`, {why}{found}; review with `clawai pins diff {server}{target}`, \
             approve with `clawai pins approve {server} {name} --hash HASH`",
            if what == "instructions" { String::new() } else { format!(" `{name}`") },
        );
    }

    /// A scanner that knows the tool names of the other servers pinned in the same
    /// directory (the other servers a client sees, wrapped or behind the gateway), less
    /// those this server's pin file has, for the scan's cross-server check: the files
    /// are read when something is to be scanned (only tool names are parsed), never for
    /// a listing that changed nothing.
    fn other_servers_tools(&self) -> impl Fn() -> clawai_scan::Scanner + '_ {
        move || {
            let names = crate::store::other_servers_tool_names(&self.store, &self.name, &self.identity.server);
            let names: Vec<&str> = names.iter().map(String::as_str).collect();
            clawai_scan::Scanner::new(&names)
        }
    }

    /// True when the server's instructions changed since they were approved (or the
    /// scan quarantined them): nothing of it is listed and every call is refused.
    pub fn blocked(&self) -> bool {
        self.inner().file.blocked()
    }

    /// A copy of the pins as they are now.
    pub fn snapshot(&self) -> PinFile {
        self.inner().file.clone()
    }
}

impl PinFile {
    /// Whether a call to the item `name` of `kind` is refused by these pins: the server
    /// is blocked, or the item is held (the tracker's [`Tracker::refusal`], on a file
    /// as it is, for `clawai policy explain`).
    pub fn refusal(&self, kind: Kind, name: &str) -> Option<Refusal> {
        if self.blocked() {
            return Some(Refusal::Blocked {
                finding: self.instructions.as_ref().and_then(Entry::quarantined_by).cloned(),
            });
        }
        let entry = self.items(kind).get(name).filter(|entry| entry.state().is_held())?;
        Some(match entry.quarantined_by() {
            Some(finding) => Refusal::Quarantined { finding: finding.clone(), changed: entry.pinned.is_some() },
            None => Refusal::Held,
        })
    }
}

/// `class` (severity) in `field`, for a refusal.
fn found(finding: &Flag) -> String {
    let field = if finding.field.is_empty() { String::new() } else { format!(" in {}", finding.field) };
    format!("{} ({}){}", finding.class, finding.severity, clawai_scan::escape_invisible(&field))
}

#[cfg(test)]
mod tests;

//! What one session sees: computed here and nowhere else, from the catalog, the
//! servers' `internalOnly` and `agent.allowedTools`. Lists are served from the view, and
//! a call to anything outside it is refused as unknown.
//!
//! * Tools: those of servers that are not internal, within `agent.allowedTools`; of
//!   those, the lists leave out the tools the policy denies whatever their arguments
//!   (a call to one is still decided, and gets the policy's denial naming its rule).
//! * Prompts, resources and templates: those of servers that are not internal (the
//!   allowed tools name tools only).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use clawai_policy::Policy;
use clawai_policy::glob::Glob;

use crate::catalog::{Catalog, Item, ListKind};

/// One session's view of the catalog.
pub struct View {
    /// The catalog it was computed from.
    pub catalog: Arc<Catalog>,
    /// The policy it was computed with.
    pub policy: Arc<Policy>,
    visible: [Vec<usize>; 4],
    /// A digest of each visible list: a change of it is what a session is told of, and
    /// what makes the cursors of that list stale.
    pub digests: [u64; 4],
}

impl View {
    /// The view of `catalog` within `allowed_tools`, without the tools `policy` denies
    /// whatever their arguments (`always_denied`, by tool index).
    pub fn compute(
        catalog: Arc<Catalog>,
        allowed_tools: Option<&Glob>,
        policy: Arc<Policy>,
        always_denied: &[bool],
    ) -> View {
        let mut visible: [Vec<usize>; 4] = Default::default();
        let mut digests = [0; 4];
        for kind in ListKind::ALL {
            let mut hasher = DefaultHasher::new();
            for (index, item) in catalog.items(kind).enumerate() {
                let denied = kind == ListKind::Tools && always_denied.get(index).copied().unwrap_or(false);
                if shown(kind, &item, allowed_tools) && !denied {
                    visible[kind.index()].push(index);
                    item.listed.listed.hash(&mut hasher);
                    item.listed.json.get().hash(&mut hasher);
                }
            }
            digests[kind.index()] = hasher.finish();
        }
        View { catalog, policy, visible, digests }
    }

    /// The visible items of a kind, in order.
    pub fn items(&self, kind: ListKind) -> impl ExactSizeIterator<Item = Item<'_>> {
        self.visible[kind.index()].iter().map(move |&position| self.catalog.item(kind, position))
    }

    /// How many items of a kind are visible.
    pub fn len(&self, kind: ListKind) -> usize {
        self.visible[kind.index()].len()
    }

    /// The tool or prompt listed as `listed`, if this session can see it (a tool the
    /// policy always denies included: its call is decided); `None` for one that does not
    /// exist and for one this session cannot see alike.
    pub fn find(&self, kind: ListKind, listed: &str, allowed_tools: Option<&Glob>) -> Option<Item<'_>> {
        self.catalog.find(kind, listed).map(|(_, item)| item).filter(|item| shown(kind, item, allowed_tools))
    }
}

/// Whether an item is in a session's lists.
fn shown(kind: ListKind, item: &Item, allowed_tools: Option<&Glob>) -> bool {
    if item.upstream.entry.internal_only {
        return false;
    }
    match kind {
        // The full name: a glob written for `S__name` holds for its short form too, and
        // never matches the short form's hash.
        ListKind::Tools => allowed_tools.is_none_or(|allowed| allowed.is_match(&item.listed.full_name)),
        ListKind::Prompts | ListKind::Resources | ListKind::Templates => true,
    }
}

/// Whether a session may read resources of server `server` (not internal).
pub fn resources_shown(internal_only: bool) -> bool {
    !internal_only
}

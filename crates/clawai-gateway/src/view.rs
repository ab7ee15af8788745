//! What one session sees: computed here and nowhere else, from the catalog, the
//! servers' `internalOnly`, `agent.allowedTools`, the session's active skill and the
//! policy. Lists are served from the view, and a call to anything outside it is refused
//! as unknown.
//!
//! * Tools: with no active skill, or one whose `allowed-tools` is empty, those of
//!   servers that are not internal; with an active skill that names tools, those of
//!   every server (internal ones included) its globs match. Always within
//!   `agent.allowedTools`. Of those, the lists leave out the tools the policy denies
//!   whatever their arguments (a call to one is still decided, and gets the policy's
//!   denial naming its rule).
//! * Prompts, resources and templates: those of servers that are not internal (skills
//!   scope tools only).
//! * Always, first: `search_tools`, and each skill as a tool and a prompt, `skill__NAME`.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::Arc;

use clawai_policy::Policy;
use clawai_policy::glob::Glob;
use serde_json::value::RawValue;

use crate::catalog::{Catalog, Item};
use crate::lists::ListKind;
use crate::skills::{Loaded, Skill};

/// What a view is computed from.
pub(crate) struct Scope<'a> {
    /// `agent.allowedTools`.
    pub allowed_tools: Option<&'a Glob>,
    /// The session's active skill.
    pub skill: Option<&'a Skill>,
}

/// One session's view of the catalog.
pub(crate) struct View {
    /// The catalog it was computed from.
    pub catalog: Arc<Catalog>,
    /// The policy it was computed with.
    pub policy: Arc<Policy>,
    /// The skills it was computed with, and the active one's name.
    pub skills: Arc<Loaded>,
    /// The active skill's name.
    pub skill: Option<String>,
    /// The gateway's own items listed first (the skills as tools and as prompts).
    own: [Vec<Box<RawValue>>; 4],
    visible: [Vec<usize>; 4],
    /// A digest of each visible list: a change of it is what a session is told of
    /// (`list_changed`).
    pub digests: [u64; 4],
}

impl View {
    /// The view of `catalog` in `scope`, without the tools `policy` denies whatever
    /// their arguments (`always_denied`, by tool index), with `skills` listed first.
    pub(crate) fn compute(
        catalog: Arc<Catalog>,
        scope: &Scope,
        policy: Arc<Policy>,
        always_denied: &[bool],
        skills: Arc<Loaded>,
    ) -> View {
        let mut own: [Vec<Box<RawValue>>; 4] = Default::default();
        let raw = |value: serde_json::Value| serde_json::value::to_raw_value(&value).expect("JSON encodes");
        own[ListKind::Tools.index()].push(raw(crate::tool_search::tool_json()));
        for skill in &skills.skills {
            own[ListKind::Tools.index()].push(raw(skill.tool_json()));
            // `user-invocable: false`: for the model only, so no prompt (a slash command).
            if skill.user_invocable() {
                own[ListKind::Prompts.index()].push(raw(skill.prompt_json()));
            }
        }
        let mut visible: [Vec<usize>; 4] = Default::default();
        let mut digests = [0; 4];
        for kind in ListKind::ALL {
            let mut hasher = DefaultHasher::new();
            for item in &own[kind.index()] {
                item.get().hash(&mut hasher);
            }
            for (index, item) in catalog.items(kind).enumerate() {
                let denied = kind == ListKind::Tools && always_denied.get(index).copied().unwrap_or(false);
                if shown(kind, &item, scope) && !denied {
                    visible[kind.index()].push(index);
                    item.listed.listed.hash(&mut hasher);
                    item.listed.json.get().hash(&mut hasher);
                }
            }
            digests[kind.index()] = hasher.finish();
        }
        let skill = scope.skill.map(|skill| skill.name().to_owned());
        View { catalog, policy, skills, skill, own, visible, digests }
    }

    /// What the lists of a kind hold, in order, each as clients see it.
    pub(crate) fn listed(&self, kind: ListKind) -> impl Iterator<Item = &RawValue> {
        let own = self.own[kind.index()].iter().map(|item| &**item);
        let servers =
            self.visible[kind.index()].iter().map(move |&position| &*self.catalog.item(kind, position).listed.json);
        own.chain(servers)
    }

    /// How many items of a kind are listed.
    pub(crate) fn len(&self, kind: ListKind) -> usize {
        self.own[kind.index()].len() + self.visible[kind.index()].len()
    }

    /// The tool or prompt listed as `listed`, if this session can see it (a tool the
    /// policy always denies included: its call is decided); `None` for one that does not
    /// exist and for one this session cannot see alike.
    pub(crate) fn find(&self, kind: ListKind, listed: &str, allowed_tools: Option<&Glob>) -> Option<Item<'_>> {
        let skill = self.skill.as_deref().and_then(|name| self.skills.get(name));
        let scope = Scope { allowed_tools, skill };
        self.catalog.find(kind, listed).map(|(_, item)| item).filter(|item| shown(kind, item, &scope))
    }

    /// Whether this session would see an item named `full_name` of a server that is
    /// `internal_only` or not, were it in the catalog (one held by pinning is not).
    pub(crate) fn would_show(
        &self,
        kind: ListKind,
        full_name: &str,
        internal_only: bool,
        allowed_tools: Option<&Glob>,
    ) -> bool {
        let skill = self.skill.as_deref().and_then(|name| self.skills.get(name));
        shown_as(kind, full_name, internal_only, &Scope { allowed_tools, skill })
    }
}

/// Whether an item is in a session's lists.
fn shown(kind: ListKind, item: &Item, scope: &Scope) -> bool {
    // The full name: a glob written for `S__name` holds for its short form too, and
    // never matches the short form's hash.
    shown_as(kind, &item.listed.full_name, item.upstream.entry.internal_only, scope)
}

/// Whether an item named `full_name` (`S__name`) of a server that is `internal_only` or
/// not would be in a session's lists.
fn shown_as(kind: ListKind, full_name: &str, internal_only: bool, scope: &Scope) -> bool {
    match kind {
        ListKind::Tools => {
            let by_skill = scope.skill.and_then(|skill| skill.shows(full_name));
            by_skill.unwrap_or(!internal_only) && scope.allowed_tools.is_none_or(|allowed| allowed.is_match(full_name))
        }
        ListKind::Prompts | ListKind::Resources | ListKind::Templates => !internal_only,
    }
}

/// Whether a session may read resources of server `server` (not internal).
pub(crate) fn resources_shown(internal_only: bool) -> bool {
    !internal_only
}

//! What every server offers, merged under the gateway's names: rebuilt whenever a
//! server's list changes (never per request), and read by every session's view.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;
use serde_json::value::RawValue;

use crate::names;
use crate::upstream::Upstream;

/// The four lists a server may have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ListKind {
    /// `tools/list`.
    Tools,
    /// `prompts/list`.
    Prompts,
    /// `resources/list`.
    Resources,
    /// `resources/templates/list`.
    Templates,
}

impl ListKind {
    /// Every kind, in the order lists are kept.
    pub const ALL: [ListKind; 4] = [ListKind::Tools, ListKind::Prompts, ListKind::Resources, ListKind::Templates];

    /// The position of the kind in per-kind arrays.
    pub fn index(self) -> usize {
        self as usize
    }

    /// The method that lists it.
    pub fn method(self) -> &'static str {
        match self {
            ListKind::Tools => "tools/list",
            ListKind::Prompts => "prompts/list",
            ListKind::Resources => "resources/list",
            ListKind::Templates => "resources/templates/list",
        }
    }

    /// The kind a list method asks for.
    pub fn of_method(method: &str) -> Option<ListKind> {
        ListKind::ALL.into_iter().find(|kind| kind.method() == method)
    }

    /// The member of the result that holds the items.
    pub fn member(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources => "resources",
            ListKind::Templates => "resourceTemplates",
        }
    }

    /// The server capability that says the list exists.
    pub fn capability(self) -> &'static str {
        match self {
            ListKind::Tools => "tools",
            ListKind::Prompts => "prompts",
            ListKind::Resources | ListKind::Templates => "resources",
        }
    }

    /// The member that names an item (`name`, or the URI).
    fn key(self) -> &'static str {
        match self {
            ListKind::Tools | ListKind::Prompts => "name",
            ListKind::Resources => "uri",
            ListKind::Templates => "uriTemplate",
        }
    }
}

/// One item as the gateway lists it.
pub struct Item {
    /// The server it comes from.
    pub upstream: Arc<Upstream>,
    /// The server's own name (or URI) for it.
    pub original: String,
    /// The gateway's name (or URI) for it.
    pub listed: String,
    /// The item as clients see it, encoded once.
    pub json: Box<RawValue>,
}

/// Every server's items, merged.
#[derive(Default)]
pub struct Catalog {
    /// Bumped on every rebuild.
    pub generation: u64,
    lists: [Vec<Item>; 4],
    by_name: [HashMap<String, usize>; 4],
}

impl Catalog {
    /// The catalog of `upstreams` (the running servers, in name order).
    pub fn build(upstreams: &[Arc<Upstream>], generation: u64) -> Catalog {
        let mut catalog = Catalog { generation, ..Catalog::default() };
        for upstream in upstreams {
            let lists = upstream.lists();
            for kind in ListKind::ALL {
                for item in &lists.items[kind.index()] {
                    catalog.add(kind, upstream, item);
                }
            }
        }
        catalog
    }

    fn add(&mut self, kind: ListKind, upstream: &Arc<Upstream>, item: &Value) {
        let Some(original) = item.get(kind.key()).and_then(Value::as_str) else { return };
        let listed = match kind {
            ListKind::Tools | ListKind::Prompts => names::namespaced(&upstream.name, original),
            ListKind::Resources | ListKind::Templates => names::resource_uri(&upstream.name, original),
        };
        let by_name = &mut self.by_name[kind.index()];
        if by_name.contains_key(&listed) {
            tracing::warn!("{}: `{original}` is listed twice; the first is kept", upstream.name);
            return;
        }
        let mut shown = item.clone();
        shown[kind.key()] = Value::String(listed.clone());
        let json = serde_json::value::to_raw_value(&shown).expect("a JSON value encodes");
        by_name.insert(listed.clone(), self.lists[kind.index()].len());
        self.lists[kind.index()].push(Item {
            upstream: Arc::clone(upstream),
            original: original.to_owned(),
            listed,
            json,
        });
    }

    /// Every item of a kind.
    pub fn items(&self, kind: ListKind) -> &[Item] {
        &self.lists[kind.index()]
    }

    /// The item listed under `listed`.
    pub fn find(&self, kind: ListKind, listed: &str) -> Option<&Item> {
        self.by_name[kind.index()].get(listed).map(|&index| &self.lists[kind.index()][index])
    }
}

//! What every server offers, merged under the gateway's names: rebuilt whenever a
//! server's list changes (never per request), and read by every session's view.

use clawai_protocol::methods;
use std::collections::HashMap;
use std::sync::Arc;

use clawai_policy::{Call, Policy};

use crate::lists::{ListKind, Listed, Lists};
use crate::upstream::Upstream;

/// One item as the gateway lists it, with its server.
#[derive(Clone, Copy)]
pub(crate) struct Item<'a> {
    /// The server it comes from.
    pub upstream: &'a Arc<Upstream>,
    /// The item.
    pub listed: &'a Listed,
}

/// Every server's items, merged (the rendered items are shared with the servers' lists).
#[derive(Default)]
pub(crate) struct Catalog {
    /// Bumped on every rebuild.
    pub generation: u64,
    sources: Vec<(Arc<Upstream>, Arc<Lists>)>,
    /// Per kind: (source, item) in listing order.
    order: [Vec<(u32, u32)>; 4],
    by_name: [HashMap<String, usize>; 4],
}

impl Catalog {
    /// The catalog of `upstreams` (the running servers, in name order).
    pub(crate) fn build(upstreams: &[Arc<Upstream>], generation: u64) -> Catalog {
        let mut catalog = Catalog { generation, ..Catalog::default() };
        for upstream in upstreams {
            let source = catalog.sources.len() as u32;
            let lists = upstream.lists();
            for kind in ListKind::ALL {
                for (index, item) in lists.items[kind.index()].iter().enumerate() {
                    let position = catalog.order[kind.index()].len();
                    // Server names differ and hold no `__`: names of two servers never meet.
                    catalog.by_name[kind.index()].entry(item.listed.clone()).or_insert(position);
                    catalog.order[kind.index()].push((source, index as u32));
                }
            }
            catalog.sources.push((Arc::clone(upstream), lists));
        }
        catalog
    }

    /// The item of a kind at a position of its list.
    pub(crate) fn item(&self, kind: ListKind, position: usize) -> Item<'_> {
        let (source, index) = self.order[kind.index()][position];
        let (upstream, lists) = &self.sources[source as usize];
        Item { upstream, listed: &lists.items[kind.index()][index as usize] }
    }

    /// How many items of a kind there are.
    pub(crate) fn len(&self, kind: ListKind) -> usize {
        self.order[kind.index()].len()
    }

    /// Every item of a kind, in order.
    pub(crate) fn items(&self, kind: ListKind) -> impl ExactSizeIterator<Item = Item<'_>> {
        (0..self.len(kind)).map(move |position| self.item(kind, position))
    }

    /// For each tool, whether `policy` denies every call to it whatever the arguments
    /// (such tools are left out of lists; a call still gets the policy's denial).
    pub(crate) fn always_denied_tools(&self, policy: &Policy) -> Vec<bool> {
        self.items(ListKind::Tools)
            .map(|item| {
                let call = Call {
                    method: methods::TOOLS_CALL,
                    name: Some(&item.listed.original),
                    arguments: None,
                    server: Some(&item.upstream.name),
                    annotations: Some(item.listed.annotations),
                    follow_links: None,
                };
                policy.denies_whatever_the_arguments(&call).is_some()
            })
            .collect()
    }

    /// The item listed under `listed`, with its position.
    pub(crate) fn find(&self, kind: ListKind, listed: &str) -> Option<(usize, Item<'_>)> {
        self.by_name[kind.index()].get(listed).map(|&position| (position, self.item(kind, position)))
    }
}

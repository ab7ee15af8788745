//! A search made while servers are still starting misses their tools: the answer names
//! them, and the session is sent `notifications/tools/list_changed` once the last of
//! them is up, so that the client (or its model) knows to search again.

use crate::lock;
use crate::upstream::Status;

use super::Session;

impl Session {
    /// The servers whose tools a search now cannot see, because they are starting (or
    /// starting again); remembered, to tell the session when they are all up.
    pub(super) fn servers_not_up_for_search(&self) -> Vec<String> {
        let starting: Vec<String> = self
            .core
            .upstreams()
            .iter()
            .filter(|upstream| matches!(upstream.status(), Status::Starting | Status::Down(_)))
            .map(|upstream| upstream.name.clone())
            .collect();
        if !starting.is_empty() {
            let mut waiting = lock(&self.searched_without);
            for name in &starting {
                if !waiting.contains(name) {
                    waiting.push(name.clone());
                }
            }
        }
        starting
    }

    /// True, once, when the servers a search missed are all up (or removed): the
    /// session is to be told its tool list changed.
    pub(super) fn missed_servers_came_up(&self) -> bool {
        let mut waiting = lock(&self.searched_without);
        if waiting.is_empty() {
            return false;
        }
        let all_up = waiting.iter().all(|name| self.core.upstream(name).is_none_or(|upstream| upstream.is_up()));
        if all_up {
            waiting.clear();
        }
        all_up
    }
}

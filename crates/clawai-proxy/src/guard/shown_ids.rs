//! The ids the audit trail shows when a transport replaces the client's ids on the way
//! in: the shared session of 2026-07-28 clients behind `--listen` gives every request an
//! id of its own (clients' ids collide there), and the trail must still show the id the
//! client sent, so that its request can be found.

use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Mutex;

use super::Guard;

/// Replaced id (as written) → the id the client sent (as written). `None` for a guard
/// whose transport forwards ids as they are (every other one): nothing is looked up.
#[derive(Default)]
pub(super) struct ShownIds(Option<Mutex<HashMap<String, String>>>);

impl Guard {
    /// The same guard for a transport that forwards requests under ids of its own: the
    /// audit trail shows the ids the clients sent, as registered with
    /// [`Guard::client_sent_id`].
    pub fn showing_client_ids(mut self) -> Guard {
        self.shown_ids = ShownIds(Some(Mutex::default()));
        self
    }

    /// Registers that the request forwarded with id `replaced` (as written) carried `sent`
    /// when the client sent it; done before the request goes through the guard.
    pub fn client_sent_id(&self, replaced: &str, sent: &str) {
        if let Some(map) = &self.shown_ids.0 {
            map.lock().unwrap_or_else(|p| p.into_inner()).insert(replaced.to_owned(), sent.to_owned());
        }
    }

    /// Forgets a registered id once its request is answered (or refused).
    pub fn forget_client_id(&self, replaced: &str) {
        if let Some(map) = &self.shown_ids.0 {
            map.lock().unwrap_or_else(|p| p.into_inner()).remove(replaced);
        }
    }

    /// The id the audit trail shows for `id` (as written).
    pub(super) fn shown_id<'a>(&self, id: &'a str) -> Cow<'a, str> {
        let Some(map) = &self.shown_ids.0 else { return Cow::Borrowed(id) };
        match map.lock().unwrap_or_else(|p| p.into_inner()).get(id) {
            Some(sent) => Cow::Owned(sent.clone()),
            None => Cow::Borrowed(id),
        }
    }
}

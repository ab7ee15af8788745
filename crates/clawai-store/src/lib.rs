#![warn(missing_docs)]
//! Where clawai keeps the state that must outlive one decision, behind one interface per
//! kind, so that the code that uses it does not know where it lives.
//!
//! * [`SessionMemory`]: what one client session has done: its taint labels, the
//!   moments its `rate` rules counted, the calls a person allowed for the session.
//!   Opened per session from a [`SessionStore`].
//! * [`Documents`]: versioned documents written whole (one server's pins; the standing
//!   approvals), each under a name.
//! * [`Keyring`]: the keys that seal what clawai hands a client and reads back (list
//!   cursors, `requestState`), so that a token sealed by one process opens in another
//!   that shares the keyring.
//!
//! Today's behaviour is the local implementation of each ([`LocalSessions`],
//! [`DirDocuments`], [`LocalKeyring`]): process memory and files. [`Stores`] is the set a
//! process chooses at start-up; a shared implementation (cluster mode) is another set of
//! the same interfaces.

mod claims;
mod documents;
mod keyring;
mod session;

use std::sync::Arc;

pub use claims::{Found, SessionClaims};
pub use documents::{DirDocuments, DocumentError, Documents, Version};
pub use keyring::{KeyPurpose, Keyring, LocalKeyring};
pub use session::{Count, LocalSessionMemory, LocalSessions, SessionMemory, SessionStore, Unavailable};

/// The stores a process uses, chosen once at start-up.
#[derive(Clone)]
pub struct Stores {
    /// Per-session memory (taint, rate windows, session grants).
    pub sessions: Arc<dyn SessionStore>,
    /// The sealing keys.
    pub keyring: Arc<dyn Keyring>,
    /// Who owns each session, when sessions are shared by replicas (`None`: each
    /// session lives in the process that made it).
    pub claims: Option<Arc<dyn SessionClaims>>,
    /// The pins, when replicas share them (`None`: the pins directory of this machine).
    pub pins: Option<Arc<dyn Documents>>,
    /// The standing approvals, when replicas share them (`None`: this machine's
    /// approvals.toml).
    pub approvals: Option<Arc<dyn Documents>>,
}

impl Stores {
    /// This process's memory and a fresh keyring: what clawai does on one machine.
    pub fn local() -> Stores {
        Stores {
            sessions: Arc::new(LocalSessions),
            keyring: Arc::new(LocalKeyring::new()),
            claims: None,
            pins: None,
            approvals: None,
        }
    }
}

impl Default for Stores {
    fn default() -> Stores {
        Stores::local()
    }
}

impl std::fmt::Debug for Stores {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Stores").finish_non_exhaustive()
    }
}

//! Where calls held for a person wait: one interface, chosen at start-up. The local one
//! is the broker `clawai ui` runs on this machine ([`LocalBroker`], a Unix socket); a
//! shared one (cluster mode) lets a person answer from any replica.

use std::time::Duration;

use crate::client::{Canceller, Client, Error, Pending};
use crate::protocol::{Answer, Ask};

/// Holds calls for a person.
pub trait HeldApprovals: Send + Sync + std::fmt::Debug {
    /// Holds `ask` until a person answers it, it times out or it is withdrawn.
    /// [`Error::NoBroker`] when nobody can answer (no broker runs).
    fn hold(&self, ask: &Ask) -> Result<Box<dyn HeldCall>, Error>;
}

/// One held call, as the thread that waits for it sees it.
pub trait HeldCall: Send {
    /// The approval's id, which a person types in `clawai approve ID`.
    fn id(&self) -> &str;

    /// Waits up to `timeout` for the answer; `None` when none came in time.
    fn wait(&mut self, timeout: Duration) -> Result<Option<Answer>, Error>;

    /// The call was answered "approval pending": the approval stays listed, and
    /// approving it lets the next identical call through once.
    fn timed_out(self: Box<Self>) -> Result<(), Error>;

    /// A handle another thread can use to withdraw the call while this one waits.
    fn withdrawer(&self) -> Result<Box<dyn Withdraw>, Error>;
}

/// Withdraws a held call (its client cancelled it), from any thread.
pub trait Withdraw: Send {
    /// Withdraws the call; a wait in progress ends at once.
    fn withdraw(self: Box<Self>) -> Result<(), Error>;
}

/// The broker of `clawai ui` on this machine, reached at [`crate::socket_path`] for
/// every call held.
#[derive(Debug, Clone, Copy, Default)]
pub struct LocalBroker;

impl HeldApprovals for LocalBroker {
    fn hold(&self, ask: &Ask) -> Result<Box<dyn HeldCall>, Error> {
        Ok(Box::new(Client::connect()?.ask(ask)?))
    }
}

impl HeldCall for Pending {
    fn id(&self) -> &str {
        Pending::id(self)
    }

    fn wait(&mut self, timeout: Duration) -> Result<Option<Answer>, Error> {
        Pending::wait(self, timeout)
    }

    fn timed_out(self: Box<Self>) -> Result<(), Error> {
        Pending::timed_out(*self)
    }

    fn withdrawer(&self) -> Result<Box<dyn Withdraw>, Error> {
        Ok(Box::new(self.canceller()?))
    }
}

impl Withdraw for Canceller {
    fn withdraw(self: Box<Self>) -> Result<(), Error> {
        self.cancel()
    }
}

/// Letters and digits a person cannot confuse when typing `clawai approve ID`: no
/// I/1/L, O/0.
const ID_ALPHABET: &[u8] = b"ABCDEFGHJKMNPQRSTUVWXYZ23456789";

/// A new approval id: six characters from [`ID_ALPHABET`] (`K7P2QD`), each equally
/// likely (rejection sampling), from the operating system's random source.
pub fn approval_id() -> String {
    use ring::rand::{SecureRandom, SystemRandom};
    let limit = 256 - 256 % ID_ALPHABET.len();
    let mut id = String::with_capacity(6);
    while id.len() < 6 {
        let mut bytes = [0u8; 16];
        // Without the system's random source no id could be trusted to be unguessable.
        SystemRandom::new().fill(&mut bytes).expect("the operating system's random source failed");
        for b in bytes {
            if (b as usize) < limit && id.len() < 6 {
                id.push(ID_ALPHABET[b as usize % ID_ALPHABET.len()] as char);
            }
        }
    }
    id
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approval_ids_are_six_unambiguous_characters_and_differ() {
        let (a, b) = (approval_id(), approval_id());
        assert_eq!(a.len(), 6);
        assert!(a.bytes().all(|c| ID_ALPHABET.contains(&c)), "{a}");
        assert_ne!(a, b);
    }
}

//! The keys that seal what clawai hands a client and later reads back.

use ring::rand::{SecureRandom, SystemRandom};

/// What a key seals: each purpose has its own key, so that a token of one kind never
/// opens as another.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum KeyPurpose {
    /// The gateway's list cursors.
    Cursors,
    /// The `requestState` of a 2026-07-28 call held for a person.
    RequestState,
}

impl KeyPurpose {
    /// Every purpose.
    pub const ALL: [KeyPurpose; 2] = [KeyPurpose::Cursors, KeyPurpose::RequestState];
}

/// Gives the key for each purpose: the same key for as long as the keyring lives, and
/// in every process that shares it.
pub trait Keyring: Send + Sync {
    /// The 256-bit key for `purpose`.
    fn key(&self, purpose: KeyPurpose) -> [u8; 32];
}

/// Keys made at random when the keyring is made, kept in this process: a token sealed
/// by another process (or before a restart) does not open.
pub struct LocalKeyring {
    keys: [[u8; 32]; KeyPurpose::ALL.len()],
}

impl LocalKeyring {
    /// Fresh random keys.
    pub fn new() -> LocalKeyring {
        let random = SystemRandom::new();
        let mut keys = [[0u8; 32]; KeyPurpose::ALL.len()];
        for key in &mut keys {
            // The system's random source does not fail on Linux once the kernel has booted.
            random.fill(key).expect("the operating system's random source works");
        }
        LocalKeyring { keys }
    }
}

impl Default for LocalKeyring {
    fn default() -> LocalKeyring {
        LocalKeyring::new()
    }
}

impl Keyring for LocalKeyring {
    fn key(&self, purpose: KeyPurpose) -> [u8; 32] {
        let index = KeyPurpose::ALL.iter().position(|p| *p == purpose).expect("every purpose is in ALL");
        self.keys[index]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_purpose_has_its_own_key_and_each_keyring_its_own_keys() {
        let ring = LocalKeyring::new();
        assert_ne!(ring.key(KeyPurpose::Cursors), ring.key(KeyPurpose::RequestState));
        assert_eq!(ring.key(KeyPurpose::Cursors), ring.key(KeyPurpose::Cursors));
        assert_ne!(ring.key(KeyPurpose::Cursors), LocalKeyring::new().key(KeyPurpose::Cursors));
    }
}

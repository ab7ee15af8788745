//! One keyring for every replica: each purpose's key is made once, by whichever
//! replica comes first (`SET NX`), and read by all.

use clawai_store::{KeyPurpose, Keyring, Unavailable};
use ring::rand::{SecureRandom, SystemRandom};

use crate::{PREFIX, Redis};

/// The sealing keys kept in Redis, read once at start-up: a cursor or a retry sealed on
/// one replica opens on every other.
pub struct RedisKeyring {
    keys: [[u8; 32]; KeyPurpose::ALL.len()],
}

fn key_name(purpose: KeyPurpose) -> String {
    let purpose = match purpose {
        KeyPurpose::Cursors => "cursors",
        KeyPurpose::RequestState => "request-state",
    };
    format!("{PREFIX}key:{purpose}")
}

impl RedisKeyring {
    /// Reads every purpose's key, making the ones nobody made yet.
    pub fn load(redis: &Redis) -> Result<RedisKeyring, Unavailable> {
        let random = SystemRandom::new();
        let mut keys = [[0u8; 32]; KeyPurpose::ALL.len()];
        for (slot, purpose) in keys.iter_mut().zip(KeyPurpose::ALL) {
            let mut fresh = [0u8; 32];
            random.fill(&mut fresh).expect("the operating system's random source works");
            let name = key_name(purpose);
            let stored: Vec<u8> = redis.bridge.block(move |mut connection| async move {
                redis::pipe()
                    .cmd("SET")
                    .arg(&name)
                    .arg(&fresh[..])
                    .arg("NX")
                    .ignore()
                    .cmd("GET")
                    .arg(&name)
                    .query_async::<(Vec<u8>,)>(&mut connection)
                    .await
                    .map(|(stored,)| stored)
            })?;
            *slot = stored.try_into().map_err(|stored: Vec<u8>| {
                Unavailable::Unreachable(format!(
                    "{} in Redis holds {} bytes, not a 32-byte key; delete it and restart every replica",
                    key_name(purpose),
                    stored.len()
                ))
            })?;
        }
        Ok(RedisKeyring { keys })
    }
}

impl Keyring for RedisKeyring {
    fn key(&self, purpose: KeyPurpose) -> [u8; 32] {
        let index = KeyPurpose::ALL.iter().position(|p| *p == purpose).expect("every purpose is in ALL");
        self.keys[index]
    }
}

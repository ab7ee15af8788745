//! Sealed `requestState` for 2026-07-28 clients, which have no server-to-client
//! requests: clawai answers a held call itself with `resultType: "input_required"`, the
//! question as an input request, and a state only clawai can have written. The client
//! retries the call with the person's answer and that state; clawai opens it and checks
//! that it is its own (HMAC-SHA256 under a key made at random when the process starts),
//! not expired, not used before, and bound to this very call: the session, server,
//! method, name and the digest of the canonical parameters. A state for another call,
//! an edited one, or one replayed is refused.
//!
//! When the server, after an approved call, asks for input of its own, its state rides
//! inside clawai's ([`State::inner`]) so that the retry is known to be approved and the
//! server gets back exactly what it wrote.

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use serde::{Deserialize, Serialize};

/// The prefix of every state clawai writes.
const PREFIX: &str = "clawai.v1.";

/// What a sealed state is bound to.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    /// The session (one client connection).
    pub session: &'a str,
    /// The server's name.
    pub server: Option<&'a str>,
    /// The method of the call.
    pub method: &'a str,
    /// The tool or prompt name, or the resource URI.
    pub name: Option<&'a str>,
    /// The digest of the call's canonical parameters, without clawai's and the
    /// protocol's retry keys.
    pub digest: &'a str,
}

/// Where a call stands, as its sealed state says.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Stage {
    /// clawai asked the person; the retry carries the answer.
    Asked,
    /// A person allowed the call; the server asked for input of its own.
    Approved,
}

/// What a sealed state carries.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// Where the call stands.
    pub stage: Stage,
    /// The server's own `requestState`, given back to it on the retry.
    pub inner: Option<String>,
}

/// Why a state was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SealError {
    /// Not a state clawai writes.
    #[error("the requestState is not one clawai wrote")]
    Malformed,
    /// clawai's spelling, but not clawai's signature: edited or forged.
    #[error("the requestState was altered")]
    Forged,
    /// A genuine state, for another call.
    #[error("the requestState belongs to another call")]
    OtherCall,
    /// A genuine state, too old.
    #[error("the requestState has expired; call again to be asked again")]
    Expired,
    /// A genuine state, already used.
    #[error("the requestState was already used")]
    Replayed,
}

#[derive(Serialize, Deserialize)]
struct Payload {
    /// A random nonce: each state opens once.
    n: String,
    /// Expiry, milliseconds since the epoch.
    x: u64,
    s: String,
    v: Option<String>,
    m: String,
    k: Option<String>,
    d: String,
    st: State,
}

/// Seals and opens states under a key of this process.
pub struct Sealer {
    key: hmac::Key,
    random: SystemRandom,
    /// Nonces opened, with their expiry (forgotten once expired: they cannot open then).
    used: Mutex<HashMap<String, u64>>,
}

impl fmt::Debug for Sealer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Sealer")
    }
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

impl Sealer {
    /// A sealer with a fresh random key.
    pub fn new() -> Sealer {
        use clawai_store::Keyring as _;
        Sealer::with_key(clawai_store::LocalKeyring::new().key(clawai_store::KeyPurpose::RequestState))
    }

    /// A sealer with `key` (from the keyring in use: every sealer with the same key opens
    /// what the others sealed).
    pub fn with_key(key: [u8; 32]) -> Sealer {
        let key = hmac::Key::new(hmac::HMAC_SHA256, &key);
        Sealer { key, random: SystemRandom::new(), used: Mutex::new(HashMap::new()) }
    }

    /// A state for this call, valid for `ttl`.
    pub fn seal(&self, binding: &Binding, state: State, ttl: Duration) -> String {
        let mut nonce = [0u8; 16];
        self.random.fill(&mut nonce).expect("the system's random source works");
        let payload = Payload {
            n: URL_SAFE_NO_PAD.encode(nonce),
            x: now_ms() + ttl.as_millis() as u64,
            s: binding.session.to_owned(),
            v: binding.server.map(str::to_owned),
            m: binding.method.to_owned(),
            k: binding.name.map(str::to_owned),
            d: binding.digest.to_owned(),
            st: state,
        };
        let body = URL_SAFE_NO_PAD.encode(serde_json::to_vec(&payload).unwrap_or_default());
        let tag = hmac::sign(&self.key, body.as_bytes());
        format!("{PREFIX}{body}.{}", URL_SAFE_NO_PAD.encode(tag.as_ref()))
    }

    /// True when `token` looks like a state of clawai's (it may still be refused).
    pub fn is_ours(token: &str) -> bool {
        token.starts_with(PREFIX)
    }

    /// Opens a state for this call, once.
    pub fn open(&self, token: &str, binding: &Binding) -> Result<State, SealError> {
        let (state, nonce, expiry) = self.check(token, binding)?;
        let now = now_ms();
        let mut used = self.used.lock().unwrap_or_else(|e| e.into_inner());
        used.retain(|_, expiry| *expiry > now);
        if used.insert(nonce, expiry).is_some() {
            return Err(SealError::Replayed);
        }
        Ok(state)
    }

    /// Whether `token` would open for this call now (sealed by this process, for this
    /// call, not expired, not used), without using it up.
    pub fn would_open(&self, token: &str, binding: &Binding) -> bool {
        self.check(token, binding).is_ok_and(|(_, nonce, _)| {
            let used = self.used.lock().unwrap_or_else(|e| e.into_inner());
            !used.contains_key(&nonce)
        })
    }

    /// The state sealed in `token` for this call, with its nonce and expiry.
    fn check(&self, token: &str, binding: &Binding) -> Result<(State, String, u64), SealError> {
        let rest = token.strip_prefix(PREFIX).ok_or(SealError::Malformed)?;
        let (body, tag) = rest.split_once('.').ok_or(SealError::Malformed)?;
        let tag = URL_SAFE_NO_PAD.decode(tag).map_err(|_| SealError::Malformed)?;
        hmac::verify(&self.key, body.as_bytes(), &tag).map_err(|_| SealError::Forged)?;
        let bytes = URL_SAFE_NO_PAD.decode(body).map_err(|_| SealError::Malformed)?;
        let payload: Payload = serde_json::from_slice(&bytes).map_err(|_| SealError::Malformed)?;
        let same_call = payload.s == binding.session
            && payload.v.as_deref() == binding.server
            && payload.m == binding.method
            && payload.k.as_deref() == binding.name
            && payload.d == binding.digest;
        if !same_call {
            return Err(SealError::OtherCall);
        }
        if payload.x <= now_ms() {
            return Err(SealError::Expired);
        }
        Ok((payload.st, payload.n, payload.x))
    }
}

impl Default for Sealer {
    fn default() -> Self {
        Sealer::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn binding<'a>(name: &'a str, digest: &'a str) -> Binding<'a> {
        Binding { session: "s1", server: Some("fs"), method: "tools/call", name: Some(name), digest }
    }

    const ASKED: State = State { stage: Stage::Asked, inner: None };

    #[test]
    fn a_state_opens_once_for_its_own_call() {
        let sealer = Sealer::new();
        let token = sealer.seal(&binding("write", "d1"), ASKED, Duration::from_secs(60));
        assert!(Sealer::is_ours(&token));
        assert!(sealer.would_open(&token, &binding("write", "d1")), "looking uses nothing up");
        assert!(!sealer.would_open(&token, &binding("write", "d2")), "another call's");
        assert!(!sealer.would_open("clawai.v1.forged.tag", &binding("write", "d1")));
        assert_eq!(sealer.open(&token, &binding("write", "d1")), Ok(ASKED));
        assert!(!sealer.would_open(&token, &binding("write", "d1")), "used");
        assert_eq!(sealer.open(&token, &binding("write", "d1")), Err(SealError::Replayed));
    }

    #[test]
    fn a_state_for_another_call_session_or_server_is_refused() {
        let sealer = Sealer::new();
        let token = sealer.seal(&binding("write", "d1"), ASKED, Duration::from_secs(60));
        assert_eq!(sealer.open(&token, &binding("delete", "d1")), Err(SealError::OtherCall));
        assert_eq!(sealer.open(&token, &binding("write", "d2")), Err(SealError::OtherCall));
        let other_session = Binding { session: "s2", ..binding("write", "d1") };
        assert_eq!(sealer.open(&token, &other_session), Err(SealError::OtherCall));
        let other_server = Binding { server: Some("gh"), ..binding("write", "d1") };
        assert_eq!(sealer.open(&token, &other_server), Err(SealError::OtherCall));
    }

    #[test]
    fn edited_forged_foreign_and_expired_states_are_refused() {
        let sealer = Sealer::new();
        let token = sealer.seal(&binding("write", "d1"), ASKED, Duration::from_secs(60));
        // Flip the stage inside the body and keep the tag.
        let (body, tag) = token.strip_prefix(PREFIX).unwrap().split_once('.').unwrap();
        let mut payload: serde_json::Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(body).unwrap()).unwrap();
        payload["st"]["stage"] = serde_json::json!("Approved");
        let edited = format!("{PREFIX}{}.{tag}", URL_SAFE_NO_PAD.encode(serde_json::to_vec(&payload).unwrap()));
        assert_eq!(sealer.open(&edited, &binding("write", "d1")), Err(SealError::Forged));
        // Another process's key.
        let elsewhere = Sealer::new().seal(&binding("write", "d1"), ASKED, Duration::from_secs(60));
        assert_eq!(sealer.open(&elsewhere, &binding("write", "d1")), Err(SealError::Forged));
        assert_eq!(sealer.open("opaque-server-state", &binding("write", "d1")), Err(SealError::Malformed));
        assert_eq!(sealer.open(&format!("{PREFIX}x.y"), &binding("write", "d1")), Err(SealError::Malformed));
        let expired = sealer.seal(&binding("write", "d1"), ASKED, Duration::ZERO);
        assert_eq!(sealer.open(&expired, &binding("write", "d1")), Err(SealError::Expired));
    }

    #[test]
    fn the_servers_state_rides_inside() {
        let sealer = Sealer::new();
        let state = State { stage: Stage::Approved, inner: Some("server-opaque".into()) };
        let token = sealer.seal(&binding("write", "d1"), state.clone(), Duration::from_secs(60));
        assert!(!token.contains("server-opaque"), "the inner state is not readable as written");
        assert_eq!(sealer.open(&token, &binding("write", "d1")), Ok(state));
    }
}

//! A replica's lease: one key in Redis, `clawai:replica:ID`, that lives [`LEASE`] after
//! each renewal and is renewed every [`RENEW_EVERY`] for all the sessions the replica
//! holds at once. While the key lives, no other replica takes one of those sessions
//! over unless this replica let it go (`TAKE_OVER` waits: see `scripts.rs`), so the
//! owner may decide on what it holds without asking Redis at every request whether the
//! session is still its own.
//!
//! The owner trusts its lease by its own clock: from the moment it *sent* a renewal
//! that Redis answered, for [`LEASE`] less [`MARGIN`]. Redis set the key's expiry
//! when the renewal reached it, which is later, by its own clock, so the key outlives
//! the owner's trust (as long as the two clocks run at about the same rate; a jump of
//! the Redis host's clock is not covered, as with any lease). A renewal that finds the
//! key gone (it lapsed, or Redis lost its data) starts a new *term*: a session claimed
//! under an earlier term may have been taken over meanwhile, and is asked about once
//! more before it is trusted again.
//!
//! Each renewal also collects the sessions other replicas asked this one to let go of
//! (`clawai:replica:ID:release`): the owner stops deciding on its copies first, then
//! marks them let go in Redis, and the waiting replica takes them over.

use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::{Duration, Instant};

use clawai_store::Unavailable;
use ring::rand::{SecureRandom, SystemRandom};

use crate::bridge::Bridge;
use crate::common::{PREFIX, session_hash};
use crate::{Redis, scripts};

/// How long the lease key lives after a renewal. A replica killed with `kill -9` holds
/// its sessions this long at most: a takeover of one of them waits for it.
pub(crate) const LEASE: Duration = Duration::from_millis(75);

/// How often the lease is renewed (three times a lease: two renewals may be late or
/// lost before the owner stops trusting it).
pub(crate) const RENEW_EVERY: Duration = Duration::from_millis(25);

/// What the owner takes off its lease for the difference between its clock and the
/// Redis clock over one lease.
pub(crate) const MARGIN: Duration = Duration::from_millis(15);

/// The lease key of replica `replica`.
pub(crate) fn lease_key(replica: &str) -> String {
    format!("{PREFIX}replica:{replica}")
}

/// The set of sessions other replicas asked `replica` to let go of.
pub(crate) fn release_key(replica: &str) -> String {
    format!("{PREFIX}replica:{replica}:release")
}

/// What this replica knows of its lease.
#[derive(Debug, Default)]
pub(crate) struct Lease {
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// Counted up by every renewal that found the key gone; 0 before the first.
    term: u64,
    /// Until when this replica trusts its lease, by its own clock.
    until: Option<Instant>,
}

impl Lease {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The current term while the lease is trusted now, else `None`.
    pub(crate) fn trusted_term(&self) -> Option<u64> {
        let state = self.state();
        state.until.filter(|until| Instant::now() < *until).map(|_| state.term)
    }

    /// Redis answered a renewal sent at `sent`: `continued` when the key was still
    /// there, holding this process's token.
    pub(crate) fn renewed(&self, sent: Instant, continued: bool) {
        let mut state = self.state();
        if !continued {
            state.term += 1;
        }
        state.until = Some(sent + LEASE - MARGIN);
    }
}

/// What the renewal task reaches of the sessions a replica holds (the sessions' store
/// implements it): the lease to renew, the token its key holds, and the sessions to let
/// go of when other replicas ask.
pub(crate) trait Holder: Send + Sync + 'static {
    /// What this replica knows of its lease.
    fn lease(&self) -> &Lease;
    /// What this process's lease key holds.
    fn token(&self) -> &str;
    /// Stops deciding on the copies of `ids`: other replicas take them over.
    fn let_go(&self, ids: &[String]);
}

/// What a renewal found.
enum Renewal {
    /// The lease is this process's: `continued` unless the key was gone; `release`: the
    /// sessions others asked for.
    Ours { continued: bool, release: Vec<String> },
    /// Another process renews this replica id's lease (two replicas given one
    /// `--replica-id`): this one has none, and asks Redis at every request.
    Elsewhere,
}

/// Starts the task that renews `redis`'s replica's lease every [`RENEW_EVERY`] and lets
/// go of the sessions other replicas ask for. It ends when the stores are dropped.
pub(crate) fn start<H: Holder>(redis: &Redis, held: &Arc<H>) {
    let token = held.token().to_owned();
    let renewing = renew(Arc::downgrade(&redis.bridge), Arc::clone(&redis.replica), token, Arc::downgrade(held));
    redis.bridge.spawn(renewing);
}

/// A process's lease token: 128 random bits in hex.
pub(crate) fn new_token() -> String {
    let mut token = [0u8; 16];
    SystemRandom::new().fill(&mut token).expect("the operating system's random source works");
    token.iter().map(|byte| format!("{byte:02x}")).collect()
}

async fn renew<H: Holder>(bridge: Weak<Bridge>, replica: Arc<str>, token: String, held: Weak<H>) {
    let mut elsewhere = false;
    loop {
        let sent = Instant::now();
        let (Some(bridge), Some(held)) = (bridge.upgrade(), held.upgrade()) else { return };
        match renew_once(&bridge, &replica, &token).await {
            Ok(Renewal::Ours { continued, release }) => {
                held.lease().renewed(sent, continued);
                elsewhere = false;
                if !release.is_empty() {
                    held.let_go(&release);
                    if let Err(why) = released(&bridge, &replica, release).await {
                        // Those waiting ask again, and the next renewal answers them.
                        tracing::debug!("cannot tell Redis which sessions this replica let go: {why}");
                    }
                }
            }
            Ok(Renewal::Elsewhere) if !elsewhere => {
                elsewhere = true;
                tracing::warn!(
                    "another process renews the lease of replica id {replica}: give each replica its own --replica-id"
                );
            }
            Ok(Renewal::Elsewhere) => {}
            // The lease runs out by itself; sessions are asked about at each request.
            Err(why) => tracing::debug!("cannot renew this replica's lease: {why}"),
        }
        drop((bridge, held));
        tokio::time::sleep_until((sent + RENEW_EVERY).into()).await;
    }
}

async fn renew_once(bridge: &Bridge, replica: &str, token: &str) -> Result<Renewal, Unavailable> {
    let (lease, release, token) = (lease_key(replica), release_key(replica), token.to_owned());
    let millis = LEASE.as_millis() as u64;
    let answer: redis::Value = bridge
        .run(move |mut connection| async move {
            scripts::RENEW.key(lease).key(release).arg(token).arg(millis).invoke_async(&mut connection).await
        })
        .await?;
    let unexpected =
        |e: &dyn std::fmt::Display| Unavailable::Unreachable(format!("an unexpected answer to a renewal: {e}"));
    let items: Vec<redis::Value> = redis::from_redis_value(answer).map_err(|e| unexpected(&e))?;
    let mut items = items.into_iter();
    let held: i64 =
        redis::from_redis_value(items.next().ok_or_else(|| unexpected(&"nothing"))?).map_err(|e| unexpected(&e))?;
    let release: Vec<String> = match items.next() {
        Some(ids) => redis::from_redis_value(ids).map_err(|e| unexpected(&e))?,
        None => Vec::new(),
    };
    Ok(if held < 0 { Renewal::Elsewhere } else { Renewal::Ours { continued: held == 1, release } })
}

/// Marks in Redis that this replica let `ids` go (after it stopped deciding on them).
async fn released(bridge: &Bridge, replica: &str, ids: Vec<String>) -> Result<(), Unavailable> {
    let owner = replica.to_owned();
    bridge
        .run(move |mut connection| async move {
            let mut invocation = scripts::RELEASED.prepare_invoke();
            for id in &ids {
                invocation.key(session_hash(id));
            }
            invocation.arg(owner).invoke_async::<i64>(&mut connection).await
        })
        .await
        .map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lease_is_trusted_from_the_renewal_sent_and_a_lapse_starts_a_new_term() {
        let lease = Lease::default();
        assert_eq!(lease.trusted_term(), None, "not before the first renewal");
        lease.renewed(Instant::now(), false);
        assert_eq!(lease.trusted_term(), Some(1));
        lease.renewed(Instant::now(), true);
        assert_eq!(lease.trusted_term(), Some(1), "a renewal that found the key keeps the term");
        lease.renewed(Instant::now(), false);
        assert_eq!(lease.trusted_term(), Some(2), "the key was gone: claims of term 1 are asked about again");
        lease.renewed(Instant::now() - LEASE, true);
        assert_eq!(lease.trusted_term(), None, "a renewal sent a lease ago is no longer trusted");
    }
}

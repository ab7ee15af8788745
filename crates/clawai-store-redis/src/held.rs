//! Calls held for a person, in Redis: a replica holds a call there, a `clawai ui
//! --cluster` (on any machine) relays it to its page and terminal commands
//! ([`crate::relay`]), and whichever comes first, the person's answer or the replica's
//! time-out, wins, atomically in Redis.
//!
//! `clawai:held` lists the ids (scored by when they were held); `clawai:held:ID` has the
//! call (`ask`, JSON), its `state` (`waiting`, `answered`, `expired`), the `outcome` and
//! who gave it (`by`). An answer that wins after the replica stopped waiting leaves a
//! grant for the next identical call, `clawai:grant:KEY`, as `clawai ui` does on one
//! machine. `clawai:ui` exists while a `clawai ui --cluster` runs.

use std::path::PathBuf;
use std::sync::LazyLock;
use std::time::{Duration, Instant};

use clawai_approvals::{Answer, Ask, By, Error, HeldApprovals, HeldCall, Outcome, Withdraw};

use crate::{PREFIX, Redis};

/// How long an answer that came after the replica stopped waiting grants the retry.
const GRANT_WINDOW: Duration = Duration::from_secs(120);

/// How often a waiting replica looks at its held call.
const LOOK_EVERY: Duration = Duration::from_millis(100);

/// How long a held call is kept after it was held (listed, answerable) at most.
const HELD_TTL_SECS: u64 = 3600;

pub(crate) fn index_key() -> String {
    format!("{PREFIX}held")
}

pub(crate) fn entry_key(id: &str) -> String {
    format!("{PREFIX}held:{id}")
}

pub(crate) fn presence_key() -> String {
    format!("{PREFIX}ui")
}

fn grant_key(key: &str) -> String {
    format!("{PREFIX}grant:{key}")
}

/// Holds a call: `granted` (a grant for the same call was used up), `taken` (the id is
/// in use: pick another), or `held`. KEYS: grant, entry, index. ARGV: id, ask, ttl, now.
static HOLD: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
if redis.call('DEL', KEYS[1]) == 1 then return 'granted' end
if redis.call('EXISTS', KEYS[2]) == 1 then return 'taken' end
redis.call('HSET', KEYS[2], 'ask', ARGV[2], 'state', 'waiting')
redis.call('EXPIRE', KEYS[2], ARGV[3])
redis.call('ZADD', KEYS[3], ARGV[4], ARGV[1])
return 'held'
",
    )
});

/// Answers a waiting call: 1, or 0 when it was not waiting any more (timed out,
/// withdrawn, answered). KEYS: entry. ARGV: outcome, by.
pub(crate) static ANSWER: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
if redis.call('HGET', KEYS[1], 'state') ~= 'waiting' then return 0 end
redis.call('HSET', KEYS[1], 'state', 'answered', 'outcome', ARGV[1], 'by', ARGV[2])
return 1
",
    )
});

/// The replica stops waiting: `expired` when no answer had come (the time-out wins), or
/// `answered` when one had: then an allowing answer grants the next identical call.
/// KEYS: entry, grant. ARGV: grant window ms.
static GIVE_UP: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
local state = redis.call('HGET', KEYS[1], 'state')
if state == 'waiting' then
  redis.call('HSET', KEYS[1], 'state', 'expired')
  return 'expired'
end
if state == 'answered' and redis.call('HGET', KEYS[1], 'outcome') ~= 'deny' then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[1])
end
return state or 'gone'
",
    )
});

/// Withdraws a call (its client cancelled it). KEYS: entry, index. ARGV: id.
static WITHDRAW: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[2], ARGV[1])
return 1
",
    )
});

pub(crate) fn outcome_word(outcome: Outcome) -> &'static str {
    match outcome {
        Outcome::AllowOnce => "allow_once",
        Outcome::AllowSession => "allow_session",
        Outcome::AllowAlways => "allow_always",
        Outcome::Deny => "deny",
    }
}

pub(crate) fn outcome_of(word: &str) -> Option<Outcome> {
    Some(match word {
        "allow_once" => Outcome::AllowOnce,
        "allow_session" => Outcome::AllowSession,
        "allow_always" => Outcome::AllowAlways,
        "deny" => Outcome::Deny,
        _ => return None,
    })
}

pub(crate) fn by_word(by: By) -> &'static str {
    match by {
        By::Grant => "grant",
        By::Ui => "ui",
        By::Cli => "cli",
    }
}

fn by_of(word: &str) -> By {
    match word {
        "grant" => By::Grant,
        "cli" => By::Cli,
        _ => By::Ui,
    }
}

fn failed(why: clawai_store::Unavailable) -> Error {
    Error::Io(std::io::Error::other(why))
}

/// Held approvals in Redis, for a replica in cluster mode.
#[derive(Debug, Clone)]
pub struct RedisHeld {
    redis: Redis,
}

impl RedisHeld {
    /// The held approvals kept through `redis`.
    pub fn new(redis: Redis) -> RedisHeld {
        RedisHeld { redis }
    }

    /// Answers held call `id` (from any machine): false when it was not waiting any
    /// more (the replica's time-out, or another answer, came first).
    pub fn answer(&self, id: &str, answer: &Answer) -> Result<bool, Error> {
        let (entry, outcome, by) = (entry_key(id), outcome_word(answer.outcome), by_word(answer.by));
        let won: i64 = self
            .redis
            .bridge
            .block(move |mut c| async move { ANSWER.key(entry).arg(outcome).arg(by).invoke_async(&mut c).await })
            .map_err(failed)?;
        Ok(won == 1)
    }
}

impl HeldApprovals for RedisHeld {
    fn hold(&self, ask: &Ask) -> Result<Box<dyn HeldCall>, Error> {
        let presence = presence_key();
        let someone: bool = self
            .redis
            .bridge
            .block(move |mut c| async move { redis::cmd("EXISTS").arg(presence).query_async(&mut c).await })
            .map_err(failed)?;
        if !someone {
            return Err(Error::NoBroker(PathBuf::from("Redis (no `clawai ui --cluster` runs against it)")));
        }
        loop {
            let id = clawai_approvals::approval_id();
            let ask = Ask { id: Some(id.clone()), ..ask.clone() };
            let body = serde_json::to_string(&ask).map_err(|e| Error::Protocol(e.to_string()))?;
            let keys = (grant_key(&ask.key), entry_key(&id), index_key());
            let ttl = (ask.timeout_ms / 1000).saturating_add(HELD_TTL_SECS);
            let now = jiff::Timestamp::now().as_millisecond();
            let held: String = self
                .redis
                .bridge
                .block(move |mut c| async move {
                    HOLD.key(keys.0)
                        .key(keys.1)
                        .key(keys.2)
                        .arg(&id)
                        .arg(body)
                        .arg(ttl)
                        .arg(now)
                        .invoke_async(&mut c)
                        .await
                })
                .map_err(failed)?;
            let call =
                RedisHeldCall { redis: self.redis.clone(), id: ask.id.clone().unwrap_or_default(), key: ask.key };
            match held.as_str() {
                "taken" => continue,
                "granted" => return Ok(Box::new(Granted(call))),
                _ => return Ok(Box::new(call)),
            }
        }
    }
}

/// One call held in Redis.
struct RedisHeldCall {
    redis: Redis,
    id: String,
    key: String,
}

impl RedisHeldCall {
    /// The answer, if one came.
    fn look(&self) -> Result<Option<Answer>, Error> {
        let entry = entry_key(&self.id);
        let (state, outcome, by): (Option<String>, Option<String>, Option<String>) = self
            .redis
            .bridge
            .block(move |mut c| async move {
                redis::cmd("HMGET").arg(entry).arg("state").arg("outcome").arg("by").query_async(&mut c).await
            })
            .map_err(failed)?;
        match state.as_deref() {
            Some("answered") => {
                let outcome = outcome.as_deref().and_then(outcome_of).unwrap_or(Outcome::Deny);
                Ok(Some(Answer { id: self.id.clone(), outcome, by: by_of(by.as_deref().unwrap_or("ui")) }))
            }
            Some(_) => Ok(None),
            None => Err(Error::Closed), // withdrawn, or Redis lost it: nothing waits any more
        }
    }
}

impl HeldCall for RedisHeldCall {
    fn id(&self) -> &str {
        &self.id
    }

    fn wait(&mut self, timeout: Duration) -> Result<Option<Answer>, Error> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(answer) = self.look()? {
                return Ok(Some(answer));
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            std::thread::sleep(left.min(LOOK_EVERY));
        }
    }

    fn timed_out(self: Box<Self>) -> Result<(), Error> {
        let (entry, grant, window) = (entry_key(&self.id), grant_key(&self.key), GRANT_WINDOW.as_millis() as u64);
        let state: String = self
            .redis
            .bridge
            .block(move |mut c| async move { GIVE_UP.key(entry).key(grant).arg(window).invoke_async(&mut c).await })
            .map_err(failed)?;
        if state == "answered" {
            tracing::info!("approval {} was answered as the wait ended: the next identical call is granted", self.id);
        }
        Ok(())
    }

    fn withdrawer(&self) -> Result<Box<dyn Withdraw>, Error> {
        Ok(Box::new(RedisWithdraw { redis: self.redis.clone(), id: self.id.clone() }))
    }
}

/// A call a grant let through at once.
struct Granted(RedisHeldCall);

impl HeldCall for Granted {
    fn id(&self) -> &str {
        &self.0.id
    }

    fn wait(&mut self, _timeout: Duration) -> Result<Option<Answer>, Error> {
        Ok(Some(Answer { id: self.0.id.clone(), outcome: Outcome::AllowOnce, by: By::Grant }))
    }

    fn timed_out(self: Box<Self>) -> Result<(), Error> {
        Ok(())
    }

    fn withdrawer(&self) -> Result<Box<dyn Withdraw>, Error> {
        self.0.withdrawer()
    }
}

struct RedisWithdraw {
    redis: Redis,
    id: String,
}

impl Withdraw for RedisWithdraw {
    fn withdraw(self: Box<Self>) -> Result<(), Error> {
        let (entry, index, id) = (entry_key(&self.id), index_key(), self.id.clone());
        self.redis
            .bridge
            .block(move |mut c| async move { WITHDRAW.key(entry).key(index).arg(id).invoke_async::<i64>(&mut c).await })
            .map(|_| ())
            .map_err(failed)
    }
}

//! Shared sessions: records with owners and epochs, and each session's memory.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Once, PoisonError};
use std::time::{Duration, Instant};

use clawai_store::{Count, Found, LocalSessionMemory, SessionClaims, SessionMemory, SessionStore, Unavailable};

use crate::common::session_hash;
use crate::lease::{self, Holder, Lease};
use crate::{Redis, scripts};

/// How long a session's record outlives its last use: longer than any idle time a
/// replica keeps a session for, so that only a session its owner forgot expires.
const SESSION_TTL_SECS: u64 = 24 * 3600;

/// How long a takeover waits for the session's owner to let it go (or for its lease to
/// lapse) before the request gets 503.
const TAKEOVER_PATIENCE: Duration = Duration::from_secs(3);

/// How often a waiting takeover asks again.
const TAKEOVER_POLL: Duration = Duration::from_millis(3);

/// How long a request to let a session go is kept for its owner (ms): a lease's
/// owner collects it within a renewal; one that is gone never does.
const RELEASE_REQUEST_MS: u64 = 10_000;

/// The sessions of every replica, in Redis. A session this replica created or took over
/// has a claim here (its epoch, and a copy of its labels, grants and facts that reads
/// answer from); the memory of any other id (stateless requests, the refusals made
/// outside a session) stays in this process. While this replica's lease lives (see
/// `lease.rs`), the sessions it holds stay its own without asking Redis.
pub struct RedisSessions {
    redis: Redis,
    held: Arc<Held>,
    /// The lease is renewed from the first session this replica claims on.
    renewing: Once,
}

/// What this replica holds: its claims and its lease, shared with the task that renews
/// the lease and lets sessions go when other replicas ask.
#[derive(Debug)]
pub(crate) struct Held {
    claims: Mutex<HashMap<String, Arc<Claim>>>,
    /// The sessions let go of lately, in order, numbered: a takeover that was under way
    /// when its session was let go (its claim not yet here) lets it go too. Locked
    /// after `claims`.
    let_go: Mutex<LetGo>,
    pub(crate) lease: Lease,
    /// What this process's lease key holds: another process with the same replica id
    /// (a restarted replica) holds another.
    pub(crate) token: String,
}

impl Holder for Held {
    fn lease(&self) -> &Lease {
        &self.lease
    }

    fn token(&self) -> &str {
        &self.token
    }

    fn let_go(&self, ids: &[String]) {
        Held::let_go(self, ids);
    }
}

/// How many sessions let go of [`Held::let_go`] remembers: a takeover during which more
/// were let go counts its own as let go.
const LET_GO_REMEMBERED: usize = 1024;

#[derive(Debug, Default)]
struct LetGo {
    /// How many were let go of so far.
    count: u64,
    /// The last [`LET_GO_REMEMBERED`]: (number, session).
    recent: std::collections::VecDeque<(u64, String)>,
}

impl Held {
    fn new() -> Held {
        Held { claims: Mutex::default(), let_go: Mutex::default(), lease: Lease::default(), token: lease::new_token() }
    }

    fn claims(&self) -> MutexGuard<'_, HashMap<String, Arc<Claim>>> {
        self.claims.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Other replicas asked for these sessions: this replica stops deciding on its
    /// copies of them (the next request for one here asks Redis again), before Redis
    /// is told they are let go.
    fn let_go(&self, ids: &[String]) {
        let claims = self.claims();
        let mut let_go = self.let_go.lock().unwrap_or_else(PoisonError::into_inner);
        for id in ids {
            if let Some(claim) = claims.get(id) {
                claim.released.store(true, Ordering::SeqCst);
                tracing::info!("session {id}: another replica asked for it; let go");
            }
            let_go.count += 1;
            let number = let_go.count;
            let_go.recent.push_back((number, id.clone()));
            if let_go.recent.len() > LET_GO_REMEMBERED {
                let_go.recent.pop_front();
            }
        }
    }

    /// How many sessions were let go of so far.
    fn let_go_count(&self) -> u64 {
        self.let_go.lock().unwrap_or_else(PoisonError::into_inner).count
    }

    /// Holds `claim` for session `id`, taken over while `since` sessions had been let go
    /// of: let go at once if `id` was let go of since (or too many to tell).
    fn hold(&self, id: &str, claim: Arc<Claim>, since: u64) {
        let mut claims = self.claims();
        let let_go = self.let_go.lock().unwrap_or_else(PoisonError::into_inner);
        let forgotten = let_go.count - since > LET_GO_REMEMBERED as u64;
        if forgotten || let_go.recent.iter().any(|(number, gone)| *number > since && gone == id) {
            claim.released.store(true, Ordering::SeqCst);
        }
        claims.insert(id.to_owned(), claim);
    }
}

impl std::fmt::Debug for RedisSessions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisSessions").field("redis", &self.redis).finish_non_exhaustive()
    }
}

/// This replica's hold on one session.
#[derive(Debug)]
struct Claim {
    epoch: AtomicU64,
    /// The lease term under which Redis last said this session is this replica's (0:
    /// not under any): while that term's lease is trusted, nobody else takes it over.
    term: AtomicU64,
    /// This replica let the session go (another asked for it): no longer trusted.
    released: AtomicBool,
    copy: Mutex<Copy>,
    /// The client's `initialize` (`None`: the session cannot be resumed elsewhere), to
    /// write the record again should Redis lose it.
    initialize: Option<Vec<u8>>,
}

/// What the owner read or wrote of the session: every write went to Redis first.
#[derive(Debug, Default)]
struct Copy {
    labels: BTreeSet<String>,
    grants: HashSet<String>,
    facts: HashMap<String, String>,
}

impl Claim {
    fn new(epoch: u64, term: Option<u64>, copy: Copy, initialize: Option<Vec<u8>>) -> Arc<Claim> {
        Arc::new(Claim {
            epoch: AtomicU64::new(epoch),
            term: AtomicU64::new(term.unwrap_or(0)),
            released: AtomicBool::new(false),
            copy: Mutex::new(copy),
            initialize,
        })
    }

    fn released(&self) -> bool {
        self.released.load(Ordering::SeqCst)
    }

    fn copy(&self) -> MutexGuard<'_, Copy> {
        self.copy.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn epoch(&self) -> u64 {
        self.epoch.load(Ordering::SeqCst)
    }
}

/// The Redis keys of session `id`.
#[derive(Debug, Clone)]
struct Keys {
    hash: String,
    labels: String,
    grants: String,
}

impl Keys {
    fn of(id: &str) -> Keys {
        let hash = session_hash(id);
        Keys { labels: format!("{hash}:labels"), grants: format!("{hash}:grants"), hash }
    }

    fn window(&self, key: &str) -> String {
        format!("{}:w:{key}", self.hash)
    }

    /// `script` on the session's hash, labels and grants (its KEYS 1 to 3).
    fn on<'s>(&self, script: &'s redis::Script) -> redis::ScriptInvocation<'s> {
        let mut invocation = script.key(&self.hash);
        invocation.key(&self.labels).key(&self.grants);
        invocation
    }
}

impl RedisSessions {
    /// The sessions kept through `redis`.
    pub fn new(redis: Redis) -> RedisSessions {
        RedisSessions { redis, held: Arc::new(Held::new()), renewing: Once::new() }
    }

    fn claims(&self) -> MutexGuard<'_, HashMap<String, Arc<Claim>>> {
        self.held.claims()
    }

    /// Starts renewing this replica's lease, once.
    fn renew_lease(&self) {
        self.renewing.call_once(|| lease::start(&self.redis, &self.held));
    }

    fn claim(&self, id: &str) -> Option<Arc<Claim>> {
        self.claims().get(id).cloned()
    }
}

impl RedisSessions {
    /// Writes the record of session `id` again from `claim`, unless one exists by now:
    /// true when this replica still owns it.
    async fn restore(&self, id: &str, claim: &Claim) -> Result<bool, Unavailable> {
        let keys = Keys::of(id);
        let (labels, grants, facts) = {
            let copy = claim.copy();
            let facts: Vec<String> =
                copy.facts.iter().flat_map(|(name, value)| [name.clone(), value.clone()]).collect();
            (copy.labels.iter().cloned().collect::<Vec<_>>(), copy.grants.iter().cloned().collect::<Vec<_>>(), facts)
        };
        let (epoch, owner) = (claim.epoch(), self.redis.replica.to_string());
        let (initialize, resumable) = match &claim.initialize {
            Some(initialize) => (initialize.clone(), "1"),
            None => (Vec::new(), "0"),
        };
        let restored: i64 = self
            .redis
            .bridge
            .run(move |mut connection| async move {
                let mut invocation = keys.on(&scripts::RESTORE);
                invocation.arg(epoch).arg(owner).arg(initialize).arg(resumable).arg(SESSION_TTL_SECS);
                invocation.arg(labels.len()).arg(labels).arg(grants.len()).arg(grants).arg(facts);
                invocation.invoke_async(&mut connection).await
            })
            .await?;
        if restored == 1 {
            tracing::info!("the record of session {id} was gone from Redis; written again from this replica's copy");
            return Ok(true);
        }
        // Another replica wrote it first (it took the session over meanwhile).
        let keys = Keys::of(id);
        let now: u64 = self
            .redis
            .bridge
            .run(move |mut connection| async move {
                keys.on(&scripts::EPOCH).arg(SESSION_TTL_SECS).invoke_async(&mut connection).await
            })
            .await?;
        Ok(now == claim.epoch())
    }
}

impl SessionStore for RedisSessions {
    fn open(&self, id: &str) -> Arc<dyn SessionMemory> {
        match self.claim(id) {
            Some(claim) => Arc::new(SharedMemory { redis: self.redis.clone(), keys: Keys::of(id), claim }),
            None => Arc::new(LocalSessionMemory::default()),
        }
    }
}

#[async_trait::async_trait]
impl SessionClaims for RedisSessions {
    async fn create(&self, id: &str, initialize: Option<&[u8]>) -> Result<(), Unavailable> {
        self.renew_lease();
        let (term, since) = (self.held.lease.trusted_term(), self.held.let_go_count());
        let keys = Keys::of(id);
        let owner = self.redis.replica.to_string();
        let initialize = initialize.map(<[u8]>::to_vec);
        let kept = initialize.clone();
        self.redis
            .bridge
            .run(move |mut connection| async move {
                let resumable = if initialize.is_some() { "1" } else { "0" };
                keys.on(&scripts::CREATE)
                    .arg(owner)
                    .arg(initialize.unwrap_or_default())
                    .arg(resumable)
                    .arg(SESSION_TTL_SECS)
                    .invoke_async::<i64>(&mut connection)
                    .await
            })
            .await?;
        self.held.hold(id, Claim::new(1, term, Copy::default(), kept), since);
        Ok(())
    }

    /// Without a round trip while this replica's lease is trusted and the session was
    /// last confirmed its own under the lease's term; else Redis is asked, as it was at
    /// every request before the lease.
    async fn still_owned(&self, id: &str) -> Result<bool, Unavailable> {
        let Some(claim) = self.claim(id) else { return Ok(false) };
        if claim.released() {
            return Ok(false);
        }
        let term = self.held.lease.trusted_term();
        if term.is_some_and(|term| term == claim.term.load(Ordering::SeqCst)) {
            return Ok(true);
        }
        self.renew_lease();
        let owned = self.ask_epoch(id, &claim).await?;
        if owned && let Some(term) = term {
            // Asked after the renewal that began this term reached Redis: from then on
            // nobody takes the session over while the term's lease lives.
            claim.term.store(term, Ordering::SeqCst);
        }
        Ok(owned && !claim.released())
    }

    async fn take_over(&self, id: &str) -> Result<Found, Unavailable> {
        self.renew_lease();
        let deadline = Instant::now() + TAKEOVER_PATIENCE;
        loop {
            let (term, since) = (self.held.lease.trusted_term(), self.held.let_go_count());
            match self.try_take_over(id).await? {
                Taken::Wait { owner } if Instant::now() < deadline => {
                    tracing::debug!("session {id}: waiting for replica {owner} to let it go");
                    tokio::time::sleep(TAKEOVER_POLL).await;
                }
                Taken::Wait { owner } => {
                    return Err(Unavailable::Unreachable(format!(
                        "replica {owner} still holds session {id} and did not let it go within {TAKEOVER_PATIENCE:?}"
                    )));
                }
                Taken::Unknown => return Ok(Found::Unknown),
                Taken::NotResumable => return Ok(Found::NotResumable),
                Taken::Resumable { epoch, initialize, copy } => {
                    let claim = Claim::new(epoch, term, copy, Some(initialize.clone()));
                    self.held.hold(id, claim, since);
                    return Ok(Found::Resumable { initialize });
                }
            }
        }
    }

    async fn end(&self, id: &str) {
        let Some(claim) = self.claims().remove(id) else { return };
        if claim.released() {
            return; // let go: another replica may be taking it over
        }
        let keys = Keys::of(id);
        let epoch = claim.epoch();
        let ended = self
            .redis
            .bridge
            .run(move |mut connection| async move {
                keys.on(&scripts::END).arg(epoch).invoke_async::<i64>(&mut connection).await
            })
            .await;
        if let Err(why) = ended {
            // Its record expires by itself.
            tracing::debug!("the record of ended session {id} stays until it expires: {why}");
        }
    }

    fn release(&self, id: &str) {
        self.claims().remove(id);
    }

    async fn reachable(&self) -> bool {
        self.redis.reachable().await
    }
}

impl RedisSessions {
    /// Asks Redis whether session `id` is still at `claim`'s epoch (one round trip).
    async fn ask_epoch(&self, id: &str, claim: &Claim) -> Result<bool, Unavailable> {
        let keys = Keys::of(id);
        let epoch: u64 = self
            .redis
            .bridge
            .run(move |mut connection| async move {
                keys.on(&scripts::EPOCH).arg(SESSION_TTL_SECS).invoke_async(&mut connection).await
            })
            .await?;
        if epoch == 0 {
            // Redis lost the record (it came back without its data): written again from
            // what this replica holds, so that the session keeps its taint and grants.
            return self.restore(id, claim).await;
        }
        Ok(epoch == claim.epoch())
    }

    /// One `TAKE_OVER`.
    async fn try_take_over(&self, id: &str) -> Result<Taken, Unavailable> {
        let keys = Keys::of(id);
        let (owner, session, token) = (self.redis.replica.to_string(), id.to_owned(), self.held.token.clone());
        let answer: redis::Value = self
            .redis
            .bridge
            .run(move |mut connection| async move {
                let mut invocation = keys.on(&scripts::TAKE_OVER);
                invocation.arg(owner).arg(SESSION_TTL_SECS).arg(session).arg(lease::lease_key(""));
                invocation.arg(RELEASE_REQUEST_MS).arg(token).invoke_async(&mut connection).await
            })
            .await?;
        parse_takeover(answer).map_err(Unavailable::Unreachable)
    }
}

/// What `TAKE_OVER` answered.
enum Taken {
    Unknown,
    NotResumable,
    /// Its owner's lease lives and it has not let the session go yet.
    Wait {
        owner: String,
    },
    Resumable {
        epoch: u64,
        initialize: Vec<u8>,
        copy: Copy,
    },
}

fn parse_takeover(answer: redis::Value) -> Result<Taken, String> {
    let unexpected = || "an unexpected answer to a takeover".to_owned();
    let redis::Value::Array(items) = answer else { return Err(unexpected()) };
    let mut items = items.into_iter();
    let epoch: i64 = redis::from_redis_value(items.next().ok_or_else(unexpected)?).map_err(|e| e.to_string())?;
    if epoch == 0 {
        return Ok(Taken::Unknown);
    }
    if epoch == -2 {
        let _pttl = items.next();
        let owner: String = redis::from_redis_value(items.next().ok_or_else(unexpected)?).map_err(|e| e.to_string())?;
        return Ok(Taken::Wait { owner });
    }
    if epoch < 0 {
        return Ok(Taken::NotResumable);
    }
    let mut next = || items.next().ok_or_else(unexpected);
    let initialize: Vec<u8> = redis::from_redis_value(next()?).map_err(|e| e.to_string())?;
    let facts: Vec<String> = redis::from_redis_value(next()?).map_err(|e| e.to_string())?;
    let labels: BTreeSet<String> = redis::from_redis_value(next()?).map_err(|e| e.to_string())?;
    let grants: HashSet<String> = redis::from_redis_value(next()?).map_err(|e| e.to_string())?;
    let facts = facts.chunks_exact(2).map(|pair| (pair[0].clone(), pair[1].clone())).collect();
    Ok(Taken::Resumable { epoch: epoch as u64, initialize, copy: Copy { labels, grants, facts } })
}

/// A claimed session's memory: reads from the claim's copy, writes to Redis under the
/// claim's epoch, then to the copy.
#[derive(Debug)]
struct SharedMemory {
    redis: Redis,
    keys: Keys,
    claim: Arc<Claim>,
}

impl SharedMemory {
    /// Adds `members` to the session's set `set` (labels or grants).
    fn add(&self, set: String, members: Vec<String>) -> Result<(), Unavailable> {
        let (hash, epoch) = (self.keys.hash.clone(), self.claim.epoch());
        let written: i64 = self.redis.bridge.block(move |mut connection| async move {
            scripts::ADD
                .key(hash)
                .key(set)
                .arg(epoch)
                .arg(SESSION_TTL_SECS)
                .arg(members)
                .invoke_async(&mut connection)
                .await
        })?;
        if written == 1 { Ok(()) } else { Err(Unavailable::TakenOver) }
    }

    /// Runs `COUNT` in window `key` with `mode`.
    fn count_in(&self, key: &str, window: Duration, limit: u32, mode: String) -> Result<u32, Unavailable> {
        let (hash, window_key, epoch) = (self.keys.hash.clone(), self.keys.window(key), self.claim.epoch());
        let micros = u64::try_from(window.as_micros()).unwrap_or(u64::MAX);
        let counted: i64 = self.redis.bridge.block(move |mut connection| async move {
            scripts::COUNT
                .key(hash)
                .key(window_key)
                .arg(epoch)
                .arg(micros)
                .arg(limit)
                .arg(mode)
                .invoke_async(&mut connection)
                .await
        })?;
        u32::try_from(counted).map_err(|_| Unavailable::TakenOver)
    }
}

impl SessionMemory for SharedMemory {
    fn labels(&self) -> BTreeSet<String> {
        self.claim.copy().labels.clone()
    }

    fn add_labels(&self, labels: &[String]) -> Result<(), Unavailable> {
        if labels.is_empty() {
            return Ok(());
        }
        self.add(self.keys.labels.clone(), labels.to_vec())?;
        self.claim.copy().labels.extend(labels.iter().cloned());
        Ok(())
    }

    /// Counted by the Redis clock: `now` (this process's clock) is not used.
    fn count(&self, key: &str, window: Duration, limit: u32, _now: Duration, count: Count) -> Result<u32, Unavailable> {
        let mode = match count {
            Count::Record => "record",
            Count::Look => "look",
            Count::AlreadyCounted => "already",
        };
        self.count_in(key, window, limit, mode.to_owned())
    }

    fn seed(&self, key: &str, matches: u32, _now: Duration) {
        // Seeding is for fixtures and `policy explain`; a window that takes no seed
        // counts from zero, which is what it would do after a restart.
        let seeded = self.count_in(key, Duration::from_secs(3600), matches, format!("seed:{matches}"));
        if let Err(why) = seeded {
            tracing::warn!("cannot seed rate window {key}: {why}");
        }
    }

    fn grant(&self, call_key: &str) -> Result<(), Unavailable> {
        self.add(self.keys.grants.clone(), vec![call_key.to_owned()])?;
        self.claim.copy().grants.insert(call_key.to_owned());
        Ok(())
    }

    fn granted(&self, call_key: &str) -> bool {
        self.claim.copy().grants.contains(call_key)
    }

    fn fact(&self, name: &str) -> Option<String> {
        self.claim.copy().facts.get(name).cloned()
    }

    fn set_fact(&self, name: &str, value: Option<&str>) -> Result<(), Unavailable> {
        let (hash, epoch, field, stored) =
            (self.keys.hash.clone(), self.claim.epoch(), name.to_owned(), value.map(str::to_owned));
        let written: i64 = self.redis.bridge.block(move |mut connection| async move {
            let mut invocation = scripts::FACT.key(hash);
            invocation.arg(epoch).arg(field);
            if let Some(stored) = stored {
                invocation.arg(stored);
            }
            invocation.invoke_async(&mut connection).await
        })?;
        if written != 1 {
            return Err(Unavailable::TakenOver);
        }
        let mut copy = self.claim.copy();
        match value {
            Some(value) => copy.facts.insert(name.to_owned(), value.to_owned()),
            None => copy.facts.remove(name),
        };
        Ok(())
    }
}

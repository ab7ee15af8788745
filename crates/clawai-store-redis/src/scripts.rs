//! The scripts Redis runs for the session store: each one step, atomic on the server,
//! and each write checks the writer's epoch first (a stale owner's writes are refused).
//!
//! A session `ID` is the hash `clawai:s:ID` (`epoch`, `owner`, `init`: the client's
//! `initialize`, `resumable`, `f:NAME`: facts, `seq`, `released`: the
//! epoch its owner let it go at), the sets `clawai:s:ID:labels`
//! and `clawai:s:ID:grants`, and a sorted set per rate window, `clawai:s:ID:w:KEY`
//! (members scored by the Redis clock in microseconds).

use std::sync::LazyLock;

/// Creates a session owned by `ARGV[1]` at epoch 1.
/// KEYS: hash, labels, grants. ARGV: owner, initialize, resumable (1/0), ttl seconds.
pub(crate) static CREATE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
redis.call('HSET', KEYS[1], 'epoch', 1, 'owner', ARGV[1], 'init', ARGV[2], 'resumable', ARGV[3])
redis.call('EXPIRE', KEYS[1], ARGV[4])
return 1
",
    )
});

/// The session's epoch (0 when there is none), its lifetime renewed.
/// KEYS: hash, labels, grants. ARGV: ttl seconds.
pub(crate) static EPOCH: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
local epoch = redis.call('HGET', KEYS[1], 'epoch')
if not epoch then return 0 end
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[1]) end
return tonumber(epoch)
",
    )
});

/// Writes a record Redis lost again, from its owner's copy, unless one exists: 1, or 0.
/// KEYS: hash, labels, grants. ARGV: epoch, owner, initialize, resumable, ttl, the count
/// of labels, the labels, the count of grants, the grants, then facts as name, value.
pub(crate) static RESTORE: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
redis.call('HSET', KEYS[1], 'epoch', ARGV[1], 'owner', ARGV[2], 'init', ARGV[3], 'resumable', ARGV[4])
local i = 6
for _, set in ipairs({KEYS[2], KEYS[3]}) do
  local count = tonumber(ARGV[i])
  i = i + 1
  for _ = 1, count do
    redis.call('SADD', set, ARGV[i])
    i = i + 1
  end
end
while i < #ARGV do
  redis.call('HSET', KEYS[1], 'f:' .. ARGV[i], ARGV[i + 1])
  i = i + 2
end
for k = 1, 3 do redis.call('EXPIRE', KEYS[k], ARGV[5]) end
return 1
",
    )
});

/// Takes a session over: its epoch bumped, the owner set, and everything a replica
/// needs to serve it returned: `{epoch, initialize, {facts…}, {labels…}, {grants…}}`,
/// or `{0}` (no such session), or `{-1}` (it cannot be resumed elsewhere), or `{-2,
/// ms, owner}`: its owner's lease still lives (for `ms` more; -1: no expiry) and the owner has
/// not let it go yet, so it is asked to (the session joins its release set) and the
/// taker tries again. A session its owner let go of (`released` is its epoch), or whose
/// owner's lease lapsed, or that is the taker's own (the same replica id, and the lease
/// is the taker's process's or none: a replica restarted under the same id waits for
/// its predecessor's lease), is taken at once.
/// KEYS: hash, labels, grants. ARGV: new owner, ttl seconds, the session id, the prefix
/// of lease keys, how long a release request is kept (ms), the taker's lease token. The owner's lease key is
/// made from its name here: one Redis, no Redis Cluster.
pub(crate) static TAKE_OVER: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
if redis.call('EXISTS', KEYS[1]) == 0 then return {0} end
if redis.call('HGET', KEYS[1], 'resumable') ~= '1' then return {-1} end
local owner = redis.call('HGET', KEYS[1], 'owner')
local released = redis.call('HGET', KEYS[1], 'released')
if owner and released ~= redis.call('HGET', KEYS[1], 'epoch') then
  local lease = ARGV[4] .. owner
  local ttl = redis.call('PTTL', lease)
  if ttl ~= -2 and (owner ~= ARGV[1] or redis.call('GET', lease) ~= ARGV[6]) then
    redis.call('SADD', lease .. ':release', ARGV[3])
    redis.call('PEXPIRE', lease .. ':release', ARGV[5])
    return {-2, ttl, owner}
  end
end
local epoch = redis.call('HINCRBY', KEYS[1], 'epoch', 1)
redis.call('HSET', KEYS[1], 'owner', ARGV[1])
redis.call('HDEL', KEYS[1], 'released')
for i = 1, 3 do redis.call('EXPIRE', KEYS[i], ARGV[2]) end
local facts = {}
local fields = redis.call('HGETALL', KEYS[1])
for i = 1, #fields, 2 do
  if string.sub(fields[i], 1, 2) == 'f:' then
    table.insert(facts, string.sub(fields[i], 3))
    table.insert(facts, fields[i + 1])
  end
end
return {epoch, redis.call('HGET', KEYS[1], 'init'), facts, redis.call('SMEMBERS', KEYS[2]), redis.call('SMEMBERS', KEYS[3])}
",
    )
});

/// Renews a replica's lease: `{1, ids}` when the key still held this process's token,
/// `{0, ids}` when it was gone (a new term), with the sessions other replicas asked it
/// to let go of since (the set is emptied); `{-1}` when another process holds the key
/// (two replicas with one `--replica-id`): that one has no lease.
/// KEYS: the lease key, the release set. ARGV: this process's token, the lease (ms).
pub(crate) static RENEW: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
local held = redis.call('GET', KEYS[1])
if held and held ~= ARGV[1] then return {-1} end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
local ids = redis.call('SMEMBERS', KEYS[2])
if #ids > 0 then redis.call('DEL', KEYS[2]) end
if held then return {1, ids} end
return {0, ids}
",
    )
});

/// The owner `ARGV[1]` let go of these sessions: each that it still owns is marked so
/// (`released` set to its epoch), and a replica waiting to take it over may. KEYS: the
/// sessions' hashes.
pub(crate) static RELEASED: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
for i = 1, #KEYS do
  if redis.call('HGET', KEYS[i], 'owner') == ARGV[1] then
    redis.call('HSET', KEYS[i], 'released', redis.call('HGET', KEYS[i], 'epoch'))
  end
end
return #KEYS
",
    )
});

/// Adds members to a set of the session (labels, grants) if `ARGV[1]` is its epoch:
/// 1, else 0. KEYS: hash, set. ARGV: epoch, ttl seconds, members….
pub(crate) static ADD: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
if redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[1] then return 0 end
redis.call('SADD', KEYS[2], unpack(ARGV, 3))
redis.call('EXPIRE', KEYS[2], ARGV[2])
return 1
",
    )
});

/// Sets fact `ARGV[2]` to `ARGV[3]` (clears it without `ARGV[3]`) if `ARGV[1]` is the
/// session's epoch: 1, else 0. KEYS: hash.
pub(crate) static FACT: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
if redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[1] then return 0 end
if ARGV[3] then
  redis.call('HSET', KEYS[1], 'f:' .. ARGV[2], ARGV[3])
else
  redis.call('HDEL', KEYS[1], 'f:' .. ARGV[2])
end
return 1
",
    )
});

/// Counts a call in a rate window by the Redis clock, if `ARGV[1]` is the session's
/// epoch: the matches in the window with this one (at most limit + 1), or -1 (stale).
/// The window keeps what is younger than its length, at most limit + 1 moments.
/// KEYS: hash, window. ARGV: epoch, window µs, limit, mode (record, look, already, or
/// seed:N for N matches now).
pub(crate) static COUNT: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
if redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[1] then return -1 end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local window = tonumber(ARGV[2])
local limit = tonumber(ARGV[3])
local mode = ARGV[4]
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
local held = redis.call('ZCARD', KEYS[2])
local adding = 0
local counted = held + 1
if mode == 'record' then adding = 1 end
if mode == 'already' then counted = math.max(held, 1) end
if string.sub(mode, 1, 5) == 'seed:' then adding = tonumber(string.sub(mode, 6)); counted = held end
for i = 1, adding do
  local seq = redis.call('HINCRBY', KEYS[1], 'seq', 1)
  redis.call('ZADD', KEYS[2], now, now .. ':' .. seq)
end
if adding > 0 then
  local excess = redis.call('ZCARD', KEYS[2]) - (limit + 1)
  if excess > 0 then redis.call('ZREMRANGEBYRANK', KEYS[2], 0, excess - 1) end
  redis.call('PEXPIRE', KEYS[2], math.floor(window / 1000) + 1000)
end
return math.min(counted, limit + 1)
",
    )
});

/// Ends a session if `ARGV[1]` is its epoch (its owner ended it). KEYS: hash, labels,
/// grants.
pub(crate) static END: LazyLock<redis::Script> = LazyLock::new(|| {
    redis::Script::new(
        r"
if redis.call('HGET', KEYS[1], 'epoch') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
return 1
",
    )
});

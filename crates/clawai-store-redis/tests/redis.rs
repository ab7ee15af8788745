//! The Redis stores against a real `redis-server` (the Debian package that
//! `./scripts/setup-test-peers` installs), started on a free loopback port per test.

mod server;

use std::sync::Arc;
use std::time::{Duration, Instant};

use server::RedisServer;

use clawai_store::{Count, Found, KeyPurpose, SessionClaims, Stores, Unavailable};
use clawai_store_redis::{ConnectError, Redis};

fn claims(stores: &Stores) -> Arc<dyn SessionClaims> {
    stores.claims.clone().expect("cluster stores have claims")
}

const MINUTE: Duration = Duration::from_secs(60);
const INITIALIZE: &[u8] = br#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_survives_its_replica_and_its_stale_owner_cannot_write() {
    let redis = RedisServer::start();
    let (r1, r2) = (redis.replica("r1"), redis.replica("r2"));
    claims(&r1).create("r1.s", Some(INITIALIZE)).await.unwrap();
    let first = r1.sessions.open("r1.s");
    first.add_labels(&["private".into()]).unwrap();
    first.grant("write:a").unwrap();
    first.set_fact("skill", Some("review")).unwrap();
    assert_eq!(first.count("flood", MINUTE, 5, Duration::ZERO, Count::Record), Ok(1));
    assert!(claims(&r1).still_owned("r1.s").await.unwrap());

    let found = claims(&r2).take_over("r1.s").await.unwrap();
    assert_eq!(found, Found::Resumable { initialize: INITIALIZE.to_vec() });
    let second = r2.sessions.open("r1.s");
    assert_eq!(second.labels().into_iter().collect::<Vec<_>>(), ["private"], "taint survives");
    assert!(second.granted("write:a"), "session grants survive");
    assert_eq!(second.fact("skill").as_deref(), Some("review"), "the active skill survives");
    assert_eq!(second.count("flood", MINUTE, 5, Duration::ZERO, Count::Record), Ok(2), "the window too");

    assert!(!claims(&r1).still_owned("r1.s").await.unwrap(), "the old owner learns it lost the session");
    assert_eq!(first.add_labels(&["secret".into()]), Err(Unavailable::TakenOver));
    assert_eq!(first.grant("write:b"), Err(Unavailable::TakenOver));
    assert_eq!(first.set_fact("skill", None), Err(Unavailable::TakenOver));
    assert_eq!(first.count("flood", MINUTE, 5, Duration::ZERO, Count::Record), Err(Unavailable::TakenOver));
    claims(&r1).end("r1.s").await;
    assert!(claims(&r2).still_owned("r1.s").await.unwrap(), "a stale owner's end does not end the session");

    second.add_labels(&["secret".into()]).unwrap();
    claims(&r1).take_over("r1.s").await.unwrap();
    let again = r1.sessions.open("r1.s");
    assert_eq!(again.labels().into_iter().collect::<Vec<_>>(), ["private", "secret"]);
    assert!(!again.granted("write:b"), "a refused write left nothing behind");
}

/// A raw connection to the test's Redis, to look at and stage keys.
async fn raw(redis: &RedisServer) -> redis::aio::MultiplexedConnection {
    redis::Client::open(redis.url()).unwrap().get_multiplexed_async_connection().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_live_owner_lets_its_session_go_before_another_takes_it_and_then_asks_again() {
    let redis = RedisServer::start();
    let (r1, r2) = (redis.replica("r1"), redis.replica("r2"));
    claims(&r1).create("r1.live", Some(INITIALIZE)).await.unwrap();
    let first = r1.sessions.open("r1.live");
    // Trusted without a round trip once r1's lease is renewed; either way its own.
    assert!(claims(&r1).still_owned("r1.live").await.unwrap());
    let mut raw = raw(&redis).await;
    let lease: i64 = redis::cmd("PTTL").arg("clawai:replica:r1").query_async(&mut raw).await.unwrap();
    assert!(lease > 0, "r1 holds a lease while it holds a session: {lease}");

    // r1 is alive and renews its lease: r2's takeover waits until r1 let the session
    // go, and r1 knows it did before r2 can decide anything on it.
    assert_eq!(claims(&r2).take_over("r1.live").await.unwrap(), Found::Resumable { initialize: INITIALIZE.to_vec() });
    assert!(!claims(&r1).still_owned("r1.live").await.unwrap(), "r1 let it go before r2 took it");
    let second = r2.sessions.open("r1.live");
    second.add_labels(&["private".into()]).unwrap();
    assert_eq!(first.add_labels(&["secret".into()]), Err(Unavailable::TakenOver), "r1's old copy writes nothing");

    // r1 asked for it back: r2 lets go in turn, and r1 reads what r2 wrote.
    claims(&r1).take_over("r1.live").await.unwrap();
    assert!(!claims(&r2).still_owned("r1.live").await.unwrap());
    let again = r1.sessions.open("r1.live");
    assert_eq!(again.labels().into_iter().collect::<Vec<_>>(), ["private"], "the taint added on r2 is r1's now");
    assert!(claims(&r1).still_owned("r1.live").await.unwrap());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_takeover_waits_for_the_lease_of_an_owner_that_never_lets_go() {
    let redis = RedisServer::start();
    let (r1, r2) = (redis.replica("r1"), redis.replica("r2"));
    claims(&r1).create("r1.stuck", Some(INITIALIZE)).await.unwrap();
    // A frozen r1: its lease key lives on (as long as a lease, as after kill -9), but
    // nobody renews it or answers its release requests.
    drop(r1);
    let mut raw = raw(&redis).await;
    let _: () = redis::cmd("SET")
        .arg("clawai:replica:r1")
        .arg("frozen")
        .arg("PX")
        .arg(400)
        .query_async(&mut raw)
        .await
        .unwrap();
    assert_eq!(claims(&r2).take_over("r1.stuck").await.unwrap(), Found::Resumable { initialize: INITIALIZE.to_vec() });
    let lease: i64 = redis::cmd("PTTL").arg("clawai:replica:r1").query_async(&mut raw).await.unwrap();
    assert_eq!(lease, -2, "the takeover went ahead only once r1's lease had lapsed");
    let asked: Vec<String> =
        redis::cmd("SMEMBERS").arg("clawai:replica:r1:release").query_async(&mut raw).await.unwrap();
    assert_eq!(asked, ["r1.stuck"], "r1 was asked to let it go");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_process_under_the_same_replica_id_waits_for_the_first_to_let_go() {
    let redis = RedisServer::start();
    let first = redis.replica("r1");
    claims(&first).create("r1.twice", Some(INITIALIZE)).await.unwrap();
    let mut raw = raw(&redis).await;
    let deadline = Instant::now() + Duration::from_secs(10);
    while redis::cmd("PTTL").arg("clawai:replica:r1").query_async::<i64>(&mut raw).await.unwrap() < 0 {
        assert!(Instant::now() < deadline, "the first process renews its lease");
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    assert!(claims(&first).still_owned("r1.twice").await.unwrap());
    // A replica restarted under the same id while the old process still runs (or its
    // lease still lives): the session names it as owner, but not its lease.
    let second = redis.replica("r1");
    assert_eq!(
        claims(&second).take_over("r1.twice").await.unwrap(),
        Found::Resumable { initialize: INITIALIZE.to_vec() }
    );
    assert!(!claims(&first).still_owned("r1.twice").await.unwrap(), "the first let it go before the second took it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_that_cannot_be_resumed_or_are_gone_are_not_taken_over() {
    let redis = RedisServer::start();
    let (r1, r2) = (redis.replica("r1"), redis.replica("r2"));
    claims(&r1).create("r1.child", None).await.unwrap();
    assert_eq!(claims(&r2).take_over("r1.child").await.unwrap(), Found::NotResumable);
    assert_eq!(claims(&r2).take_over("r1.never").await.unwrap(), Found::Unknown);
    claims(&r1).create("r1.ended", Some(INITIALIZE)).await.unwrap();
    claims(&r1).end("r1.ended").await;
    assert_eq!(claims(&r2).take_over("r1.ended").await.unwrap(), Found::Unknown, "ended by its owner");
    let unclaimed = r2.sessions.open("stateless");
    unclaimed.add_labels(&["private".into()]).unwrap();
    assert_eq!(r1.sessions.open("stateless").labels().len(), 0, "an unclaimed id stays in its process");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rate_window_admits_exactly_its_limit_whoever_counts_at_once() {
    let redis = RedisServer::start();
    let r1 = redis.replica("r1");
    claims(&r1).create("r1.rate", Some(INITIALIZE)).await.unwrap();
    let counters: Vec<_> = (0..6)
        .map(|_| {
            let memory = r1.sessions.open("r1.rate");
            std::thread::spawn(move || {
                (0..15)
                    .filter(|_| memory.count("flood", MINUTE, 40, Duration::ZERO, Count::Record).unwrap() <= 40)
                    .count()
            })
        })
        .collect();
    let admitted: usize = counters.into_iter().map(|counter| counter.join().unwrap()).sum();
    assert_eq!(admitted, 40, "90 calls at once, 40 within the limit");
    let memory = r1.sessions.open("r1.rate");
    assert_eq!(memory.count("flood", MINUTE, 40, Duration::ZERO, Count::Look), Ok(41));
    assert_eq!(memory.count("flood", MINUTE, 40, Duration::ZERO, Count::AlreadyCounted), Ok(41));
    assert_eq!(memory.count("other", MINUTE, 40, Duration::ZERO, Count::Look), Ok(1), "each window is its own");
    // A one-second window empties by the Redis clock.
    assert_eq!(memory.count("second", Duration::from_secs(1), 1, Duration::ZERO, Count::Record), Ok(1));
    assert_eq!(memory.count("second", Duration::from_secs(1), 1, Duration::ZERO, Count::Record), Ok(2));
    std::thread::sleep(Duration::from_millis(1100));
    assert_eq!(memory.count("second", Duration::from_secs(1), 1, Duration::ZERO, Count::Record), Ok(1));
}

#[test]
fn every_replica_reads_one_keyring() {
    let redis = RedisServer::start();
    let (r1, r2) = (redis.replica("r1"), redis.replica("r2"));
    for purpose in KeyPurpose::ALL {
        assert_eq!(r1.keyring.key(purpose), r2.keyring.key(purpose), "{purpose:?}");
    }
    assert_ne!(r1.keyring.key(KeyPurpose::Cursors), r1.keyring.key(KeyPurpose::RequestState));
    let other = RedisServer::start();
    assert_ne!(other.replica("r1").keyring.key(KeyPurpose::Cursors), r1.keyring.key(KeyPurpose::Cursors));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn while_redis_is_away_writes_fail_and_they_work_again_once_it_is_back() {
    let mut redis = RedisServer::start();
    let r1 = redis.replica("r1");
    claims(&r1).create("r1.away", Some(INITIALIZE)).await.unwrap();
    let memory = r1.sessions.open("r1.away");
    memory.add_labels(&["private".into()]).unwrap();
    redis.stop();
    assert!(matches!(memory.add_labels(&["secret".into()]), Err(Unavailable::Unreachable(_))));
    assert!(matches!(
        memory.count("flood", MINUTE, 5, Duration::ZERO, Count::Record),
        Err(Unavailable::Unreachable(_))
    ));
    // The steps that follow fail at once, saying why, instead of each waiting for its
    // own time-out (the breaker); a ping still tries.
    // (A step that comes after the window is the probe, and fails as Redis does: the
    // next one falls in the new window.)
    let refusals: Vec<String> =
        (0..10).map(|_| memory.add_labels(&["secret".into()]).unwrap_err().to_string()).collect();
    assert!(refusals.iter().any(|r| r.contains("did not answer")), "{refusals:?}");
    // Its lease runs out by its own clock (it cannot be renewed): from then on the
    // owner asks Redis again at each request, and learns that it is away.
    let deadline = Instant::now() + Duration::from_secs(10);
    while claims(&r1).still_owned("r1.away").await.is_ok() && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(claims(&r1).still_owned("r1.away").await.is_err());
    assert!(!claims(&r1).reachable().await);
    assert_eq!(memory.labels().len(), 1, "the owner still reads what it holds");

    // Back without its data (no persistence): the owner's writes are refused until it
    // asks whether the session is still its own, which writes the record again from
    // what it holds (its taint, grants and facts; not its rate windows).
    redis.restart();
    let deadline = Instant::now() + Duration::from_secs(20);
    let back = loop {
        match memory.add_labels(&["secret".into()]) {
            Err(Unavailable::Unreachable(_)) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            other => break other,
        }
    };
    assert_eq!(back, Err(Unavailable::TakenOver), "no write to a record Redis lost");
    assert!(claims(&r1).still_owned("r1.away").await.unwrap(), "written again from the owner's copy");
    memory.add_labels(&["secret".into()]).unwrap();
    let r2 = redis.replica("r2");
    assert_eq!(claims(&r2).take_over("r1.away").await.unwrap(), Found::Resumable { initialize: INITIALIZE.to_vec() });
    let taken = r2.sessions.open("r1.away");
    assert_eq!(taken.labels().into_iter().collect::<Vec<_>>(), ["private", "secret"], "the taint survived");
    assert_eq!(taken.count("flood", MINUTE, 5, Duration::ZERO, Count::Look), Ok(1), "rate windows start over");
}

#[test]
fn redis_that_does_not_answer_at_start_is_a_clear_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let error = Redis::connect(&format!("redis://127.0.0.1:{port}/0"), "r1").unwrap_err();
    assert!(matches!(error, ConnectError::Unreachable(_)), "{error}");
    assert!(error.to_string().contains("start Redis"), "{error}");
}

#[test]
fn each_writer_sees_the_heads_the_others_published_and_not_its_own() {
    let redis = RedisServer::start();
    let (r1, r2) = (Redis::connect(&redis.url(), "r1").unwrap(), Redis::connect(&redis.url(), "r2").unwrap());
    let head = |writer: &str, seq: u64| clawai_store_redis::PublishedHead {
        writer: writer.to_owned(),
        seq,
        hash: format!("{seq:064x}"),
    };
    r1.publish_head(&head("aaaa000000000001", 3)).unwrap();
    r2.publish_head(&head("bbbb000000000002", 9)).unwrap();
    r2.publish_head(&head("bbbb000000000002", 12)).unwrap();
    assert_eq!(r1.published_heads("aaaa000000000001").unwrap(), [head("bbbb000000000002", 12)], "the newest only");
    assert_eq!(r2.published_heads("bbbb000000000002").unwrap(), [head("aaaa000000000001", 3)]);
    let everyone = r1.published_heads("").unwrap();
    assert_eq!(everyone, [head("aaaa000000000001", 3), head("bbbb000000000002", 12)]);
}

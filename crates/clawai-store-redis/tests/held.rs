//! Calls held for a person in a real `redis-server`: answered from another replica's
//! connection, and exactly one of the answer and the time-out wins.

mod server;

use std::time::Duration;

use clawai_approvals::{Answer, Ask, By, Error, HeldApprovals, Outcome, State};
use clawai_store_redis::{Redis, RedisHeld, pending};
use server::RedisServer;

fn ask(key: &str) -> Ask {
    Ask {
        session: "s".into(),
        server: Some("files".into()),
        method: "tools/call".into(),
        name: Some("write".into()),
        arguments: serde_json::json!({"path": "/tmp/x"}),
        rule: Some("ask-writes".into()),
        description: None,
        reason: "a rule asks a person about write".into(),
        key: key.into(),
        timeout_ms: 1000,
        id: None,
    }
}

fn answer(id: &str, outcome: Outcome) -> Answer {
    Answer { id: id.into(), outcome, by: By::Cli }
}

/// Two replicas' connections, and a ui marked as running (what `relay` keeps up).
fn replicas(server: &RedisServer) -> (Redis, RedisHeld, RedisHeld) {
    let (r1, r2) = (Redis::connect(&server.url(), "r1").unwrap(), Redis::connect(&server.url(), "r2").unwrap());
    (r1.clone(), RedisHeld::new(r1), RedisHeld::new(r2))
}

fn mark_a_ui_running(server: &RedisServer) {
    let set = std::process::Command::new("redis-cli")
        .args(["-p", &server.port().to_string(), "SET", "clawai:ui", "1", "PX", "60000"])
        .output()
        .unwrap();
    assert!(set.status.success());
}

#[test]
fn without_a_ui_nobody_can_be_asked() {
    let server = RedisServer::start();
    let (_, r1, _) = replicas(&server);
    assert!(matches!(r1.hold(&ask("k")), Err(Error::NoBroker(_))));
}

#[test]
fn a_call_held_on_one_replica_is_answered_from_another_once() {
    let server = RedisServer::start();
    let (redis, r1, r2) = replicas(&server);
    mark_a_ui_running(&server);
    let mut call = r1.hold(&ask("k")).unwrap();
    let id = call.id().to_owned();
    assert_eq!(
        pending(&redis).iter().map(|item| (item.id.clone(), item.state)).collect::<Vec<_>>(),
        [(id.clone(), State::Waiting)]
    );
    assert!(r2.answer(&id, &answer(&id, Outcome::AllowOnce)).unwrap());
    assert!(!r2.answer(&id, &answer(&id, Outcome::Deny)).unwrap(), "the first answer stands");
    assert_eq!(call.wait(Duration::from_secs(5)).unwrap(), Some(answer(&id, Outcome::AllowOnce)));
}

#[test]
fn the_time_out_and_an_answer_race_and_exactly_one_wins() {
    let server = RedisServer::start();
    let (redis, r1, r2) = replicas(&server);
    mark_a_ui_running(&server);

    // The time-out first: a later answer loses, and the call is listed as expired.
    let mut late = r1.hold(&ask("first")).unwrap();
    let id = late.id().to_owned();
    assert_eq!(late.wait(Duration::from_millis(150)).unwrap(), None);
    late.timed_out().unwrap();
    assert!(!r2.answer(&id, &answer(&id, Outcome::AllowOnce)).unwrap(), "too late");
    assert!(pending(&redis).iter().any(|item| item.id == id && item.state == State::Expired));
    assert!(matches!(r1.hold(&ask("first")).unwrap().wait(Duration::from_millis(100)), Ok(None)), "no grant");

    // The answer first, after the replica's last look but before it gave up: the
    // answer won, so the identical retry is let through once (a grant), not twice.
    let mut raced = r1.hold(&ask("second")).unwrap();
    let id = raced.id().to_owned();
    assert_eq!(raced.wait(Duration::from_millis(150)).unwrap(), None);
    assert!(r2.answer(&id, &answer(&id, Outcome::AllowOnce)).unwrap());
    raced.timed_out().unwrap();
    let mut retry = r1.hold(&ask("second")).unwrap();
    let granted = retry.wait(Duration::from_millis(100)).unwrap().expect("granted at once");
    assert_eq!((granted.outcome, granted.by), (Outcome::AllowOnce, By::Grant));
    let mut again = r1.hold(&ask("second")).unwrap();
    assert_eq!(again.wait(Duration::from_millis(100)).unwrap(), None, "the grant is used up");

    // A denial that wins leaves no grant.
    let mut denied = r1.hold(&ask("third")).unwrap();
    let id = denied.id().to_owned();
    assert_eq!(denied.wait(Duration::from_millis(100)).unwrap(), None);
    assert!(r2.answer(&id, &answer(&id, Outcome::Deny)).unwrap());
    denied.timed_out().unwrap();
    assert_eq!(r1.hold(&ask("third")).unwrap().wait(Duration::from_millis(100)).unwrap(), None);
}

#[test]
fn a_withdrawn_call_cannot_be_answered() {
    let server = RedisServer::start();
    let (redis, r1, r2) = replicas(&server);
    mark_a_ui_running(&server);
    let mut call = r1.hold(&ask("k")).unwrap();
    let id = call.id().to_owned();
    call.withdrawer().unwrap().withdraw().unwrap();
    assert!(!r2.answer(&id, &answer(&id, Outcome::AllowOnce)).unwrap());
    assert!(pending(&redis).is_empty());
    assert!(call.wait(Duration::from_millis(100)).is_err(), "nothing waits any more");
}

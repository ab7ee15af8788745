//! `--cluster` and `--replica-id` on the command line: a replica id is checked, a
//! `--cluster` URL is checked before anything connects, a Redis that does not answer
//! stops a command with what to do. Cluster mode against a real Redis:
//! `clawai-store-redis`'s tests and tests/e2e/test_cluster*.py.

use std::net::TcpListener;
use std::process::{Command, Output};

use crate::support::{ALLOW_ALL, clawai};

fn run(args: &[&str], cluster_env: Option<&str>) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, ALLOW_ALL).unwrap();
    let mut command = Command::new(clawai());
    command
        .args(args)
        .env("CLAWAI_POLICY", &policy)
        .env("CLAWAI_AUDIT", dir.path().join("audit.jsonl"))
        .env("CLAWAI_PINS", dir.path().join("pins"))
        .env("XDG_RUNTIME_DIR", dir.path())
        .env("XDG_STATE_HOME", dir.path());
    match cluster_env {
        Some(url) => command.env("CLAWAI_CLUSTER", url),
        None => command.env_remove("CLAWAI_CLUSTER"),
    };
    command.output().unwrap()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

#[test]
fn a_replica_id_must_be_letters_digits_and_dashes() {
    let refused = run(&["proxy", "--listen", "127.0.0.1:0", "--replica-id", "r.1", "--", "true"], None);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("`r.1` cannot name a replica"), "{}", stderr(&refused));
    let without_listen = run(&["proxy", "--replica-id", "r1", "--", "true"], None);
    assert_eq!(without_listen.status.code(), Some(2), "{}", stderr(&without_listen));
    assert!(stderr(&without_listen).contains("--listen"), "{}", stderr(&without_listen));
}

#[test]
fn cluster_on_a_replica_needs_a_replica_id_and_a_redis_that_answers() {
    // Something listening where --cluster points: a refused command may not connect.
    let redis_stand_in = TcpListener::bind("127.0.0.1:0").unwrap();
    redis_stand_in.set_nonblocking(true).unwrap();
    let url = format!("redis://{}/0", redis_stand_in.local_addr().unwrap());

    let no_id = run(&["proxy", "--listen", "127.0.0.1:0", "--cluster", &url, "--", "true"], None);
    assert_eq!(no_id.status.code(), Some(2));
    assert!(stderr(&no_id).contains("--cluster needs --replica-id"), "{}", stderr(&no_id));

    let stdio = run(&["gateway", "--config", "/nonexistent.json", "--cluster", &url], None);
    assert_eq!(stdio.status.code(), Some(2));
    assert!(stderr(&stdio).contains("--cluster is for replicas"), "{}", stderr(&stdio));

    assert_eq!(
        redis_stand_in.accept().map_err(|e| e.kind()).err(),
        Some(std::io::ErrorKind::WouldBlock),
        "a refused --cluster connected to the URL"
    );
}

#[test]
fn a_redis_that_does_not_answer_stops_every_command_saying_what_to_do() {
    let closed = TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap();
    let url = format!("redis://{closed}/0");
    for args in [
        vec!["proxy", "--listen", "127.0.0.1:0", "--replica-id", "r1", "--", "true"],
        vec!["ui", "--listen", "127.0.0.1:0"],
        vec!["approvals"],
        vec!["approve", "ABC"],
        vec!["deny", "ABC"],
        vec!["pins", "list"],
        vec!["pins", "approve", "server", "tool", "--hash", "00"],
    ] {
        let refused = run(&args, Some(&url));
        assert_eq!(refused.status.code(), Some(2), "{args:?}: {}", stderr(&refused));
        let said = stderr(&refused);
        assert!(said.contains("cannot reach Redis") && said.contains("start Redis"), "{args:?}: {said}");
        assert!(!said.contains("serving"), "{args:?} must not start: {said}");
    }
}

#[test]
fn a_cluster_url_that_is_not_redis_is_named_and_an_empty_one_is_unset() {
    let refused = run(&["pins", "list"], Some("postgres://127.0.0.1/db"));
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("not a Redis URL"), "{}", stderr(&refused));
    let secret = run(&["pins", "list"], Some("redis://me:hunter2@host:port/0"));
    assert!(!stderr(&secret).contains("hunter2") && stderr(&secret).contains("is not a port"), "{}", stderr(&secret));

    let unset = run(&["pins", "list"], Some(""));
    assert!(unset.status.success(), "an empty CLAWAI_CLUSTER counts as unset: {}", stderr(&unset));
}

//! `clawai audit ship --postgres` and `clawai audit verify --postgres` against a real
//! private PostgreSQL: every line exactly once across a kill of the shipper, nothing
//! lost while PostgreSQL is down, and a row changed in the database named.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use clawai_proxy::AuditLog;
use clawai_proxy::audit::{Decision, Direction, Event, EventKind, stamp};

use crate::postgres_support::Postgres;
use crate::support::clawai;

/// Writes `count` decided calls with `log`, and flushes them to the file.
fn write_calls(log: &AuditLog, from: usize, count: usize) {
    for i in from..from + count {
        let id = i.to_string();
        log.record_decision(&Event {
            time: stamp().wall,
            session: "s-1",
            server: Some("fs"),
            direction: Some(Direction::ClientToServer),
            kind: EventKind::Request,
            method: Some("tools/call"),
            id: Some(&id),
            tool: Some("read_file"),
            decision: Some(Decision::Allow),
            ..Default::default()
        });
    }
    log.flush();
}

/// Every line of the trail at `path`, rotated files included.
fn trail_lines(path: &Path) -> u64 {
    let mut files: Vec<PathBuf> =
        (1..=9).map(|n| PathBuf::from(format!("{}.{n}", path.display()))).filter(|p| p.exists()).collect();
    files.push(path.to_owned());
    files.iter().map(|f| std::fs::read(f).unwrap().iter().filter(|&&b| b == b'\n').count() as u64).sum()
}

fn clawai_cmd(args: &[&str]) -> Command {
    let mut command = Command::new(clawai());
    command.args(args).env_remove("CLAWAI_CLUSTER").env("CLAWAI_LOG", "warn");
    command
}

/// A shipper following a trail, killed when the test ends however it ends.
struct Shipper(Child);

impl Drop for Shipper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn ship_following(db: &Postgres, trail: &Path, batch: &str) -> Shipper {
    let child = clawai_cmd(&["audit", "ship", "--postgres", &db.url(), "--batch-lines", batch])
        .arg("--audit")
        .arg(trail)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the shipper");
    Shipper(child)
}

fn ship_once(db: &Postgres, trail: &Path) -> Output {
    clawai_cmd(&["audit", "ship", "--once", "--postgres", &db.url()]).arg("--audit").arg(trail).output().unwrap()
}

fn verify(db: &Postgres) -> Output {
    clawai_cmd(&["audit", "verify", "--postgres", &db.url()]).output().unwrap()
}

const STORED: &str = "SELECT count(*) FROM clawai_audit_events";

/// Waits until `rows` of the shipped lines are stored.
fn wait_for_rows(db: &Postgres, at_least: u64) -> u64 {
    wait_for_tables(db);
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let stored = db.sql("SELECT count(*) FROM clawai_audit_events").parse::<u64>().unwrap_or(0);
        if stored >= at_least {
            return stored;
        }
        assert!(Instant::now() < deadline, "only {stored} of {at_least} lines stored after 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn wait_for_tables(db: &Postgres) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while db.sql("SELECT count(*) FROM pg_tables WHERE tablename = 'clawai_audit_events'") != "1" {
        assert!(Instant::now() < deadline, "the shipper did not create its tables within 60 s");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn text(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr))
}

#[test]
fn every_line_is_stored_exactly_once_across_a_killed_shipper() {
    let db = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let trail = dir.path().join("audit.jsonl");
    // Two writers interleaved in one trail, rotated twice or more on the way.
    let first = AuditLog::open(&trail, 300_000, 5).unwrap();
    let second = AuditLog::open(&trail, 300_000, 5).unwrap();
    for round in 0..20 {
        write_calls(&first, round * 100, 100);
        write_calls(&second, round * 100, 100);
    }
    drop((first, second));
    let total = trail_lines(&trail);
    assert!(Path::new(&format!("{}.1", trail.display())).exists(), "the trail was not rotated");

    // One line per transaction: killed while it is storing them.
    let mut shipper = ship_following(&db, &trail, "1");
    let before_kill = wait_for_rows(&db, 1);
    shipper.0.kill().unwrap();
    shipper.0.wait().unwrap();
    let at_kill = db.count(STORED);
    assert!(
        before_kill < total && at_kill < total,
        "the shipper stored all {total} lines before it was killed: the test did not interrupt it"
    );

    let resumed = ship_once(&db, &trail);
    assert!(resumed.status.success(), "{}", text(&resumed));
    assert_eq!(db.count(STORED), total, "every line once: {}", text(&resumed));
    assert_eq!(db.count("SELECT count(DISTINCT (writer, seq)) FROM clawai_audit_events"), total);
    let again = ship_once(&db, &trail);
    assert!(again.status.success() && text(&again).contains("0 line(s) shipped"), "{}", text(&again));
    assert_eq!(db.count(STORED), total, "a run with nothing new stores nothing");

    let checked = verify(&db);
    assert!(checked.status.success(), "{}", text(&checked));
    assert!(text(&checked).contains(&format!("whole: {total} event(s) checked, 2 writer(s)")), "{}", text(&checked));
}

#[test]
fn a_row_changed_in_the_database_is_named() {
    let db = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let trail = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&trail, u64::MAX, 0).unwrap();
    write_calls(&log, 0, 10);
    drop(log);
    let shipped = ship_once(&db, &trail);
    assert!(shipped.status.success(), "{}", text(&shipped));
    assert!(verify(&db).status.success(), "{}", text(&verify(&db)));

    let changed = db.sql(
        "UPDATE clawai_audit_events SET line = replace(line, 'read_file', 'write_file') \
         WHERE id = (SELECT id FROM clawai_audit_events ORDER BY id OFFSET 4 LIMIT 1) RETURNING id",
    );
    let checked = verify(&db);
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked));
    let said = String::from_utf8_lossy(&checked.stdout);
    let first_line = said.lines().next().unwrap_or_default();
    assert!(
        first_line.starts_with(&format!("clawai_audit_events id:{changed}: edited")),
        "row {changed} was changed: {said}"
    );
}

#[test]
fn postgres_down_while_shipping_loses_nothing() {
    let mut db = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let trail = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&trail, u64::MAX, 0).unwrap();
    write_calls(&log, 0, 100);
    let mut shipper = ship_following(&db, &trail, "50");
    wait_for_rows(&db, 100);

    db.stop();
    write_calls(&log, 100, 150);
    db.resume();
    write_calls(&log, 250, 50);
    drop(log);
    let total = trail_lines(&trail);
    assert_eq!(total, 300);
    wait_for_rows(&db, total);

    nix::sys::signal::kill(nix::unistd::Pid::from_raw(shipper.0.id() as i32), nix::sys::signal::Signal::SIGTERM)
        .unwrap();
    assert!(shipper.0.wait().unwrap().success(), "the shipper stops cleanly on SIGTERM");
    assert_eq!(db.count(STORED), total, "nothing lost, nothing twice");
    let checked = verify(&db);
    assert!(checked.status.success(), "{}", text(&checked));
}

#[test]
fn rows_deleted_from_the_start_of_a_chain_are_caught() {
    let db = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let trail = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&trail, u64::MAX, 0).unwrap();
    write_calls(&log, 0, 6);
    let writer = log.writer_id();
    drop(log);
    assert!(ship_once(&db, &trail).status.success());

    db.sql("DELETE FROM clawai_audit_events WHERE seq < 2");
    let checked = verify(&db);
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked));
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(
        said.contains(&format!("deleted: events #0–#1 of writer {writer} are missing")),
        "the first two rows were deleted: {said}"
    );
}

#[test]
fn a_shipper_whose_role_may_only_insert_ships_and_cannot_rewrite() {
    let db = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let trail = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&trail, u64::MAX, 0).unwrap();
    write_calls(&log, 0, 5);
    // The tables, created once by their owner.
    assert!(ship_once(&db, &trail).status.success());
    db.sql("CREATE ROLE shipper LOGIN");
    db.sql(&clawai_audit_ship::schema::SHIPPER_GRANTS.replace("{role}", "shipper"));

    write_calls(&log, 5, 5);
    drop(log);
    let as_shipper = db.url().replace("clawai@", "shipper@");
    let shipped =
        clawai_cmd(&["audit", "ship", "--once", "--postgres", &as_shipper]).arg("--audit").arg(&trail).output();
    let shipped = shipped.unwrap();
    assert!(shipped.status.success(), "{}", text(&shipped));
    assert_eq!(db.count(STORED), 10);
    assert!(verify(&db).status.success());

    let rewrite = db.psql_as("shipper", "UPDATE clawai_audit_events SET line = '{}'");
    assert!(!rewrite.status.success(), "the shipper's role rewrote a shipped line");
    assert!(String::from_utf8_lossy(&rewrite.stderr).contains("permission denied"), "{rewrite:?}");
}

#[test]
fn the_newest_rows_of_one_writer_deleted_are_named_by_anothers_checkpoint() {
    let db = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let (trail_a, trail_b) = (dir.path().join("audit-r1.jsonl"), dir.path().join("audit-r2.jsonl"));
    let (a, b) = (AuditLog::open(&trail_a, u64::MAX, 0).unwrap(), AuditLog::open(&trail_b, u64::MAX, 0).unwrap());
    write_calls(&a, 0, 5);
    write_calls(&b, 0, 8);
    // What replica r1 records when replica r2 published its newest line in Redis.
    let seen = b.head().expect("r2 wrote lines");
    assert_eq!(seen.seq, 7);
    let after = a.record_checkpoint("r1", std::slice::from_ref(&seen)).expect("r1's head");
    write_calls(&a, 5, 2);
    let writer_b = b.writer_id();
    drop((a, b));
    for trail in [&trail_a, &trail_b] {
        let shipped = ship_once(&db, trail);
        assert!(shipped.status.success(), "{}", text(&shipped));
    }
    let checked = verify(&db);
    assert!(checked.status.success(), "{}", text(&checked));
    let checkpoint = db.count(&format!(
        "SELECT id FROM clawai_audit_events WHERE writer = '{}' AND seq = {}",
        after.writer, after.seq
    ));

    // r2's chain alone stays whole when its newest lines go: r1's checkpoint tells.
    db.sql(&format!("DELETE FROM clawai_audit_events WHERE writer = '{writer_b}' AND seq >= 6"));
    let checked = verify(&db);
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked));
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(
        said.starts_with(&format!(
            "clawai_audit_events id:{checkpoint}: cut: the checkpoint of writer {} (clawai_audit_events \
             id:{checkpoint}) saw event #7 of writer {writer_b}, which is not in the database (its newest row is #5)",
            after.writer
        )),
        "{said}"
    );
}

#[test]
fn a_writers_newest_row_changed_is_named_by_anothers_checkpoint() {
    let db = Postgres::start();
    let dir = tempfile::tempdir().unwrap();
    let (trail_a, trail_b) = (dir.path().join("audit-r1.jsonl"), dir.path().join("audit-r2.jsonl"));
    let (a, b) = (AuditLog::open(&trail_a, u64::MAX, 0).unwrap(), AuditLog::open(&trail_b, u64::MAX, 0).unwrap());
    write_calls(&b, 0, 3);
    a.record_checkpoint("r1", &[b.head().expect("r2 wrote lines")]);
    let writer_b = b.writer_id();
    drop((a, b));
    for trail in [&trail_a, &trail_b] {
        assert!(ship_once(&db, trail).status.success());
    }
    let changed = db.sql(&format!(
        "UPDATE clawai_audit_events SET line = replace(line, 'read_file', 'write_file') \
         WHERE writer = '{writer_b}' AND seq = 2 RETURNING id"
    ));
    let checked = verify(&db);
    assert_eq!(checked.status.code(), Some(1), "{}", text(&checked));
    let said = String::from_utf8_lossy(&checked.stdout);
    assert!(said.starts_with(&format!("clawai_audit_events id:{changed}: edited: the checkpoint of writer")), "{said}");
    assert!(said.contains(&format!("saw event #2 of writer {writer_b} with another hash")), "{said}");
}

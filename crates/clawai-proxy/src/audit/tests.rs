//! Tests of the audit trail.

use std::fs::{self, File};
use std::io;
use std::time::Duration;

use super::event::*;
use super::log::*;
use super::*;
use serde_json::Value;
use serde_json::value::RawValue;

#[test]
fn stamps_follow_the_system_clock_and_the_monotonic_one() {
    let close = |a: jiff::Timestamp, b: jiff::Timestamp| a.duration_since(b).abs().as_millis() < 50;
    let first = stamp();
    assert!(close(first.wall, jiff::Timestamp::now()), "derived from an anchor read this second");
    std::thread::sleep(Duration::from_millis(20));
    let second = stamp();
    let wall_step = second.wall.duration_since(first.wall).as_micros() as i64;
    let mono_step = second.instant.duration_since(first.instant).as_micros() as i64;
    assert!(wall_step >= 20_000 && mono_step >= 20_000, "{wall_step} µs, {mono_step} µs");
    assert!(close(second.wall, jiff::Timestamp::now()));
}

#[test]
fn durations_are_written_to_the_microsecond() {
    for (ms, text) in [
        (0.0, "0.000"),
        (0.0123456, "0.012"),
        (0.0125, "0.013"),
        (1.25, "1.250"),
        (999.9996, "1000.000"),
        (86_400_000.5, "86400000.500"),
        (-1.5, "-1.5"),
        (2e12, "2000000000000.0"),
    ] {
        let mut out = Vec::new();
        write_millis(&mut out, ms);
        assert_eq!(String::from_utf8(out).unwrap(), text, "{ms}");
        let parsed: f64 = serde_json::from_str(text).unwrap();
        assert!((parsed - ms).abs() <= 0.0005 + ms.abs() * 1e-12, "{ms} read back as {parsed}");
    }
}

#[test]
fn one_encoder_writes_each_events_own_session_and_server() {
    let mut encoder = Encoder::default();
    // The first event of a thread may well have the encoder's empty starting values.
    let cases = [
        ("", None),
        ("s-1", Some("a")),
        ("s-1", Some("a")),
        ("s-1", None),
        ("s-1", Some("b\"")),
        ("s-2", Some("b\"")),
        ("", None),
        ("s-2", Some("")),
    ];
    for (session, server) in cases {
        let mut out = Vec::new();
        Event { session, server, kind: EventKind::Request, ..Default::default() }.write_json(&mut out, &mut encoder);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["session"], session);
        assert_eq!(v.get("server").and_then(Value::as_str), server);
    }
}

#[test]
fn annotations_are_written_as_the_server_gave_them() {
    use clawai_policy::ToolAnnotations;
    let mut encoder = Encoder::default();
    for (read_only_hint, destructive_hint, written) in [
        (None, None, serde_json::json!({})),
        (Some(true), None, serde_json::json!({"readOnlyHint": true})),
        (Some(false), Some(false), serde_json::json!({"readOnlyHint": false, "destructiveHint": false})),
        (None, Some(true), serde_json::json!({"destructiveHint": true})),
    ] {
        let annotations = ToolAnnotations { read_only_hint, destructive_hint };
        let mut out = Vec::new();
        Event { session: "s", kind: EventKind::Request, annotations: Some(annotations), ..Default::default() }
            .write_json(&mut out, &mut encoder);
        let v: Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(v["annotations"], written);
        assert_eq!(ToolAnnotations::from_json(&v["annotations"]), annotations);
    }
}

#[test]
fn events_are_json_with_every_field_escaped() {
    let id = RawValue::from_string("\"a\\\"b\"".into()).unwrap();
    let arguments = serde_json::json!({"path": "/tmp/x", "token": "ghp_abcdefghijklmnopqrstuvwxyz0123"});
    let time: jiff::Timestamp = "2026-11-22T10:00:01.000042987Z".parse().unwrap();
    let labels = ["private".to_owned(), "a\"b".to_owned()];
    let event = Event {
        time,
        session: "s-1",
        server: Some("fs \"quoted\""),
        direction: Some(Direction::ClientToServer),
        kind: EventKind::Request,
        method: Some("tools/call"),
        id: Some(id.get()),
        tool: Some("read\nfile\u{7}"),
        resource: None,
        prompt: None,
        listed_as: None,
        arguments: Some(crate::redact::Redacted(&clawai_protocol::Json::from(&arguments))),
        annotations: Some(clawai_policy::ToolAnnotations { read_only_hint: Some(false), destructive_hint: None }),
        decision: Some(Decision::Deny),
        rule: Some("r\\1"),
        reason: Some("rule `r`: ünïcode ✓".into()),
        duration_ms: Some(1.25),
        is_error: Some(false),
        size: Some(123),
        step: Some(Step::Answered),
        channel: Some(Channel::Client),
        scope: Some(Scope::Session),
        approval: Some("\"clawai-ask-x-1\""),
        approved: Some(true),
        by: Some("client \"x\""),
        tainted: Some(&labels),
        sandbox: Some("landlock-files,pid-ns"),
        heads: None,
    };
    let mut out = Vec::new();
    event.write_json(&mut out, &mut Encoder::default());
    let v: Value = serde_json::from_slice(&out).unwrap();
    assert_eq!(v["sandbox"], "landlock-files,pid-ns", "a call's event names the sandbox it ran in");
    assert_eq!(v["time"], "2026-11-22T10:00:01.000042Z");
    assert_eq!(v["session"], "s-1");
    assert_eq!(v["server"], "fs \"quoted\"");
    assert_eq!(v["direction"], "client->server");
    assert_eq!(v["kind"], "request");
    assert_eq!(v["tainted"], serde_json::json!(["private", "a\"b"]));
    assert_eq!(
        (v["step"].as_str(), v["channel"].as_str(), v["scope"].as_str()),
        (Some("answered"), Some("client"), Some("session"))
    );
    assert_eq!(
        (v["approval"].as_str(), v["approved"].as_bool(), v["by"].as_str()),
        (Some("\"clawai-ask-x-1\""), Some(true), Some("client \"x\""))
    );
    assert_eq!(v["method"], "tools/call");
    assert_eq!(v["id"], "a\"b");
    assert_eq!(v["tool"], "read\nfile\u{7}");
    assert!(v.get("resource").is_none() && v.get("prompt").is_none());
    assert_eq!(v["arguments"], serde_json::json!({"path": "/tmp/x", "token": "[REDACTED]"}));
    assert_eq!(v["decision"], "deny");
    assert_eq!(v["rule"], "r\\1");
    assert_eq!(v["reason"], "rule `r`: ünïcode ✓");
    assert_eq!(v["duration_ms"], 1.25);
    assert_eq!(v["is_error"], false);
    assert_eq!(v["size"], 123);
    // The cached date is reused within the second and replaced after it.
    let mut encoder = Encoder::default();
    let mut times = Vec::new();
    for t in ["2026-11-22T10:00:01.5Z", "2026-11-22T10:00:01.999999Z", "2026-11-22T10:00:02Z"] {
        let mut out = Vec::new();
        Event { time: t.parse().unwrap(), ..Default::default() }.write_json(&mut out, &mut encoder);
        let v: Value = serde_json::from_slice(&out).unwrap();
        times.push(v["time"].as_str().unwrap().to_owned());
    }
    assert_eq!(times, ["2026-11-22T10:00:01.500000Z", "2026-11-22T10:00:01.999999Z", "2026-11-22T10:00:02.000000Z"]);
}

#[test]
fn a_decision_is_on_disk_once_its_thread_is_told_so() {
    // Two threads record decisions and flush concurrently, as the two relay threads
    // of a stdio proxy do: one may take the other's event into its own write, and
    // the other must then not go on before that write is done.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&path, u64::MAX, 0).unwrap();
    let other = AuditLog::disabled();
    std::thread::scope(|scope| {
        for thread in ["a", "b"] {
            let (log, other, path) = (&log, &other, &path);
            scope.spawn(move || {
                for i in 0..2000 {
                    let id = format!("\"{thread}{i}\"");
                    // The event lands after whatever the file holds now.
                    let before = fs::metadata(path).unwrap().len();
                    let event = Event { session: "s", kind: EventKind::Request, id: Some(&id), ..Default::default() };
                    log.record_decision(&event);
                    // Responses in between, as the other direction records them.
                    log.record(&Event { session: "s", kind: EventKind::Response, ..Default::default() });
                    other.record_decision(&event);
                    let mark = AuditLog::last_decision_of_this_thread();
                    assert!(mark > 0);
                    if !log.decisions_written(mark) {
                        log.flush();
                    }
                    assert!(log.decisions_written(mark));
                    let mut file = File::open(path).unwrap();
                    io::Seek::seek(&mut file, io::SeekFrom::Start(before)).unwrap();
                    let mut text = String::new();
                    io::Read::read_to_string(&mut file, &mut text).unwrap();
                    assert!(text.contains(&format!("\"id\":{id}")), "decision {id} is not on disk");
                }
            });
        }
    });
    assert!(!log.has_decision());
    // A decision another thread recorded is not this thread's to wait for, but
    // `has_decision` sees it.
    let mark = AuditLog::last_decision_of_this_thread();
    std::thread::scope(|scope| {
        scope.spawn(|| log.record_decision(&Event { session: "s", kind: EventKind::Request, ..Default::default() }));
    });
    assert!(log.decisions_written(mark));
    assert!(log.has_decision());
    log.flush();
    assert!(!log.has_decision());
    assert_eq!(fs::read_to_string(&path).unwrap().lines().count(), 8001);
}

#[test]
fn events_are_lines_and_rotation_keeps_files() {
    let dir = std::env::temp_dir().join(format!("clawai-audit-test-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    let path = dir.join("audit.jsonl");
    let log = AuditLog::open(&path, 400, 2).unwrap();
    for _ in 0..10 {
        log.record(&Event {
            time: stamp().wall,
            session: "s",
            kind: EventKind::Request,
            method: Some("tools/call"),
            ..Default::default()
        });
        // As a transport does before it forwards the message.
        log.flush();
    }
    let unflushed = fs::read_to_string(&path).unwrap();
    log.record(&Event { time: stamp().wall, session: "s", kind: EventKind::Response, ..Default::default() });
    assert_eq!(fs::read_to_string(&path).unwrap(), unflushed, "recorded events wait for a flush");
    log.flush();
    let text = fs::read_to_string(&path).unwrap();
    for line in text.lines() {
        let v: Value = serde_json::from_str(line).unwrap();
        assert!(v["kind"] == "response" || v["method"] == "tools/call", "{v}");
    }
    assert!(dir.join("audit.jsonl.1").exists());
    assert!(dir.join("audit.jsonl.2").exists());
    assert!(!dir.join("audit.jsonl.3").exists());
    assert!(fs::metadata(&path).unwrap().len() <= 400);
    assert!(fs::read_to_string(&path).unwrap().contains("\"response\""), "buffered events are written on flush");
    fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn events_recorded_together_are_written_whole_and_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    let log = AuditLog::open(&path, AuditLog::DEFAULT_MAX_BYTES, 1).unwrap();
    // Far more than one piece of `BATCH_BYTES`, so that several hand-overs happen.
    let ids: Vec<String> = (0..2000).map(|i| i.to_string()).collect();
    let events =
        || ids.iter().map(|id| Event { session: "s", kind: EventKind::Response, id: Some(id), ..Default::default() });
    assert!(events().map(|e| e.id.unwrap().len() + 100).sum::<usize>() > 4 * BATCH_BYTES);
    log.record_all(events());
    log.flush();
    let written: Vec<String> = fs::read_to_string(&path)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str::<Value>(line).unwrap()["id"].to_string())
        .collect();
    assert_eq!(written, ids);
    // A disabled log takes them and writes nothing (and returns).
    AuditLog::disabled().record_all(events());
}

#[cfg(target_os = "linux")]
#[test]
fn space_is_reserved_ahead_and_readers_see_only_events() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    fs::write(&path, "{\"earlier\":true}\n").unwrap();
    let log = AuditLog::open(&path, AuditLog::DEFAULT_MAX_BYTES, 1).unwrap();
    for _ in 0..3 {
        log.record_decision(&Event { session: "s", kind: EventKind::Request, ..Default::default() });
        log.flush();
    }
    let text = fs::read_to_string(&path).unwrap();
    assert_eq!(text.lines().count(), 4, "{text:?}");
    assert!(text.starts_with("{\"earlier\":true}\n") && text.ends_with("}\n") && !text.contains('\0'));
    for line in text.lines() {
        serde_json::from_str::<Value>(line).unwrap();
    }
    let metadata = fs::metadata(&path).unwrap();
    assert_eq!(metadata.len(), text.len() as u64, "the reservation must not show as content");
    let probe = File::create(dir.path().join("probe")).unwrap();
    let reserving_works =
        nix::fcntl::fallocate(&probe, nix::fcntl::FallocateFlags::FALLOC_FL_KEEP_SIZE, 0, 4096).is_ok();
    if reserving_works {
        assert!(metadata.blocks() * 512 >= RESERVE_AHEAD, "{} bytes allocated", metadata.blocks() * 512);
    }
}

/// The file a rotation pushes out is freed when the flusher closes it, not by the
/// rename on the writing thread: that thread must still hold it, unlinked, after the
/// rotation, and must not once the flusher has run.
#[cfg(unix)]
#[test]
fn the_file_a_rotation_displaces_is_closed_off_the_writing_thread() {
    use std::os::unix::fs::MetadataExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    for keep in [0, 1, 3] {
        let log = AuditLog::open(&path, 400, keep).unwrap();
        let oldest = if keep == 0 { path.clone() } else { dir.path().join(format!("audit.jsonl.{keep}")) };
        let mut displaced = None;
        for _ in 0..40 {
            let before = fs::metadata(&oldest).ok().map(|m| m.ino());
            log.record(&Event { time: stamp().wall, session: "s", kind: EventKind::Request, ..Default::default() });
            log.flush();
            let retired = &log.shared.output.lock().unwrap().retired;
            if let (Some(inode), Some(file)) = (before, retired.last()) {
                let held = file.metadata().unwrap();
                if held.ino() == inode {
                    assert_eq!(held.nlink(), 0, "keep {keep}: the displaced file still has a name");
                    displaced = Some(inode);
                    break;
                }
            }
        }
        assert!(displaced.is_some(), "keep {keep}: no rotation left its displaced file open");
        log.shared.close_retired();
        assert!(log.shared.output.lock().unwrap().retired.is_empty());
        drop(log);
        for entry in fs::read_dir(dir.path()).unwrap() {
            fs::remove_file(entry.unwrap().path()).unwrap();
        }
    }
}

/// Rotations faster than the flusher runs hold a few files open, never more.
#[test]
fn rotations_hold_a_bounded_number_of_files() {
    let dir = tempfile::tempdir().unwrap();
    let log = AuditLog::open(&dir.path().join("audit.jsonl"), 100, 1).unwrap();
    for _ in 0..200 {
        log.record(&Event { time: stamp().wall, session: "s", kind: EventKind::Request, ..Default::default() });
        log.flush();
        assert!(log.shared.output.lock().unwrap().retired.len() <= MAX_RETIRED);
    }
}

#[cfg(unix)]
#[test]
fn a_trail_that_is_not_a_regular_file_is_never_rotated() {
    let dir = tempfile::tempdir().unwrap();
    // A link to the device, so that a rotation, if one happened, would rename the
    // link and leave a regular file in its place, never touch `/dev/null` itself.
    let path = dir.path().join("audit.jsonl");
    std::os::unix::fs::symlink("/dev/null", &path).unwrap();
    let log = AuditLog::open(&path, 100, 2).unwrap();
    for _ in 0..10 {
        log.record_decision(&Event {
            session: "s",
            kind: EventKind::Request,
            method: Some("tools/call"),
            ..Default::default()
        });
        log.flush();
    }
    assert!(fs::symlink_metadata(&path).unwrap().file_type().is_symlink(), "the trail's path was replaced");
    assert!(!dir.path().join("audit.jsonl.1").exists(), "a device was rotated");
}

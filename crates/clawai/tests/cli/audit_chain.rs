//! The trail's hash chain from the command line: `clawai audit verify` on trails written
//! by real proxies (several at once, rotating the same trail), and `--follow --json`.

use crate::support;

use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use serde_json::{Value, json};
use support::{ALLOW_ALL, TIMEOUT, clawai, scripted_server};

fn audit(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(clawai()).arg("audit").args(args).output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into(),
        String::from_utf8_lossy(&out.stderr).into(),
    )
}

/// Runs `clawai proxy` on `trail` for server `name`: `initialize`, then `calls` tool
/// calls, one at a time, then closes its input and waits for it.
fn run_proxy(dir: &Path, trail: &Path, name: &str, calls: usize, max_bytes: u64) {
    let mut child = Command::new(clawai())
        .args(["proxy", "--server", name, "--audit-max-bytes", &max_bytes.to_string(), "--policy"])
        .arg(dir.join("policy.toml"))
        .arg("--audit")
        .arg(trail)
        .arg("--")
        .arg("python3")
        .arg(scripted_server())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut ask = |message: Value| {
        writeln!(stdin, "{message}").unwrap();
        loop {
            let mut line = String::new();
            stdout.read_line(&mut line).unwrap();
            let answer: Value = serde_json::from_str(&line).unwrap();
            // The server's notifications pass by.
            if answer.get("id").is_some() {
                assert_eq!(answer["id"], message["id"], "{line}");
                return;
            }
        }
    };
    ask(
        json!({"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}),
    );
    for i in 1..=calls {
        // Spread over time, so that the proxies' writes interleave.
        std::thread::sleep(Duration::from_millis(5));
        ask(
            json!({"jsonrpc":"2.0","id":i,"method":"tools/call","params":{"name":"read_file","arguments":{"path":format!("/srv/{name}/{i}")}}}),
        );
    }
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

fn trail_files(trail: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> =
        (1..=9).rev().map(|n| PathBuf::from(format!("{}.{n}", trail.display()))).filter(|p| p.exists()).collect();
    files.push(trail.to_owned());
    files
}

fn setup() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("policy.toml"), ALLOW_ALL).unwrap();
    let trail = dir.path().join("state").join("audit.jsonl");
    (dir, trail)
}

#[test]
fn proxies_writing_one_trail_at_once_and_rotating_it_leave_chains_that_verify() {
    let (dir, trail) = setup();
    let (servers, calls) = (4, 25);
    std::thread::scope(|scope| {
        for s in 0..servers {
            let (dir, trail) = (dir.path(), &trail);
            scope.spawn(move || run_proxy(dir, trail, &format!("server{s}"), calls, 24_000));
        }
    });
    let files = trail_files(&trail);
    assert!(files.len() >= 3, "the proxies rotated the trail: {files:?}");
    assert!(!PathBuf::from(format!("{}.5", trail.display())).exists(), "nothing rotated away: {files:?}");
    // Every request and response of every proxy is in the trail, once.
    let events: Vec<Value> = files
        .iter()
        .flat_map(|f| {
            std::fs::read_to_string(f).unwrap().lines().map(|l| serde_json::from_str(l).unwrap()).collect::<Vec<_>>()
        })
        .collect();
    for s in 0..servers {
        let calls_seen = events
            .iter()
            .filter(|e| e["server"] == format!("server{s}") && e["method"] == "tools/call" && e["kind"] == "request")
            .count();
        assert_eq!(calls_seen, calls, "server{s}");
    }
    let switches = events.windows(2).filter(|pair| pair[0]["writer"] != pair[1]["writer"]).count();
    assert!(switches > 2 * servers, "the writers' lines interleave: {switches} switches");
    let (code, out, err) = audit(&["verify", "--audit", trail.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    assert!(out.contains(&format!("whole: {} event(s) checked, ", events.len())), "{out}");
    // Each thread that records is a writer: a proxy's chains together hold all its events,
    // each chain complete from its event #0.
    for s in 0..servers {
        let per_server = events.iter().filter(|e| e["server"] == format!("server{s}")).count();
        let chains: Vec<&str> = out.lines().filter(|l| l.contains(&format!("(server server{s},"))).collect();
        assert!(!chains.is_empty(), "{out}");
        let counted: usize = chains
            .iter()
            .map(|line| {
                let (_, after) = line.split_once("): ").unwrap();
                let (count, range) = after.split_once(" event(s), ").unwrap();
                let count: usize = count.parse().unwrap();
                assert_eq!(range, format!("#0–#{}", count - 1), "{line}");
                count
            })
            .sum();
        assert_eq!(counted, per_server, "server{s}: {out}");
    }

    // A line of one writer deleted in a rotated file: named, with its file and line.
    let victim = &files[files.len() - 2];
    let text = std::fs::read_to_string(victim).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    // A line its writer wrote another line after (the newest line of a writer has
    // nothing after it to vouch for it).
    let (index, writer, seq, (file, line)) = (1..lines.len())
        .find_map(|i| {
            let v: Value = serde_json::from_str(lines[i]).unwrap();
            let (writer, seq) = (v["writer"].as_str()?.to_owned(), v["seq"].as_u64()?);
            let next = next_line_of(&files, &writer, seq + 1)?;
            Some((i, writer, seq, next))
        })
        .expect("a line with a successor");
    lines.remove(index);
    std::fs::write(victim, lines.join("\n") + "\n").unwrap();
    let (code, out, _) = audit(&["verify", "--audit", trail.to_str().unwrap()]);
    assert_eq!(code, 1, "{out}");
    let first = out.lines().next().unwrap();
    assert!(
        first.contains(": deleted: ") && first.contains(&format!("event #{seq} is of writer {writer} missing")),
        "{out}"
    );
    // The place is the next line of that writer, wherever the rotation put it (in the
    // same file, one line up: the line removed was before it).
    let line = if file == *victim { line - 1 } else { line };
    assert!(first.starts_with(&format!("{}:{line}: ", file.display())), "{first}");
}

/// Where the line of `writer` numbered `seq` is, if anywhere.
fn next_line_of(files: &[PathBuf], writer: &str, seq: u64) -> Option<(PathBuf, usize)> {
    for file in files {
        for (n, line) in std::fs::read_to_string(file).unwrap().lines().enumerate() {
            let v: Value = serde_json::from_str(line).unwrap();
            if v["writer"] == writer && v["seq"] == seq {
                return Some((file.clone(), n + 1));
            }
        }
    }
    None
}

#[test]
fn verify_names_the_line_and_what_was_done_to_it() {
    let (dir, trail) = setup();
    run_proxy(dir.path(), &trail, "fs", 3, u64::MAX);
    let trail_arg = trail.to_str().unwrap();
    let pristine = std::fs::read_to_string(&trail).unwrap();
    let lines: Vec<&str> = pristine.lines().collect();
    assert!(lines.len() >= 8, "{pristine}");
    // The newest line has nothing after it to vouch for it, but the head noted from an
    // earlier check does.
    let (code, out, _) = audit(&["verify", "--audit", trail_arg]);
    assert_eq!(code, 0, "{out}");
    let newest = format!("newest line {trail_arg}:{}, sha256 ", lines.len());
    let head = out.lines().find_map(|l| l.split_once(&newest)).map(|(_, h)| h.to_owned()).expect("a head");
    std::fs::write(&trail, lines[..lines.len() - 1].join("\n") + "\n").unwrap();
    let (code, out, _) = audit(&["verify", "--audit", trail_arg]);
    assert_eq!(code, 0, "without the head, a shorter chain is a whole one: {out}");
    let (code, out, _) = audit(&["verify", "--audit", trail_arg, "--head", &head]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains(&format!("no line has the hash {head}")), "{out}");
    let cut = format!(":{}: truncated: ", lines.len());
    // The first two lines of the writer of the first line (the thread that decides the
    // client's requests; the server's answers are another thread's chain).
    let writer_of = |line: &str| serde_json::from_str::<Value>(line).unwrap()["writer"].clone();
    let second = (1..lines.len()).find(|&i| writer_of(lines[i]) == writer_of(lines[0])).unwrap();
    let mut swapped = lines.clone();
    swapped.swap(0, second);
    let cases: [(&str, String, &str); 4] = [
        ("edited", pristine.replacen("/srv/fs/1", "/srv/fs/9", 1), ": edited: "),
        ("swapped", swapped.join("\n") + "\n", ":1: reordered: "),
        (
            "inserted",
            [&lines[..5], &[lines[1]][..], &lines[5..]].concat().join("\n") + "\n",
            ":6: inserted: a copy of ",
        ),
        ("cut", pristine[..pristine.len() - 10].to_owned(), &cut),
    ];
    for (what, text, expected) in cases {
        std::fs::write(&trail, &text).unwrap();
        let (code, out, _) = audit(&["verify", "--audit", trail_arg]);
        assert_eq!(code, 1, "{what}: {out}");
        assert!(out.lines().next().unwrap().contains(expected), "{what}: {out}");
    }
    let edited_line = lines.iter().position(|l| l.contains("/srv/fs/1")).unwrap() + 1;
    std::fs::write(&trail, pristine.replacen("/srv/fs/1", "/srv/fs/9", 1)).unwrap();
    let (_, out, _) = audit(&["verify", trail_arg]);
    assert!(out.starts_with(&format!("{trail_arg}:{edited_line}: edited: ")), "files given by name: {out}");
    // Lines from before the chain: said, not counted as checked.
    let old = "{\"time\":\"2026-01-01T00:00:00Z\",\"session\":\"s\",\"kind\":\"request\"}\n".repeat(2);
    std::fs::write(&trail, old + &pristine).unwrap();
    let (code, out, _) = audit(&["verify", "--audit", trail_arg]);
    assert_eq!(code, 0, "{out}");
    assert!(
        out.contains("not verified: 2 line(s) without a hash chain")
            && out.contains(&format!("whole: {} event(s) checked", lines.len())),
        "{out}"
    );
}

/// The lines a child prints, as they come.
fn lines_of(child: &mut Child) -> Receiver<String> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                return;
            }
        }
    });
    rx
}

fn event(id: u32, decision: &str) -> String {
    json!({"time":"2026-11-25T10:00:00Z","session":"s","server":"fs","kind":"request","method":"tools/call","id":id,"tool":"t","decision":decision}).to_string()
}

fn append(path: &Path, lines: &[String]) {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    for line in lines {
        writeln!(file, "{line}").unwrap();
    }
}

fn next(rx: &Receiver<String>) -> Value {
    serde_json::from_str(&rx.recv_timeout(TIMEOUT).expect("a line in time")).unwrap()
}

#[test]
fn follow_json_prints_each_new_event_as_written_across_a_rotation() {
    let dir = tempfile::tempdir().unwrap();
    let trail = dir.path().join("audit.jsonl");
    append(&trail, &[event(1, "allow"), event(2, "deny")]);
    let spawn = |args: &[&str]| {
        Command::new(clawai())
            .arg("audit")
            .args(args)
            .arg("--audit")
            .arg(&trail)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap()
    };
    let mut tail = spawn(&["tail", "-n", "1", "--follow", "--json"]);
    let mut query = spawn(&["query", "--decision", "deny", "--follow", "--json"]);
    let (tail_lines, query_lines) = (lines_of(&mut tail), lines_of(&mut query));
    assert_eq!(next(&tail_lines)["id"], 2);
    assert_eq!(next(&query_lines)["id"], 2);
    std::thread::sleep(Duration::from_millis(300));
    append(&trail, &[event(3, "allow"), event(4, "deny")]);
    assert_eq!(next(&tail_lines)["id"], 3);
    assert_eq!(next(&tail_lines)["id"], 4);
    assert_eq!(next(&query_lines)["id"], 4, "only the events that match");
    // A last line in the old file, then the rotation, then the new file: nothing lost.
    append(&trail, &[event(5, "deny")]);
    std::fs::rename(&trail, dir.path().join("audit.jsonl.1")).unwrap();
    append(&trail, &[event(6, "deny")]);
    for lines in [&tail_lines, &query_lines] {
        assert_eq!(next(lines)["id"], 5);
        assert_eq!(next(lines)["id"], 6);
    }
    // A line written in two pieces is printed once, whole.
    let mut file = std::fs::OpenOptions::new().append(true).open(&trail).unwrap();
    let line = event(7, "deny");
    file.write_all(&line.as_bytes()[..20]).unwrap();
    std::thread::sleep(Duration::from_millis(300));
    file.write_all(&line.as_bytes()[20..]).unwrap();
    file.write_all(b"\n").unwrap();
    assert_eq!(next(&tail_lines)["id"], 7);
    assert_eq!(next(&query_lines)["id"], 7);
    for mut child in [tail, query] {
        child.kill().unwrap();
        child.wait().unwrap();
    }
}

#[test]
fn the_newest_lines_of_one_replicas_trail_cut_are_named_by_anothers_checkpoint() {
    use clawai_proxy::AuditLog;
    use clawai_proxy::audit::{Decision, Event, EventKind};
    let dir = tempfile::tempdir().unwrap();
    let (a_path, b_path) = (dir.path().join("audit-r1.jsonl"), dir.path().join("audit-r2.jsonl"));
    let (a, b) = (AuditLog::open(&a_path, u64::MAX, 0).unwrap(), AuditLog::open(&b_path, u64::MAX, 0).unwrap());
    for n in 0..4 {
        let id = n.to_string();
        b.record_decision(&Event {
            session: "s",
            kind: EventKind::Request,
            method: Some("tools/call"),
            id: Some(&id),
            decision: Some(Decision::Allow),
            ..Default::default()
        });
    }
    let seen = b.head().unwrap();
    a.record_checkpoint("r1", std::slice::from_ref(&seen));
    let writer_b = b.writer_id();
    drop((a, b));
    let both = [a_path.to_str().unwrap(), b_path.to_str().unwrap()];
    let (code, out, err) = audit(&["verify", both[0], both[1]]);
    assert_eq!(code, 0, "{out}{err}");

    // r2's trail loses its newest line: its own chain is still whole.
    let text = std::fs::read_to_string(&b_path).unwrap();
    let kept: Vec<&str> = text.lines().take(3).collect();
    std::fs::write(&b_path, kept.join("\n") + "\n").unwrap();
    let (code, out, _) = audit(&["verify", both[1]]);
    assert_eq!(code, 0, "r2's trail alone is whole: {out}");
    let (code, out, _) = audit(&["verify", both[0], both[1]]);
    assert_eq!(code, 1, "{out}");
    assert!(
        out.contains("cut: the checkpoint of writer ") && out.contains(&format!("saw event #3 of writer {writer_b}")),
        "{out}"
    );
    let (code, out, _) = audit(&["verify", both[0]]);
    assert_eq!(code, 0, "a head of a writer whose trail was not given is not checked: {out}");
}

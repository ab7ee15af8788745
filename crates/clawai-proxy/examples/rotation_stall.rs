//! Writes 700,000 decisions of about 560 bytes to an audit trail in DIR that rotates at
//! 64 MiB keeping 2 files, each written through as a transport does before it forwards,
//! and prints every write that took over 500 µs: a rotation that frees the oldest file
//! on the writing thread shows up here as a stall of milliseconds.
//! `cargo run --release -p clawai-proxy --example rotation_stall -- DIR` (DIR is emptied).

use std::time::{Duration, Instant};

use clawai_proxy::AuditLog;
use clawai_proxy::audit::{Event, EventKind, stamp};

fn main() {
    let dir = std::path::PathBuf::from(std::env::args().nth(1).expect("usage: rotation_stall DIR"));
    let _ = std::fs::remove_dir_all(&dir);
    let log = AuditLog::open(&dir.join("audit.jsonl"), 64 << 20, 2).expect("the trail opens");
    let reason = "x".repeat(400);
    let mut slow = Vec::new();
    for i in 0..700_000u64 {
        let started = Instant::now();
        log.record_decision(&Event {
            time: stamp().wall,
            session: "s",
            kind: EventKind::Request,
            reason: Some(reason.as_str().into()),
            ..Default::default()
        });
        log.flush();
        let took = started.elapsed();
        if took > Duration::from_micros(500) {
            slow.push((i, took));
        }
    }
    println!("{} writes over 500 µs: {slow:?}", slow.len());
}

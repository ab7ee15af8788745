//! How long one audit-sized append takes on a file system, the cost clawai pays before
//! it forwards a decided message. `append-latency FILE [COUNT] [GAP_US]`
//!
//! Appends COUNT (default 50,000) 500-byte lines to FILE, one every GAP_US (default 60,
//! about the pace of the benchmark's sequential round trips), spinning in between so that
//! the thread is never descheduled, and prints the distribution of the `write` calls.
//! FILE is truncated first; use a path on the file system the trail lives on.

use std::fs::OpenOptions;
use std::io::Write;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let path = args.next().context("usage: append-latency FILE [COUNT] [GAP_US]")?;
    let count: usize = args.next().map(|n| n.parse()).transpose().context("COUNT must be a number")?.unwrap_or(50_000);
    let gap = Duration::from_micros(
        args.next().map(|n| n.parse()).transpose().context("GAP_US must be a number")?.unwrap_or(60),
    );
    anyhow::ensure!(count > 0, "COUNT must be at least 1");
    std::fs::write(&path, b"").with_context(|| format!("cannot write {path}"))?;
    let mut file = OpenOptions::new().append(true).open(&path)?;
    let mut line = vec![b'x'; 499];
    line.push(b'\n');
    let mut micros = Vec::with_capacity(count);
    for _ in 0..count {
        let start = Instant::now();
        file.write_all(&line)?;
        micros.push(start.elapsed().as_secs_f64() * 1e6);
        let until = Instant::now() + gap;
        while Instant::now() < until {
            std::hint::spin_loop();
        }
    }
    micros.sort_by(f64::total_cmp);
    let at = |q: f64| micros[((micros.len() as f64 * q) as usize).min(micros.len() - 1)];
    let over_3us = micros.iter().filter(|&&m| m > 3.0).count() as f64 / micros.len() as f64 * 100.0;
    println!(
        "{count} appends of 500 bytes to {path}: p50 {:.2} µs, p90 {:.2}, p99 {:.2}, p99.9 {:.2}; over 3 µs: {over_3us:.1}%",
        at(0.5),
        at(0.9),
        at(0.99),
        at(0.999)
    );
    std::fs::remove_file(&path).ok();
    Ok(())
}

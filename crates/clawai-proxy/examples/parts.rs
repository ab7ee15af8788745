//! Timing of the decision path's parts (for profiling by hand).
use std::time::Instant;
fn main() {
    let n = 200_000;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(clawai_proxy::audit::now());
    }
    eprintln!("now(): {:.0} ns", t.elapsed().as_nanos() as f64 / n as f64);
    let args = serde_json::json!({"path": "/home/u/projects/app/src/main.rs"});
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(clawai_proxy::redact::redact(&args));
    }
    eprintln!("redact: {:.0} ns", t.elapsed().as_nanos() as f64 / n as f64);
    let p = br#"{"name":"read_file","arguments":{"path":"/home/u/projects/app/src/main.rs"}}"#;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(clawai_protocol::strict::parse(p).unwrap());
    }
    eprintln!("strict params: {:.0} ns", t.elapsed().as_nanos() as f64 / n as f64);
    let line = br#"{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/home/u/projects/app/src/main.rs"}}}"#;
    let t = Instant::now();
    for _ in 0..n {
        std::hint::black_box(clawai_protocol::Envelope::parse(line).unwrap().kind);
    }
    eprintln!("envelope: {:.0} ns", t.elapsed().as_nanos() as f64 / n as f64);
}

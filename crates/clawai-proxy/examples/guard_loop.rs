//! A loop over the decision path, for profilers: `perf record cargo run --release --example guard_loop`.
use clawai_policy::{Format, load_str};
use clawai_proxy::{AuditLog, Guard, PolicyHandle};

fn main() {
    let mut text = String::from(
        "[[rule]]\nid = \"no-credentials\"\naction = \"deny\"\ntool = \"**\"\nany_arg = [\"**/.ssh/**\", \"**/.aws/**\", \"**/.env\"]\n",
    );
    for i in 0..98 {
        text.push_str(&format!(
            "[[rule]]\nid = \"r{i}\"\naction = \"deny\"\ntool = \"svc{i}_*\"\nargs.path = \"/data/{i}/**\"\n"
        ));
    }
    text.push_str(
        "[[rule]]\nid = \"project\"\naction = \"allow\"\ntool = \"read_*\"\nargs.path = \"/home/u/projects/**\"\n",
    );
    let policy = load_str(&text, Format::Toml, "loop").unwrap();
    let audit = match std::env::args().nth(1) {
        Some(path) => AuditLog::open(path.as_ref(), u64::MAX, 0).unwrap(),
        None => AuditLog::disabled(),
    };
    let guard = Guard::new(PolicyHandle::new(policy), audit, Some("loop".into()));
    let call = br#"{"jsonrpc":"2.0","id":12345,"method":"tools/call","params":{"name":"read_file","arguments":{"path":"/home/u/projects/app/src/main.rs"}}}"#;
    let response = br#"{"jsonrpc":"2.0","id":12345,"result":{"content":[{"type":"text","text":"ok"}],"structuredContent":{"path":"/home/u/projects/app/src/main.rs"}}}"#;
    let t = std::time::Instant::now();
    let n = 200_000;
    for _ in 0..n {
        guard.from_client(call);
        guard.from_server(response);
    }
    eprintln!("{:.2} µs per call + response", t.elapsed().as_secs_f64() * 1e6 / n as f64);
}

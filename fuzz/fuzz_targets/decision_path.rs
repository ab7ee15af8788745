//! The decision path: any bytes from either side must give a verdict without panicking,
//! and a message the guard forwards must be one the strict parser accepts.
#![no_main]

use std::sync::OnceLock;

use clawai_policy::{Format, load_str};
use clawai_proxy::{AuditLog, Guard, PolicyHandle, Verdict};
use libfuzzer_sys::fuzz_target;

const POLICY: &str = r#"
[[rule]]
id = "no-ssh"
action = "deny"
tool = "**"
any_arg = "**/.ssh/**"
[[rule]]
action = "prompt"
destructive = true
[[rule]]
action = "deny"
resource = "file:///etc/**"
[[rule]]
action = "allow"
method = "**"
"#;

fn guard() -> &'static Guard {
    static GUARD: OnceLock<Guard> = OnceLock::new();
    GUARD.get_or_init(|| {
        let policy = load_str(POLICY, Format::Toml, "fuzz").unwrap();
        // A real trail (to /dev/null), so that every event is encoded too.
        let audit = AuditLog::open("/dev/null".as_ref(), u64::MAX, 0).unwrap();
        Guard::new(PolicyHandle::new(policy), audit, Some("fuzz".into()))
    })
}

fuzz_target!(|data: &[u8]| {
    let (from_server, line) = match data.split_first() {
        Some((flag, rest)) => (flag & 1 == 1, rest),
        None => return,
    };
    let verdict = if from_server { guard().from_server(line) } else { guard().from_client(line) };
    if let Verdict::Reply(reply) | Verdict::Replace(reply) = &verdict {
        // Syntactically: an id the client wrote (even a number no f64 holds) comes back as
        // written, so a typed parse may refuse what the client itself sent.
        let text = std::str::from_utf8(reply).expect("replies are UTF-8");
        assert!(serde_json::from_str::<&serde_json::value::RawValue>(text.trim_end()).is_ok(), "replies are valid JSON");
    }
    if !from_server && verdict == Verdict::Forward {
        let envelope = clawai_protocol::Envelope::parse(line).expect("only valid messages are forwarded");
        if let Some(m) = envelope.method.as_deref() {
            if ["tools/call", "resources/read", "prompts/get"].contains(&m) {
                // A forwarded decided message has no ambiguity the server could exploit.
                assert!(clawai_protocol::strict::parse(line).is_ok());
            }
        }
    }
});

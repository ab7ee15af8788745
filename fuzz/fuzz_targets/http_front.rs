//! The checks an HTTP front makes before any decision: `Host`/`Origin` (DNS rebinding)
//! and the 2026-07-28 mirrored headers. They must never panic, a loopback endpoint must
//! never accept a host that is not a loopback name, and headers must agree with the body
//! they are checked against.
#![no_main]

use clawai_protocol::mirror::{Mirrored, body_name, decode_header_value, encode_header_value};
use clawai_protocol::origin::HostPolicy;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let mut parts = text.splitn(4, '\n');
    let (host, origin, name, body) = (parts.next(), parts.next(), parts.next(), parts.next());

    if HostPolicy::Loopback.check(host, origin).is_ok() {
        let host = host.unwrap_or_default().trim().to_ascii_lowercase();
        let bare = host.strip_prefix('[').map_or(host.as_str(), |rest| rest.split(']').next().unwrap_or_default());
        let bare = if host.starts_with('[') { bare } else { bare.rsplit_once(':').map_or(bare, |(name, _)| name) };
        let bare = bare.strip_suffix('.').unwrap_or(bare);
        assert!(matches!(bare, "localhost" | "127.0.0.1" | "::1"), "accepted {host:?}");
    }

    assert_eq!(decode_header_value(&encode_header_value(&text)), text);
    if let Some(message) = body.and_then(|b| serde_json::from_str::<serde_json::Value>(b).ok()) {
        let mirrored = Mirrored { protocol_version: Some("2026-07-28"), method: Some("tools/call"), name };
        if mirrored.check(&message).is_ok() && mirrored.is_stateless(&message) {
            assert_eq!(message.get("method").and_then(|m| m.as_str()), Some("tools/call"));
            assert_eq!(body_name(&message).map(str::to_owned), name.map(decode_header_value));
        }
    }
});

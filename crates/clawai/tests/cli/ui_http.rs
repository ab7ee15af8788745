//! `clawai ui`'s web API: only the page, from this machine, with the token.

use crate::ui_support;

use std::time::Duration;

use clawai_approvals::{By, Outcome};
use ui_support::{Ui, http};

#[test]
fn the_api_needs_the_token() {
    let ui = Ui::start();
    let port = ui.port();
    let (status, body) =
        http(port, &format!("GET /api/pending HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"));
    assert_eq!(status, 401, "{body}");
    // The token with its first character changed (to one it is not: a token that begins
    // with `0` must not be "changed" to itself).
    let token = ui.token();
    let other = if token.starts_with('0') { '1' } else { '0' };
    let (status, _) = http(
        port,
        &format!(
            "GET /api/pending?token={other}{} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n",
            &token[1..]
        ),
    );
    assert_eq!(status, 401, "a wrong token");
    let (status, body) = http(
        port,
        &format!(
            "GET /api/pending HTTP/1.1\r\nHost: localhost:{port}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
            ui.token()
        ),
    );
    assert_eq!((status, body.as_str()), (200, "[]"));
}

#[test]
fn a_foreign_origin_is_refused_even_with_the_token() {
    let ui = Ui::start();
    let port = ui.port();
    let token = ui.token();
    let mut pending = ui.ask("k");
    let body = format!("{{\"id\":\"{}\",\"scope\":\"once\"}}", pending.id());
    let post = |origin: &str| {
        http(
            port,
            &format!(
                "POST /api/approve?token={token} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: {origin}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            ),
        )
    };
    let (status, text) = post("http://evil.example");
    assert_eq!(status, 403, "{text}");
    assert!(text.contains("evil.example"), "{text}");
    assert_eq!(pending.wait(Duration::from_millis(200)).unwrap(), None, "a refused request answered the call");
    let (status, text) = post(&format!("http://127.0.0.1:{port}"));
    assert_eq!(status, 200, "{text}");
    let answer = pending.wait(Duration::from_secs(10)).unwrap().unwrap();
    assert_eq!((answer.outcome, answer.by), (Outcome::AllowOnce, By::Ui));
}

#[test]
fn a_foreign_host_is_refused_naming_the_allowed_ones() {
    let ui = Ui::start();
    let port = ui.port();
    for host in [format!("evil.example:{port}"), "127.0.0.1:1".to_owned(), "localhost".to_owned()] {
        let (status, body) =
            http(port, &format!("GET /?token={} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n\r\n", ui.token()));
        assert_eq!(status, 403, "{host}: {body}");
        assert!(body.contains(&format!("127.0.0.1:{port}")), "{body}");
    }
    let (status, body) = http(port, &format!("GET / HTTP/1.1\r\nHost: [::1]:{port}\r\nConnection: close\r\n\r\n"));
    assert_eq!(status, 200);
    assert!(body.contains("<title>"), "{body}");
}

#[test]
fn an_address_beyond_loopback_needs_public() {
    let dir = tempfile::tempdir().unwrap();
    let output = ui_support::command(dir.path()).args(["ui", "--listen", "0.0.0.0:0"]).output().unwrap();
    assert!(!output.status.success());
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(message.contains("--public"), "{message}");
}

#[test]
fn the_chain_state_needs_the_token_and_says_the_trail_has_no_chain_yet() {
    let dir = tempfile::tempdir().unwrap();
    let trail = dir.path().join("trail.jsonl");
    std::fs::write(&trail, "{\"server\":\"fs\",\"decision\":\"allow\"}\n{\"server\":\"fs\",\"decision\":\"deny\"}\n")
        .unwrap();
    let ui = Ui::start_in(dir, &[("CLAWAI_AUDIT", trail.to_str().unwrap())]);
    let port = ui.port();
    let (status, _) =
        http(port, &format!("GET /api/audit/chain HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n"));
    assert_eq!(status, 401, "the chain's state without the token");
    let (status, _) = http(
        port,
        &format!(
            "GET /api/audit/chain?token={} HTTP/1.1\r\nHost: evil.example:{port}\r\nConnection: close\r\n\r\n",
            ui.token()
        ),
    );
    assert_eq!(status, 403, "the chain's state for another Host");
    let (status, body) = http(
        port,
        &format!(
            "GET /api/audit/chain HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {}\r\nConnection: close\r\n\r\n",
            ui.token()
        ),
    );
    assert_eq!(status, 200, "{body}");
    let state: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(state["state"], "no_chain", "{state}");
    assert_eq!(state["checked"], 0, "{state}");
    assert_eq!(state["first_problem"], serde_json::Value::Null, "{state}");
    assert_eq!(state["summary"], "not verified: the trail has no hash chain yet (2 line(s))", "{state}");
}

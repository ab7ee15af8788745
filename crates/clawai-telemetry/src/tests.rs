//! Tests of the export as a whole, against a collector on loopback.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use clawai_proxy::audit::{Decision, Direction, Event, EventKind};

use super::*;

#[test]
fn endpoints_are_the_base_url_with_each_signals_path() {
    for (base, traces) in [
        ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/traces"),
        ("http://127.0.0.1:4318/", "http://127.0.0.1:4318/v1/traces"),
        ("https://otel.example.com/otlp", "https://otel.example.com/otlp/v1/traces"),
        ("https://otel.example.com/otlp/", "https://otel.example.com/otlp/v1/traces"),
    ] {
        let (t, m) = endpoint_urls(base).unwrap();
        assert_eq!(t, traces, "{base}");
        assert_eq!(m, traces.replace("/v1/traces", "/v1/metrics"), "{base}");
    }
}

#[test]
fn a_bad_endpoint_is_refused_with_what_to_give() {
    for (base, why) in [
        ("127.0.0.1:4318", "start with http://"),
        ("localhost:4318", "start with http://"),
        ("ftp://collector:21", "start with http://"),
        ("http://", "not a URL"),
        ("http://collector:4318/?a=b", "query"),
        ("http://exa mple.com", "not a URL"),
    ] {
        let error = endpoint_urls(base).unwrap_err().to_string();
        assert!(error.contains(why), "{base}: {error}");
        assert!(error.contains("http://127.0.0.1:4318"), "says what to give: {error}");
    }
    assert!(Telemetry::start("nope", "proxy").is_err());
}

/// One request as a collector receives it.
struct Received {
    path: String,
    content_type: String,
    body: Vec<u8>,
}

/// A collector on loopback answering 200 to every request, handing each to the test.
fn collector() -> (String, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let (sender, received) = mpsc::channel();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let sender = sender.clone();
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let path = line.split_whitespace().nth(1).unwrap_or_default().to_owned();
                    let (mut length, mut content_type) = (0, String::new());
                    loop {
                        let mut header = String::new();
                        reader.read_line(&mut header).unwrap();
                        let header = header.trim_end();
                        if header.is_empty() {
                            break;
                        }
                        let (name, value) = header.split_once(':').unwrap();
                        match name.to_ascii_lowercase().as_str() {
                            "content-length" => length = value.trim().parse().unwrap(),
                            "content-type" => content_type = value.trim().to_owned(),
                            _ => {}
                        }
                    }
                    let mut body = vec![0; length];
                    reader.read_exact(&mut body).unwrap();
                    let _ = sender.send(Received { path, content_type, body });
                    let mut writer = &stream;
                    writer.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").unwrap();
                }
            });
        }
    });
    (url, received)
}

fn denied_read(time: jiff::Timestamp) -> Event<'static> {
    Event {
        time,
        session: "s-1",
        server: Some("filesystem"),
        direction: Some(Direction::ClientToServer),
        kind: EventKind::Request,
        method: Some("tools/call"),
        tool: Some("read_file"),
        decision: Some(Decision::Deny),
        rule: Some("no-ssh"),
        ..Event::default()
    }
}

#[test]
fn spans_and_metrics_reach_the_collector_as_protobuf_at_exit() {
    let (url, received) = collector();
    let telemetry = Telemetry::start(&url, "proxy").unwrap();
    let observer = telemetry.observer();
    observer.observe(&denied_read(jiff::Timestamp::now()));
    observer.observe(&Event { kind: EventKind::Response, method: Some("tools/call"), ..Event::default() });
    drop(telemetry);
    let mut requests: Vec<Received> = received.try_iter().collect();
    requests.sort_by(|a, b| a.path.cmp(&b.path));
    let paths: Vec<&str> = requests.iter().map(|r| r.path.as_str()).collect();
    assert_eq!(paths, ["/v1/metrics", "/v1/traces"]);
    let contains = |body: &[u8], text: &str| body.windows(text.len()).any(|w| w == text.as_bytes());
    for request in &requests {
        assert_eq!(request.content_type, "application/x-protobuf");
        assert!(contains(&request.body, "clawai"), "the service name");
        assert!(contains(&request.body, "proxy"), "the command");
    }
    let traces = &requests[1].body;
    for text in ["clawai.decide tools/call", "read_file", "no-ssh", "deny", "filesystem", "gen_ai.tool.name"] {
        assert!(contains(traces, text), "the span carries {text}");
    }
    let metrics = &requests[0].body;
    for text in ["clawai.messages", "clawai.decisions", "clawai.decision.duration", "response"] {
        assert!(contains(metrics, text), "the metrics carry {text}");
    }
}

#[test]
fn a_dead_collector_neither_slows_observing_nor_holds_up_the_exit() {
    // A port that was just free: nothing listens there.
    let dead = {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        format!("http://{}", listener.local_addr().unwrap())
    };
    let telemetry = Telemetry::start(&dead, "gateway").unwrap();
    let observer = telemetry.observer();
    let started = Instant::now();
    for _ in 0..10_000 {
        observer.observe(&denied_read(jiff::Timestamp::now()));
    }
    // 10,000 spans overflow the queue (2,048): the rest are dropped, not waited for.
    assert!(started.elapsed() < Duration::from_secs(5), "observing took {:?}", started.elapsed());
    let exiting = Instant::now();
    drop(telemetry);
    assert!(exiting.elapsed() <= SHUTDOWN_LIMIT + Duration::from_millis(500), "exit took {:?}", exiting.elapsed());
}

#[test]
fn a_collector_that_never_answers_holds_up_the_exit_at_most_the_limit() {
    // Accepts connections and reads nothing: every request waits for its time limit.
    let silent = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}", silent.local_addr().unwrap());
    let telemetry = Telemetry::start(&url, "proxy").unwrap();
    telemetry.observer().observe(&denied_read(jiff::Timestamp::now()));
    let exiting = Instant::now();
    drop(telemetry);
    let took = exiting.elapsed();
    assert!(took <= SHUTDOWN_LIMIT + Duration::from_millis(500), "exit took {took:?}");
    drop(silent);
}

//! URLs through the live proxy: a deny on a URL or a host sees every spelling a URL
//! parser reads as that URL; an allow matches only the URL as written.

use crate::support;

use serde_json::json;
use support::Setup;

const POLICY: &str = r#"
[[rule]]
id = "no-evil-url"
action = "deny"
tool = "fetch"
any_arg = "http*://evil.example/**"

[[rule]]
id = "no-evil-host"
action = "deny"
tool = "post"
any_arg_host = ["evil.example", "*.evil.example"]

[[rule]]
id = "api-only"
action = "allow"
tools = ["fetch", "post"]
args.url = "https://api.example/**"
"#;

const EVIL: [&str; 9] = [
    "http://user@evil.example/",
    "http://%75ser@evil.example/",
    "http://evil.example./",
    "http://evil.example:80/",
    "HTTP://EVIL.EXAMPLE/",
    "http://%65vil.example/x",
    "http:evil.example/",
    "https://evil.example:443/",
    "https://ｅｖｉｌ.example/",
];

fn answer(proxy: &mut support::Proxy, id: &str, tool: &str, url: &str) -> String {
    let r = proxy.call(&json!({"jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": {"name": tool, "arguments": {"url": url}}}));
    r["result"]["content"][0]["text"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn every_spelling_of_a_denied_url_is_denied_and_an_allow_takes_only_the_url_as_written() {
    let mut proxy = Setup::new(POLICY).start();
    proxy.initialize();
    for (n, url) in EVIL.iter().enumerate() {
        let text = answer(&mut proxy, &format!("u{n}"), "fetch", url);
        assert!(text.contains("clawai denied") && text.contains("no-evil-url"), "{url}: {text}");
        let text = answer(&mut proxy, &format!("h{n}"), "post", url);
        assert!(text.contains("clawai denied") && text.contains("no-evil-host"), "{url}: {text}");
    }
    let text = answer(&mut proxy, "ok", "fetch", "https://api.example/v1/x");
    assert_eq!(text, "called fetch");
    for (n, url) in
        ["https://api.example@evil.example/", "HTTPS://API.EXAMPLE/v1", "https://api.example:443/v1"].iter().enumerate()
    {
        let text = answer(&mut proxy, &format!("a{n}"), "post", url);
        assert!(text.contains("clawai denied"), "{url} is not the allowed URL as written: {text}");
    }
    let log = proxy.server_log();
    assert!(log.contains("api.example/v1/x"), "the server logs what it receives: {log}");
    assert!(
        !log.to_ascii_lowercase().contains("evil") && !log.contains("%65vil"),
        "no evil URL reached the server: {log}"
    );
}

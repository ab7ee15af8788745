//! Policy files of every format (clawai TOML, AgentShield YAML, mcp-gov JSON) and the
//! argument readings of the conditions they compile to: any bytes must load or be
//! refused without panicking, and a policy that loads must decide any call, URL-like
//! arguments included, without panicking.
#![no_main]

use clawai_policy::{Call, Format, load_str};
use clawai_protocol::Json;
use libfuzzer_sys::fuzz_target;

const CONDITIONS: &str = r#"
[[rule]]
action = "deny"
tool = "**"
any_arg_host = ["*.evil.example", "evil.example"]
[[rule]]
action = "deny"
tool = "**"
any_arg = "http*://evil.example/**"
[[rule]]
action = "prompt"
tool = "**"
args_number.amount = { gt = 100 }
args_regex.memo = '(?i)drop\s+table'
unless_args.path = "**/.env.example"
[[rule]]
action = "allow"
tool = "**"
args_host.url = "*.api.example"
"#;

fuzz_target!(|data: &[u8]| {
    let Some((selector, rest)) = data.split_first() else { return };
    let Ok(text) = std::str::from_utf8(rest) else { return };
    let format = match selector % 3 {
        0 => Format::Toml,
        1 => Format::AgentShield,
        _ => Format::McpGov,
    };
    let loaded = load_str(text, format, "fuzz");
    // The text as every kind of argument, against the policy it loaded as (if any) and
    // against one that uses every argument condition.
    let conditions = load_str(CONDITIONS, Format::Toml, "conditions").expect("the fixed policy loads");
    let params = serde_json::json!({"name": text, "arguments": {"url": text, "amount": text, "memo": text, "path": text, "list": [text]}});
    let params = Json::from(&params);
    let call = Call::from_params("tools/call", Some(&params)).with_server(Some(text));
    conditions.decide(&call);
    if let Ok(policy) = loaded {
        policy.decide(&call);
        policy.explain(&call);
    }
});

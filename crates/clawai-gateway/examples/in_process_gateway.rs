//! A gateway built in Rust whose servers live in the same process: two `clawai-sdk`
//! servers from an `SdkMcpServerRegistry`, behind one endpoint on stdio, with a policy
//! deciding every call as `clawai gateway` does (`math__add`, `text__shout`, …).
//!
//! ```text
//! cargo run -p clawai-gateway --example in_process_gateway
//! ```
//!
//! The policy here allows everything but `text__shout`, which it denies whatever the
//! arguments: the gateway does not even list it. The audit trail is off.

use clawai_gateway::{Gateway, GatewayConfig, GatewayOptions, ServerEntry};
use clawai_proxy::{AuditLog, PolicyHandle};
use clawai_sdk::prelude::*;

/// Add two integers.
#[claw_tool(name = "add")]
async fn add(a: i64, b: i64) -> ToolResult {
    match a.checked_add(b) {
        Some(sum) => ToolResult::text(sum.to_string()),
        None => ToolResult::error("the sum does not fit in 64 bits"),
    }
}

/// Divide `a` by `b`.
#[claw_tool(name = "divide")]
async fn divide(a: f64, b: f64) -> ToolResult {
    if b == 0.0 { ToolResult::error("cannot divide by zero") } else { ToolResult::text((a / b).to_string()) }
}

/// Echo the text back.
#[claw_tool(name = "echo")]
async fn echo(text: String) -> ToolResult {
    ToolResult::text(text)
}

/// Echo the text back in capitals (the policy below denies it).
#[claw_tool(name = "shout")]
async fn shout(text: String) -> ToolResult {
    ToolResult::text(text.to_uppercase())
}

/// The first rule that matches decides; everything not denied is allowed.
const POLICY: &str = r#"
[defaults]
action = "allow"

[[rule]]
id = "no-shouting"
action = "deny"
server = "text"
tool = "shout"
description = "Shouting is not allowed here"
"#;

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let mut math = SdkMcpServerImpl::new("math", "1.0.0");
    math.register_tool(add());
    math.register_tool(divide());
    let mut text = SdkMcpServerImpl::new("text", "1.0.0");
    text.register_tool(echo());
    text.register_tool(shout());
    let mut registry = SdkMcpServerRegistry::new();
    registry.register(math);
    registry.register(text);

    // Every server of the registry, listed (not internal), under its registered name.
    let mut config = GatewayConfig::default();
    for name in registry.names() {
        let server = registry.get(name).expect("a registered name");
        config.servers.insert(name.to_owned(), ServerEntry::in_process(server, false));
    }
    let policy = PolicyHandle::new(clawai_policy::load_str(POLICY, clawai_policy::Format::Toml, "example policy")?);
    let gateway = Gateway::start(&config, policy, AuditLog::disabled(), GatewayOptions::default())?;
    let code = clawai_gateway::stdio::serve(&gateway, 64 << 20).await?;
    gateway.shutdown().await;
    // stdin is read on a blocking thread that cannot be interrupted: exit at once.
    std::process::exit(code)
}

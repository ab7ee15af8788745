use clawai_sdk::prelude::*;

/// A public tool with a mutable parameter and a result alias.
#[claw_tool(name = "shout", description = "Upper-cases text")]
pub async fn shout(mut text: String, times: Option<usize>) -> std::result::Result<ToolResult, ClawError> {
    text.make_ascii_uppercase();
    Ok(ToolResult::text(text.repeat(times.unwrap_or(1))))
}

mod nested {
    use clawai_sdk::prelude::*;

    #[claw_tool]
    pub(crate) async fn nothing() -> ToolResult {
        ToolResult::text("")
    }
}

fn main() {
    let tool = shout();
    assert_eq!(tool.name, "shout");
    assert_eq!(nested::nothing().name, "nothing");
}

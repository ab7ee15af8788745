//! `mcp-echo --tools N` lists N tools; without the flag it answers as it always did.

use std::process::Command;

use clawai_bench::stdio::Session;
use serde_json::Value;

fn answer(args: &[&str], request: &str) -> Value {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mcp-echo"));
    command.args(args);
    let mut session = Session::spawn(command).expect("mcp-echo starts");
    session.initialize();
    session.send(request);
    session.recv_response("1");
    let answer = serde_json::from_slice(&session.line).expect("a JSON line");
    session.finish();
    answer
}

const LIST: &str = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}"#;

#[test]
fn tools_flag_lists_that_many_tools_with_schemas() {
    let listed = answer(&["--tools", "250"], LIST);
    let tools = listed["result"]["tools"].as_array().expect("a list of tools");
    assert_eq!(tools.len(), 250);
    assert_eq!(tools[0]["name"], "tool_0");
    assert_eq!(tools[249]["name"], "tool_249");
    assert_eq!(tools[7]["inputSchema"]["required"][0], "path");
    assert!(listed["result"].get("nextCursor").is_none(), "one page");
}

#[test]
fn without_the_flag_tools_list_gets_the_echo_answer_as_before() {
    let listed = answer(&[], LIST);
    assert_eq!(listed["result"]["content"][0]["text"], "ok");
    assert!(listed["result"].get("tools").is_none());
}

#[test]
fn calls_still_echo_their_arguments_with_the_flag() {
    let called = answer(
        &["--tools", "3"],
        r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"tool_2","arguments":{"path":"/x"}}}"#,
    );
    assert_eq!(called["result"]["structuredContent"]["path"], "/x");
}

//! The real `countersign mcp` over its stdio refuses every frame the strict
//! parser refuses, before the MCP SDK turns it into a loose value, and
//! answers each with its own JSON-RPC error: text that is not JSON is a
//! parse error (id null); a duplicate key, `1e400`, a lone surrogate or
//! 10,000 levels of nesting in a request's arguments are invalid params
//! with the request's id. Nothing is proposed, and the connection goes on.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use serde_json::{Value, json};
use support::Harness;
use support::mcp::McpProcess;

/// A `tools/call` of `propose_demo_echo` with id `id` whose operation
/// arguments are the raw text `arguments`.
fn propose_echo(id: u64, arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"propose_demo_echo","arguments":{{"arguments":{arguments}}}}}}}"#
    )
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The CLI and the API refuse duplicate keys; before the strict transport
/// MCP kept the last value and proposed `message: "two"`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn duplicate_keys_in_tool_arguments_are_refused_not_resolved_to_the_last() {
    let h = Harness::start().await;
    let mut mcp = McpProcess::start(&h).await;
    mcp.send_line(&propose_echo(11, r#"{"message":"one","message":"two"}"#))
        .await;
    assert_eq!(
        mcp.response(11).await,
        error(json!(11), -32602, "duplicate object key \"message\"")
    );
    assert_nothing_proposed(&mut mcp).await;
}

/// `list_proposals` over the connection finds nothing.
async fn assert_nothing_proposed(mcp: &mut McpProcess) {
    mcp.send(json!({"jsonrpc": "2.0", "id": 20, "method": "tools/call",
        "params": {"name": "list_proposals", "arguments": {}}}))
        .await;
    let listed = mcp.response(20).await;
    assert_eq!(
        listed["result"]["structuredContent"]["items"],
        json!([]),
        "{listed}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_non_strict_frame_is_answered_with_its_own_error_and_proposes_nothing() {
    let h = Harness::start().await;
    let mut mcp = McpProcess::start(&h).await;

    let deep = format!("{}{}", "[".repeat(10_000), "]".repeat(10_000));
    let cases = [
        (
            "this is not JSON".to_string(),
            error(
                Value::Null,
                -32700,
                "parse error: JSON syntax error at byte 0",
            ),
        ),
        (
            propose_echo(12, r#"{"message":1e400}"#),
            error(json!(12), -32602, "number is not finite"),
        ),
        (
            propose_echo(13, r#"{"message":"\ud800"}"#),
            error(json!(13), -32602, "lone UTF-16 surrogate escape"),
        ),
        (
            propose_echo(14, &deep),
            error(json!(14), -32602, "nesting deeper than 32"),
        ),
    ];
    for (line, expected) in cases {
        mcp.send_line(&line).await;
        assert_eq!(mcp.next_message().await, expected);
    }

    // Nothing was proposed, and the connection still serves strict frames.
    assert_nothing_proposed(&mut mcp).await;
    mcp.send_line(&propose_echo(21, r#"{"message":"one"}"#))
        .await;
    let proposed = mcp.response(21).await;
    let id = proposed["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{proposed}"));
    let stored = h.ledger().proposal(id).await.unwrap().unwrap();
    assert_eq!(stored.proposal.arguments_json, r#"{"message":"one"}"#);
}

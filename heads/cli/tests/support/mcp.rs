//! The MCP head of a harness's installation, in process, built exactly as
//! `countersign mcp` builds it, and tool calls on it.

use countersign::Context;
use countersign_mcp::McpHead;
use serde_json::Value;

use super::Harness;

/// The MCP head of the harness's installation, with a fresh session.
pub async fn mcp_head(h: &Harness) -> McpHead {
    let ctx = Context::load(Context::home(Some(h.home().into())).unwrap()).unwrap();
    let mut head = ctx.head().await.unwrap();
    let gate = ctx.gate(&mut head).await.unwrap();
    McpHead::new(head, gate, ctx.principal.clone()).unwrap()
}

/// Call `tool` with `args`; the result as MCP JSON.
pub async fn call(server: &McpHead, tool: &str, args: Value) -> Value {
    let result = server
        .call(tool, args.as_object().unwrap().clone())
        .await
        .unwrap();
    serde_json::to_value(&result).unwrap()
}

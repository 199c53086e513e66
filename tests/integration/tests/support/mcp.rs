//! The MCP head of a harness's installation, in process, built exactly as
//! `countersign mcp` builds it, and tool calls on it; or the real
//! `countersign mcp` process, driven over its stdio.

use std::process::Stdio;
use std::time::Duration;

use countersign::Context;
use countersign_mcp::McpHead;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::ChildStdout;

use super::Harness;

/// The MCP head of the harness's installation, with a fresh session.
pub async fn mcp_head(h: &Harness) -> McpHead {
    let ctx = Context::load(Context::home(Some(h.home().into())).unwrap()).unwrap();
    let mut head = ctx.head().await.unwrap();
    let gate = ctx.gate(&mut head).await.unwrap();
    McpHead::new(head, gate).unwrap()
}

/// Call `tool` with `args`; the result as MCP JSON.
pub async fn call(server: &McpHead, tool: &str, args: Value) -> Value {
    let result = server
        .call(tool, args.as_object().unwrap().clone())
        .await
        .unwrap();
    serde_json::to_value(&result).unwrap()
}

/// Propose through `tool` with `arguments`: the new proposal's id and
/// the preview the head returned.
pub async fn propose(server: &McpHead, tool: &str, arguments: Value) -> (String, String) {
    let proposed = call(server, tool, json!({ "arguments": arguments })).await;
    let content = &proposed["structuredContent"];
    let id = content["id"].as_str().expect("a proposal id");
    let preview = content["preview"].as_str().expect("a preview");
    (id.to_owned(), preview.to_owned())
}

/// A real `countersign mcp` process of the harness's installation, driven
/// over its stdio with newline-delimited JSON-RPC, as an MCP client drives it.
pub struct McpProcess {
    pub child: tokio::process::Child,
    pub stdin: Option<tokio::process::ChildStdin>,
    pub lines: Lines<BufReader<ChildStdout>>,
}

impl McpProcess {
    /// Start `countersign mcp` and complete the MCP handshake.
    pub async fn start(h: &Harness) -> Self {
        let mut child =
            tokio::process::Command::new(countersign_integration_tests::bin("countersign"))
                .args(["--home", &h.home(), "mcp"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .stderr(Stdio::null())
                .kill_on_drop(true)
                .spawn()
                .unwrap();
        let stdin = child.stdin.take();
        let lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut mcp = Self {
            child,
            stdin,
            lines,
        };
        mcp.send(
            json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "countersign-tests", "version": "0"}}}),
        )
        .await;
        assert!(mcp.response(0).await.get("result").is_some());
        mcp.send(json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await;
        mcp
    }

    /// Send one raw line (a newline is added).
    pub async fn send_line(&mut self, line: &str) {
        let stdin = self.stdin.as_mut().expect("stdin is open");
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
        stdin.flush().await.unwrap();
    }

    /// Send one JSON-RPC message.
    pub async fn send(&mut self, message: Value) {
        self.send_line(&message.to_string()).await;
    }

    /// The next message the server writes, within 10 s.
    pub async fn next_message(&mut self) -> Value {
        let line = tokio::time::timeout(Duration::from_secs(10), self.lines.next_line())
            .await
            .expect("the server answers within 10 s")
            .unwrap()
            .expect("a message");
        serde_json::from_str(&line).unwrap()
    }

    /// Read until the response to request `id`.
    pub async fn response(&mut self, id: u64) -> Value {
        loop {
            let message = self.next_message().await;
            if message["id"] == id {
                return message;
            }
        }
    }

    /// Close stdin: the client goes away.
    pub fn hang_up(&mut self) {
        drop(self.stdin.take());
    }
}

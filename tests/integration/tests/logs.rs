//! The log of a head: `COUNTERSIGN_LOG` selects it (the same variable as
//! the signer's), a redirected log carries no colour codes, and a large
//! argument at TRACE (which the MCP SDK logs whole) yields a bounded log.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::process::Stdio;
use std::time::Duration;

use countersign_identity::log::MAX_LOG_LINE_BYTES;
use serde_json::{Value, json};
use support::Harness;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::Command;

const ARGUMENT_BYTES: usize = 2 * 1024 * 1024;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_argument_at_trace_yields_a_bounded_log_without_colour() {
    let h = Harness::start().await;
    let log_path = h.scratch.path().join("mcp.log");
    let mut child = Command::new(countersign_integration_tests::bin("countersign"))
        .args(["--home", &h.home(), "mcp"])
        .env("COUNTERSIGN_LOG", "trace")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log_path).unwrap())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let big = "x".repeat(ARGUMENT_BYTES);
    for message in [
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "log-test", "version": "0"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "propose_demo_echo", "arguments": {"arguments": {"message": big}}}}),
    ] {
        stdin
            .write_all(format!("{message}\n").as_bytes())
            .await
            .unwrap();
    }
    stdin.flush().await.unwrap();
    tokio::time::timeout(Duration::from_secs(60), async {
        loop {
            let line = lines.next_line().await.unwrap().expect("a response");
            if serde_json::from_str::<Value>(&line).unwrap()["id"] == 2 {
                break;
            }
        }
    })
    .await
    .expect("an answer to the large call");
    drop(stdin);
    tokio::time::timeout(Duration::from_secs(30), child.wait())
        .await
        .unwrap()
        .unwrap();

    let log = std::fs::read(&log_path).unwrap();
    let text = String::from_utf8_lossy(&log);
    assert!(
        text.contains("TRACE"),
        "COUNTERSIGN_LOG=trace was not applied"
    );
    assert!(!log.contains(&0x1b), "colour codes in a redirected log");
    // The call ran in a span named by the tool, with nothing of its arguments.
    let span = "tool_call{otel.name=propose_demo_echo tool=propose_demo_echo}";
    assert!(text.contains(span), "no tool span in the log");
    assert!(
        text.lines().all(|l| l.len() <= MAX_LOG_LINE_BYTES + 64),
        "a log line over the cap"
    );
    assert!(
        log.len() < ARGUMENT_BYTES / 4,
        "{} bytes of log for a {ARGUMENT_BYTES}-byte argument",
        log.len()
    );
}

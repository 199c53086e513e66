//! `countersign mcp` stops on SIGTERM through the one shutdown module:
//! with its client still connected, it exits successfully instead of being
//! killed by the signal's default disposition.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::time::Duration;

use support::Harness;
use support::mcp::McpProcess;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_with_a_connected_client_exits_cleanly_on_sigterm() {
    let h = Harness::start().await;
    let mut mcp = McpProcess::start(&h).await;
    let pid = rustix::process::Pid::from_raw(mcp.child.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), mcp.child.wait())
        .await
        .expect("countersign mcp exits after SIGTERM")
        .unwrap();
    assert!(status.success(), "{status}");
}

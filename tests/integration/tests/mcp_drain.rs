//! The MCP client goes away while an execution runs: `countersign mcp`, a
//! real process driven over its stdio with newline-delimited JSON-RPC,
//! stays until the running `command` finishes and records its completion,
//! instead of exiting after the MCP SDK's 5 s drain and killing it (which
//! left the action `uncertain`). Both ledger backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use countersign_ledger::DispositionStatus;
use countersign_registry::Registry;
use serde_json::json;
use support::mcp::McpProcess;
use support::{Backend, Harness, command_operation};

/// How long the slow command runs: longer than the MCP SDK's 5 s drain.
const RUNS_FOR_SECS: u64 = 7;

/// The default registry plus `note.slow`, a `command` that marks its start,
/// sleeps, and marks its end in `dir`.
fn registry(dir: &Path) -> String {
    let script = format!(
        "touch {dir}/started; sleep {RUNS_FOR_SECS}; touch {dir}/finished",
        dir = dir.display()
    );
    let slow = command_operation("note.slow", false, &script, 60);
    format!("{}{slow}", Registry::default_toml())
}

async fn a_client_that_goes_away_does_not_cut_an_execution_off(backend: Backend) {
    let marks = tempfile::tempdir().unwrap();
    let h = Harness::start_on(backend, &registry(marks.path())).await;
    let mut mcp = McpProcess::start(&h).await;
    mcp.send(
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "propose_note_slow", "arguments": {"arguments": {"text": "hi"}}}}),
    )
    .await;
    let proposed = mcp.response(2).await;
    let id = proposed["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{proposed}"))
        .to_string();
    h.approve_for_mcp(&id).await;
    mcp.send(
        json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "execute_approved", "arguments": {"proposal_id": id}}}),
    )
    .await;

    // The command is running: the client goes away.
    let started = Instant::now();
    while !marks.path().join("started").exists() {
        assert!(started.elapsed() < Duration::from_secs(20), "never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    mcp.hang_up();

    let status = tokio::time::timeout(Duration::from_secs(60), mcp.child.wait())
        .await
        .expect("the MCP head exits once the execution finished")
        .unwrap();
    assert!(status.success(), "{status:?}");
    assert!(
        marks.path().join("finished").exists(),
        "the command was cut off"
    );
    let disposition = h.ledger().disposition(&id).await.unwrap().unwrap();
    assert_eq!(disposition.status, DispositionStatus::Applied);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_does_not_cut_an_execution_off_on_sqlite() {
    a_client_that_goes_away_does_not_cut_an_execution_off(Backend::Sqlite).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_goes_away_does_not_cut_an_execution_off_on_postgres() {
    a_client_that_goes_away_does_not_cut_an_execution_off(Backend::Postgres).await;
}

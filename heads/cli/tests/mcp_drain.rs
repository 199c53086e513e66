//! The MCP client goes away while an execution runs: `countersign mcp`, a
//! real process driven over its stdio with newline-delimited JSON-RPC,
//! stays until the running `command` finishes and records its completion,
//! instead of exiting after the MCP SDK's 5 s drain and killing it (which
//! left the action `uncertain`). Both ledger backends.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod support;

use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use countersign_ledger::DispositionStatus;
use countersign_registry::Registry;
use serde_json::{Value, json};
use support::{Backend, Harness, command_operation};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{ChildStdout, Command};

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

/// Send one JSON-RPC message.
async fn send(stdin: &mut tokio::process::ChildStdin, message: Value) {
    let mut line = message.to_string();
    line.push('\n');
    stdin.write_all(line.as_bytes()).await.unwrap();
    stdin.flush().await.unwrap();
}

/// Read until the response to request `id`.
async fn response(lines: &mut Lines<BufReader<ChildStdout>>, id: u64) -> Value {
    loop {
        let line = lines.next_line().await.unwrap().expect("a response");
        let message: Value = serde_json::from_str(&line).unwrap();
        if message["id"] == id {
            return message;
        }
    }
}

async fn a_client_that_goes_away_does_not_cut_an_execution_off(backend: Backend) {
    let marks = tempfile::tempdir().unwrap();
    let h = Harness::start_on(backend, &registry(marks.path())).await;
    let mut child = Command::new(env!("CARGO_BIN_EXE_countersign"))
        .args(["--home", &h.home(), "mcp"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();

    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "drain-test", "version": "0"}}}),
    )
    .await;
    assert!(response(&mut lines, 1).await.get("result").is_some());
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    )
    .await;
    send(
        &mut stdin,
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "propose_note_slow", "arguments": {"arguments": {"text": "hi"}}}}),
    )
    .await;
    let proposed = response(&mut lines, 2).await;
    let id = proposed["result"]["structuredContent"]["id"]
        .as_str()
        .unwrap_or_else(|| panic!("{proposed}"))
        .to_string();
    h.approve_for_mcp(&id).await;
    send(
        &mut stdin,
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
    drop(stdin);
    drop(lines);

    let status = tokio::time::timeout(Duration::from_secs(60), child.wait())
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

//! `countersign api serve` as a real process: it says it listens on
//! loopback, serves a proposal and an execution with the proof in the body,
//! keeps every secret out of its TRACE log on stderr, and stops cleanly on
//! SIGTERM.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use std::process::Stdio;
use std::time::Duration;

use api_support::{http, token_secret};
use support::{CREATE_NIGHTLY, Harness};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_serve_listens_on_loopback_serves_and_stops_on_sigterm() {
    let h = Harness::start().await;
    let token = h
        .cli(&[
            "--json", "api", "token", "create", "--ttl", "10m", "--stdout",
        ])
        .await
        .json()["token"]
        .as_str()
        .unwrap()
        .to_string();
    let mut child = tokio::process::Command::new(countersign_integration_tests::bin("countersign"))
        .args([
            "--home",
            &h.home(),
            "api",
            "serve",
            "--listen",
            "127.0.0.1:0",
        ])
        .env("COUNTERSIGN_LOG", "trace")
        .env_remove("COUNTERSIGN_SESSION")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let addr = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).await.unwrap() > 0,
                "exited: {seen}"
            );
            seen.push_str(&line);
            if let Some(rest) = line.split("listening on http://").nth(1) {
                assert!(line.contains("(loopback only)"), "{line}");
                return rest.split_whitespace().next().unwrap().parse().unwrap();
            }
        }
    })
    .await
    .expect("the API said where it listens");

    let auth = format!("Bearer {token}");
    let json = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let body = format!(r#"{{"arguments":{CREATE_NIGHTLY}}}"#);
    let proposed = http(
        addr,
        "POST",
        "/v1/operations/schedule.create/proposals",
        &json,
        body.as_bytes(),
    )
    .await;
    assert_eq!(proposed.status, 200, "{}", proposed.body);
    let id = proposed.json()["id"].as_str().unwrap().to_string();
    let proof = std::fs::read_to_string(h.approve_to_file(&id).await).unwrap();
    let body = serde_json::json!({ "proof": proof.trim() }).to_string();
    let executed = http(
        addr,
        "POST",
        &format!("/v1/proposals/{id}/execute"),
        &json,
        body.as_bytes(),
    )
    .await;
    assert_eq!(executed.json()["applied"], true, "{}", executed.body);

    let pid = rustix::process::Pid::from_raw(child.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .unwrap()
        .unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).await.unwrap();
    seen.push_str(&rest);
    assert!(status.success(), "{status}: {seen}");
    assert!(seen.contains("API stopped"), "{seen}");
    assert!(!seen.contains(proof.trim()), "a proof reached stderr");
    assert!(!seen.contains('\u{1b}'), "colour codes in a redirected log");
    assert!(
        !seen.contains(token_secret(&token)),
        "a credential reached stderr"
    );
}

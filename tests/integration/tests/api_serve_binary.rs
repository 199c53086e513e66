//! `countersign api serve` as a real process: it says it listens on
//! loopback, serves a proposal and an execution with the proof in the body,
//! keeps every secret out of its TRACE log on stderr, and stops cleanly on
//! SIGTERM, letting an execution in flight finish first.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use std::time::Duration;

use api_support::{api_serve, api_token, http, token_secret};
use countersign_ledger::DispositionStatus;
use countersign_registry::Registry;
use support::{CREATE_NIGHTLY, Harness, command_operation};
use tokio::io::AsyncReadExt;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_serve_listens_on_loopback_serves_and_stops_on_sigterm() {
    let h = Harness::start().await;
    let token = api_token(&h).await;
    let (mut child, mut stderr, mut seen, addr) = api_serve(&h).await;

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

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_execution_in_flight_finishes_before_api_serve_exits_on_sigterm() {
    let slow = command_operation("note.slow", false, "sleep 2", 30);
    let h = Harness::start_with_registry(&format!("{}{slow}", Registry::default_toml())).await;
    let token = api_token(&h).await;
    let (mut child, mut stderr, mut seen, addr) = api_serve(&h).await;
    let auth = format!("Bearer {token}");
    let json = [
        ("Authorization", auth.as_str()),
        ("Content-Type", "application/json"),
    ];
    let proposed = http(
        addr,
        "POST",
        "/v1/operations/note.slow/proposals",
        &json,
        br#"{"arguments":{"text":"hi"}}"#,
    )
    .await;
    assert_eq!(proposed.status, 200, "{}", proposed.body);
    let id = proposed.json()["id"].as_str().unwrap().to_string();
    let proof = std::fs::read_to_string(h.approve_to_file(&id).await).unwrap();
    let auth = auth.clone();
    let body = serde_json::json!({ "proof": proof.trim() }).to_string();
    let target = format!("/v1/proposals/{id}/execute");
    let request = tokio::spawn(async move {
        let json = [
            ("Authorization", auth.as_str()),
            ("Content-Type", "application/json"),
        ];
        http(addr, "POST", &target, &json, body.as_bytes()).await
    });
    // SIGTERM once the command runs (the sleep takes ~2 s).
    tokio::time::sleep(Duration::from_millis(700)).await;
    let pid = rustix::process::Pid::from_raw(child.id().unwrap() as i32).unwrap();
    rustix::process::kill_process(pid, rustix::process::Signal::TERM).unwrap();
    let executed = tokio::time::timeout(Duration::from_secs(20), request)
        .await
        .expect("the response arrives")
        .unwrap();
    assert_eq!(executed.json()["applied"], true, "{}", executed.body);
    let status = tokio::time::timeout(Duration::from_secs(20), child.wait())
        .await
        .unwrap()
        .unwrap();
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).await.unwrap();
    seen.push_str(&rest);
    assert!(status.success(), "{status}: {seen}");
    let disposition = h
        .ledger()
        .disposition(&id)
        .await
        .unwrap()
        .expect("recorded");
    assert_eq!(
        disposition.status,
        DispositionStatus::Applied,
        "{disposition:?}"
    );
}

//! `/metrics` on the API head (`[metrics] api`), as a real process: off
//! unless configured, loopback only, and an execution through the API
//! moves the gate's `consumes_total{outcome="applied"}`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use std::io::Write as _;
use std::net::SocketAddr;
use std::process::Stdio;
use std::time::Duration;

use api_support::{api_token, http};
use support::{CREATE_NIGHTLY, Harness};
use tokio::io::{AsyncBufReadExt, AsyncReadExt as _, AsyncWriteExt as _, BufReader};

/// Appends `text` to the installation's `config.toml` (the running test
/// signer read it already; the heads read it when they start).
fn configure(h: &Harness, text: &str) {
    let path = std::path::Path::new(&h.home()).join("config.toml");
    let mut file = std::fs::OpenOptions::new().append(true).open(path).unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// One plain HTTP/1.1 GET, answered in full.
async fn get(addr: SocketAddr, path: &str) -> String {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

/// `countersign ARGS` as a process, read until its stderr has a line
/// containing `ready`: the child, that line, the metrics address if it
/// announced one before, and its stderr so far.
async fn spawn_head(
    h: &Harness,
    args: &[&str],
    ready: &str,
) -> (tokio::process::Child, String, Option<SocketAddr>, String) {
    let mut child = tokio::process::Command::new(countersign_integration_tests::bin("countersign"))
        .args(["--home", &h.home()])
        .args(args)
        .env_remove("COUNTERSIGN_SESSION")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut metrics = None;
    let ready_line = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let mut line = String::new();
            assert!(
                stderr.read_line(&mut line).await.unwrap() > 0,
                "exited: {seen}"
            );
            seen.push_str(&line);
            if let Some(rest) = line.split("metrics on http://").nth(1) {
                let addr = rest.split('/').next().unwrap();
                metrics = Some(addr.parse().unwrap());
            }
            if line.contains(ready) {
                return line;
            }
        }
    })
    .await
    .expect("the head said where it listens");
    (child, ready_line, metrics, seen)
}

/// `countersign api serve` on an ephemeral port: the child, the API's
/// address, the metrics address if it announced one, and its stderr so far.
async fn api_serve(
    h: &Harness,
) -> (
    tokio::process::Child,
    SocketAddr,
    Option<SocketAddr>,
    String,
) {
    let (child, line, metrics, seen) = spawn_head(
        h,
        &["api", "serve", "--listen", "127.0.0.1:0"],
        "listening on http://",
    )
    .await;
    let rest = line.split("listening on http://").nth(1).unwrap();
    let addr = rest.split_whitespace().next().unwrap().parse().unwrap();
    (child, addr, metrics, seen)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_metrics_count_an_applied_execution() {
    let h = Harness::start().await;
    configure(&h, "\n[metrics]\napi = \"127.0.0.1:0\"\n");
    let token = api_token(&h).await;
    let (_child, addr, metrics, seen) = api_serve(&h).await;
    let metrics = metrics.unwrap_or_else(|| panic!("no metrics address in: {seen}"));
    assert!(metrics.ip().is_loopback());

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
    let target = format!("/v1/proposals/{id}/execute");
    let executed = http(addr, "POST", &target, &json, body.as_bytes()).await;
    assert_eq!(executed.json()["applied"], true, "{}", executed.body);
    // The same proof again: a replay, nothing runs twice.
    let replayed = http(addr, "POST", &target, &json, body.as_bytes()).await;
    assert_eq!(replayed.json()["applied"], false, "{}", replayed.body);

    let response = get(metrics, "/metrics").await;
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    for line in [
        "countersign_consumes_total{outcome=\"applied\"} 1",
        "countersign_consumes_total{outcome=\"replay\"} 1",
        "countersign_consume_seconds_count 2",
        // The replay was answered from the proposal, before the ledger's
        // queue: one commit, of one consumption.
        "countersign_consume_batch_size_count 1",
        "countersign_consume_batch_size_sum 1.0",
    ] {
        assert!(
            response.lines().any(|l| l == line),
            "no {line:?} in:\n{response}"
        );
    }
    assert!(!response.contains(proof.trim()), "a proof reached /metrics");
    assert!(!response.contains(&id), "a proposal id reached /metrics");
    assert!(
        get(metrics, "/openapi.json")
            .await
            .starts_with("HTTP/1.1 404 Not Found\r\n")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn api_serves_no_metrics_unless_configured() {
    let h = Harness::start().await;
    let (_child, _addr, metrics, seen) = api_serve(&h).await;
    assert_eq!(metrics, None, "{seen}");
    assert!(!seen.contains("metrics"), "{seen}");
}

#[tokio::test]
async fn api_serve_refuses_a_metrics_address_that_is_not_loopback() {
    let h = Harness::start().await;
    configure(&h, "\n[metrics]\napi = \"0.0.0.0:9465\"\n");
    let run = h.cli(&["api", "serve", "--listen", "127.0.0.1:0"]).await;
    let refusal = run.result.unwrap_err().to_string();
    assert!(
        refusal.ends_with("metrics.api 0.0.0.0:9465 is not a loopback address: /metrics has no authentication, so it listens on loopback only (127.0.0.1 or [::1])"),
        "{refusal}"
    );
}

/// The MCP head over HTTP and the console serve their gate's metrics too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_over_http_and_the_console_serve_metrics_when_configured() {
    let h = Harness::start().await;
    configure(
        &h,
        "\n[metrics]\nmcp = \"127.0.0.1:0\"\nconsole = \"127.0.0.1:0\"\n",
    );
    for (args, ready) in [
        (
            &["mcp", "--listen", "127.0.0.1:0"][..],
            "serving MCP on http://",
        ),
        (
            &["console", "--listen", "127.0.0.1:0"][..],
            "console listening on",
        ),
    ] {
        let (_child, _line, metrics, seen) = spawn_head(&h, args, ready).await;
        let metrics = metrics.unwrap_or_else(|| panic!("{args:?}: no metrics address in: {seen}"));
        let response = get(metrics, "/metrics").await;
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        for metric in [
            "countersign_consume_seconds",
            "countersign_consume_batch_size",
        ] {
            assert!(
                response.contains(&format!("\n# TYPE {metric} histogram\n")),
                "{args:?}: {response}"
            );
        }
    }
}

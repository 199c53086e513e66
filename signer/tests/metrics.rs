//! `/metrics` on the signer: off unless `[metrics] signer` is configured,
//! loopback only, and the counters move with proposals, decisions,
//! issuances, refusals and the approvals' group commits.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_proto::v1::{Delivery, ProposeRequest};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;

use support::{ARGS, SESSION, approve, approver, deny, head, http_get as get, propose};

async fn start_with_metrics(metrics: &str) -> Result<TestSigner, String> {
    TestSigner::start_configured(
        Registry::default_toml(),
        None,
        &format!("\n[metrics]\nsigner = \"{metrics}\"\n"),
    )
    .await
    .map_err(|e| e.to_string())
}

fn assert_line(metrics: &str, line: &str) {
    assert!(
        metrics.lines().any(|l| l == line),
        "no line {line:?} in:\n{metrics}"
    );
}

#[tokio::test]
async fn metrics_count_proposals_decisions_issuances_and_refusals() {
    let signer = start_with_metrics("127.0.0.1:0").await.unwrap();
    let addr = signer.metrics_addr().unwrap();
    assert!(addr.ip().is_loopback());
    let mut head = head(&signer).await;
    let mut approver = approver(&signer).await;

    // Two proposals: one approved for a handoff (it waits), one denied.
    let first = propose(&mut head).await;
    let second = propose(&mut head).await;
    approver
        .decide(approve(&first.id, Delivery::Handoff))
        .await
        .unwrap();
    approver.decide(deny(&second.id, "no")).await.unwrap();
    // Refusals: an unknown operation, and deciding the denied one again.
    head.propose(ProposeRequest {
        operation: "schedule.explode".into(),
        arguments_json: ARGS.into(),
        session: SESSION.into(),
        note: String::new(),
        idempotency_key: String::new(),
        head: "cli".into(),
    })
    .await
    .unwrap_err();
    approver
        .decide(approve(&second.id, Delivery::Direct))
        .await
        .unwrap_err();

    let response = get(addr, "/metrics").await;
    assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
    assert!(response.contains(
        "\r\ncontent-type: application/openmetrics-text; version=1.0.0; charset=utf-8\r\n"
    ));
    assert_line(
        &response,
        "countersign_proposals_total{operation=\"schedule.create\"} 2",
    );
    assert_line(
        &response,
        "countersign_decisions_total{decision=\"approve\",delivery=\"handoff\"} 1",
    );
    assert_line(
        &response,
        "countersign_decisions_total{decision=\"deny\",delivery=\"none\"} 1",
    );
    assert_line(
        &response,
        "countersign_issuances_total{source=\"approval\"} 1",
    );
    assert_line(
        &response,
        "countersign_signer_refusals_total{reason=\"unknown_operation\"} 1",
    );
    assert_line(
        &response,
        "countersign_signer_refusals_total{reason=\"not_pending\"} 1",
    );
    assert_line(&response, "countersign_issuance_seconds_count 1");
    // One approval committed, alone; the refused one committed nothing.
    assert_line(&response, "countersign_issuance_batch_size_count 1");
    assert_line(&response, "countersign_issuance_batch_size_sum 1.0");
    assert_line(&response, "countersign_waiting_handoffs 1");
    // What a scrape must never carry: arguments, the principal, the proof.
    assert!(!response.contains("nightly"), "{response}");
    assert!(!response.contains(signer.principal()), "{response}");
    assert!(!response.contains("v4.public."), "{response}");
    assert!(!response.contains(SESSION), "{response}");
}

#[tokio::test]
async fn metrics_answer_any_other_path_with_not_found() {
    let signer = start_with_metrics("127.0.0.1:0").await.unwrap();
    let addr = signer.metrics_addr().unwrap();
    for path in ["/", "/metrics/x", "/grpc.health.v1.Health/Check", "/debug"] {
        let response = get(addr, path).await;
        assert!(
            response.starts_with("HTTP/1.1 404 Not Found\r\n"),
            "{path}: {response}"
        );
    }
}

#[tokio::test]
async fn refuses_a_metrics_address_that_is_not_loopback() {
    let refused = start_with_metrics("0.0.0.0:9464").await.unwrap_err();
    assert!(
        refused.ends_with(
            "metrics.signer 0.0.0.0:9464 is not a loopback address: /metrics has no authentication, so it listens on loopback only (127.0.0.1 or [::1])"
        ),
        "{refused}"
    );
}

#[tokio::test]
async fn serves_no_metrics_unless_configured() {
    let signer = TestSigner::start().await.unwrap();
    assert_eq!(signer.metrics_addr(), None);
    // Counting still happens; nothing listens for it.
    let view = propose(&mut head(&signer).await).await;
    assert!(view.id.starts_with("prop_"));
}

//! Proofs and API credentials never reach a log line through the HTTP API.
//! Every tracing event at TRACE level, from the signer, the gate and the
//! API, is captured raw (without the redacting log sink) across requests that
//! carry a proof in the body, a proof in a query string and in a header
//! (both refused), a credential in the Authorization header and one in a
//! URL (refused), a replay and a proof outside the token alphabet; neither secret appears.
//! The redacting log sink `countersign` installs is tested on the same text.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod api_support;
mod support;

use api_support::{Api, token_secret};
use support::Capture;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_proof_or_credential_appears_in_trace_logs() {
    let capture = Capture::trace();

    let api = Api::start().await;
    let token = api.token().await;
    let (id, proof) = api.approved(&token, "nightly").await;
    let target = format!("/v1/proposals/{id}/execute");
    let auth = format!("Bearer {token}");

    assert_eq!(
        api.post(&token, &format!("{target}?proof={proof}"), "{}")
            .await
            .status,
        400
    );
    let in_header = api
        .raw(
            "POST",
            &target,
            &[("Authorization", &auth), ("X-Approval", &proof)],
            b"",
        )
        .await;
    assert_eq!(in_header.status, 400);
    assert_eq!(
        api.raw("GET", &format!("/v1/operations?token={token}"), &[], b"")
            .await
            .status,
        400
    );
    assert_eq!(
        api.execute(&token, &id, &proof).await.json()["applied"],
        true
    );
    assert_eq!(
        api.execute(&token, &id, &proof).await.json()["reason"],
        "already_used"
    );
    let mut broken = proof.clone();
    broken.push('!');
    let broken_reply = api.execute(&token, &id, &broken).await;
    assert_eq!(broken_reply.status, 400);
    assert!(!broken_reply.body.contains(&proof));
    let wrong_type = api
        .post(&token, &target, &format!(r#"{{"proof":["{proof}"]}}"#))
        .await;
    assert_eq!(wrong_type.status, 400);
    assert!(!wrong_type.body.contains(&proof));
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;

    let logs = capture.text();
    assert!(logs.contains("request"), "the capture saw no request lines");
    assert!(
        logs.contains("/v1/proposals/{proposal_id}/execute"),
        "routes are logged by template"
    );
    // Each request runs in a span named by its method and route template,
    // never its path's values.
    let spans = capture.spans("request");
    assert!(
        spans
            .iter()
            .any(|s| s.contains("method=POST route=/v1/proposals/{proposal_id}/execute")),
        "{spans:?}"
    );
    assert!(spans.iter().all(|s| !s.contains(&id)), "{spans:?}");
    let secret_part = token_secret(&token);
    assert!(!logs.contains(&proof), "a proof reached the logs");
    assert!(
        !logs.contains(&proof[10..60]),
        "part of a proof reached the logs"
    );
    assert!(!logs.contains(secret_part), "a credential reached the logs");

    // The log sink `countersign` writes through would have removed them anyway.
    let line = format!("GET /x?proof={proof} Authorization: Bearer {token}\n");
    let redacted = countersign::logging::redact_secrets(&line);
    assert!(redacted.contains("[redacted proof]"), "{redacted}");
    assert!(
        !redacted.contains(&proof) && !redacted.contains(secret_part),
        "{redacted}"
    );
}

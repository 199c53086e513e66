//! The bounds of `ReissueForReconcile`, so that a head cannot keep a
//! webhook approval alive past the lifetime cap: never on SQLite (its rows
//! prove nothing the signer did), only within a window after the original
//! expiry, at most three times per proposal. Each refusal has its own
//! reason code, returns no proof and records nothing; every call is
//! counted in `countersign_reissues` by result.

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

use super::*;

/// `GET /metrics` from the signer's metrics listener.
async fn scrape(signer: &TestSigner) -> String {
    let addr = signer.metrics_addr().unwrap();
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let request = format!("GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).await.unwrap();
    response
}

#[tokio::test]
async fn refuses_on_sqlite_where_the_ledger_rows_prove_nothing() {
    let signer = TestSigner::start_with_registry(&registry()).await.unwrap();
    let (id, _, _) = uncertain(&signer, "hook.safe", Duration::ZERO).await;
    let message = assert_refused(
        &signer,
        &mut head(&signer).await,
        &id,
        Code::FailedPrecondition,
        "reissue_unavailable_on_sqlite",
    )
    .await;
    assert_eq!(
        message,
        "the ledger is SQLite: its owner can write any row, so an issuance row proves nothing and no proof is re-issued from it; a person resolves the execution (PostgreSQL, where heads cannot write issuances, allows re-issue)"
    );
}

#[tokio::test]
async fn refuses_a_fourth_reissue_of_one_proposal_and_counts_every_call() {
    let (signer, _db) = start_configured("[metrics]\nsigner = \"127.0.0.1:0\"\n").await;
    let mut head = head(&signer).await;
    let (id, issued, _) = uncertain(&signer, "hook.safe", Duration::ZERO).await;
    for _ in 0..3 {
        let response = head
            .reissue_for_reconcile(request(&id))
            .await
            .unwrap()
            .into_inner();
        let again = verified(&signer, &id, &response.proof).await;
        assert_eq!(again.claims().jti, issued.jti);
    }
    assert_eq!(reissued_events(&signer).await, 3);
    let status = head.reissue_for_reconcile(request(&id)).await.unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert_eq!(reason_of(&status), "reissue_limit_reached");
    assert_eq!(
        status.message(),
        format!(
            "the proof of proposal {id} was re-issued 3 times already, the most allowed; a person resolves it"
        )
    );
    // No proof travelled with the refusal, and nothing was recorded.
    assert!(!format!("{status:?}").contains("v4.public."), "{status:?}");
    assert_eq!(reissued_events(&signer).await, 3);
    let metrics = scrape(&signer).await;
    for line in [
        "countersign_reissues_total{result=\"reissued\"} 3",
        "countersign_reissues_total{result=\"reissue_limit_reached\"} 1",
    ] {
        assert!(metrics.lines().any(|l| l == line), "{line} in:\n{metrics}");
    }
}

#[tokio::test]
async fn refuses_after_the_window_past_the_original_expiry_closed() {
    // Five-second proofs (one second was too short to consume in on a
    // loaded machine) and a one-second timeout: the window closes at the
    // issued expiry + (1 s + the 30 s lease margin) + 5 s.
    let brief = operation(
        "hook.brief",
        true,
        &WEBHOOK.replace("timeout_secs = 5", "timeout_secs = 1"),
    )
    .replace(
        "\n[operation.effect]",
        "lifetime_secs = 5\n\n[operation.effect]",
    );
    let db = TempPgDatabase::create().await.unwrap();
    let signer = TestSigner::start_with(&format!("{}{brief}", registry()), Some(db.url()))
        .await
        .unwrap();
    let (id, _, _) = uncertain(&signer, "hook.brief", Duration::ZERO).await;
    let issuance = signer
        .state()
        .ledger()
        .proposal(&id)
        .await
        .unwrap()
        .unwrap()
        .issuance
        .unwrap();
    let closes_at = issuance.expires_at + Duration::seconds(36);
    // Inside the window: re-issued.
    head(&signer)
        .await
        .reissue_for_reconcile(request(&id))
        .await
        .unwrap();
    assert_eq!(reissued_events(&signer).await, 1);
    let wait = closes_at - OffsetDateTime::now_utc() + Duration::milliseconds(1500);
    tokio::time::sleep(wait.unsigned_abs()).await;
    let status = head(&signer)
        .await
        .reissue_for_reconcile(request(&id))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
    assert_eq!(reason_of(&status), "reissue_window_closed");
    let closed = countersign_verifier::timestamp::format(closes_at).unwrap();
    assert_eq!(
        status.message(),
        format!(
            "the re-issue window of proposal {id} closed at {closed} (its proof's expiry, plus the execution lease, plus one proof lifetime); a person resolves it"
        )
    );
    assert_eq!(reissued_events(&signer).await, 1);
}

//! Handoffs across a signer restart and claims whose lease ran out,
//! through the real gRPC client: a restarted signer (nothing of the old
//! one's memory) re-derives a waiting approval from the ledger and hands
//! over the very proof it issued, once; it never hands over a direct,
//! revoked or expired approval, nor one no key it holds reproduces; and a
//! claim nobody presented or released becomes claimable after its lease.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_ledger::KeyEvent;
use countersign_proto::v1::{
    ClaimHandoffRequest, ClaimHandoffResponse, Delivery, ReleaseHandoffRequest, RevokeRequest,
};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use countersign_verifier::canonical::sha256_hex;
use tonic::Code;

use support::{SESSION, approved, approver, head, propose, reason_of};

fn claim(proposal_id: &str, session: &str) -> ClaimHandoffRequest {
    ClaimHandoffRequest {
        proposal_id: proposal_id.into(),
        session: session.into(),
    }
}

async fn claimed(signer: &TestSigner, id: &str, session: &str) -> ClaimHandoffResponse {
    head(signer)
        .await
        .claim_handoff(claim(id, session))
        .await
        .unwrap()
        .into_inner()
}

/// The claim's refusal: its gRPC code and reason code.
async fn refused(signer: &TestSigner, id: &str, session: &str) -> (Code, String) {
    let status = head(signer)
        .await
        .claim_handoff(claim(id, session))
        .await
        .unwrap_err();
    (status.code(), reason_of(&status))
}

fn in_use() -> (Code, String) {
    (Code::FailedPrecondition, "handoff_in_use".into())
}

fn no_live_handoff() -> (Code, String) {
    (Code::NotFound, "no_live_handoff".into())
}

/// A proposal of the home's principal from `SESSION`, approved for a
/// handoff; the proof's SHA-256 as the decision reported it.
async fn approved_for_handoff(signer: &TestSigner) -> (String, String) {
    let view = propose(&mut head(signer).await).await;
    let decided = approved(signer, &view.id, Delivery::Handoff).await;
    assert!(decided.proof.is_empty());
    (view.id, decided.proof_sha256)
}

#[tokio::test]
async fn a_handoff_waiting_across_a_restart_is_claimed_once_with_the_proof_issued() {
    let signer = TestSigner::start().await.unwrap();
    let (id, issued_sha256) = approved_for_handoff(&signer).await;
    let signer = signer.restart().await.unwrap();

    let got = claimed(&signer, &id, SESSION).await;
    assert_eq!(got.proof_sha256, issued_sha256);
    assert_eq!(sha256_hex(got.proof.as_bytes()), issued_sha256);
    // Once: the next claim is told it is held, not that nothing waits.
    assert_eq!(refused(&signer, &id, SESSION).await, in_use());
    // Released, it is claimable once more, as before a restart.
    head(&signer)
        .await
        .release_handoff(ReleaseHandoffRequest {
            proposal_id: id.clone(),
            session: SESSION.into(),
        })
        .await
        .unwrap();
    assert_eq!(claimed(&signer, &id, SESSION).await.proof, got.proof);
    assert_eq!(refused(&signer, &id, SESSION).await, in_use());
    // A second restart with the claim outstanding: the lease is gone with
    // the old signer's memory, and the nonce is still unused.
    let signer = signer.restart().await.unwrap();
    assert_eq!(claimed(&signer, &id, SESSION).await.proof, got.proof);
}

#[tokio::test]
async fn a_direct_approval_is_never_claimable_after_a_restart() {
    let signer = TestSigner::start().await.unwrap();
    let view = propose(&mut head(&signer).await).await;
    let decided = approved(&signer, &view.id, Delivery::Direct).await;
    assert!(!decided.proof.is_empty());
    let signer = signer.restart().await.unwrap();
    assert_eq!(refused(&signer, &view.id, SESSION).await, no_live_handoff());
}

#[tokio::test]
async fn a_revoked_handoff_is_not_recovered_after_a_restart() {
    let signer = TestSigner::start().await.unwrap();
    let (id, _) = approved_for_handoff(&signer).await;
    approver(&signer)
        .await
        .revoke(RevokeRequest {
            proposal_id: id.clone(),
            reason: "changed my mind".into(),
        })
        .await
        .unwrap();
    let signer = signer.restart().await.unwrap();
    assert_eq!(refused(&signer, &id, SESSION).await, no_live_handoff());
}

#[tokio::test]
async fn an_expired_handoff_is_not_recovered_after_a_restart() {
    let signer = TestSigner::start_configured(
        Registry::default_toml(),
        None,
        "[policy]\ndefault_lifetime_secs = 1\n",
    )
    .await
    .unwrap();
    let (id, _) = approved_for_handoff(&signer).await;
    tokio::time::sleep(std::time::Duration::from_millis(2100)).await;
    let signer = signer.restart().await.unwrap();
    assert_eq!(refused(&signer, &id, SESSION).await, no_live_handoff());
}

#[tokio::test]
async fn a_handoff_recovered_after_a_restart_keeps_its_session() {
    let signer = TestSigner::start().await.unwrap();
    let (id, issued_sha256) = approved_for_handoff(&signer).await;
    let signer = signer.restart().await.unwrap();
    assert_eq!(
        refused(&signer, &id, "another-session").await,
        (Code::PermissionDenied, "handoff_session_mismatch".into())
    );
    // The refusal changed nothing: its own session claims it.
    assert_eq!(
        claimed(&signer, &id, SESSION).await.proof_sha256,
        issued_sha256
    );
}

#[tokio::test]
async fn a_handoff_approved_before_a_rotation_is_recovered_with_the_verifying_key() {
    let signer = TestSigner::start().await.unwrap();
    let (id, issued_sha256) = approved_for_handoff(&signer).await;
    rotate(&signer).await;
    let signer = signer.restart().await.unwrap();
    assert_eq!(
        claimed(&signer, &id, SESSION).await.proof_sha256,
        issued_sha256
    );
}

#[tokio::test]
async fn refuses_a_handoff_whose_key_was_retired_as_unrecoverable() {
    let signer = TestSigner::start().await.unwrap();
    let (id, _) = approved_for_handoff(&signer).await;
    let old = signer.state().key_id().unwrap();
    rotate(&signer).await;
    let (ledger, kid) = (signer.state().ledger().clone(), old.clone());
    signer
        .state()
        .keys()
        .retire(&old, || async move {
            ledger
                .record_key_event(KeyEvent::Retired, &kid, "test")
                .await
        })
        .await
        .unwrap();
    let signer = signer.restart().await.unwrap();
    let status = head(&signer)
        .await
        .claim_handoff(claim(&id, SESSION))
        .await
        .unwrap_err();
    assert_eq!(
        (status.code(), reason_of(&status).as_str()),
        (Code::FailedPrecondition, "handoff_unrecoverable")
    );
    assert!(
        status.message().contains("revoke it and propose again"),
        "{}",
        status.message()
    );
    // Nothing was issued anew: the approval is as it was.
    let record = signer
        .state()
        .ledger()
        .proposal(&id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.status.as_str(), "approved");
}

#[tokio::test]
async fn a_claim_neither_presented_nor_released_is_claimable_after_its_lease() {
    let signer = TestSigner::start_configured(
        Registry::default_toml(),
        None,
        "handoff_claim_lease_secs = 1\n",
    )
    .await
    .unwrap();
    let (id, _) = approved_for_handoff(&signer).await;
    let first = claimed(&signer, &id, SESSION).await;
    // Its head died without a word: held for the lease...
    assert_eq!(refused(&signer, &id, SESSION).await, in_use());
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    // ...then another head gets the same approval, and holds it in turn.
    assert_eq!(claimed(&signer, &id, SESSION).await.proof, first.proof);
    assert_eq!(refused(&signer, &id, SESSION).await, in_use());
}

/// `keys rotate`, as the signer's administrator runs it.
async fn rotate(signer: &TestSigner) {
    let ledger = signer.state().ledger().clone();
    signer
        .state()
        .keys()
        .rotate(|kid| async move {
            ledger
                .record_key_event(KeyEvent::Rotated, &kid, "test")
                .await
        })
        .await
        .unwrap();
}

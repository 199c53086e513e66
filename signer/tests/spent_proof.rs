//! `SpentProof`: the issued proof, re-derived for an evidence bundle only
//! once it is spent (its nonce consumed) and expired, byte for byte the one
//! issued; before that, and for anyone but the proposal's own head, refused
//! with its exact reason and no proof.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_identity::Role;
use countersign_ledger::ConsumeStart;
use countersign_proto::v1::{Delivery, SpentProofRequest};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use countersign_verifier::canonical::sha256_hex;
use time::Duration;
use tonic::Code;

use support::{OTHER_PRINCIPAL, approved, client_as, head, propose, reason_of, verified};

fn request(id: &str) -> SpentProofRequest {
    SpentProofRequest {
        proposal_id: id.into(),
    }
}

/// Proposes, approves and consumes one `schedule.create` (its intent
/// recorded, as a head does before running the effect); its id and proof.
async fn consumed(signer: &TestSigner) -> (String, String) {
    let id = propose(&mut head(signer).await).await.id;
    let proof = approved(signer, &id, Delivery::Direct).await.proof;
    let checked = verified(signer, &id, &proof).await;
    let start = signer
        .state()
        .ledger()
        .begin_consume(&checked, Duration::seconds(30))
        .await
        .unwrap();
    assert!(matches!(start, ConsumeStart::Fresh(_)), "{start:?}");
    (id, proof)
}

#[tokio::test]
async fn hands_over_a_consumed_and_expired_proof_byte_for_byte() {
    let registry = Registry::default_toml().replacen(
        "preview = \"Create schedule",
        "lifetime_secs = 1\npreview = \"Create schedule",
        1,
    );
    let signer = TestSigner::start_with_registry(&registry).await.unwrap();
    let (id, proof) = consumed(&signer).await;
    tokio::time::sleep(std::time::Duration::from_millis(1100)).await;
    let spent = head(&signer)
        .await
        .spent_proof(request(&id))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(spent.proof, proof);
    assert_eq!(spent.proof_sha256, sha256_hex(proof.as_bytes()));
}

#[tokio::test]
async fn refuses_a_live_an_unconsumed_or_anothers_proof_with_its_reason() {
    let signer = TestSigner::start().await.unwrap();
    let mut head = head(&signer).await;
    // Consumed, but its proof has not expired: a receiver could still take it.
    let (live, _) = consumed(&signer).await;
    // Approved, not consumed.
    let unconsumed = propose(&mut head).await.id;
    approved(&signer, &unconsumed, Delivery::Direct).await;
    // Pending.
    let pending = propose(&mut head).await.id;
    let expires = signer
        .state()
        .ledger()
        .proposal(&live)
        .await
        .unwrap()
        .unwrap()
        .issuance
        .unwrap()
        .expires_at;
    let expires = countersign_verifier::timestamp::format(expires).unwrap();
    for (id, why) in [
        (&live, format!("it expires at {expires}")),
        (&unconsumed, "it is approved, not consumed".to_owned()),
        (&pending, "it is pending, no proof was issued".to_owned()),
    ] {
        let status = head.spent_proof(request(id)).await.unwrap_err();
        assert_eq!(status.code(), Code::FailedPrecondition, "{status:?}");
        assert_eq!(reason_of(&status), "proof_not_spent", "{status:?}");
        assert_eq!(
            status.message(),
            format!(
                "the proof of proposal {id} is not spent yet ({why}): it is handed to an evidence bundle only once consumed and expired"
            )
        );
    }
    // Another principal's head, and an approver: refused before anything is read.
    let status = client_as(&signer, Role::Head, OTHER_PRINCIPAL)
        .await
        .spent_proof(request(&live))
        .await
        .unwrap_err();
    assert_eq!(reason_of(&status), "not_your_proposal", "{status:?}");
    let status = signer
        .client(Role::Approver)
        .await
        .unwrap()
        .spent_proof(request(&live))
        .await
        .unwrap_err();
    assert_eq!(reason_of(&status), "role_not_allowed", "{status:?}");
}

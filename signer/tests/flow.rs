//! Propose, decide, deliver and revoke through the real gRPC client.
#![allow(clippy::unwrap_used)]

mod support;

use countersign_identity::{ApproverName, ClientCredential, tls};
use countersign_proto::v1::{
    ClaimHandoffRequest, Delivery, GetProposalRequest, ProposeRequest, ReleaseHandoffRequest,
    RevokeOutcome, RevokeRequest,
};
use countersign_verifier::Proof;
use countersign_verifier::canonical::sha256_hex;
use time::Duration;
use tonic::Code;

use support::{
    ARGS, SESSION, approve, approved, approver, deny, head, propose, start, verified_claims,
};

fn claim(proposal_id: &str, session: &str) -> ClaimHandoffRequest {
    ClaimHandoffRequest {
        proposal_id: proposal_id.into(),
        session: session.into(),
    }
}

#[tokio::test]
async fn propose_stores_canonical_arguments_and_preview() {
    let signer = start().await;
    let view = propose(&mut head(&signer).await).await;
    assert!(view.id.starts_with("prop_") && view.id.len() == 37);
    assert_eq!(view.principal, signer.principal());
    assert_eq!(view.session, SESSION);
    assert_eq!(view.status().name(), "pending");
    assert_eq!(
        view.arguments_json,
        r#"{"cron":"0 3 * * *","name":"nightly"}"#
    );
    assert_eq!(
        view.arguments_sha256,
        sha256_hex(view.arguments_json.as_bytes())
    );
    assert_eq!(view.policy_revision, signer.state().policy().revision());
    assert!(view.preview.contains("nightly"), "{}", view.preview);
    assert!(view.preview.contains("please approve"), "{}", view.preview);
    assert!(!view.handoff_waiting);
}

#[tokio::test]
async fn refuses_arguments_that_fail_the_schema() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let status = head
        .propose(ProposeRequest {
            operation: "schedule.create".into(),
            arguments_json: r#"{"name":"nightly"}"#.into(),
            session: SESSION.into(),
            note: String::new(),
            idempotency_key: String::new(),
            head: "cli".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().starts_with("invalid arguments: "),
        "{}",
        status.message()
    );
    assert!(status.message().contains("cron"), "{}", status.message());

    let status = head
        .propose(ProposeRequest {
            operation: "schedule.explode".into(),
            arguments_json: ARGS.into(),
            session: SESSION.into(),
            note: String::new(),
            idempotency_key: String::new(),
            head: "cli".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(status.message(), r#"unknown operation "schedule.explode""#);

    let status = head
        .propose(ProposeRequest {
            operation: "schedule.create".into(),
            arguments_json: ARGS.into(),
            session: "bad session".into(),
            note: String::new(),
            idempotency_key: String::new(),
            head: "cli".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert!(
        status.message().starts_with("invalid session"),
        "{}",
        status.message()
    );
    assert!(signer.state().ledger().events().await.unwrap().is_empty());
}

#[tokio::test]
async fn approve_direct_returns_a_proof_the_verifier_accepts() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let view = propose(&mut head).await;
    let decided = approved(&signer, &view.id, Delivery::Direct).await;
    assert_eq!(
        decided.proposal.as_ref().unwrap().status().name(),
        "approved"
    );
    assert!(!decided.proposal.as_ref().unwrap().handoff_waiting);
    assert_eq!(
        decided.proof_sha256,
        Proof::from_text(decided.proof.clone())
            .unwrap()
            .sha256_hex()
    );
    let claims = verified_claims(&signer, &mut head, &view, &decided.proof).await;
    assert_eq!(claims.prov, format!("human:cert:{}", signer.principal()));
    assert_eq!(claims.grant, None);
    assert_eq!(claims.aud, format!("countersign:{}", signer.principal()));
    assert_eq!(claims.exp - claims.iat, Duration::seconds(300));
    assert_eq!(claims.jti.len(), 43);
}

/// A named approver credential (the dev PKI's `console`) is recorded by
/// name: in the proof's `prov` and in the ledger's issuance provenance.
#[tokio::test]
async fn a_named_approver_credential_is_named_in_the_provenance() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let view = propose(&mut head).await;
    let console = ClientCredential::NamedApprover(ApproverName::parse("console").unwrap());
    let config = tls::client_config_for(signer.home(), &console).unwrap();
    let mut console = signer.client_with(config).await.unwrap();
    let decided = console
        .decide(approve(&view.id, Delivery::Direct))
        .await
        .unwrap()
        .into_inner();
    let expected = format!("human:cert:{}/console", signer.principal());
    let claims = verified_claims(&signer, &mut head, &view, &decided.proof).await;
    assert_eq!(claims.prov, expected);
    let record = signer.state().ledger().proposal(&view.id).await.unwrap();
    assert_eq!(record.unwrap().issuance.unwrap().provenance, expected);
}

#[tokio::test]
async fn records_the_issuance_without_the_proof() {
    let signer = start().await;
    let view = propose(&mut head(&signer).await).await;
    let decided = approved(&signer, &view.id, Delivery::Direct).await;
    let ledger = signer.state().ledger();
    let record = ledger.proposal(&view.id).await.unwrap().unwrap();
    let issuance = record.issuance.clone().unwrap();
    assert_eq!(issuance.proof_sha256, sha256_hex(decided.proof.as_bytes()));
    assert_eq!(
        issuance.provenance,
        format!("human:cert:{}", signer.principal())
    );
    assert_eq!(issuance.session, SESSION);

    let events = ledger.events().await.unwrap();
    assert!(events.iter().any(|e| e.kind == "approved"));
    let recorded = format!("{events:?}{record:?}");
    let payload = decided.proof.split('.').nth(2).unwrap();
    assert!(!recorded.contains(&decided.proof));
    assert!(!recorded.contains(payload));
    // The database file itself never holds the proof either.
    let db = std::fs::read(signer.home().ledger_path()).unwrap();
    let wal = std::fs::read(signer.home().root().join("ledger.db-wal")).unwrap_or_default();
    for bytes in [db, wal] {
        assert!(
            !bytes
                .windows(payload.len())
                .any(|w| w == payload.as_bytes())
        );
    }
}

#[tokio::test]
async fn refuses_deciding_twice() {
    let signer = start().await;
    let view = propose(&mut head(&signer).await).await;
    let mut approver = approver(&signer).await;
    approver
        .decide(approve(&view.id, Delivery::Direct))
        .await
        .unwrap();
    let status = approver
        .decide(approve(&view.id, Delivery::Direct))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert_eq!(
        status.message(),
        format!("proposal {} is approved, not pending", view.id)
    );
    let status = approver
        .decide(deny(&view.id, "changed my mind"))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
}

#[tokio::test]
async fn refuses_denial_without_reason_then_records_one_with_reason() {
    let signer = start().await;
    let view = propose(&mut head(&signer).await).await;
    let mut approver = approver(&signer).await;
    let status = approver.decide(deny(&view.id, "")).await.unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
    assert_eq!(
        status.message(),
        "invalid reason: a reason is required to deny"
    );
    let decided = approver
        .decide(deny(&view.id, "not today"))
        .await
        .unwrap()
        .into_inner();
    assert!(decided.proof.is_empty());
    let proposal = decided.proposal.unwrap();
    assert_eq!(proposal.status().name(), "denied");
    assert_eq!(proposal.reason, "not today");
}

#[tokio::test]
async fn hands_off_once_to_the_bound_session() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let view = propose(&mut head).await;
    let decided = approved(&signer, &view.id, Delivery::Handoff).await;
    assert!(decided.proof.is_empty());
    assert!(decided.proposal.unwrap().handoff_waiting);

    let status = head
        .claim_handoff(claim(&view.id, "other-session"))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    assert_eq!(status.message(), "the handoff is bound to another session");

    let claimed = head
        .claim_handoff(claim(&view.id, SESSION))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(claimed.proof_sha256, decided.proof_sha256);
    assert_eq!(sha256_hex(claimed.proof.as_bytes()), decided.proof_sha256);

    let status = head
        .claim_handoff(claim(&view.id, SESSION))
        .await
        .unwrap_err();
    // Held by the head that claimed it: being executed, not "no handoff".
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert!(
        status.message()
            == format!(
                "the approval of {} is held by a head executing it now",
                view.id
            ),
        "{}",
        status.message()
    );
    let view = head
        .get_proposal(GetProposalRequest {
            proposal_id: view.id,
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!view.handoff_waiting);
}

fn release(proposal_id: &str, session: &str) -> ReleaseHandoffRequest {
    ReleaseHandoffRequest {
        proposal_id: proposal_id.into(),
        session: session.into(),
    }
}

#[tokio::test]
async fn a_released_handoff_is_claimed_once_more_and_only_then() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let view = propose(&mut head).await;
    approved(&signer, &view.id, Delivery::Handoff).await;

    let status = head
        .release_handoff(release(&view.id, SESSION))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
    assert_eq!(status.message(), "the handoff is not claimed");

    let first = head
        .claim_handoff(claim(&view.id, SESSION))
        .await
        .unwrap()
        .into_inner();
    let status = head
        .release_handoff(release(&view.id, "other-session"))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    assert_eq!(status.message(), "the handoff is bound to another session");
    head.release_handoff(release(&view.id, SESSION))
        .await
        .unwrap();
    let waiting = head
        .get_proposal(GetProposalRequest {
            proposal_id: view.id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(waiting.handoff_waiting);

    // The same proof, once more; then no further claim.
    let second = head
        .claim_handoff(claim(&view.id, SESSION))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(second.proof, first.proof);
    let status = head
        .claim_handoff(claim(&view.id, SESSION))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::FailedPrecondition);
}

#[tokio::test]
async fn binds_the_proof_to_execute_in_session() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let view = propose(&mut head).await;
    let mut request = approve(&view.id, Delivery::Handoff);
    request.execute_in_session = "terminal-7".into();
    approver(&signer).await.decide(request).await.unwrap();
    let status = head
        .claim_handoff(claim(&view.id, SESSION))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::PermissionDenied);
    head.claim_handoff(claim(&view.id, "terminal-7"))
        .await
        .unwrap();
    let record = signer
        .state()
        .ledger()
        .proposal(&view.id)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(record.issuance.unwrap().session, "terminal-7");
}

#[tokio::test]
async fn revoke_drops_the_waiting_handoff() {
    let signer = start().await;
    let mut head = head(&signer).await;
    let view = propose(&mut head).await;
    let mut approver = approver(&signer).await;
    approver
        .decide(approve(&view.id, Delivery::Handoff))
        .await
        .unwrap();
    let revoked = approver
        .revoke(RevokeRequest {
            proposal_id: view.id.clone(),
            reason: "wrong schedule".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(revoked.outcome, RevokeOutcome::Revoked as i32);
    let proposal = revoked.proposal.unwrap();
    assert_eq!(proposal.status().name(), "revoked");
    assert!(!proposal.handoff_waiting);
    let status = head
        .claim_handoff(claim(&view.id, SESSION))
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    let again = approver
        .revoke(RevokeRequest {
            proposal_id: view.id,
            reason: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(again.outcome, RevokeOutcome::NothingToRevoke as i32);
}

#[tokio::test]
async fn unknown_proposal_is_not_found() {
    let signer = start().await;
    let status = head(&signer)
        .await
        .get_proposal(GetProposalRequest {
            proposal_id: format!("prop_{}", "1".repeat(32)),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::NotFound);
    let status = head(&signer)
        .await
        .get_proposal(GetProposalRequest {
            proposal_id: "../etc/passwd".into(),
        })
        .await
        .unwrap_err();
    assert_eq!(status.code(), Code::InvalidArgument);
}

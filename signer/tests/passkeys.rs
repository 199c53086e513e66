//! Passkey approvals at the signer, with a software authenticator: every
//! refusal path of Decide, BeginDecision, enrolment and removal answers
//! its exact reason and leaves the proposal pending with no issuance (or
//! the credential store unchanged); an accepted assertion is stored with
//! the issuance and the proof carries `amr`/`pkh`.
#![allow(clippy::unwrap_used)]

mod support;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_proto::v1::{
    BeginDecisionRequest, BeginEnrolmentRequest, BeginRemovalRequest, DecideRequest, Delivery,
    EnrolRequest, ListPasskeysRequest, RemovePasskeyRequest,
};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use countersign_webauthn::testing::SoftAuthenticator;
use sha2::{Digest, Sha256};
use support::passkey::*;
use support::*;
use tonic::Code;

#[tokio::test]
async fn an_approval_needs_a_passkey_assertion_bound_to_exactly_that_decision() {
    let signer = TestSigner::start_configured(Registry::default_toml(), None, REQUIRED)
        .await
        .unwrap();
    let mut head = head(&signer).await;
    let mut approver = approver(&signer).await;
    let pid = propose(&mut head).await.id;
    let other = propose(&mut head).await.id;
    let view = approver
        .get_proposal(countersign_proto::v1::GetProposalRequest {
            proposal_id: pid.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(view.passkey_required);

    // No passkey: refused, and no challenge can be had before enrolment.
    refused(
        approver.decide(approve(&pid, Delivery::Direct)).await,
        Code::FailedPrecondition,
        "passkey_required",
    );
    refused(
        approver
            .begin_decision(BeginDecisionRequest {
                proposal_id: pid.clone(),
                delivery: Delivery::Direct.into(),
                ..Default::default()
            })
            .await,
        Code::FailedPrecondition,
        "no_passkey_enrolled",
    );
    // A dry run needs no passkey: it only says whether the decision could be made.
    approver
        .decide(DecideRequest {
            dry_run: true,
            ..approve(&pid, Delivery::Direct)
        })
        .await
        .unwrap();
    nothing_issued(&signer, &pid).await;

    let mut person = soft(1);
    enrol_first(&signer, &mut approver, &person).await;

    // An authenticator that is not enrolled.
    let (cid, challenge) = challenge_for(&mut approver, &pid, Delivery::Direct).await;
    let mut stranger = soft(9);
    refused(
        approver
            .decide(decide_with(
                &pid,
                Delivery::Direct,
                Some(wire(&cid, stranger.assert(&challenge))),
            ))
            .await,
        Code::PermissionDenied,
        "unknown_passkey",
    );
    // No user verification.
    let (cid, challenge) = challenge_for(&mut approver, &pid, Delivery::Direct).await;
    person.user_verified = false;
    refused(
        approver
            .decide(decide_with(
                &pid,
                Delivery::Direct,
                Some(wire(&cid, person.assert(&challenge))),
            ))
            .await,
        Code::PermissionDenied,
        "webauthn_no_user_verification",
    );
    person.user_verified = true;
    // Another origin (a page elsewhere that got the challenge).
    let (cid, challenge) = challenge_for(&mut approver, &pid, Delivery::Direct).await;
    let mut elsewhere = person.clone();
    elsewhere.origin = "https://console.localhost:9999".into();
    refused(
        approver
            .decide(decide_with(
                &pid,
                Delivery::Direct,
                Some(wire(&cid, elsewhere.assert(&challenge))),
            ))
            .await,
        Code::PermissionDenied,
        "webauthn_wrong_origin",
    );
    // A challenge asked for handoff, used to approve direct delivery.
    let (cid, challenge) = challenge_for(&mut approver, &pid, Delivery::Handoff).await;
    refused(
        approver
            .decide(decide_with(
                &pid,
                Delivery::Direct,
                Some(wire(&cid, person.assert(&challenge))),
            ))
            .await,
        Code::FailedPrecondition,
        "challenge_mismatch",
    );
    // A challenge for another proposal.
    let (cid, challenge) = challenge_for(&mut approver, &other, Delivery::Direct).await;
    refused(
        approver
            .decide(decide_with(
                &pid,
                Delivery::Direct,
                Some(wire(&cid, person.assert(&challenge))),
            ))
            .await,
        Code::FailedPrecondition,
        "challenge_mismatch",
    );
    // An unknown challenge id.
    refused(
        approver
            .decide(decide_with(
                &pid,
                Delivery::Direct,
                Some(wire("0123abcd", person.assert(&challenge))),
            ))
            .await,
        Code::FailedPrecondition,
        "challenge_unknown",
    );
    nothing_issued(&signer, &pid).await;
    nothing_issued(&signer, &other).await;

    // The person's assertion over the right challenge: approved.
    let (cid, challenge) = challenge_for(&mut approver, &pid, Delivery::Direct).await;
    let good = person.assert(&challenge);
    let decided = approver
        .decide(decide_with(
            &pid,
            Delivery::Direct,
            Some(wire(&cid, good.clone())),
        ))
        .await
        .unwrap()
        .into_inner();
    let claims = claims_of(&decided.proof);
    assert_eq!(claims["amr"], serde_json::json!(["passkey-uv"]));
    assert_eq!(
        claims["pkh"],
        hex::encode(Sha256::digest(person.credential_id()))
    );
    let stored = signer
        .state()
        .ledger()
        .passkey_assertion_for(&pid)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(
        stored.assertion.credential_id,
        URL_SAFE_NO_PAD.encode(person.credential_id())
    );
    assert_eq!(stored.assertion.delivery, "direct");
    assert_eq!(stored.assertion.sign_count, person.counter);

    // Replays: the same answer again, and the same answer under a fresh
    // challenge of another proposal.
    refused(
        approver
            .decide(decide_with(
                &other,
                Delivery::Direct,
                Some(wire(&cid, good.clone())),
            ))
            .await,
        Code::FailedPrecondition,
        "challenge_unknown",
    );
    let (fresh, _) = challenge_for(&mut approver, &other, Delivery::Direct).await;
    refused(
        approver
            .decide(decide_with(
                &other,
                Delivery::Direct,
                Some(wire(&fresh, good)),
            ))
            .await,
        Code::PermissionDenied,
        "webauthn_bad_challenge",
    );
    // A cloned authenticator: a counter that does not go up.
    let (cid, challenge) = challenge_for(&mut approver, &other, Delivery::Direct).await;
    let mut clone = person.clone();
    clone.counter -= 1;
    refused(
        approver
            .decide(decide_with(
                &other,
                Delivery::Direct,
                Some(wire(&cid, clone.assert(&challenge))),
            ))
            .await,
        Code::PermissionDenied,
        "webauthn_counter_not_increased",
    );
    nothing_issued(&signer, &other).await;
}

#[tokio::test]
async fn every_enrolment_needs_the_approvers_code_and_a_removal_an_enrolled_passkey() {
    let signer = TestSigner::start_configured(Registry::default_toml(), None, REQUIRED)
        .await
        .unwrap();
    let mut approver = approver(&signer).await;
    let principal = signer.principal().to_owned();
    let count = |signer: &TestSigner| {
        let ledger = signer.state().ledger().clone();
        let principal = principal.clone();
        async move {
            ledger
                .passkeys(&principal)
                .await
                .unwrap()
                .iter()
                .filter(|p| p.is_active())
                .count()
        }
    };
    let first = soft(1);

    // The first passkey: without a code, with a wrong code (which spends
    // the real one), then with a fresh code.
    let enrol =
        |c: countersign_proto::v1::EnrolmentChallenge, key: &SoftAuthenticator, code: &str| {
            let (attestation_object, client_data_json) = key.register(&c.creation_challenge);
            EnrolRequest {
                challenge_id: c.challenge_id,
                name: "key".into(),
                attestation_object,
                client_data_json,
                enrolment_code: code.into(),
            }
        };
    let c = approver
        .begin_enrolment(BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    refused(
        approver.enrol(enrol(c, &first, "")).await,
        Code::FailedPrecondition,
        "enrolment_code_required",
    );
    let real = code(&signer).await;
    let c = approver
        .begin_enrolment(BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    refused(
        approver.enrol(enrol(c, &first, "0000-0000")).await,
        Code::PermissionDenied,
        "enrolment_code_refused",
    );
    let c = approver
        .begin_enrolment(BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    refused(
        approver.enrol(enrol(c, &first, &real)).await,
        Code::PermissionDenied,
        "enrolment_code_refused",
    );
    assert_eq!(count(&signer).await, 0);
    let c = approver
        .begin_enrolment(BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    approver
        .enrol(enrol(c, &first, &code(&signer).await))
        .await
        .unwrap();
    assert_eq!(count(&signer).await, 1);

    // A second passkey: an enrolled passkey does not stand in for the
    // code; a fresh code drawn for this approver does.
    let mut first = first;
    let second = soft(2);
    let c = approver
        .begin_enrolment(BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    assert_eq!(
        c.exclude_credential_ids,
        vec![first.credential_id().to_vec()]
    );
    refused(
        approver.enrol(enrol(c, &second, "")).await,
        Code::FailedPrecondition,
        "enrolment_code_required",
    );
    assert_eq!(count(&signer).await, 1);
    let c = approver
        .begin_enrolment(BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    let view = approver
        .enrol(enrol(c, &second, &code(&signer).await))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(view.authorized_by, "enrolment-code");
    assert_eq!(view.enrolled_by, principal);
    assert_eq!(count(&signer).await, 2);
    // The same credential again.
    let c = approver
        .begin_enrolment(BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    refused(
        approver
            .enrol(enrol(c, &second, &code(&signer).await))
            .await,
        Code::FailedPrecondition,
        "passkey_already_enrolled",
    );

    // Removal: authorized by an enrolled passkey's assertion over the
    // removal challenge; the last one only by the administrator.
    let second_id = URL_SAFE_NO_PAD.encode(second.credential_id());
    let first_id = URL_SAFE_NO_PAD.encode(first.credential_id());
    let r = approver
        .begin_removal(BeginRemovalRequest {
            credential_id: second_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    let by_stranger = wire(&r.challenge_id, soft(9).assert(&r.challenge));
    refused(
        approver
            .remove_passkey(RemovePasskeyRequest {
                credential_id: second_id.clone(),
                authorization: Some(by_stranger),
            })
            .await,
        Code::PermissionDenied,
        "unknown_passkey",
    );
    let r = approver
        .begin_removal(BeginRemovalRequest {
            credential_id: second_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    // A removal challenge for one passkey cannot remove another.
    refused(
        approver
            .remove_passkey(RemovePasskeyRequest {
                credential_id: first_id.clone(),
                authorization: Some(wire(&r.challenge_id, first.assert(&r.challenge))),
            })
            .await,
        Code::FailedPrecondition,
        "challenge_mismatch",
    );
    let r = approver
        .begin_removal(BeginRemovalRequest {
            credential_id: second_id.clone(),
        })
        .await
        .unwrap()
        .into_inner();
    let removed = approver
        .remove_passkey(RemovePasskeyRequest {
            credential_id: second_id.clone(),
            authorization: Some(wire(&r.challenge_id, first.assert(&r.challenge))),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(!removed.removed_at.is_empty());
    assert_eq!(count(&signer).await, 1);
    refused(
        approver
            .begin_removal(BeginRemovalRequest {
                credential_id: first_id.clone(),
            })
            .await,
        Code::FailedPrecondition,
        "last_passkey",
    );
    let listed = approver
        .list_passkeys(ListPasskeysRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(listed.required);
    assert_eq!(listed.passkeys.len(), 2);
    // Every change is in the audit chain.
    let kinds: Vec<String> = signer
        .state()
        .ledger()
        .events()
        .await
        .unwrap()
        .into_iter()
        .map(|e| e.kind)
        .collect();
    assert_eq!(
        kinds.iter().filter(|k| *k == "passkey_enrolled").count(),
        2,
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|k| *k == "passkey_removed").count(),
        1,
        "{kinds:?}"
    );
    // A head may not touch passkeys.
    let mut head = head(&signer).await;
    refused(
        head.begin_enrolment(BeginEnrolmentRequest {}).await,
        Code::PermissionDenied,
        "role_not_allowed",
    );
    refused(
        head.list_passkeys(ListPasskeysRequest {}).await,
        Code::PermissionDenied,
        "role_not_allowed",
    );
}

const OPTIONAL_WITH_ONE_OP: &str = "[passkeys]\norigins = [\"https://console.localhost:7444\"]\n";

#[tokio::test]
async fn an_operation_can_require_a_passkey_when_the_installation_does_not() {
    let registry = Registry::default_toml().replacen(
        "name = \"schedule.delete\"",
        "name = \"schedule.delete\"\nrequire_passkey = true",
        1,
    );
    assert_ne!(
        registry,
        Registry::default_toml(),
        "the default registry has schedule.delete"
    );
    let signer = TestSigner::start_configured(&registry, None, OPTIONAL_WITH_ONE_OP)
        .await
        .unwrap();
    let mut head = head(&signer).await;
    let mut approver = approver(&signer).await;
    let create = propose(&mut head).await;
    assert!(!create.passkey_required);
    approver
        .decide(approve(&create.id, Delivery::Direct))
        .await
        .unwrap();
    let delete = head
        .propose(countersign_proto::v1::ProposeRequest {
            operation: "schedule.delete".into(),
            arguments_json: r#"{"name":"nightly"}"#.into(),
            session: SESSION.into(),
            note: String::new(),
            idempotency_key: String::new(),
            head: "cli".into(),
        })
        .await
        .unwrap()
        .into_inner();
    assert!(delete.passkey_required);
    refused(
        approver.decide(approve(&delete.id, Delivery::Direct)).await,
        Code::FailedPrecondition,
        "passkey_required",
    );
    nothing_issued(&signer, &delete.id).await;
}

#[tokio::test]
async fn without_a_passkeys_section_the_passkey_rpcs_are_refused() {
    let signer = start().await;
    let mut approver = approver(&signer).await;
    refused(
        approver.begin_enrolment(BeginEnrolmentRequest {}).await,
        Code::FailedPrecondition,
        "passkeys_not_configured",
    );
    let pid = propose(&mut head(&signer).await).await.id;
    refused(
        approver
            .begin_decision(BeginDecisionRequest {
                proposal_id: pid,
                delivery: Delivery::Direct.into(),
                ..Default::default()
            })
            .await,
        Code::FailedPrecondition,
        "passkeys_not_configured",
    );
}

#[tokio::test]
async fn a_passkey_handoff_recovered_after_a_restart_keeps_its_passkey_claims() {
    let signer = TestSigner::start_configured(Registry::default_toml(), None, REQUIRED)
        .await
        .unwrap();
    let mut approver = approver(&signer).await;
    let mut person = soft(7);
    enrol_first(&signer, &mut approver, &person).await;
    let pid = propose(&mut head(&signer).await).await.id;
    let (cid, challenge) = challenge_for(&mut approver, &pid, Delivery::Handoff).await;
    let decided = approver
        .decide(decide_with(
            &pid,
            Delivery::Handoff,
            Some(wire(&cid, person.assert(&challenge))),
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(decided.proof.is_empty());

    let signer = signer.restart().await.unwrap();
    let got = head(&signer)
        .await
        .claim_handoff(countersign_proto::v1::ClaimHandoffRequest {
            proposal_id: pid.clone(),
            session: SESSION.into(),
        })
        .await
        .unwrap()
        .into_inner();
    // The very proof issued, so with the assurance the passkey gave.
    assert_eq!(got.proof_sha256, decided.proof_sha256);
    let claims = claims_of(&got.proof);
    assert_eq!(claims["amr"], serde_json::json!(["passkey-uv"]));
    assert_eq!(
        claims["pkh"],
        hex::encode(Sha256::digest(person.credential_id()))
    );
}

/// A passkey decision of a proposal whose decision window closed is
/// refused `expired`: no challenge is handed out for it, and an assertion
/// over a challenge taken while it could still be decided approves
/// nothing (no issuance, no stored assertion).
#[tokio::test]
async fn a_passkey_decision_of_an_expired_proposal_is_refused_with_or_without_a_challenge() {
    let registry = Registry::default_toml().replacen(
        "[[operation]]\nname = \"schedule.create\"\n",
        "[[operation]]\nname = \"schedule.create\"\ndecision_window_secs = 1\n",
        1,
    );
    let signer = TestSigner::start_configured(&registry, None, REQUIRED)
        .await
        .unwrap();
    let mut head = head(&signer).await;
    let mut approver = approver(&signer).await;
    let mut person = soft(1);
    enrol_first(&signer, &mut approver, &person).await;
    let view = propose(&mut head).await;
    let (cid, challenge) = challenge_for(&mut approver, &view.id, Delivery::Direct).await;
    let closes = time::OffsetDateTime::parse(
        &view.decide_by,
        &time::format_description::well_known::Rfc3339,
    )
    .unwrap();
    let wait = closes - time::OffsetDateTime::now_utc() + time::Duration::milliseconds(200);
    tokio::time::sleep(wait.try_into().unwrap_or_default()).await;

    let message = format!(
        "proposal {} expired at {}: no one decided it within its decision window",
        view.id, view.decide_by
    );
    let status = approver
        .begin_decision(BeginDecisionRequest {
            proposal_id: view.id.clone(),
            delivery: Delivery::Direct.into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        (status.code(), reason_of(&status).as_str(), status.message()),
        (Code::FailedPrecondition, "expired", message.as_str())
    );
    let status = approver
        .decide(decide_with(
            &view.id,
            Delivery::Direct,
            Some(wire(&cid, person.assert(&challenge))),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (status.code(), reason_of(&status).as_str(), status.message()),
        (Code::FailedPrecondition, "expired", message.as_str())
    );
    let ledger = signer.state().ledger();
    let record = ledger.proposal(&view.id).await.unwrap().unwrap();
    assert_eq!(record.status.as_str(), "expired");
    assert!(record.issuance.is_none());
    assert!(
        ledger
            .passkey_assertion_for(&view.id)
            .await
            .unwrap()
            .is_none()
    );
}

//! A quorum approval on a passkey operation needs a passkey of THAT
//! approver: each enrolled passkey is bound to the approver identity that
//! enrolled it (`enrolled_by`), each enrolment needs the code drawn for
//! that approver, the browser is offered only the approver's own, and an
//! assertion made with another approver's passkey is refused
//! (`not_your_passkey`) with nothing recorded. One person holding one
//! authenticator cannot meet a two-approver quorum alone.
#![allow(clippy::unwrap_used)]

mod support;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{BeginDecisionRequest, Delivery, ListPasskeysRequest};
use countersign_registry::Registry;
use countersign_signer::testing::TestSigner;
use countersign_webauthn::testing::SoftAuthenticator;
use sha2::{Digest, Sha256};
use support::passkey::{
    REQUIRED, challenge_for, code_for, decide_with, enrol_with, nothing_issued, refused, soft, wire,
};
use support::{approve, claims_of, head, propose, reason_of};
use tonic::Code;
use tonic::transport::Channel;

fn registry() -> String {
    Registry::default_toml().replacen(
        "[[operation]]\nname = \"schedule.create\"",
        "[[operation]]\nname = \"schedule.create\"\nquorum = { required = 2, approvers = [\"alice\", \"bob\"] }",
        1,
    )
}

async fn named(signer: &TestSigner, name: &str) -> SignerClient<Channel> {
    support::named_approver(signer, name).await
}

/// Enrol `key` through `name`'s `client`, with a code drawn for `name`.
async fn enrol(
    signer: &TestSigner,
    client: &mut SignerClient<Channel>,
    name: &str,
    key: &SoftAuthenticator,
) {
    enrol_with(client, key, &code_for(signer, name).await)
        .await
        .unwrap();
}

#[tokio::test]
async fn each_quorum_approver_approves_with_their_own_passkey_only() {
    let signer = TestSigner::start_configured(&registry(), None, REQUIRED)
        .await
        .unwrap();
    let principal = signer.principal().to_owned();
    let (mut alice, mut bob) = (named(&signer, "alice").await, named(&signer, "bob").await);
    let (mut alice_key, mut bob_key) = (soft(1), soft(2));
    enrol(&signer, &mut alice, "alice", &alice_key).await;
    enrol(&signer, &mut bob, "bob", &bob_key).await;
    let mut enrolled: Vec<(String, String)> = signer
        .state()
        .ledger()
        .passkeys(&principal)
        .await
        .unwrap()
        .into_iter()
        .map(|k| (k.credential_id, k.enrolled_by))
        .collect();
    let id_of = |key: &SoftAuthenticator| URL_SAFE_NO_PAD.encode(key.credential_id());
    let mut expected = [
        (id_of(&alice_key), format!("{principal}/alice")),
        (id_of(&bob_key), format!("{principal}/bob")),
    ];
    enrolled.sort();
    expected.sort();
    assert_eq!(enrolled, expected);
    let pid = propose(&mut head(&signer).await).await.id;

    // The browser is offered only the approver's own passkey.
    let offered = bob
        .begin_decision(BeginDecisionRequest {
            proposal_id: pid.clone(),
            delivery: Delivery::Direct.into(),
            execute_in_session: String::new(),
        })
        .await
        .unwrap()
        .into_inner()
        .allowed_credential_ids;
    assert_eq!(offered, [bob_key.credential_id().to_vec()]);
    // An approver the quorum does not list gets no challenge at all.
    let status = named(&signer, "carol")
        .await
        .begin_decision(BeginDecisionRequest {
            proposal_id: pid.clone(),
            delivery: Delivery::Direct.into(),
            execute_in_session: String::new(),
        })
        .await
        .unwrap_err();
    assert_eq!(
        (status.code(), reason_of(&status).as_str()),
        (Code::PermissionDenied, "not_a_quorum_approver")
    );

    // alice's challenge answered with bob's passkey: refused, nothing recorded.
    let (cid, challenge) = challenge_for(&mut alice, &pid, Delivery::Direct).await;
    let status = alice
        .decide(decide_with(
            &pid,
            Delivery::Direct,
            Some(wire(&cid, bob_key.assert(&challenge))),
        ))
        .await
        .unwrap_err();
    assert_eq!(
        (status.code(), reason_of(&status).as_str()),
        (Code::PermissionDenied, "not_your_passkey")
    );
    // Without any passkey: refused as for any approval that needs one.
    let status = alice
        .decide(approve(&pid, Delivery::Direct))
        .await
        .unwrap_err();
    assert_eq!(reason_of(&status), "passkey_required");
    let ledger = signer.state().ledger();
    assert!(ledger.quorum_decisions(&pid).await.unwrap().is_empty());
    assert!(ledger.quorum_passkey_assertions().await.unwrap().is_empty());

    // alice with her own: counted, her credential recorded with it.
    let (cid, challenge) = challenge_for(&mut alice, &pid, Delivery::Direct).await;
    let counted = alice
        .decide(decide_with(
            &pid,
            Delivery::Direct,
            Some(wire(&cid, alice_key.assert(&challenge))),
        ))
        .await
        .unwrap()
        .into_inner();
    assert!(counted.proof.is_empty());
    let recorded = ledger.quorum_decisions(&pid).await.unwrap();
    assert_eq!(recorded[0].passkey, Some(id_of(&alice_key)));
    assert!(ledger.passkey_assertion_for(&pid).await.unwrap().is_none());
    assert_eq!(ledger.quorum_passkey_assertions().await.unwrap().len(), 1);

    // bob with alice's passkey: refused; with his own: the proof.
    let (cid, challenge) = challenge_for(&mut bob, &pid, Delivery::Direct).await;
    let status = bob
        .decide(decide_with(
            &pid,
            Delivery::Direct,
            Some(wire(&cid, alice_key.assert(&challenge))),
        ))
        .await
        .unwrap_err();
    assert_eq!(reason_of(&status), "not_your_passkey");
    assert_eq!(ledger.quorum_decisions(&pid).await.unwrap().len(), 1);
    let (cid, challenge) = challenge_for(&mut bob, &pid, Delivery::Direct).await;
    let issued = bob
        .decide(decide_with(
            &pid,
            Delivery::Direct,
            Some(wire(&cid, bob_key.assert(&challenge))),
        ))
        .await
        .unwrap()
        .into_inner();
    let claims = claims_of(&issued.proof);
    assert_eq!(claims["amr"], serde_json::json!(["passkey-uv"]));
    assert_eq!(
        claims["pkh"],
        hex::encode(Sha256::digest(bob_key.credential_id()))
    );
    assert_eq!(
        claims["prov"],
        format!("human:quorum:{principal}/alice,{principal}/bob")
    );
    let stored = ledger.passkey_assertion_for(&pid).await.unwrap().unwrap();
    assert_eq!(stored.assertion.credential_id, id_of(&bob_key));
    let recorded = ledger.quorum_decisions(&pid).await.unwrap();
    assert_eq!(recorded[1].passkey, Some(id_of(&bob_key)));
    // Each approver's assertion is stored as theirs, for the audit.
    let mut stored: Vec<(String, String)> = ledger
        .quorum_passkey_assertions()
        .await
        .unwrap()
        .into_iter()
        .map(|q| (q.approver, q.stored.assertion.credential_id))
        .collect();
    stored.sort();
    assert_eq!(
        stored,
        [
            (format!("{principal}/alice"), id_of(&alice_key)),
            (format!("{principal}/bob"), id_of(&bob_key)),
        ]
    );
    assert!(ledger.verify_chain().await.unwrap().is_intact());
}

#[tokio::test]
async fn one_person_with_one_passkey_cannot_meet_a_two_approver_quorum() {
    let signer = TestSigner::start_configured(&registry(), None, REQUIRED)
        .await
        .unwrap();
    let principal = signer.principal().to_owned();
    let ledger = signer.state().ledger().clone();
    let (mut alice, mut bob) = (named(&signer, "alice").await, named(&signer, "bob").await);
    // One person, one authenticator: alice's passkey, enrolled with alice's code.
    let mut person = soft(1);
    enrol(&signer, &mut alice, "alice", &person).await;
    let pid = propose(&mut head(&signer).await).await.id;
    let (cid, challenge) = challenge_for(&mut alice, &pid, Delivery::Direct).await;
    alice
        .decide(decide_with(
            &pid,
            Delivery::Direct,
            Some(wire(&cid, person.assert(&challenge))),
        ))
        .await
        .unwrap();
    assert_eq!(ledger.quorum_decisions(&pid).await.unwrap().len(), 1);

    // Through bob's certificate: bob has no passkey, so no challenge...
    refused(
        bob.begin_decision(BeginDecisionRequest {
            proposal_id: pid.clone(),
            delivery: Delivery::Direct.into(),
            execute_in_session: String::new(),
        })
        .await,
        Code::FailedPrecondition,
        "no_passkey_enrolled",
    );
    // ...and alice's passkey over a challenge drawn by alice's certificate,
    // presented through bob's, is refused: the challenge is alice's.
    let (cid, challenge) = challenge_for(&mut alice, &pid, Delivery::Direct).await;
    refused(
        bob.decide(decide_with(
            &pid,
            Delivery::Direct,
            Some(wire(&cid, person.assert(&challenge))),
        ))
        .await,
        Code::FailedPrecondition,
        "challenge_unknown",
    );

    // Enrolling a credential as bob: without a code, refused; with a code
    // drawn for alice, presented through bob's certificate, refused.
    let second = soft(2);
    refused(
        enrol_with(&mut bob, &second, "").await,
        Code::FailedPrecondition,
        "enrolment_code_required",
    );
    let alices_code = code_for(&signer, "alice").await;
    refused(
        enrol_with(&mut bob, &second, &alices_code).await,
        Code::PermissionDenied,
        "enrolment_code_refused",
    );
    // Nor can bob's certificate enrol the credential alice already has.
    refused(
        enrol_with(&mut bob, &person, &alices_code).await,
        Code::FailedPrecondition,
        "passkey_already_enrolled",
    );
    // The code presented through bob's certificate has leaked: it is
    // spent for alice too.
    refused(
        enrol_with(&mut alice, &second, &alices_code).await,
        Code::PermissionDenied,
        "enrolment_code_refused",
    );
    let listed = bob
        .list_passkeys(ListPasskeysRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(listed.passkeys.is_empty(), "bob sees none: {listed:?}");

    // Nothing was enrolled for bob, no proof exists, the proposal waits.
    let owners: Vec<String> = ledger
        .passkeys(&principal)
        .await
        .unwrap()
        .into_iter()
        .map(|k| k.enrolled_by)
        .collect();
    assert_eq!(owners, [format!("{principal}/alice")]);
    nothing_issued(&signer, &pid).await;
    let decided: Vec<String> = ledger
        .quorum_decisions(&pid)
        .await
        .unwrap()
        .into_iter()
        .map(|d| d.approver)
        .collect();
    assert_eq!(decided, [format!("{principal}/alice")]);
    assert!(ledger.verify_chain().await.unwrap().is_intact());
}

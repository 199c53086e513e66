//! Passkey helpers of the signer's integration tests: a software
//! authenticator for the test origin, the wire form of its assertions,
//! enrolment codes per approver, enrolment and decision challenges.
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

use countersign_identity::ApproverName;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    BeginDecisionRequest, BeginEnrolmentRequest, DecideRequest, Delivery, EnrolRequest,
    PasskeyAssertion, PasskeyView,
};
use countersign_signer::passkeys::code::EnrolmentCodes;
use countersign_signer::testing::TestSigner;
use countersign_webauthn::Assertion;
use countersign_webauthn::testing::SoftAuthenticator;
use time::OffsetDateTime;
use tonic::transport::Channel;

use super::{approve, reason_of};

pub const ORIGIN: &str = "https://console.localhost:7444";
pub const REQUIRED: &str =
    "[passkeys]\nrequired = true\norigins = [\"https://console.localhost:7444\"]\n";

pub fn soft(seed: u8) -> SoftAuthenticator {
    SoftAuthenticator::new(seed, "console.localhost", ORIGIN)
}

pub fn wire(challenge_id: &str, a: Assertion) -> PasskeyAssertion {
    PasskeyAssertion {
        challenge_id: challenge_id.into(),
        credential_id: a.credential_id,
        authenticator_data: a.authenticator_data,
        client_data_json: a.client_data_json,
        signature: a.signature,
    }
}

/// A fresh enrolment code for the unnamed approver certificate (the
/// home's `Role::Approver` client).
pub async fn code(signer: &TestSigner) -> String {
    draw(signer, None).await
}

/// A fresh enrolment code for the named approver `name`.
pub async fn code_for(signer: &TestSigner, name: &str) -> String {
    draw(signer, Some(&ApproverName::parse(name).unwrap())).await
}

async fn draw(signer: &TestSigner, approver: Option<&ApproverName>) -> String {
    EnrolmentCodes::in_ledger(signer.state().ledger().clone())
        .issue(approver, OffsetDateTime::now_utc())
        .await
        .unwrap()
        .0
}

/// Enrols `key` through `approver` with `enrolment_code`: the signer's
/// answer.
pub async fn enrol_with(
    approver: &mut SignerClient<Channel>,
    key: &SoftAuthenticator,
    enrolment_code: &str,
) -> Result<PasskeyView, tonic::Status> {
    let c = approver
        .begin_enrolment(BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    let (attestation_object, client_data_json) = key.register(&c.creation_challenge);
    approver
        .enrol(EnrolRequest {
            challenge_id: c.challenge_id,
            name: "laptop".into(),
            attestation_object,
            client_data_json,
            enrolment_code: enrolment_code.into(),
        })
        .await
        .map(tonic::Response::into_inner)
}

/// Enrols `key` as a passkey of the home's unnamed approver certificate,
/// with a fresh enrolment code drawn for it.
pub async fn enrol_first(
    signer: &TestSigner,
    approver: &mut SignerClient<Channel>,
    key: &SoftAuthenticator,
) {
    enrol_with(approver, key, &code(signer).await)
        .await
        .unwrap();
}

pub fn decide_with(
    id: &str,
    delivery: Delivery,
    passkey: Option<PasskeyAssertion>,
) -> DecideRequest {
    DecideRequest {
        passkey,
        ..approve(id, delivery)
    }
}

pub async fn challenge_for(
    approver: &mut SignerClient<Channel>,
    id: &str,
    delivery: Delivery,
) -> (String, Vec<u8>) {
    let c = approver
        .begin_decision(BeginDecisionRequest {
            proposal_id: id.into(),
            delivery: delivery.into(),
            execute_in_session: String::new(),
        })
        .await
        .unwrap()
        .into_inner();
    assert_eq!(c.rp_id, "console.localhost");
    (c.challenge_id, c.challenge)
}

/// The proposal is still pending and nothing was issued for it.
pub async fn nothing_issued(signer: &TestSigner, id: &str) {
    let ledger = signer.state().ledger();
    let record = ledger.proposal(id).await.unwrap().unwrap();
    assert_eq!(record.status.as_str(), "pending");
    assert!(record.issuance.is_none());
    assert!(ledger.passkey_assertion_for(id).await.unwrap().is_none());
}

/// The call was refused with `code` and the reason code `reason`.
pub fn refused<T: std::fmt::Debug>(
    result: Result<T, tonic::Status>,
    code: tonic::Code,
    reason: &str,
) {
    let status = result.unwrap_err();
    assert_eq!(
        (status.code(), reason_of(&status).as_str()),
        (code, reason),
        "{status:?}"
    );
}

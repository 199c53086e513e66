//! Passkey helpers of the signer's integration tests: a software
//! authenticator for the test origin, the wire form of its assertions,
//! enrolment codes, the first enrolment and decision challenges.
#![allow(clippy::unwrap_used, dead_code, unreachable_pub)]

use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    BeginDecisionRequest, BeginEnrolmentRequest, DecideRequest, Delivery, EnrolRequest,
    PasskeyAssertion,
};
use countersign_signer::passkeys::code::EnrolmentCodes;
use countersign_signer::testing::TestSigner;
use countersign_webauthn::Assertion;
use countersign_webauthn::testing::SoftAuthenticator;
use time::OffsetDateTime;
use tonic::transport::Channel;

use super::approve;

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

pub fn code(signer: &TestSigner) -> String {
    EnrolmentCodes::in_dir(&signer.home().signer_dir())
        .issue(OffsetDateTime::now_utc())
        .unwrap()
        .0
}

/// Enrols `key` as the first passkey, with a fresh enrolment code.
pub async fn enrol_first(
    signer: &TestSigner,
    approver: &mut SignerClient<Channel>,
    key: &SoftAuthenticator,
) {
    let c = approver
        .begin_enrolment(BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    assert!(c.needs_enrolment_code && c.authorization_challenge.is_empty());
    let (attestation_object, client_data_json) = key.register(&c.creation_challenge);
    approver
        .enrol(EnrolRequest {
            challenge_id: c.challenge_id,
            name: "laptop".into(),
            attestation_object,
            client_data_json,
            enrolment_code: code(signer),
            authorization: None,
        })
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

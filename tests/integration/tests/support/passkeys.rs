//! Passkeys for tests that drive the signer's approver API directly: a
//! named approver's client, a passkey enrolled with a one-time code, and
//! an assertion on the wire.

use countersign_identity::ApproverName;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{BeginEnrolmentRequest, EnrolRequest, PasskeyAssertion};
use countersign_signer::passkeys::code::EnrolmentCodes;
use countersign_signer::testing::TestSigner;
use countersign_webauthn::testing::SoftAuthenticator;
use time::OffsetDateTime;
use tonic::transport::Channel;

/// A client with the named approver certificate `name` of the signer's principal.
pub async fn named(signer: &TestSigner, name: &str) -> SignerClient<Channel> {
    signer.named_approver(name).await.unwrap()
}

/// Enrols `key` as the passkey `name` of `client`'s approver (`approver`:
/// its name for a named approver, `None` for the principal's own), with
/// the one-time code drawn for it.
pub async fn enrol(
    signer: &TestSigner,
    client: &mut SignerClient<Channel>,
    key: &SoftAuthenticator,
    approver: Option<&str>,
    name: &str,
) {
    let c = client
        .begin_enrolment(BeginEnrolmentRequest {})
        .await
        .unwrap()
        .into_inner();
    let (attestation_object, client_data_json) = key.register(&c.creation_challenge);
    let approver = approver.map(|a| ApproverName::parse(a).unwrap());
    let enrolment_code = EnrolmentCodes::in_ledger(signer.state().ledger().clone())
        .issue(approver.as_ref(), OffsetDateTime::now_utc())
        .await
        .unwrap()
        .0;
    client
        .enrol(EnrolRequest {
            challenge_id: c.challenge_id,
            name: name.into(),
            attestation_object,
            client_data_json,
            enrolment_code,
        })
        .await
        .unwrap();
}

/// `a`, answering the challenge `challenge_id`, as the approver API takes it.
pub fn wire(challenge_id: String, a: countersign_webauthn::Assertion) -> PasskeyAssertion {
    PasskeyAssertion {
        challenge_id,
        credential_id: a.credential_id,
        authenticator_data: a.authenticator_data,
        client_data_json: a.client_data_json,
        signature: a.signature,
    }
}

//! Passkey approvals: the signer's policy on them, the challenges it hands
//! out, the enrolment code, and the RPCs that enrol, remove and list
//! passkeys and check the assertion a decision carries.
//!
//! The WebAuthn checks themselves are `countersign-webauthn`'s; the ledger
//! is the credential store (enrolments, removals and every accepted
//! assertion, append-only, written only by the signer) and holds the open
//! challenges and enrolment codes, so that any signer of one PostgreSQL
//! ledger can finish what another began. The write that records an
//! answer takes its challenge and compares the signature counter again
//! under the credential's row lock, in one transaction: no lock of this
//! process is needed, and two signers cannot both accept one challenge or
//! a counter that does not increase. Must not:
//! trust any request field for who is asking (the approver certificate
//! says), accept a challenge twice, or let an agent's user enrol the first
//! passkey (that needs the code only the signer's user can make).

pub mod admin;
mod challenges;
pub mod code;
mod decision;
mod rpc;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_identity::PasskeyConfig;
use countersign_ledger::{AssertionPurpose, PasskeyAssertionRecord, PasskeyRecord};
use countersign_proto::v1 as wire;
use countersign_webauthn::{Assertion, CosePublicKey, Credential, RelyingParty, verify_assertion};

pub(crate) use challenges::{Challenges, Open, Purpose};
pub(crate) use decision::{Decider, VerifiedDecision};
pub(crate) use rpc::challenge_used;

use crate::convert::format_time;
use crate::error::RpcError;

/// Whether and where passkeys are checked, from `[passkeys]`.
#[derive(Debug, Clone)]
pub struct PasskeyPolicy {
    /// Every approval needs a passkey.
    pub(crate) required: bool,
    pub(crate) rp: RelyingParty,
}

impl PasskeyPolicy {
    /// The policy a `[passkeys]` section configures.
    pub fn from_config(config: &PasskeyConfig) -> PasskeyPolicy {
        PasskeyPolicy {
            required: config.required,
            rp: RelyingParty {
                rp_id: config.rp_id.clone(),
                origins: config.origins.clone(),
            },
        }
    }
}

/// An assertion from the wire, decoded, with the challenge id it answers.
pub(crate) fn assertion_from_wire(
    field: &'static str,
    wire: wire::PasskeyAssertion,
) -> Result<(String, Assertion), RpcError> {
    let nonempty = |name: &'static str, bytes: Vec<u8>| {
        if bytes.is_empty() {
            Err(RpcError::InvalidField {
                field,
                reason: format!("{name} is empty"),
            })
        } else {
            Ok(bytes)
        }
    };
    if wire.challenge_id.is_empty() || wire.challenge_id.len() > 64 {
        return Err(RpcError::InvalidField {
            field,
            reason: "challenge_id is missing or too long".into(),
        });
    }
    Ok((
        wire.challenge_id,
        Assertion {
            credential_id: nonempty("credential_id", wire.credential_id)?,
            authenticator_data: nonempty("authenticator_data", wire.authenticator_data)?,
            client_data_json: nonempty("client_data_json", wire.client_data_json)?,
            signature: nonempty("signature", wire.signature)?,
        },
    ))
}

/// base64url without padding, as the ledger stores bytes.
pub(crate) fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Checks `assertion` against the active passkey of the principal it
/// names, which `owner` (the presenting certificate's approver path) must
/// have enrolled, with `challenge`, and returns the record to store with
/// what it authorizes. A passkey of the principal that another approver
/// enrolled is `not_your_passkey`; one that is not active here at all,
/// `unknown_passkey`. The ledger write that stores the record takes the
/// challenge and compares the counter again (`challenge_used` maps what it
/// refuses).
#[allow(clippy::too_many_arguments)]
pub(crate) fn check_assertion(
    active: &[PasskeyRecord],
    owner: &str,
    rp: &RelyingParty,
    assertion: &Assertion,
    open: &Open,
    purpose: AssertionPurpose,
    subject: String,
    delivery: &str,
) -> Result<PasskeyAssertionRecord, RpcError> {
    let id = b64(&assertion.credential_id);
    let record = active
        .iter()
        .find(|p| p.credential_id == id)
        .ok_or(RpcError::UnknownPasskey)?;
    if record.enrolled_by != owner {
        return Err(RpcError::NotYourPasskey);
    }
    let credential = credential_of(record)?;
    let verified = verify_assertion(&credential, assertion, rp, &open.challenge)
        .map_err(RpcError::PasskeyRefused)?;
    Ok(PasskeyAssertionRecord {
        credential_id: id,
        purpose,
        subject,
        challenge: b64(&open.challenge),
        challenge_random: b64(&open.random),
        delivery: delivery.to_owned(),
        authenticator_data: b64(&assertion.authenticator_data),
        client_data_json: b64(&assertion.client_data_json),
        signature: b64(&assertion.signature),
        sign_count: verified.new_sign_count(),
    })
}

/// The WebAuthn credential a stored passkey is.
fn credential_of(record: &PasskeyRecord) -> Result<Credential, RpcError> {
    let bytes = |text: &str| {
        URL_SAFE_NO_PAD.decode(text).map_err(|_| {
            RpcError::Internal(format!(
                "stored passkey {} is not base64url",
                record.credential_id
            ))
        })
    };
    let public_key = CosePublicKey::from_cose(&bytes(&record.public_key)?)
        .map_err(|e| RpcError::Internal(format!("stored passkey {}: {e}", record.credential_id)))?;
    Ok(Credential {
        id: bytes(&record.credential_id)?,
        public_key,
        sign_count: record.sign_count,
    })
}

/// The passkeys of a principal that are enrolled and not removed.
pub(crate) fn active(records: Vec<PasskeyRecord>) -> Vec<PasskeyRecord> {
    records
        .into_iter()
        .filter(|p| p.removed_at.is_none())
        .collect()
}

/// The raw credential ids of `records` (for `allowCredentials`).
pub(crate) fn raw_ids(records: &[PasskeyRecord]) -> Vec<Vec<u8>> {
    records
        .iter()
        .filter_map(|p| URL_SAFE_NO_PAD.decode(&p.credential_id).ok())
        .collect()
}

/// A stored passkey as the wire shows it.
pub(crate) fn passkey_view(record: &PasskeyRecord) -> Result<wire::PasskeyView, RpcError> {
    Ok(wire::PasskeyView {
        credential_id: record.credential_id.clone(),
        name: record.name.clone(),
        enrolled_at: format_time(record.enrolled_at)?,
        enrolled_by: record.enrolled_by.clone(),
        authorized_by: record.authorized_by.clone(),
        removed_at: record
            .removed_at
            .map(format_time)
            .transpose()?
            .unwrap_or_default(),
        sign_count: record.sign_count,
    })
}

#![forbid(unsafe_code)]
//! WebAuthn (passkey) checks done by the signer itself: enrolling a
//! credential and verifying an assertion with user verification over a
//! challenge that binds one proposal.
//!
//! Owns: the decision challenge ([`challenge::DecisionChallenge`],
//! [`challenge::ProposalDigest`]),
//! parsing a registration ([`parse_registration`]) and verifying an
//! assertion ([`verify_assertion`]), with ES256 (P-256) and EdDSA (Ed25519)
//! keys checked by `ring`. Must not: keep state (the caller stores the
//! credential, its counter and the challenge, and makes each challenge
//! single-use and short-lived), trust attestation (see below), or panic on
//! any input.
//!
//! # Encodings
//!
//! The proposal digest is
//!
//! ```text
//! SHA-256( "countersign-proposal-digest-v1" 0x00
//!          || for each of operation, arguments_sha256 (lowercase hex),
//!             contract_revision, policy_revision, session,
//!             delivery ("direct" or "handoff"), in this order:
//!               u64 big-endian byte length || UTF-8 bytes )
//! ```
//!
//! and the WebAuthn challenge of a decision is
//!
//! ```text
//! SHA-256( "countersign-webauthn-decision-v1" 0x00 || random (32 bytes) || proposal digest (32 bytes) )
//! ```
//!
//! The browser sends the challenge back base64url-encoded without padding
//! inside clientDataJSON, which the authenticator signs (by hash) with its
//! authenticator data. So a stored assertion shows, to anyone holding the
//! credential's public key, that the authenticator signed that proposal.
//!
//! # What is checked, and what is not
//!
//! Both ceremonies: clientDataJSON parsed strictly (duplicate keys refused),
//! its `type`, the `challenge` (constant-time), `origin` in
//! [`RelyingParty::origins`], no cross-origin frame; the authenticator
//! data's RP ID hash equals SHA-256 of [`RelyingParty::rp_id`]; the user
//! present (UP) and user verified (UV) flags are set. An assertion is also
//! checked for the enrolled credential id, its signature over
//! `authenticator_data || SHA-256(client_data_json)`, and a signature
//! counter that increases whenever either counter is non-zero.
//!
//! Attestation is not checked: only the format `none` (an empty statement)
//! is accepted, so enrolment trusts whoever delivers the registration, not
//! the authenticator's make or model. A virtual authenticator that always
//! claims UV can therefore be enrolled by anyone allowed to enrol; the
//! enrolment path, not this module, must make that hard. The UV flag is
//! the authenticator's claim, nothing more.

mod cbor;
pub mod challenge;
mod cose;
mod data;
mod error;
#[cfg(test)]
mod fixtures;
#[cfg(feature = "testing")]
pub mod testing;
#[cfg(test)]
mod tests;

pub use cose::CosePublicKey;
pub use error::WebAuthnError;

use cbor::Value;
use data::{Ceremony, check_client_data, echo, parse_authenticator_data};
use sha2::{Digest, Sha256};

/// Largest attestation object accepted (with `none`, about 200 bytes).
const MAX_ATTESTATION_OBJECT_BYTES: usize = 16 * 1024;

/// The relying party the signer checks ceremonies against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelyingParty {
    /// The RP ID, a domain such as `localhost` (browsers refuse IP addresses).
    pub rp_id: String,
    /// Exact origins the browser may report, e.g. `https://console.localhost:7444`.
    pub origins: Vec<String>,
}

/// An enrolled credential: public data only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    /// The credential id the authenticator chose.
    pub id: Vec<u8>,
    /// Its public key.
    pub public_key: CosePublicKey,
    /// The last signature counter seen.
    pub sign_count: u32,
}

/// What `navigator.credentials.get` returned, decoded from base64url.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Assertion {
    /// `rawId`.
    pub credential_id: Vec<u8>,
    /// `response.authenticatorData`.
    pub authenticator_data: Vec<u8>,
    /// `response.clientDataJSON`, exactly as the browser produced it.
    pub client_data_json: Vec<u8>,
    /// `response.signature`.
    pub signature: Vec<u8>,
}

/// An assertion that passed every check; only [`verify_assertion`] makes one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Verified {
    new_sign_count: u32,
    user_verified: bool,
}

impl Verified {
    /// The counter to store with the credential in place of the old one.
    pub fn new_sign_count(&self) -> u32 {
        self.new_sign_count
    }

    /// Whether the authenticator claimed user verification (always true:
    /// an assertion without it is refused).
    pub fn user_verified(&self) -> bool {
        self.user_verified
    }
}

/// Checks a registration (`navigator.credentials.create`) made for
/// `expected_challenge` and returns the credential to enrol.
pub fn parse_registration(
    attestation_object: &[u8],
    client_data_json: &[u8],
    rp: &RelyingParty,
    expected_challenge: &[u8],
) -> Result<Credential, WebAuthnError> {
    check_client_data(client_data_json, Ceremony::Create, rp, expected_challenge)?;
    if attestation_object.len() > MAX_ATTESTATION_OBJECT_BYTES {
        return Err(WebAuthnError::Malformed("attestation object too large"));
    }
    let object = cbor::read_exact(attestation_object)?;
    let entries = object
        .as_map()
        .ok_or(WebAuthnError::Malformed("attestation object is not a map"))?;
    let field = |name: &str| {
        entries
            .iter()
            .find(|(key, _)| *key == Value::Text(name))
            .map(|(_, value)| value)
    };
    if entries.len() != 3 {
        return Err(WebAuthnError::Malformed(
            "attestation object needs exactly fmt, attStmt and authData",
        ));
    }
    match field("fmt") {
        Some(Value::Text("none")) => {}
        Some(Value::Text(other)) => return Err(WebAuthnError::UnsupportedAttestation(echo(other))),
        _ => return Err(WebAuthnError::Malformed("attestation object lacks fmt")),
    }
    match field("attStmt") {
        Some(Value::Map(statement)) if statement.is_empty() => {}
        _ => {
            return Err(WebAuthnError::Malformed(
                "attestation statement of none is not {}",
            ));
        }
    }
    let Some(Value::Bytes(auth_data)) = field("authData") else {
        return Err(WebAuthnError::Malformed(
            "attestation object lacks authData",
        ));
    };
    let parsed = parse_authenticator_data(auth_data, Ceremony::Create, rp)?;
    let attested = parsed.attested.ok_or(WebAuthnError::NoCredentialData)?;
    Ok(Credential {
        id: attested.id,
        public_key: attested.public_key,
        sign_count: parsed.sign_count,
    })
}

/// The challenge a clientDataJSON carries (decoded from base64url), read
/// strictly: for an auditor that must find which registration challenge a
/// stored enrolment answered. Checks nothing else.
pub fn client_data_challenge(client_data_json: &[u8]) -> Result<Vec<u8>, WebAuthnError> {
    data::client_data_challenge(client_data_json)
}

/// Verifies an assertion (`navigator.credentials.get`) by `credential` made
/// for `expected_challenge`. The caller stores
/// [`Verified::new_sign_count`] and must not accept the challenge again.
pub fn verify_assertion(
    credential: &Credential,
    assertion: &Assertion,
    rp: &RelyingParty,
    expected_challenge: &[u8],
) -> Result<Verified, WebAuthnError> {
    if assertion.credential_id != credential.id {
        return Err(WebAuthnError::WrongCredential);
    }
    check_client_data(
        &assertion.client_data_json,
        Ceremony::Get,
        rp,
        expected_challenge,
    )?;
    let parsed = parse_authenticator_data(&assertion.authenticator_data, Ceremony::Get, rp)?;
    let client_data_hash = Sha256::digest(&assertion.client_data_json);
    let signed = [assertion.authenticator_data.as_slice(), &client_data_hash].concat();
    credential
        .public_key
        .verify(&signed, &assertion.signature)?;
    let (stored, received) = (credential.sign_count, parsed.sign_count);
    // Authenticators without a counter report 0 every time (passkeys
    // synced between devices do); any non-zero counter must go up.
    if (stored != 0 || received != 0) && received <= stored {
        return Err(WebAuthnError::CounterNotIncreased { stored, received });
    }
    Ok(Verified {
        new_sign_count: received,
        user_verified: true,
    })
}

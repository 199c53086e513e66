//! The decision challenge: what binds a passkey assertion to one proposal.
//!
//! Owns the two hashes whose encodings the module doc (`webauthn/src/lib.rs`)
//! specifies byte for byte; `webauthn/tests/webauthn_fixtures/record.py` computes
//! them independently and the fixture tests compare. Must not change an
//! encoding without changing its version tag.

use sha2::{Digest, Sha256};

/// Domain tag of [`ProposalDigest`].
const PROPOSAL_TAG: &[u8] = b"countersign-proposal-digest-v1\0";
/// Domain tag of [`DecisionChallenge`].
const DECISION_TAG: &[u8] = b"countersign-webauthn-decision-v1\0";
/// Domain tag of [`EnrolmentChallenge`].
const ENROLMENT_TAG: &[u8] = b"countersign-webauthn-enrol-v1\0";
/// Domain tag of [`RemovalChallenge`].
const REMOVAL_TAG: &[u8] = b"countersign-webauthn-remove-v1\0";

/// The facts of a proposal that an approval signs, as the ledger stores them.
#[derive(Debug, Clone, Copy)]
pub struct ProposalFields<'a> {
    /// The operation name from the registry.
    pub operation: &'a str,
    /// SHA-256 of the canonical arguments, lowercase hex as stored.
    pub arguments_sha256: &'a str,
    /// The operation's contract revision.
    pub contract_revision: &'a str,
    /// The policy revision.
    pub policy_revision: &'a str,
    /// The session the proof will be bound to.
    pub session: &'a str,
    /// How the proof is delivered: `direct` or `handoff`.
    pub delivery: &'a str,
}

/// SHA-256 over the length-prefixed [`ProposalFields`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProposalDigest([u8; 32]);

impl ProposalDigest {
    /// The digest of `fields`: SHA-256 of the tag, then each field in
    /// declaration order as its UTF-8 byte length (u64, big-endian) and bytes.
    pub fn of(fields: &ProposalFields<'_>) -> Self {
        let mut hash = Sha256::new();
        hash.update(PROPOSAL_TAG);
        for field in [
            fields.operation,
            fields.arguments_sha256,
            fields.contract_revision,
            fields.policy_revision,
            fields.session,
            fields.delivery,
        ] {
            // usize is at most 64 bits on every target Rust supports.
            hash.update((field.len() as u64).to_be_bytes());
            hash.update(field.as_bytes());
        }
        ProposalDigest(hash.finalize().into())
    }

    /// The 32 digest bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

/// Namespace for deriving the WebAuthn challenge of a decision.
pub enum DecisionChallenge {}

impl DecisionChallenge {
    /// SHA-256 of the tag, the signer's 32 random bytes and the proposal
    /// digest (all fixed length, so plain concatenation is unambiguous).
    pub fn derive(random: [u8; 32], digest: &ProposalDigest) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(DECISION_TAG);
        hash.update(random);
        hash.update(digest.as_bytes());
        hash.finalize().into()
    }
}

/// Namespace for deriving the challenge an enrolled passkey signs to
/// authorize enrolling another one.
pub enum EnrolmentChallenge {}

impl EnrolmentChallenge {
    /// SHA-256 of the tag, the signer's 32 random bytes and the new
    /// passkey's registration challenge (which its clientDataJSON carries),
    /// so the assertion authorizes that registration and no other.
    pub fn derive(random: [u8; 32], creation_challenge: &[u8; 32]) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(ENROLMENT_TAG);
        hash.update(random);
        hash.update(creation_challenge);
        hash.finalize().into()
    }
}

/// Namespace for deriving the challenge that authorizes removing a passkey.
pub enum RemovalChallenge {}

impl RemovalChallenge {
    /// SHA-256 of the tag, the signer's 32 random bytes and SHA-256 of the
    /// id of the passkey to remove.
    pub fn derive(random: [u8; 32], credential_id: &[u8]) -> [u8; 32] {
        let mut hash = Sha256::new();
        hash.update(REMOVAL_TAG);
        hash.update(random);
        hash.update(Sha256::digest(credential_id));
        hash.finalize().into()
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn fields() -> ProposalFields<'static> {
        ProposalFields {
            operation: "deploy.release",
            arguments_sha256: "ab",
            contract_revision: "rev-3",
            policy_revision: "pol-7",
            session: "sess_1",
            delivery: "direct",
        }
    }

    #[test]
    fn every_field_and_boundary_changes_the_digest() {
        let base = ProposalDigest::of(&fields());
        let variants = [
            ProposalFields {
                operation: "deploy.releasf",
                ..fields()
            },
            ProposalFields {
                arguments_sha256: "ac",
                ..fields()
            },
            ProposalFields {
                contract_revision: "rev-4",
                ..fields()
            },
            ProposalFields {
                policy_revision: "pol-8",
                ..fields()
            },
            ProposalFields {
                session: "sess_2",
                ..fields()
            },
            ProposalFields {
                delivery: "handoff",
                ..fields()
            },
            // Moving a byte across a field boundary is a different proposal.
            ProposalFields {
                operation: "deploy.releasea",
                arguments_sha256: "b",
                ..fields()
            },
        ];
        for variant in variants {
            assert_ne!(ProposalDigest::of(&variant), base, "{variant:?}");
        }
    }

    #[test]
    fn challenge_depends_on_random_bytes_and_digest() {
        let digest = ProposalDigest::of(&fields());
        let other = ProposalDigest::of(&ProposalFields {
            session: "sess_2",
            ..fields()
        });
        let challenge = DecisionChallenge::derive([7; 32], &digest);
        assert_eq!(challenge, DecisionChallenge::derive([7; 32], &digest));
        assert_ne!(challenge, DecisionChallenge::derive([8; 32], &digest));
        assert_ne!(challenge, DecisionChallenge::derive([7; 32], &other));
    }

    #[test]
    fn the_three_ceremonies_never_share_a_challenge() {
        let digest = ProposalDigest::of(&fields());
        let decision = DecisionChallenge::derive([7; 32], &digest);
        let enrol = EnrolmentChallenge::derive([7; 32], digest.as_bytes());
        let remove = RemovalChallenge::derive([7; 32], digest.as_bytes());
        assert_ne!(decision, enrol);
        assert_ne!(enrol, remove);
        assert_ne!(decision, remove);
        assert_ne!(enrol, EnrolmentChallenge::derive([7; 32], &[0; 32]));
        assert_ne!(remove, RemovalChallenge::derive([7; 32], b"other"));
    }
}

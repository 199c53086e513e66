//! Wire types of the signer's gRPC API (`proto/countersign/v1/signer.proto`).
//!
//! The code in `gen/` is generated and committed; `tests/generated_code_is_current.rs`
//! fails when it drifts from the `.proto` files. Conversion between these
//! wire types and domain types happens in the crates that own the domain
//! types, never here. Messages that carry a proof have a hand-written `Debug`
//! that prints only the proof's hash.
#![forbid(unsafe_code)]

/// `countersign.v1`: the signer service, its client and its messages.
#[allow(unreachable_pub, clippy::all, clippy::pedantic, missing_docs)]
pub mod v1 {
    include!("gen/countersign.v1.rs");

    use std::fmt;

    impl fmt::Debug for DecideResponse {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("DecideResponse")
                .field("proposal", &self.proposal)
                .field("proof", &redacted(&self.proof))
                .field("proof_sha256", &self.proof_sha256)
                .field("expires_at", &self.expires_at)
                .field("created_rule_id", &self.created_rule_id)
                .finish()
        }
    }

    impl fmt::Debug for ClaimHandoffResponse {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("ClaimHandoffResponse")
                .field("proof", &redacted(&self.proof))
                .field("proof_sha256", &self.proof_sha256)
                .finish()
        }
    }

    impl fmt::Debug for ReissueForReconcileResponse {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.debug_struct("ReissueForReconcileResponse")
                .field("proof", &redacted(&self.proof))
                .field("proof_sha256", &self.proof_sha256)
                .field("expires_at", &self.expires_at)
                .finish()
        }
    }

    fn redacted(proof: &str) -> &'static str {
        if proof.is_empty() {
            "<none>"
        } else {
            "<redacted>"
        }
    }
}

/// The encoded `FileDescriptorSet` of `countersign/v1/signer.proto`, which the
/// signer serves through gRPC server reflection. Committed beside the
/// generated code and checked for drift by the same test.
pub const FILE_DESCRIPTOR_SET: &[u8] = include_bytes!("gen/countersign.v1.fds.bin");

/// The reason codes of the signer's refusals: stable snake_case names that
/// travel with a refusal from the signer to every head unchanged.
///
/// The signer sets one on every error status, in the gRPC metadata entry
/// [`reason::METADATA_KEY`]; `countersign_gate::signer_client` decodes it,
/// once, for every head. A code, once published, keeps its meaning.
pub mod reason {
    /// The metadata key that carries a refusal's reason code.
    pub const METADATA_KEY: &str = "countersign-reason";
    /// The connection carried no client certificate.
    pub const NO_CLIENT_CERTIFICATE: &str = "no_client_certificate";
    /// The client certificate names no countersign identity.
    pub const UNKNOWN_IDENTITY: &str = "unknown_identity";
    /// The caller's role may not call this RPC.
    pub const ROLE_NOT_ALLOWED: &str = "role_not_allowed";
    /// The proposal belongs to another principal.
    pub const NOT_YOUR_PROPOSAL: &str = "not_your_proposal";
    /// No operation of that name is registered.
    pub const UNKNOWN_OPERATION: &str = "unknown_operation";
    /// A request field is malformed.
    pub const INVALID_FIELD: &str = "invalid_field";
    /// The arguments do not satisfy the operation's schema.
    pub const INVALID_ARGUMENTS: &str = "invalid_arguments";
    /// No proposal with this id.
    pub const UNKNOWN_PROPOSAL: &str = "unknown_proposal";
    /// The proposal was already decided.
    pub const NOT_PENDING: &str = "not_pending";
    /// The operation's contract changed since the proposal.
    pub const CONTRACT_CHANGED: &str = "contract_changed";
    /// The signing policy changed since the proposal.
    pub const POLICY_CHANGED: &str = "policy_changed";
    /// The state a proposal's premise read changed since the proposal (at
    /// a decision), or since the approval (at consumption): nothing was
    /// approved or applied; propose again to be shown the state as it is.
    pub const PREMISE_CHANGED: &str = "premise_changed";
    /// The operation's premise command failed (did not start, exited
    /// non-zero, timed out or printed too much): nothing was proposed,
    /// approved or applied, as the premise cannot be established.
    pub const PREMISE_UNAVAILABLE: &str = "premise_unavailable";
    /// No approval waits to be handed over for this proposal.
    pub const NO_LIVE_HANDOFF: &str = "no_live_handoff";
    /// The waiting approval is bound to another session.
    pub const HANDOFF_SESSION_MISMATCH: &str = "handoff_session_mismatch";
    /// The approval waiting for this proposal is held by a head executing
    /// it now (retry for its recorded result).
    pub const HANDOFF_IN_USE: &str = "handoff_in_use";
    /// A release of a handoff that no head holds.
    pub const HANDOFF_NOT_CLAIMED: &str = "handoff_not_claimed";
    /// An approval recorded for a handoff that the signer cannot hand over
    /// after a restart: no key it holds reproduces the issued proof (its
    /// key was retired, say). Nothing can be claimed; revoke it and
    /// propose again.
    pub const HANDOFF_UNRECOVERABLE: &str = "handoff_unrecoverable";
    /// The proposal has no execution awaiting a person's resolution.
    pub const NOT_UNCERTAIN: &str = "not_uncertain";
    /// The execution's head may still be running the effect.
    pub const STILL_RUNNING: &str = "still_running";
    /// A re-issue for reconcile of a proposal whose operation (as the
    /// registry says now) is not a `webhook` effect.
    pub const NOT_A_WEBHOOK: &str = "not_a_webhook";
    /// A re-issue for reconcile of a proposal whose operation is not
    /// declared `replay_safe`.
    pub const NOT_REPLAY_SAFE: &str = "not_replay_safe";
    /// A re-issue for reconcile after its window closed: the original
    /// proof's expiry plus the operation's execution lease plus one proof
    /// lifetime. Nothing was signed; a person resolves the execution.
    pub const REISSUE_WINDOW_CLOSED: &str = "reissue_window_closed";
    /// A re-issue for reconcile of a proposal whose proof was re-issued as
    /// often as the signer allows. Nothing was signed.
    pub const REISSUE_LIMIT_REACHED: &str = "reissue_limit_reached";
    /// A re-issue for reconcile on a SQLite ledger, whose rows the file's
    /// owner can write and so prove nothing the signer recorded. Nothing
    /// was signed; a person resolves the execution.
    pub const REISSUE_UNAVAILABLE_ON_SQLITE: &str = "reissue_unavailable_on_sqlite";
    /// A fault on the signer's side (not a refusal).
    pub const INTERNAL: &str = "internal";
    /// Approving needs a passkey assertion (the installation's or the
    /// operation's policy), or a proof of an operation that requires one
    /// carries none.
    pub const PASSKEY_REQUIRED: &str = "passkey_required";
    /// The installation has no `[passkeys]` section.
    pub const PASSKEYS_NOT_CONFIGURED: &str = "passkeys_not_configured";
    /// The principal has no active passkey.
    pub const NO_PASSKEY_ENROLLED: &str = "no_passkey_enrolled";
    /// A passkey challenge unknown, expired, already answered or another principal's.
    pub const CHALLENGE_UNKNOWN: &str = "challenge_unknown";
    /// A passkey challenge issued for another decision or change.
    pub const CHALLENGE_MISMATCH: &str = "challenge_mismatch";
    /// An assertion naming no active passkey of the caller's principal.
    pub const UNKNOWN_PASSKEY: &str = "unknown_passkey";
    /// A registration of a passkey already enrolled.
    pub const PASSKEY_ALREADY_ENROLLED: &str = "passkey_already_enrolled";
    /// Every passkey enrolment needs the enrolling approver's enrolment code.
    pub const ENROLMENT_CODE_REQUIRED: &str = "enrolment_code_required";
    /// The enrolment code is wrong, expired, spent or another approver's.
    pub const ENROLMENT_CODE_REFUSED: &str = "enrolment_code_refused";
    /// A removal needs an assertion of one of the approver's own passkeys.
    pub const AUTHORIZATION_REQUIRED: &str = "authorization_required";
    /// An approver's last active passkey is removed only by the administrator.
    pub const LAST_PASSKEY: &str = "last_passkey";
    /// The proposal's operation requires a quorum, and the caller's
    /// approver certificate is not one of its named approvers (an unnamed
    /// approver certificate is never one).
    pub const NOT_A_QUORUM_APPROVER: &str = "not_a_quorum_approver";
    /// This approver already decided this quorum proposal: nobody approves twice.
    pub const ALREADY_APPROVED: &str = "already_approved";
    /// The passkey assertion (or the passkey to remove) is one another
    /// approver enrolled: every passkey check needs the approver's own.
    pub const NOT_YOUR_PASSKEY: &str = "not_your_passkey";
    /// Auto-approval rules are off in the signer's configuration (`[rules]`).
    pub const RULES_DISABLED: &str = "rules_disabled";
    /// A rule definition that is not a rule, or one a rule may not cover.
    pub const INVALID_RULE: &str = "invalid_rule";
    /// No rule with this id for the caller's principal.
    pub const UNKNOWN_RULE: &str = "unknown_rule";
    /// The rule is revoked (nothing more can change it).
    pub const RULE_NOT_LIVE: &str = "rule_not_live";
    /// The rule changed since the version the person looked at.
    pub const RULE_CHANGED: &str = "rule_changed";
    /// The definition is not the one the person confirmed.
    pub const RULE_DEFINITION_CHANGED: &str = "rule_definition_changed";
}

#[cfg(test)]
mod tests {
    use super::v1::{ClaimHandoffResponse, DecideResponse, ReissueForReconcileResponse};

    #[test]
    fn debug_of_proof_carrying_messages_never_prints_the_proof() {
        let secret = "v4.public.c2VjcmV0LXByb29mLWJ5dGVz";
        let decide = DecideResponse {
            proof: secret.into(),
            ..Default::default()
        };
        let claim = ClaimHandoffResponse {
            proof: secret.into(),
            ..Default::default()
        };
        let reissue = ReissueForReconcileResponse {
            proof: secret.into(),
            ..Default::default()
        };
        for printed in [
            format!("{decide:?}"),
            format!("{claim:?}"),
            format!("{reissue:?}"),
            format!("{decide:#?}"),
        ] {
            assert!(!printed.contains(secret), "{printed}");
            assert!(printed.contains("<redacted>"), "{printed}");
        }
    }
}

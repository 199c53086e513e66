//! The one place an [`RpcError`] becomes a gRPC [`Status`].
//!
//! Refusals get a specific code and message; internal faults get
//! `INTERNAL` with the generic message "internal error", and their detail
//! goes to the log only. Every status carries the error's stable reason
//! code ([`RpcError::reason`]) in the metadata entry
//! `countersign_proto::reason::METADATA_KEY`, so a refusal keeps its
//! identity on every head. Nothing that reaches this function holds a proof.

use countersign_proto::reason::{self, Reason};
use tonic::metadata::MetadataValue;
use tonic::{Code, Status};

use crate::error::RpcError;

/// Maps an RPC error to the status the client sees: the gRPC code is the
/// catalogue's for the error's reason.
pub(crate) fn to_status(err: RpcError) -> Status {
    let reason = err.reason();
    if let RpcError::Internal(detail) = &err {
        tracing::error!(%detail, "internal error");
        return with_reason(Status::internal("internal error"), reason);
    }
    let code = grpc_code(reason.status());
    tracing::info!(code = ?code, reason = reason.code(), message = %err, "request refused");
    with_reason(Status::new(code, err.to_string()), reason)
}

/// The tonic code of a catalogue status.
fn grpc_code(status: countersign_proto::reason::Status) -> Code {
    use countersign_proto::reason::Status as S;
    match status {
        S::InvalidArgument => Code::InvalidArgument,
        S::Unauthenticated => Code::Unauthenticated,
        S::PermissionDenied => Code::PermissionDenied,
        S::NotFound => Code::NotFound,
        S::FailedPrecondition => Code::FailedPrecondition,
        S::Unavailable => Code::Unavailable,
        S::Internal => Code::Internal,
    }
}

fn with_reason(mut status: Status, reason: Reason) -> Status {
    status.metadata_mut().insert(
        reason::METADATA_KEY,
        MetadataValue::from_static(reason.code()),
    );
    status
}

#[cfg(test)]
mod tests {
    use super::*;
    use countersign_identity::Role;

    #[test]
    fn internal_detail_never_reaches_the_client() {
        let status = to_status(RpcError::Internal("db at /secret/path failed".into()));
        assert_eq!(status.code(), Code::Internal);
        assert_eq!(status.message(), "internal error");
    }

    /// One of each variant; `index` fails to compile when a variant is added
    /// without a code here.
    fn every_variant() -> Vec<(RpcError, &'static str)> {
        use countersign_identity::IdentityError;
        use countersign_registry::ArgumentsError;
        let all = vec![
            (RpcError::NoClientCertificate, "no_client_certificate"),
            (
                RpcError::PeerIdentity(IdentityError::NoHome),
                "unknown_identity",
            ),
            (
                RpcError::RoleNotAllowed {
                    role: Role::Head,
                    rpc: "Decide",
                },
                "role_not_allowed",
            ),
            (
                RpcError::UnnamedApprover("SetPushDevices"),
                "unnamed_approver",
            ),
            (RpcError::NotYourProposal, "not_your_proposal"),
            (RpcError::UnknownOperation("x".into()), "unknown_operation"),
            (
                RpcError::InvalidField {
                    field: "f",
                    reason: "r".into(),
                },
                "invalid_field",
            ),
            (
                RpcError::InvalidArguments(ArgumentsError::Schema(vec![])),
                "invalid_arguments",
            ),
            (RpcError::UnknownProposal("p".into()), "unknown_proposal"),
            (
                RpcError::NotPending {
                    id: "p".into(),
                    status: "denied".into(),
                },
                "not_pending",
            ),
            (
                RpcError::ProposalExpired {
                    id: "p".into(),
                    closed_at: "2026-12-04T10:00:00Z".into(),
                },
                "expired",
            ),
            (RpcError::ContractChanged("op".into()), "contract_changed"),
            (RpcError::PolicyChanged, "policy_changed"),
            (
                RpcError::ForbiddenByPolicy {
                    id: "p".into(),
                    policies: "a".into(),
                },
                "forbidden_by_policy",
            ),
            (
                RpcError::PolicyUnavailable("x".into()),
                "policy_unavailable",
            ),
            (RpcError::NotRepresentable("x".into()), "not_representable"),
            (RpcError::PremiseChanged("s".into()), "premise_changed"),
            (
                RpcError::PremiseUnavailable("s".into()),
                "premise_unavailable",
            ),
            (RpcError::NoLiveHandoff, "no_live_handoff"),
            (RpcError::HandoffSessionMismatch, "handoff_session_mismatch"),
            (RpcError::HandoffNotClaimed, "handoff_not_claimed"),
            (RpcError::HandoffInUse("p".into()), "handoff_in_use"),
            (
                RpcError::HandoffUnrecoverable("p".into()),
                "handoff_unrecoverable",
            ),
            (RpcError::NotUncertain("p".into()), "not_uncertain"),
            (
                RpcError::StillRunning {
                    id: "p".into(),
                    until: "t".into(),
                },
                "still_running",
            ),
            (RpcError::NotAWebhook("op".into()), "not_a_webhook"),
            (
                RpcError::ProofNotSpent {
                    id: "p".into(),
                    why: "w".into(),
                },
                "proof_not_spent",
            ),
            (RpcError::NotReplaySafe("op".into()), "not_replay_safe"),
            (
                RpcError::ReissueWindowClosed {
                    id: "p".into(),
                    closed_at: "t".into(),
                },
                "reissue_window_closed",
            ),
            (
                RpcError::ReissueLimitReached {
                    id: "p".into(),
                    count: 3,
                },
                "reissue_limit_reached",
            ),
            (
                RpcError::ReissueUnavailableOnSqlite,
                "reissue_unavailable_on_sqlite",
            ),
            (RpcError::Internal("x".into()), "internal"),
            (RpcError::PasskeyRequired, "passkey_required"),
            (RpcError::PasskeysNotConfigured, "passkeys_not_configured"),
            (RpcError::NoPasskeyEnrolled, "no_passkey_enrolled"),
            (RpcError::ChallengeUnknown, "challenge_unknown"),
            (RpcError::ChallengeMismatch, "challenge_mismatch"),
            (
                RpcError::PasskeyRefused(countersign_webauthn::WebAuthnError::NoUserVerification),
                "webauthn_no_user_verification",
            ),
            (RpcError::UnknownPasskey, "unknown_passkey"),
            (RpcError::PasskeyAlreadyEnrolled, "passkey_already_enrolled"),
            (RpcError::EnrolmentCodeRequired, "enrolment_code_required"),
            (RpcError::EnrolmentCodeRefused, "enrolment_code_refused"),
            (RpcError::AuthorizationRequired, "authorization_required"),
            (RpcError::LastPasskey, "last_passkey"),
            (
                RpcError::NotAQuorumApprover("p".into()),
                "not_a_quorum_approver",
            ),
            (RpcError::AlreadyApproved("p".into()), "already_approved"),
            (RpcError::NotYourPasskey, "not_your_passkey"),
            (RpcError::RulesDisabled, "rules_disabled"),
            (
                RpcError::InvalidRule(countersign_registry::rule::RuleError::Expiry),
                "invalid_rule",
            ),
            (RpcError::UnknownRule("r".into()), "unknown_rule"),
            (RpcError::RuleNotLive("r".into()), "rule_not_live"),
            (RpcError::RuleChanged("r".into()), "rule_changed"),
            (RpcError::RuleDefinitionChanged, "rule_definition_changed"),
            (RpcError::TooManyWatchers("head", 256), "too_many_watchers"),
            (RpcError::SignerStopping, "signer_stopping"),
            (
                RpcError::IdempotencyKeyReused {
                    key: "k".into(),
                    id: "p".into(),
                },
                "idempotency_key_reused",
            ),
            (
                RpcError::DeliveryNotOffered {
                    id: "p".into(),
                    kind: "hook",
                    what: "w",
                },
                "delivery_not_offered",
            ),
        ];
        let mut seen: Vec<usize> = all.iter().map(|(e, _)| index(e)).collect();
        seen.sort_unstable();
        assert_eq!(seen, (0..57).collect::<Vec<_>>(), "one sample per variant");
        all
    }

    fn index(e: &RpcError) -> usize {
        match e {
            RpcError::NoClientCertificate => 0,
            RpcError::PeerIdentity(_) => 1,
            RpcError::RoleNotAllowed { .. } => 2,
            RpcError::NotYourProposal => 3,
            RpcError::UnknownOperation(_) => 4,
            RpcError::InvalidField { .. } => 5,
            RpcError::InvalidArguments(_) => 6,
            RpcError::UnknownProposal(_) => 7,
            RpcError::NotPending { .. } => 8,
            RpcError::ContractChanged(_) => 9,
            RpcError::PolicyChanged => 10,
            RpcError::NoLiveHandoff => 11,
            RpcError::HandoffSessionMismatch => 12,
            RpcError::HandoffNotClaimed => 13,
            RpcError::NotUncertain(_) => 14,
            RpcError::StillRunning { .. } => 15,
            RpcError::Internal(_) => 16,
            RpcError::HandoffInUse(_) => 17,
            RpcError::PasskeyRequired => 18,
            RpcError::PasskeysNotConfigured => 19,
            RpcError::NoPasskeyEnrolled => 20,
            RpcError::ChallengeUnknown => 21,
            RpcError::ChallengeMismatch => 22,
            RpcError::PasskeyRefused(_) => 23,
            RpcError::UnknownPasskey => 24,
            RpcError::PasskeyAlreadyEnrolled => 25,
            RpcError::EnrolmentCodeRequired => 26,
            RpcError::EnrolmentCodeRefused => 27,
            RpcError::AuthorizationRequired => 28,
            RpcError::LastPasskey => 29,
            RpcError::NotAWebhook(_) => 30,
            RpcError::NotReplaySafe(_) => 31,
            RpcError::HandoffUnrecoverable(_) => 32,
            RpcError::NotAQuorumApprover(_) => 33,
            RpcError::AlreadyApproved(_) => 34,
            RpcError::NotYourPasskey => 35,
            RpcError::PremiseChanged(_) => 36,
            RpcError::RulesDisabled => 37,
            RpcError::InvalidRule(_) => 38,
            RpcError::UnknownRule(_) => 39,
            RpcError::RuleNotLive(_) => 40,
            RpcError::RuleChanged(_) => 41,
            RpcError::RuleDefinitionChanged => 42,
            RpcError::PremiseUnavailable(_) => 43,
            RpcError::ReissueWindowClosed { .. } => 44,
            RpcError::ReissueLimitReached { .. } => 45,
            RpcError::ReissueUnavailableOnSqlite => 46,
            RpcError::TooManyWatchers(..) => 47,
            RpcError::SignerStopping => 48,
            RpcError::IdempotencyKeyReused { .. } => 49,
            RpcError::ProposalExpired { .. } => 50,
            RpcError::DeliveryNotOffered { .. } => 51,
            RpcError::ProofNotSpent { .. } => 52,
            RpcError::ForbiddenByPolicy { .. } => 53,
            RpcError::PolicyUnavailable(_) => 54,
            RpcError::NotRepresentable(_) => 55,
            RpcError::UnnamedApprover(_) => 56,
        }
    }

    #[test]
    fn every_error_carries_its_own_stable_snake_case_code_on_the_wire() {
        let mut codes = std::collections::BTreeSet::new();
        for (err, expected) in every_variant() {
            let status = to_status(err.clone());
            let sent = status
                .metadata()
                .get(reason::METADATA_KEY)
                .and_then(|v| v.to_str().ok());
            assert_eq!(sent, Some(expected), "{err:?}");
            assert!(
                expected
                    .bytes()
                    .all(|b| b.is_ascii_lowercase() || b == b'_'),
                "{expected}"
            );
            assert!(codes.insert(expected), "{expected} used twice");
        }
    }

    #[test]
    fn role_refusal_names_role_and_rpc() {
        let status = to_status(RpcError::RoleNotAllowed {
            role: Role::Head,
            rpc: "Decide",
        });
        assert_eq!(status.code(), Code::PermissionDenied);
        assert_eq!(status.message(), "role head may not call Decide");
    }
}

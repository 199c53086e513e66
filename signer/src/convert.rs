//! Conversion between wire types (`countersign_proto::v1`) and the signer's
//! domain types: requests are parsed into commands with `TryFrom` (a
//! command that exists is well-formed), ledger records become views.
//!
//! This module checks shapes only (ids, sessions, lengths, enums); it does
//! not consult the registry, the ledger or the caller's identity.

use countersign_ledger::{
    ProposalRecord, ProposalStatus, QuorumDecision, QuorumVerdict, RevokeOutcome, RuleStatus,
};
use countersign_proto::v1 as wire;
use countersign_registry::Quorum;
use countersign_verifier::timestamp;

use crate::error::RpcError;
use crate::keystore::{KeyStatus, PublishedKey};

/// Longest note or reason accepted, in characters.
pub(crate) const MAX_TEXT_CHARS: usize = 2000;
/// Longest operation name accepted, in bytes.
const MAX_OPERATION_BYTES: usize = 128;

pub(crate) use countersign_verifier::{ProposalId, Session};

/// The wire field `proposal_id` as a [`ProposalId`].
pub(crate) fn parse_proposal_id(text: String) -> Result<ProposalId, RpcError> {
    ProposalId::parse(text).map_err(|e| invalid("proposal_id", &e.to_string()))
}

/// The wire field `field` as a [`Session`].
pub(crate) fn parse_session(field: &'static str, text: String) -> Result<Session, RpcError> {
    Session::parse(text).map_err(|e| invalid(field, &e.to_string()))
}

/// A fresh random proposal id.
pub(crate) fn new_proposal_id() -> Result<ProposalId, RpcError> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| RpcError::Internal(format!("random: {e}")))?;
    Ok(ProposalId::from_random(bytes))
}

/// The id of the proposal a head's idempotency key names: derived from
/// the principal, the session and the key (SHA-256, domain-separated), so
/// that a second `Propose` with the same key finds the first one's record
/// by its id, and two principals or sessions never share one.
pub(crate) fn keyed_proposal_id(principal: &str, session: &Session, key: &str) -> ProposalId {
    use sha2::{Digest as _, Sha256};
    let mut hash = Sha256::new();
    for part in [
        "countersign proposal id v1",
        principal,
        session.as_str(),
        key,
    ] {
        hash.update(part.as_bytes());
        hash.update([0u8]);
    }
    let digest = hash.finalize();
    let mut bytes = [0u8; 16];
    bytes.copy_from_slice(&digest[..16]);
    ProposalId::from_random(bytes)
}

/// A validated `Propose` request (the arguments are validated against the
/// operation's schema later, by the registry).
#[derive(Debug)]
pub(crate) struct ProposeCommand {
    pub(crate) operation: String,
    pub(crate) arguments_json: String,
    pub(crate) session: Session,
    pub(crate) note: String,
    /// The head's key for this one proposal, if it gave one (checked like
    /// a session name: 1 to 128 of `[A-Za-z0-9._:-]`).
    pub(crate) idempotency_key: Option<String>,
    /// The head it came through, as the operator's policy sees it.
    pub(crate) head: countersign_policy::Head,
}

impl TryFrom<wire::ProposeRequest> for ProposeCommand {
    type Error = RpcError;
    fn try_from(r: wire::ProposeRequest) -> Result<Self, RpcError> {
        if r.operation.is_empty() || r.operation.len() > MAX_OPERATION_BYTES {
            return Err(invalid("operation", "expected 1 to 128 bytes"));
        }
        let head = countersign_policy::Head::parse(&r.head).ok_or_else(|| {
            invalid(
                "head",
                "names the head the proposal came through: cli, api, mcp, console, hook or gateway",
            )
        })?;
        Ok(ProposeCommand {
            head,
            operation: r.operation,
            arguments_json: r.arguments_json,
            session: parse_session("session", r.session)?,
            note: bounded_text("note", r.note)?,
            idempotency_key: match r.idempotency_key.is_empty() {
                true => None,
                false => Some(parse_session("idempotency_key", r.idempotency_key)?.to_string()),
            },
        })
    }
}

/// How an approved proof reaches its head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Delivery {
    /// Returned to the approver interface.
    Direct,
    /// Kept by the signer for one `ClaimHandoff`.
    Handoff,
}

/// The delivery a request names: direct or handoff, nothing else.
pub(crate) fn parse_delivery(value: i32) -> Result<Delivery, RpcError> {
    match wire::Delivery::try_from(value) {
        Ok(wire::Delivery::Direct) => Ok(Delivery::Direct),
        Ok(wire::Delivery::Handoff) => Ok(Delivery::Handoff),
        _ => Err(invalid(
            "delivery",
            "expected DELIVERY_DIRECT or DELIVERY_HANDOFF",
        )),
    }
}

/// A person's decision on a proposal.
#[derive(Debug)]
pub(crate) enum Decision {
    Deny {
        reason: String,
    },
    Approve {
        delivery: Delivery,
        /// The session the proof is bound to, if not the proposal's own.
        execute_in_session: Option<Session>,
    },
}

/// A validated `Decide` request.
#[derive(Debug)]
pub(crate) struct DecideCommand {
    pub(crate) proposal_id: ProposalId,
    pub(crate) decision: Decision,
    /// Check everything, record and issue nothing.
    pub(crate) dry_run: bool,
    /// An approval's passkey assertion and the challenge id it answers.
    pub(crate) passkey: Option<(String, countersign_webauthn::Assertion)>,
}

impl TryFrom<wire::DecideRequest> for DecideCommand {
    type Error = RpcError;
    fn try_from(r: wire::DecideRequest) -> Result<Self, RpcError> {
        let proposal_id = parse_proposal_id(r.proposal_id)?;
        let decision = if r.approve {
            let delivery = parse_delivery(r.delivery)?;
            // `interface` is deprecated and ignored: it is the caller's
            // claim, and provenance comes from what the signer checked.
            let execute_in_session = if r.execute_in_session.is_empty() {
                None
            } else {
                Some(parse_session("execute_in_session", r.execute_in_session)?)
            };
            Decision::Approve {
                delivery,
                execute_in_session,
            }
        } else {
            let reason = bounded_text("reason", r.reason)?;
            if reason.trim().is_empty() {
                return Err(invalid("reason", "a reason is required to deny"));
            }
            Decision::Deny { reason }
        };
        let passkey = r
            .passkey
            .map(|p| crate::passkeys::assertion_from_wire("passkey", p))
            .transpose()?;
        Ok(DecideCommand {
            proposal_id,
            decision,
            dry_run: r.dry_run,
            passkey,
        })
    }
}

/// A validated `ClaimHandoff` or `ReleaseHandoff` request: a proposal and
/// the caller's session.
#[derive(Debug)]
pub(crate) struct HandoffCommand {
    pub(crate) proposal_id: ProposalId,
    pub(crate) session: Session,
}

impl HandoffCommand {
    fn parse(proposal_id: String, session: String) -> Result<Self, RpcError> {
        Ok(HandoffCommand {
            proposal_id: parse_proposal_id(proposal_id)?,
            session: parse_session("session", session)?,
        })
    }
}

impl TryFrom<wire::ClaimHandoffRequest> for HandoffCommand {
    type Error = RpcError;
    fn try_from(r: wire::ClaimHandoffRequest) -> Result<Self, RpcError> {
        HandoffCommand::parse(r.proposal_id, r.session)
    }
}

impl TryFrom<wire::ReleaseHandoffRequest> for HandoffCommand {
    type Error = RpcError;
    fn try_from(r: wire::ReleaseHandoffRequest) -> Result<Self, RpcError> {
        HandoffCommand::parse(r.proposal_id, r.session)
    }
}

/// A validated `Revoke` request.
#[derive(Debug)]
pub(crate) struct RevokeCommand {
    pub(crate) proposal_id: ProposalId,
    pub(crate) reason: String,
}

impl TryFrom<wire::RevokeRequest> for RevokeCommand {
    type Error = RpcError;
    fn try_from(r: wire::RevokeRequest) -> Result<Self, RpcError> {
        Ok(RevokeCommand {
            proposal_id: parse_proposal_id(r.proposal_id)?,
            reason: bounded_text("reason", r.reason)?,
        })
    }
}

/// The wire form of a proposal's derived status.
pub(crate) fn wire_status(status: ProposalStatus) -> wire::ProposalStatus {
    match status {
        ProposalStatus::Pending => wire::ProposalStatus::Pending,
        ProposalStatus::Denied => wire::ProposalStatus::Denied,
        ProposalStatus::Withdrawn => wire::ProposalStatus::Withdrawn,
        ProposalStatus::Approved => wire::ProposalStatus::Approved,
        ProposalStatus::Revoked => wire::ProposalStatus::Revoked,
        ProposalStatus::Expired => wire::ProposalStatus::Expired,
        ProposalStatus::Applied => wire::ProposalStatus::Applied,
        ProposalStatus::Failed => wire::ProposalStatus::Failed,
        ProposalStatus::Uncertain => wire::ProposalStatus::Uncertain,
    }
}

/// The status a `ListProposals` filter names: `None` (every status) when
/// unspecified, refused when it is no status at all.
pub(crate) fn status_filter(value: i32) -> Result<Option<ProposalStatus>, RpcError> {
    let status = wire::ProposalStatus::try_from(value)
        .map_err(|_| invalid("status", &format!("unknown status {value}")))?;
    Ok(match status {
        wire::ProposalStatus::Unspecified => None,
        wire::ProposalStatus::Pending => Some(ProposalStatus::Pending),
        wire::ProposalStatus::Denied => Some(ProposalStatus::Denied),
        wire::ProposalStatus::Withdrawn => Some(ProposalStatus::Withdrawn),
        wire::ProposalStatus::Approved => Some(ProposalStatus::Approved),
        wire::ProposalStatus::Revoked => Some(ProposalStatus::Revoked),
        wire::ProposalStatus::Expired => Some(ProposalStatus::Expired),
        wire::ProposalStatus::Applied => Some(ProposalStatus::Applied),
        wire::ProposalStatus::Failed => Some(ProposalStatus::Failed),
        wire::ProposalStatus::Uncertain => Some(ProposalStatus::Uncertain),
    })
}

/// The wire form of a quorum approver's recorded decision.
fn wire_verdict(verdict: QuorumVerdict) -> wire::QuorumDecision {
    match verdict {
        QuorumVerdict::Approve => wire::QuorumDecision::Approve,
        QuorumVerdict::Deny => wire::QuorumDecision::Deny,
    }
}

/// The wire form of a stored rule's status at `expired` (whether `now` is
/// past its expiry).
pub(crate) fn wire_rule_status(status: RuleStatus, expired: bool) -> wire::RuleStatus {
    match status {
        RuleStatus::Revoked => wire::RuleStatus::Revoked,
        RuleStatus::Active if expired => wire::RuleStatus::Expired,
        RuleStatus::Active => wire::RuleStatus::Active,
    }
}

/// The wire view of a stored proposal.
pub(crate) fn proposal_view(
    record: &ProposalRecord,
    handoff_waiting: bool,
) -> Result<wire::ProposalView, RpcError> {
    let p = &record.proposal;
    Ok(wire::ProposalView {
        id: p.id.to_string(),
        principal: p.principal.to_string(),
        session: p.session.to_string(),
        operation: p.operation.clone(),
        arguments_json: p.arguments_json.clone(),
        arguments_sha256: p.arguments_sha256.clone(),
        contract_revision: p.contract_revision.clone(),
        policy_revision: p.policy_revision.clone(),
        note: p.note.clone(),
        preview: p.preview.clone(),
        status: wire_status(record.status).into(),
        created_at: format_time(p.created_at)?,
        reason: record.reason.clone().unwrap_or_default(),
        handoff_waiting,
        expires_at: match &record.issuance {
            Some(issuance) => format_time(issuance.expires_at)?,
            None => String::new(),
        },
        provenance: record
            .issuance
            .as_ref()
            .map(|i| i.provenance.clone())
            .unwrap_or_default(),
        // Set by the service, which knows the passkey policy, the quorum
        // and the registry (`offer::describe`).
        passkey_required: false,
        quorum: None,
        action: None,
        risk: String::new(),
        effect_kind: String::new(),
        deliveries: wire::Deliveries::Unspecified.into(),
        decide_by: p
            .decide_by
            .map(format_time)
            .transpose()?
            .unwrap_or_default(),
        policy_verdict: p
            .policy
            .as_ref()
            .and_then(|policy| policy.binding.as_ref())
            .map(|binding| wire::PolicyVerdictView {
                verdict: binding.verdict.clone(),
                policies: binding.policies.clone(),
                set_sha256: binding.set.clone(),
            }),
    })
}

/// The wire view of a quorum and the decisions recorded so far (approver
/// paths `<principal>/<name>` are shown by name).
pub(crate) fn quorum_view(
    quorum: &Quorum,
    decisions: &[QuorumDecision],
) -> Result<wire::QuorumView, RpcError> {
    let decisions = decisions
        .iter()
        .map(|d| {
            Ok(wire::QuorumDecisionView {
                approver: d
                    .approver
                    .rsplit_once('/')
                    .map_or(d.approver.as_str(), |(_, name)| name)
                    .to_owned(),
                decision: wire_verdict(d.verdict).into(),
                decided_at: format_time(d.decided_at)?,
                reason: d.reason.clone().unwrap_or_default(),
            })
        })
        .collect::<Result<Vec<_>, RpcError>>()?;
    Ok(wire::QuorumView {
        required: quorum.required(),
        approvers: quorum
            .approvers()
            .iter()
            .map(|n| n.as_str().to_owned())
            .collect(),
        decisions,
    })
}

/// The wire form of a ledger revocation outcome.
pub(crate) fn revoke_outcome(outcome: RevokeOutcome) -> wire::RevokeOutcome {
    match outcome {
        RevokeOutcome::Revoked => wire::RevokeOutcome::Revoked,
        RevokeOutcome::AlreadyUsed => wire::RevokeOutcome::AlreadyUsed,
        RevokeOutcome::NothingToRevoke => wire::RevokeOutcome::NothingToRevoke,
    }
}

/// `YYYY-MM-DDTHH:MM:SSZ`.
pub(crate) fn format_time(t: time::OffsetDateTime) -> Result<String, RpcError> {
    timestamp::format(t).map_err(|e| RpcError::Internal(format!("timestamp: {e}")))
}

fn bounded_text(field: &'static str, text: String) -> Result<String, RpcError> {
    if text.chars().count() > MAX_TEXT_CHARS {
        return Err(invalid(field, "longer than 2000 characters"));
    }
    Ok(text)
}

fn invalid(field: &'static str, reason: &str) -> RpcError {
    RpcError::InvalidField {
        field,
        reason: reason.to_owned(),
    }
}

/// A published key on the wire: id, 32 public bytes and its status.
pub(crate) fn published_key(key: &PublishedKey) -> wire::VerifyingKey {
    let status = match key.status {
        KeyStatus::Active => wire::KeyStatus::Active,
        KeyStatus::Verifying => wire::KeyStatus::Verifying,
        // Never published: `KeyStore` leaves retired keys out.
        KeyStatus::Retired => wire::KeyStatus::Unspecified,
    };
    wire::VerifyingKey {
        key_id: key.key_id.clone(),
        public_key: key.key.to_bytes().to_vec(),
        status: status as i32,
    }
}

/// The wire view of a proposal's action.
pub(crate) fn action_view(action: countersign_registry::action::Action) -> wire::ActionView {
    wire::ActionView {
        summary: action.summary,
        parts: action
            .parts
            .into_iter()
            .map(|p| wire::ActionPart {
                label: p.label,
                text: p.text,
                syntax: p.syntax.as_str().to_owned(),
                model_supplied: p.model_supplied,
            })
            .collect(),
    }
}

/// The wire name of an effect kind's deliveries.
pub(crate) fn wire_deliveries(deliveries: countersign_registry::Deliveries) -> wire::Deliveries {
    match deliveries {
        countersign_registry::Deliveries::AnyHead => wire::Deliveries::AnyHead,
        countersign_registry::Deliveries::HandoffOnly => wire::Deliveries::HandoffOnly,
        countersign_registry::Deliveries::ProposingSession => wire::Deliveries::ProposingSession,
        countersign_registry::Deliveries::NoProof => wire::Deliveries::NoProof,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn parses_ids_and_sessions_strictly() {
        assert!(parse_proposal_id(format!("prop_{}", "a".repeat(32))).is_ok());
        assert!(parse_proposal_id(format!("prop_{}", "A".repeat(32))).is_err());
        assert!(parse_proposal_id("prop_123".to_owned()).is_err());
        assert!(parse_session("session", "agent-1:run.2_x".into()).is_ok());
        assert!(parse_session("session", String::new()).is_err());
        assert!(parse_session("session", "a b".into()).is_err());
        assert!(parse_session("session", "x".repeat(129)).is_err());
    }

    #[test]
    fn deny_needs_a_reason_and_approve_needs_a_delivery() {
        let id = format!("prop_{}", "0".repeat(32));
        let deny = wire::DecideRequest {
            proposal_id: id.clone(),
            approve: false,
            reason: "  ".into(),
            ..Default::default()
        };
        assert_eq!(
            DecideCommand::try_from(deny).unwrap_err(),
            invalid("reason", "a reason is required to deny")
        );
        // No interface: it is ignored.
        let approve = wire::DecideRequest {
            proposal_id: id.clone(),
            approve: true,
            delivery: wire::Delivery::Direct as i32,
            ..Default::default()
        };
        assert!(DecideCommand::try_from(approve).is_ok());
        let approve = wire::DecideRequest {
            proposal_id: id,
            approve: true,
            interface: wire::Interface::Web as i32,
            ..Default::default()
        };
        assert!(matches!(
            DecideCommand::try_from(approve).unwrap_err(),
            RpcError::InvalidField {
                field: "delivery",
                ..
            }
        ));
    }

    #[test]
    fn refuses_long_notes() {
        let r = wire::ProposeRequest {
            operation: "schedule.create".into(),
            arguments_json: "{}".into(),
            session: "s".into(),
            note: "é".repeat(2001),
            idempotency_key: String::new(),
            head: "cli".into(),
        };
        assert!(matches!(
            ProposeCommand::try_from(r).unwrap_err(),
            RpcError::InvalidField { field: "note", .. }
        ));
    }
}

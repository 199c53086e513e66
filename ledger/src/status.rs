//! Deriving a proposal's status from the recorded facts. Pure and
//! backend-independent; a status is never stored. Also the record a write
//! leaves behind, for a caller that would otherwise read it back at once.

use time::OffsetDateTime;

use crate::error::LedgerError;
use crate::timefmt;
use crate::types::{IssuanceRecord, Proposal, ProposalRecord, ProposalStatus};

/// The facts about one proposal that decide its status.
#[derive(Debug, Default)]
pub(crate) struct Facts {
    /// `approve`, `deny` or `withdraw`, if decided.
    pub(crate) decision: Option<String>,
    /// When the proposal's decision window closes, if it has one.
    pub(crate) decide_by: Option<OffsetDateTime>,
    /// The denial reason.
    pub(crate) decision_reason: Option<String>,
    /// The issuance's expiry, if issued.
    pub(crate) expires_at: Option<OffsetDateTime>,
    /// The revocation reason, if revoked.
    pub(crate) revocation_reason: Option<String>,
    /// Whether the nonce was consumed (an intent exists).
    pub(crate) consumed: bool,
    /// `applied` or `failed`, if completed.
    pub(crate) completion: Option<String>,
    /// The completion's error.
    pub(crate) completion_error: Option<String>,
    /// Whether its approval created an auto-approval rule (`rule.create`:
    /// approved and done at once, with no proof).
    pub(crate) created_rule: bool,
}

/// The reason an undecided proposal past its decision window reads.
pub(crate) const WINDOW_CLOSED: &str = "no one decided it within its decision window";

/// The status and the reason to show with it, as of `now`.
pub(crate) fn derive(facts: Facts, now: OffsetDateTime) -> (ProposalStatus, Option<String>) {
    match facts.decision.as_deref() {
        None => {
            return match facts.decide_by {
                Some(closes) if now >= closes => {
                    (ProposalStatus::Expired, Some(WINDOW_CLOSED.to_owned()))
                }
                _ => (ProposalStatus::Pending, None),
            };
        }
        Some("deny") => return (ProposalStatus::Denied, facts.decision_reason),
        Some("withdraw") => return (ProposalStatus::Withdrawn, facts.decision_reason),
        Some(_) if facts.created_rule => return (ProposalStatus::Applied, None),
        Some(_) => {}
    }
    match facts.completion.as_deref() {
        Some("applied") => return (ProposalStatus::Applied, None),
        Some(_) => return (ProposalStatus::Failed, facts.completion_error),
        None => {}
    }
    if facts.consumed {
        // Intent recorded, no completion: in flight or interrupted. Nobody
        // can tell which from here, so it is reported as uncertain.
        return (ProposalStatus::Uncertain, None);
    }
    if facts.revocation_reason.is_some() {
        return (ProposalStatus::Revoked, facts.revocation_reason);
    }
    match facts.expires_at {
        Some(exp) if now >= exp => (ProposalStatus::Expired, None),
        _ => (ProposalStatus::Approved, None),
    }
}

impl ProposalRecord {
    /// The record of `proposal` as [`crate::Ledger::insert_proposal`]
    /// commits it: nothing decided, issued or consumed, its time as stored
    /// (whole seconds). The signer approves a new proposal under a rule
    /// from this record before it is committed, to record both at once
    /// ([`crate::Ledger::insert_rule_approved_proposal`]).
    pub fn inserted(proposal: &Proposal) -> ProposalRecord {
        let mut proposal = proposal.clone();
        proposal.created_at = timefmt::stored(proposal.created_at);
        proposal.decide_by = proposal.decide_by.map(timefmt::stored);
        let facts = Facts {
            decide_by: proposal.decide_by,
            ..Facts::default()
        };
        let (status, reason) = derive(facts, timefmt::now());
        ProposalRecord {
            proposal,
            status,
            reason,
            issuance: None,
        }
    }

    /// This pending proposal's record once `issuance` is recorded for it
    /// ([`crate::Ledger::record_approval`] and its kin): what
    /// [`crate::Ledger::proposal`] reads right after that commit, until
    /// something else is recorded (a consumption, a revocation), with its
    /// status derived now. For a caller whose approval has committed:
    /// it builds the record without reading the ledger again.
    /// `NotPending` if this record is not pending, `IssuanceMismatch` if
    /// `issuance` is for another proposal.
    pub fn after_approval(self, issuance: IssuanceRecord) -> Result<ProposalRecord, LedgerError> {
        if self.status != ProposalStatus::Pending {
            return Err(LedgerError::NotPending(self.proposal.id.into()));
        }
        if self.proposal.id != issuance.proposal_id.as_str() {
            return Err(LedgerError::IssuanceMismatch(self.proposal.id.into()));
        }
        let issuance = IssuanceRecord {
            issued_at: timefmt::stored(issuance.issued_at),
            expires_at: timefmt::stored(issuance.expires_at),
            ..issuance
        };
        let facts = Facts {
            decision: Some("approve".into()),
            expires_at: Some(issuance.expires_at),
            ..Facts::default()
        };
        let (status, reason) = derive(facts, timefmt::now());
        Ok(ProposalRecord {
            status,
            reason,
            issuance: Some(issuance),
            ..self
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn expiry_is_strict_and_only_for_unused_proofs() {
        let exp = OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(100);
        let approved = || Facts {
            decision: Some("approve".into()),
            expires_at: Some(exp),
            ..Facts::default()
        };
        let before = exp - time::Duration::seconds(1);
        assert_eq!(derive(approved(), before).0, ProposalStatus::Approved);
        assert_eq!(derive(approved(), exp).0, ProposalStatus::Expired);
        let used = Facts {
            consumed: true,
            ..approved()
        };
        assert_eq!(derive(used, exp).0, ProposalStatus::Uncertain);
        let revoked = Facts {
            revocation_reason: Some("r".into()),
            ..approved()
        };
        assert_eq!(
            derive(revoked, exp),
            (ProposalStatus::Revoked, Some("r".into()))
        );
    }

    #[test]
    fn an_undecided_proposal_expires_when_its_window_closes_and_a_decided_one_never() {
        let closes = OffsetDateTime::UNIX_EPOCH + time::Duration::seconds(100);
        let undecided = || Facts {
            decide_by: Some(closes),
            ..Facts::default()
        };
        let before = closes - time::Duration::seconds(1);
        assert_eq!(derive(undecided(), before), (ProposalStatus::Pending, None));
        assert_eq!(
            derive(undecided(), closes),
            (ProposalStatus::Expired, Some(WINDOW_CLOSED.into()))
        );
        // No window (recorded before windows existed): pending for good.
        assert_eq!(derive(Facts::default(), closes).0, ProposalStatus::Pending);
        // Decided within its window: the window no longer matters.
        let denied = Facts {
            decision: Some("deny".into()),
            decision_reason: Some("no".into()),
            ..undecided()
        };
        assert_eq!(derive(denied, closes).0, ProposalStatus::Denied);
        let approved = Facts {
            decision: Some("approve".into()),
            expires_at: Some(closes + time::Duration::seconds(300)),
            ..undecided()
        };
        assert_eq!(derive(approved, closes).0, ProposalStatus::Approved);
    }
}

//! Quorum decisions: the records of an approver's decision on a proposal
//! whose operation requires M approvals out of N named approvers, and the
//! request to record one. Backend-independent; the SQL is `sql/quorum.rs`.
//!
//! The ledger does not know the registry: the signer says how many
//! approvals the contract requires and which approvers it already counted;
//! the ledger checks, under the proposal's lock, that this is still so
//! (else [`crate::LedgerError::QuorumMoved`], and the signer reads again),
//! that nobody decides twice, and writes the M-th approval's issuance in
//! the same transaction, so that concurrent approvers yield exactly one.

use time::OffsetDateTime;

use crate::passkeys::{PasskeyAssertionRecord, StoredPasskeyAssertion};
use crate::types::IssuanceRecord;

/// What one approver decided.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuorumVerdict {
    /// Approved; counts toward the quorum.
    Approve,
    /// Denied; ends the proposal.
    Deny,
}

impl QuorumVerdict {
    /// `approve` or `deny`, as stored.
    pub fn as_str(self) -> &'static str {
        match self {
            QuorumVerdict::Approve => "approve",
            QuorumVerdict::Deny => "deny",
        }
    }
}

/// One approver's recorded decision on a quorum proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QuorumDecision {
    /// `<principal>/<name>`: the named approver certificate that decided.
    pub approver: String,
    /// Its place among the proposal's decisions, from 1.
    pub seq: u32,
    /// The quorum's required count as the signer read it.
    pub required: u32,
    /// Approve or deny.
    pub verdict: QuorumVerdict,
    /// The reason given with a denial.
    pub reason: Option<String>,
    /// The credential of the passkey assertion that authorized an approval.
    pub passkey: Option<String>,
    /// When it was recorded (whole seconds, UTC).
    pub decided_at: OffsetDateTime,
}

/// An approver's approval of a quorum proposal, as the signer asks the
/// ledger to record it.
#[derive(Debug, Clone, Copy)]
pub struct QuorumApproval<'a> {
    /// The proposal approved.
    pub proposal_id: &'a str,
    /// The proposal's principal (from the approver's certificate).
    pub principal: &'a str,
    /// `<principal>/<name>`.
    pub approver: &'a str,
    /// How many distinct approvals the contract requires (M).
    pub required: u32,
    /// The approvers whose approvals the signer counted before this one, in
    /// order: the ledger refuses with `QuorumMoved` if they changed.
    pub prior: &'a [String],
    /// With the M-th approval only: the issuance (the proof signed with
    /// every approver in its provenance), written in the same transaction.
    pub issuance: Option<&'a IssuanceRecord>,
    /// The issued proof is kept for a head to claim (`"delivery":
    /// "handoff"` in its `approved` event).
    pub handoff: bool,
    /// The approver's passkey assertion, when one authorized the approval:
    /// stored as the approver's (`quorum_passkey_assertions`), and with the
    /// M-th approval also with the issuance, as a direct approval's is.
    pub passkey: Option<&'a PasskeyAssertionRecord>,
}

/// What recording a quorum approval did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QuorumOutcome {
    /// The approval was counted; the proposal stays pending with this many
    /// approvals of the required count.
    Counted {
        /// Approvals recorded so far, this one included.
        approvals: u32,
    },
    /// It was the M-th: the approve decision and the issuance were written.
    Issued,
}

/// A quorum approver's stored passkey assertion
/// ([`crate::Ledger::quorum_passkey_assertions`]): the assertion (purpose
/// `decision`, subject the proposal, its challenge derived from the
/// proposal's digest with the proposing session), by `approver`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredQuorumAssertion {
    /// `<principal>/<name>`: the approver whose approval it authorized.
    pub approver: String,
    /// The assertion as stored (its `id` is its place in the table's order).
    pub stored: StoredPasskeyAssertion,
}

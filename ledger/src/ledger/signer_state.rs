//! The signer's open decision state in the [`Ledger`] API (see
//! `sql/challenges.rs`): the passkey challenges it issued and the
//! enrolment codes its administrator drew, kept here rather than in one
//! signer's memory or files so that any signer of this ledger can finish
//! what another began. Forwards each call to the backend; holds no SQL.

use time::OffsetDateTime;

use super::{Backend, Ledger};
use crate::error::LedgerError;
use crate::passkeys::{CodeRedemption, PasskeyChallenge};

/// Held by the process that serves as this ledger's signer
/// ([`Ledger::claim_sole_signer`]); dropping it lets another signer start.
#[derive(Debug)]
pub struct SoleSigner {
    _lock: Option<crate::sqlite::sole_signer::SoleSignerLock>,
}

impl Ledger {
    /// Claim this ledger for a serving signer. SQLite is single-signer: a
    /// second claim, by any process, while the first is held is
    /// `AnotherSigner`. On PostgreSQL any number of signers may serve (their
    /// decision state is in rows they lock), so the claim always succeeds.
    pub fn claim_sole_signer(&self) -> Result<SoleSigner, LedgerError> {
        let lock = match &self.backend {
            Backend::Sqlite(b) => Some(b.claim_sole_signer()?),
            Backend::Postgres(_) => None,
        };
        Ok(SoleSigner { _lock: lock })
    }

    /// Store a challenge the signer issued (and drop every expired one).
    /// The write that records its answer ([`Ledger::record_passkey_approval`],
    /// [`Ledger::enrol_passkey`], [`Ledger::remove_passkey`], a quorum
    /// approval) takes it in its own transaction, and fails with
    /// `ChallengeUsed` if it is gone or expired by then.
    pub async fn issue_passkey_challenge(
        &self,
        challenge: &PasskeyChallenge,
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.issue_passkey_challenge(challenge).await)
    }

    /// The open challenge `id`, expired or not; `None` if it was never
    /// issued, was answered, discarded or dropped as expired.
    pub async fn passkey_challenge(
        &self,
        id: &str,
    ) -> Result<Option<PasskeyChallenge>, LedgerError> {
        dispatch!(self, b => b.passkey_challenge(id).await)
    }

    /// Forget the challenge `id` (refused, or its answer failed before it
    /// was recorded). Nothing happens if it is gone already.
    pub async fn discard_passkey_challenge(&self, id: &str) -> Result<(), LedgerError> {
        dispatch!(self, b => b.discard_passkey_challenge(id).await)
    }

    /// Make `sha256` (the hex SHA-256 of a code shown once to the
    /// administrator) the enrolment code of `approver` (an approver name;
    /// empty for the certificate without a name) until `expires_at`,
    /// replacing any earlier code of that approver.
    pub async fn issue_enrolment_code(
        &self,
        approver: &str,
        sha256: &str,
        expires_at: OffsetDateTime,
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.issue_enrolment_code(approver, sha256, expires_at).await)
    }

    /// Spend `approver`'s enrolment code with the code whose SHA-256 is
    /// `sha256`: accepted if it is that approver's current, unexpired code.
    /// Either way that approver has no code left; a refused code that is
    /// another approver's has leaked and is spent as well.
    pub async fn redeem_enrolment_code(
        &self,
        approver: &str,
        sha256: &str,
    ) -> Result<CodeRedemption, LedgerError> {
        dispatch!(self, b => b.redeem_enrolment_code(approver, sha256).await)
    }
}

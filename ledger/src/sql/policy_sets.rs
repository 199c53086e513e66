//! The operator's Cedar policy sets in the ledger (shared by both
//! backends): the text of each set a signer evaluated a proposal under,
//! by its digest, and a proposal its policy forbids, recorded with its
//! denial in one transaction.
//!
//! Owns: storing a set's text under the SHA-256 hex of that text (insert
//! only; the digest is checked here, so a row can not name other text),
//! reading it back, and the forbidden proposal's two writes. Must not:
//! record a forbidden proposal without its denial, or the reverse.

use countersign_verifier::canonical::sha256_hex;

use super::Store;
use super::signer::{insert_proposal_in, insert_with_reason, lock_undecided};
use crate::error::LedgerError;
use crate::timefmt;
use crate::types::{Proposal, ProposalRecord};

impl Store {
    /// Stores `text` under its digest (SHA-256 hex), unless it is there.
    pub(crate) async fn record_policy_set(&self, text: &str) -> Result<String, LedgerError> {
        let digest = sha256_hex(text.as_bytes());
        let at = timefmt::format(timefmt::now())?;
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "INSERT INTO policy_sets (digest, text, recorded_at) VALUES ($1, $2, $3)
             ON CONFLICT (digest) DO NOTHING",
        )
        .bind(&digest)
        .bind(text)
        .bind(&at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(digest)
    }

    /// The text stored under `digest`, checked against it.
    pub(crate) async fn policy_set(&self, digest: &str) -> Result<Option<String>, LedgerError> {
        let text: Option<String> =
            sqlx::query_scalar("SELECT text FROM policy_sets WHERE digest = $1")
                .bind(digest)
                .fetch_optional(&self.reader)
                .await?;
        match text {
            Some(text) if sha256_hex(text.as_bytes()) != digest => Err(LedgerError::Corrupt(
                format!("policy set {digest} holds other text"),
            )),
            other => Ok(other),
        }
    }

    /// Records `p` and its denial (`reason`, by its principal) in one
    /// write transaction: a proposal the policy forbids is on the record,
    /// and never waits for anybody.
    pub(crate) async fn insert_denied_proposal(
        &self,
        p: &Proposal,
        reason: &str,
    ) -> Result<ProposalRecord, LedgerError> {
        const DENY: &str =
            "INSERT INTO decisions (proposal_id, decision, principal, reason, decided_at)
             VALUES ($1, 'deny', $2, $3, $4)";
        let mut tx = self.write_tx().await?;
        insert_proposal_in(&mut tx, p, &[]).await?;
        lock_undecided(&mut tx, p.id.as_str(), p.principal.as_str()).await?;
        insert_with_reason(
            &mut tx,
            DENY,
            "denied",
            p.id.as_str(),
            p.principal.as_str(),
            reason,
        )
        .await?;
        tx.commit().await?;
        self.proposal(p.id.as_str())
            .await?
            .ok_or_else(|| LedgerError::Corrupt(format!("{} was recorded yet is not read", p.id)))
    }
}

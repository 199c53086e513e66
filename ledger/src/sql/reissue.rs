//! The signer's record of re-issuing a proof for reconcile (shared by both
//! backends): the `proof_reissued` event, written only while the proposal's
//! execution is uncertain, no head may still be running it, and fewer
//! re-issues than the signer's limit are recorded for it.
//!
//! Owns the check and the event, in one write transaction. Must not: store
//! the proof (only its SHA-256), or touch the intent, the consumed nonce or
//! the issuance: the re-issued proof starts no execution, and the intent
//! it lets reconcile complete is the one recorded.

use serde_json::json;
use sqlx::Row as _;

use super::consume::still_running;
use super::locks::lock_proposal_row;
use super::{Store, events};
use crate::error::LedgerError;
use crate::timefmt;
use crate::types::ProofReissue;

impl Store {
    /// Record a re-issue; see [`crate::Ledger::record_reissue`].
    pub(crate) async fn record_reissue(&self, r: &ProofReissue) -> Result<(), LedgerError> {
        let mut tx = self.write_tx().await?;
        lock_proposal_row(&mut tx, &r.proposal_id).await?;
        let intent = sqlx::query(concat!(
            "SELECT t.nonce AS nonce, t.lease_until AS lease_until, t.owner AS owner,
                    t.lease_until > ",
            db_now!(),
            " AS leased, t.principal AS principal,
                    EXISTS (SELECT 1 FROM completions c WHERE c.nonce = t.nonce) AS completed
             FROM intents t WHERE t.proposal_id = $1"
        ))
        .bind(&r.proposal_id)
        .fetch_optional(&mut *tx)
        .await?;
        let not_uncertain = || LedgerError::NotUncertain(r.proposal_id.clone());
        let Some(intent) = intent else {
            return Err(not_uncertain());
        };
        if intent.try_get::<String, _>("nonce")? != r.nonce
            || intent.try_get::<bool, _>("completed")?
        {
            return Err(not_uncertain());
        }
        if still_running(&intent)? {
            return Err(LedgerError::StillRunning(
                r.proposal_id.clone(),
                intent.try_get("lease_until")?,
            ));
        }
        // Counted under the proposal's lock: concurrent re-issues of one
        // proposal are serialized, so the limit is exact.
        let reissued: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM events WHERE proposal_id = $1 AND kind = 'proof_reissued'",
        )
        .bind(&r.proposal_id)
        .fetch_one(&mut *tx)
        .await?;
        if reissued >= i64::from(r.max_reissues) {
            return Err(LedgerError::ReissueLimitReached(
                r.proposal_id.clone(),
                u32::try_from(reissued).unwrap_or(u32::MAX),
            ));
        }
        let at = timefmt::format(timefmt::now())?;
        let details = json!({
            "nonce": r.nonce,
            "proof_sha256": r.proof_sha256,
            "expires_at": timefmt::format(r.expires_at)?,
        });
        let principal: String = intent.try_get("principal")?;
        events::append(
            &mut tx,
            &principal,
            &at,
            "proof_reissued",
            Some(&r.proposal_id),
            &r.actor,
            &details,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

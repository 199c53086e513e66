//! The signer's record of a handoff signed again (shared by both backends):
//! the `resigned_proofs` row and its `proof_resigned` event, written only
//! while the issuance it names is live (issued, not consumed, revoked or
//! expired by the database's clock), was signed by the key the caller says
//! it replaces, and has not been signed again before.
//!
//! Owns the check and the writes, in one write transaction under the
//! proposal's lock, which a consumption takes too: so a consumption and a
//! re-signing of one nonce serialize, and a re-signing after the nonce was
//! consumed is refused. Must not: store the proof (only its SHA-256 and
//! its consume key's digest), or touch the issuance.

use serde_json::json;
use sqlx::Row as _;

use super::locks::lock_proposal_row;
use super::{Store, events};
use crate::error::LedgerError;
use crate::timefmt;
use crate::types::ResignedProof;

impl Store {
    /// Record a re-signed proof; see [`crate::Ledger::record_resigned_proof`].
    pub(crate) async fn record_resigned_proof(
        &self,
        r: &ResignedProof,
        actor: &str,
    ) -> Result<(), LedgerError> {
        let mut tx = self.write_tx().await?;
        lock_proposal_row(&mut tx, &r.proposal_id).await?;
        let row = sqlx::query(concat!(
            "SELECT i.nonce AS nonce, i.principal AS principal, i.key_id AS key_id,
                    i.proof_sha256 AS proof_sha256,
                    i.expires_at <= ",
            db_now!(),
            " AS expired,
                    EXISTS (SELECT 1 FROM revocations v WHERE v.proposal_id = i.proposal_id)
                        AS revoked,
                    EXISTS (SELECT 1 FROM consumed_nonces n WHERE n.nonce = i.nonce)
                        AS consumed,
                    EXISTS (SELECT 1 FROM resigned_proofs s WHERE s.nonce = i.nonce)
                        AS resigned
             FROM issuances i WHERE i.proposal_id = $1"
        ))
        .bind(&r.proposal_id)
        .fetch_optional(&mut *tx)
        .await?;
        let not_live = || LedgerError::NotPending(r.proposal_id.clone());
        let Some(row) = row else {
            return Err(not_live());
        };
        if row.try_get::<String, _>("nonce")? != r.nonce
            || row.try_get::<Option<String>, _>("key_id")?.as_deref()
                != Some(r.replaces_key_id.as_str())
            || row.try_get::<String, _>("proof_sha256")? == r.proof_sha256
        {
            return Err(LedgerError::IssuanceMismatch(r.proposal_id.clone()));
        }
        if row.try_get::<bool, _>("resigned")? {
            return Err(LedgerError::AlreadyResigned(r.proposal_id.clone()));
        }
        if row.try_get::<bool, _>("expired")?
            || row.try_get::<bool, _>("revoked")?
            || row.try_get::<bool, _>("consumed")?
        {
            return Err(not_live());
        }
        let at = timefmt::format(timefmt::now())?;
        sqlx::query(
            "INSERT INTO resigned_proofs (nonce, proposal_id, proof_sha256, consume_digest,
                 key_id, replaces_key_id, resigned_at)
             VALUES ($1, $2, $3, $4, $5, $6, $7)",
        )
        .bind(&r.nonce)
        .bind(&r.proposal_id)
        .bind(&r.proof_sha256)
        .bind(&r.consume_digest)
        .bind(&r.key_id)
        .bind(&r.replaces_key_id)
        .bind(&at)
        .execute(&mut *tx)
        .await?;
        let details = json!({
            "nonce": r.nonce,
            "proof_sha256": r.proof_sha256,
            "key_id": r.key_id,
            "replaces_proof_sha256": row.try_get::<String, _>("proof_sha256")?,
            "replaces_key_id": r.replaces_key_id,
        });
        let principal: String = row.try_get("principal")?;
        events::append(
            &mut tx,
            &principal,
            &at,
            "proof_resigned",
            Some(&r.proposal_id),
            actor,
            &details,
        )
        .await?;
        tx.commit().await?;
        Ok(())
    }
}

//! The proof keys each signer of this ledger publishes (shared by both
//! backends), so that every signer serves the whole key set.
//!
//! Owns: publishing one signer's key index (insert, or update the status
//! and holder), reading the published set, and retiring a key from any
//! signer. Must not: publish a key again once it is retired here (the
//! schema refuses it too), or hold anything but public keys.

use countersign_verifier::KeyStatus;
use sqlx::Row as _;

use super::Store;
use crate::error::LedgerError;
use crate::ledger::SignerKey;
use crate::timefmt;

impl Store {
    /// Publish `keys` as the key index of the signer `signer`, in one
    /// transaction (a row already as published is left alone: a signer
    /// publishes every minute): `KeyRetired` (and nothing written) if one the ledger
    /// has retired is published as anything else.
    pub(crate) async fn publish_signer_keys(
        &self,
        signer: &str,
        keys: &[(String, String, KeyStatus)],
    ) -> Result<(), LedgerError> {
        let now = timefmt::format(timefmt::now())?;
        let mut tx = self.write_tx().await?;
        for (kid, public_key, status) in keys {
            let stored: Option<String> = sqlx::query_scalar(concat!(
                "SELECT k.status FROM signer_keys k WHERE k.kid = $1",
                locking!("k")
            ))
            .bind(kid)
            .fetch_optional(&mut *tx)
            .await?;
            if stored.as_deref() == Some(KeyStatus::Retired.as_str()) {
                if *status == KeyStatus::Retired {
                    continue;
                }
                tx.rollback().await?;
                return Err(LedgerError::KeyRetired(kid.clone()));
            }
            sqlx::query(
                "INSERT INTO signer_keys (kid, public_key, status, signer, updated_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (kid) DO UPDATE
                 SET status = excluded.status, signer = excluded.signer,
                     updated_at = excluded.updated_at
                 WHERE signer_keys.status <> excluded.status
                    OR signer_keys.signer <> excluded.signer",
            )
            .bind(kid)
            .bind(public_key)
            .bind(status.as_str())
            .bind(signer)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Retire `kid` in the published set, whichever signer holds it:
    /// `false` if no signer published it.
    pub(crate) async fn retire_signer_key(&self, kid: &str) -> Result<bool, LedgerError> {
        let now = timefmt::format(timefmt::now())?;
        let mut tx = self.write_tx().await?;
        let retired = sqlx::query(
            "UPDATE signer_keys SET status = 'retired', updated_at = $2 WHERE kid = $1",
        )
        .bind(kid)
        .bind(&now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(retired.rows_affected() == 1)
    }

    /// Every published key, retired ones included, by key id.
    pub(crate) async fn signer_keys(&self) -> Result<Vec<SignerKey>, LedgerError> {
        let rows = sqlx::query(
            "SELECT kid, public_key, status, signer, updated_at FROM signer_keys ORDER BY kid",
        )
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                let status: String = row.try_get("status")?;
                Ok(SignerKey {
                    kid: row.try_get("kid")?,
                    public_key: row.try_get("public_key")?,
                    status: KeyStatus::parse(&status).ok_or_else(|| {
                        LedgerError::Corrupt(format!("signer key status {status:?}"))
                    })?,
                    signer: row.try_get("signer")?,
                    updated_at: timefmt::parse(&row.try_get::<String, _>("updated_at")?)?,
                })
            })
            .collect()
    }
}

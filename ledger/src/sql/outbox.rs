//! The notification outbox (shared by both backends): the signer records a
//! row, the notify process reads its principal's rows oldest first and
//! acknowledges them, which deletes them. No event is written: the
//! proposal or passkey change a row announces has its own.

use sqlx::Row as _;

use super::{Conn, Store};
use crate::error::LedgerError;
use crate::outbox::OutboxNotification;
use crate::timefmt;

impl Store {
    /// Records `n`.
    pub(crate) async fn record_notification(
        &self,
        n: &OutboxNotification,
    ) -> Result<(), LedgerError> {
        let mut tx = self.write_tx().await?;
        Self::insert_notification(&mut tx, n).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Inserts `n` in the transaction of `conn` (a proposal's own, so that
    /// the two commit together).
    pub(super) async fn insert_notification(
        conn: &mut Conn,
        n: &OutboxNotification,
    ) -> Result<(), LedgerError> {
        let created_at = timefmt::format(n.created_at)?;
        sqlx::query(
            "INSERT INTO notification_outbox (id, principal, created_at, body)
             VALUES ($1, $2, $3, $4)",
        )
        .bind(&n.id)
        .bind(&n.principal)
        .bind(&created_at)
        .bind(&n.body)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// At most `limit` of `principal`'s notifications, oldest first.
    pub(crate) async fn notifications(
        &self,
        principal: &str,
        limit: u32,
    ) -> Result<Vec<OutboxNotification>, LedgerError> {
        let rows = sqlx::query(
            "SELECT id, principal, created_at, body FROM notification_outbox
             WHERE principal = $1 ORDER BY created_at, id LIMIT $2",
        )
        .bind(principal)
        .bind(i64::from(limit))
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(OutboxNotification {
                    id: row.try_get("id")?,
                    principal: row.try_get("principal")?,
                    created_at: timefmt::parse(&row.try_get::<String, _>("created_at")?)?,
                    body: row.try_get("body")?,
                })
            })
            .collect()
    }

    /// Deletes those of `ids` that are `principal`'s; returns how many.
    pub(crate) async fn acknowledge_notifications(
        &self,
        principal: &str,
        ids: &[String],
    ) -> Result<u64, LedgerError> {
        let mut tx = self.write_tx().await?;
        let mut deleted = 0;
        for id in ids {
            deleted += sqlx::query(
                "DELETE FROM notification_outbox WHERE id = $1 AND principal = $2",
            )
            .bind(id)
            .bind(principal)
            .execute(&mut *tx)
            .await?
            .rows_affected();
        }
        tx.commit().await?;
        Ok(deleted)
    }
}

//! The notification outbox (shared by both backends): the signer records a
//! row, the notify process reads its principal's rows oldest first (a row
//! not before its time, an escalation only while its proposal waits) and
//! acknowledges them, which deletes them. No event is written: the
//! proposal or passkey change a row announces has its own.

use sqlx::Row as _;

use super::{Conn, Store, rows};
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
        let not_before = n.not_before.map(timefmt::format).transpose()?;
        sqlx::query(
            "INSERT INTO notification_outbox (id, principal, created_at, body, not_before, escalates)
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&n.id)
        .bind(&n.principal)
        .bind(&created_at)
        .bind(&n.body)
        .bind(&not_before)
        .bind(&n.escalates)
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// At most `limit` of `principal`'s notifications that are due now,
    /// oldest first. An escalation whose proposal was decided or expired
    /// meanwhile is deleted, never given.
    pub(crate) async fn notifications(
        &self,
        principal: &str,
        limit: u32,
    ) -> Result<Vec<OutboxNotification>, LedgerError> {
        let now = timefmt::now();
        let found = sqlx::query(
            "SELECT o.id, o.principal, o.created_at, o.body, o.not_before, o.escalates,
                    d.proposal_id IS NOT NULL AS decided, p.decide_by
             FROM notification_outbox o
             LEFT JOIN decisions d ON d.proposal_id = o.escalates
             LEFT JOIN proposals p ON p.id = o.escalates
             WHERE o.principal = $1 AND (o.not_before IS NULL OR o.not_before <= $2)
             ORDER BY o.created_at, o.id LIMIT $3",
        )
        .bind(principal)
        .bind(timefmt::format(now)?)
        .bind(i64::from(limit))
        .fetch_all(&self.reader)
        .await?;
        let mut due = Vec::with_capacity(found.len());
        let mut stale = Vec::new();
        for row in &found {
            let n = OutboxNotification {
                id: row.try_get("id")?,
                principal: row.try_get("principal")?,
                created_at: timefmt::parse(&row.try_get::<String, _>("created_at")?)?,
                body: row.try_get("body")?,
                not_before: rows::optional_time_col(row, "not_before")?,
                escalates: row.try_get("escalates")?,
            };
            let closed = rows::optional_time_col(row, "decide_by")?.is_some_and(|at| now >= at);
            let decided: bool = row.try_get("decided")?;
            match n.escalates {
                Some(_) if decided || closed => stale.push(n.id),
                _ => due.push(n),
            }
        }
        if !stale.is_empty() {
            self.acknowledge_notifications(principal, &stale).await?;
        }
        Ok(due)
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

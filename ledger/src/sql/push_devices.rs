//! The consoles' Web Push devices (shared by both backends): a console's
//! changes to its own approver's devices in one transaction, and the
//! devices of a principal whose sessions have not ended.
//!
//! Must not: touch a device of another principal or approver than the one
//! named; answer a device past its session's end.

use sqlx::Row as _;

use super::Store;
use crate::error::LedgerError;
use crate::push_devices::{ApproverDevice, PushDevice};
use crate::timefmt;

impl Store {
    /// Records `keep` (each replacing the device of its session, if any)
    /// and forgets the devices of the sessions `remove` names, all of
    /// `principal`'s approver `approver`, in one write transaction; the
    /// principal's devices past their session's end go with it. Returns
    /// how many were recorded and forgotten.
    pub(crate) async fn set_push_devices(
        &self,
        principal: &str,
        approver: &str,
        keep: &[PushDevice],
        remove: &[String],
    ) -> Result<(u32, u32), LedgerError> {
        let now = timefmt::format(timefmt::now())?;
        let mut tx = self.write_tx().await?;
        sqlx::query("DELETE FROM push_devices WHERE principal = $1 AND expires_at <= $2")
            .bind(principal)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
        let mut kept = 0;
        for d in keep {
            sqlx::query(
                "INSERT INTO push_devices (principal, approver, session_id, endpoint, p256dh, auth,
                     application_server_key, expires_at, recorded_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
                 ON CONFLICT (principal, approver, session_id) DO UPDATE SET
                     endpoint = excluded.endpoint, p256dh = excluded.p256dh,
                     auth = excluded.auth,
                     application_server_key = excluded.application_server_key,
                     expires_at = excluded.expires_at, recorded_at = excluded.recorded_at",
            )
            .bind(principal)
            .bind(approver)
            .bind(&d.session_id)
            .bind(&d.endpoint)
            .bind(&d.p256dh)
            .bind(&d.auth)
            .bind(&d.application_server_key)
            .bind(timefmt::format(d.expires_at)?)
            .bind(&now)
            .execute(&mut *tx)
            .await?;
            kept += 1;
        }
        let mut removed = 0;
        for session_id in remove {
            let gone = sqlx::query(
                "DELETE FROM push_devices WHERE principal = $1 AND approver = $2 AND session_id = $3",
            )
            .bind(principal)
            .bind(approver)
            .bind(session_id)
            .execute(&mut *tx)
            .await?
            .rows_affected();
            removed += u32::try_from(gone).unwrap_or(u32::MAX);
        }
        tx.commit().await?;
        Ok((kept, removed))
    }

    /// `principal`'s devices whose session has not ended, ordered by
    /// approver and session.
    pub(crate) async fn push_devices(
        &self,
        principal: &str,
    ) -> Result<Vec<ApproverDevice>, LedgerError> {
        let rows = sqlx::query(
            "SELECT approver, session_id, endpoint, p256dh, auth, application_server_key, expires_at
             FROM push_devices WHERE principal = $1 AND expires_at > $2
             ORDER BY approver, session_id",
        )
        .bind(principal)
        .bind(timefmt::format(timefmt::now())?)
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(ApproverDevice {
                    approver: row.try_get("approver")?,
                    device: PushDevice {
                        session_id: row.try_get("session_id")?,
                        endpoint: row.try_get("endpoint")?,
                        p256dh: row.try_get("p256dh")?,
                        auth: row.try_get("auth")?,
                        application_server_key: row.try_get("application_server_key")?,
                        expires_at: timefmt::parse(&row.try_get::<String, _>("expires_at")?)?,
                    },
                })
            })
            .collect()
    }
}

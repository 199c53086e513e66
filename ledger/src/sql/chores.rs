//! Chore leases (shared by both backends): which process runs a chore
//! that must run once per ledger, and the fencing token every write of
//! that chore checks.
//!
//! Owns: taking, renewing and giving back a lease row of `chore_leases`,
//! and [`check_fence`], the statement a chore's write runs first in its
//! own transaction. Must not: decide by the clock alone whether a write
//! may happen. The expiry only says when another process may take the
//! chore over; the token, raised by one at each takeover and compared
//! under the lease row's lock, is what refuses a holder that was paused
//! past its lease. A clock that is wrong moves the chore early or late;
//! it never lets two holders write.

use sqlx::Row as _;
use time::{Duration, OffsetDateTime};

use super::{Conn, Store};
use crate::error::LedgerError;
use crate::leases::Lease;
use crate::timefmt;

/// Refuse with `LeaseLost` unless `lease` is still the chore's current
/// lease: the same holder and token. On PostgreSQL the lease row stays
/// locked until the transaction ends, so a takeover waits for this write
/// or this write sees the takeover; on SQLite the write lock is held.
/// Run before the chore's write, as the transaction's first lock.
pub(super) async fn check_fence(conn: &mut Conn, lease: &Lease) -> Result<(), LedgerError> {
    let row = sqlx::query(concat!(
        "SELECT l.holder, l.token FROM chore_leases l WHERE l.chore = $1",
        locking!("l")
    ))
    .bind(&lease.chore)
    .fetch_optional(&mut *conn)
    .await?;
    let current = match row {
        Some(row) => Some((row.try_get::<String, _>("holder")?, row.try_get::<i64, _>("token")?)),
        None => None,
    };
    if current.as_ref() == Some(&(lease.holder.clone(), lease.token)) {
        Ok(())
    } else {
        Err(LedgerError::LeaseLost {
            chore: lease.chore.clone(),
            token: lease.token,
        })
    }
}

impl Store {
    /// Take `chore` for `holder` until `ttl` from now, or renew it if
    /// `holder` has it: `None` while another holder's lease runs. A
    /// renewal keeps the token; a takeover raises it by one.
    pub(crate) async fn take_lease(
        &self,
        chore: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Lease>, LedgerError> {
        let now = timefmt::now();
        let expires_at = now + ttl;
        let until = timefmt::format(expires_at)?;
        let mut tx = self.write_tx().await?;
        let row = sqlx::query(concat!(
            "SELECT l.holder, l.token, l.expires_at FROM chore_leases l WHERE l.chore = $1",
            locking!("l")
        ))
        .bind(chore)
        .fetch_optional(&mut *tx)
        .await?;
        let token = match row {
            None => {
                // Two first takers: one inserts, the other's insert does
                // nothing, and it is not the holder.
                let inserted = sqlx::query(
                    "INSERT INTO chore_leases (chore, holder, token, expires_at)
                     VALUES ($1, $2, 1, $3) ON CONFLICT (chore) DO NOTHING",
                )
                .bind(chore)
                .bind(holder)
                .bind(&until)
                .execute(&mut *tx)
                .await?;
                if inserted.rows_affected() == 0 {
                    tx.rollback().await?;
                    return Ok(None);
                }
                1
            }
            Some(row) => {
                let current: String = row.try_get("holder")?;
                let token: i64 = row.try_get("token")?;
                let runs: OffsetDateTime = timefmt::parse(&row.try_get::<String, _>("expires_at")?)?;
                let token = if current == holder {
                    token
                } else if runs > now {
                    tx.rollback().await?;
                    return Ok(None);
                } else {
                    token + 1
                };
                sqlx::query(
                    "UPDATE chore_leases SET holder = $2, token = $3, expires_at = $4
                     WHERE chore = $1",
                )
                .bind(chore)
                .bind(holder)
                .bind(token)
                .bind(&until)
                .execute(&mut *tx)
                .await?;
                token
            }
        };
        tx.commit().await?;
        Ok(Some(Lease {
            chore: chore.to_owned(),
            holder: holder.to_owned(),
            token,
            expires_at,
        }))
    }

    /// Give `lease` back: it expires now, so another process may take the
    /// chore at once. Nothing happens if it was taken over already.
    pub(crate) async fn give_back_lease(&self, lease: &Lease) -> Result<(), LedgerError> {
        let now = timefmt::format(timefmt::now())?;
        let mut tx = self.write_tx().await?;
        sqlx::query(
            "UPDATE chore_leases SET expires_at = $4
             WHERE chore = $1 AND holder = $2 AND token = $3",
        )
        .bind(&lease.chore)
        .bind(&lease.holder)
        .bind(lease.token)
        .bind(&now)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(())
    }

    /// Every chore's lease as stored, by chore.
    pub(crate) async fn leases(&self) -> Result<Vec<Lease>, LedgerError> {
        let rows = sqlx::query(
            "SELECT chore, holder, token, expires_at FROM chore_leases ORDER BY chore",
        )
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(Lease {
                    chore: row.try_get("chore")?,
                    holder: row.try_get("holder")?,
                    token: row.try_get("token")?,
                    expires_at: timefmt::parse(&row.try_get::<String, _>("expires_at")?)?,
                })
            })
            .collect()
    }
}

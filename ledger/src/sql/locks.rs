//! Row locks of write transactions (shared by both backends). On
//! PostgreSQL they are `SELECT ... FOR UPDATE OF <alias>`; on SQLite
//! (`ROW_LOCKS` false) they are skipped, the write lock of
//! `BEGIN IMMEDIATE` being already held.
//!
//! A lock is always its own statement, before the reads that decide: under
//! READ COMMITTED, a `FOR UPDATE` that waited re-checks only the locked row,
//! while the rest of that statement (its joins) still sees the snapshot from
//! before the wait. Statements after it see what the previous holder
//! committed. Order: proposal first, chain head last (no deadlocks).

use super::{Conn, ROW_LOCKS};
use crate::error::LedgerError;

/// Lock a proposal's row for the rest of the write transaction. A missing
/// proposal locks nothing; the caller's next read finds it missing.
pub(super) async fn lock_proposal_row(
    conn: &mut Conn,
    proposal_id: &str,
) -> Result<(), LedgerError> {
    if !ROW_LOCKS {
        return Ok(());
    }
    sqlx::query(concat!(
        "SELECT p.id FROM proposals p WHERE p.id = $1",
        locking!("p")
    ))
    .bind(proposal_id)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(())
}

/// The chain head's row, locked until the transaction ends.
pub(super) const LOCK_HEAD: &str = concat!(
    "SELECT h.count, h.hash FROM chain_head h WHERE h.singleton = 1",
    locking!("h")
);

/// Take the chain head's lock now, before reading state the transaction's
/// event will describe.
pub(super) async fn lock_head(conn: &mut Conn) -> Result<(), LedgerError> {
    if !ROW_LOCKS {
        return Ok(());
    }
    sqlx::query(LOCK_HEAD).fetch_one(&mut *conn).await?;
    Ok(())
}

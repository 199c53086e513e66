//! Row locks of write transactions (shared by both backends). On
//! PostgreSQL they are `SELECT ... FOR UPDATE OF <alias>`; on SQLite
//! (`ROW_LOCKS` false) they are skipped, the write lock of
//! `BEGIN IMMEDIATE` being already held.
//!
//! A lock is always its own statement, before the reads that decide: under
//! READ COMMITTED, a `FOR UPDATE` that waited re-checks only the locked row,
//! while the rest of that statement (its joins) still sees the snapshot from
//! before the wait. Statements after it see what the previous holder
//! committed. Order: proposal first, chain head last (no deadlocks); a
//! transaction locks at most one chain. A group commit (`batch.rs`) waits
//! only for its first job's proposal and then the chain; the proposals of
//! its later jobs it takes with [`try_lock_proposal_rows`], never waiting
//! while it holds the chain.

use super::events::Tail;
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

/// A chain's head, on PostgreSQL locked until the transaction ends (and
/// created, empty, if the chain has no event yet: the SECURITY DEFINER
/// function `countersign_lock_chain` does both, as no role may write
/// `chain_heads`); on SQLite read under the write lock already held.
pub(super) async fn chain_tail(conn: &mut Conn, chain: &str) -> Result<Tail, LedgerError> {
    let sql = if ROW_LOCKS {
        "SELECT count, hash FROM countersign_lock_chain($1)"
    } else {
        "SELECT count, hash FROM chain_heads WHERE chain = $1"
    };
    let row = sqlx::query(sql)
        .bind(chain)
        .fetch_optional(&mut *conn)
        .await?;
    match row {
        Some(row) => Tail::from_row(chain, &row, "count", "hash"),
        None => Ok(Tail::empty(chain)),
    }
}

/// Take `chain`'s head lock now, before reading state the transaction's
/// event will describe (the principal's chain for everything of one
/// principal: its proposals, rules, passkeys and state).
pub(super) async fn lock_head(conn: &mut Conn, chain: &str) -> Result<(), LedgerError> {
    if !ROW_LOCKS {
        return Ok(());
    }
    chain_tail(conn, chain).await.map(drop)
}

/// The ids of the proposals named in the JSON array `$1` (PostgreSQL).
/// The array is compared with `= ANY`, so that the rows are found through
/// the primary key: `IN (SELECT json_array_elements_text(..))` is planned
/// as a join with a guessed 100 rows, which on a table of some thousand
/// proposals became a sequential scan, run under the chain's lock.
macro_rules! proposals_of_ids {
    () => {
        "SELECT p.id FROM proposals p
         WHERE p.id = ANY(ARRAY(SELECT json_array_elements_text(CAST($1 AS json))))"
    };
}
const PROPOSALS_OF_IDS: &str = proposals_of_ids!();
/// [`PROPOSALS_OF_IDS`], locking the rows no other transaction holds.
pub(super) const LOCK_FREE_PROPOSALS: &str =
    concat!(proposals_of_ids!(), locking!("p"), " SKIP LOCKED");

/// Lock the rows of `proposal_ids` that no other transaction holds, for
/// the rest of the write transaction, without waiting (PostgreSQL `SKIP
/// LOCKED`, in one statement): the ids another transaction holds, which
/// this one did not lock. A row this transaction holds already, or a
/// missing proposal, is not held: the caller's next read finds it missing.
/// On SQLite none is held.
pub(super) async fn try_lock_proposal_rows(
    conn: &mut Conn,
    proposal_ids: &[&str],
) -> Result<Vec<String>, LedgerError> {
    if !ROW_LOCKS || proposal_ids.is_empty() {
        return Ok(Vec::new());
    }
    // The ids as one JSON array: one statement whatever their number.
    let ids = serde_json::to_string(proposal_ids)
        .map_err(|e| LedgerError::Corrupt(format!("proposal ids: {e}")))?;
    let locked: Vec<String> = sqlx::query_scalar(LOCK_FREE_PROPOSALS)
        .bind(&ids)
        .fetch_all(&mut *conn)
        .await?;
    let rest: Vec<&str> = proposal_ids
        .iter()
        .copied()
        .filter(|id| !locked.iter().any(|l| l == id))
        .collect();
    if rest.is_empty() {
        return Ok(Vec::new());
    }
    let rest = serde_json::to_string(&rest)
        .map_err(|e| LedgerError::Corrupt(format!("proposal ids: {e}")))?;
    Ok(sqlx::query_scalar(PROPOSALS_OF_IDS)
        .bind(&rest)
        .fetch_all(&mut *conn)
        .await?)
}

//! The witnesses' storage (shared by both backends; what is stored and the
//! check every cosignature passes are in `crate::witness`): cosignatures,
//! the witnessing client's per-witness state, and its events.

use countersign_tlog::VerifierKey;
use serde_json::Value;
use sqlx::Row as _;

use super::chores::check_fence;
use super::{Conn, DbRow, Store, events};
use crate::error::LedgerError;
use crate::leases::Lease;
use crate::timefmt;
use crate::tlog::{count, db_int};
use crate::witness::{StoredCosignature, WitnessState, append_signatures, check_cosignature};

/// Who the witnessing client's events name as their actor.
pub(crate) const WITNESS_ACTOR: &str = "countersign-witness";

fn cosignature_row(row: &DbRow) -> Result<StoredCosignature, LedgerError> {
    Ok(StoredCosignature {
        size: count(row.try_get("size")?, "cosigned size")?,
        witness_key: row.try_get("witness_key")?,
        line: row.try_get("line")?,
        timestamp: count(row.try_get("timestamp")?, "cosignature timestamp")?,
        stored_at: row.try_get("stored_at")?,
    })
}

fn state_row(row: &DbRow) -> Result<WitnessState, LedgerError> {
    Ok(WitnessState {
        witness_key: row.try_get("witness_key")?,
        acknowledged: count(row.try_get("acknowledged")?, "acknowledged size")?,
        unreachable_since: row.try_get("unreachable_since")?,
        gap_recorded: row.try_get::<i64, _>("gap_recorded")? != 0,
        halted: row.try_get("halted")?,
    })
}

/// Inserts or replaces the client's state of one witness.
async fn upsert_state(conn: &mut Conn, state: &WitnessState, now: &str) -> Result<(), LedgerError> {
    sqlx::query(
        "INSERT INTO tlog_witnesses
         (witness_key, acknowledged, unreachable_since, gap_recorded, halted, updated_at)
         VALUES ($1, $2, $3, $4, $5, $6)
         ON CONFLICT (witness_key) DO UPDATE SET
         acknowledged = excluded.acknowledged,
         unreachable_since = excluded.unreachable_since,
         gap_recorded = excluded.gap_recorded,
         halted = excluded.halted,
         updated_at = excluded.updated_at",
    )
    .bind(&state.witness_key)
    .bind(db_int(state.acknowledged)?)
    .bind(&state.unreachable_since)
    .bind(i64::from(state.gap_recorded))
    .bind(&state.halted)
    .bind(now)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// With a `fence` (the witnessing chore's lease), refuse with
/// `LeaseLost` unless it is still the current lease, as the write's first
/// statement; without one (a caller outside the chore), nothing.
async fn fenced(conn: &mut Conn, fence: Option<&Lease>) -> Result<(), LedgerError> {
    match fence {
        Some(lease) => check_fence(conn, lease).await,
        None => Ok(()),
    }
}

impl Store {
    /// Stores `line` as `witness`'s cosignature of the checkpoint of
    /// `size`, after checking it over that stored checkpoint; the stored
    /// row (the one already there, if this witness key's cosignature of
    /// this size was stored before).
    pub(crate) async fn store_cosignature(
        &self,
        fence: Option<&Lease>,
        size: u64,
        witness: &VerifierKey,
        line: &str,
    ) -> Result<StoredCosignature, LedgerError> {
        let mut tx = self.write_tx().await?;
        fenced(&mut tx, fence).await?;
        let note: Option<String> =
            sqlx::query_scalar("SELECT note FROM tlog_checkpoints WHERE size = $1")
                .bind(db_int(size)?)
                .fetch_optional(&mut *tx)
                .await?;
        let note = note.ok_or(LedgerError::NoSuchCheckpoint(size))?;
        let timestamp =
            check_cosignature(&note, witness, line).map_err(|e| LedgerError::CosignatureRefused {
                size,
                witness: witness.to_string(),
                reason: e,
            })?;
        let key = witness.to_string();
        let existing = sqlx::query(
            "SELECT size, witness_key, line, timestamp, stored_at FROM tlog_cosignatures
             WHERE size = $1 AND witness_key = $2",
        )
        .bind(db_int(size)?)
        .bind(&key)
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = existing {
            tx.rollback().await?;
            return cosignature_row(&row);
        }
        let line = line.strip_suffix('\n').unwrap_or(line).to_owned();
        let stored_at = timefmt::format(timefmt::now())?;
        sqlx::query(
            "INSERT INTO tlog_cosignatures (size, witness_key, line, timestamp, stored_at)
             VALUES ($1, $2, $3, $4, $5)",
        )
        .bind(db_int(size)?)
        .bind(&key)
        .bind(&line)
        .bind(db_int(timestamp)?)
        .bind(&stored_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(StoredCosignature {
            size,
            witness_key: key,
            line,
            timestamp,
            stored_at,
        })
    }

    /// Every stored cosignature of the checkpoint of `size`, by witness
    /// key, as stored (not checked here).
    pub(crate) async fn cosignatures(
        &self,
        size: u64,
    ) -> Result<Vec<StoredCosignature>, LedgerError> {
        let rows = sqlx::query(
            "SELECT size, witness_key, line, timestamp, stored_at FROM tlog_cosignatures
             WHERE size = $1 ORDER BY witness_key",
        )
        .bind(db_int(size)?)
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(cosignature_row).collect()
    }

    /// The checkpoint of `size` with every stored cosignature that checks
    /// out appended, by witness key; `None` if there is no such checkpoint.
    pub(crate) async fn cosigned_checkpoint(
        &self,
        size: u64,
    ) -> Result<Option<String>, LedgerError> {
        let note: Option<String> =
            sqlx::query_scalar("SELECT note FROM tlog_checkpoints WHERE size = $1")
                .bind(db_int(size)?)
                .fetch_optional(&self.reader)
                .await?;
        let Some(note) = note else {
            return Ok(None);
        };
        let mut lines = Vec::new();
        for stored in self.cosignatures(size).await? {
            let checked = stored
                .witness_key
                .parse::<VerifierKey>()
                .map_err(|e| e.to_string())
                .and_then(|key| {
                    check_cosignature(&note, &key, &stored.line).map_err(|e| e.to_string())
                });
            match checked {
                Ok(_) => lines.push(stored.line),
                Err(reason) => tracing::error!(
                    size,
                    witness = %stored.witness_key,
                    %reason,
                    "a stored cosignature does not verify: left out"
                ),
            }
        }
        append_signatures(&note, &lines)
            .map(Some)
            .map_err(|e| LedgerError::Corrupt(format!("checkpoint of size {size}: {e}")))
    }

    /// The largest checkpoint size with at least one stored cosignature.
    pub(crate) async fn latest_cosigned_size(&self) -> Result<Option<u64>, LedgerError> {
        let size: Option<i64> = sqlx::query_scalar("SELECT MAX(size) FROM tlog_cosignatures")
            .fetch_one(&self.reader)
            .await?;
        size.map(|s| count(s, "cosigned size")).transpose()
    }

    /// The client's state of every witness key it has contacted.
    pub(crate) async fn witness_states(&self) -> Result<Vec<WitnessState>, LedgerError> {
        let rows = sqlx::query(
            "SELECT witness_key, acknowledged, unreachable_since, gap_recorded, halted
             FROM tlog_witnesses ORDER BY witness_key",
        )
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(state_row).collect()
    }

    /// Saves the client's state of one witness (its acknowledged size
    /// never decreases: the schema refuses that).
    pub(crate) async fn save_witness_state(
        &self,
        fence: Option<&Lease>,
        state: &WitnessState,
    ) -> Result<(), LedgerError> {
        let now = timefmt::format(timefmt::now())?;
        let mut tx = self.write_tx().await?;
        fenced(&mut tx, fence).await?;
        upsert_state(&mut tx, state, &now).await?;
        tx.commit().await?;
        Ok(())
    }

    /// Saves `state` and appends an event of `kind` with `details` to the
    /// global chain, in one transaction: the event and the state that
    /// says it was recorded commit together.
    pub(crate) async fn record_witness_event(
        &self,
        fence: Option<&Lease>,
        state: &WitnessState,
        kind: &str,
        details: &Value,
    ) -> Result<(), LedgerError> {
        let now = timefmt::format(timefmt::now())?;
        let mut tx = self.write_tx().await?;
        fenced(&mut tx, fence).await?;
        upsert_state(&mut tx, state, &now).await?;
        let global = crate::chain::GLOBAL_CHAIN;
        events::append(&mut tx, global, &now, kind, None, WITNESS_ACTOR, details).await?;
        tx.commit().await?;
        Ok(())
    }
}

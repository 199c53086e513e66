//! The event log (shared by both backends): appending a hash-chained row
//! inside the caller's write transaction, reading the log back, and
//! verifying it.
//!
//! Must not be called outside a write transaction: the chain head read here
//! is only stable while the write lock is held (SQLite's `BEGIN IMMEDIATE`;
//! on PostgreSQL the chain head row itself is locked `FOR UPDATE`, so event
//! appends serialize and the chain never forks).

use serde_json::Value;
use sqlx::Row as _;

use super::locks::LOCK_HEAD;
use super::{Conn, DbRow, Store};
use crate::chain::{ChainBreak, ChainChecker, ChainReport, RawEvent, event_hash};
use crate::error::LedgerError;
use crate::facts::EventFacts;
use crate::types::EventRecord;

/// Rows fetched per round trip when walking the log.
const PAGE: i64 = 1000;

/// The chain head as the current write transaction last saw it, extended in
/// memory by each event the transaction plans, so a transaction that writes
/// several events reads the head once. Only valid while the write lock (or,
/// on PostgreSQL, the chain head's row lock) is held.
pub(super) struct Tail {
    count: i64,
    hash: String,
}

/// An event planned on a [`Tail`], ready to insert: the id and hashes that
/// extend the head, and the canonical details.
pub(super) struct NewEvent {
    pub(super) id: i64,
    pub(super) details: String,
    pub(super) prev_hash: String,
    pub(super) hash: String,
}

impl Tail {
    /// The head from `row`'s columns `count_column` and `hash_column`.
    pub(super) fn from_row(
        row: &DbRow,
        count_column: &str,
        hash_column: &str,
    ) -> Result<Tail, LedgerError> {
        Ok(Tail {
            count: row.try_get(count_column)?,
            hash: row.try_get(hash_column)?,
        })
    }

    /// Plan the next event and advance the tail past it.
    pub(super) fn extend(
        &mut self,
        at: &str,
        kind: &str,
        proposal_id: Option<&str>,
        actor: &str,
        details: &Value,
    ) -> Result<NewEvent, LedgerError> {
        let id = self.count + 1;
        let details_text = countersign_verifier::canonical::to_canonical(details)
            .map_err(|e| LedgerError::Corrupt(format!("event details: {e}")))?;
        let hash = event_hash(&self.hash, id, at, kind, proposal_id, actor, details)
            .map_err(|e| LedgerError::Corrupt(format!("event hash: {e}")))?;
        let prev_hash = std::mem::replace(&mut self.hash, hash.clone());
        self.count = id;
        Ok(NewEvent {
            id,
            details: details_text,
            prev_hash,
            hash,
        })
    }
}

/// The details of an `effect_applied` event.
pub(super) fn applied_details(nonce: &str, effect: &str) -> Value {
    serde_json::json!({ "nonce": nonce, "effect": effect })
}

/// The details of a `completed` (or `resolved`) event.
pub(super) fn completed_details(nonce: &str, status: &str, error: Option<&str>) -> Value {
    serde_json::json!({ "nonce": nonce, "status": status, "error": error })
}

/// Append one event to the chain in the current transaction.
pub(super) async fn append(
    conn: &mut Conn,
    at: &str,
    kind: &str,
    proposal_id: Option<&str>,
    actor: &str,
    details: &Value,
) -> Result<(), LedgerError> {
    append_numbered(conn, at, kind, proposal_id, actor, details)
        .await
        .map(|_| ())
}

/// [`append`], returning the new event's id (the chain position it took).
pub(super) async fn append_numbered(
    conn: &mut Conn,
    at: &str,
    kind: &str,
    proposal_id: Option<&str>,
    actor: &str,
    details: &Value,
) -> Result<i64, LedgerError> {
    let head = sqlx::query(LOCK_HEAD).fetch_one(&mut *conn).await?;
    let event =
        Tail::from_row(&head, "count", "hash")?.extend(at, kind, proposal_id, actor, details)?;
    // The trigger `events_advance_head` moves the chain head in this same
    // transaction; `events_extend_head` refuses any row that does not extend it.
    sqlx::query(
        "INSERT INTO events (id, at, kind, proposal_id, actor, details, prev_hash, hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
    )
    .bind(event.id)
    .bind(at)
    .bind(kind)
    .bind(proposal_id)
    .bind(actor)
    .bind(event.details)
    .bind(event.prev_hash)
    .bind(event.hash)
    .execute(&mut *conn)
    .await?;
    Ok(event.id)
}

fn raw_event(row: &DbRow) -> Result<RawEvent, sqlx::Error> {
    Ok(RawEvent {
        id: row.try_get("id")?,
        at: row.try_get("at")?,
        kind: row.try_get("kind")?,
        proposal_id: row.try_get("proposal_id")?,
        actor: row.try_get("actor")?,
        details: row.try_get("details")?,
        prev_hash: row.try_get("prev_hash")?,
        hash: row.try_get("hash")?,
    })
}

const EVENTS_PAGE: &str = "SELECT id, at, kind, proposal_id, actor, details, prev_hash, hash
     FROM events WHERE id > $1 ORDER BY id LIMIT $2";

impl Store {
    /// Every event, oldest first.
    pub(crate) async fn events(&self) -> Result<Vec<EventRecord>, LedgerError> {
        let rows = sqlx::query(
            "SELECT id, at, kind, proposal_id, actor, details, prev_hash, hash
             FROM events ORDER BY id",
        )
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                let raw = raw_event(row)?;
                let id = raw.id;
                raw.into_record()
                    .map_err(|e| LedgerError::Corrupt(format!("event {id}: {e}")))
            })
            .collect()
    }

    /// Walk the whole log in one read snapshot and check the chain and
    /// head, then that the fact tables and the events agree (see
    /// `crate::facts`).
    pub(crate) async fn verify_chain(&self) -> Result<ChainReport, LedgerError> {
        // One read transaction: the pages and the head come from one snapshot.
        let mut tx = self.reader.begin().await?;
        let head = sqlx::query("SELECT count, hash FROM chain_head WHERE singleton = 1")
            .fetch_optional(&mut *tx)
            .await?;
        let (head_count, head_hash) = match head {
            Some(row) => (
                row.try_get::<i64, _>("count")?,
                row.try_get::<String, _>("hash")?,
            ),
            None => (0, String::new()),
        };
        let mut checker = ChainChecker::new();
        let mut facts = EventFacts::default();
        let mut after = 0_i64;
        loop {
            let rows = sqlx::query(EVENTS_PAGE)
                .bind(after)
                .bind(PAGE)
                .fetch_all(&mut *tx)
                .await?;
            let Some(last) = rows.last() else { break };
            after = last.try_get("id")?;
            for row in &rows {
                let event = raw_event(row)?;
                facts.push(&event);
                checker.push(event);
            }
            if checker.broken() {
                break;
            }
        }
        let disagreement = if checker.broken() {
            None
        } else {
            facts.disagreement(&super::facts::read(&mut tx).await?)
        };
        tx.rollback().await?;
        let head_count = u64::try_from(head_count)
            .map_err(|_| LedgerError::Corrupt("negative chain head count".into()))?;
        let mut report = checker.finish(head_count, &head_hash);
        if report.first_break.is_none() {
            report.first_break = disagreement.map(|detail| ChainBreak::Disagrees { detail });
        }
        Ok(report)
    }
}

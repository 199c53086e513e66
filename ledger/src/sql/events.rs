//! The event log (shared by both backends): appending a hash-chained row
//! to its chain inside the caller's write transaction, reading the log
//! back, verifying it, and writing checkpoints.
//!
//! Must not be called outside a write transaction: a chain's head read
//! here is only stable while the write lock is held (SQLite's `BEGIN
//! IMMEDIATE`; on PostgreSQL the chain's head row itself is locked `FOR
//! UPDATE`, so appends to one chain serialize and it never forks, while
//! appends to different chains do not wait for each other).

use serde_json::Value;
use sqlx::Row as _;

use super::chores::check_fence;
use super::locks::chain_tail;
use super::{Conn, DbRow, Store};
use crate::chain::{
    self, CHECKPOINT, ChainBreak, ChainChecker, ChainHead, ChainHeads, ChainReport, EventBody,
    GLOBAL_CHAIN, RawEvent, event_hash,
};
use crate::error::LedgerError;
use crate::facts::EventFacts;
use crate::leases::Lease;
use crate::types::EventRecord;

/// Rows fetched per round trip when walking the log.
const PAGE: i64 = 1000;

/// A chain's head as the current write transaction last saw it, extended
/// in memory by each event the transaction plans, so a transaction that
/// writes several events reads the head once. Only valid while the write
/// lock (or, on PostgreSQL, the chain head's row lock) is held.
pub(super) struct Tail {
    chain: String,
    count: i64,
    hash: String,
}

/// An event planned on a [`Tail`], ready to insert: its position and
/// hashes, and the canonical details.
pub(super) struct NewEvent {
    pub(super) seq: i64,
    pub(super) details: String,
    pub(super) prev_hash: String,
    pub(super) hash: String,
}

impl Tail {
    /// The head of `chain` from `row`'s columns `count_column` and
    /// `hash_column`.
    pub(super) fn from_row(
        chain: &str,
        row: &DbRow,
        count_column: &str,
        hash_column: &str,
    ) -> Result<Tail, LedgerError> {
        Ok(Tail {
            chain: chain.to_owned(),
            count: row.try_get(count_column)?,
            hash: row.try_get(hash_column)?,
        })
    }

    /// The head of a chain without events.
    pub(super) fn empty(chain: &str) -> Tail {
        Tail {
            chain: chain.to_owned(),
            count: 0,
            hash: chain::GENESIS_HASH.to_owned(),
        }
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
        let seq = self.count + 1;
        let details_text = countersign_verifier::canonical::to_canonical(details)
            .map_err(|e| LedgerError::Corrupt(format!("event details: {e}")))?;
        let body = EventBody {
            chain: &self.chain,
            seq,
            at,
            kind,
            proposal_id,
            actor,
            details,
        };
        let hash = event_hash(&self.hash, &body)
            .map_err(|e| LedgerError::Corrupt(format!("event hash: {e}")))?;
        let prev_hash = std::mem::replace(&mut self.hash, hash.clone());
        self.count = seq;
        Ok(NewEvent {
            seq,
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

/// The details of a `completed` (or `resolved`) event: the nonce, the
/// status, the error and (on events written since the key was added) the SHA-256 of
/// the recorded result, canonical JSON `result`, so that an evidence
/// bundle's result is pinned by the log.
pub(super) fn completed_details(
    nonce: &str,
    status: &str,
    error: Option<&str>,
    result: &str,
) -> Value {
    use sha2::Digest as _;
    let result_sha256 = hex::encode(sha2::Sha256::digest(result.as_bytes()));
    serde_json::json!({
        "nonce": nonce,
        "status": status,
        "error": error,
        "result_sha256": result_sha256,
    })
}

/// Append one event to `chain` in the current transaction.
pub(super) async fn append(
    conn: &mut Conn,
    chain: &str,
    at: &str,
    kind: &str,
    proposal_id: Option<&str>,
    actor: &str,
    details: &Value,
) -> Result<(), LedgerError> {
    append_numbered(conn, chain, at, kind, proposal_id, actor, details)
        .await
        .map(|_| ())
}

/// [`append`], returning the new row's id.
pub(super) async fn append_numbered(
    conn: &mut Conn,
    chain: &str,
    at: &str,
    kind: &str,
    proposal_id: Option<&str>,
    actor: &str,
    details: &Value,
) -> Result<i64, LedgerError> {
    let event = chain_tail(conn, chain)
        .await?
        .extend(at, kind, proposal_id, actor, details)?;
    // The trigger `events_extend_head` refuses any row that does not extend
    // its chain's head, and moves the head in this same transaction.
    let id = sqlx::query_scalar(
        "INSERT INTO events (chain, seq, at, kind, proposal_id, actor, details, prev_hash, hash)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) RETURNING id",
    )
    .bind(chain)
    .bind(event.seq)
    .bind(at)
    .bind(kind)
    .bind(proposal_id)
    .bind(actor)
    .bind(event.details)
    .bind(event.prev_hash)
    .bind(event.hash)
    .fetch_one(&mut *conn)
    .await?;
    Ok(id)
}

/// Event rows read with the columns `raw_event` takes, as records.
fn records(rows: &[DbRow]) -> Result<Vec<EventRecord>, LedgerError> {
    rows.iter()
        .map(|row| {
            let raw = raw_event(row)?;
            let id = raw.id;
            raw.into_record()
                .map_err(|e| LedgerError::Corrupt(format!("event {id}: {e}")))
        })
        .collect()
}

fn raw_event(row: &DbRow) -> Result<RawEvent, sqlx::Error> {
    Ok(RawEvent {
        id: row.try_get("id")?,
        chain: row.try_get("chain")?,
        seq: row.try_get("seq")?,
        at: row.try_get("at")?,
        kind: row.try_get("kind")?,
        proposal_id: row.try_get("proposal_id")?,
        actor: row.try_get("actor")?,
        details: row.try_get("details")?,
        prev_hash: row.try_get("prev_hash")?,
        hash: row.try_get("hash")?,
    })
}

/// One page of the walk: rows after `($1, $2)` in (chain, position) order.
const EVENTS_PAGE: &str =
    "SELECT id, chain, seq, at, kind, proposal_id, actor, details, prev_hash, hash
     FROM events WHERE (chain, seq) > ($1, $2) ORDER BY chain, seq LIMIT $3";

/// Every chain's head as stored, in one read.
async fn read_heads(conn: &mut Conn, with_global: bool) -> Result<ChainHeads, LedgerError> {
    let rows = sqlx::query("SELECT chain, count, hash FROM chain_heads WHERE count > 0")
        .fetch_all(&mut *conn)
        .await?;
    let mut heads = heads_of(&rows)?;
    if !with_global {
        heads.remove(GLOBAL_CHAIN);
    }
    Ok(heads)
}

/// `(chain, count, hash)` rows as chain heads.
fn heads_of(rows: &[DbRow]) -> Result<ChainHeads, LedgerError> {
    let mut heads = ChainHeads::new();
    for row in rows {
        let chain: String = row.try_get("chain")?;
        let count: i64 = row.try_get("count")?;
        let count = u64::try_from(count)
            .map_err(|_| LedgerError::Corrupt(format!("chain {chain:?}: negative count")))?;
        let hash = row.try_get("hash")?;
        heads.insert(chain, ChainHead { count, hash });
    }
    Ok(heads)
}

/// Each chain's head as the checkpoints so far named it.
async fn read_checkpointed(conn: &mut Conn) -> Result<ChainHeads, LedgerError> {
    let rows = sqlx::query("SELECT chain, count, hash FROM checkpointed_heads")
        .fetch_all(&mut *conn)
        .await?;
    heads_of(&rows)
}

impl Store {
    /// The sequenced events of `principal`'s chain and of the global chain
    /// from leaf `from` on, at most `limit`, each with its leaf index, in
    /// leaf order (the order the tree has them: a reader that goes on from
    /// the leaf after the last one it saw misses none, whatever order
    /// concurrent writers committed in).
    pub(crate) async fn events_from_leaf(
        &self,
        principal: &str,
        from: u64,
        limit: u32,
    ) -> Result<Vec<(u64, EventRecord)>, LedgerError> {
        let from = i64::try_from(from)
            .map_err(|_| LedgerError::Corrupt(format!("leaf {from} is out of range")))?;
        let rows = sqlx::query(
            "SELECT l.leaf_index, e.id, e.chain, e.seq, e.at, e.kind, e.proposal_id, e.actor,
                    e.details, e.prev_hash, e.hash
             FROM tlog_leaves l JOIN events e ON e.id = l.event_id
             WHERE l.leaf_index >= $1 AND (e.chain = $2 OR e.chain = '')
             ORDER BY l.leaf_index LIMIT $3",
        )
        .bind(from)
        .bind(principal)
        .bind(i64::from(limit))
        .fetch_all(&self.reader)
        .await?;
        rows.iter()
            .map(|row| {
                let leaf: i64 = row.try_get("leaf_index")?;
                let leaf = u64::try_from(leaf)
                    .map_err(|_| LedgerError::Corrupt(format!("negative leaf index {leaf}")))?;
                let raw = raw_event(row)?;
                let id = raw.id;
                let record = raw
                    .into_record()
                    .map_err(|e| LedgerError::Corrupt(format!("event {id}: {e}")))?;
                Ok((leaf, record))
            })
            .collect()
    }

    /// Every event, in the order the rows were inserted.
    pub(crate) async fn evidence_events(
        &self,
        principal: &str,
        proposal_id: &str,
    ) -> Result<Vec<EventRecord>, LedgerError> {
        let rows = sqlx::query(
            "SELECT id, chain, seq, at, kind, proposal_id, actor, details, prev_hash, hash
             FROM events
             WHERE chain = $1 AND (proposal_id = $2 OR kind = 'passkey_enrolled')
             ORDER BY id",
        )
        .bind(principal)
        .bind(proposal_id)
        .fetch_all(&self.reader)
        .await?;
        records(&rows)
    }

    pub(crate) async fn events(&self) -> Result<Vec<EventRecord>, LedgerError> {
        let rows = sqlx::query(
            "SELECT id, chain, seq, at, kind, proposal_id, actor, details, prev_hash, hash
             FROM events ORDER BY id",
        )
        .fetch_all(&self.reader)
        .await?;
        records(&rows)
    }

    /// Walk the whole log in one read snapshot, chain by chain, and check
    /// every chain against its head and the checkpoints naming it, then
    /// that the fact tables and the events agree (see `crate::facts`).
    pub(crate) async fn verify_chain(&self) -> Result<ChainReport, LedgerError> {
        // One snapshot for the heads, the pages and the fact tables: a
        // write committed meanwhile is wholly in it or wholly out.
        let mut tx = self.reader.begin_with(super::SNAPSHOT_READ).await?;
        let heads = read_heads(&mut tx, true).await?;
        let mut checker = ChainChecker::new(heads);
        let mut facts = EventFacts::default();
        let mut after = (String::new(), 0_i64);
        loop {
            let rows = sqlx::query(EVENTS_PAGE)
                .bind(&after.0)
                .bind(after.1)
                .bind(PAGE)
                .fetch_all(&mut *tx)
                .await?;
            let Some(last) = rows.last() else { break };
            after = (last.try_get("chain")?, last.try_get("seq")?);
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
        let mut report = checker.finish();
        if report.first_break.is_none() {
            report.first_break = disagreement.map(|detail| ChainBreak::Disagrees { detail });
        }
        Ok(report)
    }

    /// Write a checkpoint on the global chain naming the head of every
    /// chain whose head moved since the checkpoints before named it
    /// (`checkpointed_heads`), and record those heads there, in one
    /// transaction under `lease` (the checkpoint chore's: `LeaseLost` if
    /// it was taken over) and the global chain's lock. Nothing when no
    /// head moved. Returns how many chains the new checkpoint named.
    pub(crate) async fn checkpoint(&self, lease: &Lease) -> Result<usize, LedgerError> {
        let mut tx = self.write_tx().await?;
        check_fence(&mut tx, lease).await?;
        // The global chain's lock next: checkpoints append one at a time.
        // The other heads are read as committed, without their locks: a
        // chain only grows, so what is named here stays true of it.
        chain_tail(&mut tx, GLOBAL_CHAIN).await?;
        let heads = read_heads(&mut tx, false).await?;
        let named = read_checkpointed(&mut tx).await?;
        let moved: ChainHeads = heads
            .into_iter()
            .filter(|(chain, head)| named.get(chain) != Some(head))
            .collect();
        if moved.is_empty() {
            tx.rollback().await?;
            return Ok(0);
        }
        let at = crate::timefmt::format(crate::timefmt::now())?;
        let details = chain::checkpoint_details(&moved);
        append(
            &mut tx,
            GLOBAL_CHAIN,
            &at,
            CHECKPOINT,
            None,
            "countersign",
            &details,
        )
        .await?;
        for (chain, head) in &moved {
            let count = i64::try_from(head.count)
                .map_err(|_| LedgerError::Corrupt(format!("chain {chain:?}: count overflow")))?;
            sqlx::query(
                "INSERT INTO checkpointed_heads (chain, count, hash) VALUES ($1, $2, $3)
                 ON CONFLICT (chain) DO UPDATE SET count = excluded.count, hash = excluded.hash",
            )
            .bind(chain)
            .bind(count)
            .bind(&head.hash)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(moved.len())
    }
}

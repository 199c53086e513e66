//! The transparency log's storage (shared by both backends; what the tree
//! is and the leaf encoding are in `crate::tlog`): the sequencer, proofs
//! built from the stored leaf and node hashes, and the signed checkpoints.
//! The audit's walk of the tree against the events is `sql/tlog_audit.rs`.
//!
//! The sequencer and the checkpoint store run in a write transaction
//! holding [`lock_tree`]: SQLite's single writer, and on PostgreSQL a
//! transaction-scoped advisory lock, so two signers never sequence or store
//! a checkpoint at once. Event writers never take it: an event insert only
//! queues its row id in `tlog_pending` (migration 12's trigger).

use countersign_tlog::{
    CompactTree, Hash, Subtree, consistency_proof_subtrees, inclusion_proof_subtrees,
    subtree_hash_from_parts,
};
use sqlx::Row as _;

use super::{Conn, DbRow, Db, ROW_LOCKS, Store};
use crate::error::LedgerError;
use crate::tlog::{
    StoredCheckpoint, TreeHead, count, db_int, edge_text, event_leaf_hash, parse_hash, parse_tree,
    push_leaf,
};

/// Events sequenced per transaction.
const CHUNK: i64 = 500;
/// The advisory lock of the tree on PostgreSQL ("cs-tlog").
const TREE_LOCK: i64 = 0x0063_732d_746c_6f67;

/// Hold the tree for the rest of the write transaction (PostgreSQL; on
/// SQLite `BEGIN IMMEDIATE` holds the whole database already).
async fn lock_tree(conn: &mut Conn) -> Result<(), LedgerError> {
    if ROW_LOCKS {
        sqlx::query("SELECT pg_advisory_xact_lock($1)")
            .bind(TREE_LOCK)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// The stored compact tree.
pub(super) async fn read_tree(conn: &mut Conn) -> Result<CompactTree, LedgerError> {
    let row = sqlx::query("SELECT size, edge FROM tlog_tree WHERE singleton = 1")
        .fetch_one(&mut *conn)
        .await?;
    parse_tree(row.try_get("size")?, &row.try_get::<String, _>("edge")?)
}

/// A compact tree's size and root.
pub(super) fn head_of(tree: &CompactTree) -> TreeHead {
    TreeHead {
        size: tree.size(),
        root: tree.root(),
    }
}

/// A `tlog_checkpoints` row.
pub(super) fn stored_checkpoint(row: &DbRow) -> Result<StoredCheckpoint, LedgerError> {
    Ok(StoredCheckpoint {
        size: count(row.try_get("size")?, "checkpoint size")?,
        root: parse_hash(&row.try_get::<String, _>("root")?)?,
        note: row.try_get("note")?,
        signed_at: row.try_get("signed_at")?,
    })
}

/// The latest stored checkpoint.
async fn latest_checkpoint(conn: &mut Conn) -> Result<Option<StoredCheckpoint>, LedgerError> {
    let row = sqlx::query(
        "SELECT size, root, note, signed_at FROM tlog_checkpoints ORDER BY size DESC LIMIT 1",
    )
    .fetch_optional(&mut *conn)
    .await?;
    row.as_ref().map(stored_checkpoint).transpose()
}

/// The Merkle Tree Hash of the leaves `subtree` covers, from the stored
/// hashes of its perfect parts (a leaf, or a node of `tlog_nodes`): one
/// row per set bit of its size.
async fn subtree_root(conn: &mut Conn, subtree: Subtree) -> Result<Hash, LedgerError> {
    let mut parts = Vec::new();
    for part in subtree.perfect_parts() {
        let level = part.len().trailing_zeros();
        let stored: Option<String> = if level == 0 {
            sqlx::query_scalar("SELECT leaf_hash FROM tlog_leaves WHERE leaf_index = $1")
                .bind(db_int(part.start())?)
                .fetch_optional(&mut *conn)
                .await?
        } else {
            sqlx::query_scalar("SELECT hash FROM tlog_nodes WHERE end_size = $1 AND level = $2")
                .bind(db_int(part.end())?)
                .bind(i64::from(level))
                .fetch_optional(&mut *conn)
                .await?
        };
        let stored = stored.ok_or_else(|| {
            LedgerError::Corrupt(format!(
                "the tree has no stored hash of leaves [{}, {})",
                part.start(),
                part.end()
            ))
        })?;
        parts.push(parse_hash(&stored)?);
    }
    subtree_hash_from_parts(&parts)
        .ok_or_else(|| LedgerError::Corrupt("an empty subtree in a proof".into()))
}

/// The hashes of `subtrees`, in order, after checking that the stored tree
/// holds `size` leaves.
async fn proof(
    conn: &mut Conn,
    size: u64,
    subtrees: Vec<Subtree>,
) -> Result<Vec<Hash>, LedgerError> {
    let tree = read_tree(conn).await?;
    if size > tree.size() {
        return Err(LedgerError::BeyondTree {
            asked: size,
            size: tree.size(),
        });
    }
    let mut hashes = Vec::with_capacity(subtrees.len());
    for subtree in subtrees {
        hashes.push(subtree_root(conn, subtree).await?);
    }
    Ok(hashes)
}

impl Store {
    /// Give every event not yet in the tree its leaf, in row id order, a
    /// chunk per transaction, until none is left; the tree as it then is.
    pub(crate) async fn sequence_events(&self) -> Result<TreeHead, LedgerError> {
        // Nothing queued: no write transaction and no tree lock (the
        // notify process's OCSF stream asks this every poll).
        let queued: Option<i64> = sqlx::query_scalar("SELECT event_id FROM tlog_pending LIMIT 1")
            .fetch_optional(&self.reader)
            .await?;
        if queued.is_none() {
            return self.tree_head().await;
        }
        loop {
            let (head, added) = self.sequence_chunk().await?;
            if added < CHUNK {
                return Ok(head);
            }
        }
    }

    /// Sequence up to [`CHUNK`] events in one write transaction: their
    /// leaves, the tree state and the queue, committed together.
    async fn sequence_chunk(&self) -> Result<(TreeHead, i64), LedgerError> {
        let mut tx = self.write_tx().await?;
        lock_tree(&mut tx).await?;
        let mut tree = read_tree(&mut tx).await?;
        let rows = sqlx::query(
            "SELECT e.id, e.chain, e.seq, e.hash FROM tlog_pending p
             JOIN events e ON e.id = p.event_id ORDER BY e.id LIMIT $1",
        )
        .bind(CHUNK)
        .fetch_all(&mut *tx)
        .await?;
        if rows.is_empty() {
            tx.rollback().await?;
            return Ok((head_of(&tree), 0));
        }
        let mut leaves = Vec::with_capacity(rows.len());
        let mut nodes = Vec::with_capacity(rows.len());
        for row in &rows {
            let id: i64 = row.try_get("id")?;
            let chain: String = row.try_get("chain")?;
            let seq: i64 = row.try_get("seq")?;
            let hash: String = row.try_get("hash")?;
            let leaf = event_leaf_hash(&chain, seq, &hash);
            leaves.push((db_int(tree.size())?, id, leaf.to_string()));
            for node in push_leaf(&mut tree, leaf) {
                nodes.push((db_int(node.end_size)?, i64::from(node.level), node.hash.to_string()));
            }
        }
        sqlx::QueryBuilder::<Db>::new("INSERT INTO tlog_leaves (leaf_index, event_id, leaf_hash) ")
            .push_values(&leaves, |mut values, (index, id, hash)| {
                values.push_bind(*index).push_bind(*id).push_bind(hash.as_str());
            })
            .build()
            .execute(&mut *tx)
            .await?;
        if !nodes.is_empty() {
            sqlx::QueryBuilder::<Db>::new("INSERT INTO tlog_nodes (end_size, level, hash) ")
                .push_values(&nodes, |mut values, (end_size, level, hash)| {
                    values
                        .push_bind(*end_size)
                        .push_bind(*level)
                        .push_bind(hash.as_str());
                })
                .build()
                .execute(&mut *tx)
                .await?;
        }
        let mut delete =
            sqlx::QueryBuilder::<Db>::new("DELETE FROM tlog_pending WHERE event_id IN (");
        let mut ids = delete.separated(", ");
        for (_, id, _) in &leaves {
            ids.push_bind(*id);
        }
        delete.push(")").build().execute(&mut *tx).await?;
        sqlx::query("UPDATE tlog_tree SET size = $1, edge = $2 WHERE singleton = 1")
            .bind(db_int(tree.size())?)
            .bind(edge_text(&tree))
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        Ok((head_of(&tree), rows.len() as i64))
    }

    /// The tree as stored.
    pub(crate) async fn tree_head(&self) -> Result<TreeHead, LedgerError> {
        let mut conn = self.reader.acquire().await?;
        Ok(head_of(&read_tree(&mut conn).await?))
    }

    /// The inclusion proof of leaf `index` in the tree of the first `size`
    /// leaves.
    pub(crate) async fn inclusion_proof(
        &self,
        index: u64,
        size: u64,
    ) -> Result<Vec<Hash>, LedgerError> {
        let subtrees = inclusion_proof_subtrees(index, size)?;
        let mut conn = self.reader.acquire().await?;
        proof(&mut conn, size, subtrees).await
    }

    /// The consistency proof from the tree of the first `old` leaves to
    /// the tree of the first `new`.
    pub(crate) async fn consistency_proof(
        &self,
        old: u64,
        new: u64,
    ) -> Result<Vec<Hash>, LedgerError> {
        let subtrees = consistency_proof_subtrees(old, new)?;
        let mut conn = self.reader.acquire().await?;
        proof(&mut conn, new, subtrees).await
    }

    /// The leaf index of the event at position `seq` of `chain`, once
    /// sequenced.
    pub(crate) async fn leaf_of_event(
        &self,
        chain: &str,
        seq: i64,
    ) -> Result<Option<u64>, LedgerError> {
        let index: Option<i64> = sqlx::query_scalar(
            "SELECT l.leaf_index FROM events e JOIN tlog_leaves l ON l.event_id = e.id
             WHERE e.chain = $1 AND e.seq = $2",
        )
        .bind(chain)
        .bind(seq)
        .fetch_optional(&self.reader)
        .await?;
        index.map(|i| count(i, "leaf index")).transpose()
    }

    /// Every sequenced event's leaf index, by the event's row id.
    pub(crate) async fn leaf_indexes(
        &self,
    ) -> Result<std::collections::BTreeMap<i64, u64>, LedgerError> {
        let rows: Vec<(i64, i64)> =
            sqlx::query_as("SELECT event_id, leaf_index FROM tlog_leaves")
                .fetch_all(&self.reader)
                .await?;
        rows.into_iter()
            .map(|(event, index)| Ok((event, count(index, "leaf index")?)))
            .collect()
    }

    /// Every stored checkpoint, smallest first.
    pub(crate) async fn log_checkpoints(&self) -> Result<Vec<StoredCheckpoint>, LedgerError> {
        let rows = sqlx::query(
            "SELECT size, root, note, signed_at FROM tlog_checkpoints ORDER BY size",
        )
        .fetch_all(&self.reader)
        .await?;
        rows.iter().map(stored_checkpoint).collect()
    }

    /// The latest stored checkpoint.
    pub(crate) async fn latest_log_checkpoint(
        &self,
    ) -> Result<Option<StoredCheckpoint>, LedgerError> {
        let mut conn = self.reader.acquire().await?;
        latest_checkpoint(&mut conn).await
    }

    /// Store a signed checkpoint of `head`, if the latest stored one is
    /// still of size `previous` (`None`: there is none), the one the
    /// caller checked the new tree against; and if `head` grows the log
    /// within the sequenced leaves.
    pub(crate) async fn store_log_checkpoint(
        &self,
        previous: Option<u64>,
        head: TreeHead,
        note: &str,
    ) -> Result<StoredCheckpoint, LedgerError> {
        let mut tx = self.write_tx().await?;
        lock_tree(&mut tx).await?;
        let latest = latest_checkpoint(&mut tx).await?.map(|c| c.size);
        if latest != previous {
            return Err(LedgerError::CheckpointSuperseded {
                expected: previous,
                latest,
            });
        }
        let tree = read_tree(&mut tx).await?;
        if head.size <= previous.unwrap_or(0) || head.size > tree.size() {
            return Err(LedgerError::BeyondTree {
                asked: head.size,
                size: tree.size(),
            });
        }
        let signed_at = crate::timefmt::format(crate::timefmt::now())?;
        sqlx::query(
            "INSERT INTO tlog_checkpoints (size, root, note, signed_at) VALUES ($1, $2, $3, $4)",
        )
        .bind(db_int(head.size)?)
        .bind(head.root.to_string())
        .bind(note)
        .bind(&signed_at)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(StoredCheckpoint {
            size: head.size,
            root: head.root,
            note: note.to_owned(),
            signed_at,
        })
    }
}

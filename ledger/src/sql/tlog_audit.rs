//! The audit's walk of the transparency log (shared by both backends; the
//! tree itself is `sql/tlog.rs`): every leaf against its event, every
//! stored perfect subtree hash and every checkpoint's root against the
//! leaves, and the stored compact tree against all of them. Reads only, in
//! one snapshot; the checkpoint's signature is the caller's to check.

use std::collections::VecDeque;

use countersign_tlog::CompactTree;
use sqlx::Row as _;

use super::tlog::{head_of, read_tree, stored_checkpoint};
use super::{DbRow, Store};
use crate::chain::{RawEvent, recorded_event_hash};
use crate::error::LedgerError;
use crate::tlog::{
    Node, StoredCheckpoint, TreeBreak, TreeReport, count, db_int, event_leaf_hash, parse_hash,
    push_leaf,
};

/// Rows read per round trip.
const PAGE: i64 = 5000;

impl Store {
    /// Walk every leaf in one read snapshot: each leaf against its event
    /// (the event's hash recomputed from its content, then its leaf hash),
    /// the stored nodes, the roots of every stored checkpoint and of the
    /// stored tree against the leaves.
    pub(crate) async fn verify_tree(&self) -> Result<TreeReport, LedgerError> {
        let mut tx = self.reader.begin_with(super::SNAPSHOT_READ).await?;
        let stored = read_tree(&mut tx).await?;
        let pending: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM tlog_pending")
            .fetch_one(&mut *tx)
            .await?;
        let checkpoints: Vec<StoredCheckpoint> = sqlx::query(
            "SELECT size, root, note, signed_at FROM tlog_checkpoints ORDER BY size",
        )
        .fetch_all(&mut *tx)
        .await?
        .iter()
        .map(stored_checkpoint)
        .collect::<Result<_, _>>()?;
        let mut walk = TreeWalk {
            tree: CompactTree::new(),
            checkpoints: checkpoints.iter().peekable(),
            nodes: VecDeque::new(),
            nodes_after: (0, 0),
            nodes_done: false,
        };
        let mut first_break = None;
        'pages: loop {
            let rows = sqlx::query(
                "SELECT l.leaf_index, l.event_id, l.leaf_hash, e.id, e.chain, e.seq, e.at,
                        e.kind, e.proposal_id, e.actor, e.details, e.prev_hash, e.hash
                 FROM tlog_leaves l LEFT JOIN events e ON e.id = l.event_id
                 WHERE l.leaf_index >= $1 ORDER BY l.leaf_index LIMIT $2",
            )
            .bind(db_int(walk.tree.size())?)
            .bind(PAGE)
            .fetch_all(&mut *tx)
            .await?;
            if rows.is_empty() {
                break;
            }
            for row in &rows {
                let completed = match walk.push(row) {
                    Ok(completed) => completed,
                    Err(problem) => {
                        first_break = Some(problem);
                        break 'pages;
                    }
                };
                for node in completed {
                    if walk.nodes.is_empty() && !walk.nodes_done {
                        walk.read_nodes(&mut tx).await?;
                    }
                    if let Err(problem) = walk.check_node(node) {
                        first_break = Some(problem);
                        break 'pages;
                    }
                }
                if let Err(problem) = walk.check_checkpoints() {
                    first_break = Some(problem);
                    break 'pages;
                }
            }
        }
        if first_break.is_none() && walk.nodes.is_empty() && !walk.nodes_done {
            walk.read_nodes(&mut tx).await?;
        }
        tx.rollback().await?;
        if first_break.is_none() {
            first_break = walk.finish(&stored);
        }
        Ok(TreeReport {
            head: head_of(&stored),
            pending: count(pending, "pending events")?,
            latest: checkpoints.last().cloned(),
            first_break,
        })
    }
}

/// The audit's walk over the leaves in index order, with the stored nodes
/// read alongside in the order the leaves complete them.
struct TreeWalk<'a> {
    tree: CompactTree,
    checkpoints: std::iter::Peekable<std::slice::Iter<'a, StoredCheckpoint>>,
    /// Stored nodes read ahead, in (end_size, level) order.
    nodes: VecDeque<Node>,
    /// The key of the last node read.
    nodes_after: (i64, i64),
    /// No stored node is left to read.
    nodes_done: bool,
}

impl TreeWalk<'_> {
    /// Read the next page of stored nodes.
    async fn read_nodes(&mut self, conn: &mut super::Conn) -> Result<(), LedgerError> {
        let rows = sqlx::query(
            "SELECT end_size, level, hash FROM tlog_nodes
             WHERE (end_size, level) > ($1, $2) ORDER BY end_size, level LIMIT $3",
        )
        .bind(self.nodes_after.0)
        .bind(self.nodes_after.1)
        .bind(PAGE)
        .fetch_all(&mut *conn)
        .await?;
        self.nodes_done = rows.len() < PAGE as usize;
        for row in &rows {
            let end_size: i64 = row.try_get("end_size")?;
            let level: i64 = row.try_get("level")?;
            let hash: String = row.try_get("hash")?;
            self.nodes_after = (end_size, level);
            let mismatch = LedgerError::Corrupt(format!("node ({end_size}, {level}) unreadable"));
            self.nodes.push_back(Node {
                end_size: count(end_size, "node end")?,
                level: u32::try_from(level).map_err(|_| mismatch)?,
                hash: parse_hash(&hash)?,
            });
        }
        Ok(())
    }

    /// The next stored node is `computed`.
    fn check_node(&mut self, computed: Node) -> Result<(), TreeBreak> {
        let mismatch = TreeBreak::NodeMismatch {
            end_size: computed.end_size,
            level: computed.level,
        };
        match self.nodes.pop_front() {
            Some(stored) if stored == computed => Ok(()),
            Some(stored) if (stored.end_size, stored.level) < (computed.end_size, computed.level) => {
                Err(TreeBreak::NodeMismatch {
                    end_size: stored.end_size,
                    level: stored.level,
                })
            }
            _ => Err(mismatch),
        }
    }

    /// Check the next leaf row (joined with its event); the nodes its leaf
    /// completes.
    fn push(&mut self, row: &DbRow) -> Result<Vec<Node>, TreeBreak> {
        let index = self.tree.size();
        let stored = |e: sqlx::Error| TreeBreak::Unreadable {
            index,
            reason: e.to_string(),
        };
        let found: i64 = row.try_get("leaf_index").map_err(stored)?;
        if u64::try_from(found).ok() != Some(index) {
            return Err(TreeBreak::LeafMissing { missing: index });
        }
        let event_id: i64 = row.try_get("event_id").map_err(stored)?;
        let leaf_text: String = row.try_get("leaf_hash").map_err(stored)?;
        let Some(_) = row.try_get::<Option<i64>, _>("id").map_err(stored)? else {
            return Err(TreeBreak::EventMissing { index, event_id });
        };
        let event = RawEvent {
            id: event_id,
            chain: row.try_get("chain").map_err(stored)?,
            seq: row.try_get("seq").map_err(stored)?,
            at: row.try_get("at").map_err(stored)?,
            kind: row.try_get("kind").map_err(stored)?,
            proposal_id: row.try_get("proposal_id").map_err(stored)?,
            actor: row.try_get("actor").map_err(stored)?,
            details: row.try_get("details").map_err(stored)?,
            prev_hash: row.try_get("prev_hash").map_err(stored)?,
            hash: row.try_get("hash").map_err(stored)?,
        };
        let edited = TreeBreak::EventEdited { index, event_id };
        let (chain, seq, hash) = (event.chain.clone(), event.seq, event.hash.clone());
        let record = event.into_record().map_err(|_| edited.clone())?;
        let computed = recorded_event_hash(&record, seq).map_err(|_| edited.clone())?;
        if computed != hash {
            return Err(edited);
        }
        let leaf = event_leaf_hash(&chain, seq, &hash);
        if parse_hash(&leaf_text).ok() != Some(leaf) {
            return Err(TreeBreak::LeafMismatch { index, event_id });
        }
        Ok(push_leaf(&mut self.tree, leaf))
    }

    /// The checkpoints of the size reached so far sign its root.
    fn check_checkpoints(&mut self) -> Result<(), TreeBreak> {
        while let Some(checkpoint) = self.checkpoints.next_if(|c| c.size <= self.tree.size()) {
            if checkpoint.size < self.tree.size() || checkpoint.root != self.tree.root() {
                return Err(TreeBreak::CheckpointRootMismatch {
                    size: checkpoint.size,
                });
            }
        }
        Ok(())
    }

    /// After the last leaf: the stored tree, and no node or checkpoint
    /// beyond it.
    fn finish(mut self, stored: &CompactTree) -> Option<TreeBreak> {
        if self.tree.size() < stored.size() {
            return Some(TreeBreak::LeafMissing {
                missing: self.tree.size(),
            });
        }
        if self.tree.size() > stored.size() || self.tree.root() != stored.root() {
            return Some(TreeBreak::RootMismatch {
                size: stored.size(),
            });
        }
        if let Some(beyond) = self.nodes.pop_front() {
            return Some(TreeBreak::NodeMismatch {
                end_size: beyond.end_size,
                level: beyond.level,
            });
        }
        if let Some(beyond) = self.checkpoints.next() {
            return Some(TreeBreak::CheckpointBeyondTree {
                size: beyond.size,
                tree: stored.size(),
            });
        }
        None
    }
}

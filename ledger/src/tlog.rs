//! The transparency log over the event log (issue 49): every event, of
//! every chain, is a leaf of one RFC 6962 Merkle tree, so that a signed
//! checkpoint of the tree (its size and root) commits to the whole ledger,
//! and one event's inclusion, or one checkpoint's consistency with an
//! earlier one, is proven with a logarithmic number of hashes.
//!
//! # Leaves
//!
//! An event enters the tree when the sequencer (run by the signer) takes
//! it, not when it is written: event writes of different principals never
//! wait for one another, and the sequencer assigns the next leaf indexes to
//! the events committed since its last run, in the order of their row ids.
//! Once assigned, a leaf's index never changes.
//!
//! The leaf data of an event is, version 1 (UTF-8, no trailing newline):
//!
//! ```text
//! countersign-event/v1\n<chain>\n<seq>\n<hash>
//! ```
//!
//! `<chain>` is the event's chain name (empty for the global chain),
//! `<seq>` its position in that chain in canonical decimal (from 1), and
//! `<hash>` its chain hash, 64 lowercase hex digits (see `crate::chain`).
//! The chain hash commits to the event's content and to every earlier
//! event of its chain, so the leaf commits to them too. The encoding is
//! unambiguous: the last line is the hash, the one before it the position,
//! and everything between the version line and those is the chain name.
//! The leaf hash is RFC 6962's `SHA-256(0x00 || leaf data)`.
//!
//! # Storage
//!
//! Migration 12: `tlog_pending` (events not yet sequenced, queued by the
//! event insert's own trigger), `tlog_leaves` (index, event id, leaf hash;
//! append-only), `tlog_nodes` (the hash of every complete aligned perfect
//! subtree of two or more leaves, keyed by where it ends and its level,
//! written with the leaf that completes it, so that a proof reads
//! O(log^2 n) rows and never the leaves; append-only), `tlog_tree` (the compact tree: size and right-edge hashes,
//! advanced in the same transaction as the leaves it adds) and
//! `tlog_checkpoints` (every signed checkpoint; append-only). The
//! sequencer and the checkpoint store run under the ledger's single writer
//! on SQLite, and under a transaction-scoped advisory lock on PostgreSQL,
//! so two signers never sequence, or store a checkpoint, at once.
//!
//! This module owns the leaf encoding and the types the API returns; it
//! holds no SQL (that is `sql/tlog.rs`) and no key (checkpoints are signed
//! by the signer's log key).

use countersign_tlog::{CompactTree, Hash, VerifierKey, node_hash, open_checkpoint};

use crate::error::LedgerError;

// The leaf encoding is defined once, beside the evidence verifier that
// checks it.
pub use countersign_evidence::event::{LEAF_VERSION, event_leaf_hash, leaf_data};

/// The tree's size and root.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TreeHead {
    /// The number of leaves (events sequenced).
    pub size: u64,
    /// The RFC 6962 root hash.
    pub root: Hash,
}

/// A signed checkpoint as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredCheckpoint {
    /// The tree size it signs.
    pub size: u64,
    /// The root it signs.
    pub root: Hash,
    /// The whole signed note (checkpoint body, blank line, signatures).
    pub note: String,
    /// When it was signed (the ledger's timestamp form).
    pub signed_at: String,
}

/// The result of checking the tree against the events.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TreeReport {
    /// The tree as stored (size and root of the stored compact tree).
    pub head: TreeHead,
    /// Events written but not sequenced yet.
    pub pending: u64,
    /// The latest signed checkpoint, if any.
    pub latest: Option<StoredCheckpoint>,
    /// The first problem found, if any.
    pub first_break: Option<TreeBreak>,
}

impl TreeReport {
    /// True when every leaf matches its event and every root matches.
    pub fn is_intact(&self) -> bool {
        self.first_break.is_none()
    }
}

/// The first inconsistency found between the tree and the events.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TreeBreak {
    /// A leaf's stored hash is not the hash of its event's leaf data: the
    /// event (or the leaf) was changed after it was sequenced.
    #[error("leaf {index} does not match its event (event {event_id})")]
    LeafMismatch {
        /// The leaf index.
        index: u64,
        /// The event's row id.
        event_id: i64,
    },
    /// An event in the tree does not hash to its stored chain hash: its
    /// content was edited after it was written.
    #[error("the event of leaf {index} (event {event_id}) was edited")]
    EventEdited {
        /// The leaf index.
        index: u64,
        /// The event's row id.
        event_id: i64,
    },
    /// A leaf or its event cannot be read.
    #[error("leaf {index} is unreadable: {reason}")]
    Unreadable {
        /// The leaf index.
        index: u64,
        /// What is wrong with it.
        reason: String,
    },
    /// The latest checkpoint's note does not verify under the log key, or
    /// does not sign the size and root stored beside it.
    #[error("the checkpoint of size {size} is not validly signed: {reason}")]
    CheckpointSignature {
        /// The checkpoint's size.
        size: u64,
        /// Why it was refused.
        reason: String,
    },
    /// A leaf names an event that no longer exists.
    #[error("leaf {index} names event {event_id}, which is missing")]
    EventMissing {
        /// The leaf index.
        index: u64,
        /// The missing event's row id.
        event_id: i64,
    },
    /// Leaf indexes are not `0..size` without gaps.
    #[error("leaf {missing} is missing")]
    LeafMissing {
        /// The first missing index.
        missing: u64,
    },
    /// The leaves do not hash to the stored compact tree's root.
    #[error("the leaves do not hash to the stored tree root (size {size})")]
    RootMismatch {
        /// The stored tree size.
        size: u64,
    },
    /// The leaves do not hash to a stored checkpoint's root.
    #[error("the leaves do not hash to the root of the checkpoint of size {size}")]
    CheckpointRootMismatch {
        /// The checkpoint's size.
        size: u64,
    },
    /// A stored perfect subtree hash is not the hash of its leaves, is
    /// missing, or is beyond the tree.
    #[error("the stored node of level {level} ending at leaf {end_size} does not match the leaves")]
    NodeMismatch {
        /// One past the node's last leaf.
        end_size: u64,
        /// Its level (`2^level` leaves).
        level: u32,
    },
    /// A checkpoint signs a size larger than the tree.
    #[error("the checkpoint of size {size} is beyond the tree (size {tree})")]
    CheckpointBeyondTree {
        /// The checkpoint's size.
        size: u64,
        /// The tree's size.
        tree: u64,
    },
}

/// Checks that `checkpoint`'s note is a C2SP checkpoint signed by
/// `log_key`, whose origin is the key's name (the log's origin, see the
/// signer's `log_key`), and that it signs the size and root stored beside
/// it (which the tree walk checks against the leaves).
pub fn verify_checkpoint_signature(
    checkpoint: &StoredCheckpoint,
    log_key: &VerifierKey,
) -> Result<(), TreeBreak> {
    let refused = |reason: String| TreeBreak::CheckpointSignature {
        size: checkpoint.size,
        reason,
    };
    let verified = open_checkpoint(
        checkpoint.note.as_bytes(),
        log_key.name().as_str(),
        log_key,
        &[],
    )
    .map_err(|e| refused(e.to_string()))?;
    let signed = verified.checkpoint();
    if signed.size() != checkpoint.size || *signed.root() != checkpoint.root {
        return Err(refused(format!(
            "the note signs size {} and root {}, not the stored {} and {}",
            signed.size(),
            signed.root(),
            checkpoint.size,
            checkpoint.root
        )));
    }
    Ok(())
}

/// A complete, aligned perfect subtree of `2^level` leaves (`level >= 1`)
/// ending before leaf `end_size`, and its hash.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Node {
    pub(crate) end_size: u64,
    pub(crate) level: u32,
    pub(crate) hash: Hash,
}

/// Appends `leaf` to `tree`, returning the perfect subtrees it completes,
/// lowest level first (one per trailing one bit of the old size: the
/// merges [`CompactTree::push`] makes).
pub(crate) fn push_leaf(tree: &mut CompactTree, leaf: Hash) -> Vec<Node> {
    let end_size = tree.size() + 1;
    let edge = tree.edge();
    let mut merged = leaf;
    let mut nodes = Vec::new();
    for (level, left) in (1..=tree.size().trailing_ones()).zip(edge.iter().rev()) {
        merged = node_hash(left, &merged);
        nodes.push(Node {
            end_size,
            level,
            hash: merged,
        });
    }
    tree.push(leaf);
    nodes
}

/// The compact tree stored as `size` and comma-separated hex `edge`.
pub(crate) fn parse_tree(size: i64, edge: &str) -> Result<CompactTree, LedgerError> {
    let size = u64::try_from(size)
        .map_err(|_| LedgerError::Corrupt(format!("tree size {size} is negative")))?;
    let hashes = if edge.is_empty() {
        Vec::new()
    } else {
        edge.split(',')
            .map(parse_hash)
            .collect::<Result<Vec<_>, _>>()?
    };
    CompactTree::from_parts(size, hashes).map_err(|e| LedgerError::Corrupt(format!("tree: {e}")))
}

/// The stored form of a compact tree's edge.
pub(crate) fn edge_text(tree: &CompactTree) -> String {
    tree.edge()
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// A stored hash: 64 lowercase hex digits.
pub(crate) fn parse_hash(text: &str) -> Result<Hash, LedgerError> {
    let bytes = hex::decode(text).ok().filter(|_| text.len() == 64);
    bytes
        .as_deref()
        .and_then(Hash::from_slice)
        .filter(|hash| hash.to_string() == text)
        .ok_or_else(|| LedgerError::Corrupt(format!("stored hash {text:?} is not 32 bytes of hex")))
}

/// A stored count as `u64`.
pub(crate) fn count(value: i64, what: &str) -> Result<u64, LedgerError> {
    u64::try_from(value).map_err(|_| LedgerError::Corrupt(format!("{what} {value} is negative")))
}

/// A `u64` as a database integer.
pub(crate) fn db_int(value: u64) -> Result<i64, LedgerError> {
    i64::try_from(value).map_err(|_| LedgerError::Corrupt(format!("{value} exceeds i64")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use countersign_tlog::leaf_hash;

    #[test]
    fn leaf_data_is_the_documented_encoding() {
        let hash = "ab".repeat(32);
        assert_eq!(
            leaf_data("pr_1", 7, &hash),
            format!("countersign-event/v1\npr_1\n7\n{hash}")
        );
        assert_eq!(
            leaf_data("", 1, &hash),
            format!("countersign-event/v1\n\n1\n{hash}")
        );
        assert_eq!(
            event_leaf_hash("", 1, &hash),
            leaf_hash(format!("countersign-event/v1\n\n1\n{hash}").as_bytes())
        );
    }

    #[test]
    fn pushing_a_leaf_yields_the_perfect_subtrees_it_completes() {
        let leaves: Vec<Hash> = (0..13u8).map(|i| leaf_hash(&[i])).collect();
        let mut tree = CompactTree::new();
        let mut nodes = Vec::new();
        for leaf in &leaves {
            nodes.extend(push_leaf(&mut tree, *leaf));
        }
        // One node per aligned perfect subtree of 2, 4 or 8 of 13 leaves.
        assert_eq!(nodes.len(), 6 + 3 + 1);
        for node in nodes {
            let len = 1u64 << node.level;
            let start = (node.end_size - len) as usize;
            assert_eq!(node.end_size % len, 0);
            assert_eq!(
                node.hash,
                countersign_tlog::root(&leaves[start..node.end_size as usize])
            );
        }
        assert_eq!(tree.root(), countersign_tlog::root(&leaves));
    }

    #[test]
    fn stored_tree_round_trips_and_refuses_bad_edges() {
        let mut tree = CompactTree::new();
        for i in 0..5u8 {
            tree.push(leaf_hash(&[i]));
        }
        assert_eq!(parse_tree(5, &edge_text(&tree)).unwrap(), tree);
        assert_eq!(parse_tree(0, "").unwrap(), CompactTree::new());
        assert!(matches!(
            parse_tree(4, &edge_text(&tree)),
            Err(LedgerError::Corrupt(_))
        ));
        assert!(matches!(parse_tree(-1, ""), Err(LedgerError::Corrupt(_))));
        let upper = edge_text(&tree).to_uppercase();
        assert!(matches!(
            parse_tree(5, &upper),
            Err(LedgerError::Corrupt(_))
        ));
    }
}

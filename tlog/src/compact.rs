//! The compact representation of an append-only tree: the hashes of its
//! perfect subtrees along the right edge (one per set bit of the size), enough
//! to append leaves and compute the root without reading earlier leaves.
//!
//! This module owns appending and the right-edge root computation; it keeps
//! no leaves and proves nothing (see [`crate::tree`] for proofs).

use crate::hash::{Hash, node_hash};
use crate::tree::TreeError;

/// The right edge of an RFC 6962 tree: for each set bit of the tree size,
/// from the highest to the lowest, the hash of the perfect subtree of that
/// many leaves. A log stores this beside its leaves, appends to it, and signs
/// its [`root`](CompactTree::root).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CompactTree {
    size: u64,
    /// Perfect subtree hashes, largest (leftmost) first.
    edge: Vec<Hash>,
}

impl CompactTree {
    /// The empty tree.
    pub fn new() -> CompactTree {
        CompactTree::default()
    }

    /// Restores a tree from its size and its right edge, as returned by
    /// [`edge`](CompactTree::edge): exactly one hash per set bit of `size`.
    pub fn from_parts(size: u64, edge: Vec<Hash>) -> Result<CompactTree, TreeError> {
        let expected = size.count_ones() as usize;
        if edge.len() != expected {
            return Err(TreeError::EdgeLength {
                size,
                expected,
                got: edge.len(),
            });
        }
        Ok(CompactTree { size, edge })
    }

    /// The number of leaves.
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The perfect subtree hashes along the right edge, largest first.
    pub fn edge(&self) -> &[Hash] {
        &self.edge
    }

    /// Appends one leaf hash, merging equal-sized perfect subtrees.
    pub fn push(&mut self, leaf: Hash) {
        let mut merged = leaf;
        // Each trailing one bit of the old size is a perfect subtree of the
        // same height as `merged`: merge them right to left.
        let mut carries = self.size.trailing_ones();
        while carries > 0 {
            // `edge` holds one hash per set bit, so a trailing one bit always
            // has its hash at the end.
            let Some(left) = self.edge.pop() else { break };
            merged = node_hash(&left, &merged);
            carries -= 1;
        }
        self.edge.push(merged);
        // No log appends 2^64 leaves one at a time.
        self.size += 1;
    }

    /// The Merkle Tree Hash of the leaves appended so far.
    pub fn root(&self) -> Hash {
        fold_edge(&self.edge).unwrap_or(Hash::EMPTY_ROOT)
    }
}

/// Combines perfect subtree hashes, largest (leftmost) first, into the hash of
/// the subtree they make up: `node(h0, node(h1, ... node(hn-1, hn)))`. `None`
/// for an empty list.
pub fn fold_edge(edge: &[Hash]) -> Option<Hash> {
    let (last, rest) = edge.split_last()?;
    Some(
        rest.iter()
            .rev()
            .fold(*last, |right, left| node_hash(left, &right)),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;
    use crate::hash::leaf_hash;

    #[test]
    fn refuses_an_edge_that_does_not_match_the_size() {
        let leaf = leaf_hash(b"x");
        assert_eq!(
            CompactTree::from_parts(3, vec![leaf]),
            Err(TreeError::EdgeLength {
                size: 3,
                expected: 2,
                got: 1
            })
        );
        assert_eq!(
            CompactTree::from_parts(0, vec![leaf]),
            Err(TreeError::EdgeLength {
                size: 0,
                expected: 0,
                got: 1
            })
        );
    }

    #[test]
    fn restored_tree_keeps_appending_like_the_original() {
        let mut original = CompactTree::new();
        for i in 0u8..11 {
            original.push(leaf_hash(&[i]));
        }
        let mut restored =
            CompactTree::from_parts(original.size(), original.edge().to_vec()).unwrap();
        original.push(leaf_hash(b"next"));
        restored.push(leaf_hash(b"next"));
        assert_eq!(original, restored);
        assert_eq!(restored.edge().len(), 12u64.count_ones() as usize);
    }
}

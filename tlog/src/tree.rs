//! Proof construction (RFC 9162 sections 2.1.3.1 and 2.1.4.1): which subtrees
//! an inclusion or consistency proof is made of, and the proofs themselves
//! over a slice of leaf hashes.
//!
//! A log whose leaf hashes live in a database asks
//! [`inclusion_proof_subtrees`] or [`consistency_proof_subtrees`] which
//! subtree hashes it needs, and hashes each one from its leaves (or from
//! stored perfect subtrees, [`Subtree::perfect_parts`]). This module does no
//! verification (see [`crate::proof`]).

use thiserror::Error;

use crate::compact::fold_edge;
use crate::hash::{Hash, root};

/// Why a proof or a tree could not be built from the arguments given.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum TreeError {
    /// The leaf index is not below the tree size.
    #[error("leaf index {index} is not in a tree of size {size}")]
    IndexOutOfRange {
        /// The index asked for.
        index: u64,
        /// The tree size.
        size: u64,
    },
    /// The old tree is larger than the new one.
    #[error("old tree size {old} exceeds new tree size {new}")]
    OldSizeExceedsNewSize {
        /// The old size.
        old: u64,
        /// The new size.
        new: u64,
    },
    /// A consistency proof from the empty tree proves nothing and has no
    /// defined form.
    #[error("a consistency proof from the empty tree is meaningless")]
    OldTreeEmpty,
    /// A subtree reaches past the leaves given.
    #[error("subtree [{start}, {end}) is not within {size} leaves")]
    SubtreeOutOfRange {
        /// The subtree's first leaf.
        start: u64,
        /// One past the subtree's last leaf.
        end: u64,
        /// The number of leaves available.
        size: u64,
    },
    /// A compact tree's right edge does not have one hash per set bit of its
    /// size.
    #[error("a tree of size {size} has {expected} right-edge hashes, not {got}")]
    EdgeLength {
        /// The tree size.
        size: u64,
        /// `size.count_ones()`.
        expected: usize,
        /// The number of hashes given.
        got: usize,
    },
}

/// A non-empty run of consecutive leaves `[start, end)` whose Merkle Tree Hash
/// appears in a proof.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Subtree {
    start: u64,
    end: u64,
}

impl Subtree {
    /// The index of the first leaf.
    pub fn start(&self) -> u64 {
        self.start
    }

    /// One past the index of the last leaf.
    pub fn end(&self) -> u64 {
        self.end
    }

    /// The number of leaves (never zero).
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// Always false: subtrees in proofs are never empty. Present for the
    /// `len_without_is_empty` convention.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// Whether the subtree is a complete binary tree: its size is a power of
    /// two (those in proofs also start at a multiple of their size).
    pub fn is_perfect(&self) -> bool {
        self.len().is_power_of_two()
    }

    /// The perfect subtrees this subtree's hash is built from, largest
    /// (leftmost) first: one per set bit of its size. For a subtree taken from
    /// a proof, each starts at a multiple of its own size, so a log that
    /// stores aligned perfect subtree hashes ("tiles") can look them up and
    /// combine them with [`subtree_hash_from_parts`].
    pub fn perfect_parts(&self) -> Vec<Subtree> {
        let mut parts = Vec::with_capacity(self.len().count_ones() as usize);
        let mut start = self.start;
        let mut remaining = self.len();
        while remaining > 0 {
            let part = largest_power_of_two_at_most(remaining);
            parts.push(Subtree {
                start,
                end: start + part,
            });
            start += part;
            remaining -= part;
        }
        parts
    }
}

/// The hash of a subtree from the hashes of its
/// [`perfect_parts`](Subtree::perfect_parts), in the same order. `None` when
/// no part is given.
pub fn subtree_hash_from_parts(parts: &[Hash]) -> Option<Hash> {
    fold_edge(parts)
}

/// The subtrees whose hashes make up the inclusion proof of leaf `index` in a
/// tree of `size` leaves (RFC 9162 section 2.1.3.1, `PATH(m, D[n])`), from
/// the leaf's sibling up to the root's child.
pub fn inclusion_proof_subtrees(index: u64, size: u64) -> Result<Vec<Subtree>, TreeError> {
    if index >= size {
        return Err(TreeError::IndexOutOfRange { index, size });
    }
    let mut out = Vec::new();
    path(index, 0, size, &mut out);
    Ok(out)
}

/// The subtrees whose hashes make up the consistency proof from a tree of
/// `old_size` leaves to one of `new_size` leaves (RFC 9162 section 2.1.4.1,
/// `PROOF(m, D[n])`). Empty when the sizes are equal.
pub fn consistency_proof_subtrees(old_size: u64, new_size: u64) -> Result<Vec<Subtree>, TreeError> {
    if old_size > new_size {
        return Err(TreeError::OldSizeExceedsNewSize {
            old: old_size,
            new: new_size,
        });
    }
    if old_size == 0 {
        return Err(TreeError::OldTreeEmpty);
    }
    let mut out = Vec::new();
    subproof(old_size, 0, new_size, true, &mut out);
    Ok(out)
}

/// The Merkle Tree Hash of a subtree of `leaves`.
pub fn subtree_hash(leaves: &[Hash], subtree: Subtree) -> Result<Hash, TreeError> {
    let out_of_range = || TreeError::SubtreeOutOfRange {
        start: subtree.start,
        end: subtree.end,
        size: leaves.len() as u64,
    };
    let start = usize::try_from(subtree.start).map_err(|_| out_of_range())?;
    let end = usize::try_from(subtree.end).map_err(|_| out_of_range())?;
    leaves.get(start..end).map(root).ok_or_else(out_of_range)
}

/// The inclusion proof of leaf `index` in the tree whose leaves are `leaves`
/// (its size is `leaves.len()`). Linear in the number of leaves.
pub fn inclusion_proof(leaves: &[Hash], index: u64) -> Result<Vec<Hash>, TreeError> {
    inclusion_proof_subtrees(index, leaves.len() as u64)?
        .into_iter()
        .map(|subtree| subtree_hash(leaves, subtree))
        .collect()
}

/// The consistency proof from the tree of the first `old_size` of `leaves` to
/// the tree of all of them. Linear in the number of leaves.
pub fn consistency_proof(leaves: &[Hash], old_size: u64) -> Result<Vec<Hash>, TreeError> {
    consistency_proof_subtrees(old_size, leaves.len() as u64)?
        .into_iter()
        .map(|subtree| subtree_hash(leaves, subtree))
        .collect()
}

/// The largest power of two not above `n` (`n > 0`).
fn largest_power_of_two_at_most(n: u64) -> u64 {
    1 << (63 - n.leading_zeros())
}

/// The largest power of two strictly below `n` (`n > 1`): RFC 6962's `k`.
fn split_point(n: u64) -> u64 {
    largest_power_of_two_at_most(n - 1)
}

/// `PATH(m, D[start:end])`, appending the subtrees leaf-side first.
fn path(index: u64, start: u64, end: u64, out: &mut Vec<Subtree>) {
    let n = end - start;
    if n <= 1 {
        return;
    }
    let mid = start + split_point(n);
    if index < mid {
        path(index, start, mid, out);
        out.push(Subtree { start: mid, end });
    } else {
        path(index, mid, end, out);
        out.push(Subtree { start, end: mid });
    }
}

/// `SUBPROOF(m, D[start:end], b)`, `old` counted from `start`.
fn subproof(old: u64, start: u64, end: u64, whole_old_tree: bool, out: &mut Vec<Subtree>) {
    let n = end - start;
    if old == n {
        if !whole_old_tree {
            out.push(Subtree { start, end });
        }
        return;
    }
    let k = split_point(n);
    let mid = start + k;
    if old <= k {
        subproof(old, start, mid, whole_old_tree, out);
        out.push(Subtree { start: mid, end });
    } else {
        subproof(old - k, mid, end, false, out);
        out.push(Subtree { start, end: mid });
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    fn st(start: u64, end: u64) -> Subtree {
        Subtree { start, end }
    }

    #[test]
    fn inclusion_subtrees_follow_the_rfc_split() {
        assert_eq!(inclusion_proof_subtrees(0, 1), Ok(vec![]));
        assert_eq!(
            inclusion_proof_subtrees(0, 7),
            Ok(vec![st(1, 2), st(2, 4), st(4, 7)])
        );
        assert_eq!(inclusion_proof_subtrees(6, 7), Ok(vec![st(4, 6), st(0, 4)]));
        assert_eq!(
            inclusion_proof_subtrees(7, 7),
            Err(TreeError::IndexOutOfRange { index: 7, size: 7 })
        );
    }

    #[test]
    fn consistency_subtrees_follow_the_rfc_split() {
        assert_eq!(consistency_proof_subtrees(4, 4), Ok(vec![]));
        assert_eq!(consistency_proof_subtrees(4, 7), Ok(vec![st(4, 7)]));
        assert_eq!(
            consistency_proof_subtrees(3, 7),
            Ok(vec![st(2, 3), st(3, 4), st(0, 2), st(4, 7)])
        );
        assert_eq!(
            consistency_proof_subtrees(0, 7),
            Err(TreeError::OldTreeEmpty)
        );
        assert_eq!(
            consistency_proof_subtrees(8, 7),
            Err(TreeError::OldSizeExceedsNewSize { old: 8, new: 7 })
        );
    }

    #[test]
    fn perfect_parts_are_aligned_powers_of_two() {
        assert_eq!(st(4, 7).perfect_parts(), vec![st(4, 6), st(6, 7)]);
        assert_eq!(st(0, 8).perfect_parts(), vec![st(0, 8)]);
        assert_eq!(
            st(16, 29).perfect_parts(),
            vec![st(16, 24), st(24, 28), st(28, 29)]
        );
    }

    #[test]
    fn refuses_a_subtree_beyond_the_leaves() {
        let leaves = [Hash::EMPTY_ROOT; 3];
        assert_eq!(
            subtree_hash(&leaves, st(2, 4)),
            Err(TreeError::SubtreeOutOfRange {
                start: 2,
                end: 4,
                size: 3
            })
        );
    }
}

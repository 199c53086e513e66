//! Proof verification, exactly the algorithms of RFC 9162 sections 2.1.3.2
//! (inclusion) and 2.1.4.2 (consistency), with a specific refusal for each
//! way a proof can fail.
//!
//! This module only checks proofs against hashes the caller already trusts
//! (a root from a verified checkpoint); it builds no proofs and reads no
//! signatures.

use thiserror::Error;

use crate::hash::{Hash, node_hash};

/// Why an inclusion or consistency proof was refused.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProofError {
    /// The leaf index is not below the tree size.
    #[error("leaf index {index} is not in a tree of size {size}")]
    IndexOutOfRange {
        /// The claimed leaf index.
        index: u64,
        /// The claimed tree size.
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
    /// A consistency proof from the empty tree proves nothing.
    #[error("a consistency proof from the empty tree is meaningless")]
    OldTreeEmpty,
    /// The sizes are equal, so the proof must be empty, and it is not.
    #[error("the tree sizes are equal but the proof is not empty")]
    ProofNotEmpty,
    /// The sizes differ, so the proof cannot be empty, and it is.
    #[error("the consistency proof is empty")]
    EmptyProof,
    /// The proof has more hashes than the tree shape allows.
    #[error("the proof has more hashes than the tree shape allows")]
    ProofTooLong,
    /// The proof has fewer hashes than the tree shape needs.
    #[error("the proof has fewer hashes than the tree shape needs")]
    ProofTooShort,
    /// The proof does not lead to the old tree's root.
    #[error("the proof does not lead to the old root")]
    OldRootMismatch,
    /// The proof does not lead to the (new) tree's root.
    #[error("the proof does not lead to the root")]
    RootMismatch,
}

/// Verifies that `leaf_hash` is the leaf at `index` in the tree of `size`
/// leaves whose root is `root` (RFC 9162 section 2.1.3.2).
///
/// The size enters only through the proof's shape: a proof for one size is
/// also accepted for another size whose proofs have the same shape, against
/// the same root. Take `size` and `root` together from one verified
/// checkpoint, never from separate sources.
pub fn verify_inclusion(
    leaf_hash: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
    root: &Hash,
) -> Result<(), ProofError> {
    let computed = root_from_inclusion_proof(leaf_hash, index, size, proof)?;
    if computed == *root {
        Ok(())
    } else {
        Err(ProofError::RootMismatch)
    }
}

/// The root that an inclusion proof of `leaf_hash` at `index` leads to in a
/// tree of `size` leaves, if the proof has the shape that tree requires.
/// Trust it only after comparing it to a root from a verified checkpoint.
pub fn root_from_inclusion_proof(
    leaf_hash: &Hash,
    index: u64,
    size: u64,
    proof: &[Hash],
) -> Result<Hash, ProofError> {
    // 1. Compare leaf_index against tree_size.
    if index >= size {
        return Err(ProofError::IndexOutOfRange { index, size });
    }
    // 2. Set fn to leaf_index and sn to tree_size - 1.
    let mut fnode = index;
    let mut snode = size - 1;
    // 3. Set r to hash.
    let mut r = *leaf_hash;
    // 4. For each value p in the inclusion_path array:
    for p in proof {
        // a. If sn is 0, stop the iteration and fail the proof verification.
        if snode == 0 {
            return Err(ProofError::ProofTooLong);
        }
        // b. If LSB(fn) is set, or if fn is equal to sn, then:
        if fnode & 1 == 1 || fnode == snode {
            // i. Set r to HASH(0x01 || p || r).
            r = node_hash(p, &r);
            // ii. If LSB(fn) is not set, then right-shift both fn and sn
            // equally until either LSB(fn) is set or fn is 0.
            if fnode & 1 == 0 {
                while fnode & 1 == 0 && fnode != 0 {
                    fnode >>= 1;
                    snode >>= 1;
                }
            }
        } else {
            // Otherwise: set r to HASH(0x01 || r || p).
            r = node_hash(&r, p);
        }
        // c. Finally, right-shift both fn and sn one time.
        fnode >>= 1;
        snode >>= 1;
    }
    // 5. Compare sn to 0 (the comparison of r is the caller's).
    if snode != 0 {
        return Err(ProofError::ProofTooShort);
    }
    Ok(r)
}

/// Verifies that the tree of `old_size` leaves with root `old_root` is a
/// prefix of the tree of `new_size` leaves with root `new_root` (RFC 9162
/// section 2.1.4.2). Equal sizes need an empty proof and equal roots; an old
/// size of zero is refused, as the proof would be meaningless.
pub fn verify_consistency(
    old_size: u64,
    new_size: u64,
    proof: &[Hash],
    old_root: &Hash,
    new_root: &Hash,
) -> Result<(), ProofError> {
    if old_size > new_size {
        return Err(ProofError::OldSizeExceedsNewSize {
            old: old_size,
            new: new_size,
        });
    }
    if old_size == 0 {
        return Err(ProofError::OldTreeEmpty);
    }
    if old_size == new_size {
        if !proof.is_empty() {
            return Err(ProofError::ProofNotEmpty);
        }
        return if old_root == new_root {
            Ok(())
        } else {
            Err(ProofError::RootMismatch)
        };
    }
    // 1. If consistency_path is an empty array, stop and fail.
    let Some((first, rest)) = proof.split_first() else {
        return Err(ProofError::EmptyProof);
    };
    // 2. If first is an exact power of 2, prepend first_hash to the path.
    let (start, path) = if old_size.is_power_of_two() {
        (old_root, proof)
    } else {
        (first, rest)
    };
    // 3. Set fn to first - 1 and sn to second - 1.
    let mut fnode = old_size - 1;
    let mut snode = new_size - 1;
    // 4. If LSB(fn) is set, right-shift both fn and sn equally until
    // LSB(fn) is not set.
    while fnode & 1 == 1 {
        fnode >>= 1;
        snode >>= 1;
    }
    // 5. Set both fr and sr to the first value in the consistency_path array.
    let mut fr = *start;
    let mut sr = *start;
    // 6. For each subsequent value c in the consistency_path array:
    for c in path {
        // a. If sn is 0, stop the iteration and fail the proof verification.
        if snode == 0 {
            return Err(ProofError::ProofTooLong);
        }
        // b. If LSB(fn) is set, or if fn is equal to sn, then:
        if fnode & 1 == 1 || fnode == snode {
            // i. Set fr to HASH(0x01 || c || fr).
            fr = node_hash(c, &fr);
            // ii. Set sr to HASH(0x01 || c || sr).
            sr = node_hash(c, &sr);
            // iii. If LSB(fn) is not set, then right-shift both fn and sn
            // equally until either LSB(fn) is set or fn is 0.
            if fnode & 1 == 0 {
                while fnode & 1 == 0 && fnode != 0 {
                    fnode >>= 1;
                    snode >>= 1;
                }
            }
        } else {
            // Otherwise: set sr to HASH(0x01 || sr || c).
            sr = node_hash(&sr, c);
        }
        // c. Finally, right-shift both fn and sn one time.
        fnode >>= 1;
        snode >>= 1;
    }
    // 7. Verify that fr equals first_hash, sr equals second_hash, and sn is 0.
    if snode != 0 {
        return Err(ProofError::ProofTooShort);
    }
    if fr != *old_root {
        return Err(ProofError::OldRootMismatch);
    }
    if sr != *new_root {
        return Err(ProofError::RootMismatch);
    }
    Ok(())
}

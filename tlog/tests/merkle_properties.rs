//! Property checks over every tree of 1 to 64 leaves: every generated
//! inclusion and consistency proof verifies, and every single-byte change to a
//! proof, root or leaf, and every wrong index or size, is refused.
#![allow(clippy::unwrap_used)]

use countersign_tlog::{
    CompactTree, Hash, ProofError, TreeError, consistency_proof, inclusion_proof, leaf_hash, root,
    verify_consistency, verify_inclusion,
};

const MAX: u64 = 64;

fn leaves() -> Vec<Hash> {
    (0..MAX).map(|i| leaf_hash(&i.to_be_bytes())).collect()
}

/// Every byte position in the smaller trees; three positions in the larger
/// ones, where every byte would only repeat the same SHA-256 input change
/// and cost tens of seconds in a debug build.
fn bytes_to_flip(size: u64) -> Vec<usize> {
    if size <= 16 {
        (0..32).collect()
    } else {
        vec![0, 13, 31]
    }
}

/// Wrong values for `right` within `lo..=hi`: its neighbours, its double and
/// half, and both bounds (trying every wrong value multiplies a debug build's
/// run time without reaching another case: the proof shape changes at these
/// points).
fn wrong(right: u64, lo: u64, hi: u64) -> impl Iterator<Item = u64> {
    let mut values = vec![
        right.saturating_sub(1),
        right + 1,
        right * 2,
        right / 2,
        lo,
        hi,
    ];
    values.retain(|&v| v != right && (lo..=hi).contains(&v));
    values.sort_unstable();
    values.dedup();
    values.into_iter()
}

fn flipped(hash: &Hash, byte: usize) -> Hash {
    let mut out = *hash;
    out.0[byte] ^= 0x01;
    out
}

#[test]
fn compact_tree_root_matches_the_recursive_definition() {
    // MTH by the RFC 6962 recursion, independently of the crate's fold.
    fn mth(leaves: &[Hash]) -> Hash {
        match leaves.len() {
            0 => Hash::EMPTY_ROOT,
            1 => leaves[0],
            n => {
                let k = (n - 1).next_power_of_two().max(1);
                let k = if k >= n { k / 2 } else { k };
                countersign_tlog::node_hash(&mth(&leaves[..k]), &mth(&leaves[k..]))
            }
        }
    }
    let leaves = leaves();
    let mut compact = CompactTree::new();
    for size in 1..=MAX as usize {
        compact.push(leaves[size - 1]);
        assert_eq!(compact.root(), mth(&leaves[..size]), "size {size}");
        assert_eq!(root(&leaves[..size]), mth(&leaves[..size]), "size {size}");
    }
}

#[test]
fn every_inclusion_proof_verifies_and_every_tampering_is_refused() {
    let leaves = leaves();
    let roots: Vec<Hash> = (0..=MAX as usize).map(|n| root(&leaves[..n])).collect();
    for size in 1..=MAX {
        let tree = &leaves[..size as usize];
        let tree_root = roots[size as usize];
        for index in 0..size {
            let leaf = leaves[index as usize];
            let proof = inclusion_proof(tree, index).unwrap();
            assert_eq!(
                verify_inclusion(&leaf, index, size, &proof, &tree_root),
                Ok(())
            );

            for element in 0..proof.len() {
                for byte in bytes_to_flip(size) {
                    let mut bad = proof.clone();
                    bad[element] = flipped(&bad[element], byte);
                    assert_eq!(
                        verify_inclusion(&leaf, index, size, &bad, &tree_root),
                        Err(ProofError::RootMismatch)
                    );
                }
            }
            for byte in [0, 17, 31] {
                assert_eq!(
                    verify_inclusion(&flipped(&leaf, byte), index, size, &proof, &tree_root),
                    Err(ProofError::RootMismatch)
                );
                assert_eq!(
                    verify_inclusion(&leaf, index, size, &proof, &flipped(&tree_root, byte)),
                    Err(ProofError::RootMismatch)
                );
            }
            let sibling = (index ^ 1 < size && index ^ 1 != index).then_some(index ^ 1);
            for other in wrong(index, 0, size - 1).chain(sibling) {
                assert!(verify_inclusion(&leaf, other, size, &proof, &tree_root).is_err());
            }
            for other in wrong(size, 1, MAX).filter(|&o| index < o) {
                // Claiming another size with that size's root always fails.
                // (With the original root, a size whose proof has the same
                // shape is accepted: the size is bound to a root only by the
                // signed checkpoint that carries both.)
                assert!(
                    verify_inclusion(&leaf, index, other, &proof, &roots[other as usize]).is_err()
                );
            }
            if !proof.is_empty() {
                assert_eq!(
                    verify_inclusion(&leaf, index, size, &proof[1..], &tree_root),
                    Err(ProofError::ProofTooShort)
                );
            }
            let mut longer = proof.clone();
            longer.push(leaf);
            assert_eq!(
                verify_inclusion(&leaf, index, size, &longer, &tree_root),
                Err(ProofError::ProofTooLong)
            );
        }
        assert_eq!(
            inclusion_proof(tree, size),
            Err(TreeError::IndexOutOfRange { index: size, size })
        );
        assert_eq!(
            verify_inclusion(&leaves[0], size, size, &[], &tree_root),
            Err(ProofError::IndexOutOfRange { index: size, size })
        );
    }
}

#[test]
fn every_consistency_proof_verifies_and_every_tampering_is_refused() {
    let leaves = leaves();
    let roots: Vec<Hash> = (0..=MAX as usize).map(|n| root(&leaves[..n])).collect();
    for new in 1..=MAX {
        let tree = &leaves[..new as usize];
        let new_root = roots[new as usize];
        for old in 1..=new {
            let old_root = roots[old as usize];
            let proof = consistency_proof(tree, old).unwrap();
            assert_eq!(
                verify_consistency(old, new, &proof, &old_root, &new_root),
                Ok(())
            );

            for element in 0..proof.len() {
                for byte in bytes_to_flip(new) {
                    let mut bad = proof.clone();
                    bad[element] = flipped(&bad[element], byte);
                    assert!(
                        verify_consistency(old, new, &bad, &old_root, &new_root).is_err(),
                        "old {old} new {new} element {element} byte {byte}"
                    );
                }
            }
            for byte in [0, 31] {
                assert!(
                    verify_consistency(old, new, &proof, &flipped(&old_root, byte), &new_root)
                        .is_err()
                );
                assert!(
                    verify_consistency(old, new, &proof, &old_root, &flipped(&new_root, byte))
                        .is_err()
                );
            }
            for other in wrong(old, 1, new) {
                assert!(
                    verify_consistency(other, new, &proof, &roots[other as usize], &new_root)
                        .is_err(),
                    "proof {old}->{new} accepted as {other}->{new}"
                );
            }
            for other in wrong(new, old, MAX) {
                assert!(
                    verify_consistency(old, other, &proof, &old_root, &roots[other as usize])
                        .is_err(),
                    "proof {old}->{new} accepted as {old}->{other}"
                );
            }
        }
        assert_eq!(
            verify_consistency(new, new, &[new_root], &new_root, &new_root),
            Err(ProofError::ProofNotEmpty)
        );
        assert_eq!(
            verify_consistency(0, new, &[], &Hash::EMPTY_ROOT, &new_root),
            Err(ProofError::OldTreeEmpty)
        );
        assert_eq!(
            verify_consistency(new + 1, new, &[], &new_root, &new_root),
            Err(ProofError::OldSizeExceedsNewSize { old: new + 1, new })
        );
        if new > 1 {
            assert_eq!(
                verify_consistency(1, new, &[], &roots[1], &new_root),
                Err(ProofError::EmptyProof)
            );
        }
    }
}

//! The transparency log's formats, for issue 49: every ledger event is a leaf
//! of one RFC 6962 Merkle tree, the log signs C2SP checkpoints of it, and
//! witnesses cosign them.
//!
//! - [`hash`]: RFC 6962 leaf, node and tree hashes.
//! - [`compact`]: the right edge of an append-only tree (append, root).
//! - [`tree`]: which subtrees make up a proof, and proofs over leaf hashes.
//! - [`proof`]: RFC 9162 inclusion and consistency proof verification.
//!
//! Pure code: no I/O, no clock, no randomness. Callers supply leaf hashes,
//! timestamps and key seeds.
#![forbid(unsafe_code)]

pub mod compact;
pub mod hash;
pub mod proof;
pub mod tree;

pub use compact::CompactTree;
pub use hash::{HASH_SIZE, Hash, leaf_hash, node_hash, root};
pub use proof::{ProofError, root_from_inclusion_proof, verify_consistency, verify_inclusion};
pub use tree::{
    Subtree, TreeError, consistency_proof, consistency_proof_subtrees, inclusion_proof,
    inclusion_proof_subtrees, subtree_hash, subtree_hash_from_parts,
};

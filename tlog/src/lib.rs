//! The transparency log's formats, for issue 49: every ledger event is a leaf
//! of one RFC 6962 Merkle tree, the log signs C2SP checkpoints of it, and
//! witnesses cosign them.
//!
//! - [`hash`]: RFC 6962 leaf, node and tree hashes.
//! - [`compact`]: the right edge of an append-only tree (append, root).
//! - [`tree`]: which subtrees make up a proof, and proofs over leaf hashes.
//! - [`proof`]: RFC 9162 inclusion and consistency proof verification.
//! - [`keys`]: key names, key IDs and verifier keys of signed notes.
//! - [`note`]: C2SP signed notes: parse, sign, verify.
//! - [`checkpoint`]: C2SP tlog-checkpoint bodies and signed checkpoints.
//! - [`cosignature`]: the C2SP tlog-cosignature (type 0x04) message.
//! - [`tlog_proof`]: C2SP tlog-proof, the offline inclusion proof bundle.
//! - [`policy`]: C2SP tlog-policy, the logs, witnesses and quorum a
//!   verifier trusts.
//! - [`witness`]: the C2SP tlog-witness `add-checkpoint` request body and
//!   the witness's answer.
//!
//! Pure code: no I/O, no clock, no randomness, and no private key: notes
//! are signed through [`NoteSigner`], whose keys live in the signer crate
//! (`countersign_signer::note_keys`), the only crate that names a signing
//! key. Callers supply leaf hashes and timestamps.
#![forbid(unsafe_code)]

pub mod checkpoint;
pub mod compact;
pub mod cosignature;
#[cfg(any(test, feature = "fuzzing"))]
pub mod fuzzing;
pub mod hash;
pub mod keys;
pub mod note;
pub mod policy;
pub mod proof;
pub mod tlog_proof;
pub mod tree;
pub mod witness;

pub use checkpoint::{
    Checkpoint, CheckpointError, VerifiedCheckpoint, open_checkpoint, verify_checkpoint,
};
pub use compact::CompactTree;
pub use cosignature::{COSIGNATURE_SIZE, cosignature_message, cosignature_timestamp};
pub use hash::{HASH_SIZE, Hash, leaf_hash, node_hash, root};
pub use keys::{KeyError, KeyId, KeyName, SignatureType, VerifierKey};
pub use note::{
    MAX_SIGNATURES, Note, NoteError, NoteSignature, NoteSigner, TrustedKeys, VerifiedNote,
    VerifiedSignature, sign_note,
};
pub use policy::{Policy, PolicyCheckError, PolicyError, PolicyLog, PolicyWitness};
pub use proof::{ProofError, root_from_inclusion_proof, verify_consistency, verify_inclusion};
pub use tlog_proof::{TlogProof, TlogProofError, VerifiedTlogProof};
pub use tree::{
    Subtree, TreeError, consistency_proof, consistency_proof_subtrees, inclusion_proof,
    inclusion_proof_subtrees, subtree_hash, subtree_hash_from_parts,
};

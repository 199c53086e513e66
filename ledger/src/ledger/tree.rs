//! The transparency log's part of the [`Ledger`] API (see `crate::tlog`):
//! sequencing events into the tree, proofs, and the signed checkpoints.
//! Forwards each call to the backend; holds no SQL.

use countersign_tlog::Hash;

use super::{Backend, Ledger};
use crate::error::LedgerError;
use crate::tlog::{StoredCheckpoint, TreeHead, TreeReport};

impl Ledger {
    /// Give every event not yet in the tree the next leaf index, in row
    /// id order, storing each leaf hash and the compact tree in the same
    /// transaction; the tree as it then is. Run by the signer only: on
    /// PostgreSQL it holds an advisory lock, so two signers never sequence
    /// at once; event writers never wait for it.
    pub async fn sequence_events(&self) -> Result<TreeHead, LedgerError> {
        dispatch!(self, b => b.sequence_events().await)
    }

    /// The tree as stored (its events sequenced so far).
    pub async fn tree_head(&self) -> Result<TreeHead, LedgerError> {
        dispatch!(self, b => b.tree_head().await)
    }

    /// The RFC 9162 inclusion proof of leaf `leaf_index` in the tree of
    /// its first `size` leaves: `BeyondTree` if the log has fewer, `Proof`
    /// if the index is not below `size`.
    pub async fn inclusion_proof(
        &self,
        leaf_index: u64,
        size: u64,
    ) -> Result<Vec<Hash>, LedgerError> {
        dispatch!(self, b => b.inclusion_proof(leaf_index, size).await)
    }

    /// The RFC 9162 consistency proof from the tree of the first `old`
    /// leaves to the tree of the first `new`: `BeyondTree` if the log has
    /// fewer than `new`, `Proof` if `old` is 0 or above `new`.
    pub async fn consistency_proof(&self, old: u64, new: u64) -> Result<Vec<Hash>, LedgerError> {
        dispatch!(self, b => b.consistency_proof(old, new).await)
    }

    /// The leaf index of the event at position `seq` of `chain`; `None`
    /// until it is sequenced (or if there is no such event).
    pub async fn leaf_of_event(&self, chain: &str, seq: i64) -> Result<Option<u64>, LedgerError> {
        dispatch!(self, b => b.leaf_of_event(chain, seq).await)
    }

    /// Every sequenced event's leaf index, by the event's row id
    /// ([`EventRecord::id`](crate::EventRecord)): one read for an export
    /// of the whole ledger. An event not yet sequenced is absent.
    pub async fn leaf_indexes(&self) -> Result<std::collections::BTreeMap<i64, u64>, LedgerError> {
        dispatch!(self, b => b.leaf_indexes().await)
    }

    /// The sequenced events from leaf `from` on (at most `limit`), each
    /// with its leaf index, in leaf order: a reader that goes on from the
    /// leaf after the last one it saw misses no event.
    pub async fn events_from_leaf(
        &self,
        from: u64,
        limit: u32,
    ) -> Result<Vec<(u64, crate::EventRecord)>, LedgerError> {
        dispatch!(self, b => b.events_from_leaf(from, limit).await)
    }

    /// Every signed checkpoint stored, smallest first.
    pub async fn log_checkpoints(&self) -> Result<Vec<StoredCheckpoint>, LedgerError> {
        dispatch!(self, b => b.log_checkpoints().await)
    }

    /// The latest signed checkpoint stored, if any.
    pub async fn latest_log_checkpoint(&self) -> Result<Option<StoredCheckpoint>, LedgerError> {
        dispatch!(self, b => b.latest_log_checkpoint().await)
    }

    /// Store `note`, a checkpoint of `head` signed by the log key, after
    /// the caller verified `head` consistent with the latest stored
    /// checkpoint, of size `previous` (`None`: there was none). Refused
    /// with `CheckpointSuperseded` if the latest is no longer that one,
    /// and `BeyondTree` if `head` does not grow the log or is beyond the
    /// sequenced leaves. The caller's own check is what makes the note
    /// trustworthy: this only keeps the stored sequence the one checked.
    pub async fn store_log_checkpoint(
        &self,
        previous: Option<u64>,
        head: TreeHead,
        note: &str,
    ) -> Result<StoredCheckpoint, LedgerError> {
        dispatch!(self, b => b.store_log_checkpoint(previous, head, note).await)
    }

    /// Walk the whole tree in one read snapshot: every leaf against its
    /// event (whose hash is recomputed from its content), the stored
    /// tree's root and every checkpoint's root against the leaves. The
    /// checkpoint's signature is checked by the caller, which holds the
    /// log's public key ([`crate::verify_checkpoint_signature`]).
    pub async fn verify_tree(&self) -> Result<TreeReport, LedgerError> {
        dispatch!(self, b => b.verify_tree().await)
    }
}

//! Signed checkpoints of the transparency log: sequence the events written
//! since the last run into the tree and, if it grew, sign a C2SP checkpoint
//! of it with the log key and store it. Run in the checkpoint loop
//! (`crate::checkpoint`), at start, every minute and at shutdown.
//!
//! Never two inconsistent checkpoints: before signing, the latest stored
//! checkpoint must verify under the log key (or one it retired), and the new tree must be
//! consistent with it by an RFC 9162 consistency proof built from the
//! stored leaves and checked with the tlog verifier. Otherwise nothing is
//! signed, and the refusal is logged as an error: someone changed the
//! ledger's tree, and the operator must find out who before anything else
//! is signed. The ledger then stores the note only if no other checkpoint
//! was stored meanwhile, so the stored sequence is the one checked.

use countersign_ledger::{
    Ledger, LedgerError, StoredCheckpoint, TreeBreak, verify_checkpoint_signature,
};
use countersign_tlog::{Checkpoint, CheckpointError, NoteError, ProofError, verify_consistency};

use crate::log_key::LogKey;

/// Why no checkpoint was signed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LogCheckpointError {
    /// The ledger could not sequence, prove or store.
    #[error("ledger: {0}")]
    Ledger(#[from] LedgerError),
    /// The latest stored checkpoint is not one this log key signed for
    /// its stored size and root.
    #[error("the latest stored checkpoint does not verify: {0}")]
    LatestUnverified(TreeBreak),
    /// The tree is not consistent with the latest stored checkpoint: the
    /// stored leaves or tree state were changed. Nothing is signed.
    #[error(
        "the tree of size {new_size} is not consistent with the checkpoint of size {old_size}: {error}"
    )]
    Inconsistent {
        /// The latest checkpoint's size.
        old_size: u64,
        /// The tree's size now.
        new_size: u64,
        /// How the consistency proof failed.
        error: ProofError,
    },
    /// The checkpoint body could not be formed (an origin that is not one
    /// line of note text).
    #[error("checkpoint: {0}")]
    Checkpoint(#[from] CheckpointError),
    /// The log key did not sign.
    #[error("signing: {0}")]
    Sign(#[from] NoteError),
}

/// Sequence new events and, if the tree grew since the latest stored
/// checkpoint, sign and store a checkpoint of it (returned); `None` when
/// the tree did not grow.
pub async fn sign_new_checkpoint(
    ledger: &Ledger,
    key: &LogKey,
) -> Result<Option<StoredCheckpoint>, LogCheckpointError> {
    let head = ledger.sequence_events().await?;
    let latest = ledger.latest_log_checkpoint().await?;
    let previous = latest.as_ref().map(|c| c.size);
    if head.size <= previous.unwrap_or(0) {
        return Ok(None);
    }
    if let Some(latest) = &latest {
        verify_latest(latest, key)?;
        let proof = ledger.consistency_proof(latest.size, head.size).await?;
        verify_consistency(latest.size, head.size, &proof, &latest.root, &head.root).map_err(
            |error| LogCheckpointError::Inconsistent {
                old_size: latest.size,
                new_size: head.size,
                error,
            },
        )?;
    }
    let body = Checkpoint::new(&key.origin(), head.size, head.root)?;
    let note = key.sign(&body)?;
    let stored = ledger
        .store_log_checkpoint(previous, head, &note.to_string())
        .await?;
    Ok(Some(stored))
}

/// The latest stored checkpoint verifies under the log key, or under one
/// it retired (the last checkpoints before a rotation); the refusal is the
/// current key's.
fn verify_latest(latest: &StoredCheckpoint, key: &LogKey) -> Result<(), LogCheckpointError> {
    let current = verify_checkpoint_signature(latest, &key.verifier_key());
    if current.is_ok()
        || key
            .retired()
            .iter()
            .any(|retired| verify_checkpoint_signature(latest, retired).is_ok())
    {
        return Ok(());
    }
    current.map_err(LogCheckpointError::LatestUnverified)
}

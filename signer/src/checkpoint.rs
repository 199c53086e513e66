//! The ledger's checkpoints, written by the signer: a `checkpoint` event on
//! the global chain naming the head of every principal's chain that moved
//! since the one before (see `countersign_ledger::Ledger::checkpoint`), so
//! a chain cut below it, its head rewritten to match, is still detected by
//! `countersign audit --verify`. The signer writes one when it starts
//! serving, every [`CHECKPOINT_EVERY`] while it serves, and one when it
//! stops; nothing when no chain moved. Each time, after the chains'
//! checkpoint, it sequences the new events into the transparency log and
//! signs a checkpoint of the tree if it grew (`crate::log_checkpoint`).

use std::sync::Arc;
use std::time::Duration;

use countersign_ledger::ChainHeads;

use crate::log_checkpoint::LogCheckpointError;

use crate::state::SignerState;

/// How often a serving signer checkpoints the chains that moved.
pub const CHECKPOINT_EVERY: Duration = Duration::from_secs(60);

/// The heads the last checkpoint of this signer named.
#[derive(Debug, Default)]
pub(crate) struct Checkpoints {
    named: tokio::sync::Mutex<ChainHeads>,
}

impl Checkpoints {
    /// Write a checkpoint of the chains that moved since the last one;
    /// a failure is logged and retried at the next.
    pub(crate) async fn write(&self, state: &SignerState) {
        let mut named = self.named.lock().await;
        match state.ledger.checkpoint(&named).await {
            Ok(written) => {
                if written.named > 0 {
                    tracing::debug!(chains = written.named, "ledger checkpoint written");
                }
                *named = written.heads;
            }
            Err(e) => tracing::warn!("ledger checkpoint not written: {e}"),
        }
        // Still holding `named`: this process signs one checkpoint at a
        // time (the loop's and the shutdown's never race each other).
        sign_tree(state).await;
    }
}

/// Sequence the new events into the transparency log and sign a
/// checkpoint of the tree if it grew; a refusal is logged as an error.
async fn sign_tree(state: &SignerState) {
    let Some(key) = &state.log_key else {
        return;
    };
    match crate::log_checkpoint::sign_new_checkpoint(&state.ledger, key).await {
        Ok(Some(signed)) => {
            tracing::debug!(size = signed.size, "transparency log checkpoint signed");
        }
        Ok(None) => {}
        Err(
            e @ (LogCheckpointError::Inconsistent { .. } | LogCheckpointError::LatestUnverified(_)),
        ) => {
            tracing::error!(
                "REFUSED to sign a transparency log checkpoint: {e}; the ledger's tree was changed, find out how before trusting it"
            );
        }
        Err(e) => tracing::warn!("transparency log checkpoint not signed: {e}"),
    }
}

/// Checkpoint every [`CHECKPOINT_EVERY`] from now, until dropped.
pub(crate) async fn every_interval(state: Arc<SignerState>) {
    let first = tokio::time::Instant::now() + CHECKPOINT_EVERY;
    let mut ticks = tokio::time::interval_at(first, CHECKPOINT_EVERY);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        state.checkpoints.write(&state).await;
    }
}

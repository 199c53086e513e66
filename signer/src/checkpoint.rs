//! The ledger's checkpoints, written by the signer: a `checkpoint` event on
//! the global chain naming the head of every principal's chain that moved
//! since the one before (see `countersign_ledger::Ledger::checkpoint`), so
//! a chain cut below it, its head rewritten to match, is still detected by
//! `countersign audit --verify`. The signer writes one when it starts
//! serving, every [`CHECKPOINT_EVERY`] while it serves (`[signer]
//! checkpoint_every_secs`), and one when it stops; nothing when no chain
//! moved. Each time, after the chains'
//! checkpoint, it sequences the new events into the transparency log and
//! signs a checkpoint of the tree if it grew (`crate::log_checkpoint`).
//!
//! With two signers on one ledger, one of them does this: the one holding
//! the checkpoint chore's lease (taken or renewed at each round, given
//! back when it stops). What the last checkpoint named is in the ledger,
//! not in the holder's memory, so the next holder names only what moved
//! since. The chains' checkpoint is fenced by the lease's token; the
//! tree's is stored only if no other checkpoint was stored since the one
//! it was checked against (`Ledger::store_log_checkpoint`), so a holder
//! paused past its lease that resumes writes neither.

use std::sync::Arc;
use std::time::Duration;

use countersign_ledger::leases::CHECKPOINTS_CHORE;
use countersign_ledger::{Lease, LedgerError};

use crate::log_checkpoint::LogCheckpointError;

use crate::state::SignerState;

/// How often a serving signer checkpoints the chains that moved, unless
/// configured.
pub const CHECKPOINT_EVERY: Duration =
    Duration::from_secs(countersign_identity::DEFAULT_CHECKPOINT_EVERY_SECS);

/// How many intervals the checkpoint chore's lease runs from each
/// renewal: a holder late for one renewal keeps it, and a signer killed
/// (or paused) while holding it hands it over within three (3 minutes at
/// the default interval).
pub const LEASE_INTERVALS: u32 = 3;

/// This signer's part in the checkpoint chore: its holder id, its
/// interval and the lease it last took.
#[derive(Debug)]
pub(crate) struct Checkpoints {
    holder: String,
    every: Duration,
    held: tokio::sync::Mutex<Option<Lease>>,
}

impl Checkpoints {
    /// This signer's part, on `ledger`. A SQLite ledger has one signer
    /// (`Ledger::claim_sole_signer`), so every signer process of it is the
    /// same holder, and one restarted after a crash takes the chore back at
    /// once; on PostgreSQL each process is a holder of its own.
    pub(crate) fn on(ledger: &countersign_ledger::Ledger) -> Checkpoints {
        let holder = if ledger.is_sqlite() {
            "the sole signer".to_owned()
        } else {
            holder_id()
        };
        Checkpoints {
            holder,
            every: CHECKPOINT_EVERY,
            held: tokio::sync::Mutex::new(None),
        }
    }

    /// The same, checkpointing every `every`.
    pub(crate) fn every(self, every: Duration) -> Checkpoints {
        Checkpoints { every, ..self }
    }

    /// Take or renew the checkpoint chore and, holding it, write a
    /// checkpoint of the chains that moved and sign the tree's; while
    /// another signer holds it, nothing. A failure is logged and retried
    /// at the next.
    pub(crate) async fn write(&self, state: &SignerState) {
        // Held throughout: this process writes one checkpoint at a time
        // (the loop's and the shutdown's never race each other).
        let mut held = self.held.lock().await;
        let ttl = time::Duration::try_from(self.every * LEASE_INTERVALS)
            .unwrap_or(time::Duration::MINUTE);
        let lease = match state
            .ledger
            .take_lease(CHECKPOINTS_CHORE, &self.holder, ttl)
            .await
        {
            Ok(Some(lease)) => lease,
            Ok(None) => {
                tracing::debug!("another signer holds the checkpoint chore");
                *held = None;
                return;
            }
            Err(e) => {
                tracing::warn!("checkpoint chore not taken: {e}");
                return;
            }
        };
        // Test-only: paused here, holding a lease that may run out.
        countersign_ledger::fault::pause_point("signer_paused_in_checkpoint");
        match state.ledger.checkpoint(&lease).await {
            Ok(0) => {}
            Ok(named) => tracing::debug!(chains = named, "ledger checkpoint written"),
            Err(e @ LedgerError::LeaseLost { .. }) => {
                tracing::warn!("ledger checkpoint not written: {e}");
                *held = None;
                return;
            }
            Err(e) => tracing::warn!("ledger checkpoint not written: {e}"),
        }
        sign_tree(state).await;
        *held = Some(lease);
    }

    /// The id this process takes the lease under.
    #[cfg(feature = "testing")]
    pub(crate) fn holder(&self) -> &str {
        &self.holder
    }

    /// The last checkpoint, when the signer stops: written as any other,
    /// then the chore is given back so that another signer takes it at
    /// its next round rather than after the lease.
    pub(crate) async fn write_last(&self, state: &SignerState) {
        self.write(state).await;
        if let Some(lease) = self.held.lock().await.take()
            && let Err(e) = state.ledger.give_back_lease(&lease).await
        {
            tracing::warn!("checkpoint chore not given back: {e}");
        }
    }
}

/// A holder id for this process: its host name and 8 random bytes.
fn holder_id() -> String {
    let host = countersign_identity::host::host_name();
    let mut random = [0u8; 8];
    // Without the system's randomness, the process id still tells this
    // process from another on the same host.
    let suffix = match getrandom::fill(&mut random) {
        Ok(()) => hex::encode(random),
        Err(_) => format!("pid{}", std::process::id()),
    };
    format!("{host}/{suffix}")
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

/// Checkpoint at the configured interval from now, until dropped.
pub(crate) async fn every_interval(state: Arc<SignerState>) {
    let every = state.checkpoints.every;
    let first = tokio::time::Instant::now() + every;
    let mut ticks = tokio::time::interval_at(first, every);
    ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticks.tick().await;
        // A rotation or retirement made meanwhile, published. A key the
        // ledger retired while this signer serves is no longer served
        // (`published_keys::served`), so heads refuse what it signs; the
        // operator must rotate, and a restart refuses until then.
        if let Err(e) = crate::published_keys::publish_keys(&state).await {
            tracing::error!("{e}: stop this signer and rotate its key");
        }
        state.checkpoints.write(&state).await;
    }
}

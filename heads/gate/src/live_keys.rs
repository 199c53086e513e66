//! The public keys a gate verifies with, kept current while a head runs: a
//! rotation at the signer reaches a long-running head without a restart.
//!
//! Owns: when the key ring is fetched again from the signer (PublicKeys over
//! the head's connection): when a proof names a key id the ring lacks, and
//! when the ring is older than [`KeyRefresh::max_age`] at the next use. Both
//! go through one rate limit shared by every clone of the gate and every
//! concurrent caller: at most one fetch per [`KeyRefresh::min_interval`], so
//! a flood of proofs with made-up key ids costs the signer one call per
//! interval. A failed fetch keeps the ring it had. Must not: decide whether
//! a proof is valid (that is the verifier's), or hold anything private.

use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use countersign_proto::v1::signer_client::SignerClient;
use countersign_verifier::KeyRing;
use tokio::sync::Mutex;
use tonic::transport::Channel;

use crate::signer_client;

/// How often a gate may and must fetch the signer's keys again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KeyRefresh {
    /// At most one fetch per this interval, whatever asks for it.
    pub min_interval: Duration,
    /// A ring older than this is fetched again at its next use.
    pub max_age: Duration,
}

impl Default for KeyRefresh {
    /// One fetch per 5 seconds at most; every 5 minutes at least (when used).
    fn default() -> Self {
        KeyRefresh {
            min_interval: Duration::from_secs(5),
            max_age: Duration::from_secs(300),
        }
    }
}

/// A key ring that follows the signer.
#[derive(Debug)]
pub(crate) struct LiveKeys {
    ring: RwLock<Arc<KeyRing>>,
    /// The signer connection to fetch from; `None`: a fixed ring.
    source: Option<SignerClient<Channel>>,
    refresh: KeyRefresh,
    /// Held across a fetch, so concurrent callers wait for it instead of
    /// fetching again.
    attempts: Mutex<Attempts>,
}

/// When the ring was fetched, and when a refresh was last tried.
#[derive(Debug)]
struct Attempts {
    /// When the ring in use was fetched (or, after a failed refresh, when
    /// that refresh was tried: a failing signer is not asked at every use).
    fetched_at: Instant,
    /// The last refresh tried; `None` until the first, so a rotation right
    /// after the head started is learned at once.
    last_refresh: Option<Instant>,
}

impl LiveKeys {
    /// A ring that never changes (a short-lived command, tests).
    pub(crate) fn fixed(ring: KeyRing) -> LiveKeys {
        LiveKeys::new(ring, None, KeyRefresh::default())
    }

    /// A ring fetched at `Instant::now()`, refreshed from `source`.
    pub(crate) fn new(
        ring: KeyRing,
        source: Option<SignerClient<Channel>>,
        refresh: KeyRefresh,
    ) -> LiveKeys {
        LiveKeys {
            ring: RwLock::new(Arc::new(ring)),
            source,
            refresh,
            attempts: Mutex::new(Attempts {
                fetched_at: Instant::now(),
                last_refresh: None,
            }),
        }
    }

    /// The ring as it is now, without fetching.
    pub(crate) fn fixed_ring(&self) -> KeyRing {
        self.snapshot().as_ref().clone()
    }

    fn snapshot(&self) -> Arc<KeyRing> {
        // A poisoned lock only means a panic while swapping an Arc: the
        // value inside is whole.
        self.ring
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The ring to verify with now: fetched again first if it is older than
    /// `max_age` (and the rate limit allows).
    pub(crate) async fn current(&self) -> Arc<KeyRing> {
        if self.source.is_some() {
            let stale = self.attempts.lock().await.fetched_at.elapsed() >= self.refresh.max_age;
            if stale {
                return self.refresh().await;
            }
        }
        self.snapshot()
    }

    /// The ring after a fetch, if the rate limit allows one now; else the
    /// ring as it is. Called when a proof names a key id the ring lacks.
    pub(crate) async fn refresh(&self) -> Arc<KeyRing> {
        let Some(source) = &self.source else {
            return self.snapshot();
        };
        let mut attempts = self.attempts.lock().await;
        if attempts
            .last_refresh
            .is_some_and(|last| last.elapsed() < self.refresh.min_interval)
        {
            return self.snapshot();
        }
        let now = Instant::now();
        attempts.last_refresh = Some(now);
        attempts.fetched_at = now;
        match signer_client::public_keys(&mut source.clone()).await {
            Ok(ring) => {
                tracing::info!(
                    keys = ring.len(),
                    "verifying keys refreshed from the signer"
                );
                let ring = Arc::new(ring);
                *self
                    .ring
                    .write()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = ring.clone();
                ring
            }
            Err(e) => {
                tracing::warn!(error = %e, "cannot refresh the verifying keys; keeping the last ones");
                self.snapshot()
            }
        }
    }
}

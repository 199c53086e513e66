//! Notifications without authority: when a proposal waits for a person,
//! or a passkey is enrolled or removed, the signer tells them through every
//! channel of `[notify]` (a Standard Webhooks POST, an email, a desktop
//! notification). A notification holds
//! the proposal id, operation, arguments digest and console link: never a
//! proof, never a link that decides on GET (the console decides only on a
//! CSRF-guarded POST of a paired session).
//!
//! `Propose` only puts the notification on a bounded queue
//! ([`QUEUE_CAPACITY`]) and never waits: a full queue drops it, counted
//! and shown by `countersign notify status`. A background task
//! (`worker`) delivers, retries with backoff and jitter (`retry`), and
//! records every delivery's state in the signer's directory (`store`), so
//! pending retries survive a restart and failures stay visible. No proof
//! and no secret goes into a notification, the state file or a log line.

mod channels;
mod desktop;
pub mod message;
mod report;
mod retry;
mod smtp;
mod store;
pub mod webhook;
mod worker;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use countersign_identity::{Config, ConsoleConfig};
use countersign_ledger::Proposal;
use tokio::sync::mpsc;

pub(crate) use channels::Channels;
use message::{Notification, PasskeyChange};
use store::{Deliveries, StateFile};

/// Notifications waiting for the background task; more are dropped.
pub const QUEUE_CAPACITY: usize = 256;

/// Why notifications cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotifyError {
    /// A `[notify]` setting cannot be used (the message names it).
    #[error("{0}")]
    Config(String),
    /// The delivery state file cannot be read or written.
    #[error("notification state: {0}")]
    State(String),
}

/// The signer's notification sender: disabled without `[notify]`.
#[derive(Debug, Default)]
pub struct Notifier {
    inner: Option<Inner>,
}

#[derive(Debug)]
struct Inner {
    queue: mpsc::Sender<Notification>,
    deliveries: Arc<Mutex<Deliveries>>,
    channels: Arc<Channels>,
    /// Notifications dropped because the queue was full.
    dropped: AtomicU64,
    /// The console's address and whether passkeys are configured (which
    /// moves its loopback host to `localhost`).
    console: Option<ConsoleConfig>,
}

impl Notifier {
    /// Starts the background task for `config`'s `[notify]` section, its
    /// state in `signer_dir`, resuming pending deliveries; without the
    /// section, a notifier that sends nothing. Must run inside a Tokio
    /// runtime. The task ends when the notifier is dropped.
    pub async fn start(config: &Config, signer_dir: &Path) -> Result<Notifier, NotifyError> {
        let Some(notify) = &config.notify else {
            return Ok(Notifier::default());
        };
        let channels = Arc::new(Channels::from_config(notify).await?);
        let file = StateFile::in_dir(signer_dir);
        let mut loaded = file.load()?;
        worker::settle_on_start(&mut loaded, &channels);
        file.save(&loaded)?;
        let deliveries = Arc::new(Mutex::new(loaded));
        let (queue, received) = mpsc::channel(QUEUE_CAPACITY);
        tokio::spawn(worker::run(worker::Worker {
            channels: Arc::clone(&channels),
            retry: notify.retry,
            file,
            deliveries: Arc::clone(&deliveries),
            queue: received,
        }));
        Ok(Notifier {
            inner: Some(Inner {
                queue,
                deliveries,
                channels,
                dropped: AtomicU64::new(0),
                console: config.console.clone(),
            }),
        })
    }

    /// Tells the configured channels that `proposal` waits for a person.
    /// Never waits and never fails: a full queue drops the notification
    /// (counted, shown by `countersign notify status`, logged).
    pub(crate) fn proposal_waiting(&self, proposal: &Proposal) {
        let Some(inner) = &self.inner else {
            return;
        };
        let notification = Notification {
            proposal_id: proposal.id.to_string(),
            principal: proposal.principal.to_string(),
            operation: proposal.operation.clone(),
            arguments_sha256: proposal.arguments_sha256.clone(),
            console_url: inner
                .console
                .as_ref()
                .map(|console| console.proposal_url(&proposal.id)),
            created_at: proposal.created_at.unix_timestamp(),
            passkey: None,
        };
        if inner.queue.try_send(notification).is_err() {
            inner.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                proposal_id = %proposal.id,
                "notification dropped: the notification queue is full"
            );
        }
    }

    /// Tells the configured channels that a passkey of `principal` was
    /// enrolled or removed (`change`), so that a person hears of a change
    /// they did not make. Like [`Self::proposal_waiting`], never waits and
    /// never fails.
    pub(crate) fn passkey_changed(&self, principal: &str, change: PasskeyChange) {
        let Some(inner) = &self.inner else {
            return;
        };
        let at = time::OffsetDateTime::now_utc().unix_timestamp();
        let credential_id = change.credential_id.clone();
        let notification = Notification::of_passkey(principal, change, at);
        if inner.queue.try_send(notification).is_err() {
            inner.dropped.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(
                %credential_id,
                "passkey notification dropped: the notification queue is full"
            );
        }
    }
}

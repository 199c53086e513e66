//! The notify process: tells a person that a proposal waits for them, or
//! that a passkey was enrolled or removed, through every channel of
//! `[notify]` (a Standard Webhooks POST, an email, a desktop
//! notification, a Web Push to each subscribed device). It runs as `countersign notify serve` (and inside
//! `countersign up`), never inside the signer: the signer only records
//! what to tell in its ledger's outbox and opens no outbound connection,
//! so no receiver's reply is ever parsed next to the proof-signing key.
//!
//! This process connects to the signer with the `notifier` certificate,
//! which carries no approval authority: the signer accepts it only for
//! `PendingNotifications`, `AckNotifications` and `PushDevices`. It asks every
//! `poll_ms` for what waits (`signer`), makes one delivery per usable
//! channel, saves its delivery state in its own directory (`store`,
//! `<home>/notify/`), and only then acknowledges, so no notification is
//! lost to a crash of either process. A crash after a delivery went out
//! but before it was recorded sends it again on restart, with the same
//! `webhook-id` and Message-ID (`worker`), so a receiver can drop the
//! duplicate.
//!
//! A notification holds the proposal id, operation, arguments' digest and
//! console link (a page that decides nothing on GET), or the passkey
//! change: never a proof, a decision link or a secret. Nothing here holds
//! an approver credential, and no secret reaches the state file or a log.
#![forbid(unsafe_code)]

mod channels;
mod desktop;
pub mod message;
mod ocsf;
mod push;
mod retry;
mod signer;
mod smtp;
pub mod status;
mod store;
pub mod webhook;
mod worker;

use std::future::Future;
use std::sync::{Arc, Mutex};

use countersign_identity::{Config, Home};
use countersign_metrics::NotifyMetrics;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use channels::Channels;
use store::StateFile;

/// Why the notify process cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NotifyError {
    /// The configuration has no `[notify]` section.
    #[error(
        "notifications are off: the configuration has no [notify] section (docs/notifications.md)"
    )]
    Off,
    /// A `[notify]` setting cannot be used (the message names it).
    #[error("{0}")]
    Config(String),
    /// The delivery state cannot be read or written.
    #[error("notification state: {0}")]
    State(String),
}

/// A running notify process: its task, until [`Notifier::stop`].
#[derive(Debug)]
pub struct Notifier {
    stop: oneshot::Sender<()>,
    task: JoinHandle<()>,
    /// The OCSF stream, when `[notify.ocsf]` is configured.
    stream: Option<(oneshot::Sender<()>, JoinHandle<()>)>,
    metrics: NotifyMetrics,
}

impl Notifier {
    /// Checks `config`'s `[notify]` channels (reading their secret files),
    /// loads the delivery state of `home` (resuming pending deliveries),
    /// and starts delivering in a task of its own: it asks the signer
    /// named by `config` for waiting notifications with the home's
    /// notifier certificate. A signer that cannot be reached is asked
    /// again at the next poll. Must run inside a Tokio runtime.
    pub async fn start(home: &Home, config: &Config) -> Result<Notifier, NotifyError> {
        let Some(notify) = &config.notify else {
            return Err(NotifyError::Off);
        };
        let signer = Arc::new(signer::SignerLink::new(
            home.clone(),
            config.signer_addrs(),
            config.console.clone(),
        ));
        let channels = Arc::new(Channels::from_config(notify, home, &signer)?);
        let ocsf = notify
            .ocsf
            .as_ref()
            .map(|config| ocsf::OcsfStream::from_config(config, home))
            .transpose()?;
        let file = StateFile::of(home)?;
        let mut loaded = file.load()?;
        worker::settle_on_start(&mut loaded, &channels);
        loaded.channels = channels.states();
        file.save(&loaded)?;
        let principal = home
            .principal()
            .map_err(|e| NotifyError::Config(e.to_string()))?;
        let poll = std::time::Duration::from_millis(notify.poll_ms);
        let stream = ocsf.map(|stream| {
            let (stop, stopped) = oneshot::channel::<()>();
            let task = tokio::spawn(stream.run(Arc::clone(&signer), poll, notify.retry, async {
                let _ = stopped.await;
            }));
            (stop, task)
        });
        let (stop, stopped) = oneshot::channel::<()>();
        let metrics = NotifyMetrics::default();
        let task = tokio::spawn(worker::run(
            worker::Worker {
                channels,
                retry: notify.retry,
                file,
                deliveries: Arc::new(Mutex::new(loaded)),
                signer,
                principal,
                poll,
                metrics: metrics.clone(),
            },
            async {
                let _ = stopped.await;
            },
        ));
        tracing::info!(signer = %config.signer_addr, "notify process started");
        Ok(Notifier {
            stop,
            task,
            stream,
            metrics,
        })
    }

    /// What it counts (notifications taken, attempts by channel and
    /// result), for a `/metrics` listener to register.
    pub fn metrics(&self) -> NotifyMetrics {
        self.metrics.clone()
    }

    /// Stops delivering. Attempts still running are abandoned; their
    /// deliveries stay pending in the state file and the next start
    /// resumes them.
    pub async fn stop(self) {
        let _ = self.stop.send(());
        if let Some((stop, task)) = self.stream {
            let _ = stop.send(());
            let _ = task.await;
        }
        let _ = self.task.await;
    }

    /// Runs until `shutdown` completes, then stops.
    pub async fn serve_until(self, shutdown: impl Future<Output = ()>) {
        shutdown.await;
        self.stop().await;
    }
}

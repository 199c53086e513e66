//! The witnessing client (issue 49, item 2): sends each checkpoint the
//! signer's log key signed to the witnesses of the `[tlog] policy` file,
//! speaking c2sp.org/tlog-witness, and stores their cosignatures in the
//! ledger once each verifies against the witness's key from the policy.
//!
//! It runs beside the heads (`countersign up`, `countersign witness
//! serve`), never in the signer: the signer holds the keys and opens no
//! outbound connection, and a witness's reply is parsed here, with no key
//! at hand. It reads checkpoints and consistency proofs from the ledger
//! and writes cosignatures, its per-witness queue (`tlog_witnesses`) and
//! its events; it signs nothing.
//!
//! - the add-checkpoint request body and the reply are read by
//!   `countersign_tlog::witness` (pure, fuzzed).
//! - [`mod@targets`]: the policy's witnesses and their URLs.
//! - [`client`]: one witness's queue and rounds (409 resend, the size
//!   learnt at start, rollback, gap).
#![forbid(unsafe_code)]

pub mod client;
pub mod targets;
#[cfg(feature = "testing")]
pub mod testing;

use std::time::Duration;

use countersign_identity::TlogConfig;
use countersign_ledger::leases::WITNESSING_CHORE;
use countersign_ledger::{Lease, Ledger, LedgerError};
use tokio::sync::watch;
use tokio::task::JoinSet;

pub use client::{Exchange, Outcome, Round, Settings, WitnessClient};
pub use targets::{Target, TargetError, targets};

/// Why witnessing cannot start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WitnessError {
    /// The policy file cannot be read.
    #[error("cannot read the tlog policy {path:?}: {reason}")]
    Read {
        /// Its path.
        path: std::path::PathBuf,
        /// Why.
        reason: String,
    },
    /// The policy or a witness URL is refused.
    #[error(transparent)]
    Targets(#[from] TargetError),
    /// The ledger failed while loading the witnesses' state.
    #[error("ledger: {0}")]
    Ledger(String),
}

/// The largest policy file read, in bytes.
const MAX_POLICY_BYTES: u64 = 1024 * 1024;

/// How long the witnessing chore's lease runs from each renewal.
pub const WITNESSING_LEASE: Duration = Duration::from_secs(60);
/// How often the holder renews it, and a client that does not hold it
/// tries to take it.
pub const WITNESSING_RENEW: Duration = Duration::from_secs(20);

/// The running witnessing client: one task per witness, and the task
/// that holds the witnessing chore's lease, until [`Witnessing::stop`].
/// Two clients of one ledger (`countersign up` on two hosts, or beside a
/// `countersign witness serve`) send one at a time: only the holder of
/// the lease sends, and each of its writes is made under the lease, so a
/// client paused past it writes nothing when it resumes.
#[derive(Debug)]
pub struct Witnessing {
    stop: watch::Sender<bool>,
    tasks: JoinSet<()>,
}

impl Witnessing {
    /// Reads the policy of `config`, loads each witness's state from
    /// `ledger` and starts sending. Must run inside a Tokio runtime.
    pub async fn start(ledger: Ledger, config: &TlogConfig) -> Result<Witnessing, WitnessError> {
        let targets = policy_targets(config)?;
        let settings = Settings {
            trust_roots: config.trust_roots.clone(),
            timeout: Duration::from_secs(config.timeout_secs),
            gap: Duration::from_secs(config.gap_secs),
        };
        let mut clients = Vec::new();
        for target in targets {
            let client = WitnessClient::load(ledger.clone(), target, settings.clone())
                .await
                .map_err(|e| WitnessError::Ledger(e.to_string()))?;
            clients.push(client);
        }
        let (stop, stopped) = watch::channel(false);
        let mut tasks = JoinSet::new();
        let (held, holding) = watch::channel(None);
        tasks.spawn(hold_the_chore(ledger, holder_id(), held, stopped.clone()));
        let poll = Duration::from_millis(config.poll_ms);
        for client in clients {
            tracing::info!(witness = %client.target().name, url = %client.target().url.authority(), "witnessing: sending checkpoints to this witness");
            tasks.spawn(run(client, poll, holding.clone(), stopped.clone()));
        }
        Ok(Witnessing { stop, tasks })
    }

    /// Stops every witness's task (a round in flight is abandoned; the
    /// queue state in the ledger is what the next start resumes).
    pub async fn stop(mut self) {
        let _ = self.stop.send(true);
        while self.tasks.join_next().await.is_some() {}
    }

    /// Runs until `shutdown` completes, then stops.
    pub async fn serve_until(self, shutdown: impl std::future::Future<Output = ()>) {
        shutdown.await;
        self.stop().await;
    }
}

/// The witnesses `config`'s policy file names, each with a usable URL:
/// what [`Witnessing::start`] sends to (and what `countersign doctor`
/// checks).
pub fn policy_targets(config: &TlogConfig) -> Result<Vec<Target>, WitnessError> {
    Ok(targets(&read_policy(&config.policy)?)?)
}

/// The policy file's bytes (at most 1 MiB).
fn read_policy(path: &std::path::Path) -> Result<Vec<u8>, WitnessError> {
    use std::io::Read as _;
    let refused = |reason: String| WitnessError::Read {
        path: path.to_path_buf(),
        reason,
    };
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_POLICY_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| refused(e.to_string()))?;
    if bytes.len() as u64 > MAX_POLICY_BYTES {
        return Err(refused("larger than 1 MiB".into()));
    }
    Ok(bytes)
}

/// Take the witnessing chore and renew it every [`WITNESSING_RENEW`]
/// while this client runs, publishing the lease held (or `None`) to the
/// witness tasks; give it back when stopped.
async fn hold_the_chore(
    ledger: Ledger,
    holder: String,
    held: watch::Sender<Option<Lease>>,
    mut stopped: watch::Receiver<bool>,
) {
    let ttl = time::Duration::try_from(WITNESSING_LEASE).unwrap_or(time::Duration::MINUTE);
    loop {
        let lease = match ledger.take_lease(WITNESSING_CHORE, &holder, ttl).await {
            Ok(lease) => lease,
            Err(e) => {
                tracing::warn!(error = %e, "witnessing: the chore's lease not taken; retrying");
                None
            }
        };
        if lease.is_none() && held.borrow().is_some() {
            tracing::info!("witnessing: another client holds the chore now");
        }
        held.send_replace(lease);
        tokio::select! {
            () = tokio::time::sleep(WITNESSING_RENEW) => {}
            _ = stopped.changed() => break,
        }
    }
    if let Some(lease) = held.send_replace(None)
        && let Err(e) = ledger.give_back_lease(&lease).await
    {
        tracing::warn!(error = %e, "witnessing: the chore's lease not given back");
    }
}

/// A holder id for this process: its host name, process id and start time.
fn holder_id() -> String {
    let host = countersign_identity::host::host_name();
    let started = time::OffsetDateTime::now_utc().unix_timestamp_nanos();
    format!("{host}/{}-{started}", std::process::id())
}

/// One witness's loop: a round every `poll` while this client holds the
/// witnessing chore, until stopped.
async fn run(
    mut client: WitnessClient,
    poll: Duration,
    holding: watch::Receiver<Option<Lease>>,
    mut stopped: watch::Receiver<bool>,
) {
    loop {
        let lease = holding.borrow().clone();
        if lease.is_some() {
            client.under(lease);
            tokio::select! {
                round = client.round() => match round {
                    Err(e @ LedgerError::LeaseLost { .. }) => {
                        tracing::info!(witness = %client.target().name, "witnessing: {e}");
                    }
                    Err(e) => {
                        tracing::warn!(witness = %client.target().name, error = %e, "witnessing: the ledger failed; retrying");
                    }
                    Ok(_) => {}
                },
                _ = stopped.changed() => return,
            }
        }
        tokio::select! {
            () = tokio::time::sleep(poll) => {}
            _ = stopped.changed() => return,
        }
    }
}

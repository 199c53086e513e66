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
use countersign_ledger::Ledger;
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

/// The running witnessing client: one task per witness, until
/// [`Witnessing::stop`].
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
        let poll = Duration::from_millis(config.poll_ms);
        for client in clients {
            tracing::info!(witness = %client.target().name, url = %client.target().url.authority(), "witnessing: sending checkpoints to this witness");
            tasks.spawn(run(client, poll, stopped.clone()));
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

/// One witness's loop: a round every `poll` until stopped.
async fn run(mut client: WitnessClient, poll: Duration, mut stopped: watch::Receiver<bool>) {
    loop {
        tokio::select! {
            round = client.round() => {
                if let Err(e) = round {
                    tracing::warn!(witness = %client.target().name, error = %e, "witnessing: the ledger failed; retrying");
                }
            }
            _ = stopped.changed() => return,
        }
        tokio::select! {
            () = tokio::time::sleep(poll) => {}
            _ = stopped.changed() => return,
        }
    }
}

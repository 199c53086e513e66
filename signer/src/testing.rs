//! Test support (cargo feature `testing`): an in-process signer on
//! 127.0.0.1:0 with a fresh home (dev PKI, proof key, SQLite ledger or a
//! given ledger URL,
//! default registry) in a temporary directory.
//!
//! For tests only, in this crate and others (dev-dependency
//! `countersign-signer = { workspace = true, features = ["testing"] }`).
//! The home's `config.toml` names the bound address, so a `countersign`
//! process run with `COUNTERSIGN_HOME=<home>` reaches this signer.

use std::net::SocketAddr;
use std::sync::Arc;

use countersign_identity::files::write_private_new;
use countersign_identity::pki::create_dev_pki;
use countersign_identity::{Config, Home, IdentityError, Role, tls};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_registry::Registry;
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tonic::transport::{Channel, ClientTlsConfig, Endpoint};

use crate::error::StartError;
use crate::serve::run;
use crate::state::SignerState;

/// Errors of the test helpers' client constructors.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// A running in-process signer. Dropping it stops the server and deletes
/// the home.
pub struct TestSigner {
    addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    home: Home,
    principal: String,
    state: Arc<SignerState>,
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<Result<(), StartError>>>,
    _dir: Arc<tempfile::TempDir>,
}

impl std::fmt::Debug for TestSigner {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TestSigner")
            .field("addr", &self.addr)
            .field("home", &self.home)
            .finish_non_exhaustive()
    }
}

impl TestSigner {
    /// Starts a signer with the shipped default registry.
    pub async fn start() -> Result<TestSigner, StartError> {
        TestSigner::start_with_registry(Registry::default_toml()).await
    }

    /// Starts a signer whose `operations.toml` is `registry_toml`.
    pub async fn start_with_registry(registry_toml: &str) -> Result<TestSigner, StartError> {
        TestSigner::start_with(registry_toml, None).await
    }

    /// Starts a signer whose `operations.toml` is `registry_toml` and whose
    /// `[ledger] url` is `ledger_url` (default: SQLite in the home).
    pub async fn start_with(
        registry_toml: &str,
        ledger_url: Option<&str>,
    ) -> Result<TestSigner, StartError> {
        TestSigner::start_configured(registry_toml, ledger_url, "").await
    }

    /// Starts a signer as [`TestSigner::start_with`] does, with
    /// `extra_config` in its `config.toml` right after the `[signer]`
    /// address (for example `handoff_claim_lease_secs = 1`, or a
    /// `[passkeys]` section).
    pub async fn start_configured(
        registry_toml: &str,
        ledger_url: Option<&str>,
        extra_config: &str,
    ) -> Result<TestSigner, StartError> {
        let dir =
            tempfile::tempdir().map_err(|e| StartError::Transport(format!("tempdir: {e}")))?;
        let home = Home::at(dir.path().join("home"))?;
        let principal = home.init()?.principal;
        create_dev_pki(&home, &principal)?;
        write_private_new(&home.registry_path(), registry_toml.as_bytes())?;

        let listener = TcpListener::bind(("127.0.0.1", 0))
            .await
            .map_err(|e| StartError::Transport(format!("bind: {e}")))?;
        let addr = listener
            .local_addr()
            .map_err(|e| StartError::Transport(format!("local_addr: {e}")))?;
        let config_path = home.config_path();
        std::fs::remove_file(&config_path).map_err(|e| IdentityError::Io {
            path: config_path.clone(),
            kind: e.kind(),
            detail: e.to_string(),
        })?;
        // `extra_config` right after the signer's address: its first lines
        // may be more `[signer]` keys, and any section it opens follows.
        let mut config = format!("[signer]\naddr = \"{addr}\"\n{extra_config}");
        if let Some(url) = ledger_url {
            config.push_str(&format!("\n[ledger]\nurl = \"{url}\"\n"));
        }
        write_private_new(&config_path, config.as_bytes())?;

        let Served {
            addr,
            metrics_addr,
            state,
            stop,
            task,
        } = serve_home(&home, listener).await?;
        Ok(TestSigner {
            addr,
            metrics_addr,
            home,
            principal,
            state,
            stop: Some(stop),
            task: Some(task),
            _dir: Arc::new(dir),
        })
    }

    /// Stops this signer and starts a new one on the same home (its key
    /// set, ledger and configuration), on a new port, as a restarted signer
    /// process would: with nothing of the old one's memory (no waiting
    /// handoff; open passkey challenges are in the ledger and survive).
    pub async fn restart(mut self) -> Result<TestSigner, StartError> {
        self.halt().await?;
        let Served {
            addr,
            metrics_addr,
            state,
            stop,
            task,
        } = serve_home_anew(&self.home).await?;
        self.addr = addr;
        self.metrics_addr = metrics_addr;
        self.state = state;
        self.stop = Some(stop);
        self.task = Some(task);
        Ok(self)
    }

    /// Starts a second signer on this signer's home (the same keys,
    /// configuration, principal and ledger), on a new port, with a state
    /// of its own: two signers of one ledger, as two signer processes on
    /// two hosts would be. On a SQLite ledger it refuses to start while
    /// this one serves (`AnotherSigner`): SQLite is single-signer.
    pub async fn another_on_this_home(&self) -> Result<TestSigner, StartError> {
        let served = serve_home_anew(&self.home).await?;
        Ok(TestSigner {
            addr: served.addr,
            metrics_addr: served.metrics_addr,
            home: self.home.clone(),
            principal: self.principal.clone(),
            state: served.state,
            stop: Some(served.stop),
            task: Some(served.task),
            _dir: Arc::clone(&self._dir),
        })
    }

    /// Starts a second signer as a second host's would be: a copy of this
    /// signer's home (the same CA, certificates, principal, configuration,
    /// log key and so ledger) with no proof key of this one's, so that it
    /// makes a key of its own at start, on a new port. Only meaningful
    /// with a PostgreSQL ledger (a SQLite one in the home would be copied).
    pub async fn on_another_host(&self) -> Result<TestSigner, StartError> {
        let copy = self._dir.path().join(format!("host-{}", self.addr.port()));
        let home = Home::at(copy.join("home"))?;
        std::fs::create_dir_all(&copy)
            .and_then(|()| copy_without_proof_key(&self.home, &home))
            .map_err(|e| StartError::Transport(format!("copying the home: {e}")))?;
        let served = serve_home_anew(&home).await?;
        Ok(TestSigner {
            addr: served.addr,
            metrics_addr: served.metrics_addr,
            home,
            principal: self.principal.clone(),
            state: served.state,
            stop: Some(served.stop),
            task: Some(served.task),
            _dir: Arc::clone(&self._dir),
        })
    }

    /// One round of the checkpoint chore now, as the serving loop runs
    /// one every minute: take or renew the lease and, holding it, write.
    pub async fn checkpoint_round(&self) {
        self.state.checkpoints.write(&self.state).await;
    }

    /// The id this signer takes the checkpoint chore's lease under.
    pub fn checkpoint_holder(&self) -> &str {
        self.state.checkpoints.holder()
    }

    /// The address the signer listens on (127.0.0.1).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Where this signer serves `GET /metrics`: `None` unless its
    /// configuration has `[metrics] signer` (port 0 picks a free port).
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// `https://127.0.0.1:<port>`.
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// The signer's home (dev PKI under `pki/`, config naming [`Self::addr`]).
    pub fn home(&self) -> &Home {
        &self.home
    }

    /// The home's principal.
    pub fn principal(&self) -> &str {
        &self.principal
    }

    /// The running signer's state (its ledger, policy and registry).
    pub fn state(&self) -> &SignerState {
        &self.state
    }

    /// Records an approval of pending `proposal_id` for direct delivery,
    /// by the home's approver, whatever its effect kind offers: what a
    /// signer did before it refused such deliveries (`delivery_not_offered`),
    /// leaving approvals that no interface could run. The proof is signed
    /// and dropped, as the approver interface that could not run it did.
    /// Returns the proof's SHA-256.
    pub async fn record_unoffered_direct_approval(
        &self,
        proposal_id: &str,
    ) -> Result<String, BoxError> {
        let service = crate::service::SignerService {
            state: self.state.clone(),
        };
        let record = self
            .state
            .ledger()
            .proposal(proposal_id)
            .await?
            .ok_or("no such proposal")?;
        let registry = service.registry_now().map_err(|e| e.to_string())?;
        let (op, args) = service
            .approvable(&registry, &record)
            .map_err(|e| e.to_string())?;
        let provenance = format!("human:cert:{}", self.principal);
        let signed = service
            .sign_for(
                &record,
                op,
                &args,
                record.proposal.session.as_str(),
                &provenance,
                None,
            )
            .map_err(|e| e.to_string())?;
        self.state
            .ledger()
            .record_approval(&signed.issuance)
            .await?;
        Ok(signed.issuance.proof_sha256)
    }

    /// The gate every watch of this signer passes between its first read
    /// and its first message.
    pub fn watch_gate(&self) -> &WatchGate {
        &self.state.watch_gate
    }

    /// A connected client with the home's certificate for `role`
    /// (`approver` or `head`).
    pub async fn client(&self, role: Role) -> Result<SignerClient<Channel>, BoxError> {
        let tls = tls::client_config(&self.home, role)?;
        self.client_with(tls).await
    }

    /// A connected client with an arbitrary TLS configuration (other CAs,
    /// expired or missing certificates).
    pub async fn client_with(
        &self,
        tls: ClientTlsConfig,
    ) -> Result<SignerClient<Channel>, BoxError> {
        Ok(SignerClient::new(self.channel_with(tls).await?))
    }

    /// A client presenting a named approver certificate `name` of this
    /// signer's principal (`countersign://approver/<principal>/<name>`),
    /// issued now by the home's CA, valid from an hour ago to an hour on.
    pub async fn named_approver(&self, name: &str) -> Result<SignerClient<Channel>, BoxError> {
        use countersign_identity::ApproverName;
        use countersign_identity::pki::{CaMaterial, issue_named_approver_cert};
        let ca = CaMaterial::load(&self.home)?;
        let now = time::OffsetDateTime::now_utc();
        let cert = issue_named_approver_cert(
            &ca,
            &self.principal,
            &ApproverName::parse(name)?,
            now - time::Duration::hours(1),
            now + time::Duration::hours(1),
        )?;
        let config = tls::client_config_from_pem(ca.cert_pem(), &cert.cert_pem, &cert.key_pem);
        self.client_with(config).await
    }

    /// A connected channel with `tls`, for any service the signer serves
    /// (health, reflection).
    pub async fn channel_with(&self, tls: ClientTlsConfig) -> Result<Channel, BoxError> {
        tls::install_crypto_provider();
        Ok(Endpoint::from_shared(self.url())?
            .tls_config(tls)?
            .connect()
            .await?)
    }

    /// Stops the server and waits for it to finish.
    pub async fn stop(mut self) -> Result<(), StartError> {
        self.halt().await
    }

    /// Stops the server and waits for it to finish, keeping the home (its
    /// ledger stays readable through [`Self::state`]); a stopped signer
    /// answers no call.
    pub async fn halt(&mut self) -> Result<(), StartError> {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        match self.task.take() {
            Some(task) => task
                .await
                .map_err(|e| StartError::Transport(format!("server task: {e}")))?,
            None => Ok(()),
        }
    }
}

/// A server task and its parts, as `serve_home` starts it.
struct Served {
    addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    state: Arc<SignerState>,
    stop: oneshot::Sender<()>,
    task: JoinHandle<Result<(), StartError>>,
}

/// Copy the directory `from` to `to` (which must not exist), keeping
/// each file's and directory's mode.
pub fn copy_tree(from: &std::path::Path, to: &std::path::Path) -> std::io::Result<()> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};
    let mode = std::fs::metadata(from)?.permissions().mode();
    std::fs::DirBuilder::new().mode(mode).create(to)?;
    for entry in std::fs::read_dir(from)? {
        let entry = entry?;
        let kind = entry.file_type()?;
        let target = to.join(entry.file_name());
        if kind.is_dir() {
            copy_tree(&entry.path(), &target)?;
        } else if kind.is_file() {
            std::fs::copy(entry.path(), &target)?;
        }
    }
    Ok(())
}

/// Copies `from`'s home to `to` as a second signer host's would be made:
/// the same CA, certificates, principal, configuration and log key, and
/// none of `from`'s proof keys, so that a signer serving `to` makes a key
/// of its own at its first start.
pub fn copy_without_proof_key(from: &Home, to: &Home) -> std::io::Result<()> {
    copy_tree(from.root(), to.root())?;
    let signer = to.signer_dir();
    for key_file in ["keys.json", "keys.json.lock", "ed25519.key"] {
        match std::fs::remove_file(signer.join(key_file)) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => return Err(e),
            _ => {}
        }
    }
    match std::fs::remove_dir_all(signer.join("keys")) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// Loads `home` and serves it on a new port of 127.0.0.1.
async fn serve_home_anew(home: &Home) -> Result<Served, StartError> {
    let listener = TcpListener::bind(("127.0.0.1", 0))
        .await
        .map_err(|e| StartError::Transport(format!("bind: {e}")))?;
    serve_home(home, listener).await
}

/// Loads `home` and serves it on `listener` until the sender fires.
async fn serve_home(home: &Home, listener: TcpListener) -> Result<Served, StartError> {
    let addr = listener
        .local_addr()
        .map_err(|e| StartError::Transport(format!("local_addr: {e}")))?;
    let config = Config::load(home)?;
    tls::install_crypto_provider();
    let server_tls = tls::server_config(home)?;
    let state = Arc::new(SignerState::load(home, &config).await?);
    // As `main` does: one signer per SQLite ledger, held while it serves.
    let sole_signer = state.ledger().claim_sole_signer()?;
    crate::published_keys::publish_keys(&state).await?;
    let (stop_tx, stop_rx) = oneshot::channel::<()>();
    // `[metrics] signer`, as `main` serves it: bound only when configured.
    let (metrics, metrics_addr) = match config.metrics.signer {
        None => (None, None),
        Some(configured) => {
            let metrics = countersign_metrics::bind(configured)
                .await
                .map_err(|e| StartError::Transport(e.to_string()))?;
            let bound = metrics
                .local_addr()
                .map_err(|e| StartError::Transport(format!("local_addr: {e}")))?;
            (Some(metrics), Some(bound))
        }
    };
    let server_state = Arc::clone(&state);
    let task = tokio::spawn(async move {
        let _sole_signer = sole_signer;
        let stopped = async {
            let _ = stop_rx.await;
        };
        match metrics {
            None => run(listener, server_state, server_tls, stopped).await,
            Some(metrics) => {
                // One stop for both listeners: the metrics one follows the server's.
                let (metrics_stop, metrics_stopped) = oneshot::channel::<()>();
                let scrapes = tokio::spawn(crate::serve::serve_metrics(
                    metrics,
                    Arc::clone(&server_state),
                    async {
                        let _ = metrics_stopped.await;
                    },
                ));
                let served = run(listener, server_state, server_tls, stopped).await;
                let _ = metrics_stop.send(());
                let _ = scrapes.await;
                served
            }
        }
    });
    Ok(Served {
        addr,
        metrics_addr,
        state,
        stop: stop_tx,
        task,
    })
}

impl Drop for TestSigner {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}

/// A point where every watch (`WatchProposal`, `WatchPending`) waits
/// while the gate is held: after its first read, before its first message.
/// A test holds it to commit a change right inside that window, which no
/// timing can hit reliably.
#[derive(Debug)]
pub struct WatchGate {
    held: tokio::sync::watch::Sender<bool>,
    reached: tokio::sync::Notify,
}

impl Default for WatchGate {
    fn default() -> Self {
        WatchGate {
            held: tokio::sync::watch::Sender::new(false),
            reached: tokio::sync::Notify::new(),
        }
    }
}

impl WatchGate {
    /// Watches opened from now on wait at the gate.
    pub fn hold(&self) {
        self.held.send_replace(true);
    }

    /// The waiting watches go on.
    pub fn release(&self) {
        self.held.send_replace(false);
    }

    /// Returns once a watch has reached the held gate (at once if one
    /// already has since the last call).
    pub async fn reached(&self) {
        self.reached.notified().await;
    }

    /// A watch's pass through the gate.
    pub(crate) async fn pass(&self) {
        let mut held = self.held.subscribe();
        if *held.borrow_and_update() {
            self.reached.notify_one();
            let _ = held.wait_for(|held| !*held).await;
        }
    }
}

//! The installation a command acts for: the private home directory (checked
//! before anything is read from it), its configuration and principal, and
//! connections to the signer, the ledger and the gate built from them.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};

use countersign_gate::{Gate, KeyRefresh, signer_client};
use countersign_identity::{ApproverName, ClientCredential, Config, Home, Role};
use countersign_ledger::{Ledger, PremiseRunner};
use countersign_metrics::GateMetrics;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_registry::{CurrentRegistry, Policy, Registry, Schemas};
use countersign_verifier::{KeyRing, Principal};
use tokio::task::JoinHandle;
use tonic::transport::Channel;

use crate::error::CliError;

/// The name in the console's approver certificate (`pki/approver-console.pem`,
/// made by the development PKI): proofs it decides carry
/// `human:cert:<principal>/console`.
const CONSOLE_APPROVER: &str = "console";

/// One installation, loaded and checked.
#[derive(Clone)]
pub struct Context {
    /// The private configuration directory.
    pub home: Home,
    /// Its configuration.
    pub config: Config,
    /// The installation's principal.
    pub principal: String,
    /// The registry file, read and its schemas compiled once per process
    /// (the gate and the service share it; it re-reads only if the file
    /// changes).
    registry: Arc<OnceLock<Arc<CurrentRegistry>>>,
    /// What every gate of this process counts into (served by
    /// [`crate::commands`] when `[metrics]` names this head).
    gate_metrics: GateMetrics,
}

impl Context {
    /// The home named by `--home`, else `$COUNTERSIGN_HOME`, else the default.
    pub fn home(flag: Option<PathBuf>) -> Result<Home, CliError> {
        match flag {
            Some(path) => Home::at(path),
            None => Home::resolve(),
        }
        .map_err(CliError::error)
    }

    /// Load an initialized installation; refuses one whose permissions,
    /// ownership or links are unsafe.
    pub fn load(home: Home) -> Result<Self, CliError> {
        if !home.config_path().exists() {
            return Err(CliError::Error(format!(
                "{} is not initialized: run `countersign init`",
                home.root().display()
            )));
        }
        home.check().map_err(CliError::error)?;
        let config = Config::load(&home).map_err(CliError::error)?;
        let principal = home.principal().map_err(CliError::error)?;
        Ok(Self {
            home,
            config,
            principal,
            registry: Arc::default(),
            gate_metrics: GateMetrics::default(),
        })
    }

    /// A signer client authenticated as this installation's head.
    pub async fn head(&self) -> Result<SignerClient<Channel>, CliError> {
        self.connect(Role::Head).await
    }

    /// A signer client authenticated as this installation's approver.
    pub async fn approver(&self) -> Result<SignerClient<Channel>, CliError> {
        self.connect(Role::Approver).await
    }

    /// A signer client authenticated as the named approver `name` (its
    /// certificate `pki/approver-<name>.pem`), or, without one, with the
    /// installation's approver certificate.
    pub async fn approver_as(
        &self,
        name: Option<&ApproverName>,
    ) -> Result<SignerClient<Channel>, CliError> {
        let Some(name) = name else {
            return self.approver().await;
        };
        signer_client::connect_any(
            &self.home,
            &self.config.signer_addrs(),
            &ClientCredential::NamedApprover(name.clone()),
        )
        .await
        .map_err(CliError::error)
    }

    /// A signer client authenticated with the console's own approver
    /// credential, so the signer records that the console decided.
    pub async fn console_approver(&self) -> Result<SignerClient<Channel>, CliError> {
        let name = ApproverName::parse(CONSOLE_APPROVER).map_err(CliError::error)?;
        signer_client::connect_any(
            &self.home,
            &self.config.signer_addrs(),
            &ClientCredential::NamedApprover(name),
        )
        .await
        .map_err(CliError::error)
    }

    async fn connect(&self, role: Role) -> Result<SignerClient<Channel>, CliError> {
        signer_client::connect_any(
            &self.home,
            &self.config.signer_addrs(),
            &ClientCredential::Role(role),
        )
        .await
        .map_err(CliError::error)
    }

    /// The ledger, opened from the configured URL.
    pub async fn ledger(&self) -> Result<Ledger, CliError> {
        Ledger::open(&self.config.ledger_url)
            .await
            .map(|ledger| ledger.with_premise_runner(self.premise_runner()))
            .map_err(|e| CliError::Error(format!("cannot open the ledger: {e}")))
    }

    /// Where a consumption's premise programs run: outside this process,
    /// out of reach of this home (or in the configured premise service).
    fn premise_runner(&self) -> PremiseRunner {
        PremiseRunner::configured(self.config.premise_socket.as_deref(), self.home.root())
    }

    /// The ledger, opened for a process that runs this one command and
    /// exits ([`Ledger::open_for_one_command`]: on SQLite one connection,
    /// reads included).
    pub async fn ledger_for_one_command(&self) -> Result<Ledger, CliError> {
        Ledger::open_for_one_command(&self.config.ledger_url)
            .await
            .map(|ledger| ledger.with_premise_runner(self.premise_runner()))
            .map_err(|e| CliError::Error(format!("cannot open the ledger: {e}")))
    }

    /// What executing a proof needs besides the signer, started in a task
    /// of its own so that it proceeds on the runtime's workers while the
    /// caller connects to the signer: the ledger, opened for this one
    /// command ([`Context::ledger_for_one_command`]), and the registry
    /// file, loaded into this context while SQLite opens the file on its
    /// own thread. A registry that does not load is reported where the
    /// gate is built, as before.
    pub fn open_for_execution(&self) -> JoinHandle<Result<Ledger, CliError>> {
        let ctx = self.clone();
        tokio::spawn(async move {
            // The opening first: its first poll starts SQLite's thread.
            let (ledger, _) = tokio::join!(ctx.ledger_for_one_command(), async {
                ctx.current_registry()
            });
            ledger
        })
    }

    /// The operation registry, as its file says now.
    pub fn registry(&self) -> Result<Arc<Registry>, CliError> {
        self.current_registry()?.now().map_err(CliError::error)
    }

    /// The registry file, followed: opened (read and checked) on the first
    /// use in this process, shared by every later one. A head never
    /// validates arguments with the registry's schemas (the signer does,
    /// having compiled them all at load), so they are not compiled here
    /// ([`Schemas::OnFirstUse`]): a command pays only for what it uses.
    pub fn current_registry(&self) -> Result<Arc<CurrentRegistry>, CliError> {
        if let Some(current) = self.registry.get() {
            return Ok(Arc::clone(current));
        }
        let opened = CurrentRegistry::open_with(&self.config.registry, Schemas::OnFirstUse)
            .map_err(CliError::error)?;
        let opened = Arc::new(opened);
        // Another thread may have opened it meanwhile; either copy will do.
        Ok(Arc::clone(self.registry.get_or_init(|| opened)))
    }

    /// The approval policy this installation verifies against.
    pub fn policy(&self) -> Policy {
        Policy {
            audience: self.config.policy.audience.clone(),
            default_lifetime_secs: self.config.policy.default_lifetime_secs,
            max_lifetime_secs: self.config.policy.max_lifetime_secs,
            decision_window_secs: self.config.policy.decision_window_secs,
        }
    }

    /// The gate of this head: the signer's public keys, the ledger and the
    /// registry. The keys come over the authenticated head connection and
    /// are fetched again over it when a proof names an unknown key id
    /// (rate-limited) or they are five minutes old.
    pub async fn gate(&self, head: &mut SignerClient<Channel>) -> Result<Gate, CliError> {
        // The signer's keys and the ledger are independent: fetched and
        // opened at once.
        let (keys, ledger) = tokio::join!(signer_client::public_keys(head), self.ledger());
        self.gate_from(head, keys.map_err(CliError::error)?, ledger?)
    }

    /// The gate over `ledger`, verifying with `keys` (fetched through
    /// `head`, which it follows for rotations).
    pub fn gate_from(
        &self,
        head: &SignerClient<Channel>,
        keys: KeyRing,
        ledger: Ledger,
    ) -> Result<Gate, CliError> {
        let policy = self.policy();
        // Checked when read from the principal file; parsed again into the
        // gate's type rather than trusted.
        let principal = Principal::parse(self.principal.clone()).map_err(CliError::error)?;
        let gate = Gate::new(
            ledger,
            self.current_registry()?,
            keys,
            principal,
            policy.audience.clone(),
            policy.revision(),
            time::Duration::seconds(
                i64::try_from(self.config.verifier_max_lifetime_secs).unwrap_or(i64::MAX),
            ),
        );
        // A long-running head (API, MCP) learns rotated keys without a restart.
        Ok(gate
            .following_keys(head.clone(), KeyRefresh::default())
            .with_metrics(self.gate_metrics.clone()))
    }

    /// What this process's gates count.
    pub fn gate_metrics(&self) -> &GateMetrics {
        &self.gate_metrics
    }
}

//! What a running signer holds: its key set (the active proof key re-read
//! when the key index changes), the ledger, the registry
//! file (followed as it changes, as the heads follow it), the policy,
//! the handoff store and whether rules are on; and how they are loaded
//! from a home.
//!
//! This module builds state; it neither binds ports nor answers RPCs. It
//! logs the key id only, never key material.

use std::fmt;
use std::sync::atomic::AtomicU64;
#[cfg(feature = "testing")]
use std::sync::atomic::Ordering;

use countersign_identity::{Config, DEFAULT_HANDOFF_CLAIM_LEASE_SECS, Home};
use countersign_ledger::{Ledger, PremiseRunner};
use countersign_metrics::SignerMetrics;
use countersign_registry::{CurrentRegistry, Policy};

use crate::error::StartError;
use crate::handoff::HandoffStore;
use crate::keystore::{KeyStore, KeyStoreError};
use crate::log_key::LogKey;
use crate::notify::Outbox;
use crate::passkeys::code::EnrolmentCodes;
use crate::passkeys::{Challenges, PasskeyPolicy};

/// Everything the gRPC service needs, shared by all connections.
pub struct SignerState {
    pub(crate) keys: KeyStore,
    pub(crate) ledger: Ledger,
    pub(crate) registry: CurrentRegistry,
    pub(crate) policy: Policy,
    /// The operator's Cedar policy sets (`[policy] cedar`,
    /// `cedar_log_only`); none by default.
    pub(crate) operator_policy: crate::operator_policy::OperatorPolicy,
    /// Rules' scopes written in Cedar, parsed and checked.
    pub(crate) cedar_scopes: crate::rules::CedarScopes,
    pub(crate) handoffs: HandoffStore,
    /// How long a head that claimed a handoff holds it
    /// (`[signer] handoff_claim_lease_secs`).
    pub(crate) handoff_claim_lease: time::Duration,
    /// `[passkeys]`: `None` when passkeys are not configured.
    pub(crate) passkeys: Option<PasskeyPolicy>,
    /// The passkey challenges this signer (or another of its ledger)
    /// issued, kept in the ledger. A passkey's counter is compared again
    /// under its row lock by the write recording an assertion, not under a
    /// lock of this process.
    pub(crate) challenges: Challenges,
    pub(crate) enrolment_codes: EnrolmentCodes,
    /// PublicKeys calls answered (tests bound how often heads refresh).
    pub(crate) public_keys_served: AtomicU64,
    /// What this signer counts; served only with `[metrics] signer`.
    pub(crate) metrics: SignerMetrics,
    /// Records what a person should be told (`[notify]`; off by
    /// default); the notify process delivers it.
    pub(crate) outbox: Outbox,
    /// `[rules] enabled`: whether rules may be created and approve (off by
    /// default: no rule ever matches and `CreateRule` refuses).
    pub(crate) rules_enabled: bool,
    /// The transparency log's key (`signer/log.key`): signs the tree's
    /// checkpoints; `None` for a state built without a home, which signs
    /// none.
    pub(crate) log_key: Option<LogKey>,
    /// This signer's part in the checkpoint chore.
    pub(crate) checkpoints: crate::checkpoint::Checkpoints,
    /// Announcements of changed proposals, for the watch streams: this
    /// signer's, and on PostgreSQL those of the ledger's other signers.
    pub(crate) changes: crate::changes::Changes,
    /// Where the tests hold a watch between its first read and its first
    /// message.
    #[cfg(feature = "testing")]
    pub(crate) watch_gate: crate::testing::WatchGate,
}

impl fmt::Debug for SignerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignerState")
            .field("key_id", &self.key_id().ok())
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl SignerState {
    /// Assembles state from parts already loaded.
    pub fn new(
        keys: KeyStore,
        ledger: Ledger,
        registry: CurrentRegistry,
        policy: Policy,
    ) -> SignerState {
        let enrolment_codes = EnrolmentCodes::in_ledger(ledger.clone());
        let challenges = Challenges::in_ledger(ledger.clone());
        let checkpoints = crate::checkpoint::Checkpoints::on(&ledger);
        let metrics = SignerMetrics::default();
        let batches = metrics.clone();
        ledger.observe_batches(std::sync::Arc::new(move |batch| {
            if batch.approvals > 0 {
                batches.approvals_committed(batch.approvals);
            }
        }));
        let changes = crate::changes::Changes::for_ledger(&ledger);
        SignerState {
            keys,
            ledger,
            registry,
            policy,
            operator_policy: crate::operator_policy::OperatorPolicy::default(),
            cedar_scopes: crate::rules::CedarScopes::default(),
            handoffs: HandoffStore::default(),
            handoff_claim_lease: lease_of(DEFAULT_HANDOFF_CLAIM_LEASE_SECS),
            passkeys: None,
            challenges,
            enrolment_codes,
            public_keys_served: AtomicU64::new(0),
            metrics,
            outbox: Outbox::default(),
            rules_enabled: false,
            log_key: None,
            checkpoints,
            changes,
            #[cfg(feature = "testing")]
            watch_gate: crate::testing::WatchGate::default(),
        }
    }

    /// The same state applying the operator's Cedar policy `policy`.
    pub fn with_operator_policy(
        mut self,
        policy: crate::operator_policy::OperatorPolicy,
    ) -> SignerState {
        self.operator_policy = policy;
        self
    }

    /// The same state recording notifications into `outbox`.
    pub fn with_outbox(mut self, outbox: Outbox) -> SignerState {
        self.outbox = outbox;
        self
    }

    /// The same state approving under auto-approval rules (`enabled`) or not.
    pub fn with_rules(mut self, enabled: bool) -> SignerState {
        self.rules_enabled = enabled;
        self
    }

    /// The same state checking passkeys as `policy` says (`None`: not
    /// configured).
    pub fn with_passkeys(mut self, policy: Option<PasskeyPolicy>) -> SignerState {
        self.passkeys = policy;
        self
    }

    /// The same state signing the transparency log's checkpoints with
    /// `key`.
    pub fn with_log_key(mut self, key: LogKey) -> SignerState {
        self.log_key = Some(key);
        self
    }

    /// The same state checkpointing every `secs` seconds
    /// (`crate::checkpoint`).
    pub fn with_checkpoint_every(mut self, secs: u64) -> SignerState {
        self.checkpoints = self.checkpoints.every(std::time::Duration::from_secs(secs));
        self
    }

    /// The same state with claimed handoffs held for `secs` seconds.
    pub fn with_handoff_claim_lease(mut self, secs: u64) -> SignerState {
        self.handoff_claim_lease = lease_of(secs);
        self
    }

    /// Loads everything a home and its configuration name: checks the home,
    /// opens the key set (on first start creating the proof key, or
    /// migrating a lone `ed25519.key` into the key index), opens the ledger,
    /// opens the log key (creating it on first start), loads the registry
    /// file (re-read at each use from then on),
    /// validates the policy, and records notifications when `[notify]` is
    /// configured (the notify process delivers them).
    pub async fn load(home: &Home, config: &Config) -> Result<SignerState, StartError> {
        home.check()?;
        let (keys, _created) = KeyStore::open(&home.signer_dir())?;
        let principal = home.principal()?;
        let (log_key, _created) = LogKey::open(&home.signer_dir(), &principal)?;
        let policy = policy_from(config)?;
        let registry = CurrentRegistry::open(&config.registry)
            .map_err(|e| StartError::Registry(e.to_string()))?;
        let operator_policy = crate::operator_policy::OperatorPolicy::configured(
            &config.policy,
            &registry.last_loaded(),
        )?;
        // Premise programs run outside this process, out of reach of the
        // home (the key) or as another user (`[premise] socket`).
        let runner = PremiseRunner::configured(config.premise_socket.as_deref(), home.root());
        match runner.probe().await {
            Ok(Some(restricted)) => tracing::info!("{}", restricted.describe()),
            Ok(None) => tracing::info!(?runner, "premise programs run in the premise service"),
            Err(e) => {
                tracing::warn!(error = %e, "the premise runner did not answer its probe: premise commands will be refused")
            }
        }
        let ledger = Ledger::open(&config.ledger_url)
            .await?
            .with_premise_runner(runner);
        let passkeys = config.passkeys.as_ref().map(PasskeyPolicy::from_config);
        let outbox = Outbox::configured(config, &ledger);
        Ok(SignerState::new(keys, ledger, registry, policy)
            .with_operator_policy(operator_policy)
            .with_log_key(log_key)
            .with_passkeys(passkeys)
            .with_handoff_claim_lease(config.handoff_claim_lease_secs)
            .with_checkpoint_every(config.checkpoint_every_secs)
            .with_outbox(outbox)
            .with_rules(config.rules_enabled))
    }

    /// The PASERK id of the active key, as the key index says now.
    pub fn key_id(&self) -> Result<String, KeyStoreError> {
        Ok(self.keys.current()?.signer.key_id().to_owned())
    }

    /// How many PublicKeys calls this signer has answered.
    #[cfg(feature = "testing")]
    pub fn public_keys_served(&self) -> u64 {
        self.public_keys_served.load(Ordering::Relaxed)
    }

    /// The key set this signer signs and publishes from.
    pub fn keys(&self) -> &KeyStore {
        &self.keys
    }

    /// The transparency log's key, if this signer has one.
    pub fn log_key(&self) -> Option<&LogKey> {
        self.log_key.as_ref()
    }

    /// The ledger this signer records into (tests read it back).
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The policy proofs are issued under.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// The registry file proposals are validated and approvals checked
    /// against, as it is at each use.
    pub fn registry(&self) -> &CurrentRegistry {
        &self.registry
    }
}

/// `secs` as a lease (the configuration bounds it; saturated otherwise).
fn lease_of(secs: u64) -> time::Duration {
    time::Duration::seconds(i64::try_from(secs).unwrap_or(i64::MAX))
}

/// The configured policy, validated.
pub fn policy_from(config: &Config) -> Result<Policy, StartError> {
    Policy::new(
        config.policy.audience.clone(),
        config.policy.default_lifetime_secs,
        config.policy.max_lifetime_secs,
    )
    .and_then(|policy| policy.with_decision_window(config.policy.decision_window_secs))
    .map_err(|e| StartError::Policy(e.to_string()))
}

/// Opens the key set of `home` (creating the first key, 0600, or
/// migrating a lone `ed25519.key`) and the log key (creating it, 0600), and
/// returns the active key id and whether a proof key was created. The home
/// must already pass [`Home::check`].
pub fn load_or_create_key(home: &Home) -> Result<(String, bool), StartError> {
    let (keys, created) = KeyStore::open(&home.signer_dir())?;
    LogKey::open(&home.signer_dir(), &home.principal()?)?;
    let current = keys.current()?;
    Ok((current.signer.key_id().to_owned(), created))
}

//! What a running signer holds: its proof key, the ledger, the registry
//! file (followed as it changes, as the heads follow it), the policy and
//! the handoff store; and how they are loaded from a home.
//!
//! This module builds state; it neither binds ports nor answers RPCs. It
//! logs the key id only, never key material.

use std::fmt;

use countersign_identity::{Config, Home, IdentityError};
use countersign_ledger::Ledger;
use countersign_registry::{CurrentRegistry, Policy};

use crate::error::StartError;
use crate::handoff::HandoffStore;
use crate::key::ProofKey;

/// Everything the gRPC service needs, shared by all connections.
pub struct SignerState {
    pub(crate) key: ProofKey,
    pub(crate) ledger: Ledger,
    pub(crate) registry: CurrentRegistry,
    pub(crate) policy: Policy,
    pub(crate) handoffs: HandoffStore,
}

impl fmt::Debug for SignerState {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SignerState")
            .field("key_id", &self.key_id())
            .field("policy", &self.policy)
            .finish_non_exhaustive()
    }
}

impl SignerState {
    /// Assembles state from parts already loaded.
    pub fn new(
        key: ProofKey,
        ledger: Ledger,
        registry: CurrentRegistry,
        policy: Policy,
    ) -> SignerState {
        SignerState {
            key,
            ledger,
            registry,
            policy,
            handoffs: HandoffStore::default(),
        }
    }

    /// Loads everything a home and its configuration name: checks the home,
    /// loads (or on first start creates) the proof key, opens the ledger,
    /// loads the registry file (re-read at each use from then on) and
    /// validates the policy.
    pub async fn load(home: &Home, config: &Config) -> Result<SignerState, StartError> {
        home.check()?;
        let (key, _created) = load_or_create_key(home)?;
        let policy = policy_from(config)?;
        let registry = CurrentRegistry::open(&config.registry)
            .map_err(|e| StartError::Registry(e.to_string()))?;
        let ledger = Ledger::open(&config.ledger_url).await?;
        Ok(SignerState::new(key, ledger, registry, policy))
    }

    /// The PASERK id of the verifying key.
    pub fn key_id(&self) -> String {
        self.key.key_id().to_string()
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

/// The configured policy, validated.
pub fn policy_from(config: &Config) -> Result<Policy, StartError> {
    Policy::new(
        config.policy.audience.clone(),
        config.policy.default_lifetime_secs,
        config.policy.max_lifetime_secs,
    )
    .map_err(|e| StartError::Policy(e.to_string()))
}

/// Loads `<home>/signer/ed25519.key`, creating it (0600) if absent. Returns
/// whether it was created. The home must already pass [`Home::check`].
pub fn load_or_create_key(home: &Home) -> Result<(ProofKey, bool), StartError> {
    let path = home.signing_key_path();
    match std::fs::symlink_metadata(&path) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            match ProofKey::create_file(&path) {
                Ok(key) => return Ok((key, true)),
                // Lost a race with another process creating it: load theirs.
                Err(e) if path.exists() => {
                    tracing::debug!(error = %e, "key appeared while creating it");
                }
                Err(e) => return Err(StartError::Key(e)),
            }
        }
        Err(e) => {
            return Err(StartError::Identity(IdentityError::Io {
                path,
                kind: e.kind(),
                detail: e.to_string(),
            }));
        }
    }
    let key = ProofKey::load_file(&path)?;
    Ok((key, false))
}

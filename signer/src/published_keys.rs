//! The proof keys of every signer of this ledger: each signer publishes
//! its key index in the ledger (`signer_keys`) and serves the whole set,
//! so that a head verifies the proofs of either signer of a pair, and
//! losing one is a retirement of its key, not a copy of it.
//!
//! Owns: publishing this signer's index (at start, every checkpoint
//! round, and by `countersign-signer keys rotate` and `retire`), the key
//! set `PublicKeys` serves (this signer's keys first, as its index has
//! them, then the other signers' active and verifying ones). Must not:
//! serve a key the ledger retired, or one whose PASERK does not match its
//! key id (a row written by hand is skipped with a warning).

use countersign_ledger::{Ledger, LedgerError};
use countersign_verifier::keys::parse_paserk_public;
use countersign_verifier::{KeyStatus, key_id};

use crate::error::StartError;
use crate::keystore::{KeyStore, KeyStoreError, PublishedKey};
use crate::state::SignerState;

/// Why this signer's keys were not published.
#[derive(Debug, thiserror::Error)]
pub enum PublishError {
    /// The key index could not be read.
    #[error("{0}")]
    Index(#[from] KeyStoreError),
    /// The ledger refused (a key it retired) or failed.
    #[error("{0}")]
    Ledger(#[from] LedgerError),
}

/// Publish `keys`' whole index (retired keys included) in `ledger`, as
/// held by this host. `KeyRetired` if the ledger retired a key this index
/// still has in use: a signer whose key was retired through another never
/// signs with it again.
pub async fn publish(keys: &KeyStore, ledger: &Ledger) -> Result<(), PublishError> {
    let index: Vec<(String, String, KeyStatus)> = keys
        .list()?
        .into_iter()
        .map(|entry| (entry.key_id, entry.public, entry.status))
        .collect();
    ledger
        .publish_signer_keys(&countersign_identity::host::host_name(), &index)
        .await?;
    Ok(())
}

/// Publish this signer's key index in the ledger's key set, once it holds
/// the ledger (`claim_sole_signer`) and before it serves: refused
/// (`KeyRetired`) if the ledger retired a key the index still uses, so a
/// signer whose key was retired through another does not serve; any
/// other failure is logged and retried at the next checkpoint round.
pub async fn publish_keys(state: &SignerState) -> Result<(), StartError> {
    match publish(&state.keys, &state.ledger).await {
        Ok(()) => Ok(()),
        Err(PublishError::Ledger(e @ countersign_ledger::LedgerError::KeyRetired(_))) => {
            Err(StartError::Ledger(e))
        }
        Err(e) => {
            tracing::warn!("keys not published in the ledger's key set: {e}");
            Ok(())
        }
    }
}

/// The keys `PublicKeys` serves: on SQLite `own` alone; on PostgreSQL
/// `own` (this signer's, the active one first) less any the ledger
/// retired (through another signer, while this one served: heads then
/// refuse its proofs), then every other signer's active and verifying
/// keys as the ledger has them. A ledger that cannot
/// be read leaves `own` alone: a head then refuses the other signer's
/// proofs until its next refresh.
pub(crate) async fn served(
    own: &[PublishedKey],
    keys: &KeyStore,
    ledger: &Ledger,
) -> Vec<PublishedKey> {
    // A SQLite ledger has one signer, and its file is writable by every
    // head of a development installation: its rows name no other key.
    if ledger.is_sqlite() {
        return own.to_vec();
    }
    let index: Vec<String> = match keys.list() {
        Ok(entries) => entries.into_iter().map(|e| e.key_id).collect(),
        Err(e) => {
            tracing::warn!("key index not read, serving this signer's keys only: {e}");
            return own.to_vec();
        }
    };
    let published = match ledger.signer_keys().await {
        Ok(published) => published,
        Err(e) => {
            tracing::warn!("the other signers' keys not read, serving this signer's only: {e}");
            return own.to_vec();
        }
    };
    let retired = |kid: &str| {
        published
            .iter()
            .any(|row| row.kid == kid && row.status == KeyStatus::Retired)
    };
    let mut served: Vec<PublishedKey> = own
        .iter()
        .filter(|key| !retired(&key.key_id))
        .cloned()
        .collect();
    for row in published {
        if index.contains(&row.kid) || row.status == KeyStatus::Retired {
            continue;
        }
        match parse_paserk_public(&row.public_key) {
            Some(key) if key_id(&key) == row.kid => served.push(PublishedKey {
                key_id: row.kid,
                key,
                status: row.status,
            }),
            _ => tracing::warn!(
                kid = row.kid,
                signer = row.signer,
                "a published signer key is not the key its id names; not served"
            ),
        }
    }
    served
}

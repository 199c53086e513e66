//! What lets two signers serve one ledger, in the [`Ledger`] API (see
//! `sql/chores.rs`, `sql/signer_keys.rs`): chore leases with their fencing
//! tokens, the chains' checkpoints (their bookkeeping in the ledger, so
//! whichever signer writes the next one names what moved since the last),
//! and the proof keys each signer publishes. Forwards each call to the
//! backend; holds no SQL.

use countersign_verifier::KeyStatus;
use time::{Duration, OffsetDateTime};

use super::{Backend, Ledger};
use crate::error::LedgerError;
use crate::leases::Lease;

/// One proof key as a signer of this ledger published it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignerKey {
    /// The key id (derived from the key).
    pub kid: String,
    /// The PASERK public key (`k4.public.…`).
    pub public_key: String,
    /// As the holding signer's key index has it, or retired here.
    pub status: KeyStatus,
    /// The signer that holds it (its host name).
    pub signer: String,
    /// When it was last published or retired.
    pub updated_at: OffsetDateTime,
}

impl Ledger {
    /// Take the chore `chore` for `holder` until `ttl` from now, or renew
    /// `holder`'s lease: `None` while another holder's lease runs. Every
    /// write of the chore checks the returned lease's token.
    pub async fn take_lease(
        &self,
        chore: &str,
        holder: &str,
        ttl: Duration,
    ) -> Result<Option<Lease>, LedgerError> {
        dispatch!(self, b => b.take_lease(chore, holder, ttl).await)
    }

    /// Give `lease` back (it expires now), so that another process takes
    /// the chore at once; nothing if it was taken over already.
    pub async fn give_back_lease(&self, lease: &Lease) -> Result<(), LedgerError> {
        dispatch!(self, b => b.give_back_lease(lease).await)
    }

    /// Every chore's lease as stored.
    pub async fn leases(&self) -> Result<Vec<Lease>, LedgerError> {
        dispatch!(self, b => b.leases().await)
    }

    /// Write a `checkpoint` event on the global chain naming the head of
    /// every chain that moved since the checkpoints before named it, under
    /// `lease` (the checkpoint chore's; `LeaseLost` and nothing written if
    /// another holder took it since). Writes nothing when no head moved;
    /// returns how many chains it named.
    pub async fn checkpoint(&self, lease: &Lease) -> Result<usize, LedgerError> {
        dispatch!(self, b => b.checkpoint(lease).await)
    }

    /// Publish the key index of the signer `signer`: `(kid, PASERK public
    /// key, status)` of each key. `KeyRetired` (nothing written) if the
    /// ledger retired one of them and it is published as anything else.
    pub async fn publish_signer_keys(
        &self,
        signer: &str,
        keys: &[(String, String, KeyStatus)],
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.publish_signer_keys(signer, keys).await)
    }

    /// Retire `kid` in the published key set, whichever signer holds it
    /// (one that is lost, say): `false` if no signer published it.
    pub async fn retire_signer_key(&self, kid: &str) -> Result<bool, LedgerError> {
        dispatch!(self, b => b.retire_signer_key(kid).await)
    }

    /// Every key the signers of this ledger published, retired ones
    /// included.
    pub async fn signer_keys(&self) -> Result<Vec<SignerKey>, LedgerError> {
        dispatch!(self, b => b.signer_keys().await)
    }
}

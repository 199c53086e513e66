//! The witnesses' part of the [`Ledger`] API (see `crate::witness`):
//! storing and reading cosignatures, the witnessing client's persisted
//! queue, and its events. Forwards each call to the backend; holds no SQL.

use countersign_tlog::VerifierKey;
use serde_json::Value;

use super::{Backend, Ledger};
use crate::error::LedgerError;
use crate::leases::Lease;
use crate::witness::{StoredCosignature, WitnessState};

impl Ledger {
    /// Stores `line` (a note signature line) as `witness`'s cosignature of
    /// the stored checkpoint of `size`, only if it is a cosignature
    /// (type 0x04, nonzero timestamp) by exactly that key over exactly that
    /// checkpoint: `NoSuchCheckpoint` or `CosignatureRefused` otherwise,
    /// and nothing is written. Storing the same witness key's cosignature
    /// of a size again keeps the first and returns it.
    pub async fn store_cosignature(
        &self,
        size: u64,
        witness: &VerifierKey,
        line: &str,
    ) -> Result<StoredCosignature, LedgerError> {
        dispatch!(self, b => b.store_cosignature(None, size, witness, line).await)
    }

    /// [`Ledger::store_cosignature`] under `lease`, the witnessing chore's:
    /// `LeaseLost` and nothing written if another holder took it since.
    pub async fn store_cosignature_under(
        &self,
        lease: &Lease,
        size: u64,
        witness: &VerifierKey,
        line: &str,
    ) -> Result<StoredCosignature, LedgerError> {
        dispatch!(self, b => b.store_cosignature(Some(lease), size, witness, line).await)
    }

    /// Every stored cosignature of the checkpoint of `size`, ordered by
    /// witness key, as stored.
    pub async fn cosignatures(&self, size: u64) -> Result<Vec<StoredCosignature>, LedgerError> {
        dispatch!(self, b => b.cosignatures(size).await)
    }

    /// The stored checkpoint note of `size` with every stored cosignature
    /// line appended, ordered by witness key (each checked again over the
    /// checkpoint as it is read; one that does not verify is left out and
    /// logged as an error), as one signed-note text; `None` if no
    /// checkpoint of that size is stored. Without cosignatures it is the
    /// checkpoint as the log signed it.
    pub async fn cosigned_checkpoint(&self, size: u64) -> Result<Option<String>, LedgerError> {
        dispatch!(self, b => b.cosigned_checkpoint(size).await)
    }

    /// The largest checkpoint with at least one stored cosignature, as
    /// [`Ledger::cosigned_checkpoint`] gives it, with its size; `None`
    /// while no witness has cosigned anything.
    pub async fn latest_cosigned_checkpoint(&self) -> Result<Option<(u64, String)>, LedgerError> {
        let Some(size) = dispatch!(self, b => b.latest_cosigned_size().await)? else {
            return Ok(None);
        };
        Ok(self
            .cosigned_checkpoint(size)
            .await?
            .map(|note| (size, note)))
    }

    /// The witnessing client's state of every witness key it has
    /// contacted, ordered by key.
    pub async fn witness_states(&self) -> Result<Vec<WitnessState>, LedgerError> {
        dispatch!(self, b => b.witness_states().await)
    }

    /// Saves the witnessing client's state of one witness. Refused by the
    /// schema if its acknowledged size would decrease.
    pub async fn save_witness_state(&self, state: &WitnessState) -> Result<(), LedgerError> {
        dispatch!(self, b => b.save_witness_state(None, state).await)
    }

    /// [`Ledger::save_witness_state`] under `lease` (see
    /// [`Ledger::store_cosignature_under`]).
    pub async fn save_witness_state_under(
        &self,
        lease: &Lease,
        state: &WitnessState,
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.save_witness_state(Some(lease), state).await)
    }

    /// Saves `state` and appends an event of `kind` (one of the
    /// `WITNESS_*_EVENT` kinds of `crate::witness`) with `details` to the
    /// global chain, in one transaction. The event then enters the tree,
    /// and the next checkpoint the log signs commits to it.
    pub async fn record_witness_event(
        &self,
        state: &WitnessState,
        kind: &str,
        details: &Value,
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.record_witness_event(None, state, kind, details).await)
    }

    /// [`Ledger::record_witness_event`] under `lease` (see
    /// [`Ledger::store_cosignature_under`]).
    pub async fn record_witness_event_under(
        &self,
        lease: &Lease,
        state: &WitnessState,
        kind: &str,
        details: &Value,
    ) -> Result<(), LedgerError> {
        dispatch!(self, b => b.record_witness_event(Some(lease), state, kind, details).await)
    }
}

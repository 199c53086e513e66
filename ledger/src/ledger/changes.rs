//! Announcements of changed proposals between the signers of one ledger,
//! in the [`Ledger`] API: "proposal X of principal P changed", published by
//! the signer whose write changed it and heard by every other signer of
//! the same PostgreSQL database (`LISTEN`/`NOTIFY`, see
//! `postgres/changes.rs`), so that a watch held through one signer hears a
//! decision made through another.
//!
//! Carries ids only, never a view, a proof or an argument: a signer that
//! hears one reads the ledger again, so an announcement too many costs a
//! read and never shows a wrong view. On SQLite (one signer: see
//! [`Ledger::claim_sole_signer`]) there is nobody to tell: publishing does
//! nothing and there is no listener. Forwards to the backend; holds no SQL.

use countersign_verifier::{Principal, ProposalId};

use super::{Backend, Ledger};
use crate::error::LedgerError;

/// The `application_name` of the connection a [`ChangeListener`] holds
/// (the ledger's other connections are `countersign`): an operator sees it
/// in `pg_stat_activity`.
pub const CHANGE_LISTENER_APPLICATION: &str = "countersign-changes";

/// One signer instance among the signers of a ledger, as its announcements
/// name it: 32 lowercase hex characters, drawn at random when the signer
/// starts. A signer ignores the echo of its own announcements by it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignerInstance(String);

impl SignerInstance {
    /// The instance named by 16 random bytes (the caller draws them).
    pub fn from_random(bytes: [u8; 16]) -> SignerInstance {
        SignerInstance(hex::encode(bytes))
    }

    /// `text` if it is 32 lowercase hex characters (as another signer's
    /// announcement names it).
    pub fn parse(text: &str) -> Option<SignerInstance> {
        let hex = text.len() == 32 && text.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        hex.then(|| SignerInstance(text.to_owned()))
    }

    /// The instance's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What one announcement says changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProposalChange {
    /// The proposal `proposal` of `principal` changed.
    Proposal {
        /// Whose proposal it is.
        principal: Principal,
        /// The proposal that changed.
        proposal: ProposalId,
    },
    /// Any proposal may have changed: announcements were lost (the
    /// listener's connection dropped, a sender could not publish some, or
    /// one was in a form this build cannot read). Every watch reads again.
    Anything,
}

impl Ledger {
    /// Tell the other signers of this ledger that `changes` happened,
    /// through `sender` (whose own listener then ignores them). Call it
    /// after the writes committed. Nothing happens on SQLite. An error
    /// means they may not have been told: publish
    /// [`ProposalChange::Anything`] once the ledger answers again.
    pub async fn publish_changes(
        &self,
        sender: &SignerInstance,
        changes: &[ProposalChange],
    ) -> Result<(), LedgerError> {
        match &self.backend {
            Backend::Sqlite(_) => Ok(()),
            Backend::Postgres(b) => b.publish_changes(sender, changes).await,
        }
    }

    /// A listener for what the other signers of this ledger publish
    /// (not `me`'s own announcements), or `None` on SQLite, which has no
    /// other signer. It connects when first asked
    /// ([`ChangeListener::next`]).
    pub fn change_listener(&self, me: &SignerInstance) -> Option<ChangeListener> {
        match &self.backend {
            Backend::Sqlite(_) => None,
            Backend::Postgres(b) => Some(ChangeListener(b.change_listener(me.clone()))),
        }
    }

    /// How many events the ledger holds, counted by its chains' heads (one
    /// read of one row per chain): a signer sweeping for announcements that
    /// were lost (another signer killed between its commit and its
    /// `NOTIFY`) compares it with the last count it saw. `None` on SQLite,
    /// which has no other signer.
    pub async fn events_written(&self) -> Result<Option<i64>, LedgerError> {
        match &self.backend {
            Backend::Sqlite(_) => Ok(None),
            Backend::Postgres(b) => b.events_written().await.map(Some),
        }
    }

    /// Whether other signers may serve this ledger (PostgreSQL), so that a
    /// signer publishes its announcements ([`Ledger::publish_changes`]) and
    /// listens for theirs.
    pub fn has_other_signers(&self) -> bool {
        matches!(self.backend, Backend::Postgres(_))
    }
}

/// Hears the other signers' announcements on one connection of its own,
/// which it re-establishes whenever it drops.
#[derive(Debug)]
pub struct ChangeListener(crate::postgres::changes::Listener);

impl ChangeListener {
    /// The next announcement of another signer. After the listener
    /// (re)connects it says [`ProposalChange::Anything`] first: what was
    /// announced while it was not listening is lost. Never fails: a
    /// connection that cannot be made is tried again, a little later each
    /// time, until this future is dropped.
    pub async fn next(&mut self) -> ProposalChange {
        self.0.next().await
    }
}

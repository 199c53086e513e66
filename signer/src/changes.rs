//! Announcements of changed proposals, for the watch streams
//! (`watch.rs`): "proposal X of principal P changed", sent by the RPCs
//! that write a proposal's facts once their ledger write has ended, and the
//! bound on how many watches a principal holds open.
//!
//! Owns: the one in-process channel of announcements (a
//! `tokio::sync::broadcast`: every watch subscribes, and filters by its
//! proposal or principal), the [`Announce`] guard a writing RPC holds over
//! its ledger write, the count of open watches per principal and role, and the
//! stop flag that ends every watch when the signer shuts down.
//!
//! Must not: carry anything but ids (no view, no proof), or decide what a
//! watcher sees: a watch reads the ledger again after an announcement, so
//! an announcement too many costs one read, never a wrong view. A watch
//! subscribes before its first read ([`Changes::subscribe`]); the writer
//! announces after its commit. So a change is either seen by that first
//! read or announced to the subscription.
//!
//! Only this signer's writes are announced. Another signer process on the
//! same PostgreSQL ledger announces its own, to its own watches.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{broadcast, watch};

use countersign_identity::Role;

use crate::error::RpcError;

/// The most watches (`WatchProposal` and `WatchPending` together) one
/// principal may hold open at once in one role: a waiting hook holds one
/// as a head, a console one as an approver. Each idle watch is a parked
/// task and an HTTP/2 stream, so the bound is about a misbehaving head,
/// not about cost. Counted per role, so that the agent's heads, however
/// many watches they open, never take an approver's place: the person's
/// live list and its decisions do not wait on the agent.
pub(crate) const MAX_WATCHES_PER_PRINCIPAL: usize = 256;

/// Whose watches are counted together: one principal in one role.
type WatchKey = (String, Role);

/// How many announcements a watch may fall behind before it is told it
/// lagged (it then reads again, as for any change).
const BACKLOG: usize = 1024;

/// One announcement: the proposal `proposal_id` of `principal` changed.
#[derive(Debug, Clone)]
pub(crate) struct Change {
    pub(crate) principal: Arc<str>,
    pub(crate) proposal_id: Arc<str>,
}

/// The announcements of one signer and the watches open on them.
#[derive(Debug)]
pub(crate) struct Changes {
    sent: broadcast::Sender<Change>,
    open: Arc<Mutex<HashMap<WatchKey, usize>>>,
    stopping: watch::Sender<bool>,
}

impl Default for Changes {
    fn default() -> Self {
        Changes {
            sent: broadcast::Sender::new(BACKLOG),
            open: Arc::default(),
            stopping: watch::Sender::new(false),
        }
    }
}

impl Changes {
    /// Tell every watch of `principal`'s proposal `proposal_id` to read it
    /// again. Call it only after the write's commit has ended.
    pub(crate) fn announce(&self, principal: &str, proposal_id: &str) {
        // No watch listening is no error.
        let _ = self.sent.send(Change {
            principal: principal.into(),
            proposal_id: proposal_id.into(),
        });
    }

    /// A guard that announces `principal`'s proposal `proposal_id` when
    /// dropped: held by an RPC over its ledger writes, so the announcement
    /// follows them on every path out (an answer, a refusal after a write,
    /// an error).
    pub(crate) fn on_drop(&self, principal: &str, proposal_id: &str) -> Announce<'_> {
        Announce {
            changes: self,
            principal: principal.to_owned(),
            proposal_id: proposal_id.to_owned(),
        }
    }

    /// A new subscription to the announcements: take it before the first
    /// read of what it watches.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Change> {
        self.sent.subscribe()
    }

    /// A place for one more watch of `principal` in `role`, held until the
    /// watch ends, or `too_many_watchers`. Each role of a principal has
    /// its own [`MAX_WATCHES_PER_PRINCIPAL`] places.
    pub(crate) fn open_watch(&self, principal: &str, role: Role) -> Result<WatchSlot, RpcError> {
        let key = (principal.to_owned(), role);
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let count = open.entry(key.clone()).or_default();
        if *count >= MAX_WATCHES_PER_PRINCIPAL {
            return Err(RpcError::TooManyWatchers(
                role.as_str(),
                MAX_WATCHES_PER_PRINCIPAL,
            ));
        }
        *count += 1;
        Ok(WatchSlot {
            open: Arc::clone(&self.open),
            key,
        })
    }

    /// Turns true once the signer shuts down: every watch then ends.
    pub(crate) fn stopping(&self) -> watch::Receiver<bool> {
        self.stopping.subscribe()
    }

    /// Ends every watch (the server is shutting down and waits for its
    /// streams to end).
    pub(crate) fn stop(&self) {
        self.stopping.send_replace(true);
    }
}

/// Announces one proposal's change when dropped ([`Changes::on_drop`]).
pub(crate) struct Announce<'a> {
    changes: &'a Changes,
    principal: String,
    proposal_id: String,
}

impl Drop for Announce<'_> {
    fn drop(&mut self) {
        self.changes.announce(&self.principal, &self.proposal_id);
    }
}

/// One open watch of a principal in a role, counted until dropped.
#[derive(Debug)]
pub(crate) struct WatchSlot {
    open: Arc<Mutex<HashMap<WatchKey, usize>>>,
    key: WatchKey,
}

impl Drop for WatchSlot {
    fn drop(&mut self) {
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(count) = open.get_mut(&self.key) {
            *count = count.saturating_sub(1);
            if *count == 0 {
                open.remove(&self.key);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_principal_holds_at_most_the_bound_per_role_and_a_closed_watch_frees_its_place() {
        let changes = Changes::default();
        let mut held: Vec<WatchSlot> = (0..MAX_WATCHES_PER_PRINCIPAL)
            .map(|_| changes.open_watch("pr_a", Role::Head).unwrap())
            .collect();
        assert_eq!(
            changes.open_watch("pr_a", Role::Head).unwrap_err(),
            RpcError::TooManyWatchers("head", MAX_WATCHES_PER_PRINCIPAL)
        );
        // Its approvers are not held back by its heads, nor another
        // principal by this one.
        let approvers: Vec<WatchSlot> = (0..MAX_WATCHES_PER_PRINCIPAL)
            .map(|_| changes.open_watch("pr_a", Role::Approver).unwrap())
            .collect();
        assert_eq!(
            changes.open_watch("pr_a", Role::Approver).unwrap_err(),
            RpcError::TooManyWatchers("approver", MAX_WATCHES_PER_PRINCIPAL)
        );
        let other = changes.open_watch("pr_b", Role::Head).unwrap();
        held.pop();
        let again = changes.open_watch("pr_a", Role::Head).unwrap();
        drop((held, approvers, again, other));
        assert!(changes.open.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_subscription_hears_what_is_announced_after_it_and_the_guard_announces_on_drop() {
        let changes = Changes::default();
        changes.announce("pr_a", "prop_before");
        let mut heard = changes.subscribe();
        drop(changes.on_drop("pr_a", "prop_1"));
        let change = heard.recv().await.unwrap();
        assert_eq!(
            (&*change.principal, &*change.proposal_id),
            ("pr_a", "prop_1")
        );
        assert!(heard.try_recv().is_err(), "nothing else was announced");
    }
}

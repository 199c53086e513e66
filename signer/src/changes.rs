//! Announcements of changed proposals, for the watch streams
//! (`watch.rs`): "proposal X of principal P changed", sent by the RPCs
//! that write a proposal's facts once their ledger write has ended, and
//! by the other signers of the same PostgreSQL ledger; and the bound on
//! how many watches a principal holds open.
//!
//! Owns: the one in-process channel of announcements (a
//! `tokio::sync::broadcast`: every watch subscribes, and filters by its
//! proposal or principal), the [`Announce`] guard a writing RPC holds over
//! its ledger write, the crossing to the other signers of a PostgreSQL
//! ledger ([`Changes::cross_signers`]), the count of open watches per
//! principal and role, and the stop flag that ends every watch when the
//! signer shuts down.
//!
//! Must not: carry anything but ids (no view, no proof), or decide what a
//! watcher sees: a watch reads the ledger again after an announcement, so
//! an announcement too many costs one read, never a wrong view. A watch
//! subscribes before its first read ([`Changes::subscribe`]); the writer
//! announces after its commit. So a change is either seen by that first
//! read or announced to the subscription.
//!
//! Across signers (PostgreSQL only; a SQLite ledger has one signer): each
//! announcement is also published to the ledger's other signers
//! (`Ledger::publish_changes`, a `NOTIFY` after the local announcement and
//! after the commit), and a listener (`Ledger::change_listener`, `LISTEN`
//! on a connection of its own) feeds theirs into this signer's channel,
//! ignoring the echo of its own. Announcements cross as ids only, like the
//! local ones. Nothing may be missed where something can be lost, so each
//! loss becomes [`Change::Anything`], on which every open watch reads
//! again (as for a lag): the listener says it whenever its connection
//! (re)opens, since what was sent while it was not listening is lost; a
//! signer whose queue of announcements to publish overflowed, or whose
//! publishing failed, publishes it once the ledger answers again. The
//! crossing runs while the signer serves and stops with it (the stop
//! flag); what was announced after that is published once more when the
//! server has stopped ([`Changes::publish_queued`]). A signer killed
//! between its commit and its `NOTIFY` announces nothing: every
//! [`SWEEP_EVERY`] each signer compares the ledger's count of events with
//! the last it saw, and a count that moved is [`Change::Anything`].

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::{Notify, broadcast, watch};

use countersign_identity::Role;
use countersign_ledger::{Ledger, ProposalChange, SignerInstance};

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

/// How long publishing waits after a failure before it tries again,
/// doubled each time up to [`MAX_RETRY`].
const MIN_RETRY: Duration = Duration::from_millis(100);
const MAX_RETRY: Duration = Duration::from_secs(5);

/// How often a signer of a PostgreSQL ledger checks whether events were
/// written that nobody announced (a signer killed between its commit and
/// its `NOTIFY`): the longest a watch may then wait for such a change.
pub const SWEEP_EVERY: Duration = Duration::from_secs(5);

/// One announcement.
#[derive(Debug, Clone)]
pub(crate) enum Change {
    /// The proposal `proposal_id` of `principal` changed.
    Proposal {
        principal: Arc<str>,
        proposal_id: Arc<str>,
    },
    /// Any proposal may have changed (another signer's announcements may
    /// have been lost): every watch reads again.
    Anything,
}

impl Change {
    /// Whether this may concern the proposal `id`.
    pub(crate) fn may_concern_proposal(&self, id: &str) -> bool {
        match self {
            Change::Proposal { proposal_id, .. } => **proposal_id == *id,
            Change::Anything => true,
        }
    }

    /// Whether this may concern a proposal of `principal`.
    pub(crate) fn may_concern_principal(&self, of: &str) -> bool {
        match self {
            Change::Proposal { principal, .. } => **principal == *of,
            Change::Anything => true,
        }
    }
}

/// The announcements of one signer and the watches open on them.
#[derive(Debug)]
pub(crate) struct Changes {
    sent: broadcast::Sender<Change>,
    open: Arc<Mutex<HashMap<WatchKey, usize>>>,
    stopping: watch::Sender<bool>,
    /// The crossing to the ledger's other signers; `None` on SQLite.
    across: Option<Across>,
}

/// What this signer publishes to the other signers of its ledger.
#[derive(Debug)]
struct Across {
    /// This signer among them.
    me: SignerInstance,
    /// Announced here, not yet published.
    queued: Mutex<Queued>,
    /// Wakes the publisher when something is queued.
    wake: Notify,
}

/// The announcements waiting to be published.
#[derive(Debug, Default)]
struct Queued {
    changes: Vec<ProposalChange>,
    /// Some were dropped (the queue was full, or publishing failed): the
    /// others are to be told that anything may have changed.
    lost: bool,
}

impl Default for Changes {
    /// The announcements of a signer whose ledger has no other signer.
    fn default() -> Self {
        Changes {
            sent: broadcast::Sender::new(BACKLOG),
            open: Arc::default(),
            stopping: watch::Sender::new(false),
            across: None,
        }
    }
}

/// A name for this signer among the ledger's signers, drawn at random.
/// Should the draw fail, the process id and the clock make it, which only
/// another signer started in the same nanosecond with the same process id
/// could share.
fn this_instance() -> SignerInstance {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or_default();
        bytes[..4].copy_from_slice(&std::process::id().to_be_bytes());
        bytes[4..].copy_from_slice(&nanos.to_be_bytes()[4..]);
    }
    SignerInstance::from_random(bytes)
}

impl Changes {
    /// The announcements of a signer of `ledger`: crossing to its other
    /// signers if it may have any (PostgreSQL).
    pub(crate) fn for_ledger(ledger: &Ledger) -> Changes {
        let across = ledger.has_other_signers().then(|| Across {
            me: this_instance(),
            queued: Mutex::default(),
            wake: Notify::new(),
        });
        Changes {
            across,
            ..Changes::default()
        }
    }

    /// Tell every watch of `principal`'s proposal `proposal_id` to read it
    /// again, here, then through the other signers of the ledger. Call it
    /// only after the write's commit has ended.
    pub(crate) fn announce(&self, principal: &str, proposal_id: &str) {
        // No watch listening is no error.
        let _ = self.sent.send(Change::Proposal {
            principal: principal.into(),
            proposal_id: proposal_id.into(),
        });
        let Some(across) = &self.across else {
            return;
        };
        let mut queued = across.queued.lock().unwrap_or_else(PoisonError::into_inner);
        match (principal.parse(), proposal_id.parse()) {
            (Ok(principal), Ok(proposal)) if queued.changes.len() < BACKLOG => {
                queued.changes.push(ProposalChange::Proposal {
                    principal,
                    proposal,
                });
            }
            // Too many waiting (or, never, not ids): "anything" covers them.
            _ => {
                queued.changes.clear();
                queued.lost = true;
            }
        }
        drop(queued);
        across.wake.notify_one();
    }

    /// Publishes this signer's announcements to the other signers of
    /// `ledger` and feeds theirs to this signer's watches, until the
    /// signer stops. Returns at once on SQLite.
    pub(crate) async fn cross_signers(&self, ledger: &Ledger) {
        let Some(across) = &self.across else {
            return;
        };
        let Some(mut listener) = ledger.change_listener(&across.me) else {
            return;
        };
        let listen = async {
            loop {
                let change = match listener.next().await {
                    ProposalChange::Proposal {
                        principal,
                        proposal,
                    } => Change::Proposal {
                        principal: principal.as_str().into(),
                        proposal_id: proposal.as_str().into(),
                    },
                    ProposalChange::Anything => Change::Anything,
                };
                let _ = self.sent.send(change);
            }
        };
        let publish = async {
            loop {
                across.wake.notified().await;
                let mut retry = MIN_RETRY;
                while !self.publish_queued(ledger).await {
                    tokio::time::sleep(retry).await;
                    retry = (retry * 2).min(MAX_RETRY);
                }
            }
        };
        // A signer killed between its commit and its `NOTIFY` never
        // announces that write: every [`SWEEP_EVERY`], a count of the
        // ledger's events that moved says some write may not have been
        // heard, and every watch reads again (its own writes included: a
        // read too many, never a wrong view).
        let sweep = async {
            let mut seen = None;
            loop {
                match ledger.events_written().await {
                    Ok(Some(now)) => {
                        if seen.is_some_and(|before| before != now) {
                            let _ = self.sent.send(Change::Anything);
                        }
                        seen = Some(now);
                    }
                    Ok(None) => return,
                    Err(e) => tracing::debug!("the announcement sweep could not read: {e}"),
                }
                tokio::time::sleep(SWEEP_EVERY).await;
            }
        };
        let mut stopping = self.stopping();
        tokio::select! {
            _ = stopping.wait_for(|stop| *stop) => {}
            _ = listen => {}
            _ = publish => {}
            _ = sweep => {}
        }
    }

    /// Publishes what is queued for the other signers of `ledger`, once;
    /// false if that failed (then they are to be told "anything" next
    /// time). True at once on SQLite.
    pub(crate) async fn publish_queued(&self, ledger: &Ledger) -> bool {
        let Some(across) = &self.across else {
            return true;
        };
        let changes = {
            let mut queued = across.queued.lock().unwrap_or_else(PoisonError::into_inner);
            let lost = std::mem::take(&mut queued.lost);
            let changes = std::mem::take(&mut queued.changes);
            if lost {
                vec![ProposalChange::Anything]
            } else {
                changes
            }
        };
        if changes.is_empty() {
            return true;
        }
        match ledger.publish_changes(&across.me, &changes).await {
            Ok(()) => true,
            Err(e) => {
                tracing::warn!(error = %e, "could not tell the other signers of changed proposals");
                let mut queued = across.queued.lock().unwrap_or_else(PoisonError::into_inner);
                queued.changes.clear();
                queued.lost = true;
                false
            }
        }
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
        let Change::Proposal {
            principal,
            proposal_id,
        } = heard.recv().await.unwrap()
        else {
            panic!("a proposal's change");
        };
        assert_eq!((&*principal, &*proposal_id), ("pr_a", "prop_1"));
        assert!(heard.try_recv().is_err(), "nothing else was announced");
        assert!(changes.across.is_none(), "nothing to publish to");
    }

    #[test]
    fn a_full_queue_to_publish_becomes_anything_changed() {
        let changes = Changes {
            across: Some(Across {
                me: this_instance(),
                queued: Mutex::default(),
                wake: Notify::new(),
            }),
            ..Changes::default()
        };
        let queued = || {
            let across = changes.across.as_ref().unwrap();
            let queued = across.queued.lock().unwrap();
            (queued.changes.len(), queued.lost)
        };
        let principal = format!("pr_{}", "a".repeat(32));
        for i in 0..BACKLOG {
            changes.announce(&principal, &format!("prop_{i:032x}"));
        }
        assert_eq!(queued(), (BACKLOG, false));
        changes.announce(&principal, &format!("prop_{:032x}", BACKLOG));
        assert_eq!(queued(), (0, true));
    }

    #[test]
    fn two_signers_are_two_instances() {
        assert_ne!(this_instance(), this_instance());
    }
}

//! Announcements between the signers of one PostgreSQL ledger: the
//! `NOTIFY` channel, the payload's form, and the listener (`LISTEN` on a
//! connection of its own).
//!
//! A payload is ids only, one line of ASCII: `v1 <sender> <principal>
//! <proposal>`, or `v1 <sender> *` for "anything may have changed". Every
//! part has a fixed shape (see [`SignerInstance`], `Principal`,
//! `ProposalId`), so a payload is under 120 bytes, far from PostgreSQL's
//! 8000; one that would be longer is not sent (and the others are told
//! "anything"). Any role that can connect to the database can `NOTIFY`
//! this channel, so a payload is parsed strictly, and one this build
//! cannot read makes the listener say [`ProposalChange::Anything`]: a
//! newer signer's announcement is then heard as a reason to read again,
//! never missed, and a forged one costs a read, never a wrong view.
//!
//! `NOTIFY` is sent by a statement of its own (`SELECT pg_notify`) after
//! the write committed, not inside the write's transaction. A transaction
//! that notified takes a database-wide lock at its commit to queue the
//! notifications, which would serialize every write's commit (group
//! commit and the per-principal chains exist so that commits do not
//! serialize); after the commit only the small notifying statement takes
//! it. The cost is that a signer that stops between its commit and its
//! `pg_notify` does not announce that write: a watch through another
//! signer hears it at its next read (the next announcement, or a decision
//! window's close), and a signer's listener that reconnects reads
//! everything again.

use std::time::{Duration, Instant};

use sqlx::Pool;
use sqlx::postgres::{PgListener, PgPoolOptions};

use super::{Db, Store};
use crate::error::LedgerError;
use crate::ledger::{CHANGE_LISTENER_APPLICATION, ProposalChange, SignerInstance};

/// The channel every signer of one database announces on and listens to
/// (`NOTIFY` channels are per database).
const CHANNEL: &str = "countersign_changes";

/// The longest payload PostgreSQL takes (in its default build; 8000
/// bytes).
const MAX_PAYLOAD: usize = 7999;

/// The payload form this build writes and reads.
const VERSION: &str = "v1";

/// How long the listener waits before its first attempt to connect again,
/// doubled after each failure up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(100);
const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// The payload announcing `change` from `sender`.
fn payload(sender: &SignerInstance, change: &ProposalChange) -> String {
    match change {
        ProposalChange::Proposal {
            principal,
            proposal,
        } => format!("{VERSION} {} {principal} {proposal}", sender.as_str()),
        ProposalChange::Anything => format!("{VERSION} {} *", sender.as_str()),
    }
}

/// What a payload says, for the listener of `me`: `None` for `me`'s own
/// echo; [`ProposalChange::Anything`] for a payload it cannot read.
fn heard(payload: &str, me: &SignerInstance) -> Option<ProposalChange> {
    let parts: Vec<&str> = payload.split(' ').collect();
    let (sender, said) = match parts.as_slice() {
        [VERSION, sender, said @ ..] => (SignerInstance::parse(sender), said),
        _ => (None, &[][..]),
    };
    let Some(sender) = sender else {
        tracing::debug!("an announcement of an unknown form: every watch reads again");
        return Some(ProposalChange::Anything);
    };
    if sender == *me {
        return None;
    }
    Some(match said {
        [principal, proposal] => match (principal.parse(), proposal.parse()) {
            (Ok(principal), Ok(proposal)) => ProposalChange::Proposal {
                principal,
                proposal,
            },
            _ => ProposalChange::Anything,
        },
        _ => ProposalChange::Anything,
    })
}

impl Store {
    /// How many events every chain holds together: it grows with every
    /// commit that wrote an event, whatever the order the events' ids were
    /// drawn in (one row per chain: a principal's and the global one).
    pub(crate) async fn events_written(&self) -> Result<i64, LedgerError> {
        Ok(
            sqlx::query_scalar("SELECT CAST(COALESCE(SUM(count), 0) AS BIGINT) FROM chain_heads")
                .fetch_one(&self.reader)
                .await?,
        )
    }

    /// `NOTIFY` each of `changes` from `sender`, in one statement and one
    /// round trip (see the module doc for why it is not in the writes'
    /// transactions).
    pub(crate) async fn publish_changes(
        &self,
        sender: &SignerInstance,
        changes: &[ProposalChange],
    ) -> Result<(), LedgerError> {
        let mut payloads: Vec<String> = Vec::with_capacity(changes.len());
        for change in changes {
            let text = payload(sender, change);
            if text.len() > MAX_PAYLOAD {
                // Not possible with the ids' fixed shapes; said anyway.
                tracing::warn!(bytes = text.len(), "an announcement too long to send");
                payloads.push(payload(sender, &ProposalChange::Anything));
            } else {
                payloads.push(text);
            }
        }
        if payloads.is_empty() {
            return Ok(());
        }
        sqlx::query("SELECT pg_notify($1, p) FROM unnest(CAST($2 AS text[])) AS p")
            .bind(CHANNEL)
            .bind(payloads)
            .execute(&self.writer)
            .await?;
        Ok(())
    }

    /// A listener for every announcement but `me`'s, not yet connected.
    pub(crate) fn change_listener(&self, me: SignerInstance) -> Listener {
        let options = (*self.writer.connect_options())
            .clone()
            .application_name(CHANGE_LISTENER_APPLICATION);
        // A pool of its one connection, so the listener holds none of the
        // ledger's, and a connection that dropped is replaced through it.
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .max_lifetime(None)
            .idle_timeout(None)
            .connect_lazy_with(options);
        Listener {
            pool,
            me,
            listening: None,
            connected_at: Instant::now(),
            backoff: MIN_BACKOFF,
        }
    }
}

/// `LISTEN` on [`CHANNEL`] over a connection of its own.
pub(crate) struct Listener {
    pool: Pool<Db>,
    me: SignerInstance,
    /// `None` until connected, and after the connection failed.
    listening: Option<PgListener>,
    /// When the current connection was made.
    connected_at: Instant,
    /// How long to wait before the next attempt to connect.
    backoff: Duration,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Listener")
            .field("me", &self.me)
            .field("listening", &self.listening.is_some())
            .finish_non_exhaustive()
    }
}

impl Listener {
    /// The next announcement of another signer (see
    /// `ChangeListener::next`).
    pub(crate) async fn next(&mut self) -> ProposalChange {
        loop {
            let Some(listening) = self.listening.as_mut() else {
                match self.listen().await {
                    Ok(listening) => {
                        self.listening = Some(listening);
                        self.connected_at = Instant::now();
                        return ProposalChange::Anything;
                    }
                    Err(e) => {
                        tracing::warn!(error = %e, retry_in = ?self.backoff, "cannot listen for other signers' announcements");
                        self.pause().await;
                        continue;
                    }
                }
            };
            match listening.try_recv().await {
                Ok(Some(notification)) => {
                    if let Some(change) = heard(notification.payload(), &self.me) {
                        return change;
                    }
                }
                // The connection dropped and sqlx made another, which
                // listens again: what was sent in between is lost.
                Ok(None) => {
                    tracing::info!("listening again for other signers' announcements");
                    return ProposalChange::Anything;
                }
                Err(e) => {
                    // Dropped: a new listener on a new connection, at
                    // once if this one served a while; one that keeps
                    // failing soon after it is made is made again less
                    // and less often.
                    self.listening = None;
                    if self.connected_at.elapsed() >= MAX_BACKOFF {
                        self.backoff = MIN_BACKOFF;
                    }
                    tracing::warn!(error = %e, retry_in = ?self.backoff, "lost the connection that hears other signers' announcements");
                    self.pause().await;
                }
            }
        }
    }

    /// Waits before the next attempt to connect, and doubles the next
    /// wait (up to [`MAX_BACKOFF`]).
    async fn pause(&mut self) {
        tokio::time::sleep(self.backoff).await;
        self.backoff = (self.backoff * 2).min(MAX_BACKOFF);
    }

    /// A connection of the listener's pool, listening.
    async fn listen(&self) -> Result<PgListener, LedgerError> {
        let mut listening = PgListener::connect_with(&self.pool).await?;
        listening.listen(CHANNEL).await?;
        Ok(listening)
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use countersign_verifier::{Principal, ProposalId};

    fn ids() -> (Principal, ProposalId) {
        (
            Principal::from_random([1; 16]),
            ProposalId::from_random([2; 16]),
        )
    }

    #[test]
    fn a_payload_is_read_back_as_it_was_written_and_an_echo_is_ignored() {
        let (a, b) = (
            SignerInstance::from_random([3; 16]),
            SignerInstance::from_random([4; 16]),
        );
        let (principal, proposal) = ids();
        for change in [
            ProposalChange::Proposal {
                principal,
                proposal,
            },
            ProposalChange::Anything,
        ] {
            let text = payload(&a, &change);
            assert!(text.len() < 120, "{text}");
            assert_eq!(heard(&text, &b), Some(change));
            assert_eq!(heard(&text, &a), None);
        }
    }

    #[test]
    fn a_payload_of_another_form_is_heard_as_anything() {
        let me = SignerInstance::from_random([4; 16]);
        let (principal, proposal) = ids();
        let sender = "03".repeat(16);
        for odd in [
            String::new(),
            "v2 whatever".into(),
            format!("v2 {sender} {principal} {proposal}"),
            format!("v1 {} {principal} {proposal}", "X".repeat(32)),
            format!("v1 {sender} {proposal} {principal}"),
            format!("v1 {sender} {principal}"),
            format!("v1 {sender} {principal} {proposal} more"),
            format!("v1  {sender} {principal} {proposal}"),
        ] {
            assert_eq!(heard(&odd, &me), Some(ProposalChange::Anything), "{odd}");
        }
    }
}

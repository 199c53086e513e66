//! `WatchProposal` and `WatchPending`: a proposal's decision, and a
//! principal's pending list, as they happen, without polling.
//!
//! Owns: the two streaming RPCs. Each checks the caller like its unary
//! twin (`GetProposal`, `ListPending`), subscribes to the signer's
//! announcements (`changes.rs`: its own writes', and on PostgreSQL those
//! of the ledger's other signers) before its first read, takes one of the
//! principal's watch places, and hands a task the rest: send the first
//! read, then wait (a parked task) for an announcement that concerns it,
//! or for the first decision window it shows to close (an expiry is
//! derived, never written, so nothing announces it), read again, and send
//! what changed. A subscription that lagged, or an announcement that
//! anything may have changed (another signer's announcements may have
//! been lost), reads again as for any change. The task ends when the
//! client goes away (its stream is dropped), when the signer stops
//! (`signer_stopping`), and for `WatchProposal` right after the first view
//! that is not pending.
//!
//! Must not: send a view the caller's principal does not own, send the
//! same view or list twice in a row, or hold a proof.

use std::time::Duration;

use countersign_identity::PeerIdentity;
use countersign_proto::v1 as wire;
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;
use tokio::sync::broadcast::error::{RecvError, TryRecvError};
use tokio::sync::{broadcast, mpsc, watch};
use tokio::time::Instant;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Status};

use crate::changes::{Change, WatchSlot};
use crate::convert::{ProposalId, parse_proposal_id};
use crate::error::RpcError;
use crate::service::SignerService;

/// The messages of one watch, as tonic sends them.
pub(crate) type Views<T> = ReceiverStream<Result<T, Status>>;

/// How long a pending-list watch lets a burst of changes land after the
/// first one before it reads the list once for all of them.
const COALESCE: Duration = Duration::from_millis(20);

/// After a window's close found nothing changed (a clock a little behind
/// the view's), how long a watch waits before it reads again.
const RECHECK: Duration = Duration::from_secs(1);

/// When the first decision window of the pending `views` closes, as an
/// instant of this process's clock (a little after it: the ledger reads
/// whole seconds), if any shows one.
fn first_close<'a>(views: impl IntoIterator<Item = &'a wire::ProposalView>) -> Option<Instant> {
    let now = OffsetDateTime::now_utc();
    views
        .into_iter()
        .filter(|v| v.status() == wire::ProposalStatus::Pending)
        .filter_map(|v| OffsetDateTime::parse(&v.decide_by, &Rfc3339).ok())
        .min()
        .map(|closes| {
            let left = Duration::try_from(closes - now).unwrap_or(Duration::ZERO);
            Instant::now() + left + Duration::from_millis(20)
        })
}

impl SignerService {
    pub(crate) async fn watch_proposal(
        &self,
        peer: PeerIdentity,
        request: Request<wire::WatchProposalRequest>,
    ) -> Result<Views<wire::ProposalView>, RpcError> {
        let id = parse_proposal_id(request.into_inner().proposal_id)?;
        // Subscribed before the first read: whatever commits after that
        // read is announced to this subscription.
        let heard = self.state.changes.subscribe();
        let record = self.owned_proposal(&id, &peer.principal).await?;
        let slot = self.state.changes.open_watch(&peer.principal, peer.role)?;
        let first = self.view_of(&record).await?;
        #[cfg(feature = "testing")]
        self.state.watch_gate.pass().await;
        let (watch, views) = Watch::new(self.clone(), heard, slot);
        tokio::spawn(watch.proposal(id, first));
        Ok(views)
    }

    pub(crate) async fn watch_pending(
        &self,
        peer: PeerIdentity,
        _request: Request<wire::WatchPendingRequest>,
    ) -> Result<Views<wire::ListPendingResponse>, RpcError> {
        let heard = self.state.changes.subscribe();
        let slot = self.state.changes.open_watch(&peer.principal, peer.role)?;
        let first = self.pending_views(&peer.principal).await?;
        #[cfg(feature = "testing")]
        self.state.watch_gate.pass().await;
        let (watch, views) = Watch::new(self.clone(), heard, slot);
        tokio::spawn(watch.pending(peer.principal.to_string(), first));
        Ok(views)
    }
}

/// One open watch: the task's side of the stream.
struct Watch<T> {
    service: SignerService,
    heard: broadcast::Receiver<Change>,
    stopping: watch::Receiver<bool>,
    sent: mpsc::Sender<Result<T, Status>>,
    /// The principal's place, given back when the watch ends.
    _slot: WatchSlot,
}

/// What a watch waited for.
enum Woken {
    /// Something it watches may have changed: read again.
    Changed,
    /// The client went away, or the signer stops: end.
    End,
}

impl<T: Clone + PartialEq + Send + 'static> Watch<T> {
    fn new(
        service: SignerService,
        heard: broadcast::Receiver<Change>,
        slot: WatchSlot,
    ) -> (Watch<T>, Views<T>) {
        // One message in flight: a slow client holds its task at `send`,
        // and the announcements it misses meanwhile make it read again.
        let (sent, views) = mpsc::channel(1);
        let stopping = service.state.changes.stopping();
        let watch = Watch {
            service,
            heard,
            stopping,
            sent,
            _slot: slot,
        };
        (watch, ReceiverStream::new(views))
    }

    /// Sends `item`; false once the client has gone, or if the signer
    /// stops while a client that does not read holds the send back.
    async fn send(&mut self, item: T) -> bool {
        tokio::select! {
            sent = self.sent.send(Ok(item)) => sent.is_ok(),
            _ = self.stopping.wait_for(|stop| *stop) => false,
        }
    }

    /// Sends `err` as the stream's last message (given up if the signer
    /// stops first).
    async fn fail(&mut self, err: RpcError) {
        let status = self.service.refused(err);
        tokio::select! {
            _ = self.sent.send(Err(status)) => {}
            _ = self.stopping.wait_for(|stop| *stop) => {}
        }
    }

    /// Parks until an announcement `concerns` (or a lag, which may hide
    /// one), `due` (a decision window's close), the client's going away,
    /// or the signer's stop (answered with `signer_stopping`).
    async fn wait(&mut self, concerns: impl Fn(&Change) -> bool, due: Option<Instant>) -> Woken {
        let closes = async {
            match due {
                Some(due) => tokio::time::sleep_until(due).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(closes);
        loop {
            let woken = tokio::select! {
                () = self.sent.closed() => Some(Woken::End),
                _ = self.stopping.wait_for(|stop| *stop) => None,
                () = &mut closes => Some(Woken::Changed),
                heard = self.heard.recv() => match heard {
                    Ok(change) if !concerns(&change) => continue,
                    Ok(_) | Err(RecvError::Lagged(_)) => Some(Woken::Changed),
                    Err(RecvError::Closed) => Some(Woken::End),
                },
            };
            return match woken {
                Some(woken) => woken,
                None => {
                    // Not waited for: a client that does not read must
                    // not hold the shutdown back.
                    let stopping = self.service.refused(RpcError::SignerStopping);
                    let _ = self.sent.try_send(Err(stopping));
                    Woken::End
                }
            };
        }
    }

    /// Drops the announcements already queued: the read that follows
    /// covers them all.
    fn drain(&mut self) {
        loop {
            match self.heard.try_recv() {
                Ok(_) | Err(TryRecvError::Lagged(_)) => {}
                Err(TryRecvError::Empty | TryRecvError::Closed) => return,
            }
        }
    }

    /// Sends `first`, then each new value `read` gives after an
    /// announcement that `concerns` this watch (waiting `settle` first, so
    /// that a burst is read once) or once the first window `closes` shows
    /// has closed, until `done` says a value was the last or the watch ends.
    async fn follow<F, R>(
        mut self,
        first: T,
        concerns: impl Fn(&Change) -> bool,
        closes: impl Fn(&T) -> Option<Instant>,
        settle: Option<Duration>,
        done: impl Fn(&T) -> bool,
        read: F,
    ) where
        F: Fn(SignerService) -> R,
        R: Future<Output = Result<T, RpcError>>,
    {
        let mut last = first;
        loop {
            if !self.send(last.clone()).await || done(&last) {
                return;
            }
            // Not before this: a close that changed nothing is read again
            // a little later, never in a busy loop.
            let mut earliest = Instant::now();
            loop {
                let due = closes(&last).map(|due| due.max(earliest));
                if let Woken::End = self.wait(&concerns, due).await {
                    return;
                }
                if let Some(settle) = settle {
                    tokio::time::sleep(settle).await;
                }
                self.drain();
                match read(self.service.clone()).await {
                    Ok(now) if now == last => earliest = Instant::now() + RECHECK,
                    Ok(now) => {
                        last = now;
                        break;
                    }
                    Err(e) => return self.fail(e).await,
                }
            }
        }
    }
}

impl Watch<wire::ProposalView> {
    /// `WatchProposal`'s task: `first`, each changed view, and the end
    /// after the first view that is not pending.
    async fn proposal(self, id: ProposalId, first: wire::ProposalView) {
        let concerns = |change: &Change| change.may_concern_proposal(id.as_str());
        let decided = |view: &wire::ProposalView| view.status() != wire::ProposalStatus::Pending;
        let read = |service: SignerService| {
            let id = id.clone();
            async move { service.view(&id).await }
        };
        let closes = |view: &wire::ProposalView| first_close([view]);
        self.follow(first, concerns, closes, None, decided, read)
            .await;
    }
}

impl Watch<wire::ListPendingResponse> {
    /// `WatchPending`'s task: `first`, then each changed list.
    async fn pending(self, principal: String, first: wire::ListPendingResponse) {
        let concerns = |change: &Change| change.may_concern_principal(&principal);
        let read = |service: SignerService| {
            let principal = principal.clone();
            async move { service.pending_views(&principal).await }
        };
        let closes = |list: &wire::ListPendingResponse| first_close(&list.proposals);
        self.follow(first, concerns, closes, Some(COALESCE), |_| false, read)
            .await;
    }
}

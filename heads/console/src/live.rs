//! Live updates: while a paired page listens, the console holds the
//! signer's `WatchPending` stream, which sends the pending list at once
//! and again whenever it changes, and passes each new list (rendered and
//! escaped here, like every page) and its count to the pages as a
//! server-sent event. Nothing polls: with nobody listening the console
//! holds no stream and waits for the first listener; while the list does
//! not change, the stream is idle. A broken stream is opened again after
//! a short pause. Like every read, the stream needs the page key: the
//! console's script asks for it with the key in its header and applies the
//! events (an `EventSource` cannot send a header).

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{ProposalView, WatchPendingRequest};
use serde_json::json;
use tokio::sync::{Notify, watch};
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::WatchStream;
use tonic::transport::Channel;

use crate::ConsoleState;
use crate::auth::reading_by_script;
use crate::views::pending_list;

/// The pause before opening a broken stream again; it doubles up to
/// [`LONGEST_PAUSE`] while the signer stays out of reach.
const FIRST_PAUSE: Duration = Duration::from_millis(100);
const LONGEST_PAUSE: Duration = Duration::from_secs(2);

/// The latest pending list, shared by every listening page.
pub(crate) struct Live {
    approver: SignerClient<Channel>,
    latest: watch::Sender<Option<Arc<Vec<ProposalView>>>>,
    /// Told when a page starts listening (the follower may be waiting for
    /// the first one).
    listening: Notify,
    stop: Mutex<Option<watch::Receiver<bool>>>,
}

impl Live {
    pub(crate) fn new(approver: SignerClient<Channel>) -> Self {
        Self {
            approver,
            latest: watch::Sender::new(None),
            listening: Notify::new(),
            stop: Mutex::new(None),
        }
    }

    /// Streams end when `stop` turns true (the console is shutting down).
    pub(crate) fn stop_on(&self, stop: watch::Receiver<bool>) {
        if let Ok(mut slot) = self.stop.lock() {
            *slot = Some(stop);
        }
    }

    fn stopping(&self) -> Option<watch::Receiver<bool>> {
        self.stop.lock().ok().and_then(|s| s.clone())
    }

    /// Publishes `list` to the listening pages, if it is not the list
    /// they already have.
    fn publish(&self, list: Vec<ProposalView>) {
        self.latest.send_if_modified(|current| {
            let changed = current.as_deref() != Some(&list);
            if changed {
                *current = Some(Arc::new(list));
            }
            changed
        });
    }
}

/// Why following the signer's stream stopped.
enum Ended {
    /// The last page stopped listening.
    Unlistened,
    /// The stream could not be opened, or broke.
    Broken,
}

/// The follower: holds the signer's pending-list stream while anyone
/// listens, publishes each list, and ends when `stop` turns true.
pub(crate) async fn follow(state: Arc<ConsoleState>, mut stop: watch::Receiver<bool>) {
    let live = &state.live;
    let mut approver = live.approver.clone();
    let mut pause = FIRST_PAUSE;
    loop {
        while live.latest.receiver_count() == 0 {
            // Nobody listens: the next listener must get a fresh list.
            live.latest.send_replace(None);
            tokio::select! {
                () = live.listening.notified() => {}
                _ = stop.wait_for(|s| *s) => return,
            }
        }
        let ended = tokio::select! {
            ended = stream_while_listened(live, &mut approver, &mut pause) => ended,
            _ = stop.wait_for(|s| *s) => return,
        };
        if let Ended::Broken = ended {
            tokio::select! {
                () = tokio::time::sleep(pause) => {}
                _ = stop.wait_for(|s| *s) => return,
            }
            pause = (pause * 2).min(LONGEST_PAUSE);
        }
    }
}

/// Publishes the lists of one `WatchPending` stream until the last page
/// stops listening or the stream breaks.
async fn stream_while_listened(
    live: &Live,
    approver: &mut SignerClient<Channel>,
    pause: &mut Duration,
) -> Ended {
    let mut lists = match approver.watch_pending(WatchPendingRequest {}).await {
        Ok(response) => response.into_inner(),
        Err(e) => {
            tracing::warn!(error = %e.message(), "live update: cannot watch pending proposals");
            return Ended::Broken;
        }
    };
    loop {
        tokio::select! {
            () = live.latest.closed() => return Ended::Unlistened,
            message = lists.message() => match message {
                Ok(Some(list)) => {
                    *pause = FIRST_PAUSE;
                    live.publish(list.proposals);
                }
                Ok(None) => return Ended::Broken,
                Err(e) => {
                    tracing::warn!(error = %e.message(), "live update: the pending proposals' stream broke");
                    return Ended::Broken;
                }
            }
        }
    }
}

/// `GET /events`: the pending list as server-sent events, for a paired
/// browser's script with its page key, until the session ends or the
/// console stops.
pub(crate) async fn events(State(state): State<Arc<ConsoleState>>, headers: HeaderMap) -> Response {
    if let Err(page) = reading_by_script(&state, &headers) {
        return *page;
    }
    let rx = state.live.latest.subscribe();
    state.live.listening.notify_one();
    let session_state = state.clone();
    let updates = WatchStream::new(rx).filter_map(|list| list).map(Some);
    // `None` once the console starts shutting down: the stream ends there.
    let stop = state
        .live
        .stopping()
        .unwrap_or_else(|| watch::channel(false).1);
    let stopped = WatchStream::new(stop).filter(|s| *s).map(|_| None);
    let stream = updates
        .merge(stopped)
        .take_while(Option::is_some)
        .filter_map(|list| list)
        // A revoked or expired session stops receiving at the next change.
        .take_while(move |_| reading_by_script(&session_state, &headers).is_ok())
        .map(move |list| {
            let data = json!({
                "count": list.len(),
                "html": pending_list(&list).into_string(),
            });
            Ok::<_, Infallible>(Event::default().event("pending").data(data.to_string()))
        });
    Sse::new(stream)
        .keep_alive(KeepAlive::default())
        .into_response()
}

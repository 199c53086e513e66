//! Live updates: while a paired page listens, the console asks the signer
//! for the pending list once a second and, when it changed, sends the new
//! list (rendered and escaped here, like every page) and its count as a
//! server-sent event. JavaScript only applies it; without JavaScript the
//! pages still work by reloading.

use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{ListPendingRequest, ProposalView};
use serde_json::json;
use tokio::sync::watch;
use tokio_stream::StreamExt as _;
use tokio_stream::wrappers::WatchStream;
use tonic::transport::Channel;

use crate::ConsoleState;
use crate::auth::paired;
use crate::views::pending_list;

/// How often the pending list is read while someone listens.
const POLL_EVERY: Duration = Duration::from_secs(1);

/// The latest pending list, shared by every listening page.
pub(crate) struct Live {
    approver: SignerClient<Channel>,
    latest: watch::Sender<Option<Arc<Vec<ProposalView>>>>,
    stop: Mutex<Option<watch::Receiver<bool>>>,
}

impl Live {
    pub(crate) fn new(approver: SignerClient<Channel>) -> Self {
        Self {
            approver,
            latest: watch::Sender::new(None),
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
}

/// The poller: reads the pending list while anyone listens, publishes changes.
pub(crate) async fn poll(state: Arc<ConsoleState>, mut stop: watch::Receiver<bool>) {
    let live = &state.live;
    let mut approver = live.approver.clone();
    loop {
        if live.latest.receiver_count() > 0 {
            match approver.list_pending(ListPendingRequest {}).await {
                Ok(list) => {
                    let list = list.into_inner().proposals;
                    live.latest.send_if_modified(|current| {
                        let changed = current.as_deref() != Some(&list);
                        if changed {
                            *current = Some(Arc::new(list));
                        }
                        changed
                    });
                }
                Err(e) => {
                    tracing::warn!(error = %e.message(), "live update: cannot list pending proposals")
                }
            }
        } else {
            // Nobody listens: the next listener must get a fresh list.
            live.latest.send_replace(None);
        }
        tokio::select! {
            () = tokio::time::sleep(POLL_EVERY) => {}
            _ = stop.wait_for(|s| *s) => return,
        }
    }
}

/// `GET /events`: the pending list as server-sent events, for a paired
/// browser, until the session ends or the console stops.
pub(crate) async fn events(State(state): State<Arc<ConsoleState>>, headers: HeaderMap) -> Response {
    if let Err(page) = paired(&state, &headers) {
        return *page;
    }
    let rx = state.live.latest.subscribe();
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
        .take_while(move |_| paired(&session_state, &headers).is_ok())
        .map(|list| {
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

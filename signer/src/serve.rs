//! Serving: the tonic server over a bound listener with mTLS, until a
//! shutdown future resolves (the signer's service, grpc.health.v1 and
//! server reflection, all behind the same client-certificate check), with
//! the ledger's checkpoints (`crate::checkpoint`) and the crossing of
//! announcements to and from the ledger's other signers
//! (`crate::changes`) while it serves; and the signal handling `main`
//! uses.
//!
//! Binding is the caller's job (`main` binds the configured address; tests
//! bind 127.0.0.1:0). This module installs no crypto provider other than
//! through `countersign_identity::tls`.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use countersign_proto::v1::signer_server::SignerServer;
use tokio::net::TcpListener;
use tonic::transport::server::TcpIncoming;
use tonic::transport::{Server, ServerTlsConfig};

use countersign_identity::shutdown::{Drained, drain, shutdown_signal};
use countersign_metrics::Exposition;
use time::OffsetDateTime;

use crate::error::StartError;
use crate::service::SignerService;
use crate::state::SignerState;

/// Largest request message the signer decodes (arguments are at most 64 KiB).
pub const MAX_MESSAGE_BYTES: usize = 256 * 1024;
/// How long in-flight requests may take to finish after shutdown begins
/// (the one grace of every long-running process).
pub use countersign_identity::shutdown::SHUTDOWN_GRACE;
/// Longest time one request may take (until its answer starts: a watch
/// stream's messages are not bounded by it).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// How often an HTTP/2 PING checks that a client is still there, and how
/// long its answer may take: a watch held by a client that vanished
/// without closing its connection gives its place back within both.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(60);
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(20);

/// Serves the signer on `listener` with `tls` (client certificates
/// required) until `shutdown` resolves, then stops accepting and lets
/// in-flight requests finish.
pub async fn run(
    listener: TcpListener,
    state: impl Into<Arc<SignerState>>,
    tls: ServerTlsConfig,
    shutdown: impl Future<Output = ()>,
) -> Result<(), StartError> {
    countersign_identity::tls::install_crypto_provider();
    let state = state.into();
    let service = SignerServer::from_arc(Arc::new(SignerService {
        state: Arc::clone(&state),
    }))
    .max_decoding_message_size(MAX_MESSAGE_BYTES);
    // grpc.health.v1 and server reflection, for grpcurl, grpc_health_probe
    // and developers of trusted UIs: behind the same mTLS as every RPC (a
    // client certificate of the installation's CA is required to connect).
    let (health, health_service) = tonic_health::server::health_reporter();
    health.set_serving::<SignerServer<SignerService>>().await;
    let reflection = tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(countersign_proto::FILE_DESCRIPTOR_SET)
        .build_v1()
        .map_err(|e| StartError::Transport(format!("reflection: {e}")))?;
    let router = Server::builder()
        .tls_config(tls)
        .map_err(|e| StartError::Transport(format!("tls: {e}")))?
        .timeout(REQUEST_TIMEOUT)
        .http2_keepalive_interval(Some(KEEPALIVE_INTERVAL))
        .http2_keepalive_timeout(Some(KEEPALIVE_TIMEOUT))
        .concurrency_limit_per_connection(64)
        .trace_fn(request_span)
        .add_service(service)
        .add_service(health_service)
        .add_service(reflection);
    // A checkpoint before the first request, then periodic ones while
    // serving, and a last one once the server has stopped, after its
    // in-flight requests.
    state.checkpoints.write(&state).await;
    let checkpoints = tokio::spawn(crate::checkpoint::every_interval(Arc::clone(&state)));
    // The other signers of a PostgreSQL ledger hear this one's
    // announcements, and its watches theirs, until the stop flag is set.
    let crossing = Arc::clone(&state);
    let crossing = tokio::spawn(async move {
        crossing.changes.cross_signers(&crossing.ledger).await;
    });
    // A graceful shutdown waits for every open stream: the watches end
    // (`signer_stopping`) as soon as it begins.
    let stopping = Arc::clone(&state);
    let shutdown = async move {
        shutdown.await;
        stopping.changes.stop();
    };
    let served = router
        .serve_with_incoming_shutdown(incoming(listener), shutdown)
        .await
        .map_err(|e| StartError::Transport(e.to_string()));
    checkpoints.abort();
    crossing.abort();
    // What the last requests announced after the stop flag was set.
    state.changes.publish_queued(&state.ledger).await;
    state.checkpoints.write_last(&state).await;
    served
}

/// The connections `run` serves: every accepted socket gets TCP_NODELAY.
/// `TcpIncoming::from` leaves it off, and a reply's trailers then wait for
/// the client's delayed ACK (about 40 ms on every call).
pub(crate) fn incoming(listener: TcpListener) -> TcpIncoming {
    TcpIncoming::from(listener).with_nodelay(Some(true))
}

/// Serves this signer's metrics (`GET /metrics`) on `listener`, bound by
/// [`countersign_metrics::bind`] on loopback, until `shutdown` resolves.
/// The waiting-handoffs gauge is read from the handoff store at each scrape.
pub async fn serve_metrics(
    listener: TcpListener,
    state: Arc<SignerState>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut exposition = Exposition::new();
    state.metrics.register(&mut exposition);
    exposition.before_scrape(move || {
        let waiting = state.handoffs.waiting_count(OffsetDateTime::now_utc());
        state.metrics.set_waiting_handoffs(waiting);
    });
    countersign_metrics::serve(listener, Arc::new(exposition), shutdown).await
}

/// Runs the server (and, given a `metrics` listener, the metrics listener)
/// until SIGINT/SIGTERM
/// ([`countersign_identity::shutdown::shutdown_signal`]), then drains
/// in-flight requests for at most [`SHUTDOWN_GRACE`].
pub async fn serve_until_signal(
    listener: TcpListener,
    state: SignerState,
    tls: ServerTlsConfig,
    metrics: Option<TcpListener>,
) -> Result<(), StartError> {
    let state = Arc::new(state);
    // Install the SIGINT/SIGTERM handlers before anything answers: a
    // signal sent right after a first reply (a scrape is quick) must find
    // them, not the default disposition. Polling the future once installs
    // them; `biased` makes that poll come first.
    let mut signal = std::pin::pin!(shutdown_signal());
    tokio::select! {
        biased;
        () = &mut signal => return Ok(()),
        () = std::future::ready(()) => {}
    }
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let (metrics_stop, metrics_stopped) = tokio::sync::oneshot::channel::<()>();
    if let Some(metrics) = metrics {
        let state = Arc::clone(&state);
        tokio::spawn(async move {
            let stopped = async {
                let _ = metrics_stopped.await;
            };
            if let Err(e) = serve_metrics(metrics, state, stopped).await {
                tracing::error!("metrics listener: {e}");
            }
        });
    }
    // Dropped when this function returns, which stops the metrics listener.
    let _metrics_stop = metrics_stop;
    let mut server = tokio::spawn(run(listener, Arc::clone(&state), tls, async {
        let _ = stop_rx.await;
    }));
    tokio::select! {
        finished = &mut server => {
            return finished.map_err(|e| StartError::Transport(format!("server task: {e}")))?;
        }
        () = &mut signal => {}
    }
    let _ = stop_tx.send(());
    match drain(server, SHUTDOWN_GRACE).await {
        Drained::Finished(finished) => {
            finished.map_err(|e| StartError::Transport(format!("server task: {e}")))?
        }
        Drained::GraceOver => Ok(()),
    }
}

/// The span each gRPC request runs in, named by its method path alone: no
/// metadata, no message, so it is as safe to export as a trace (`otlp`) as
/// it is to log.
fn request_span(request: &tonic::codegen::http::Request<()>) -> tracing::Span {
    tracing::info_span!(
        "grpc",
        otel.name = request.uri().path(),
        otel.kind = "server",
        rpc.system = "grpc",
        rpc.method = request.uri().path(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tonic::codegen::tokio_stream::StreamExt as _;

    #[tokio::test]
    async fn accepted_connections_have_tcp_nodelay_set() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let mut accepted = incoming(listener);
        let _client = tokio::net::TcpStream::connect(addr).await.unwrap();
        let server_side = accepted.next().await.unwrap().unwrap();
        assert!(server_side.nodelay().unwrap(), "TCP_NODELAY is off");
    }
}

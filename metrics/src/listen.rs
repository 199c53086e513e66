//! The `/metrics` listener: bound on a loopback address only, it answers
//! `GET /metrics` with the exposition and every other path with 404. It
//! reads no request body, sets no cookie and serves nothing else.

use std::future::Future;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::Router;
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::IntoResponse;
use axum::routing::get;
use tokio::net::TcpListener;

use crate::Exposition;

/// The content type of the OpenMetrics text format (Prometheus reads it).
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Why a metrics listener could not start.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MetricsError {
    /// The configured address is not a loopback address.
    #[error(
        "metrics address {0} is not a loopback address: /metrics has no authentication, so it listens on loopback only (127.0.0.1 or [::1])"
    )]
    NotLoopback(SocketAddr),
    /// The address could not be bound.
    #[error("cannot listen for metrics on {addr}: {detail}")]
    Bind {
        /// The configured address.
        addr: SocketAddr,
        /// The operating system's reason.
        detail: String,
    },
}

/// Binds `addr` for [`serve`], refusing any address that is not loopback.
pub async fn bind(addr: SocketAddr) -> Result<TcpListener, MetricsError> {
    if !addr.ip().is_loopback() {
        return Err(MetricsError::NotLoopback(addr));
    }
    TcpListener::bind(addr)
        .await
        .map_err(|e| MetricsError::Bind {
            addr,
            detail: e.to_string(),
        })
}

/// Serves `exposition` on `listener` (from [`bind`]) until `shutdown`
/// resolves. A scrape in flight at shutdown is cut off: it holds nothing
/// worth waiting for. No TCP_NODELAY: a scrape is one request per
/// interval, never a round trip a person waits on (the heads set it, in
/// `countersign_http::serve`).
pub async fn serve(
    listener: TcpListener,
    exposition: Arc<Exposition>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let app = Router::new()
        .route("/metrics", get(metrics))
        .with_state(exposition);
    axum::serve(listener, app)
        .with_graceful_shutdown(shutdown)
        .await
}

async fn metrics(State(exposition): State<Arc<Exposition>>) -> impl IntoResponse {
    (
        StatusCode::OK,
        [(header::CONTENT_TYPE, CONTENT_TYPE)],
        exposition.render(),
    )
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

    use crate::{ConsumeOutcome, GateMetrics};

    async fn get_text(addr: SocketAddr, path: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        let request = format!("GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        response
    }

    async fn served(exposition: Exposition) -> (SocketAddr, tokio::sync::oneshot::Sender<()>) {
        let listener = bind("127.0.0.1:0".parse().unwrap()).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        tokio::spawn(serve(listener, Arc::new(exposition), async {
            let _ = stopped.await;
        }));
        (addr, stop)
    }

    #[tokio::test]
    async fn refuses_an_address_that_is_not_loopback() {
        let addr: SocketAddr = "0.0.0.0:9464".parse().unwrap();
        assert_eq!(
            bind(addr).await.unwrap_err(),
            MetricsError::NotLoopback(addr)
        );
        assert_eq!(
            MetricsError::NotLoopback(addr).to_string(),
            "metrics address 0.0.0.0:9464 is not a loopback address: /metrics has no authentication, so it listens on loopback only (127.0.0.1 or [::1])"
        );
    }

    #[tokio::test]
    async fn serves_the_counters_as_openmetrics_text() {
        let gate = GateMetrics::default();
        let mut exposition = Exposition::new();
        gate.register(&mut exposition);
        gate.consumed(ConsumeOutcome::Refused, Some("expired"), 0.001);
        let (addr, _stop) = served(exposition).await;
        let response = get_text(addr, "/metrics").await;
        assert!(response.starts_with("HTTP/1.1 200 OK\r\n"), "{response}");
        assert!(response.contains(&format!("content-type: {CONTENT_TYPE}\r\n")));
        assert!(response.contains("\ncountersign_consumes_total{outcome=\"refused\"} 1\n"));
        assert!(response.contains("\ncountersign_gate_refusals_total{reason=\"expired\"} 1\n"));
        assert!(response.contains("\ncountersign_consume_seconds_count 1\n"));
        assert!(response.ends_with("# EOF\n"));
    }

    #[tokio::test]
    async fn answers_any_other_path_with_not_found() {
        let (addr, _stop) = served(Exposition::new()).await;
        for path in ["/", "/metrics/", "/metricsx", "/health"] {
            let response = get_text(addr, path).await;
            assert!(
                response.starts_with("HTTP/1.1 404 Not Found\r\n"),
                "{path}: {response}"
            );
        }
    }
}

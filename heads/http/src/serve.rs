//! Serving an HTTP head, written once: every accepted TCP connection gets
//! `TCP_NODELAY` ([`nodelay`]), and [`serve`] runs a router until it is
//! told to stop, then stops taking connections and lets the requests in
//! flight finish within the one grace period every long-running process
//! has ([`SHUTDOWN_GRACE`]).

use std::fmt::Debug;
use std::future::{Future, IntoFuture};

use axum::Router;
use axum::serve::{ListenerExt, TapIo};
use countersign_identity::shutdown::{Drained, drain};
use countersign_verifier::lifetimes::SHUTDOWN_GRACE;
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// `listener` with TCP_NODELAY set on every accepted socket: axum leaves
/// it off, and small responses then wait for the client's delayed ACK.
pub fn nodelay(listener: TcpListener) -> TapIo<TcpListener, fn(&mut TcpStream)> {
    listener.tap_io(|stream| set_nodelay(stream))
}

/// TCP_NODELAY on one accepted socket (a listener that accepts by itself,
/// as the console's TLS acceptor does); a failure is logged, not fatal.
pub fn set_nodelay(stream: &TcpStream) {
    if let Err(e) = stream.set_nodelay(true) {
        tracing::warn!("cannot set TCP_NODELAY: {e}");
    }
}

/// A token cancelled once `shutdown` completes (a signal, a test's
/// trigger): what [`serve`] stops on.
pub fn stop_when(shutdown: impl Future<Output = ()> + Send + 'static) -> CancellationToken {
    let stop = CancellationToken::new();
    let cancel = stop.clone();
    tokio::spawn(async move {
        shutdown.await;
        cancel.cancel();
    });
    stop
}

/// Serve `app` on `listener` until `stop` is cancelled; then stop taking
/// connections and let requests in flight finish for at most
/// [`SHUTDOWN_GRACE`] (what is still running after it is abandoned, and
/// logged). A server that fails by itself returns its error at once.
pub async fn serve<L>(listener: L, app: Router, stop: CancellationToken) -> std::io::Result<()>
where
    L: axum::serve::Listener,
    L::Addr: Debug,
{
    let waiting = stop.clone();
    let serve =
        axum::serve(listener, app).with_graceful_shutdown(async move { waiting.cancelled().await });
    let mut serve = std::pin::pin!(serve.into_future());
    tokio::select! {
        served = &mut serve => served,
        () = stop.cancelled() => match drain(&mut serve, SHUTDOWN_GRACE).await {
            Drained::Finished(served) => served,
            Drained::GraceOver => Ok(()),
        },
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use std::time::Duration;

    use axum::routing::get;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[tokio::test]
    async fn accepted_connections_have_tcp_nodelay_set() {
        use axum::serve::Listener as _;
        let mut accepting = nodelay(TcpListener::bind(("127.0.0.1", 0)).await.unwrap());
        let addr = accepting.local_addr().unwrap();
        let (client, (server_side, _)) = tokio::join!(TcpStream::connect(addr), accepting.accept());
        client.unwrap();
        assert!(server_side.nodelay().unwrap(), "TCP_NODELAY is off");
    }

    #[tokio::test]
    async fn a_request_in_flight_at_the_stop_finishes_and_then_the_server_returns() {
        let listener = TcpListener::bind(("127.0.0.1", 0)).await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = Router::new().route(
            "/slow",
            get(|| async {
                tokio::time::sleep(Duration::from_millis(300)).await;
                "done"
            }),
        );
        let stop = CancellationToken::new();
        let server = tokio::spawn(serve(nodelay(listener), app, stop.clone()));
        let mut client = TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"GET /slow HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            .await
            .unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        stop.cancel();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.ends_with("done"), "{answer}");
        tokio::time::timeout(Duration::from_secs(5), server)
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        // Stopped: nothing listens any more.
        assert!(TcpStream::connect(addr).await.is_err());
    }
}

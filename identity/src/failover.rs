//! Reaching one of several signers: the connector under every signer
//! channel of a head, a console, the notifier and the gateway, given the
//! configured addresses (`[signer] addr` first, then `[signer]
//! fallback_addrs`).
//!
//! Owns: which address a new connection goes to. Each time the channel
//! needs a connection (the first call, or the first after the one it had
//! broke) the connector tries the address that last worked, then each
//! other once, in order, each TCP connect bounded by
//! [`CONNECT_EACH_WITHIN`]; TLS with the signer's name and the client
//! certificate is layered on top by tonic, whatever address answered, so
//! a signer is trusted for its certificate, never for its address. It
//! stays with the address that answered (no flapping back to the first
//! when it returns). Must not: retry a request. A request that a signer
//! received and did not answer fails as it does with one signer; whether
//! the caller sends it again is the caller's decision (see
//! docs/two-signers.md, "What is retried").

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;
use tonic::codegen::http::Uri;
use tonic::codegen::{Context, Future, Pin, Poll, Service};
use tonic::transport::{Channel, ClientTlsConfig};

/// How long one address's TCP connect may take before the next is tried.
pub const CONNECT_EACH_WITHIN: Duration = Duration::from_secs(2);

/// Connects to the first of `addrs` that accepts, from the last one that did.
#[derive(Debug, Clone)]
pub struct FailoverConnector {
    addrs: Arc<[String]>,
    /// The index of the address that last accepted.
    current: Arc<AtomicUsize>,
}

impl FailoverConnector {
    /// A connector over `addrs` (`IP:port`, tried in this order at first).
    pub fn new(addrs: &[String]) -> FailoverConnector {
        FailoverConnector {
            addrs: addrs.into(),
            current: Arc::new(AtomicUsize::new(0)),
        }
    }
}

impl Service<Uri> for FailoverConnector {
    type Response = TokioIo<TcpStream>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: Uri) -> Self::Future {
        let addrs = Arc::clone(&self.addrs);
        let current = Arc::clone(&self.current);
        Box::pin(async move {
            let first = current.load(Ordering::Relaxed);
            let mut failures = Vec::with_capacity(addrs.len());
            for step in 0..addrs.len() {
                let at = (first + step) % addrs.len();
                let addr = &addrs[at];
                match tokio::time::timeout(CONNECT_EACH_WITHIN, TcpStream::connect(addr.as_str()))
                    .await
                {
                    Ok(Ok(stream)) => {
                        // A request's last frame must not wait for a delayed ACK.
                        stream.set_nodelay(true)?;
                        if at != first {
                            tracing::warn!(
                                signer = %addr,
                                "the signer at {} is out of reach; using {addr}",
                                addrs[first]
                            );
                        }
                        current.store(at, Ordering::Relaxed);
                        return Ok(TokioIo::new(stream));
                    }
                    Ok(Err(e)) => failures.push(format!("{addr}: {e}")),
                    Err(_) => failures.push(format!(
                        "{addr}: no answer within {} s",
                        CONNECT_EACH_WITHIN.as_secs()
                    )),
                }
            }
            Err(std::io::Error::new(
                std::io::ErrorKind::ConnectionRefused,
                format!("no signer reachable ({})", failures.join("; ")),
            ))
        })
    }
}

/// A channel to whichever of `addrs` answers, with `tls` (the signer's
/// name and this client's certificate), connected now: an error if none
/// answers. The endpoint's settings are those of
/// [`crate::tls::signer_endpoint`]; its connect timeout bounds all the
/// addresses together.
pub async fn signer_channel(
    addrs: &[String],
    tls: ClientTlsConfig,
) -> Result<Channel, tonic::transport::Error> {
    let first = addrs.first().map_or("127.0.0.1:7443", String::as_str);
    let bound = CONNECT_EACH_WITHIN * u32::try_from(addrs.len().max(1)).unwrap_or(u32::MAX);
    crate::tls::signer_endpoint(first, tls)?
        .connect_timeout(bound + Duration::from_secs(3))
        .connect_with_connector(FailoverConnector::new(addrs))
        .await
}

//! Reaching one of several signers: the connector under every signer
//! channel of a head, a console, the notifier and the gateway, given the
//! configured addresses (`[signer] addr` first, then `[signer]
//! fallback_addrs`).
//!
//! Owns: which address a new connection goes to. Each time the channel
//! needs a connection (the first call, or the first after the one it had
//! broke) the connector tries the address that last worked, then each
//! other once, in order. At each address it connects and completes the
//! TLS handshake (the signer's certificate for `localhost` under the
//! installation's CA, this client's certificate presented), both within
//! [`CONNECT_EACH_WITHIN`]: a signer is trusted for its certificate, never
//! for its address, and a signer that accepts connections but answers
//! nothing (a paused process, a frozen host: the kernel still completes
//! the TCP handshake) is passed over like one that refuses. It stays with
//! the address that answered (no flapping back to the first when it
//! returns). Must not: retry a request. A request that a signer received
//! and did not answer fails as it does with one signer; whether the caller
//! sends it again is the caller's decision (see docs/two-signers.md, "What
//! is retried").

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use hyper_util::rt::TokioIo;
use rustls::pki_types::ServerName;
use tokio::net::TcpStream;
use tokio_rustls::TlsConnector;
use tokio_rustls::client::TlsStream;
use tonic::codegen::http::Uri;
use tonic::codegen::{Context, Future, Pin, Poll, Service};
use tonic::transport::{Channel, Endpoint};

use crate::tls::{SIGNER_DOMAIN, SignerTls};

/// How long one address's TCP connect and TLS handshake may take together
/// before the next is tried.
pub const CONNECT_EACH_WITHIN: Duration = Duration::from_secs(2);

/// Connects to the first of `addrs` that accepts and completes the TLS
/// handshake, from the last one that did.
#[derive(Clone)]
pub struct FailoverConnector {
    addrs: Arc<[String]>,
    tls: TlsConnector,
    /// The index of the address that last answered.
    current: Arc<AtomicUsize>,
}

impl std::fmt::Debug for FailoverConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FailoverConnector")
            .field("addrs", &self.addrs)
            .field("current", &self.current)
            .finish_non_exhaustive()
    }
}

impl FailoverConnector {
    /// A connector over `addrs` (`IP:port`, tried in this order at first),
    /// each reached with `tls`.
    pub fn new(addrs: &[String], tls: &SignerTls) -> FailoverConnector {
        FailoverConnector {
            addrs: addrs.into(),
            tls: TlsConnector::from(tls.config()),
            current: Arc::new(AtomicUsize::new(0)),
        }
    }
}

/// A TCP connection to `addr` with the signer's TLS handshake completed.
async fn reach(tls: &TlsConnector, addr: &str) -> std::io::Result<TlsStream<TcpStream>> {
    let stream = TcpStream::connect(addr).await?;
    // A request's last frame must not wait for a delayed ACK.
    stream.set_nodelay(true)?;
    let name = ServerName::try_from(SIGNER_DOMAIN)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))?;
    tls.connect(name, stream).await
}

impl Service<Uri> for FailoverConnector {
    type Response = TokioIo<TlsStream<TcpStream>>;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Self::Response, Self::Error>> + Send>>;

    fn poll_ready(&mut self, _cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    fn call(&mut self, _uri: Uri) -> Self::Future {
        let addrs = Arc::clone(&self.addrs);
        let current = Arc::clone(&self.current);
        let tls = self.tls.clone();
        Box::pin(async move {
            let first = current.load(Ordering::Relaxed);
            let mut failures = Vec::with_capacity(addrs.len());
            for step in 0..addrs.len() {
                let at = (first + step) % addrs.len();
                let addr = &addrs[at];
                match tokio::time::timeout(CONNECT_EACH_WITHIN, reach(&tls, addr)).await {
                    Ok(Ok(stream)) => {
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
                        "{addr}: no TLS answer within {} s",
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
/// answers. TLS is the connector's ([`FailoverConnector`]), so the
/// endpoint itself is plain; its other settings are those of
/// [`crate::tls::signer_endpoint`], and its connect timeout bounds all the
/// addresses together.
pub async fn signer_channel(
    addrs: &[String],
    tls: &SignerTls,
) -> Result<Channel, tonic::transport::Error> {
    let bound = CONNECT_EACH_WITHIN * u32::try_from(addrs.len().max(1)).unwrap_or(u32::MAX);
    let endpoint = Endpoint::from_static("http://localhost");
    crate::tls::signer_endpoint_settings(endpoint)
        .connect_timeout(bound + Duration::from_secs(3))
        .connect_with_connector(FailoverConnector::new(addrs, tls))
        .await
}

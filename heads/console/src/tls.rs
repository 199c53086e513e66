//! HTTPS only: the console's listeners, each address its names resolve to,
//! behind one TLS acceptor.
//!
//! A connection whose first byte is not a TLS handshake record is plain
//! HTTP. It gets one fixed redirect to the console's origin root and is
//! closed: what it sent (a path with a pairing code, a cookie a browser
//! attached) is read only to be discarded, never parsed, logged or
//! followed, and the redirect carries nothing of it. Handshakes run beside
//! the accept loop, each bounded in time and in number, so a client that
//! never finishes one holds up no other.
//!
//! Must not: serve anything but the redirect without TLS, or log a byte a
//! client sent.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use countersign_identity::console_pki::ConsoleCert;
use rustls::ServerConfig;
use rustls::pki_types::pem::PemObject as _;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, mpsc};
use tokio::task::JoinHandle;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::server::TlsStream;

/// How long a client has to complete its TLS handshake (or, over plain
/// HTTP, to send its request head).
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);
/// At most this many handshakes run at once; more wait to be accepted.
const MAX_HANDSHAKES: usize = 256;
/// The most of a plain-HTTP request read (and discarded) before the redirect.
const MAX_PLAIN_REQUEST: usize = 16 * 1024;
/// The first byte of a TLS record carrying a handshake.
const TLS_HANDSHAKE: u8 = 0x16;

/// The rustls configuration of a console serving `cert`: HTTP/1.1, no
/// client certificate (a person is authenticated by pairing and passkeys).
pub fn server_config(cert: &ConsoleCert) -> Result<Arc<ServerConfig>, String> {
    countersign_identity::tls::install_crypto_provider();
    let chain = CertificateDer::pem_slice_iter(cert.cert_pem.as_bytes())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("the console certificate is not PEM: {e}"))?;
    if chain.is_empty() {
        return Err("the console certificate file holds no certificate".into());
    }
    let key = PrivateKeyDer::from_pem_slice(cert.key_pem.as_bytes())
        .map_err(|e| format!("the console key is not a PEM private key: {e}"))?;
    let mut config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .map_err(|e| format!("the console certificate and key do not fit: {e}"))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(config))
}

/// Every listener of the console behind one acceptor, as one
/// [`axum::serve::Listener`] of established TLS streams.
pub struct TlsListener {
    established: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    local: SocketAddr,
    accepting: Vec<JoinHandle<()>>,
}

impl TlsListener {
    /// Accept on every one of `listeners` (at least one; the first one's
    /// address is the listener's `local_addr`), with TLS from `config`;
    /// plain HTTP is redirected to `origin` + `/`.
    pub fn new(
        listeners: Vec<TcpListener>,
        config: Arc<ServerConfig>,
        origin: &str,
    ) -> std::io::Result<Self> {
        let local = listeners
            .first()
            .ok_or_else(|| std::io::Error::other("the console has no listener"))?
            .local_addr()?;
        let (tx, established) = mpsc::channel(64);
        let acceptor = TlsAcceptor::from(config);
        let redirect: Arc<[u8]> = format!(
            "HTTP/1.1 301 Moved Permanently\r\nLocation: {origin}/\r\nContent-Length: 0\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
        )
        .into_bytes()
        .into();
        let limit = Arc::new(Semaphore::new(MAX_HANDSHAKES));
        let accepting = listeners
            .into_iter()
            .map(|listener| {
                tokio::spawn(accept_loop(
                    listener,
                    acceptor.clone(),
                    redirect.clone(),
                    limit.clone(),
                    tx.clone(),
                ))
            })
            .collect();
        Ok(Self {
            established,
            local,
            accepting,
        })
    }
}

impl Drop for TlsListener {
    fn drop(&mut self) {
        for task in &self.accepting {
            task.abort();
        }
    }
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.established.recv().await {
            Some(established) => established,
            // Every accept loop ended (they end only when aborted): serve
            // nothing more, and let graceful shutdown finish.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> std::io::Result<Self::Addr> {
        Ok(self.local)
    }
}

async fn accept_loop(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    redirect: Arc<[u8]>,
    limit: Arc<Semaphore>,
    established: mpsc::Sender<(TlsStream<TcpStream>, SocketAddr)>,
) {
    loop {
        let Ok(permit) = limit.clone().acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("console accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        countersign_http::serve::set_nodelay(&stream);
        let (acceptor, redirect, established) =
            (acceptor.clone(), redirect.clone(), established.clone());
        tokio::spawn(async move {
            let _permit = permit;
            let opened = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
                if first_byte(&stream).await? != Some(TLS_HANDSHAKE) {
                    answer_plain_http(stream, &redirect).await;
                    return Ok(None);
                }
                acceptor.accept(stream).await.map(Some)
            })
            .await;
            if let Ok(Ok(Some(tls))) = opened {
                let _ = established.send((tls, peer)).await;
            }
        });
    }
}

async fn first_byte(stream: &TcpStream) -> std::io::Result<Option<u8>> {
    let mut byte = [0u8; 1];
    Ok(match stream.peek(&mut byte).await? {
        0 => None,
        _ => Some(byte[0]),
    })
}

/// Read what a plain-HTTP client sent up to the end of its request head
/// (discarded unread), answer with the redirect and close.
async fn answer_plain_http(mut stream: TcpStream, redirect: &[u8]) {
    let mut seen = Vec::with_capacity(1024);
    let mut buf = [0u8; 2048];
    while seen.len() < MAX_PLAIN_REQUEST && !seen.windows(4).any(|w| w == b"\r\n\r\n") {
        match stream.read(&mut buf).await {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.extend_from_slice(&buf[..n]),
        }
    }
    seen.fill(0);
    let _ = stream.write_all(redirect).await;
    let _ = stream.shutdown().await;
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use countersign_identity::console_pki::{generate_console_ca, issue_console_cert};

    fn console_cert() -> ConsoleCert {
        let names = vec!["console.localhost".to_owned()];
        let ca = generate_console_ca(&names).unwrap();
        let issued = issue_console_cert(&ca, &names).unwrap();
        ConsoleCert {
            cert_pem: issued.cert_pem,
            key_pem: issued.key_pem,
        }
    }

    #[tokio::test]
    async fn plain_http_gets_one_redirect_that_carries_nothing_it_sent() {
        let tcp = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = tcp.local_addr().unwrap();
        let config = server_config(&console_cert()).unwrap();
        let origin = format!("https://console.localhost:{}", addr.port());
        let mut listener = TlsListener::new(vec![tcp], config, &origin).unwrap();
        let mut client = TcpStream::connect(addr).await.unwrap();
        client
            .write_all(b"GET /pair/cp1_0123456789abcdef_secret HTTP/1.1\r\nHost: console.localhost\r\nCookie: __Host-countersign-console=cc1_x\r\n\r\n")
            .await
            .unwrap();
        let mut answer = String::new();
        client.read_to_string(&mut answer).await.unwrap();
        assert_eq!(
            answer,
            format!(
                "HTTP/1.1 301 Moved Permanently\r\nLocation: {origin}/\r\nContent-Length: 0\r\nCache-Control: no-store\r\nConnection: close\r\n\r\n"
            )
        );
        // Nothing reached the server: no connection was handed on.
        let handed = tokio::time::timeout(
            Duration::from_millis(200),
            axum::serve::Listener::accept(&mut listener),
        )
        .await;
        assert!(handed.is_err(), "a plain-http connection was served");
    }

    #[test]
    fn a_key_that_is_not_the_certificates_is_refused() {
        let mut cert = console_cert();
        cert.key_pem = console_cert().key_pem;
        let refused = server_config(&cert).unwrap_err();
        assert!(refused.contains("do not fit"), "{refused}");
    }
}

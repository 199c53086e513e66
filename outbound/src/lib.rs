//! One outbound HTTP/1.1 POST to a receiver named by configuration: the
//! gate's `webhook` effect and the signer's notifications both send
//! through here.
//!
//! This crate owns the connection: it opens the TCP socket itself
//! (TCP_NODELAY), does the TLS handshake against the configured trust
//! roots only (no system roots; the process's one ring provider), and so
//! knows whether any byte of the request can have left. That is what
//! decides failed against maybe-sent: an error before the request was
//! handed to the connection (unreadable trust roots, no connection, a
//! refused certificate, a timeout while connecting) sent nothing; any
//! error or timeout after it may have been received and acted on. It
//! follows no redirect, keeps at most [`MAX_BODY_BYTES`] of the response,
//! and must not log or trace a header: callers put secrets in them. Plain
//! http goes only to an IP address: no name (`localhost` included) is
//! handed to the system resolver for a request sent in the clear.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use countersign_registry::WebhookUrl;
use http_body_util::{BodyExt as _, Full};

use hyper::header::{HOST, HeaderMap, HeaderValue};
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;

pub use hyper::body::Bytes;
pub use hyper::header;

/// At most this many bytes of the response body are kept.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Largest trust roots file read, in bytes.
const MAX_TRUST_ROOTS_BYTES: u64 = 1024 * 1024;

/// Where to send: a URL, the CAs trusted for it when it is https, and the
/// bound on the whole exchange (connect to end of response).
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// The parsed URL (the caller has checked its scheme rules).
    pub url: &'a WebhookUrl,
    /// PEM bundle of the CAs trusted for an https receiver.
    pub trust_roots: Option<&'a Path>,
    /// The whole exchange is bounded by this.
    pub timeout: Duration,
}

/// The receiver's answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    /// The HTTP status of the response.
    pub status: u16,
    /// The response's `Content-Type`, if it had one that is visible ASCII.
    pub content_type: Option<String>,
    /// The response body, at most [`MAX_BODY_BYTES`] bytes of it.
    pub body: Vec<u8>,
    /// True when the body was longer than the bound (the rest was discarded).
    pub body_truncated: bool,
    /// False when the body could not be read to its end within the timeout
    /// (the status was received, so the outcome is still known).
    pub body_complete: bool,
    /// Wall time from connect to the end of the response, in milliseconds.
    pub duration_ms: u64,
}

/// Why a POST did not produce a response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PostError {
    /// A header value is not valid (nothing was sent).
    #[error("a header value is not valid (nothing was sent)")]
    InvalidHeader,
    /// The trust roots could not be read or hold no certificate (nothing
    /// was sent).
    #[error("cannot use trust roots {path:?}: {reason}")]
    TrustRoots {
        /// The configured path.
        path: PathBuf,
        /// What is wrong.
        reason: String,
    },
    /// A plain `http://` URL names a host instead of an IP address: it
    /// would go to the system resolver, and another local user listening on
    /// the address it answers (`[::1]:<port>` for `localhost`) would
    /// receive the request (nothing was sent).
    #[error(
        "plain http:// is sent only to an IP address, not to the name {0:?} (nothing was sent)"
    )]
    PlainHttpToName(String),
    /// No connection could be made (nothing was sent).
    #[error("cannot connect to {authority}: {reason}")]
    Connect {
        /// Host and port.
        authority: String,
        /// The operating system's or the TLS handshake's reason.
        reason: String,
    },
    /// The timeout expired before the request was sent (nothing was sent).
    #[error("timed out connecting to {0} (nothing was sent)")]
    ConnectTimeout(String),
    /// The request was handed to the connection and then the exchange
    /// failed or timed out: the receiver may have acted on it.
    #[error("the request may have been received: {0}")]
    MaybeSent(String),
}

impl PostError {
    /// True when the request may have reached the receiver, so its effect
    /// may have happened.
    pub fn maybe_sent(&self) -> bool {
        matches!(self, PostError::MaybeSent(_))
    }
}

/// POSTs `body` with `headers` (and `Host`, set here) to `target`, as
/// described in the module doc. Any status is an `Ok` answer: the receiver
/// answered. `Err` means no answer; [`PostError::maybe_sent`] tells whether
/// it may have acted.
pub async fn post(
    target: Target<'_>,
    headers: HeaderMap,
    body: Bytes,
) -> Result<Answer, PostError> {
    let started = Instant::now();
    let deadline = started + target.timeout;
    let url = target.url;
    let mut request = hyper::Request::post(url.path_and_query())
        .body(Full::new(body))
        .map_err(|_| PostError::InvalidHeader)?;
    *request.headers_mut() = headers;
    let host = HeaderValue::from_str(&url.authority()).map_err(|_| PostError::InvalidHeader)?;
    request.headers_mut().insert(HOST, host);
    let tls = match url.is_https() {
        true => Some(tls_connector(target.trust_roots)?),
        // The registry and the notification configuration refuse these;
        // this keeps the connection code from resolving a name for plain
        // http whatever its caller checked.
        false if url.host().parse::<std::net::IpAddr>().is_err() => {
            return Err(PostError::PlainHttpToName(url.host().to_owned()));
        }
        false => None,
    };
    let authority = url.authority();
    let connect_error = |reason: String| PostError::Connect {
        authority: authority.clone(),
        reason,
    };
    let timed_out = || PostError::ConnectTimeout(authority.clone());
    let tcp = tokio::time::timeout_at(deadline, TcpStream::connect((url.host(), url.port())))
        .await
        .map_err(|_| timed_out())?
        .map_err(|e| connect_error(e.to_string()))?;
    tcp.set_nodelay(true)
        .map_err(|e| connect_error(e.to_string()))?;
    let (status, content_type, body) = match tls {
        None => exchange(tcp, request, deadline).await?,
        Some(connector) => {
            let name = ServerName::try_from(url.host().to_owned())
                .map_err(|e| connect_error(e.to_string()))?;
            let stream = tokio::time::timeout_at(deadline, connector.connect(name, tcp))
                .await
                .map_err(|_| timed_out())?
                .map_err(|e| connect_error(format!("TLS: {e}")))?;
            exchange(stream, request, deadline).await?
        }
    };
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(Answer {
        status,
        content_type,
        body: body.bytes,
        body_truncated: body.truncated,
        body_complete: body.complete,
        duration_ms,
    })
}

/// A client TLS connector trusting only the PEM bundle at `path`, with the
/// process's one crypto provider (ring).
fn tls_connector(path: Option<&Path>) -> Result<tokio_rustls::TlsConnector, PostError> {
    let Some(path) = path else {
        return Err(PostError::TrustRoots {
            path: PathBuf::new(),
            reason: "an https receiver needs trust roots".into(),
        });
    };
    trusting_only(path).map_err(|reason| PostError::TrustRoots {
        path: path.to_path_buf(),
        reason,
    })
}

/// A client TLS connector trusting only the CAs of the PEM bundle at
/// `path` (no system roots), with the process's one crypto provider
/// (ring); the error is the reason. Shared by every outbound HTTPS client
/// (webhooks, notifications, the gateway's upstreams).
pub fn trusting_only(path: &Path) -> Result<tokio_rustls::TlsConnector, String> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in read_trust_roots(path)? {
        roots
            .add(cert)
            .map_err(|e| format!("not a usable CA certificate: {e}"))?;
    }
    countersign_identity::tls::install_crypto_provider();
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

/// The certificates of the PEM bundle at `path` (at most 1 MiB, at least
/// one certificate): the trust roots of a receiver. The error says what is
/// wrong, without the path.
pub fn read_trust_roots(path: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(MAX_TRUST_ROOTS_BYTES + 1).read_to_end(&mut bytes))
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_TRUST_ROOTS_BYTES {
        return Err("larger than 1 MiB".into());
    }
    let certs = CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| format!("not PEM: {e}"))?;
    if certs.is_empty() {
        return Err("holds no certificate".into());
    }
    Ok(certs)
}

/// The response body as kept.
struct Body {
    bytes: Vec<u8>,
    truncated: bool,
    complete: bool,
}

/// Sends `request` over `io` and reads the answer until `deadline`. Every
/// error here is [`PostError::MaybeSent`]: once the request is handed to
/// the connection, nothing proves the receiver did not get it.
async fn exchange<T>(
    io: T,
    request: hyper::Request<Full<Bytes>>,
    deadline: Instant,
) -> Result<(u16, Option<String>, Body), PostError>
where
    T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let maybe = |e: String| PostError::MaybeSent(e);
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| maybe(e.to_string()))?;
    // The connection is driven beside the request and dropped with it.
    let driver = AbortOnDrop(tokio::spawn(connection));
    let response = tokio::time::timeout_at(deadline, sender.send_request(request))
        .await
        .map_err(|_| maybe("timed out waiting for the response".into()))?
        .map_err(|e| maybe(format!("the connection failed: {e}")))?;
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get(hyper::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let mut incoming = response.into_body();
    let mut body = Body {
        bytes: Vec::new(),
        truncated: false,
        complete: false,
    };
    loop {
        match tokio::time::timeout_at(deadline, incoming.frame()).await {
            Ok(Some(Ok(frame))) => {
                if let Ok(data) = frame.into_data() {
                    let room = MAX_BODY_BYTES.saturating_sub(body.bytes.len());
                    let keep = data.len().min(room);
                    body.bytes.extend_from_slice(&data[..keep]);
                    if keep < data.len() {
                        body.truncated = true;
                        break;
                    }
                }
            }
            Ok(None) => {
                body.complete = true;
                break;
            }
            Ok(Some(Err(_))) | Err(_) => break,
        }
    }
    drop(driver);
    Ok((status, content_type, body))
}

struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

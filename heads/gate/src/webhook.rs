//! The `webhook` effect: one HTTP/1.1 POST of the canonical arguments (the
//! exact bytes approved) to the URL fixed by the registry, carrying the
//! proof in `Countersign-Proof` (so the receiver verifies the approval
//! itself), the nonce as `Idempotency-Key` and the proposal id as
//! `Countersign-Proposal`.
//!
//! This module owns the connection: it opens the TCP socket itself
//! (TCP_NODELAY), does the TLS handshake against the registry's trust roots
//! only, and so knows whether any byte of the request can have left. That
//! is what decides failed against uncertain: an error before the request
//! was handed to the connection (unreadable trust roots, no connection, a
//! refused certificate, a timeout while connecting) sent nothing; any error
//! or timeout after it may have been received and acted on. It follows no
//! redirect, keeps at most [`MAX_BODY_BYTES`] of the response, and must not
//! log or trace a header: the proof is one.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use countersign_registry::WebhookUrl;
use countersign_verifier::Proof;
use http_body_util::{BodyExt as _, Full};
use hyper::body::Bytes;
use hyper::header::{CONTENT_TYPE, HOST, HeaderValue, USER_AGENT};
use hyper_util::rt::TokioIo;
use rustls_pki_types::pem::PemObject as _;
use rustls_pki_types::{CertificateDer, ServerName};
use serde::Serialize;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use tokio::time::Instant;

/// Header carrying the proof.
pub const PROOF_HEADER: &str = "countersign-proof";
/// Header carrying the nonce, the receiver's idempotency key.
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";
/// Header carrying the proposal id.
pub const PROPOSAL_HEADER: &str = "countersign-proposal";
/// At most this many bytes of the response body are kept.
pub const MAX_BODY_BYTES: usize = 64 * 1024;
/// Largest trust roots file read, in bytes.
const MAX_TRUST_ROOTS_BYTES: u64 = 1024 * 1024;

/// Where and how to send: taken from the registry's `Effect::Webhook`,
/// never from a proposal.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookSpec {
    /// The parsed URL.
    pub url: WebhookUrl,
    /// The whole exchange, connect to end of response, is bounded by this.
    pub timeout: Duration,
    /// Statuses that mean applied.
    pub accept_status: Vec<u16>,
    /// PEM bundle of the CAs trusted for an https receiver.
    pub trust_roots: Option<PathBuf>,
}

/// The receiver's answer. Serialized as the ledger's result of the effect.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct WebhookOutcome {
    /// The HTTP status of the response.
    pub status: u16,
    /// The response body (lossy UTF-8, at most [`MAX_BODY_BYTES`] bytes read).
    pub body: String,
    /// True when the body was longer than the bound (the rest was discarded).
    pub body_truncated: bool,
    /// False when the body could not be read to its end within the timeout
    /// (the status was received, so the outcome is still known).
    pub body_complete: bool,
    /// Wall time from connect to the end of the response, in milliseconds.
    pub duration_ms: u64,
}

/// Why a webhook did not produce a response.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    /// The idempotency key or proposal id is not a valid header value
    /// (nothing was sent).
    #[error("the idempotency key, proof or proposal id is not a valid header value")]
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

impl WebhookError {
    /// True when the request may have reached the receiver, so its effect
    /// may have happened.
    pub fn maybe_sent(&self) -> bool {
        matches!(self, WebhookError::MaybeSent(_))
    }
}

/// POSTs `canonical_args` to `spec.url` as described in the module doc.
/// Any status is an `Ok` outcome: the receiver answered. `Err` means no
/// answer; [`WebhookError::maybe_sent`] tells whether it may have acted.
pub async fn send_webhook(
    spec: &WebhookSpec,
    canonical_args: &str,
    idempotency_key: &str,
    proof: &Proof,
    proposal_id: &str,
) -> Result<WebhookOutcome, WebhookError> {
    let started = Instant::now();
    let deadline = started + spec.timeout;
    let request = build_request(spec, canonical_args, idempotency_key, proof, proposal_id)?;
    let tls = match spec.url.is_https() {
        true => Some(tls_connector(spec.trust_roots.as_deref())?),
        false => None,
    };
    let authority = spec.url.authority();
    let connect_error = |reason: String| WebhookError::Connect {
        authority: authority.clone(),
        reason,
    };
    let timed_out = || WebhookError::ConnectTimeout(authority.clone());
    let tcp = tokio::time::timeout_at(
        deadline,
        TcpStream::connect((spec.url.host(), spec.url.port())),
    )
    .await
    .map_err(|_| timed_out())?
    .map_err(|e| connect_error(e.to_string()))?;
    tcp.set_nodelay(true)
        .map_err(|e| connect_error(e.to_string()))?;
    let (status, body) = match tls {
        None => exchange(tcp, request, deadline).await?,
        Some(connector) => {
            let name = ServerName::try_from(spec.url.host().to_owned())
                .map_err(|e| connect_error(e.to_string()))?;
            let stream = tokio::time::timeout_at(deadline, connector.connect(name, tcp))
                .await
                .map_err(|_| timed_out())?
                .map_err(|e| connect_error(format!("TLS: {e}")))?;
            exchange(stream, request, deadline).await?
        }
    };
    let duration_ms = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    Ok(WebhookOutcome {
        status,
        body: String::from_utf8_lossy(&body.bytes).into_owned(),
        body_truncated: body.truncated,
        body_complete: body.complete,
        duration_ms,
    })
}

fn build_request(
    spec: &WebhookSpec,
    canonical_args: &str,
    idempotency_key: &str,
    proof: &Proof,
    proposal_id: &str,
) -> Result<hyper::Request<Full<Bytes>>, WebhookError> {
    let key_ok = !idempotency_key.is_empty()
        && idempotency_key.len() <= 256
        && idempotency_key.bytes().all(|b| b.is_ascii_graphic());
    if !key_ok {
        return Err(WebhookError::InvalidHeader);
    }
    let header =
        |value: &str| HeaderValue::from_str(value).map_err(|_| WebhookError::InvalidHeader);
    let mut proof_value = header(proof.expose_secret())?;
    proof_value.set_sensitive(true);
    hyper::Request::post(spec.url.path_and_query())
        .header(HOST, header(&spec.url.authority())?)
        .header(
            USER_AGENT,
            HeaderValue::from_static("countersign-webhook/1"),
        )
        .header(CONTENT_TYPE, HeaderValue::from_static("application/json"))
        .header(PROOF_HEADER, proof_value)
        .header(IDEMPOTENCY_HEADER, header(idempotency_key)?)
        .header(PROPOSAL_HEADER, header(proposal_id)?)
        .body(Full::new(Bytes::copy_from_slice(canonical_args.as_bytes())))
        .map_err(|_| WebhookError::InvalidHeader)
}

/// A client TLS connector trusting only the PEM bundle at `path`, with the
/// process's one crypto provider (ring).
fn tls_connector(path: Option<&Path>) -> Result<tokio_rustls::TlsConnector, WebhookError> {
    let Some(path) = path else {
        return Err(WebhookError::TrustRoots {
            path: PathBuf::new(),
            reason: "an https webhook needs trust roots".into(),
        });
    };
    let refuse = |reason: String| WebhookError::TrustRoots {
        path: path.to_path_buf(),
        reason,
    };
    let bytes = read_bounded(path).map_err(|e| refuse(e.to_string()))?;
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_slice_iter(&bytes) {
        let cert = cert.map_err(|e| refuse(format!("not PEM: {e}")))?;
        roots
            .add(cert)
            .map_err(|e| refuse(format!("not a usable CA certificate: {e}")))?;
    }
    if roots.is_empty() {
        return Err(refuse("holds no certificate".into()));
    }
    countersign_identity::tls::install_crypto_provider();
    let config = rustls::ClientConfig::builder()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}

fn read_bounded(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::Read as _;
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_TRUST_ROOTS_BYTES + 1)
        .read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_TRUST_ROOTS_BYTES {
        return Err(std::io::Error::other("larger than 1 MiB"));
    }
    Ok(bytes)
}

/// The response body as kept.
struct Body {
    bytes: Vec<u8>,
    truncated: bool,
    complete: bool,
}

/// Sends `request` over `io` and reads the answer until `deadline`. Every
/// error here is [`WebhookError::MaybeSent`]: once the request is handed to
/// the connection, nothing proves the receiver did not get it.
async fn exchange<T>(
    io: T,
    request: hyper::Request<Full<Bytes>>,
    deadline: Instant,
) -> Result<(u16, Body), WebhookError>
where
    T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let maybe = |e: String| WebhookError::MaybeSent(e);
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
    Ok((status, body))
}

struct AbortOnDrop<T>(tokio::task::JoinHandle<T>);

impl<T> Drop for AbortOnDrop<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

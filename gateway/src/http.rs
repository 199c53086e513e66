//! The connection to a streamable HTTP upstream: sockets opened here
//! (TCP_NODELAY), TLS against the upstream's `trust_roots` only (no system
//! roots; the process's one ring provider), HTTP/1.1 connections kept for
//! reuse, and the bearer credential from its private file, only ever over
//! verified TLS or a Unix socket whose server's user the kernel reports
//! (SO_PEERCRED) as the configured `peer_user`.
//!
//! This module owns whether a request can have left: an error before the
//! request was handed to a connection (no connection, a refused
//! certificate, a kept connection the server had closed, which hands the
//! request back) is [`HttpError::NotSent`]; any later one is
//! [`HttpError::Exchange`]. It must not send to anything but the
//! configured URL, must not resolve a name for plain http, and must not
//! log a header (the bearer credential is one).

mod client;

use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use countersign_registry::WebhookUrl;
use countersign_registry::gateway::Http;
use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::client::conn::http1::SendRequest;
use hyper::header::HeaderValue;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;
use rustls_pki_types::ServerName;
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;
use zeroize::Zeroizing;

use crate::secret::read_secret;

/// How long opening a connection (TCP and TLS) may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Idle connections kept per upstream.
const MAX_IDLE: usize = 4;

/// Why an HTTP exchange failed, and whether the request can have left.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum HttpError {
    /// Nothing of the request was sent.
    #[error("{0} (nothing was sent)")]
    NotSent(String),
    /// The request was handed to a connection and the exchange failed: the
    /// upstream may have received it.
    #[error("the exchange failed after the request was sent: {0}")]
    Exchange(String),
}

/// A streamable HTTP upstream's client: cheap to clone, connections shared.
#[derive(Clone)]
pub(crate) struct HttpClient {
    shared: Arc<Shared>,
}

struct Shared {
    /// The configured URL, parsed.
    url: WebhookUrl,
    /// The configured URL as written (what rmcp asks for).
    uri: String,
    /// The `Host` header.
    host: HeaderValue,
    /// `Some` for https.
    tls: Option<tokio_rustls::TlsConnector>,
    /// `Some` for plain http over a Unix socket whose server must run as
    /// this user.
    socket: Option<PeerSocket>,
    /// Kept connections; one in use is not ready until its response ends.
    idle: Mutex<Vec<SendRequest<Full<Bytes>>>>,
}

/// A Unix socket and the user its server must run as.
struct PeerSocket {
    path: std::path::PathBuf,
    user: String,
    uid: u32,
}

/// What a streamable HTTP upstream needs to be reached: its client and its
/// bearer credential (read from its private file now).
pub(crate) struct Prepared {
    pub(crate) client: HttpClient,
    pub(crate) bearer: Option<Zeroizing<String>>,
}

/// Prepares `http` (trust roots and bearer file read and checked now); the
/// error names the file that cannot be used.
pub(crate) fn prepare(http: &Http) -> Result<Prepared, String> {
    let url = WebhookUrl::parse(&http.url).map_err(|r| format!("`http.url` {r}"))?;
    let tls = match (url.is_https(), &http.trust_roots) {
        (true, Some(path)) => Some(tls_connector(path)?),
        (true, None) => return Err("an https upstream needs `http.trust_roots`".into()),
        // The configuration refuses plain http to anything but a loopback
        // IP address; this keeps the connection code from resolving a
        // name for a request sent in the clear whatever its caller checked.
        // The configuration refuses a credential over plain http too; this
        // keeps the credential off a connection nobody authenticated
        // whatever the caller checked.
        (false, _) if http.bearer_file.is_some() && http.unix_socket.is_none() => {
            return Err(countersign_registry::gateway::BEARER_NEEDS_HTTPS.into());
        }
        (false, _) if url.host().parse::<std::net::IpAddr>().is_err() => {
            return Err(format!(
                "plain http:// goes only to an IP address, not to the name {:?}",
                url.host()
            ));
        }
        (false, _) => None,
    };
    let socket = match (&http.unix_socket, &http.peer_user) {
        (Some(path), Some(user)) => Some(PeerSocket {
            path: path.clone(),
            user: user.clone(),
            uid: countersign_process::users::uid_of(user)
                .map_err(|e| format!("`http.peer_user`: {e}"))?,
        }),
        (None, None) => None,
        _ => return Err("`http.unix_socket` and `http.peer_user` go together".into()),
    };
    let bearer = http.bearer_file.as_deref().map(read_secret).transpose()?;
    let host = HeaderValue::from_str(&url.authority())
        .map_err(|_| "`http.url`: the host is not a valid Host header".to_owned())?;
    Ok(Prepared {
        client: HttpClient {
            shared: Arc::new(Shared {
                url,
                uri: http.url.clone(),
                host,
                tls,
                socket,
                idle: Mutex::new(Vec::new()),
            }),
        },
        bearer,
    })
}

/// A client TLS connector trusting only the PEM bundle at `path`.
fn tls_connector(path: &Path) -> Result<tokio_rustls::TlsConnector, String> {
    countersign_outbound::trusting_only(path)
        .map_err(|why| format!("trust roots {}: {why}", path.display()))
}

impl HttpClient {
    /// Sends `request` on a kept connection, or on a new one, and returns
    /// the response head (its body streams from the connection).
    async fn send(&self, request: Request<Full<Bytes>>) -> Result<Response<Incoming>, HttpError> {
        let mut request = request;
        while let Some(mut sender) = self.take_idle() {
            match sender.try_send_request(request).await {
                Ok(response) => {
                    self.keep(sender);
                    return Ok(response);
                }
                // A kept connection closed under us hands the request back
                // unsent: try the next one.
                Err(mut error) => match error.take_message() {
                    Some(unsent) => request = unsent,
                    None => return Err(HttpError::Exchange(error.into_error().to_string())),
                },
            }
        }
        let mut sender = self.connect().await?;
        match sender.try_send_request(request).await {
            Ok(response) => {
                self.keep(sender);
                Ok(response)
            }
            Err(mut error) => match error.take_message() {
                Some(_) => Err(HttpError::NotSent(error.into_error().to_string())),
                None => Err(HttpError::Exchange(error.into_error().to_string())),
            },
        }
    }

    fn take_idle(&self) -> Option<SendRequest<Full<Bytes>>> {
        let mut idle = self
            .shared
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        idle.retain(|s| !s.is_closed());
        let ready = idle.iter().position(SendRequest::is_ready)?;
        Some(idle.swap_remove(ready))
    }

    fn keep(&self, sender: SendRequest<Full<Bytes>>) {
        let mut idle = self
            .shared
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if idle.len() < MAX_IDLE && !sender.is_closed() {
            idle.push(sender);
        }
    }

    /// Closes every kept connection (each ends once its response does).
    pub(crate) fn close(&self) {
        self.shared
            .idle
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// A new HTTP/1.1 connection, ready for a request. Every error here is
    /// [`HttpError::NotSent`].
    async fn connect(&self) -> Result<SendRequest<Full<Bytes>>, HttpError> {
        let url = &self.shared.url;
        let authority = url.authority();
        let not_sent =
            |why: String| HttpError::NotSent(format!("cannot connect to {authority}: {why}"));
        if let Some(socket) = &self.shared.socket {
            let not_sent = |why: String| {
                HttpError::NotSent(format!(
                    "cannot connect to {}: {why}",
                    socket.path.display()
                ))
            };
            let opening = async {
                let stream = tokio::net::UnixStream::connect(&socket.path)
                    .await
                    .map_err(|e| not_sent(e.to_string()))?;
                // The kernel says who serves the socket; a socket path
                // another user took over gets nothing, the credential least.
                let peer = stream
                    .peer_cred()
                    .map_err(|e| not_sent(format!("peer credentials: {e}")))?
                    .uid();
                if peer != socket.uid {
                    return Err(not_sent(format!(
                        "its server runs as uid {peer}, not as `peer_user` {:?} (uid {})",
                        socket.user, socket.uid
                    )));
                }
                handshake(stream).await.map_err(&not_sent)
            };
            return tokio::time::timeout(CONNECT_TIMEOUT, opening)
                .await
                .map_err(|_| not_sent("timed out".into()))?;
        }
        let opening = async {
            let tcp = TcpStream::connect((url.host(), url.port()))
                .await
                .map_err(|e| not_sent(e.to_string()))?;
            tcp.set_nodelay(true).map_err(|e| not_sent(e.to_string()))?;
            match &self.shared.tls {
                None => handshake(tcp).await.map_err(&not_sent),
                Some(connector) => {
                    let name = ServerName::try_from(url.host().to_owned())
                        .map_err(|e| not_sent(e.to_string()))?;
                    let tls = connector
                        .connect(name, tcp)
                        .await
                        .map_err(|e| not_sent(format!("TLS: {e}")))?;
                    handshake(tls).await.map_err(&not_sent)
                }
            }
        };
        tokio::time::timeout(CONNECT_TIMEOUT, opening)
            .await
            .map_err(|_| not_sent("timed out".into()))?
    }
}

/// The HTTP/1.1 handshake over `io`, its connection driven by its own task
/// (which ends when the connection closes).
async fn handshake<T>(io: T) -> Result<SendRequest<Full<Bytes>>, String>
where
    T: AsyncRead + AsyncWrite + Send + Unpin + 'static,
{
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(io))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        if let Err(e) = connection.await {
            tracing::debug!("an upstream HTTP connection ended: {e}");
        }
    });
    sender.ready().await.map_err(|e| e.to_string())?;
    Ok(sender)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bearer_credential_is_never_prepared_for_plain_http() {
        // Built directly, past the configuration's own check.
        let http = Http {
            url: "http://127.0.0.1:3001/mcp".into(),
            bearer_file: Some("/nonexistent/bearer".into()),
            trust_roots: None,
            unix_socket: None,
            peer_user: None,
        };
        let refused = prepare(&http).err();
        assert_eq!(
            refused.as_deref(),
            Some(countersign_registry::gateway::BEARER_NEEDS_HTTPS)
        );
    }
}

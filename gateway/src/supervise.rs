//! One upstream's lifetime: connect (start the child, or reach the URL),
//! run the MCP session until it ends, then back off and start again, until
//! told to stop. Its state is a [`Link`] that callers watch.
//!
//! This module owns the restart policy (0.5 s doubling to 30 s, reset after
//! a session that lasted 30 s) and the order of stopping (session closed,
//! then the child's group). It must not call tools or decide anything
//! about them.

use std::sync::Arc;
use std::time::Duration;

use countersign_registry::gateway::{Http, Stdio, Transport, Upstream};
use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ClientCacheConfig, ServiceExt as _};
use tokio::sync::watch;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::http::{self, HttpClient};
use crate::stdio::{self, Group};

/// The first wait before a restart.
const MIN_BACKOFF: Duration = Duration::from_millis(500);
/// The longest wait before a restart.
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How long the MCP initialization may take.
const INITIALIZE_TIMEOUT: Duration = Duration::from_secs(30);

/// An upstream's state as callers see it.
#[derive(Clone)]
pub(crate) enum Link {
    /// Connecting: a caller may wait for the outcome.
    Starting,
    /// Initialized: requests go to this peer; cancelling the token ends
    /// the session, and the supervisor connects again.
    Ready(Peer<RoleClient>, CancellationToken),
    /// Not connected (waiting before the next attempt), and why.
    Down(String),
    /// Stopped for good.
    Stopped,
}

/// Why an upstream without `[upstream.stdio]` or `[upstream.http]` is
/// unavailable.
const NO_TRANSPORT: &str = "gateway.toml gives it no [upstream.stdio] or [upstream.http] on this host, so the gateway cannot reach it";

/// What the supervisor needs, moved into its task.
pub(crate) struct Supervisor {
    pub(crate) upstream: Upstream,
    pub(crate) link: watch::Sender<Link>,
    pub(crate) stop: CancellationToken,
    pub(crate) group: Arc<Group>,
}

/// A connected session: the running MCP service, and the child for stdio.
struct Session {
    service: RunningService<RoleClient, ClientConfig>,
    child: Option<tokio::process::Child>,
    http: Option<HttpClient>,
}

fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("countersign-gateway", env!("CARGO_PKG_VERSION")),
    )
}

impl Supervisor {
    /// Runs until `stop` is cancelled; the link is [`Link::Stopped`] after.
    /// An upstream this host's `gateway.toml` gives no transport is down
    /// for that reason until then, and nothing is started for it.
    pub(crate) async fn run(self) {
        let name = self.upstream.name.clone();
        if self.upstream.transport.is_none() {
            tracing::warn!(upstream = %name, "upstream unavailable: {NO_TRANSPORT}");
            self.link.send_replace(Link::Down(NO_TRANSPORT.into()));
            self.stop.cancelled().await;
            self.link.send_replace(Link::Stopped);
            return;
        }
        let mut backoff = MIN_BACKOFF;
        loop {
            self.link.send_replace(Link::Starting);
            let started = Instant::now();
            let connected = tokio::select! {
                () = self.stop.cancelled() => break,
                connected = self.connect() => connected,
            };
            let reason = match connected {
                Ok(session) => match self.serve(session).await {
                    Some(reason) => reason,
                    None => break,
                },
                Err(reason) => reason,
            };
            tracing::warn!(upstream = %name, "upstream unavailable: {reason}; restarting in {backoff:?}");
            self.link.send_replace(Link::Down(reason));
            if started.elapsed() >= MAX_BACKOFF {
                backoff = MIN_BACKOFF;
            }
            tokio::select! {
                () = self.stop.cancelled() => break,
                () = tokio::time::sleep(backoff) => {}
            }
            backoff = (backoff * 2).min(MAX_BACKOFF);
        }
        self.link.send_replace(Link::Stopped);
    }

    async fn connect(&self) -> Result<Session, String> {
        match &self.upstream.transport {
            Some(Transport::Stdio(stdio)) => self.connect_stdio(stdio).await,
            Some(Transport::Http(http)) => connect_http(http).await,
            None => Err(NO_TRANSPORT.into()),
        }
    }

    async fn connect_stdio(&self, config: &Stdio) -> Result<Session, String> {
        let started = stdio::start(&self.upstream.name, config, &self.group)?;
        let mut child = started.child;
        let initialized = tokio::time::timeout(
            INITIALIZE_TIMEOUT,
            client_config().serve((started.stdout, started.stdin)),
        )
        .await;
        match initialized {
            Ok(Ok(service)) => Ok(Session {
                service,
                child: Some(child),
                http: None,
            }),
            failed => {
                // Stdin closes when the failed transport is dropped here.
                let reason = match failed {
                    Ok(Err(e)) => format!("MCP initialization failed: {e}"),
                    _ => "MCP initialization timed out".to_owned(),
                };
                if let Ok(Some(status)) = child.try_wait() {
                    stdio::reaped(&self.group);
                    return Err(format!("{reason} (the program exited: {status})"));
                }
                stdio::stop(child, &self.group).await;
                Err(reason)
            }
        }
    }

    /// Serves `session` until it ends (`Some(why)`) or the supervisor is
    /// told to stop (`None`, after closing it).
    async fn serve(&self, session: Session) -> Option<String> {
        let Session {
            service,
            mut child,
            http,
        } = session;
        // A fresh list every time: no cached (and no stale) answer.
        service
            .peer()
            .set_response_cache_config(ClientCacheConfig::disabled())
            .await;
        let reset = CancellationToken::new();
        self.link
            .send_replace(Link::Ready(service.peer().clone(), reset.clone()));
        let session_token = service.cancellation_token();
        let waiting = service.waiting();
        tokio::pin!(waiting);
        let exited = async {
            match child.as_mut() {
                Some(child) => child.wait().await.map(|s| s.to_string()),
                None => std::future::pending().await,
            }
        };
        let mut ended = false;
        let reason = tokio::select! {
            () = self.stop.cancelled() => None,
            () = reset.cancelled() => Some("the session was reset: it failed to list its tools".to_owned()),
            _ = &mut waiting => {
                ended = true;
                Some("the MCP session ended".to_owned())
            }
            status = exited => Some(match status {
                Ok(status) => format!("the program exited ({status})"),
                Err(e) => format!("the program's status is unknown: {e}"),
            }),
        };
        // Closes the session (and the child's stdin) and fails requests
        // still waiting on it.
        session_token.cancel();
        if !ended {
            let _ = tokio::time::timeout(Duration::from_secs(5), waiting).await;
        }
        if let Some(http) = &http {
            http.close();
        }
        if let Some(child) = child {
            stdio::stop(child, &self.group).await;
        }
        reason
    }
}

async fn connect_http(config: &Http) -> Result<Session, String> {
    let prepared = http::prepare(config)?;
    let mut transport_config = StreamableHttpClientTransportConfig::with_uri(config.url.as_str());
    if let Some(bearer) = &prepared.bearer {
        transport_config = transport_config.auth_header(bearer.as_str());
    }
    let transport =
        StreamableHttpClientTransport::with_client(prepared.client.clone(), transport_config);
    match tokio::time::timeout(INITIALIZE_TIMEOUT, client_config().serve(transport)).await {
        Ok(Ok(service)) => Ok(Session {
            service,
            child: None,
            http: Some(prepared.client),
        }),
        Ok(Err(e)) => Err(format!("MCP initialization failed: {e}")),
        Err(_) => Err("MCP initialization timed out".into()),
    }
}

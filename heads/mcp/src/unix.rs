//! The MCP head on a Unix socket (`countersign mcp --listen unix:PATH
//! --client-user NAME`), for an agent that runs as another OS user than
//! the gateway: each connection is one MCP session in the stdio framing
//! (newline-delimited JSON-RPC, every frame screened by
//! [`crate::StrictTransport`]), with a session of its own, as a stdio
//! client gets.
//!
//! Who calls is what the kernel reports of the connection's peer
//! (SO_PEERCRED), checked before a byte is read: a connection from any
//! other uid than the client user's is closed unread. No credential is
//! needed or sent, so there is none to capture; the agent's side
//! (`countersign mcp --connect`) checks in turn that the socket's server
//! runs as the gateway's user before it relays a byte, so a socket path
//! another user took over gets nothing.

use std::future::Future;

use rmcp::ServiceExt as _;
use tokio::net::{UnixListener, UnixStream};
use tokio_util::sync::CancellationToken;
use tokio_util::task::TaskTracker;

use crate::server::{McpHead, drain_executions};

/// Serve `head` on `listener` to connections from uid `client_uid` only,
/// one session each, until `shutdown` resolves; then end every connection
/// and let executions still running finish for the shutdown grace.
pub async fn serve_unix(
    head: McpHead,
    listener: UnixListener,
    client_uid: u32,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let executions = head.executions();
    let stop = CancellationToken::new();
    let connections = TaskTracker::new();
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            () = &mut shutdown => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(e) => {
                    tracing::warn!("accepting an MCP connection failed: {e}");
                    continue;
                }
            },
        };
        match stream.peer_cred().map(|c| c.uid()) {
            Ok(uid) if uid == client_uid => {}
            Ok(uid) => {
                tracing::warn!(
                    uid,
                    client_uid,
                    "refused an MCP connection from another user; nothing was read"
                );
                continue;
            }
            Err(e) => {
                tracing::warn!("an MCP connection's peer credentials are unreadable: {e}");
                continue;
            }
        }
        let session = match head.for_connection() {
            Ok(session) => session,
            Err(e) => {
                tracing::error!("cannot start an MCP session: {e}");
                continue;
            }
        };
        connections.spawn(serve_connection(session, stream, stop.clone()));
    }
    stop.cancel();
    connections.close();
    connections.wait().await;
    executions.close();
    drain_executions(&executions).await;
    Ok(())
}

/// One connection, one session, until the client closes it or `stop`.
async fn serve_connection(session: McpHead, stream: UnixStream, stop: CancellationToken) {
    let id = session.session().to_owned();
    tracing::info!(session = %id, "an MCP client connected over the Unix socket");
    let (read, write) = stream.into_split();
    let running = tokio::select! {
        () = stop.cancelled() => return,
        running = session.serve(crate::StrictTransport::new(read, write)) => running,
    };
    let running = match running {
        Ok(running) => running,
        Err(e) => {
            tracing::info!(session = %id, "an MCP connection ended before it started: {e}");
            return;
        }
    };
    let cancel = running.cancellation_token();
    tokio::select! {
        _ = running.waiting() => {}
        () = stop.cancelled() => cancel.cancel(),
    }
    tracing::info!(session = %id, "an MCP client disconnected");
}

//! `countersign mcp`: run the MCP head on stdin/stdout for one client
//! connection, or with `--listen` over streamable HTTP for clients holding
//! an API credential. On stdio, standard output carries protocol frames
//! only; this command writes its own notes (the session id, the address) to
//! standard error. With `gateway.toml` beside the registry, it is also the
//! MCP gateway: the upstream servers' tools are listed and called through it.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use tokio::io::AsyncWriteExt as _;

use countersign_api::default_audience;
use countersign_api::tokens::TokenStore;
use countersign_gate::Gate;
use countersign_gateway::Upstreams;
use countersign_identity::shutdown::shutdown_signal;
use countersign_mcp::{Gateway, HttpAuth, MCP_PATH, McpHead};

use crate::Io;
use crate::args::{ListenAddr, McpArgs};
use crate::context::Context;
use crate::error::CliError;

/// `countersign mcp [--listen ADDR | --listen unix:PATH --client-user U]`
pub(crate) async fn serve(ctx: &Context, args: McpArgs, io: &mut Io<'_>) -> Result<(), CliError> {
    match (args.listen, args.client_user) {
        (Some(ListenAddr::Tcp(_)), Some(_)) => {
            return Err(CliError::Error(
                "--client-user goes with --listen unix:PATH: on a TCP address the kernel names no client user, and clients authenticate with API credentials".into(),
            ));
        }
        (Some(ListenAddr::Unix(_)), None) => {
            return Err(CliError::Error(
                "--listen unix:PATH needs --client-user USER: the only OS user whose connections are served".into(),
            ));
        }
        (Some(ListenAddr::Tcp(listen)), None) => return serve_http(ctx, listen, io).await,
        (Some(ListenAddr::Unix(path)), Some(user)) => {
            return serve_unix(ctx, &path.0, &user, io).await;
        }
        (None, _) => {}
    }
    let (server, gateway) = head(ctx).await?;
    writeln!(
        io.err,
        "countersign mcp: serving MCP on stdio for principal {}, session {}",
        ctx.principal,
        server.session()
    )
    .map_err(CliError::error)?;
    let served = server.serve_stdio().await.map_err(CliError::error);
    if let Some(gateway) = gateway {
        gateway.upstreams().shutdown().await;
    }
    served
}

/// The MCP head of this installation (and its gateway, if any).
async fn head(ctx: &Context) -> Result<(McpHead, Option<Gateway>), CliError> {
    let mut head = ctx.head().await?;
    let gate = ctx.gate(&mut head).await?;
    let (gate, gateway) = gateway(ctx, gate)?;
    let mut server = McpHead::new(head, gate)
        .map_err(CliError::error)?
        .with_console(ctx.config.console.clone(), ctx.config.passkeys.is_some());
    if let Some(gateway) = &gateway {
        server = server.with_gateway(gateway.clone());
    }
    Ok((server, gateway))
}

/// `countersign mcp --listen unix:PATH --client-user USER`: the socket is
/// made as the API's is ([`countersign_api::unix::listen`]: only in a
/// directory no other user can write, a stale one replaced), and each
/// connection's peer is checked by [`countersign_mcp::serve_unix`].
async fn serve_unix(
    ctx: &Context,
    path: &Path,
    user: &str,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let client_uid = countersign_process::users::uid_of(user)
        .map_err(|e| CliError::Error(format!("--client-user {user}: {e}")))?;
    let listener = countersign_api::unix::listen(path).map_err(CliError::Error)?;
    let (server, gateway) = head(ctx).await?;
    super::metrics::serve(ctx, ctx.config.metrics.mcp, "MCP", io).await?;
    let _ = writeln!(
        io.err,
        "countersign mcp: serving MCP on unix:{} for principal {} to user {user} (uid {client_uid}) only; each connection is its own session; press Ctrl-C to stop",
        path.display(),
        ctx.principal
    );
    tracing::info!(path = %path.display(), client_uid, "MCP on a Unix socket listening");
    countersign_mcp::serve_unix(server, listener, client_uid, shutdown_signal())
        .await
        .map_err(CliError::error)?;
    let _ = std::fs::remove_file(path);
    if let Some(gateway) = gateway {
        gateway.upstreams().shutdown().await;
    }
    let _ = writeln!(io.err, "MCP head stopped");
    Ok(())
}

/// `countersign mcp --connect unix:PATH --server-user USER`: this process's
/// stdin to the socket and the socket to its stdout, byte for byte, once
/// the kernel reports that the socket's server runs as `USER`; a socket
/// served by anyone else gets nothing.
pub(crate) async fn connect(path: &Path, user: &str) -> Result<(), CliError> {
    let server_uid = countersign_process::users::uid_of(user)
        .map_err(|e| CliError::Error(format!("--server-user {user}: {e}")))?;
    let stream = tokio::net::UnixStream::connect(path)
        .await
        .map_err(|e| CliError::Error(format!("cannot connect to {}: {e}", path.display())))?;
    let peer = stream
        .peer_cred()
        .map_err(|e| CliError::Error(format!("{}: peer credentials: {e}", path.display())))?
        .uid();
    if peer != server_uid {
        return Err(CliError::Error(format!(
            "{} is served by uid {peer}, not by {user} (uid {server_uid}); nothing was sent",
            path.display()
        )));
    }
    let (mut from_server, mut to_server) = stream.into_split();
    let upstream = async {
        tokio::io::copy(&mut tokio::io::stdin(), &mut to_server).await?;
        // The client closed its side: the server sees the end of input.
        to_server.shutdown().await
    };
    let downstream = async {
        let mut stdout = tokio::io::stdout();
        tokio::io::copy(&mut from_server, &mut stdout).await?;
        stdout.flush().await
    };
    // Until the server closes (it answers everything first) or either
    // side fails.
    let relayed = tokio::select! {
        down = downstream => down,
        up = async { upstream.await?; std::future::pending::<std::io::Result<()>>().await } => up,
    };
    relayed.map_err(|e| CliError::Error(format!("relaying to {}: {e}", path.display())))
}

/// The gateway of this installation, if `gateway.toml` beside the
/// registry names upstreams: their servers started (stdio) or prepared
/// (HTTP) once for this process, and `gate` running `mcp` effects through
/// them.
pub(crate) fn gateway(ctx: &Context, gate: Gate) -> Result<(Gate, Option<Gateway>), CliError> {
    let registry = ctx.current_registry()?;
    let Some(file) = registry.last_loaded().gateway().cloned() else {
        return Ok((gate, None));
    };
    let upstreams = Upstreams::start(&file);
    tracing::info!(upstreams = file.upstream.len(), "gateway upstreams started");
    let gate = gate.with_mcp_upstreams(Arc::new(upstreams.clone()));
    Ok((gate, Some(Gateway::new(upstreams, registry))))
}

/// `countersign mcp --listen ADDR`: refused for an unspecified address, as
/// `api serve` refuses it (the guards answer only to the bound address).
async fn serve_http(ctx: &Context, listen: SocketAddr, io: &mut Io<'_>) -> Result<(), CliError> {
    let (listener, addr, scope) =
        super::api::listen_on(listen, "the MCP head", "127.0.0.1:8788").await?;
    let mut head = ctx.head().await?;
    let gate = ctx.gate(&mut head).await?;
    let (gate, gateway) = gateway(ctx, gate)?;
    let mut server = McpHead::new(head, gate)
        .map_err(CliError::error)?
        .with_console(ctx.config.console.clone(), ctx.config.passkeys.is_some());
    if let Some(gateway) = &gateway {
        server = server.with_gateway(gateway.clone());
    }
    super::metrics::serve(ctx, ctx.config.metrics.mcp, "MCP", io).await?;
    let auth = HttpAuth {
        tokens: TokenStore::in_home(ctx.home.root()),
        principal: ctx.principal.clone(),
        audience: default_audience(&ctx.principal),
    };
    let _ = writeln!(
        io.err,
        "countersign mcp: serving MCP on http://{addr}{MCP_PATH} for principal {} ({scope}); each API credential is its own session; press Ctrl-C to stop",
        ctx.principal
    );
    tracing::info!(%addr, "MCP over HTTP listening");
    countersign_mcp::serve_http(server, auth, listener, shutdown_signal())
        .await
        .map_err(CliError::error)?;
    if let Some(gateway) = gateway {
        gateway.upstreams().shutdown().await;
    }
    let _ = writeln!(io.err, "MCP head stopped");
    Ok(())
}

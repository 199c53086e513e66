//! `countersign mcp`: run the MCP head on stdin/stdout for one client
//! connection, or with `--listen` over streamable HTTP for clients holding
//! an API credential. On stdio, standard output carries protocol frames
//! only; this command writes its own notes (the session id, the address) to
//! standard error. With `gateway.toml` beside the registry, it is also the
//! MCP gateway: the upstream servers' tools are listed and called through it.

use std::net::SocketAddr;
use std::sync::Arc;

use countersign_api::default_audience;
use countersign_api::tokens::TokenStore;
use countersign_gate::Gate;
use countersign_gateway::Upstreams;
use countersign_identity::shutdown::shutdown_signal;
use countersign_mcp::{Gateway, HttpAuth, MCP_PATH, McpHead};

use crate::Io;
use crate::args::McpArgs;
use crate::context::Context;
use crate::error::CliError;

/// `countersign mcp [--listen ADDR]`
pub(crate) async fn serve(ctx: &Context, args: McpArgs, io: &mut Io<'_>) -> Result<(), CliError> {
    if let Some(listen) = args.listen {
        return serve_http(ctx, listen, io).await;
    }
    let mut head = ctx.head().await?;
    let gate = ctx.gate(&mut head).await?;
    let (gate, gateway) = gateway(ctx, gate)?;
    let mut server = McpHead::new(head, gate)
        .map_err(CliError::error)?
        .with_console(ctx.config.console.clone(), ctx.config.passkeys.is_some());
    if let Some(gateway) = &gateway {
        server = server.with_gateway(gateway.clone());
    }
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

/// The gateway of this installation, if `gateway.toml` beside the
/// registry names upstreams: their servers started (stdio) or prepared
/// (HTTP) once for this process, and `gate` running `mcp` effects through
/// them.
fn gateway(ctx: &Context, gate: Gate) -> Result<(Gate, Option<Gateway>), CliError> {
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

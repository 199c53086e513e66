//! `countersign mcp`: run the MCP head on stdin/stdout for one client
//! connection, or with `--listen` over streamable HTTP for clients holding
//! an API credential. On stdio, standard output carries protocol frames
//! only; this command writes its own notes (the session id, the address) to
//! standard error.

use std::net::SocketAddr;

use countersign_api::default_audience;
use countersign_api::tokens::TokenStore;
use countersign_identity::shutdown::shutdown_signal;
use countersign_mcp::{HttpAuth, MCP_PATH, McpHead};

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
    let server = McpHead::new(head, gate)
        .map_err(CliError::error)?
        .with_console(ctx.config.console.clone(), ctx.config.passkeys.is_some());
    writeln!(
        io.err,
        "countersign mcp: serving MCP on stdio for principal {}, session {}",
        ctx.principal,
        server.session()
    )
    .map_err(CliError::error)?;
    server.serve_stdio().await.map_err(CliError::error)
}

/// `countersign mcp --listen ADDR`: refused for an unspecified address, as
/// `api serve` refuses it (the guards answer only to the bound address).
async fn serve_http(ctx: &Context, listen: SocketAddr, io: &mut Io<'_>) -> Result<(), CliError> {
    let (listener, addr, scope) =
        super::api::listen_on(listen, "the MCP head", "127.0.0.1:8788").await?;
    let mut head = ctx.head().await?;
    let gate = ctx.gate(&mut head).await?;
    let server = McpHead::new(head, gate)
        .map_err(CliError::error)?
        .with_console(ctx.config.console.clone(), ctx.config.passkeys.is_some());
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
    let _ = writeln!(io.err, "MCP head stopped");
    Ok(())
}

//! `countersign mcp`: run the MCP head on stdin/stdout for one client
//! connection. Standard output carries protocol frames only; this command
//! writes its own notes (the session id) to standard error.

use countersign_mcp::McpHead;

use crate::Io;
use crate::context::Context;
use crate::error::CliError;

/// `countersign mcp`
pub(crate) async fn serve(ctx: &Context, io: &mut Io<'_>) -> Result<(), CliError> {
    let mut head = ctx.head().await?;
    let gate = ctx.gate(&mut head).await?;
    let server = McpHead::new(head, gate)
        .map_err(CliError::error)?
        .with_console(ctx.config.console_addr);
    writeln!(
        io.err,
        "countersign mcp: serving MCP on stdio for principal {}, session {}",
        ctx.principal,
        server.session()
    )
    .map_err(CliError::error)?;
    server.serve_stdio().await.map_err(CliError::error)
}

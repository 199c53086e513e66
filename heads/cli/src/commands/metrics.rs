//! `[metrics] api|mcp|console|notify`: a long-running head serves its
//! gate's counters, and the notify process its own, as `GET /metrics` on
//! a loopback address (checked when the configuration is read, and again
//! when binding). Off unless configured.

use std::net::SocketAddr;
use std::sync::Arc;

use countersign_metrics::Exposition;

use crate::Io;
use crate::context::Context;
use crate::error::CliError;

/// Serves this process's gate metrics on `addr`, if configured, for as
/// long as the process runs, and says where on standard error. `what`
/// names the head (`API`, `MCP`, `console`).
pub(crate) async fn serve(
    ctx: &Context,
    addr: Option<SocketAddr>,
    what: &str,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let mut exposition = Exposition::new();
    ctx.gate_metrics().register(&mut exposition);
    serve_exposition(addr, exposition, what, io).await
}

/// Serves `exposition` on `addr`, if configured, for as long as the
/// process runs, and says where on standard error.
pub(crate) async fn serve_exposition(
    addr: Option<SocketAddr>,
    exposition: Exposition,
    what: &str,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let Some(addr) = addr else {
        return Ok(());
    };
    let listener = countersign_metrics::bind(addr)
        .await
        .map_err(CliError::error)?;
    let bound = listener.local_addr().map_err(CliError::error)?;
    tokio::spawn(async move {
        let served =
            countersign_metrics::serve(listener, Arc::new(exposition), std::future::pending())
                .await;
        if let Err(e) = served {
            tracing::error!("metrics listener: {e}");
        }
    });
    let _ = writeln!(
        io.err,
        "countersign {what} metrics on http://{bound}/metrics (loopback only)"
    );
    tracing::info!(addr = %bound, "metrics listening");
    Ok(())
}

//! `console`, `console pair` and `console sessions list|revoke`: thin
//! commands over the `countersign-console` crate. A pairing link is shown
//! only at the controlling terminal, never on stdout or in a log.

use std::net::SocketAddr;
use std::sync::Arc;

use countersign_console::{ConsoleParts, ConsoleState, DEFAULT_LISTEN, SessionStore};
use countersign_identity::ApproverName;
use countersign_identity::shutdown::shutdown_signal;
use serde_json::json;
use time::OffsetDateTime;

use crate::Io;
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

/// The console's address: `--listen`, else the configuration's, else the default.
pub(crate) fn listen_addr(
    ctx: &Context,
    listen: Option<SocketAddr>,
) -> Result<SocketAddr, CliError> {
    match listen.or(ctx.config.console_addr) {
        Some(addr) => Ok(addr),
        None => DEFAULT_LISTEN.parse().map_err(CliError::error),
    }
}

/// How a browser reaches a console at `addr`: `http://localhost:<port>`
/// when passkeys are configured (WebAuthn needs a domain, and a paired
/// session's cookie belongs to the host it was set for), else
/// `http://<addr>`.
pub(crate) fn console_origin(ctx: &Context, addr: SocketAddr) -> String {
    if ctx.config.passkeys.is_some() && addr.ip().is_loopback() {
        format!("http://localhost:{}", addr.port())
    } else {
        format!("http://{addr}")
    }
}

fn sessions(ctx: &Context) -> SessionStore {
    SessionStore::in_home(ctx.home.root())
}

/// The console's state for this installation: the signer as the console's
/// approver (or as the named approver `as_approver`) and as a head (for
/// "approve and run now"), the gate, the registry and the session store in
/// the home.
pub async fn console_state(
    ctx: &Context,
    as_approver: Option<&ApproverName>,
) -> Result<ConsoleState, CliError> {
    let approver = match as_approver {
        Some(name) => ctx.approver_as(Some(name)).await?,
        None => ctx.console_approver().await?,
    };
    let mut head = ctx.head().await?;
    let gate = ctx.gate(&mut head).await?;
    Ok(ConsoleState::new(ConsoleParts {
        approver,
        gate,
        registry: ctx.current_registry()?,
        policy: ctx.policy(),
        sessions: sessions(ctx),
        tls: false,
    }))
}

/// Build the console's state, bind `listen` and say where it listens. Used
/// by `console` and `up --console`.
pub(crate) async fn bind(
    ctx: &Context,
    listen: SocketAddr,
    as_approver: Option<&ApproverName>,
    io: &mut Io<'_>,
) -> Result<(tokio::net::TcpListener, Arc<ConsoleState>), CliError> {
    if listen.ip().is_unspecified() {
        return Err(CliError::Error(format!(
            "--listen {listen} names no specific address: the console answers only to requests whose Host is the address it listens on; name that address (for example 127.0.0.1:7444)"
        )));
    }
    if !listen.ip().is_loopback() {
        return Err(CliError::Error(format!(
            "--listen {listen} is not a loopback address: the console serves plain HTTP, so a paired browser's cookie would cross the network in clear; serve it on loopback (reach it from elsewhere through an SSH tunnel)"
        )));
    }
    let state = Arc::new(console_state(ctx, as_approver).await?);
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| CliError::Error(format!("cannot listen on {listen}: {e}")))?;
    let addr = listener.local_addr().map_err(CliError::error)?;
    super::metrics::serve(ctx, ctx.config.metrics.console, "console", io).await?;
    let _ = writeln!(
        io.err,
        "countersign console listening on {}/ (loopback only)",
        console_origin(ctx, addr)
    );
    tracing::info!(%addr, "console listening");
    Ok((listener, state))
}

/// Offer a pairing link at the controlling terminal, if there is one.
pub(crate) fn offer_pairing(ctx: &Context, addr: SocketAddr, io: &mut Io<'_>) {
    let Ok(mut terminal) = (io.terminal)() else {
        let _ = writeln!(
            io.err,
            "to pair a browser, run `countersign console pair` at a terminal"
        );
        return;
    };
    match sessions(ctx).create_pairing() {
        Ok((code, expires_at)) => {
            let _ = terminal.show(&format!(
                "Pair a browser (one use, until {expires_at}): {}/pair/{}\n",
                console_origin(ctx, addr),
                code.expose_secret()
            ));
        }
        Err(e) => {
            let _ = writeln!(io.err, "cannot create a pairing link: {e}");
        }
    }
}

/// `countersign console [--listen ADDR] [--as NAME]`
pub(crate) async fn serve(
    ctx: &Context,
    listen: Option<SocketAddr>,
    as_approver: Option<&ApproverName>,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let (listener, state) = bind(ctx, listen_addr(ctx, listen)?, as_approver, io).await?;
    let addr = listener.local_addr().map_err(CliError::error)?;
    offer_pairing(ctx, addr, io);
    let _ = writeln!(io.err, "press Ctrl-C to stop");
    countersign_console::run(listener, state, shutdown_signal())
        .await
        .map_err(CliError::error)?;
    let _ = writeln!(io.err, "console stopped");
    Ok(())
}

/// `countersign console pair`: a one-time link, shown at the controlling
/// terminal only (a program reading our stdout never sees it).
pub(crate) fn pair(
    ctx: &Context,
    listen: Option<SocketAddr>,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let addr = listen_addr(ctx, listen)?;
    let mut terminal = (io.terminal)().map_err(|e| {
        CliError::Refused(format!(
            "pairing needs an interactive terminal and none is available ({e}); no link was created"
        ))
    })?;
    let (code, expires_at) = sessions(ctx).create_pairing().map_err(CliError::error)?;
    terminal
        .show(&format!(
            "Open this link in the browser to pair (one use, until {expires_at}):\n  {}/pair/{}\n",
            console_origin(ctx, addr),
            code.expose_secret()
        ))
        .map_err(CliError::error)?;
    let message = format!("pairing link shown at the terminal; it expires at {expires_at}");
    if json {
        write_json(
            io.out,
            &json!({"expires_at": expires_at, "message": message}),
        )
    } else {
        write_text(io.out, &format!("{message}\n"))
    }
}

/// `countersign console sessions list`
pub(crate) fn sessions_list(ctx: &Context, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    let records = sessions(ctx).list().map_err(CliError::error)?;
    let now = OffsetDateTime::now_utc();
    if json {
        let items: Vec<_> = records
            .iter()
            .map(|r| json!({"id": r.id, "status": r.status(now), "created_at": r.created_at, "expires_at": r.expires_at, "revoked_at": r.revoked_at}))
            .collect();
        return write_json(io.out, &json!({ "sessions": items }));
    }
    if records.is_empty() {
        return write_text(io.out, "no paired browsers\n");
    }
    let mut text = String::new();
    for r in &records {
        text.push_str(&format!(
            "{}  {:<7}  created {}  expires {}\n",
            r.id,
            r.status(now),
            r.created_at,
            r.expires_at
        ));
    }
    write_text(io.out, &text)
}

/// `countersign console sessions revoke ID`
pub(crate) fn sessions_revoke(
    ctx: &Context,
    id: &str,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let record = sessions(ctx).revoke(id).map_err(|e| match e {
        countersign_console::sessions::StoreError::UnknownId(_) => CliError::Refused(e.to_string()),
        other => CliError::error(other),
    })?;
    if json {
        write_json(
            io.out,
            &json!({"id": record.id, "status": "revoked", "revoked_at": record.revoked_at}),
        )
    } else {
        write_text(io.out, &format!("revoked console session {}\n", record.id))
    }
}

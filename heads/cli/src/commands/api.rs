//! `api serve` and `api token create|revoke|list`: thin commands over the
//! `countersign-api` crate. A credential is printed only with `--stdout`;
//! otherwise it goes to a new private file and only its id is shown.

use std::sync::Arc;

use countersign_api::tokens::TokenStore;
use countersign_api::{ApiParts, ApiState, default_audience};
use countersign_identity::files::write_private_new;
use serde_json::json;
use time::OffsetDateTime;

use crate::Io;
use crate::args::{ApiServeArgs, ListenAddr, TokenCreateArgs};
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};
use countersign_identity::shutdown::shutdown_signal;

/// The API's state for this installation: a head connection to the signer,
/// the gate, the registry and the token store in the home.
pub async fn api_state(ctx: &Context) -> Result<ApiState, CliError> {
    let mut head = ctx.head().await?;
    let gate = ctx.gate(&mut head).await?;
    ApiState::new(ApiParts {
        principal: ctx.principal.clone(),
        audience: default_audience(&ctx.principal),
        registry: ctx.registry()?,
        gate,
        head,
        tokens: tokens(ctx),
    })
    .map_err(CliError::error)
}

fn tokens(ctx: &Context) -> TokenStore {
    TokenStore::in_home(ctx.home.root())
}

/// `countersign api serve [--listen ADDR | --listen unix:PATH --client-user USER]`
pub(crate) async fn serve(
    ctx: &Context,
    args: ApiServeArgs,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    match (args.listen, args.client_user) {
        (ListenAddr::Tcp(_), Some(_)) => {
            return Err(CliError::Error(
                "--client-user goes with --listen unix:PATH: on a TCP address the kernel names no client user".into(),
            ));
        }
        (ListenAddr::Unix(_), None) => {
            return Err(CliError::Error(
                "--listen unix:PATH needs --client-user USER: the only OS user whose connections are served".into(),
            ));
        }
        (ListenAddr::Tcp(listen), None) => {
            let (listener, state) = bind(ctx, listen, io).await?;
            let _ = writeln!(io.err, "press Ctrl-C to stop");
            countersign_api::run(listener, state, shutdown_signal())
                .await
                .map_err(CliError::error)?;
        }
        (ListenAddr::Unix(path), Some(user)) => {
            let client_uid = countersign_process::users::uid_of(&user)
                .map_err(|e| CliError::Error(format!("--client-user {user}: {e}")))?;
            let listener =
                countersign_api::unix::bind(&path.0, client_uid).map_err(CliError::Error)?;
            let state = Arc::new(api_state(ctx).await?);
            super::metrics::serve(ctx, ctx.config.metrics.api, "API", io).await?;
            let _ = writeln!(
                io.err,
                "countersign API listening on unix:{} to user {user} (uid {client_uid}) only; OpenAPI at /openapi.json; press Ctrl-C to stop",
                path.0.display()
            );
            tracing::info!(path = %path.0.display(), client_uid, "API listening on a Unix socket");
            let served = countersign_api::run_unix(listener, state, shutdown_signal()).await;
            let _ = std::fs::remove_file(&path.0);
            served.map_err(CliError::error)?;
        }
    }
    let _ = writeln!(io.err, "API stopped");
    Ok(())
}

/// Build the API's state, bind `listen` and say where it listens (and
/// whether that is loopback only). Used by `api serve` and `up --api`.
pub(crate) async fn bind(
    ctx: &Context,
    listen: std::net::SocketAddr,
    io: &mut Io<'_>,
) -> Result<(tokio::net::TcpListener, Arc<ApiState>), CliError> {
    let (listener, addr, scope) = listen_on(listen, "the API", "127.0.0.1:8787").await?;
    let state = Arc::new(api_state(ctx).await?);
    super::metrics::serve(ctx, ctx.config.metrics.api, "API", io).await?;
    let _ = writeln!(
        io.err,
        "countersign API listening on http://{addr} ({scope}); OpenAPI at /openapi.json"
    );
    let _ = writeln!(
        io.err,
        "note: plain HTTP on a port, which is no identity: another local user who holds it while this API is down reads the credentials clients send. Where other users share this machine, serve on a Unix socket (--listen unix:PATH --client-user USER)"
    );
    tracing::info!(%addr, "API listening");
    Ok((listener, state))
}

/// Bind `listen` for `what` (a head behind the Host guards): refused when it
/// names no specific address, since the guards answer only to the bound one.
/// Returns the listener, its address and a note on its reach.
pub(crate) async fn listen_on(
    listen: std::net::SocketAddr,
    what: &str,
    example: &str,
) -> Result<(tokio::net::TcpListener, std::net::SocketAddr, &'static str), CliError> {
    if listen.ip().is_unspecified() {
        return Err(CliError::Error(format!(
            "--listen {listen} names no specific address: {what} answers only to requests whose Host is the address it listens on; name that address (for example {example})"
        )));
    }
    let listener = tokio::net::TcpListener::bind(listen)
        .await
        .map_err(|e| CliError::Error(format!("cannot listen on {listen}: {e}")))?;
    let addr = listener.local_addr().map_err(CliError::error)?;
    let scope = if addr.ip().is_loopback() {
        "loopback only"
    } else {
        "WARNING: not loopback; reachable from the network, protected by bearer credentials only"
    };
    Ok((listener, addr, scope))
}

/// `countersign api token create --ttl D (--out FILE | --stdout)`
pub(crate) fn token_create(
    ctx: &Context,
    args: TokenCreateArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let ttl = args.ttl;
    let audience = default_audience(&ctx.principal);
    if let Some(path) = &args.out {
        // Refuse before creating a credential that could not be saved.
        if path.symlink_metadata().is_ok() {
            return Err(CliError::Error(format!(
                "{} already exists",
                path.display()
            )));
        }
    }
    let (token, record) = tokens(ctx)
        .create(&ctx.principal, &audience, ttl)
        .map_err(CliError::error)?;
    let mut secret = zeroize::Zeroizing::new(token.expose_secret().to_string());
    secret.push('\n');
    let mut summary = json!({"id": record.id, "audience": record.audience, "expires_at": record.expires_at, "session": record.session()});
    match &args.out {
        Some(path) => {
            if let Err(e) = write_private_new(path, secret.as_bytes()) {
                let _ = tokens(ctx).revoke(&record.id);
                return Err(CliError::Error(format!("{e}; the credential was revoked")));
            }
            summary["file"] = json!(path.display().to_string());
            if json {
                write_json(io.out, &summary)
            } else {
                write_text(
                    io.out,
                    &format!(
                        "created API credential {} (expires {}), written to {} (0600)\n",
                        record.id,
                        record.expires_at,
                        path.display()
                    ),
                )
            }
        }
        None => {
            let _ = writeln!(
                io.err,
                "created API credential {} (expires {}); it is printed on stdout only",
                record.id, record.expires_at
            );
            if json {
                summary["token"] = json!(token.expose_secret());
                write_json(io.out, &summary)
            } else {
                write_text(io.out, &secret)
            }
        }
    }
}

/// `countersign api token revoke ID`
pub(crate) fn token_revoke(
    ctx: &Context,
    id: &str,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let record = tokens(ctx)
        .revoke(id)
        .map_err(|e| CliError::Refused(e.to_string()))?;
    if json {
        write_json(
            io.out,
            &json!({"id": record.id, "revoked_at": record.revoked_at}),
        )
    } else {
        write_text(io.out, &format!("revoked API credential {}\n", record.id))
    }
}

/// `countersign api token list`
pub(crate) fn token_list(ctx: &Context, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    let now = OffsetDateTime::now_utc();
    let records = tokens(ctx).list().map_err(CliError::error)?;
    if json {
        let items: Vec<_> = records
            .iter()
            .map(|r| json!({"id": r.id, "status": r.status(now), "audience": r.audience, "created_at": r.created_at, "expires_at": r.expires_at, "revoked_at": r.revoked_at}))
            .collect();
        return write_json(io.out, &items);
    }
    if records.is_empty() {
        return write_text(io.out, "no API credentials\n");
    }
    let mut text = String::new();
    for r in &records {
        text.push_str(&format!(
            "{}  {:<7}  expires {}\n",
            r.id,
            r.status(now),
            r.expires_at
        ));
    }
    write_text(io.out, &text)
}

//! `console`, `console pair` and `console sessions list|revoke`: thin
//! commands over the `countersign-console` crate. A pairing link is shown
//! only at the controlling terminal, never on stdout or in a log. Each
//! takes `--as NAME`: one approver's console, sessions and cookie.

use std::net::SocketAddr;
use std::sync::Arc;

use countersign_console::mdns::Advertisement;
use countersign_console::{ConsoleParts, ConsoleState, DEFAULT_LISTEN, SessionStore, TlsListener};
use countersign_identity::shutdown::shutdown_signal;
use countersign_identity::{ApproverName, ConsoleConfig, DEV_NAMED_APPROVERS};
use serde_json::json;
use time::OffsetDateTime;

use crate::Io;
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

/// The console of this installation: the configuration's `[console]`
/// (or its defaults), with `--listen` for the address if given.
pub(crate) fn console_config(
    ctx: &Context,
    listen: Option<SocketAddr>,
) -> Result<ConsoleConfig, CliError> {
    let mut console = match ctx.config.console.clone() {
        Some(console) => console,
        None => ConsoleConfig {
            addr: DEFAULT_LISTEN.parse().map_err(CliError::error)?,
            names: vec![countersign_identity::console_pki::CONSOLE_NAME.to_owned()],
            own_cert: None,
            mdns: false,
        },
    };
    if let Some(addr) = listen {
        console.addr = addr;
    }
    Ok(console)
}

/// The approver a console decides as: `--as NAME`, else `console`.
fn approver_name(as_approver: Option<&ApproverName>) -> Result<ApproverName, CliError> {
    match as_approver {
        Some(name) => Ok(name.clone()),
        None => ApproverName::parse(DEV_NAMED_APPROVERS[0]).map_err(CliError::error),
    }
}

/// The paired browsers of `approver`'s console.
fn sessions(ctx: &Context, as_approver: Option<&ApproverName>) -> Result<SessionStore, CliError> {
    Ok(SessionStore::for_approver(
        ctx.home.root(),
        &approver_name(as_approver)?,
    ))
}

/// The console's state for this installation: the signer as the console's
/// approver (or as the named approver `as_approver`) and as a head (for
/// "approve and run now"), the gate, the registry and that approver's
/// session store in the home.
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
        service: countersign_service::Service::over_gate(head, gate)
            .through(countersign_service::Through::Console),
        registry: ctx.current_registry()?,
        policy: ctx.policy(),
        sessions: sessions(ctx, as_approver)?,
        names: console_config(ctx, None)?.names,
        push_key: ctx.home.vapid_public_path(),
    }))
}

/// The certificate the console serves: the operator's own, or the
/// installation console CA's for the configured names (issued again when
/// the names change or expiry nears).
fn certificate(
    ctx: &Context,
    console: &ConsoleConfig,
) -> Result<countersign_identity::console_pki::ConsoleCert, CliError> {
    match &console.own_cert {
        Some((cert, key)) => {
            // The certificate is public (any mode); the key must be private.
            let cert_pem = std::fs::read_to_string(cert).map_err(|e| {
                CliError::Error(format!("console certificate {}: {e}", cert.display()))
            })?;
            let key_pem = countersign_identity::files::read_private(key)
                .map_err(|e| CliError::Error(format!("console key: {e}")))
                .and_then(|bytes| {
                    String::from_utf8(bytes.to_vec())
                        .map_err(|_| CliError::Error(format!("{} is not PEM text", key.display())))
                })?;
            Ok(countersign_identity::console_pki::ConsoleCert {
                cert_pem,
                key_pem: zeroize::Zeroizing::new(key_pem),
            })
        }
        None => countersign_identity::console_pki::ensure_console_cert(&ctx.home, &console.names)
            .map(|(cert, _)| cert)
            .map_err(|e| CliError::Error(format!("console certificate: {e}"))),
    }
}

/// Build the console's state, load its certificate, listen on every
/// address its names resolve to (or refuse, naming the one taken) and say
/// where it is; with `[console] mdns`, answer for its `.local` names.
/// Used by `console` and `up --console`. Returns the listener, the state,
/// the console's origin and the advertisement (kept while serving).
pub(crate) async fn bind(
    ctx: &Context,
    listen: Option<SocketAddr>,
    as_approver: Option<&ApproverName>,
    io: &mut Io<'_>,
) -> Result<
    (
        TlsListener,
        Arc<ConsoleState>,
        String,
        Option<Advertisement>,
    ),
    CliError,
> {
    let mut console = console_config(ctx, listen)?;
    console.check_mdns().map_err(CliError::Error)?;
    let tls = countersign_console::tls::server_config(&certificate(ctx, &console)?)
        .map_err(CliError::Error)?;
    let state = Arc::new(console_state(ctx, as_approver).await?);
    let listeners = countersign_console::bind::bind_all(&console)
        .await
        .map_err(|e| CliError::Error(e.to_string()))?;
    let addrs: Vec<SocketAddr> = listeners
        .iter()
        .map(tokio::net::TcpListener::local_addr)
        .collect::<Result<_, _>>()
        .map_err(CliError::error)?;
    if let Some(first) = addrs.first() {
        console.addr.set_port(first.port());
    }
    let origin = console.origin();
    let listener = TlsListener::new(listeners, tls, &origin).map_err(CliError::error)?;
    super::metrics::serve(ctx, ctx.config.metrics.console, "console", io).await?;
    let held: Vec<String> = addrs.iter().map(ToString::to_string).collect();
    let _ = writeln!(
        io.err,
        "countersign console listening on {origin}/ (https only; holding {})",
        held.join(", ")
    );
    tracing::info!(%origin, addresses = %held.join(", "), "console listening");
    let advertised = countersign_console::mdns::advertise(&console).map_err(CliError::Error)?;
    if let Some(advertised) = &advertised {
        let _ = writeln!(
            io.err,
            "answering for {} over mDNS with {} (on that address's network only)",
            advertised.names().join(", "),
            advertised.addr()
        );
    }
    Ok((listener, state, origin, advertised))
}

/// Forgets the Web Push device of session `id` of this approver's console.
async fn forget_push_device(
    ctx: &Context,
    as_approver: Option<&ApproverName>,
    id: &str,
) -> Result<(), String> {
    let mut approver = match as_approver {
        Some(name) => ctx.approver_as(Some(name)).await,
        None => ctx.console_approver().await,
    }
    .map_err(|e| e.to_string())?;
    approver
        .set_push_devices(countersign_proto::v1::SetPushDevicesRequest {
            keep: Vec::new(),
            remove: vec![id.to_owned()],
        })
        .await
        .map_err(|status| status.message().to_owned())?;
    Ok(())
}

/// Offer a pairing link at the controlling terminal, if there is one.
pub(crate) fn offer_pairing(
    ctx: &Context,
    origin: &str,
    as_approver: Option<&ApproverName>,
    io: &mut Io<'_>,
) {
    let Ok(mut terminal) = (io.terminal)() else {
        let _ = writeln!(
            io.err,
            "to pair a browser, run `{}` at a terminal",
            pair_command(as_approver)
        );
        return;
    };
    match sessions(ctx, as_approver).and_then(|s| s.create_pairing().map_err(CliError::error)) {
        Ok((code, expires_at)) => {
            let _ = terminal.show(&format!(
                "Pair a browser (one use, until {expires_at}): {origin}/pair/{}\n",
                code.expose_secret()
            ));
        }
        Err(e) => {
            let _ = writeln!(io.err, "cannot create a pairing link: {e}");
        }
    }
}

fn pair_command(as_approver: Option<&ApproverName>) -> String {
    match as_approver {
        Some(name) => format!("countersign console pair --as {name}"),
        None => "countersign console pair".to_owned(),
    }
}

/// `countersign console [--listen ADDR] [--as NAME]`
pub(crate) async fn serve(
    ctx: &Context,
    listen: Option<SocketAddr>,
    as_approver: Option<&ApproverName>,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let (listener, state, origin, advertised) = bind(ctx, listen, as_approver, io).await?;
    offer_pairing(ctx, &origin, as_approver, io);
    let _ = writeln!(io.err, "press Ctrl-C to stop");
    countersign_console::run(listener, state, shutdown_signal())
        .await
        .map_err(CliError::error)?;
    drop(advertised);
    let _ = writeln!(io.err, "console stopped");
    Ok(())
}

/// `countersign console pair [--qr]`: a one-time link, shown at the
/// controlling terminal only (a program reading our stdout never sees it),
/// with `qr` also as a QR code there.
pub(crate) fn pair(
    ctx: &Context,
    listen: Option<SocketAddr>,
    as_approver: Option<&ApproverName>,
    qr: bool,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let origin = console_config(ctx, listen)?.origin();
    let mut terminal = (io.terminal)().map_err(|e| {
        CliError::Refused(format!(
            "pairing needs an interactive terminal and none is available ({e}); no link was created"
        ))
    })?;
    let (code, expires_at) = sessions(ctx, as_approver)?
        .create_pairing()
        .map_err(CliError::error)?;
    let link = format!("{origin}/pair/{}", code.expose_secret());
    let mut shown =
        format!("Open this link in the browser to pair (one use, until {expires_at}):\n  {link}\n");
    if qr {
        shown.push_str("\nor scan it with the phone's camera (the phone must reach the console by this name):\n");
        shown.push_str(&qr_code(&link)?);
    }
    terminal.show(&shown).map_err(CliError::error)?;
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

/// `link` as a QR code for a terminal: two modules per character cell
/// (half blocks), with the quiet zone the standard asks for, each line
/// drawn black on white with ANSI colours. The colours are the code
/// itself, not decoration (without them a dark terminal would show it
/// inverted, which many phone cameras do not read), so `NO_COLOR` does not
/// apply; the link above it is the plain-text way.
pub(crate) fn qr_code(link: &str) -> Result<String, CliError> {
    let code = qrcode::QrCode::with_error_correction_level(link.as_bytes(), qrcode::EcLevel::M)
        .map_err(|e| CliError::Error(format!("cannot draw the pairing link as a QR code: {e}")))?;
    let drawn = code
        .render::<qrcode::render::unicode::Dense1x2>()
        .quiet_zone(true)
        .build();
    let mut text = String::new();
    for line in drawn.lines() {
        text.push_str(&format!("  {QR_COLOURS}{line}{QR_RESET}\n"));
    }
    Ok(text)
}

/// Black on bright white, and back to the terminal's own colours.
const QR_COLOURS: &str = "\x1b[30;107m";
const QR_RESET: &str = "\x1b[0m";

/// `countersign console sessions list`
pub(crate) fn sessions_list(
    ctx: &Context,
    as_approver: Option<&ApproverName>,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let records = sessions(ctx, as_approver)?
        .list()
        .map_err(CliError::error)?;
    let now = OffsetDateTime::now_utc();
    if json {
        let items: Vec<_> = records
            .iter()
            .map(|r| json!({"id": r.id, "status": r.status(now), "device": r.device_name(), "created_at": r.created_at, "last_used_at": r.last_used_at, "expires_at": r.expires_at, "revoked_at": r.revoked_at}))
            .collect();
        return write_json(io.out, &json!({ "sessions": items }));
    }
    if records.is_empty() {
        return write_text(io.out, "no paired browsers\n");
    }
    let mut text = String::new();
    for r in &records {
        text.push_str(&format!(
            "{}  {:<7}  {}  created {}  last used {}  expires {}\n",
            r.id,
            r.status(now),
            r.device_name(),
            r.created_at,
            r.last_used_at.as_deref().unwrap_or("never"),
            r.expires_at
        ));
    }
    write_text(io.out, &text)
}

/// `countersign console sessions revoke ID`: the session ends, and its
/// Web Push device, if any, is forgotten in the ledger through the signer
/// (or by the console's next publication, if the signer cannot be
/// reached now).
pub(crate) async fn sessions_revoke(
    ctx: &Context,
    as_approver: Option<&ApproverName>,
    id: &str,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let record = sessions(ctx, as_approver)?
        .revoke(id)
        .map_err(|e| match e {
            countersign_console::sessions::StoreError::UnknownId(_) => {
                CliError::Refused(e.to_string())
            }
            other => CliError::error(other),
        })?;
    let forgotten = forget_push_device(ctx, as_approver, &record.id).await;
    if json {
        write_json(
            io.out,
            &json!({"id": record.id, "status": "revoked", "revoked_at": record.revoked_at}),
        )?;
    } else {
        write_text(io.out, &format!("revoked console session {}\n", record.id))?;
    }
    if let Err(e) = forgotten {
        let _ = writeln!(
            io.err,
            "the session is revoked, but the signer did not forget its Web Push device: {e}\na running console forgets it within a minute; nothing is pushed to it after {}",
            record.expires_at
        );
    }
    Ok(())
}

//! `countersign notify serve` and `countersign notify status`.
//!
//! `serve` runs the notify process (`countersign-notify`): it takes the
//! notifications the signer records, with the home's notifier certificate
//! (no approval authority), and delivers them. `status` prints this home's
//! delivery state and how many notifications still wait in the signer's
//! outbox: delivery states, attempts, reasons, and nothing else. No
//! notification carries a proof, and neither does this.

use countersign_identity::shutdown::shutdown_signal;
use countersign_notify::Notifier;
use countersign_notify::status::{self, Status};

use crate::Io;
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

/// `countersign notify serve`
pub(crate) async fn serve(ctx: &Context, io: &mut Io<'_>) -> Result<(), CliError> {
    let notifier = Notifier::start(&ctx.home, &ctx.config)
        .await
        .map_err(CliError::error)?;
    let mut exposition = countersign_metrics::Exposition::new();
    notifier.metrics().register(&mut exposition);
    super::metrics::serve_exposition(ctx.config.metrics.notify, exposition, "notify", io).await?;
    let _ = writeln!(
        io.err,
        "countersign notify: delivering the signer's notifications (signer {}); press Ctrl-C to stop",
        ctx.config.signer_addr
    );
    notifier.serve_until(shutdown_signal()).await;
    Ok(())
}

/// `countersign notify status`
pub(crate) async fn status(ctx: &Context, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    let mut status = status::local(&ctx.home, &ctx.config).map_err(CliError::error)?;
    if status.enabled {
        match status::waiting(&ctx.home, &ctx.config).await {
            Ok(n) => status.waiting = Some(n),
            Err(e) => status.signer_error = Some(e),
        }
    }
    if json {
        return write_json(io.out, &status);
    }
    write_text(io.out, &status_text(&status))
}

/// One block per channel: its counts, then one line per delivery.
fn status_text(status: &Status) -> String {
    if !status.enabled {
        return "notifications are off: the configuration has no [notify] section\n".into();
    }
    let mut text = String::new();
    match (status.waiting, &status.signer_error) {
        (Some(0), _) => {}
        (Some(n), _) => text.push_str(&format!(
            "waiting: {n} notifications in the signer's outbox, not yet taken by `countersign notify serve`\n"
        )),
        (None, Some(e)) => text.push_str(&format!("waiting: unknown ({e})\n")),
        (None, None) => {}
    }
    for channel in &status.channels {
        if let Some(why) = &channel.unavailable {
            text.push_str(&format!("{}: unavailable: {why}\n", channel.channel));
            continue;
        }
        text.push_str(&format!(
            "{}: {} delivered, {} pending, {} failed\n",
            channel.channel, channel.delivered, channel.pending, channel.failed
        ));
        for d in &channel.deliveries {
            text.push_str(&format!(
                "  {} {:<9} {} {} attempts {}",
                d.updated_at, d.state, d.proposal_id, d.operation, d.attempts
            ));
            if let Some(device) = &d.device {
                text.push_str(&format!(" device {device}"));
            }
            if let Some(next) = &d.next_attempt_at {
                text.push_str(&format!(" next {next}"));
            }
            if let Some(error) = &d.last_error {
                text.push_str(&format!(" last error: {error}"));
            }
            text.push('\n');
        }
    }
    text
}

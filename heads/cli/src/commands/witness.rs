//! `countersign witness serve` and `countersign witness status`.
//!
//! `serve` runs the witnessing client (`countersign-witness`): it sends
//! each checkpoint the signer's log key signed to the witnesses of the
//! `[tlog] policy` file and stores their verified cosignatures. `up`
//! runs it too, as a task. `status` prints each witness's queue state
//! from the ledger: what it acknowledged, since when it fails, whether it
//! was halted for a rolled-back log. Neither holds or needs a key.

use countersign_identity::shutdown::shutdown_signal;
use countersign_witness::Witnessing;
use serde_json::json;

use crate::Io;
use crate::context::Context;
use crate::error::CliError;
use crate::output::{write_json, write_text};

/// Why there is nothing to run.
const OFF: &str =
    "witnessing is off: the configuration has no [tlog] policy (docs/audit.md, Witnesses)";

/// Starts the witnessing client of `ctx`'s `[tlog]` section, if any.
pub(crate) async fn start(ctx: &Context) -> Result<Option<Witnessing>, CliError> {
    let Some(tlog) = &ctx.config.tlog else {
        return Ok(None);
    };
    let ledger = ctx.ledger().await?;
    Witnessing::start(ledger, tlog)
        .await
        .map(Some)
        .map_err(CliError::error)
}

/// `countersign witness serve`
pub(crate) async fn serve(ctx: &Context, io: &mut Io<'_>) -> Result<(), CliError> {
    let Some(witnessing) = start(ctx).await? else {
        return Err(CliError::Error(OFF.into()));
    };
    let _ = writeln!(
        io.err,
        "countersign witness: sending checkpoints to the witnesses of {}; press Ctrl-C to stop",
        ctx.config
            .tlog
            .as_ref()
            .map(|t| t.policy.display().to_string())
            .unwrap_or_default()
    );
    witnessing.serve_until(shutdown_signal()).await;
    Ok(())
}

/// `countersign witness status`
pub(crate) async fn status(ctx: &Context, json: bool, io: &mut Io<'_>) -> Result<(), CliError> {
    let ledger = ctx.ledger_for_one_command().await?;
    let states = ledger.witness_states().await.map_err(CliError::error)?;
    let latest = ledger
        .latest_log_checkpoint()
        .await
        .map_err(CliError::error)?
        .map(|c| c.size);
    let cosigned = ledger
        .latest_cosigned_checkpoint()
        .await
        .map_err(CliError::error)?
        .map(|(size, _)| size);
    if json {
        let witnesses: Vec<_> = states
            .iter()
            .map(|s| {
                json!({
                    "key": s.witness_key,
                    "acknowledged": s.acknowledged,
                    "unreachable_since": s.unreachable_since,
                    "gap_recorded": s.gap_recorded,
                    "halted": s.halted,
                })
            })
            .collect();
        return write_json(
            io.out,
            &json!({
                "enabled": ctx.config.tlog.is_some(),
                "latest_checkpoint": latest,
                "latest_cosigned": cosigned,
                "witnesses": witnesses,
            }),
        );
    }
    let mut text = String::new();
    if ctx.config.tlog.is_none() {
        text.push_str(OFF);
        text.push('\n');
    }
    let size = |s: Option<u64>| s.map_or("none".to_owned(), |s| s.to_string());
    text.push_str(&format!(
        "latest checkpoint: {}; latest cosigned: {}\n",
        size(latest),
        size(cosigned)
    ));
    for s in &states {
        text.push_str(&format!(
            "{}: acknowledged {}",
            s.witness_key, s.acknowledged
        ));
        if let Some(since) = &s.unreachable_since {
            text.push_str(&format!(", failing since {since}"));
            if s.gap_recorded {
                text.push_str(" (gap recorded)");
            }
        }
        if let Some(reason) = &s.halted {
            text.push_str(&format!(", HALTED: {reason}"));
        }
        text.push('\n');
    }
    write_text(io.out, &text)
}

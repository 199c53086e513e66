//! Spending a proof and reading what happened: `exec` (proof from a file or
//! stdin, never argv), `result`, and `reconcile` for interrupted executions.

use countersign_service::{Done, Operation};
use countersign_verifier::Proof;
use countersign_verifier::ProposalId;

use std::path::Path;

use super::data::{self, unexpected};
use super::read_input;
use crate::Io;
use crate::args::{ExecArgs, ReconcileArgs};
use crate::context::Context;
use crate::error::CliError;

use crate::output::{report_outcome, write_json, write_text};

/// The largest proof file accepted; the verifier enforces its own bound.
const MAX_PROOF_FILE: u64 = 256 * 1024;

/// Read `--proof-file FILE|-` (nothing for `--handoff`): ASCII whitespace
/// around the token is dropped by [`Proof::from_text`]. A file that cannot be
/// read is an error (exit code 1); one that is not text or not shaped like a
/// proof is refused (exit code 3) before anything is contacted.
pub(crate) fn read_proof(path: Option<&Path>, io: &mut Io<'_>) -> Result<Option<Proof>, CliError> {
    let Some(path) = path else {
        return Ok(None);
    };
    let bytes = zeroize::Zeroizing::new(read_input(path, MAX_PROOF_FILE, io)?);
    let bad = |why: String| CliError::Refused(format!("{why}; nothing was applied"));
    let text = std::str::from_utf8(&bytes).map_err(|_| bad("the proof is not text".to_string()))?;
    Proof::from_text(text.to_string())
        .map(Some)
        .map_err(|e| bad(e.to_string()))
}

/// `countersign exec ID --proof-file FILE|-` or `--handoff`, with the proof
/// already read by [`read_proof`].
pub(crate) async fn exec(
    ctx: &Context,
    args: ExecArgs,
    proof: Option<Proof>,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let id = super::resolved(ctx, &args.id).await?;
    let operation = match proof {
        Some(proof) => Operation::ExecuteWithProof { id, proof },
        None => Operation::ExecuteHandoff { id },
    };
    match data::done(data::call(ctx, operation, &args.session).await, json, io)? {
        Done::Outcome {
            proposal_id,
            outcome,
        } => report_outcome(io.out, json, &proposal_id, &outcome),
        other => Err(unexpected(&other)),
    }
}

/// `countersign result ID`
pub(crate) async fn result(
    ctx: &Context,
    id: &ProposalId,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    let operation = Operation::GetResult { id: id.clone() };
    let disposition = match data::done(data::call(ctx, operation, "").await, json, io)? {
        Done::Disposition(d) => d,
        other => return Err(unexpected(&other)),
    };
    if json {
        return write_json(
            io.out,
            &countersign_service::results::disposition(&disposition),
        );
    }
    let mut text = format!("{}  {}\n", id, disposition.status.as_str());
    if !disposition.result.is_null() {
        text.push_str(&format!(
            "result: {}\n",
            countersign_registry::terminal_safe(&disposition.result.to_string())
        ));
    }
    write_text(io.out, &text)
}

/// `countersign reconcile [--resolve ID --applied|--not-applied]`
pub(crate) async fn reconcile(
    ctx: &Context,
    args: ReconcileArgs,
    json: bool,
    io: &mut Io<'_>,
) -> Result<(), CliError> {
    if let Some(id) = args.resolve {
        return super::decide::resolve(ctx, &id, args.applied, json, io).await;
    }
    let mut head = ctx.head().await?;
    let gate = ctx.gate(&mut head).await?;
    // A gated MCP call of a replay-safe tool is called again through the
    // gateway's upstreams, started here as the gateway starts them.
    let (gate, gateway) = super::mcp::gateway(ctx, gate)?;
    let report = gate.reconcile(&mut head).await.map_err(CliError::error);
    if let Some(gateway) = gateway {
        gateway.upstreams().shutdown().await;
    }
    let report = report?;
    if json {
        write_json(io.out, &report)?;
    } else if report.entries.is_empty() {
        write_text(
            io.out,
            "nothing to reconcile: every recorded intent has completed\n",
        )?;
    } else {
        let mut text = String::new();
        for e in &report.entries {
            text.push_str(&format!(
                "{}  {}  {}: {}\n",
                e.proposal_id, e.operation, e.action, e.detail
            ));
        }
        write_text(io.out, &text)?;
    }
    match report.still_uncertain() {
        0 => Ok(()),
        n => Err(CliError::NotApplied(format!(
            "{n} execution(s) remain uncertain"
        ))),
    }
}

//! Rendering for people (text) and programs (`--json`). What is printed is
//! the same information either way; proofs are never part of it.

use std::io::Write;

use countersign_gate::Outcome;
use countersign_ledger::Disposition;
use countersign_proto::v1::ProposalView;
use countersign_registry::terminal_safe;
use serde::Serialize;
use serde_json::{Value, json};

use crate::error::CliError;

/// Write `value` as one line of JSON.
pub(crate) fn write_json(out: &mut dyn Write, value: &impl Serialize) -> Result<(), CliError> {
    let text = serde_json::to_string(value).map_err(CliError::error)?;
    writeln!(out, "{text}").map_err(CliError::error)
}

/// Write text exactly as given.
pub(crate) fn write_text(out: &mut dyn Write, text: &str) -> Result<(), CliError> {
    out.write_all(text.as_bytes()).map_err(CliError::error)
}

/// A proposal as JSON.
pub(crate) fn proposal_json(view: &ProposalView) -> Value {
    let arguments: Value = serde_json::from_str(&view.arguments_json).unwrap_or(Value::Null);
    json!({
        "id": view.id,
        "principal": view.principal,
        "session": view.session,
        "operation": view.operation,
        "arguments": arguments,
        "arguments_sha256": view.arguments_sha256,
        "contract_revision": view.contract_revision,
        "policy_revision": view.policy_revision,
        "note": view.note,
        "preview": view.preview,
        "status": view.status,
        "created_at": view.created_at,
        "reason": if view.reason.is_empty() { Value::Null } else { Value::String(view.reason.clone()) },
        "handoff_waiting": view.handoff_waiting,
    })
}

/// A proposal as text: status line, then the authoritative preview.
pub(crate) fn proposal_text(view: &ProposalView) -> String {
    let mut text = format!(
        "{}  {}  {}  (session {}, created {})\n",
        view.id, view.status, view.operation, view.session, view.created_at
    );
    if !view.reason.is_empty() {
        text.push_str(&format!("reason: {}\n", terminal_safe(&view.reason)));
    }
    if view.handoff_waiting {
        text.push_str("approved for one later execution by a head (handoff waiting)\n");
    }
    text.push_str(&view.preview);
    if !view.preview.ends_with('\n') {
        text.push('\n');
    }
    text
}

/// A recorded disposition as JSON.
pub(crate) fn disposition_json(d: &Disposition) -> Value {
    json!({
        "proposal_id": d.proposal_id,
        "status": d.status.as_str(),
        "result": d.result,
        "completed_at": d.completed_at.as_ref().map(ToString::to_string),
    })
}

/// An execution outcome as JSON, in the shape every head uses: `ok` (this
/// call consumed the proof), `applied` (this call's effect succeeded), and a
/// `reason` code when nothing was consumed.
pub(crate) fn outcome_json(proposal_id: &str, outcome: &Outcome) -> Value {
    let mut value = json!({
        "proposal_id": proposal_id,
        "ok": matches!(outcome, Outcome::Applied(_) | Outcome::Failed(_)),
        "applied": outcome.applied_now(),
        "message": outcome.summary(),
    });
    match outcome {
        Outcome::Refused(refused) => {
            value["status"] = json!("refused");
            value["reason"] = json!(refused.code());
        }
        Outcome::Applied(d) | Outcome::Failed(d) => {
            value["status"] = json!(d.status.as_str());
            value["result"] = d.result.clone();
        }
        Outcome::Recorded(d) => {
            value["status"] = json!("already_used");
            value["reason"] = json!("already_used");
            value["recorded_status"] = json!(d.status.as_str());
            value["result"] = d.result.clone();
        }
        _ => {}
    }
    value
}

/// Print an outcome and turn it into the command's result.
pub(crate) fn report_outcome(
    out: &mut dyn Write,
    json: bool,
    proposal_id: &str,
    outcome: &Outcome,
) -> Result<(), CliError> {
    if json {
        write_json(out, &outcome_json(proposal_id, outcome))?;
    } else {
        let mut text = format!("{}\n", outcome.summary());
        if let Some(d) = outcome.disposition().filter(|d| !d.result.is_null()) {
            text.push_str(&format!(
                "result: {}\n",
                terminal_safe(&d.result.to_string())
            ));
        }
        write_text(out, &text)?;
    }
    match outcome {
        Outcome::Applied(_) => Ok(()),
        Outcome::Refused(r) => Err(CliError::Refused(format!("{r}; nothing was applied"))),
        Outcome::Recorded(_) => Err(CliError::Refused(
            "this proof was already used; nothing was run again".to_string(),
        )),
        other => Err(CliError::NotApplied(other.summary())),
    }
}

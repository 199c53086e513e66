//! The results of an execution as every head returns them: the JSON of
//! an outcome and of a recorded disposition (their schemas are the
//! surface's, `countersign_surface::results`). Here rather than in the
//! surface because they are rendered from the gate's and the ledger's
//! types, which the surface does not link.

use countersign_gate::Outcome;
use countersign_ledger::Disposition;
use countersign_verifier::timestamp;
use serde_json::{Value, json};

/// A recorded disposition.
pub fn disposition(d: &Disposition) -> Value {
    json!({
        "proposal_id": d.proposal_id,
        "status": d.status.as_str(),
        "result": d.result,
        "error": d.error,
        "completed_at": d.completed_at.and_then(|t| timestamp::format_whole_seconds(t).ok()),
    })
}

/// An execution outcome: `ok` (this call consumed the proof), `applied`
/// (this call's effect succeeded), `status`, a `reason` code whenever
/// nothing was consumed, and a `message` that says plainly what happened.
pub fn outcome(proposal_id: &str, outcome: &Outcome) -> Value {
    let mut value = json!({
        "proposal_id": proposal_id,
        "ok": matches!(
            outcome,
            Outcome::Applied(_) | Outcome::Failed(_) | Outcome::Uncertain { .. }
        ),
        "applied": outcome.applied_now(),
        "message": outcome.summary(),
    });
    match outcome {
        Outcome::Refused(refused) => {
            value["status"] = json!("refused");
            value["reason"] = json!(refused.code().as_str());
        }
        Outcome::Applied(d) | Outcome::Failed(d) | Outcome::Uncertain { disposition: d, .. } => {
            value["status"] = json!(d.status.as_str());
            value["result"] = d.result.clone();
        }
        Outcome::Recorded(d) => {
            value["status"] = json!("already_used");
            value["reason"] = json!("already_used");
            value["recorded_status"] = json!(d.status.as_str());
            value["result"] = d.result.clone();
        }
    }
    value
}

//! The `hook` effect of the agent operations: a coding agent's hook asked
//! about one tool call, and the proof lets this head answer "allow" once.
//! The proof is consumed with an intent, and the answer is recorded as the
//! completion; only after that does the hook tell the agent (its own
//! runtime runs the call). So an intent left open by a hook that stopped
//! means the agent was never told to run the call: replaying it records
//! exactly that, as a failure, and never an allow.
//!
//! Only a hook head runs it (`Means::answers_hooks`); reconcile settles an
//! interrupted one from any head. This module must not run the call.

use countersign_ledger::{EffectOutcome, Intent};
use countersign_registry::effect::{EffectKind, HookAnswer};
use serde_json::{Value, json};

use super::{Apply, Approved, Ran, Replay, Running};
use crate::execute::Gate;
use crate::outcome::Outcome;
use crate::reconcile::Replayed;

/// The result recorded for an allowed call: what the hook answered.
pub const ANSWERED_ALLOW: &str = "allow";

/// The failure recorded for a hook that stopped before it answered.
pub const NEVER_ANSWERED: &str =
    "the hook stopped before it answered, so the agent was not told to run the call";

/// This head answers hooks.
pub(super) struct Answering;

impl Apply for Answering {
    fn execute<'a>(&'a self, gate: &'a Gate, approved: Approved<'a>) -> Running<'a, Outcome> {
        Box::pin(async move {
            let lease = HookAnswer.intent_lease().unwrap_or_default();
            gate.two_phase(approved, lease, async |_: &Intent| {
                Ok(Ran::Completed(EffectOutcome::Applied {
                    result: json!({ "answer": ANSWERED_ALLOW }),
                }))
            })
            .await
        })
    }

    fn replay<'a>(&'a self, replay: Replay<'a>) -> Running<'a, Replayed> {
        Box::pin(async move {
            let outcome = EffectOutcome::Failed {
                error: NEVER_ANSWERED.to_owned(),
                result: Value::Null,
            };
            replay.completed(outcome).await
        })
    }
}

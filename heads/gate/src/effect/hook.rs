//! The `hook` effect of the agent operations: a coding agent's hook asked
//! about one tool call, and the proof lets this head answer "allow" once.
//! The answer is the effect: the proof is consumed and "allow" recorded as
//! its completion in one ledger transaction
//! ([`countersign_ledger::Ledger::consume_recorded`]), and only after that
//! commit does the hook tell the agent (its own runtime runs the call). A
//! hook that stops before the commit consumed nothing; one that stops
//! after it never told the agent, and the same call asked again gets the
//! recorded allow. An intent left open (by a ledger consumed through the
//! two-phase flow before this one) means the agent was never told to run
//! the call: replaying it records exactly that, as a failure, and never an
//! allow.
//!
//! Only a hook head runs it (`Means::answers_hooks`); reconcile settles an
//! interrupted one from any head. This module must not run the call.

use countersign_ledger::{Consumed, EffectOutcome};
use serde_json::{Value, json};

use super::{Apply, Approved, Replay, Running, refused_consumption};
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
    /// The consumption and the answer commit together, or neither does.
    fn execute<'a>(&'a self, gate: &'a Gate, approved: Approved<'a>) -> Running<'a, Outcome> {
        Box::pin(async move {
            let answer = json!({ "answer": ANSWERED_ALLOW });
            match gate
                .ledger()
                .consume_recorded(approved.verified, &answer)
                .await
            {
                Ok(Consumed::Completed(disposition)) => Ok(Outcome::Applied(disposition)),
                Ok(Consumed::Replay(disposition)) => Ok(Outcome::Recorded(disposition)),
                Err(e) => refused_consumption(approved.proposal_id, e),
            }
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

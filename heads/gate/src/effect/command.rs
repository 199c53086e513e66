//! The `command` effect: a fixed program run without a shell (the
//! `countersign-process` runner), the intent's canonical arguments on its
//! stdin and its nonce in the environment, between the intent and the
//! completion transactions. Its result is the program's exit, stdout and
//! stderr as the runner reports them; it applied if the program succeeded.
//! A program that never started is a definite failure; one the gate lost
//! track of leaves the intent open for reconcile.

use countersign_ledger::{EffectOutcome, Intent};
use countersign_process::{CommandSpec, run_command};
use countersign_registry::effect::{Command, intent_lease_for};

use super::{Apply, Approved, Ran, Replay, Running};
use crate::execute::{Gate, GateError};
use crate::outcome::Outcome;
use crate::reconcile::Replayed;

/// What to run for the registry's `command` definition.
pub(super) fn spec(command: &Command) -> CommandSpec {
    CommandSpec {
        program: command.program.clone(),
        args: command.args.clone(),
        timeout: std::time::Duration::from_secs(command.timeout_secs),
    }
}

impl Apply for CommandSpec {
    fn execute<'a>(&'a self, gate: &'a Gate, approved: Approved<'a>) -> Running<'a, Outcome> {
        Box::pin(gate.two_phase(
            approved,
            intent_lease_for(self.timeout),
            async |intent: &Intent| Ok(Ran::Completed(run(self, intent).await?)),
        ))
    }

    fn replay<'a>(&'a self, replay: Replay<'a>) -> Running<'a, Replayed> {
        Box::pin(async move {
            let outcome = run(self, replay.intent).await?;
            replay.completed(outcome).await
        })
    }
}

/// Run the program with the arguments of the intent, which the ledger
/// recorded from the verified claims.
async fn run(spec: &CommandSpec, intent: &Intent) -> Result<EffectOutcome, GateError> {
    let outcome = match run_command(spec, intent.arguments_json(), intent.nonce()).await {
        Ok(outcome) => outcome,
        // Lost track of a running program: whether it applied is
        // unknown, so the intent stays open (uncertain) for reconcile.
        Err(e) if e.started() => return Err(GateError::Effect(e.to_string())),
        // The program never started: a definite failure.
        Err(e) => {
            return Ok(EffectOutcome::Failed {
                error: format!("the command could not run: {e}"),
                result: serde_json::Value::Null,
            });
        }
    };
    let result = serde_json::to_value(&outcome).map_err(|e| GateError::Effect(e.to_string()))?;
    Ok(if outcome.succeeded() {
        EffectOutcome::Applied { result }
    } else {
        EffectOutcome::Failed {
            error: outcome.describe_failure(),
            result,
        }
    })
}

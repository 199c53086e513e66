//! The `builtin` effect: one of the ledger's built-in effects over its
//! state store, consumed, applied and completed in the ledger's ONE
//! transaction, atomic with its authorization. It never leaves an intent
//! behind; one can still exist if something called
//! `Ledger::begin_consume` for it directly (or a ledger written before the
//! one-transaction consume), and reconcile completes a replay-safe one in
//! one transaction that applies the effect unless the state store already
//! records it under the nonce. This module must not run anything outside
//! the ledger.

use countersign_ledger::{Consumed, DispositionStatus};
use countersign_registry::effect::Builtin;

use super::{Apply, Approved, Replay, Running, refused_consumption};
use crate::execute::Gate;
use crate::outcome::Outcome;
use crate::reconcile::Replayed;

impl Apply for Builtin {
    /// All of it commits, or nothing does.
    fn execute<'a>(&'a self, gate: &'a Gate, approved: Approved<'a>) -> Running<'a, Outcome> {
        Box::pin(async move {
            match gate
                .ledger()
                .consume_builtin(approved.verified, &self.name)
                .await
            {
                Ok(Consumed::Completed(disposition)) => Ok(match disposition.status {
                    DispositionStatus::Applied => Outcome::Applied(disposition),
                    // A completed consumption is never uncertain; were it
                    // so, it did not apply, which is what `failed` tells
                    // the caller.
                    DispositionStatus::Failed | DispositionStatus::Uncertain => {
                        Outcome::Failed(disposition)
                    }
                }),
                Ok(Consumed::Replay(disposition)) => Ok(Outcome::Recorded(disposition)),
                Err(e) => refused_consumption(approved.proposal_id, e),
            }
        })
    }

    fn replay<'a>(&'a self, replay: Replay<'a>) -> Running<'a, Replayed> {
        Box::pin(async move {
            let ledger = replay.gate.ledger();
            let (outcome, _) = ledger.apply_builtin_and_complete(replay.intent).await?;
            Ok(Replayed::ran_again(&outcome))
        })
    }
}

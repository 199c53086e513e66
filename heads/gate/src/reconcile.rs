//! Resolve intents that were recorded but never completed (a crash, a kill,
//! a lost database connection between the two transactions of an effect
//! outside the ledger).
//!
//! Only an exact recorded effect becomes done. An operation declared
//! replay-safe is run again with the same nonce as its idempotency key,
//! and only under the contract a person approved: the registry's current
//! definition must have the contract revision recorded with the intent (the
//! proof's `crev`), so an edit of the registry (another program, a flag
//! turned replay-safe) never runs. Anything else stays uncertain until a
//! person resolves it. Nothing here runs an effect that is not replay-safe,
//! and nothing touches an intent whose lease has not ended: its head may
//! still be running the effect.
//!
//! How an intent is replayed is its kind's (`effect/`): a command runs
//! again; a builtin is completed by the ledger in one transaction that
//! applies it unless the state store already records it under the nonce; a
//! webhook is re-sent once per pass with a proof the signer re-issues for
//! it (the same claims and `jti`, a fresh lifetime; see
//! `effect/webhook/resend.rs`), since the ledger keeps no proof and a
//! receiver checks the proof itself. The re-issued proof is never consumed:
//! the intent's nonce already is, and the answer completes the recorded
//! intent.

use countersign_ledger::{EffectOutcome, Intent, Interrupted};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_registry::Effect;
use serde::Serialize;
use tonic::transport::Channel;

use crate::effect;
use crate::execute::{Gate, GateError};

/// What reconcile did with one interrupted intent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReconcileEntry {
    /// The proposal whose intent was interrupted.
    pub proposal_id: String,
    /// The operation.
    pub operation: String,
    /// `replayed`, `replay_failed`, `running` (its head may still be
    /// executing it; untouched), `still_uncertain`, or `resolved_meanwhile`
    /// (a webhook re-sent and answered while a person resolved it: their
    /// resolution stands).
    pub action: &'static str,
    /// A sentence for the person reading the report.
    pub detail: String,
}

/// Everything one reconcile pass did.
#[derive(Debug, Clone, PartialEq, Serialize, Default)]
pub struct ReconcileReport {
    /// One entry per interrupted intent, oldest first.
    pub entries: Vec<ReconcileEntry>,
}

impl ReconcileReport {
    /// How many intents remain uncertain after this pass (including those
    /// still running).
    pub fn still_uncertain(&self) -> usize {
        self.entries
            .iter()
            .filter(|e| matches!(e.action, "still_uncertain" | "running"))
            .count()
    }
}

impl Gate {
    /// Resolve every interrupted intent as the module doc describes; `head`
    /// is this head's signer connection, which re-issues the proof of a
    /// replay-safe webhook.
    pub async fn reconcile(
        &self,
        head: &mut SignerClient<Channel>,
    ) -> Result<ReconcileReport, GateError> {
        let mut report = ReconcileReport::default();
        for found in self.ledger().interrupted().await? {
            report.entries.push(self.reconcile_one(head, &found).await?);
        }
        Ok(report)
    }

    async fn reconcile_one(
        &self,
        head: &mut SignerClient<Channel>,
        found: &Interrupted,
    ) -> Result<ReconcileEntry, GateError> {
        let intent: &Intent = &found.intent;
        let entry = |action, detail: String| ReconcileEntry {
            proposal_id: intent.proposal_id().to_string(),
            operation: intent.operation().to_string(),
            action,
            detail,
        };
        if found.running {
            return Ok(entry(
                "running",
                format!(
                    "its head may still be running it (lease until {}); left alone",
                    countersign_verifier::timestamp::format(intent.lease_until())
                        .unwrap_or_else(|_| "later".into())
                ),
            ));
        }
        let registry = self.current_registry()?;
        let Some(operation) = registry.get(intent.operation()) else {
            return Ok(entry(
                "still_uncertain",
                "the operation is no longer in the registry; resolve it by hand".into(),
            ));
        };
        if operation.contract_revision() != intent.contract_revision() {
            return Ok(entry(
                "still_uncertain",
                format!(
                    "{} changed since it was approved (contract {} then, {} now): it is never replayed under another contract; check whether it happened, then run `countersign reconcile --resolve {} --applied` or `--not-applied`",
                    intent.operation(),
                    short(intent.contract_revision()),
                    short(operation.contract_revision()),
                    intent.proposal_id()
                ),
            ));
        }
        if !operation.replay_safe {
            let ask = match &operation.effect {
                Effect::Webhook(_) => format!(
                    "ask the receiver whether it handled Idempotency-Key {}",
                    intent.nonce()
                ),
                Effect::Mcp(tool) => format!(
                    "ask the upstream {} whether its tool {} ran; only a tool in its `replay_safe` list in gateway.toml is called again",
                    tool.upstream, tool.tool
                ),
                _ => "look at what it acts on".to_owned(),
            };
            return Ok(entry(
                "still_uncertain",
                format!(
                    "{} is not replay-safe, so it is never run or sent again; check whether it happened ({ask}), then run `countersign reconcile --resolve {} --applied` or `--not-applied`",
                    intent.operation(),
                    intent.proposal_id()
                ),
            ));
        }
        // Settling a hook's interrupted answer answers no agent: any head
        // may record that the agent was never told to run the call.
        let means = effect::Means {
            answers_hooks: true,
            ..self.means()
        };
        let apply = match effect::apply(&operation.effect, means) {
            Ok(apply) => apply,
            Err(kind) => {
                return Ok(entry(
                    "still_uncertain",
                    format!(
                        "{} has a {kind} effect, which this head does not run; resolve it by hand",
                        intent.operation()
                    ),
                ));
            }
        };
        let replay = effect::Replay {
            gate: self,
            head,
            intent,
        };
        let replayed = apply.replay(replay).await?;
        Ok(entry(replayed.action, replayed.detail))
    }
}

/// What replaying one interrupted intent came to, as its kind tells it:
/// the report's action and sentence.
pub(crate) struct Replayed {
    action: &'static str,
    detail: String,
}

impl Replayed {
    /// A [`ReconcileEntry`]'s `action` and `detail`.
    pub(crate) fn new(action: &'static str, detail: String) -> Self {
        Replayed { action, detail }
    }

    /// An effect run again with the same nonce as idempotency key, which
    /// came to `outcome` (recorded as its completion).
    pub(crate) fn ran_again(outcome: &EffectOutcome) -> Self {
        match outcome {
            EffectOutcome::Applied { .. } => Replayed::new(
                "replayed",
                "replay-safe: ran again with the same nonce as idempotency key, and it succeeded"
                    .into(),
            ),
            EffectOutcome::Failed { .. } => Replayed::new(
                "replay_failed",
                "replay-safe: ran again with the same nonce as idempotency key, and it failed; recorded as failed".into(),
            ),
        }
    }
}

/// The first 12 characters of a revision, for a sentence (`unknown` if the
/// intent predates recorded revisions).
fn short(revision: &str) -> &str {
    match revision.get(..12) {
        Some(head) => head,
        None if revision.is_empty() => "unknown",
        None => revision,
    }
}

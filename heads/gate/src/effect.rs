//! How this head applies each effect kind: one module per kind it runs
//! (`builtin`, `command`, `webhook`, `mcp`, `pin`, `hook`), each an [`Apply`]: how it consumes a
//! verified proof and runs, what it records as its result, and how
//! reconcile settles one of its interrupted intents. The kind's pure
//! properties (its checks, its lease, whether its proof may be re-issued)
//! are the registry's `EffectKind`.
//!
//! [`apply`] decides from the registry's definition, BEFORE anything is
//! consumed, whether this head runs the kind. Its match is exhaustive: a
//! new kind does not compile here until someone decides whether this head
//! runs it or refuses it with `unsupported_effect`, which burns nothing
//! because no proof has been consumed yet. After consumption there is no
//! fallback that could strand a spent proof: a kind applied inside the
//! ledger never reaches the two-phase flow, which only kinds outside it
//! call.

mod builtin;
mod command;
pub mod hook;
pub mod mcp;
mod pin;
pub mod webhook;

use std::future::Future;
use std::pin::Pin;

use countersign_ledger::{ConsumeStart, EffectOutcome, Intent, LedgerError};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_registry::Effect;
use countersign_verifier::{Proof, VerifiedProof};
use tonic::transport::Channel;

use crate::execute::{Gate, GateError};
use crate::fault::{FaultPoint, crash_point};
use crate::outcome::{Outcome, Refused};
use crate::reconcile::Replayed;

/// The future of an effect's step, borrowing what it runs with.
pub(crate) type Running<'a, T> = Pin<Box<dyn Future<Output = Result<T, GateError>> + Send + 'a>>;

/// A proof this head verified for a proposal, not yet consumed.
pub(crate) struct Approved<'a> {
    /// The proposal it approves.
    pub(crate) proposal_id: &'a str,
    /// The proof, verified against the proposal as stored.
    pub(crate) verified: &'a VerifiedProof,
    /// The proof as presented (a webhook's receiver checks it itself).
    pub(crate) proof: &'a Proof,
    /// An upstream tool's definition, asked for early by this execution.
    pub(crate) tool_check: Option<mcp::ToolCheck>,
}

impl Approved<'_> {
    /// The early tool check, for the one step that uses it.
    pub(crate) fn take_tool_check(&mut self) -> Option<mcp::ToolCheck> {
        self.tool_check.take()
    }
}

/// How this head applies one effect kind. Implemented once per kind it
/// runs, in that kind's module.
pub(crate) trait Apply: Send + Sync {
    /// Consume the approved proof and apply the effect as this kind does:
    /// inside the ledger's one transaction, or between an intent and a
    /// completion ([`Gate::two_phase`]). The outcome says whether it ran.
    fn execute<'a>(&'a self, gate: &'a Gate, approved: Approved<'a>) -> Running<'a, Outcome>;

    /// Settle an interrupted intent of this kind whose operation is
    /// replay-safe and unchanged since it was approved (reconcile checked
    /// both, and that no head may still be running it): apply it again with
    /// the same nonce as idempotency key, or leave it uncertain, and say
    /// which.
    fn replay<'a>(&'a self, replay: Replay<'a>) -> Running<'a, Replayed>;
}

/// An interrupted intent to replay, and what replaying it may use.
pub(crate) struct Replay<'a> {
    /// The gate reconciling it.
    pub(crate) gate: &'a Gate,
    /// This head's signer connection (which re-issues a webhook's proof).
    pub(crate) head: &'a mut SignerClient<Channel>,
    /// The intent as the ledger recorded it.
    pub(crate) intent: &'a Intent,
}

/// What a head holds that some effect kinds need, beyond the ledger.
#[derive(Clone, Default)]
pub(crate) struct Means {
    /// The gateway's upstream MCP servers (`mcp`): only the gateway has them.
    pub(crate) mcp: Option<std::sync::Arc<dyn mcp::McpUpstreams>>,
    /// The pins file beside the registry file this head follows (`pin`):
    /// none for a registry not read from a file.
    pub(crate) pins_file: Option<std::path::PathBuf>,
    /// Whether this head answers a coding agent's hook (`hook`): only a
    /// hook head does, and reconcile settles an interrupted answer.
    pub(crate) answers_hooks: bool,
}

impl Replay<'_> {
    /// Record `outcome`, which running the effect again came to, as the
    /// intent's completion.
    pub(crate) async fn completed(&self, outcome: EffectOutcome) -> Result<Replayed, GateError> {
        self.gate.ledger().complete(self.intent, &outcome).await?;
        Ok(Replayed::ran_again(&outcome))
    }
}

/// How this head applies `effect` with `means`, or the kind's name if it
/// does not run it (reported as `unsupported_effect`, or left to a person
/// by reconcile; nothing is consumed).
pub(crate) fn apply(effect: &Effect, means: Means) -> Result<Box<dyn Apply>, &'static str> {
    let Means {
        mcp,
        pins_file,
        answers_hooks,
    } = means;
    match effect {
        Effect::Builtin(builtin) => Ok(Box::new(builtin.clone())),
        Effect::Command(command) => Ok(Box::new(command::spec(command))),
        Effect::Webhook(webhook) => Ok(Box::new(webhook::WebhookSpec::from_definition(webhook)?)),
        // Only the gateway, which holds the upstreams' connections and
        // credentials, calls an upstream tool.
        Effect::Mcp(tool) => match mcp {
            Some(upstreams) => Ok(Box::new(mcp::McpCall {
                tool: tool.clone(),
                upstreams,
            })),
            None => Err(effect.kind().name()),
        },
        // Written beside the registry file this head reads.
        Effect::Pin => match pins_file {
            Some(path) => Ok(Box::new(pin::PinWrite { path })),
            None => Err(effect.kind().name()),
        },
        // A person's approval of rule.create creates the rule in the
        // signer; no proof exists for a head to apply.
        Effect::Rule => Err(effect.kind().name()),
        // Only the hook an agent asked answers it.
        Effect::Hook if answers_hooks => Ok(Box::new(hook::Answering)),
        Effect::Hook => Err(effect.kind().name()),
    }
}

/// What running an effect outside the ledger came to.
pub(crate) enum Ran {
    /// It ran, or definitely never started: a completion to record.
    Completed(EffectOutcome),
    /// It may have happened and no answer came: the intent stays open
    /// (uncertain), nothing is recorded and nothing is run again.
    MaybeApplied(String),
}

impl Gate {
    /// Apply an effect outside the ledger: one transaction consumes the
    /// proof and records the intent, leased to this head for `lease` so that
    /// reconcile and a person's resolution wait for it; `run` runs the
    /// effect from the recorded intent; a second transaction records the
    /// completion. A crash in between leaves it `uncertain` for reconcile.
    pub(crate) async fn two_phase(
        &self,
        approved: Approved<'_>,
        lease: time::Duration,
        run: impl AsyncFnOnce(&Intent) -> Result<Ran, GateError>,
    ) -> Result<Outcome, GateError> {
        let proposal_id = approved.proposal_id;
        let intent = match self.ledger().begin_consume(approved.verified, lease).await {
            Ok(ConsumeStart::Fresh(intent)) => intent,
            Ok(ConsumeStart::Replay(disposition)) => return Ok(Outcome::Recorded(disposition)),
            Err(e) => return refused_consumption(proposal_id, e),
        };
        tracing::info!(proposal_id, nonce = %intent.nonce(), "intent recorded; running effect");
        crash_point(FaultPoint::IntentRecorded);
        let effect_outcome = match run(&intent).await? {
            Ran::Completed(outcome) => outcome,
            Ran::MaybeApplied(reason) => return self.left_uncertain(proposal_id, reason).await,
        };
        crash_point(FaultPoint::EffectRan);
        let disposition = self.ledger().complete(&intent, &effect_outcome).await?;
        Ok(match effect_outcome {
            EffectOutcome::Applied { .. } => Outcome::Applied(disposition),
            EffectOutcome::Failed { .. } => Outcome::Failed(disposition),
        })
    }

    /// The outcome of an effect that may have happened: nothing is
    /// completed, so the ledger reads the open intent as `uncertain`.
    async fn left_uncertain(
        &self,
        proposal_id: &str,
        reason: String,
    ) -> Result<Outcome, GateError> {
        tracing::warn!(proposal_id, %reason, "effect outcome unknown; left uncertain");
        match self.ledger().disposition(proposal_id).await? {
            Some(disposition) => Ok(Outcome::Uncertain {
                disposition,
                reason,
            }),
            None => Err(GateError::Effect(reason)),
        }
    }
}

/// A consumption the ledger did not make: its refusal (nothing was
/// applied), or the fault.
pub(crate) fn refused_consumption(
    proposal_id: &str,
    error: LedgerError,
) -> Result<Outcome, GateError> {
    match error {
        LedgerError::Refused(refusal) => {
            tracing::info!(proposal_id, code = refusal.code(), "consumption refused");
            Ok(Outcome::Refused(Refused::Ledger(refusal)))
        }
        e => Err(e.into()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use countersign_registry::{Registry, Schemas, Sources, effect, gateway};

    use super::*;

    /// The default registry and a webhook: every kind the registry has.
    fn every_kind() -> Registry {
        let webhook = r#"
[[operation]]
name = "receiver.notify"
description = "Notify the receiver"
class = "write"
replay_safe = false
preview = "Notify"
effect = { kind = "webhook", url = "https://localhost:8443/hook", timeout_secs = 5, trust_roots = "/etc/ca.pem" }
schema = { type = "object", additionalProperties = false }
"#;
        let text = format!("{}\n{webhook}", Registry::default_toml());
        let mut pins = gateway::Pins::empty();
        let tool = gateway::ToolDefinition {
            name: "write_file".into(),
            description: None,
            input_schema: serde_json::Map::from_iter([("type".into(), "object".into())]),
            shown: serde_json::Map::new(),
        };
        pins.pin("files", tool).unwrap_or_else(|e| panic!("{e}"));
        let sources = Sources {
            registry: text,
            gateway: Some(
                "[[upstream]]\nname = \"files\"\n[upstream.stdio]\nprogram = \"/bin/true\"\n"
                    .into(),
            ),
            pins: Some(pins.to_text()),
        };
        Registry::from_sources(&sources, Schemas::Compiled).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_effect_kind_is_either_applied_or_refused_before_consumption() {
        let registry = every_kind();
        let mut kinds = BTreeSet::new();
        for op in registry.operations() {
            let runs = match &op.effect {
                Effect::Builtin(_) | Effect::Command(_) | Effect::Webhook(_) => true,
                // Only a gate given the gateway's upstreams runs these.
                Effect::Mcp(_) | Effect::Pin | Effect::Rule | Effect::Hook => false,
            };
            match apply(&op.effect, Means::default()) {
                Ok(_) => assert!(runs, "{} is applied", op.name),
                Err(kind) => {
                    assert!(!runs, "{} is refused", op.name);
                    assert_eq!(kind, op.effect.kind().name(), "a refusal names the kind");
                }
            }
            kinds.insert(op.effect.kind().name());
        }
        assert_eq!(
            kinds,
            BTreeSet::from([
                "builtin", "command", "hook", "mcp", "pin", "rule", "webhook"
            ]),
            "one of every kind"
        );
    }

    #[test]
    fn a_webhook_whose_url_does_not_parse_is_refused_before_consumption() {
        // The registry refuses such a URL at load; this guards a registry
        // built some other way.
        let webhook = Effect::Webhook(effect::Webhook {
            url: "ftp://localhost/hook".into(),
            timeout_secs: 5,
            accept_status: vec![200],
            trust_roots: None,
            allow_plain_http_loopback: false,
        });
        assert_eq!(apply(&webhook, Means::default()).err(), Some("webhook"));
    }
}

//! Execute an approved proposal: verify the proof against the current
//! registry and policy, then have the operation's effect kind (`effect/`)
//! consume it with the arguments from the verified claims. A builtin effect
//! (over the ledger's state store) is consumed, applied and completed in ONE
//! ledger transaction, atomic with its authorization. An effect outside the
//! ledger (`command`, `webhook`) is two-phase: one transaction records the
//! intent, the effect runs, a second records the completion; a crash in
//! between leaves it `uncertain` for `reconcile`.
//!
//! The effect never reads an argument from the caller: only from the claims
//! the signer signed, which the verifier has bound to the stored proposal.
//! An operation the registry marks `require_passkey` runs only on a proof
//! whose claims say the signer checked a passkey with user verification.

use countersign_proto::reason::Reason;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use countersign_ledger::{Intent, Ledger, LedgerError, ProposalRecord};
use countersign_metrics::{ConsumeOutcome, GateMetrics};
use countersign_registry::{CurrentRegistry, Registry};
use countersign_verifier::{
    Expectations, KeyRing, Principal, Proof, ProposalId, Refusal, Session, VerifiedProof, verify,
};
use time::OffsetDateTime;

use crate::effect::mcp::McpUpstreams;
use crate::effect::{self, Approved};
use crate::live_keys::{KeyRefresh, LiveKeys};
use crate::outcome::{Outcome, Refused};

/// A fault the gate could not turn into a decision. The caller reports it as
/// an error. For a builtin effect nothing was applied (its one transaction
/// rolled back); for an effect outside the ledger, whether anything was
/// applied is unknown only if the fault happened after the intent was
/// recorded, which `reconcile` resolves.
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    /// The ledger failed (unavailable, I/O, constraint).
    #[error("ledger: {0}")]
    Ledger(#[from] LedgerError),
    /// The registry file could not be read or loaded at this execution.
    #[error("registry: {0}")]
    Registry(String),
    /// The signer failed while handing over a proof.
    #[error("signer: {0}")]
    Signer(String),
    /// The effect could not be started or supervised.
    #[error("effect: {0}")]
    Effect(String),
}

/// The verifier/effect service of one head: the public keys, the ledger, the
/// operation registry and this head's identity.
#[derive(Clone)]
pub struct Gate {
    ledger: Ledger,
    registry: Arc<CurrentRegistry>,
    keys: Arc<LiveKeys>,
    principal: Principal,
    audience: String,
    policy_revision: String,
    max_lifetime: time::Duration,
    /// What this gate (and every clone of it) counts.
    metrics: GateMetrics,
    /// The gateway's upstream MCP servers, for a head that runs `mcp`
    /// effects; `None` refuses them before consumption.
    mcp: Option<Arc<dyn McpUpstreams>>,
    /// Whether this gate answers a coding agent's hook (`hook` effects).
    answers_hooks: bool,
}

impl Gate {
    /// A gate for `principal`, accepting proofs for `audience` issued under
    /// `policy_revision`, with its own lifetime ceiling.
    pub fn new(
        ledger: Ledger,
        registry: Arc<CurrentRegistry>,
        keys: KeyRing,
        principal: Principal,
        audience: String,
        policy_revision: String,
        max_lifetime: time::Duration,
    ) -> Self {
        Self {
            ledger,
            registry,
            keys: Arc::new(LiveKeys::fixed(keys)),
            principal,
            audience,
            policy_revision,
            max_lifetime,
            metrics: GateMetrics::default(),
            mcp: None,
            answers_hooks: false,
        }
    }

    /// The same gate running `mcp` effects through `upstreams` (the
    /// gateway's connections): only the head that holds them does.
    pub fn with_mcp_upstreams(mut self, upstreams: Arc<dyn McpUpstreams>) -> Self {
        self.mcp = Some(upstreams);
        self
    }

    /// The same gate answering a coding agent's hook: it applies the agent
    /// operations' `hook` effect (records the answer "allow" as the
    /// completion); only `countersign hook` makes one.
    pub fn answering_hooks(mut self) -> Self {
        self.answers_hooks = true;
        self
    }

    /// What this gate runs effects with beyond the ledger: the upstreams
    /// it calls `mcp` effects through, if any, and the pins file beside
    /// the registry file it follows.
    pub(crate) fn means(&self) -> effect::Means {
        effect::Means {
            mcp: self.mcp.clone(),
            pins_file: self
                .registry
                .path()
                .and_then(Path::parent)
                .map(|dir| dir.join(countersign_registry::gateway::PINS_FILE)),
            answers_hooks: self.answers_hooks,
        }
    }

    /// Follow the signer's key set through `signer` (the head's
    /// connection): fetch it again when a proof names an unknown key id or
    /// the ring is older than `refresh.max_age`, at most once per
    /// `refresh.min_interval` across every clone of this gate. A key the
    /// signer retired is refused (`unknown_key_id`) from the next fetch on.
    pub fn following_keys(
        mut self,
        signer: countersign_proto::v1::signer_client::SignerClient<tonic::transport::Channel>,
        refresh: KeyRefresh,
    ) -> Self {
        let ring = self.keys.fixed_ring();
        self.keys = Arc::new(LiveKeys::new(ring, Some(signer), refresh));
        self
    }

    /// The same gate counting into `metrics` (shared with whatever else
    /// counts there, such as another head's gate in the same process).
    /// The ledger's group-commit sizes go there too: the ledger is shared
    /// by the process's gates, which share one set of metrics.
    pub fn with_metrics(mut self, metrics: GateMetrics) -> Self {
        let batches = metrics.clone();
        self.ledger.observe_batches(Arc::new(move |batch| {
            if batch.consumptions > 0 {
                batches.batch_committed(batch.consumptions);
            }
        }));
        self.metrics = metrics;
        self
    }

    /// What this gate counts: a head registers it in its `/metrics`.
    pub fn metrics(&self) -> &GateMetrics {
        &self.metrics
    }

    /// Counts one presentation of a proof (by [`Gate::execute`] or
    /// [`Gate::execute_handoff`]) that came to `result`, begun at `started`.
    pub(crate) fn count(&self, result: &Result<Outcome, GateError>, started: Instant) {
        let (outcome, reason) = match result {
            Ok(Outcome::Applied(_)) => (ConsumeOutcome::Applied, None),
            Ok(Outcome::Failed(_)) => (ConsumeOutcome::Failed, None),
            Ok(Outcome::Uncertain { .. }) => (ConsumeOutcome::Uncertain, None),
            Ok(Outcome::Recorded(_)) => (ConsumeOutcome::Replay, None),
            Ok(Outcome::Refused(refused)) => {
                (ConsumeOutcome::Refused, Some(refused.reason().code()))
            }
            Err(_) => (ConsumeOutcome::Error, None),
        };
        self.metrics
            .consumed(outcome, reason, started.elapsed().as_secs_f64());
    }

    /// The ledger this gate consumes through.
    pub fn ledger(&self) -> &Ledger {
        &self.ledger
    }

    /// The principal this head acts for: it executes only its proposals.
    pub fn principal(&self) -> &str {
        self.principal.as_str()
    }

    /// The registry as last loaded (no file read): what a head lists.
    pub fn registry(&self) -> Arc<Registry> {
        self.registry.last_loaded()
    }

    /// The registry as its file says now, which every execution checks
    /// contract revisions against, so a long-running head refuses a proof
    /// issued under a contract that changed since it started, as a fresh
    /// CLI does.
    pub(crate) fn current_registry(&self) -> Result<Arc<Registry>, GateError> {
        self.registry
            .now()
            .map_err(|e| GateError::Registry(e.to_string()))
    }

    /// Present `proof` for `proposal_id` from `session`.
    pub async fn execute(
        &self,
        proposal_id: &ProposalId,
        session: &Session,
        proof: &Proof,
    ) -> Result<Outcome, GateError> {
        let started = Instant::now();
        let result = self
            .execute_once(proposal_id, session, proof, None, None)
            .await;
        self.count(&result, started);
        result
    }

    /// [`Gate::execute`], uncounted (a handoff execution counts once),
    /// with the upstream tool's definition this execution asked for early,
    /// if it did ([`Gate::tool_check`]), and the proposal's record if the
    /// caller has just read it (else it is read here).
    pub(crate) async fn execute_once(
        &self,
        proposal_id: &ProposalId,
        session: &Session,
        proof: &Proof,
        tool_check: Option<effect::mcp::ToolCheck>,
        record: Option<ProposalRecord>,
    ) -> Result<Outcome, GateError> {
        let record = match record {
            Some(record) => record,
            None => match self.ledger.proposal(proposal_id).await? {
                Some(record) => record,
                None => {
                    return Ok(Outcome::Refused(Refused::UnknownProposal(
                        proposal_id.to_string(),
                    )));
                }
            },
        };
        let registry = self.current_registry()?;
        let Some(operation) = registry.get(&record.proposal.operation) else {
            return Ok(Outcome::Refused(Refused::UnknownOperation(
                record.proposal.operation.clone(),
            )));
        };
        let expect = Expectations {
            audience: &self.audience,
            principal: self.principal.as_str(),
            session,
            proposal_id,
            operation: &record.proposal.operation,
            arguments_sha256: &record.proposal.arguments_sha256,
            contract_revision: operation.contract_revision(),
            policy_revision: &self.policy_revision,
            now: OffsetDateTime::now_utc(),
            max_lifetime: self.max_lifetime,
        };
        let verified = match self.verify(proof, &expect).await {
            Ok(verified) => verified,
            Err(Refusal::Expired) => {
                // Expiry blocks a new execution; it does not erase a prior one.
                // The genuine proof of a consumed action gets its disposition.
                return Ok(match self.recorded(&record, proof).await? {
                    Some(recorded) => recorded,
                    None => Outcome::Refused(Refused::Proof(Refusal::Expired)),
                });
            }
            Err(refusal) => {
                tracing::info!(
                    proposal_id = proposal_id.as_str(),
                    code = refusal.code(),
                    "proof refused"
                );
                return Ok(Outcome::Refused(Refused::Proof(refusal)));
            }
        };
        // An operation that requires a passkey refuses a proof whose signer
        // did not check one, before anything is consumed (the nonce stays
        // unburned) and before a recorded result is answered: such a proof
        // gets nothing from this head.
        if operation.requires_passkey() && !verified.claims().passkey_verified() {
            tracing::info!(
                proposal_id = proposal_id.as_str(),
                code = Reason::PasskeyRequired.code(),
                "proof refused"
            );
            return Ok(Outcome::Refused(Refused::PasskeyRequired(
                record.proposal.operation.clone(),
            )));
        }
        // A replay is answered from the read above, without queueing for the
        // ledger's write lock: a consumed nonce stays consumed. Should the
        // proof be consumed after that read, the ledger's own checks, inside
        // its write transaction, answer the same.
        if record.status.is_consumed()
            && let Some(recorded) = self.recorded(&record, proof).await?
        {
            return Ok(recorded);
        }
        // Decide how this head applies the effect before anything is
        // consumed: a kind it does not run is refused here and burns nothing.
        let apply = match effect::apply(&operation.effect, self.means()) {
            Ok(apply) => apply,
            Err(kind) => {
                tracing::info!(
                    proposal_id = proposal_id.as_str(),
                    kind,
                    "effect kind not run by this head"
                );
                return Ok(Outcome::Refused(Refused::UnsupportedEffect {
                    operation: record.proposal.operation.clone(),
                    kind,
                }));
            }
        };
        let approved = Approved {
            proposal_id,
            verified: &verified,
            proof,
            tool_check,
        };
        apply.execute(self, approved).await
    }

    /// For a proposal of `operation` whose effect calls an upstream tool
    /// through this gate: ask the upstream for the tool's definition now,
    /// so that the listing runs while the execution claims and verifies
    /// its proof. `None` for any other operation. The registry as last
    /// loaded is enough (no file is read twice per execution): the
    /// execution reads it afresh and uses this listing only for the very
    /// effect it then finds, else it lists again.
    pub(crate) fn tool_check(&self, operation: &str) -> Option<effect::mcp::ToolCheck> {
        let upstreams = self.mcp.clone()?;
        let registry = self.registry.last_loaded();
        match &registry.get(operation)?.effect {
            countersign_registry::Effect::Mcp(tool) => {
                Some(effect::mcp::ToolCheck::start(tool, upstreams))
            }
            _ => None,
        }
    }

    /// Verify `proof` with the key ring as it is now; a key the ring lacks
    /// may come from a rotation since the last fetch, so then the ring is
    /// fetched again (rate-limited) and the proof verified once more.
    async fn verify(
        &self,
        proof: &Proof,
        expect: &Expectations<'_>,
    ) -> Result<VerifiedProof, Refusal> {
        let keys = self.keys.current().await;
        match verify(proof, &keys, expect) {
            Err(Refusal::UnknownKeyId) => verify(proof, &*self.keys.refresh().await, expect),
            other => other,
        }
    }

    /// Verify a proof the signer re-issued for `intent` (reconcile's
    /// re-send of a webhook) as any proof is verified, against the intent
    /// as recorded: its session, proposal, operation, arguments and the
    /// contract it was approved under, this head's principal, audience and
    /// policy. It is never consumed: the intent's nonce already is.
    pub(crate) async fn verify_reissued(
        &self,
        proof: &Proof,
        intent: &Intent,
    ) -> Result<VerifiedProof, Refusal> {
        let arguments_sha256 =
            countersign_verifier::canonical::sha256_hex(intent.arguments_json().as_bytes());
        let expect = Expectations {
            audience: &self.audience,
            principal: self.principal.as_str(),
            session: intent.session(),
            proposal_id: intent.proposal_id(),
            operation: intent.operation(),
            arguments_sha256: &arguments_sha256,
            contract_revision: intent.contract_revision(),
            policy_revision: &self.policy_revision,
            now: OffsetDateTime::now_utc(),
            max_lifetime: self.max_lifetime,
        };
        self.verify(proof, &expect).await
    }

    /// The recorded disposition of `record`'s proposal, if `proof` is the
    /// proof issued for it and it was consumed.
    async fn recorded(
        &self,
        record: &ProposalRecord,
        proof: &Proof,
    ) -> Result<Option<Outcome>, GateError> {
        let issued_this = record
            .issuance
            .as_ref()
            .is_some_and(|i| i.names_proof(&proof.sha256_hex()));
        if !issued_this {
            return Ok(None);
        }
        Ok(self
            .ledger
            .disposition(&record.proposal.id)
            .await?
            .map(Outcome::Recorded))
    }
}

//! Approving a fresh proposal under a rule, as `Propose` records it: the
//! signer itself issues the proof, with `grant` and provenance
//! `rule:<id>@<version>`, records the rule's decision like a person's
//! (decision, issuance, the rule's use and an `approved` event naming the
//! rule, in one ledger transaction that checks the rule's budget), and
//! keeps the proof for one handoff to the proposal's own session: every
//! head's "wait for approval, claim, execute" flow runs unchanged, and a
//! restarted signer re-derives the proof from the ledger (`recover.rs`).
//!
//! The first covering rule's approval is recorded in the proposal's own
//! transaction ([`SignerService::propose_under_rule`]); should that rule be
//! refused there (its budget spent meanwhile, say), the proposal is
//! recorded alone and the next rules are tried one by one
//! ([`SignerService::approve_by_rule`]).
//!
//! Never approves: with rules off, an operation that needs a passkey
//! (for the operation or the whole installation), `rule.create`, or a
//! proposal no live rule with budget left covers. Must not log a proof.

use std::sync::Arc;

use countersign_ledger::{IssuanceRecord, LedgerError, Proposal, ProposalRecord, RuleRecord};
use countersign_metrics::Issuance;
use countersign_policy::{Head, PolicyRequest};
use countersign_registry::rule::{RuleDefinition, not_coverable};
use countersign_registry::{CanonicalArgs, Registry};
use countersign_verifier::{Grant, Proof};
use time::OffsetDateTime;

use crate::decide::Issuer;
use crate::error::RpcError;
use crate::operator_policy::agent_of;
use crate::service::{SignerService, now_seconds};

/// A rule's approval of a proposal: signed, not yet recorded.
pub(crate) struct RuleApproval {
    grant: Grant,
    proof: Proof,
    issuance: IssuanceRecord,
    expires_at: OffsetDateTime,
}

/// The rules that may approve a proposal, with what signing under one of
/// them needs: the registry as read once for this proposal, and its
/// arguments as validated then.
struct Covering {
    registry: Arc<Registry>,
    args: CanonicalArgs,
    rules: Vec<RuleRecord>,
}

/// What [`SignerService::propose_under_rule`] came to.
pub(crate) enum UnderRule {
    /// Recorded with the approval: the proposal as committed.
    Approved(Box<ProposalRecord>),
    /// No rule covers it: nothing written, and nothing more to try.
    Uncovered,
    /// The first covering rule was refused: nothing written; the next
    /// ones may approve it once it is recorded.
    Refused,
    /// A proposal with its id is recorded already: nothing written.
    Duplicate,
}

/// A refusal of the rule itself: the next rule may still approve.
fn refuses_the_rule(e: &LedgerError) -> bool {
    matches!(
        e,
        LedgerError::RuleExhausted(_)
            | LedgerError::RuleRateLimited(_)
            | LedgerError::RuleNotLive(_)
            | LedgerError::UnknownRule(_)
    )
}

impl SignerService {
    /// Record `proposal` (new) and, if a live rule with uses left covers
    /// it, the first such rule's approval, in one ledger transaction.
    pub(crate) async fn propose_under_rule(
        &self,
        proposal: &Proposal,
        head: Head,
    ) -> Result<UnderRule, RpcError> {
        let pending = ProposalRecord::inserted(proposal);
        let Some(covering) = self.covering_rules(&pending, head).await? else {
            return Ok(UnderRule::Uncovered);
        };
        let Some(rule) = covering.rules.first() else {
            return Ok(UnderRule::Uncovered);
        };
        let approval = self.sign_under(&covering, &pending, rule)?;
        let recorded = self
            .state
            .ledger
            .insert_rule_approved_proposal(proposal, &approval.issuance)
            .await;
        match recorded {
            Ok(record) => {
                self.approved(&pending, approval);
                Ok(UnderRule::Approved(Box::new(record)))
            }
            Err(LedgerError::DuplicateProposal(_)) => Ok(UnderRule::Duplicate),
            Err(e) if refuses_the_rule(&e) => Ok(UnderRule::Refused),
            Err(e) => Err(e.into()),
        }
    }

    /// Approves `record` (pending, just recorded) under the first live rule
    /// of its principal that covers it and has uses left, if any: the
    /// grant it was approved under, or `None` when it stays for a person.
    /// A rule that lost its budget or was revoked between the listing and
    /// the ledger's check is skipped for the next one.
    pub(crate) async fn approve_by_rule(
        &self,
        record: &ProposalRecord,
        head: Head,
    ) -> Result<Option<Grant>, RpcError> {
        let Some(covering) = self.covering_rules(record, head).await? else {
            return Ok(None);
        };
        for rule in &covering.rules {
            let approval = self.sign_under(&covering, record, rule)?;
            match self
                .state
                .ledger
                .record_rule_approval(&approval.issuance)
                .await
            {
                Ok(()) => {}
                Err(e) if refuses_the_rule(&e) => continue,
                // Decided meanwhile (withdrawn): nothing to approve.
                Err(LedgerError::NotPending(_)) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
            return Ok(Some(self.approved(record, approval)));
        }
        Ok(None)
    }

    /// The live rules of `record`'s principal with uses left that cover
    /// it (proposed through `head`), in the ledger's order; `None` when
    /// rules cannot approve it.
    async fn covering_rules(
        &self,
        record: &ProposalRecord,
        head: Head,
    ) -> Result<Option<Covering>, RpcError> {
        if !self.state.rules_enabled {
            return Ok(None);
        }
        // With the operator's binding policy, a rule approves only what
        // it permits.
        if !crate::operator_policy::rule_may_approve(record) {
            return Ok(None);
        }
        let registry = self.registry_now()?;
        let Ok((op, args)) = self.approvable(&registry, record) else {
            return Ok(None);
        };
        let everything_needs_a_passkey = self.state.passkeys.as_ref().is_some_and(|p| p.required);
        let coverable = not_coverable(
            &op.name,
            op.requires_passkey(),
            op.quorum.is_some(),
            everything_needs_a_passkey,
        );
        if coverable.is_some() {
            return Ok(None);
        }
        let proposal = &record.proposal;
        let now = now_seconds()?;
        // A rule's Cedar scope sees the request the operator's policy
        // sees (whether or not the operator has one).
        let request = PolicyRequest {
            principal: proposal.principal.as_str(),
            agent: agent_of(head, args.value()),
            session: proposal.session.as_str(),
            operation: &op.name,
            arguments: args.value(),
            time_unix: now.unix_timestamp(),
            head,
        };
        let mut covering = Vec::new();
        for rule in self.state.ledger.rules(&proposal.principal).await? {
            if rule.remaining(now) == 0 {
                continue;
            }
            let definition = RuleDefinition::parse(rule.definition.as_bytes()).map_err(|e| {
                RpcError::Internal(format!("stored definition of {}: {e}", rule.id))
            })?;
            if !definition.covers_besides_cedar(&op.name, &proposal.session, args.value()) {
                continue;
            }
            if definition.cedar.is_some() {
                // Generated once per registry, then an `Arc` from a cache.
                let schema = self
                    .state
                    .operator_policy
                    .schema_for(&registry)
                    .map_err(RpcError::PolicyUnavailable)?;
                if !self
                    .state
                    .cedar_scopes
                    .permits(&definition, &schema, &request)
                {
                    continue;
                }
            }
            covering.push(rule);
        }
        Ok(Some(Covering {
            registry: Arc::clone(&registry),
            args,
            rules: covering,
        }))
    }

    /// `record`'s proof under `rule` (one of `covering`), signed, and its
    /// issuance.
    fn sign_under(
        &self,
        covering: &Covering,
        record: &ProposalRecord,
        rule: &RuleRecord,
    ) -> Result<RuleApproval, RpcError> {
        let proposal = &record.proposal;
        let op = covering
            .registry
            .get(&proposal.operation)
            .ok_or_else(|| RpcError::UnknownOperation(proposal.operation.clone()))?;
        let args = &covering.args;
        let grant = Grant {
            rule: rule.id.clone(),
            version: rule.version,
        };
        let issuer = Issuer::Rule(grant.clone());
        let claims = self.approval_claims(record, op, args, &proposal.session, issuer)?;
        let proof = self.sign(&claims)?;
        let issuance = IssuanceRecord::from_claims(&claims, &proof);
        Ok(RuleApproval {
            grant,
            proof,
            issuance,
            expires_at: claims.exp,
        })
    }

    /// After `approval` of `record` committed: its proof waits for the
    /// proposal's own session to claim it.
    fn approved(&self, record: &ProposalRecord, approval: RuleApproval) -> Grant {
        let proposal = &record.proposal;
        let RuleApproval {
            grant,
            proof,
            issuance,
            expires_at,
        } = approval;
        tracing::info!(
            proposal_id = %proposal.id, proof_sha256 = %issuance.proof_sha256,
            provenance = %issuance.provenance, session = %proposal.session,
            "proof issued under a rule"
        );
        self.state.handoffs.insert(
            &proposal.id,
            proof,
            &proposal.principal,
            &proposal.session,
            expires_at,
        );
        self.state.metrics.issued(Issuance::Rule, None);
        grant
    }
}

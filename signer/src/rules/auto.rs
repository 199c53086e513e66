//! Approving a fresh proposal under a rule, right after `Propose` recorded
//! it: the signer itself issues the proof, with `grant` and provenance
//! `rule:<id>@<version>`, records the rule's decision like a person's
//! (decision, issuance, the rule's use and an `approved` event naming the
//! rule, in one ledger transaction that checks the rule's budget), and
//! keeps the proof for one handoff to the proposal's own session: every
//! head's "wait for approval, claim, execute" flow runs unchanged, and a
//! restarted signer re-derives the proof from the ledger (`recover.rs`).
//!
//! Never approves: with rules off, an operation that needs a passkey
//! (for the operation or the whole installation), `rule.create`, or a
//! proposal no live rule with budget left covers. Must not log a proof.

use countersign_ledger::{IssuanceRecord, LedgerError, ProposalRecord};
use countersign_metrics::Issuance;
use countersign_registry::rule::{RuleDefinition, not_coverable};
use countersign_verifier::Grant;

use crate::decide::Issuer;
use crate::error::RpcError;
use crate::service::{SignerService, now_seconds};

impl SignerService {
    /// Approves `record` (pending, just proposed) under the first live rule
    /// of its principal that covers it and has uses left, if any: the
    /// grant it was approved under, or `None` when it stays for a person.
    /// A rule that lost its budget or was revoked between the listing and
    /// the ledger's check is skipped for the next one.
    pub(crate) async fn approve_by_rule(
        &self,
        record: &ProposalRecord,
    ) -> Result<Option<Grant>, RpcError> {
        if !self.state.rules_enabled {
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
        for rule in self.state.ledger.rules(&proposal.principal).await? {
            if rule.remaining(now) == 0 {
                continue;
            }
            let definition = RuleDefinition::parse(rule.definition.as_bytes()).map_err(|e| {
                RpcError::Internal(format!("stored definition of {}: {e}", rule.id))
            })?;
            if !definition.covers(&op.name, &proposal.session, args.value()) {
                continue;
            }
            let grant = Grant {
                rule: rule.id.clone(),
                version: rule.version,
            };
            let issuer = Issuer::Rule(grant.clone());
            let claims = self.approval_claims(record, op, &args, &proposal.session, issuer)?;
            let proof = self.sign(&claims)?;
            let issuance = IssuanceRecord::from_claims(&claims, &proof);
            match self.state.ledger.record_rule_approval(&issuance).await {
                Ok(()) => {}
                Err(
                    LedgerError::RuleExhausted(_)
                    | LedgerError::RuleRateLimited(_)
                    | LedgerError::RuleNotLive(_)
                    | LedgerError::UnknownRule(_),
                ) => continue,
                // Decided meanwhile (withdrawn): nothing to approve.
                Err(LedgerError::NotPending(_)) => return Ok(None),
                Err(e) => return Err(e.into()),
            }
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
                claims.exp,
            );
            self.state.metrics.issued(Issuance::Rule, None);
            return Ok(Some(grant));
        }
        Ok(None)
    }
}

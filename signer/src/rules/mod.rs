//! Auto-approval rules, the approver's RPCs: `CreateRule`, `ReviseRule`,
//! `RevokeRule`, `ListRules` (approver role only, each for the caller's
//! principal), and (`auto.rs`) approving a fresh proposal under a rule.
//!
//! A rule is created or widened only by a person through an approver
//! interface: the interface shows the scope the signer renders here from
//! the canonical definition (a dry run) and sends back the definition's
//! SHA-256 with the real request, so what is created is what was shown.
//! With `[rules] enabled = false` (the default) nothing can be created or
//! revised; revoking and listing always work. Never logs a definition's
//! argument values.

mod auto;
mod cedar;

pub(crate) use auto::UnderRule;
pub(crate) use cedar::CedarScopes;

use countersign_identity::PeerIdentity;
use countersign_ledger::{ProposalRecord, RuleChange, RuleRecord, RuleStatus};
use countersign_proto::v1 as wire;
use countersign_registry::CanonicalArgs;
use countersign_registry::rule::{RuleDefinition, RuleError};
use countersign_verifier::{ProposalId, RuleId};
use serde_json::Value;
use time::OffsetDateTime;
use tonic::Request;

use crate::convert::{format_time, wire_rule_status};
use crate::decide::approver_path;
use crate::error::RpcError;
use crate::service::{SignerService, now_seconds};

/// The rule id of a request field.
fn parse_rule_id(text: String) -> Result<RuleId, RpcError> {
    RuleId::parse(text).map_err(|e| RpcError::InvalidField {
        field: "rule_id",
        reason: e.to_string(),
    })
}

/// The wire view of `rule` at `now`, its scope rendered from its stored
/// canonical definition.
fn rule_view(rule: &RuleRecord, now: OffsetDateTime) -> Result<wire::RuleView, RpcError> {
    let definition = RuleDefinition::parse(rule.definition.as_bytes())
        .map_err(|e| RpcError::Internal(format!("stored definition of {}: {e}", rule.id)))?;
    Ok(wire::RuleView {
        id: rule.id.clone(),
        version: rule.version,
        status: wire_rule_status(rule.status, now >= rule.expires_at).into(),
        definition_json: rule.definition.clone(),
        definition_sha256: rule.definition_sha256.clone(),
        scope: definition.scope_text(),
        expires_at: format_time(rule.expires_at)?,
        created_by: rule.created_by.clone(),
        created_at: format_time(rule.created_at)?,
        uses: rule.uses,
        max_uses: rule.max_uses,
        uses_last_hour: rule.uses_last_hour,
        per_hour: rule.per_hour,
        remaining: rule.remaining(now),
        reason: rule.reason.clone(),
    })
}

/// What a dry run shows before anything exists: the rule as it would be.
fn proposed_view(
    definition: &RuleDefinition,
    id: &str,
    version: u64,
) -> Result<wire::RuleView, RpcError> {
    Ok(wire::RuleView {
        id: id.to_owned(),
        version,
        status: wire::RuleStatus::Proposed.into(),
        definition_json: definition.canonical().to_owned(),
        definition_sha256: definition.sha256_hex().to_owned(),
        scope: definition.scope_text(),
        expires_at: format_time(definition.expires_at)?,
        max_uses: definition.max_uses,
        per_hour: definition.per_hour,
        ..Default::default()
    })
}

impl SignerService {
    /// A definition a person may create or revise to now: rules on, the
    /// text a rule, its operations registered and coverable, its expiry in
    /// bounds, and its Cedar scope (if any) checked against the registry's
    /// schema.
    fn creatable(&self, text: &str) -> Result<RuleDefinition, RpcError> {
        if !self.state.rules_enabled {
            return Err(RpcError::RulesDisabled);
        }
        let definition = RuleDefinition::parse(text.as_bytes()).map_err(RpcError::InvalidRule)?;
        self.check_creatable(definition)
    }

    /// [`Self::creatable`] for the canonical arguments of a `rule.create`
    /// proposal.
    pub(crate) fn creatable_value(&self, args: &Value) -> Result<RuleDefinition, RpcError> {
        if !self.state.rules_enabled {
            return Err(RpcError::RulesDisabled);
        }
        let definition = RuleDefinition::from_value(args.clone()).map_err(RpcError::InvalidRule)?;
        self.check_creatable(definition)
    }

    fn check_creatable(&self, definition: RuleDefinition) -> Result<RuleDefinition, RpcError> {
        let registry = self.registry_now()?;
        let everything_needs_a_passkey = self.state.passkeys.as_ref().is_some_and(|p| p.required);
        definition
            .check_creatable(&registry, everything_needs_a_passkey, now_seconds()?)
            .map_err(RpcError::InvalidRule)?;
        if definition.cedar.is_some() {
            let schema = self
                .state
                .operator_policy
                .schema_for(&registry)
                .map_err(|e| RpcError::InvalidRule(RuleError::Cedar(e)))?;
            self.state
                .cedar_scopes
                .checked(&definition, &schema)
                .map_err(RpcError::InvalidRule)?;
        }
        Ok(definition)
    }

    /// The change recording `definition` as rule `id`, by `by`, once the
    /// person confirmed exactly its hash.
    fn confirmed_change(
        definition: &RuleDefinition,
        confirmed_sha256: &str,
        id: &str,
        principal: &str,
        by: String,
    ) -> Result<RuleChange, RpcError> {
        if confirmed_sha256 != definition.sha256_hex() {
            return Err(RpcError::RuleDefinitionChanged);
        }
        Ok(RuleChange {
            id: id.to_owned(),
            principal: principal.to_owned(),
            definition: definition.canonical().to_owned(),
            definition_sha256: definition.sha256_hex().to_owned(),
            max_uses: definition.max_uses,
            per_hour: definition.per_hour,
            expires_at: definition.expires_at,
            by,
        })
    }

    pub(crate) async fn create_rule(
        &self,
        peer: PeerIdentity,
        request: Request<wire::CreateRuleRequest>,
    ) -> Result<wire::RuleView, RpcError> {
        let req = request.into_inner();
        let definition = self.creatable(&req.definition_json)?;
        if req.dry_run {
            return proposed_view(&definition, "", 1);
        }
        let id = new_rule_id()?;
        let change = Self::confirmed_change(
            &definition,
            &req.definition_sha256,
            id.as_str(),
            &peer.principal,
            approver_path(&peer),
        )?;
        let created = self.state.ledger.create_rule(&change).await?;
        tracing::info!(rule = %created.id, by = %change.by, definition_sha256 = %change.definition_sha256, "rule created");
        rule_view(&created, now_seconds()?)
    }

    /// A person's approval of the pending `rule.create` proposal `record`
    /// (checked by `approvable`): the rule its arguments define, if one may
    /// be created now, created with the approval in one ledger transaction.
    /// No proof is issued.
    pub(crate) async fn approve_rule_creation(
        &self,
        record: &ProposalRecord,
        peer: &PeerIdentity,
        args: &CanonicalArgs,
    ) -> Result<wire::DecideResponse, RpcError> {
        let definition = self.creatable_value(args.value())?;
        let id = new_rule_id()?;
        let change = Self::confirmed_change(
            &definition,
            args.sha256_hex(),
            id.as_str(),
            &peer.principal,
            approver_path(peer),
        )?;
        let created = self
            .state
            .ledger
            .create_rule_from_proposal(&change, &record.proposal.id)
            .await?;
        tracing::info!(rule = %created.id, proposal_id = %record.proposal.id, by = %change.by, "rule created from a proposal");
        let proposal_id = ProposalId::parse(record.proposal.id.clone())
            .map_err(|e| RpcError::Internal(format!("stored proposal id: {e}")))?;
        Ok(wire::DecideResponse {
            proposal: Some(self.view(&proposal_id).await?),
            created_rule_id: created.id,
            ..Default::default()
        })
    }

    pub(crate) async fn revise_rule(
        &self,
        peer: PeerIdentity,
        request: Request<wire::ReviseRuleRequest>,
    ) -> Result<wire::RuleView, RpcError> {
        let req = request.into_inner();
        let id = parse_rule_id(req.rule_id)?;
        let definition = self.creatable(&req.definition_json)?;
        let current = self
            .state
            .ledger
            .rule(id.as_str())
            .await?
            .filter(|r| r.principal == peer.principal)
            .ok_or_else(|| RpcError::UnknownRule(id.as_str().to_owned()))?;
        if current.version != req.version {
            return Err(RpcError::RuleChanged(id.as_str().to_owned()));
        }
        // A revoked rule stays revoked: refused before its new scope is
        // shown, not after the person has confirmed it.
        if current.status == RuleStatus::Revoked {
            return Err(RpcError::RuleNotLive(id.as_str().to_owned()));
        }
        if req.dry_run {
            return proposed_view(&definition, id.as_str(), current.version + 1);
        }
        let change = Self::confirmed_change(
            &definition,
            &req.definition_sha256,
            id.as_str(),
            &peer.principal,
            approver_path(&peer),
        )?;
        let revised = self.state.ledger.revise_rule(&change, req.version).await?;
        tracing::info!(rule = %revised.id, version = revised.version, by = %change.by, "rule revised");
        rule_view(&revised, now_seconds()?)
    }

    pub(crate) async fn revoke_rule(
        &self,
        peer: PeerIdentity,
        request: Request<wire::RevokeRuleRequest>,
    ) -> Result<wire::RuleView, RpcError> {
        let req = request.into_inner();
        let id = parse_rule_id(req.rule_id)?;
        let by = approver_path(&peer);
        let revoked = self
            .state
            .ledger
            .revoke_rule(id.as_str(), &peer.principal, &by, &req.reason)
            .await?;
        tracing::info!(rule = %revoked.id, version = revoked.version, %by, "rule revoked");
        rule_view(&revoked, now_seconds()?)
    }

    pub(crate) async fn list_rules(
        &self,
        peer: PeerIdentity,
        _request: Request<wire::ListRulesRequest>,
    ) -> Result<wire::ListRulesResponse, RpcError> {
        let now = now_seconds()?;
        let rules = self
            .state
            .ledger
            .rules(&peer.principal)
            .await?
            .iter()
            .map(|r| rule_view(r, now))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(wire::ListRulesResponse { rules })
    }
}

/// A fresh rule id, from 16 random bytes.
fn new_rule_id() -> Result<RuleId, RpcError> {
    let mut random = [0u8; 16];
    getrandom::fill(&mut random).map_err(|e| RpcError::Internal(format!("random: {e}")))?;
    Ok(RuleId::from_random(random))
}

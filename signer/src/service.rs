//! The gRPC service: who may call what, and the RPCs other than `Decide`
//! (see `decide.rs`).
//!
//! Every RPC first reads the caller's role and principal from its client
//! certificate (never from a request field), checks the role against the
//! table below, and for a proposal checks that the caller's principal owns
//! it. Errors leave through `status::to_status` only. Proofs are never
//! logged; log fields carry `proof_sha256` at most.

use std::sync::Arc;

use countersign_identity::{PeerIdentity, Role, peer_identity};
use countersign_ledger::{
    LedgerError, Proposal, ProposalRecord, ProposalStatus, run_premise_command,
};
use countersign_policy::{PolicyRequest, Verdict, VerdictKind};
use countersign_proto::v1 as wire;
use countersign_registry::{Operation, PremiseRead, Registry};
use countersign_verifier::Premise;
use time::OffsetDateTime;
use tonic::{Request, Status};

use crate::convert::{
    HandoffCommand, ProposalId, ProposeCommand, RevokeCommand, format_time, keyed_proposal_id,
    new_proposal_id, parse_proposal_id, proposal_view, published_key, revoke_outcome,
};
use crate::error::RpcError;
use crate::operator_policy::{Evaluated, agent_of, denied_by_policy};
use crate::rules::UnderRule;
use crate::state::SignerState;
use crate::status::to_status;

/// The `Signer` service over shared state.
#[derive(Clone)]
pub(crate) struct SignerService {
    pub(crate) state: Arc<SignerState>,
}

/// The caller's identity, if its role may call `rpc`.
pub(crate) fn authorize<T>(
    request: &Request<T>,
    rpc: &'static str,
    allowed: &[Role],
) -> Result<PeerIdentity, RpcError> {
    let certs = request.peer_certs().ok_or(RpcError::NoClientCertificate)?;
    let leaf = certs.first().ok_or(RpcError::NoClientCertificate)?;
    let peer = peer_identity(leaf.as_ref()).map_err(RpcError::PeerIdentity)?;
    if !allowed.contains(&peer.role) {
        return Err(RpcError::RoleNotAllowed {
            role: peer.role,
            rpc,
        });
    }
    Ok(peer)
}

/// The current time, truncated to whole seconds (the claims' resolution).
pub(crate) fn now_seconds() -> Result<OffsetDateTime, RpcError> {
    OffsetDateTime::from_unix_timestamp(OffsetDateTime::now_utc().unix_timestamp())
        .map_err(|e| RpcError::Internal(format!("clock: {e}")))
}

impl SignerService {
    /// The proposal, if it exists and `principal` owns it.
    pub(crate) async fn owned_proposal(
        &self,
        id: &ProposalId,
        principal: &str,
    ) -> Result<ProposalRecord, RpcError> {
        let record = self
            .state
            .ledger
            .proposal(id.as_str())
            .await?
            .ok_or_else(|| RpcError::UnknownProposal(id.as_str().to_owned()))?;
        if record.proposal.principal != principal {
            return Err(RpcError::NotYourProposal);
        }
        Ok(record)
    }

    /// Whether `record` may still be decided or withdrawn: `Ok` while
    /// pending; `expired` once no one decided it within its decision
    /// window; `not_pending` once anything else happened to it.
    pub(crate) fn still_pending(record: &ProposalRecord) -> Result<(), RpcError> {
        match (record.status, record.proposal.decide_by) {
            (ProposalStatus::Pending, _) => Ok(()),
            (ProposalStatus::Expired, Some(closed_at)) if record.issuance.is_none() => {
                Err(RpcError::ProposalExpired {
                    id: record.proposal.id.to_string(),
                    closed_at: format_time(closed_at)?,
                })
            }
            (status, _) => Err(RpcError::NotPending {
                id: record.proposal.id.to_string(),
                status: status.as_str().to_owned(),
            }),
        }
    }

    /// `err` as the client's status, counted by its reason code (every
    /// RPC's error leaves through here).
    pub(crate) fn refused(&self, err: RpcError) -> Status {
        self.state.metrics.refused(err.reason().code());
        to_status(err)
    }

    /// The passkey policy, or `passkeys_not_configured`.
    pub(crate) fn passkey_policy(&self) -> Result<&crate::passkeys::PasskeyPolicy, RpcError> {
        self.state
            .passkeys
            .as_ref()
            .ok_or(RpcError::PasskeysNotConfigured)
    }

    /// Whether approving `op` needs a passkey: the installation requires
    /// one for every approval, or the operation does.
    pub(crate) fn passkey_required(&self, op: &Operation) -> bool {
        self.state.passkeys.as_ref().is_some_and(|p| p.required) || op.requires_passkey()
    }

    /// The registry as its file says now (re-parsed only when it changed).
    /// An unreadable or invalid file fails the call closed.
    pub(crate) fn registry_now(&self) -> Result<Arc<Registry>, RpcError> {
        self.state
            .registry
            .now()
            .map_err(|e| RpcError::Internal(format!("registry: {e}")))
    }

    /// The current view of a proposal the caller is known to own.
    pub(crate) async fn view(&self, id: &ProposalId) -> Result<wire::ProposalView, RpcError> {
        let record = self
            .state
            .ledger
            .proposal(id.as_str())
            .await?
            .ok_or_else(|| RpcError::Internal(format!("proposal {} vanished", id.as_str())))?;
        self.view_of(&record).await
    }

    /// The wire view of `record`, with its quorum's decisions when its
    /// operation (as last loaded, at the proposal's contract) has a quorum.
    pub(crate) async fn view_of(
        &self,
        record: &ProposalRecord,
    ) -> Result<wire::ProposalView, RpcError> {
        let waiting = self
            .state
            .handoffs
            .is_waiting(&record.proposal.id, OffsetDateTime::now_utc());
        let mut view = proposal_view(record, waiting)?;
        // From the registry as last loaded (no file read per listed
        // proposal): Decide itself checks against the file as it is now.
        // (An operation no longer registered cannot be approved at all.)
        let registry = self.state.registry.last_loaded();
        let op = registry.get(&record.proposal.operation);
        view.passkey_required = op.is_some_and(|op| self.passkey_required(op));
        crate::offer::describe(&mut view, op);
        view.quorum = self.quorum_view(record).await?;
        Ok(view)
    }

    pub(crate) async fn propose(
        &self,
        peer: PeerIdentity,
        request: Request<wire::ProposeRequest>,
    ) -> Result<wire::ProposalView, RpcError> {
        let cmd = ProposeCommand::try_from(request.into_inner())?;
        let registry = self.registry_now()?;
        let op = registry
            .get(&cmd.operation)
            .ok_or_else(|| RpcError::UnknownOperation(cmd.operation.clone()))?;
        let args = op
            .validate_arguments(cmd.arguments_json.as_bytes())
            .map_err(RpcError::InvalidArguments)?;
        let keyed = cmd.idempotency_key.as_deref().map(|key| Keyed {
            key,
            id: keyed_proposal_id(&peer.principal, &cmd.session, key),
            principal: &peer.principal,
            session: &cmd.session,
            operation: &op.name,
            arguments_sha256: args.sha256_hex(),
        });
        // Proposed before under this key: that proposal as it stands.
        if let Some(keyed) = &keyed
            && let Some(record) = self.state.ledger.proposal(&keyed.id).await?
        {
            return self.proposed_before(record, keyed).await;
        }
        // The operator's policy, asked before anything runs or is recorded.
        let created_at = now_seconds()?;
        let request = PolicyRequest {
            principal: peer.principal.as_str(),
            agent: agent_of(cmd.head, args.value()),
            session: cmd.session.as_str(),
            operation: &op.name,
            arguments: args.value(),
            time_unix: created_at.unix_timestamp(),
            head: cmd.head,
        };
        let evaluated = self
            .state
            .operator_policy
            .at_proposal(&self.state.ledger, &registry, &request)
            .await?;
        // The premise, read by the signer itself (never taken from the
        // request), shown in the preview and bound into any proof.
        let premise = match op.premise_read(&args).map_err(RpcError::InvalidArguments)? {
            None => None,
            Some(PremiseRead::State { namespace, key }) => Some(Premise::State(
                self.state
                    .ledger
                    .read_premise(&peer.principal, &namespace, &key)
                    .await?,
            )),
            Some(PremiseRead::Command { argv }) => Some(Premise::Command(
                run_premise_command(self.state.ledger.premise_runner(), &argv, args.text()).await?,
            )),
        };
        if matches!(op.effect, countersign_registry::Effect::Rule) {
            // A proposed rule must be one a person could create now.
            self.creatable_value(args.value())?;
        }
        let preview = op.render_preview(&args, premise.as_ref(), &cmd.note);
        let id = match &keyed {
            Some(keyed) => keyed.id.clone(),
            None => new_proposal_id()?,
        };
        // Its decision window: undecided by then, it expires.
        let window = self.state.policy.decision_window_for(op);
        let decide_by = created_at
            .checked_add(time::Duration::seconds(
                i64::try_from(window).unwrap_or(i64::MAX),
            ))
            .ok_or_else(|| RpcError::Internal("clock: decision window overflows".into()))?;
        let proposal = Proposal {
            id: id.clone(),
            principal: peer.principal.clone(),
            session: cmd.session.clone(),
            operation: op.name.clone(),
            arguments_json: args.text().to_owned(),
            arguments_sha256: args.sha256_hex().to_owned(),
            contract_revision: op.contract_revision().to_owned(),
            policy_revision: self.state.policy.revision(),
            note: cmd.note,
            preview,
            created_at,
            premise,
            decide_by: Some(decide_by),
            policy: evaluated.as_ref().map(|e| e.record.clone()),
        };
        if let Some(evaluated) = &evaluated {
            self.count_policy(evaluated);
        }
        // Watches hear of the proposal (and of a rule's approval of it)
        // once this RPC's writes have ended.
        let _changed = self.state.changes.on_drop(&peer.principal, id.as_str());
        // What the policy forbids is recorded denied: nobody is asked.
        let binding = evaluated.as_ref().and_then(|e| e.binding.as_ref());
        if let Some(reason) = denied_by_policy(binding, op.quorum.as_ref()) {
            let recorded = match (
                self.state
                    .ledger
                    .insert_denied_proposal(&proposal, &reason)
                    .await,
                &keyed,
            ) {
                (Ok(recorded), _) => recorded,
                (Err(LedgerError::DuplicateProposal(_)), Some(keyed)) => {
                    return self.proposed_concurrently(keyed).await;
                }
                (Err(e), _) => return Err(e.into()),
            };
            self.state.metrics.proposed(&op.name);
            tracing::info!(proposal_id = id.as_str(), operation = %op.name, principal = %peer.principal, %reason, "proposed and denied by the operator's policy");
            return self.view_of(&recorded).await;
        }
        // A rule that covers it approves it in the same commit; it then
        // waits for nobody, so nobody is notified.
        let under_rule = self.propose_under_rule(&proposal, cmd.head).await;
        let under_rule = under_rule.unwrap_or_else(|e| {
            tracing::warn!(proposal_id = id.as_str(), error = %e, "no rule approval; the proposal waits for a person");
            UnderRule::Uncovered
        });
        let other_rules = match (under_rule, &keyed) {
            (UnderRule::Approved(record), _) => {
                self.state.metrics.proposed(&op.name);
                tracing::info!(proposal_id = id.as_str(), operation = %op.name, principal = %peer.principal, "proposed");
                return self.view_of(&record).await;
            }
            (UnderRule::Duplicate, Some(keyed)) => {
                return self.proposed_concurrently(keyed).await;
            }
            (UnderRule::Refused, _) => true,
            (UnderRule::Uncovered | UnderRule::Duplicate, _) => false,
        };
        // The record as committed, which the reply shows unless a rule
        // approves the proposal below.
        // Recorded with its notification (and escalation) for the notify
        // process, if `[notify]` is on: all commit, or none does.
        let announce = self
            .state
            .outbox
            .proposal_waiting(&proposal, op.escalation.as_ref());
        let inserted = self
            .state
            .ledger
            .insert_announced_proposal(&proposal, &announce)
            .await;
        let recorded = match (inserted, &keyed) {
            (Ok(recorded), _) => recorded,
            // The same key proposed concurrently, and that one committed
            // first: its proposal is the answer.
            (Err(LedgerError::DuplicateProposal(_)), Some(keyed)) => {
                return self.proposed_concurrently(keyed).await;
            }
            (Err(e), _) => return Err(e.into()),
        };
        self.state.metrics.proposed(&op.name);
        tracing::info!(proposal_id = id.as_str(), operation = %op.name, principal = %peer.principal, "proposed");
        // Recorded: whatever happens to a rule's approval now, the proposal
        // waits for a person at worst.
        let by_rule = if other_rules {
            self.approve_by_rule(&recorded, cmd.head).await.unwrap_or_else(|e| {
                tracing::warn!(proposal_id = id.as_str(), error = %e, "no rule approval; the proposal waits for a person");
                None
            })
        } else {
            None
        };
        match by_rule {
            // Approved since it was recorded: it waits for nobody, so its
            // notification is taken back, and its view is read again.
            // (An escalation is dropped unread once it is decided.)
            Some(_) => {
                if let Some(row) = announce.first() {
                    self.state.outbox.withdraw(&peer.principal, row).await;
                }
                self.view(&id).await
            }
            None => self.view_of(&recorded).await,
        }
    }

    /// Counts what the policy sets said of a proposal.
    fn count_policy(&self, evaluated: &Evaluated) {
        let metrics = &self.state.metrics;
        let binding = evaluated
            .binding
            .as_ref()
            .map_or(VerdictKind::PersonDecides, Verdict::kind);
        if evaluated.binding.is_some() {
            metrics.policy_verdict(binding.as_str());
        }
        if let Some(shadow) = evaluated.shadow {
            metrics.policy_shadow_difference(binding.as_str(), shadow.as_str());
        }
    }

    /// The answer to a `Propose` whose keyed proposal another `Propose`
    /// with the same key recorded first, meanwhile.
    async fn proposed_concurrently(
        &self,
        keyed: &Keyed<'_>,
    ) -> Result<wire::ProposalView, RpcError> {
        let record = self
            .state
            .ledger
            .proposal(&keyed.id)
            .await?
            .ok_or_else(|| {
                RpcError::Internal(format!("{} is a duplicate yet not recorded", keyed.id))
            })?;
        self.proposed_before(record, keyed).await
    }

    /// The answer to a `Propose` whose idempotency key names `record`:
    /// its view as it stands, if it is the proposal `keyed` asks for (the
    /// principal and session are in its id, and checked again), else
    /// `idempotency_key_reused`.
    async fn proposed_before(
        &self,
        record: ProposalRecord,
        keyed: &Keyed<'_>,
    ) -> Result<wire::ProposalView, RpcError> {
        let proposal = &record.proposal;
        if proposal.principal.as_str() != keyed.principal
            || proposal.session != *keyed.session
            || proposal.operation != keyed.operation
            || proposal.arguments_sha256 != keyed.arguments_sha256
        {
            return Err(RpcError::IdempotencyKeyReused {
                key: keyed.key.to_owned(),
                id: proposal.id.to_string(),
            });
        }
        self.view_of(&record).await
    }

    pub(crate) async fn get_proposal(
        &self,
        peer: PeerIdentity,
        request: Request<wire::GetProposalRequest>,
    ) -> Result<wire::ProposalView, RpcError> {
        let id = parse_proposal_id(request.into_inner().proposal_id)?;
        let record = self.owned_proposal(&id, &peer.principal).await?;
        self.view_of(&record).await
    }

    pub(crate) async fn list_pending(
        &self,
        peer: PeerIdentity,
        _request: Request<wire::ListPendingRequest>,
    ) -> Result<wire::ListPendingResponse, RpcError> {
        self.pending_views(&peer.principal).await
    }

    /// `principal`'s proposals awaiting a decision, as `ListPending` and
    /// `WatchPending` send them.
    pub(crate) async fn pending_views(
        &self,
        principal: &str,
    ) -> Result<wire::ListPendingResponse, RpcError> {
        let records = self.state.ledger.pending(principal).await?;
        let mut proposals = Vec::with_capacity(records.len());
        for record in records.iter().filter(|r| r.proposal.principal == principal) {
            proposals.push(self.view_of(record).await?);
        }
        Ok(wire::ListPendingResponse { proposals })
    }

    pub(crate) async fn claim_handoff(
        &self,
        peer: PeerIdentity,
        request: Request<wire::ClaimHandoffRequest>,
    ) -> Result<wire::ClaimHandoffResponse, RpcError> {
        let cmd = HandoffCommand::try_from(request.into_inner())?;
        let record = self
            .owned_proposal(&cmd.proposal_id, &peer.principal)
            .await?;
        let id = cmd.proposal_id.as_str();
        let handoffs = &self.state.handoffs;
        // The ledger, read before the store: a claim is handed over only
        // while the nonce is unconsumed, so a lapsed lease never passes a
        // used approval to a second head.
        match record.status {
            ProposalStatus::Approved => {}
            status if status.is_consumed() => {
                // Executed (or being executed): the head reads the recorded
                // disposition, never "no approval".
                handoffs.discard(id);
                return Err(RpcError::HandoffInUse(id.to_owned()));
            }
            _ => {
                handoffs.discard(id);
                return Err(RpcError::NoLiveHandoff);
            }
        }
        let now = OffsetDateTime::now_utc();
        let lease = self.state.handoff_claim_lease;
        let claimed = match handoffs.claim(id, &peer.principal, cmd.session.as_str(), now, lease) {
            // Nothing in memory: a signer restarted since the approval.
            Err(RpcError::NoLiveHandoff) => {
                self.recover_handoff(&record, now).await?;
                handoffs.claim(id, &peer.principal, cmd.session.as_str(), now, lease)?
            }
            other => other?,
        };
        let proof = claimed.proof;
        let proof_sha256 = proof.sha256_hex();
        if claimed.after_lapsed_lease {
            tracing::warn!(proposal_id = id, %proof_sha256, "handoff claimed again: the previous claim's lease ran out unreleased");
        } else {
            tracing::info!(proposal_id = id, %proof_sha256, "handoff claimed");
        }
        // The wire message needs a plain String; prost owns it from here.
        Ok(wire::ClaimHandoffResponse {
            proof: proof.expose_secret().to_owned(),
            proof_sha256,
        })
    }

    pub(crate) async fn release_handoff(
        &self,
        peer: PeerIdentity,
        request: Request<wire::ReleaseHandoffRequest>,
    ) -> Result<wire::ReleaseHandoffResponse, RpcError> {
        let cmd = HandoffCommand::try_from(request.into_inner())?;
        self.owned_proposal(&cmd.proposal_id, &peer.principal)
            .await?;
        self.state.handoffs.release(
            cmd.proposal_id.as_str(),
            &peer.principal,
            cmd.session.as_str(),
            OffsetDateTime::now_utc(),
        )?;
        tracing::info!(proposal_id = cmd.proposal_id.as_str(), "handoff released");
        Ok(wire::ReleaseHandoffResponse {})
    }

    pub(crate) async fn revoke(
        &self,
        peer: PeerIdentity,
        request: Request<wire::RevokeRequest>,
    ) -> Result<wire::RevokeResponse, RpcError> {
        let cmd = RevokeCommand::try_from(request.into_inner())?;
        self.owned_proposal(&cmd.proposal_id, &peer.principal)
            .await?;
        let _changed = self
            .state
            .changes
            .on_drop(&peer.principal, cmd.proposal_id.as_str());
        let outcome = self
            .state
            .ledger
            .revoke(cmd.proposal_id.as_str(), &peer.principal, &cmd.reason)
            .await?;
        let dropped = self.state.handoffs.discard(cmd.proposal_id.as_str());
        tracing::info!(
            proposal_id = cmd.proposal_id.as_str(),
            ?outcome,
            handoff_dropped = dropped,
            "revoke"
        );
        Ok(wire::RevokeResponse {
            outcome: revoke_outcome(outcome) as i32,
            proposal: Some(self.view(&cmd.proposal_id).await?),
        })
    }

    pub(crate) async fn pending_notifications(
        &self,
        peer: PeerIdentity,
        request: Request<wire::PendingNotificationsRequest>,
    ) -> Result<wire::PendingNotificationsResponse, RpcError> {
        let limit = match request.into_inner().limit {
            0 => crate::notify::MAX_PER_CALL,
            n if n <= crate::notify::MAX_PER_CALL => n,
            _ => {
                return Err(RpcError::InvalidField {
                    field: "limit",
                    reason: format!("must be 0..={}", crate::notify::MAX_PER_CALL),
                });
            }
        };
        let rows = self
            .state
            .ledger
            .notifications(&peer.principal, limit)
            .await?;
        Ok(wire::PendingNotificationsResponse {
            notifications: rows
                .iter()
                .map(crate::notify::to_wire)
                .collect::<Result<_, _>>()?,
        })
    }

    pub(crate) async fn ack_notifications(
        &self,
        peer: PeerIdentity,
        request: Request<wire::AckNotificationsRequest>,
    ) -> Result<wire::AckNotificationsResponse, RpcError> {
        let ids = request.into_inner().ids;
        if ids.len() > crate::notify::MAX_PER_CALL as usize {
            return Err(RpcError::InvalidField {
                field: "ids",
                reason: format!("at most {} per call", crate::notify::MAX_PER_CALL),
            });
        }
        if let Some(bad) = ids.iter().find(|id| !crate::notify::is_notification_id(id)) {
            return Err(RpcError::InvalidField {
                field: "ids",
                reason: format!("{bad:?} is not a notification id (ntf_ and 32 hex digits)"),
            });
        }
        let acknowledged = self
            .state
            .ledger
            .acknowledge_notifications(&peer.principal, &ids)
            .await?;
        Ok(wire::AckNotificationsResponse {
            acknowledged: u32::try_from(acknowledged).unwrap_or(u32::MAX),
        })
    }

    pub(crate) async fn public_keys(
        &self,
        _peer: PeerIdentity,
        _request: Request<wire::PublicKeysRequest>,
    ) -> Result<wire::PublicKeysResponse, RpcError> {
        self.state
            .public_keys_served
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let current = self
            .state
            .keys
            .current()
            .map_err(|e| RpcError::Internal(format!("signing keys: {e}")))?;
        let served =
            crate::published_keys::served(&current.published, &self.state.keys, &self.state.ledger)
                .await;
        Ok(wire::PublicKeysResponse {
            keys: served.iter().map(published_key).collect(),
            log_key: self
                .state
                .log_key
                .as_ref()
                .map(|key| key.verifier_key().to_string())
                .unwrap_or_default(),
            retired_log_keys: self
                .state
                .log_key
                .iter()
                .flat_map(|key| key.retired())
                .map(ToString::to_string)
                .collect(),
        })
    }
}

/// A `Propose` with an idempotency key: the proposal it names, and what
/// that proposal must be for the key to be used again.
struct Keyed<'a> {
    key: &'a str,
    id: ProposalId,
    principal: &'a str,
    session: &'a countersign_verifier::Session,
    operation: &'a str,
    arguments_sha256: &'a str,
}

//! What an approval of a proposal can be: the deliveries its effect kind
//! offers (`Deliveries`, declared by each kind in the registry), enforced
//! at every approval before anything is recorded (its dry run included),
//! and the action, risk and deliveries each view carries so that every
//! approver interface offers only what will succeed and leads with what
//! the person decides.
//!
//! It also hands off an approval stuck the old way: recorded for a
//! direct delivery its effect kind does not offer (before the signer
//! refused that), so that no interface could run it. The person may hand
//! it off to the proposing session (its proof re-derived, never stored:
//! `recover.rs`) or revoke it.
//!
//! Must not: sign anything the ledger does not record as issued, or render
//! text for a person.

use countersign_identity::PeerIdentity;
use countersign_ledger::ProposalRecord;
use countersign_proto::v1 as wire;
use countersign_registry::{CanonicalArgs, Deliveries, Operation};
use time::OffsetDateTime;

use crate::convert::{Delivery, Session, action_view, format_time, wire_deliveries};
use crate::decide::approver_path;
use crate::error::RpcError;
use crate::service::SignerService;

/// `delivery_not_offered` unless `op`'s effect kind offers `delivery` of
/// `record`, bound to `execute_in_session` when the person named one.
pub(crate) fn offered(
    record: &ProposalRecord,
    op: &Operation,
    delivery: Delivery,
    execute_in_session: Option<&Session>,
) -> Result<(), RpcError> {
    let kind = op.effect.kind();
    let deliveries = kind.deliveries();
    let refused = |what| RpcError::DeliveryNotOffered {
        id: record.proposal.id.to_string(),
        kind: kind.name(),
        what,
    };
    let other_session = execute_in_session.is_some_and(|s| *s != record.proposal.session);
    match (deliveries, delivery) {
        // Approving creates a rule; where a proof would go means nothing.
        (Deliveries::NoProof, _) | (Deliveries::AnyHead, _) => Ok(()),
        (Deliveries::HandoffOnly, Delivery::Direct) => Err(refused(
            "only the gateway, which holds the upstream's connection, runs it, so it cannot run at an approver's interface; approve it for the proposing session (a handoff)",
        )),
        (Deliveries::ProposingSession, Delivery::Direct) => Err(refused(
            "only the agent's hook waiting in the proposing session runs it, so it cannot run at an approver's interface; approve it for the proposing session (a handoff)",
        )),
        (Deliveries::ProposingSession, Delivery::Handoff) if other_session => Err(refused(
            "only the agent's hook waiting in the proposing session runs it, never another session; approve it for the proposing session",
        )),
        (Deliveries::HandoffOnly | Deliveries::ProposingSession, Delivery::Handoff) => Ok(()),
    }
}

/// The view's action, risk, effect kind and deliveries, from `op` (the
/// registry as last loaded) when it is still the operation `view` was
/// proposed under; left empty otherwise (an approval would be refused
/// `contract_changed`).
pub(crate) fn describe(view: &mut wire::ProposalView, op: Option<&Operation>) {
    let Some(op) = op.filter(|op| op.contract_revision() == view.contract_revision) else {
        return;
    };
    let Ok(args) = CanonicalArgs::from_stored(&view.arguments_json) else {
        return;
    };
    view.action = Some(action_view(op.action(&args)));
    view.risk = op.risk().as_str().to_owned();
    let kind = op.effect.kind();
    view.effect_kind = kind.name().to_owned();
    view.deliveries = wire_deliveries(kind.deliveries()).into();
}

impl SignerService {
    /// A person's handoff of `record`'s approval, recorded for a direct
    /// delivery that its effect kind does not offer, to the proposing
    /// session (checked only, on a dry run). Anything else approved is
    /// `not_pending`, as before: a direct approval of an effect any head
    /// runs is the person's own to use, a handed-off one waits already.
    /// An operation that requires a passkey is refused `passkey_required`:
    /// the assertion bound the original delivery; revoke it instead.
    pub(crate) async fn hand_off_approved(
        &self,
        peer: &PeerIdentity,
        record: ProposalRecord,
        dry_run: bool,
    ) -> Result<wire::DecideResponse, RpcError> {
        let id = record.proposal.id.to_string();
        let not_pending = || RpcError::NotPending {
            id: id.clone(),
            status: record.status.as_str().to_owned(),
        };
        let registry = self.registry_now()?;
        let (op, _) = self.approvable(&registry, &record)?;
        if op.effect.kind().deliveries().direct() {
            return Err(not_pending());
        }
        let now = OffsetDateTime::now_utc();
        let issuance = match &record.issuance {
            Some(issuance) if now < issuance.expires_at => issuance,
            _ => return Err(not_pending()),
        };
        let ledger = &self.state.ledger;
        if ledger
            .approved_for_handoff(&id, &issuance.proof_sha256)
            .await?
        {
            return Err(not_pending());
        }
        if self.passkey_required(op) {
            return Err(RpcError::PasskeyRequired);
        }
        if !dry_run {
            let _changed = self.state.changes.on_drop(&peer.principal, &id);
            ledger
                .record_hand_off(
                    &id,
                    &peer.principal,
                    &issuance.proof_sha256,
                    &approver_path(peer),
                )
                .await?;
            self.recover_handoff(&record, now).await?;
            tracing::info!(proposal_id = %id, proof_sha256 = %issuance.proof_sha256, "a direct approval handed off to the proposing session");
        }
        let view = match dry_run {
            true => self.view_of(&record).await?,
            false => self.view(&record.proposal.id).await?,
        };
        Ok(wire::DecideResponse {
            proposal: Some(view),
            proof_sha256: if dry_run {
                String::new()
            } else {
                issuance.proof_sha256.clone()
            },
            expires_at: format_time(issuance.expires_at)?,
            ..Default::default()
        })
    }
}

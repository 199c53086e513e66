//! What an approval of a proposal can be: the deliveries its effect kind
//! offers (`Deliveries`, declared by each kind in the registry), enforced
//! at every approval before anything is recorded (its dry run included),
//! and the action, risk and deliveries each view carries so that every
//! approver interface offers only what will succeed and leads with what
//! the person decides.
//!
//! Must not: record, sign or render text for a person.

use countersign_ledger::ProposalRecord;
use countersign_proto::v1 as wire;
use countersign_registry::{CanonicalArgs, Deliveries, Operation};

use crate::convert::{Delivery, Session, action_view, wire_deliveries};
use crate::error::RpcError;

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

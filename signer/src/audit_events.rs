//! `AuditEvents` (role notifier): the ledger's events in transparency-log
//! leaf order, for the notify process's OCSF stream.
//!
//! Owns: sequencing what was written since the last round before reading
//! (so a committed event is readable at once, not at the next checkpoint),
//! the bound on one answer, and each event's proposal operation. Must not:
//! answer anything but what the ledger stores (no proof, no argument value
//! is there to answer).

use std::collections::HashMap;

use countersign_proto::v1 as wire;
use tonic::Request;

use crate::error::RpcError;
use crate::service::SignerService;

/// The most events one answer carries.
pub(crate) const MAX_PER_CALL: u32 = 500;

impl SignerService {
    pub(crate) async fn audit_events(
        &self,
        _peer: countersign_identity::PeerIdentity,
        request: Request<wire::AuditEventsRequest>,
    ) -> Result<wire::AuditEventsResponse, RpcError> {
        let request = request.into_inner();
        let limit = match request.limit {
            0 => MAX_PER_CALL,
            n if n <= MAX_PER_CALL => n,
            _ => {
                return Err(RpcError::InvalidField {
                    field: "limit",
                    reason: format!("must be 0..={MAX_PER_CALL}"),
                });
            }
        };
        let ledger = &self.state.ledger;
        ledger.sequence_events().await?;
        let rows = ledger.events_from_leaf(request.from_leaf, limit).await?;
        let mut operations: HashMap<String, String> = HashMap::new();
        let mut events = Vec::with_capacity(rows.len());
        for (leaf, event) in rows {
            let operation = match &event.proposal_id {
                None => String::new(),
                Some(pid) => match operations.get(pid) {
                    Some(operation) => operation.clone(),
                    None => {
                        let operation = ledger
                            .proposal(pid)
                            .await?
                            .map(|record| record.proposal.operation)
                            .unwrap_or_default();
                        operations.insert(pid.clone(), operation.clone());
                        operation
                    }
                },
            };
            events.push(wire::AuditEvent {
                leaf_index: leaf,
                id: event.id,
                chain: event.chain,
                seq: event.seq,
                at: event.at,
                kind: event.kind,
                proposal_id: event.proposal_id.unwrap_or_default(),
                actor: event.actor,
                details_json: event.details.to_string(),
                prev_hash: event.prev_hash,
                hash: event.hash,
                operation,
            });
        }
        Ok(wire::AuditEventsResponse { events })
    }
}

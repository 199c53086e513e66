//! The head's own view of its proposals: `ListProposals` and `Withdraw`.
//!
//! A head may withdraw its principal's proposal only while no decision was
//! made; a withdrawn proposal can never be approved. Neither RPC can decide,
//! issue or reveal a proof.

use countersign_ledger::ProposalStatus;
use countersign_proto::v1 as wire;
use tonic::Request;

use crate::convert::ProposalId;
use crate::error::RpcError;
use crate::service::{SignerService, authorize, roles};

/// How many proposals `ListProposals` returns when the request names no limit.
const DEFAULT_LIMIT: u32 = 100;
/// The most `ListProposals` returns.
const MAX_LIMIT: u32 = 500;

/// Every status a proposal can have, as named on the wire.
const STATUSES: &[ProposalStatus] = &[
    ProposalStatus::Pending,
    ProposalStatus::Denied,
    ProposalStatus::Withdrawn,
    ProposalStatus::Approved,
    ProposalStatus::Revoked,
    ProposalStatus::Expired,
    ProposalStatus::Applied,
    ProposalStatus::Failed,
    ProposalStatus::Uncertain,
];

impl SignerService {
    pub(crate) async fn list_proposals(
        &self,
        request: Request<wire::ListProposalsRequest>,
    ) -> Result<wire::ListPendingResponse, RpcError> {
        let peer = authorize(&request, "ListProposals", roles::LIST_PROPOSALS)?;
        let wire::ListProposalsRequest { status, limit } = request.into_inner();
        let wanted = match status.as_str() {
            "" => None,
            name => Some(
                *STATUSES
                    .iter()
                    .find(|s| s.as_str() == name)
                    .ok_or_else(|| RpcError::InvalidField {
                        field: "status",
                        reason: format!("unknown status {name:?}"),
                    })?,
            ),
        };
        let limit = match limit {
            0 => DEFAULT_LIMIT,
            n if n <= MAX_LIMIT => n,
            _ => {
                return Err(RpcError::InvalidField {
                    field: "limit",
                    reason: format!("at most {MAX_LIMIT}"),
                });
            }
        };
        // A status filter applies after the limit: the newest `limit`
        // proposals, then those in the wanted status.
        let records = self
            .state
            .ledger
            .proposals_of(&peer.principal, limit)
            .await?;
        let proposals = records
            .iter()
            .filter(|r| wanted.is_none_or(|w| r.status == w))
            .map(|r| self.view_of(r))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(wire::ListPendingResponse { proposals })
    }

    pub(crate) async fn withdraw(
        &self,
        request: Request<wire::WithdrawRequest>,
    ) -> Result<wire::ProposalView, RpcError> {
        let peer = authorize(&request, "Withdraw", roles::WITHDRAW)?;
        let id = ProposalId::try_from(request.into_inner().proposal_id)?;
        let record = self.owned_proposal(&id, &peer.principal).await?;
        if record.status != ProposalStatus::Pending {
            return Err(RpcError::NotPending {
                id: record.proposal.id,
                status: record.status.as_str().to_owned(),
            });
        }
        self.state
            .ledger
            .record_withdrawal(id.as_str(), &peer.principal, "withdrawn by the proposer")
            .await?;
        tracing::info!(proposal_id = id.as_str(), "withdrawn");
        self.view(&id).await
    }
}

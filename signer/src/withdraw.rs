//! The head's own view of its proposals: `ListProposals` and `Withdraw`.
//!
//! A list with a status filter is the newest proposals in that status (up
//! to a bounded scan), not the newest proposals filtered afterwards.
//!
//! A head may withdraw its principal's proposal only while no decision was
//! made; a withdrawn proposal can never be approved. Neither RPC can decide,
//! issue or reveal a proof.

use countersign_identity::PeerIdentity;
use countersign_proto::v1 as wire;
use tonic::Request;

use crate::convert::{parse_proposal_id, status_filter};
use crate::error::RpcError;
use crate::service::SignerService;

/// How many proposals `ListProposals` returns when the request names no limit.
const DEFAULT_LIMIT: u32 = 100;
/// The most `ListProposals` returns.
const MAX_LIMIT: u32 = 500;
/// The most proposals `ListProposals` reads to find `limit` in one status:
/// older ones are not searched (a bound on one request's work).
const MAX_SCAN: u32 = 10_000;

impl SignerService {
    pub(crate) async fn list_proposals(
        &self,
        peer: PeerIdentity,
        request: Request<wire::ListProposalsRequest>,
    ) -> Result<wire::ListPendingResponse, RpcError> {
        let wire::ListProposalsRequest { status, limit } = request.into_inner();
        let wanted = status_filter(status)?;
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
        // The newest `limit` proposals in the wanted status. A status is
        // derived at read time, so it cannot be a condition of the query:
        // read a growing window of the newest proposals until it holds
        // `limit` of them, runs out, or reaches `MAX_SCAN`. Each window is
        // read afresh, so a proposal made meanwhile is never counted twice.
        let mut window = limit;
        let proposals = loop {
            let records = self
                .state
                .ledger
                .proposals_of(&peer.principal, window)
                .await?;
            let exhausted = records.len() < window as usize || window >= MAX_SCAN;
            let found: Vec<_> = records
                .iter()
                .filter(|r| wanted.is_none_or(|w| r.status == w))
                .take(limit as usize)
                .collect();
            if found.len() == limit as usize || wanted.is_none() || exhausted {
                let mut views = Vec::with_capacity(found.len());
                for record in found {
                    views.push(self.view_of(record).await?);
                }
                break views;
            }
            window = window.saturating_mul(4).min(MAX_SCAN);
        };
        Ok(wire::ListPendingResponse { proposals })
    }

    pub(crate) async fn withdraw(
        &self,
        peer: PeerIdentity,
        request: Request<wire::WithdrawRequest>,
    ) -> Result<wire::ProposalView, RpcError> {
        let id = parse_proposal_id(request.into_inner().proposal_id)?;
        let record = self.owned_proposal(&id, &peer.principal).await?;
        SignerService::still_pending(&record)?;
        let _changed = self.state.changes.on_drop(&peer.principal, id.as_str());
        self.state
            .ledger
            .record_withdrawal(id.as_str(), &peer.principal, "withdrawn by the proposer")
            .await?;
        tracing::info!(proposal_id = id.as_str(), "withdrawn");
        self.view(&id).await
    }
}

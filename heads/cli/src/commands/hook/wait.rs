//! Waiting for a proposal's decision, up to a deadline.

use std::time::{Duration, Instant};

use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{GetProposalRequest, ProposalStatus, ProposalView};
use countersign_verifier::ProposalId;
use tonic::transport::Channel;

/// How often the proposal is read while it waits.
const EVERY: Duration = Duration::from_millis(200);

/// The proposal once it is no longer pending, or `None` when `deadline`
/// passed first.
pub(super) async fn decision(
    head: &mut SignerClient<Channel>,
    id: &ProposalId,
    deadline: Instant,
) -> Result<Option<ProposalView>, String> {
    loop {
        let view = current(head, id).await?;
        if view.status() != ProposalStatus::Pending {
            return Ok(Some(view));
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(None);
        }
        tokio::time::sleep(EVERY.min(deadline - now)).await;
    }
}

/// The proposal as it stands.
pub(super) async fn current(
    head: &mut SignerClient<Channel>,
    id: &ProposalId,
) -> Result<ProposalView, String> {
    head.get_proposal(GetProposalRequest {
        proposal_id: id.to_string(),
    })
    .await
    .map(tonic::Response::into_inner)
    .map_err(|status| format!("cannot read proposal {id}: {}", status.message()))
}

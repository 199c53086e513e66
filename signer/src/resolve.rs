//! `ResolveUncertain`: a person's resolution of an execution whose intent
//! was recorded and whose completion never was (a head killed, a lost
//! connection). Whether the effect happened is a person's judgement, so
//! only an approver of the proposal's principal may record it, and the
//! ledger records who: the approver identity of the caller's certificate
//! (`approver:<principal>`, or `approver:<principal>/<name>` for a named
//! approver credential), never a request field. The ledger refuses it while the execution's
//! lease runs, so a resolution never overtakes a head still running the
//! effect.

use countersign_identity::PeerIdentity;
use countersign_ledger::LedgerError;
use countersign_proto::v1 as wire;
use tonic::Request;

use crate::convert::parse_proposal_id;
use crate::decide::approver_path;
use crate::error::RpcError;
use crate::service::SignerService;

impl SignerService {
    pub(crate) async fn resolve_uncertain(
        &self,
        peer: PeerIdentity,
        request: Request<wire::ResolveUncertainRequest>,
    ) -> Result<wire::ResolveUncertainResponse, RpcError> {
        let wire::ResolveUncertainRequest {
            proposal_id,
            applied,
        } = request.into_inner();
        let id = parse_proposal_id(proposal_id)?;
        self.owned_proposal(&id, &peer.principal).await?;
        let resolved_by = format!("approver:{}", approver_path(&peer));
        let _changed = self.state.changes.on_drop(&peer.principal, id.as_str());
        match self
            .state
            .ledger
            .resolve_uncertain(id.as_str(), applied, &resolved_by)
            .await
        {
            Ok(_) => {}
            Err(LedgerError::NotUncertain(id)) => return Err(RpcError::NotUncertain(id)),
            Err(LedgerError::StillRunning(id, until)) => {
                return Err(RpcError::StillRunning { id, until });
            }
            Err(other) => return Err(other.into()),
        }
        tracing::info!(proposal_id = id.as_str(), applied, %resolved_by, "uncertain execution resolved");
        Ok(wire::ResolveUncertainResponse {
            proposal: Some(self.view(&id).await?),
            resolved_by,
        })
    }
}

//! `SpentProof` (role head, the proposal's own principal): the issued
//! proof of a proposal, for an evidence bundle (`countersign evidence
//! export`, docs/evidence.md).
//!
//! The ledger keeps no proof. The proof is re-derived from the recorded
//! claims exactly as a handoff is after a restart (`recover.rs`): Ed25519
//! and PASETO v4.public are deterministic, so the same claims under the
//! same key are the issued proof byte for byte, and it is returned only if
//! its SHA-256 (and consume digest) is the issuance's, or that of the proof
//! another signer signed again for the nonce (`recover.rs`): a signer
//! returns the one its keys reproduce, which an evidence bundle's
//! verifier checks against the `intent` event. Only once the proof
//! is spent, its nonce consumed (applied, failed or uncertain) and past
//! its expiry: then no gate accepts it and no receiver that checks `exp`
//! does, so in a bundle it authorizes nothing. Must not: log the proof,
//! or hand out one that is live.

use countersign_identity::PeerIdentity;
use countersign_proto::v1 as wire;
use tonic::Request;

use crate::convert::{format_time, parse_proposal_id};
use crate::error::RpcError;
use crate::service::SignerService;

impl SignerService {
    pub(crate) async fn spent_proof(
        &self,
        peer: PeerIdentity,
        request: Request<wire::SpentProofRequest>,
    ) -> Result<wire::SpentProofResponse, RpcError> {
        let id = parse_proposal_id(request.into_inner().proposal_id)?;
        let record = self.owned_proposal(&id, &peer.principal).await?;
        let not_spent = |why: String| RpcError::ProofNotSpent {
            id: id.as_str().to_owned(),
            why,
        };
        let Some(issuance) = record.issuance.as_ref() else {
            return Err(not_spent(format!(
                "it is {}, no proof was issued",
                record.status
            )));
        };
        if !record.status.is_consumed() {
            return Err(not_spent(format!("it is {}, not consumed", record.status)));
        }
        let now = time::OffsetDateTime::now_utc();
        if now < issuance.expires_at {
            let at = format_time(issuance.expires_at)?;
            return Err(not_spent(format!("it expires at {at}")));
        }
        let claims = self.issued_claims(&record, issuance).await?;
        // The issued proof, or the one another signer signed again for
        // its nonce, whichever this signer's keys reproduce.
        let proof = self.rederive(&claims, issuance)?;
        let proof_sha256 = proof.sha256_hex();
        tracing::info!(
            proposal_id = %id.as_str(), proof_sha256 = %proof_sha256,
            "a spent proof re-derived for an evidence bundle"
        );
        Ok(wire::SpentProofResponse {
            proof: proof.expose_secret().to_owned(),
            proof_sha256,
        })
    }
}

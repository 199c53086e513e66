//! `ReissueForReconcile`: the proof of an uncertain, replay-safe webhook,
//! signed again so that reconcile can re-send the request exactly as it was
//! first sent, which a receiver accepts only with a proof it can verify.
//!
//! The ledger keeps no proof, and must not. What it keeps is enough to sign
//! the same claims again: the issuance's bound facts (nonce, principal,
//! session, proposal, operation, arguments hash, revisions, provenance,
//! audience), the proposal's canonical arguments and the passkey assertion
//! recorded with the approval. Only `iat`, `nbf` and `exp` are new (the
//! policy's lifetime for the operation, from now), so the receiver
//! verifies it and deduplicates by its `jti`, the `Idempotency-Key`.
//!
//! Refused unless the proposal is the caller's principal's, its execution
//! is uncertain (an intent recorded, never completed) and no head may still
//! be running it, its operation is, under the contract approved, of a kind
//! whose proof may be re-issued (`EffectKind::proof_reissuable`: a
//! `webhook`) and declared `replay_safe`, and the policy is the one
//! approved. Bounded, so that a head cannot keep an approval alive: only
//! within a window after the original proof's expiry (the operation's
//! execution lease, `EffectKind::intent_lease`: its timeout plus
//! `INTENT_LEASE_MARGIN`, from the registry and never from the head-written
//! intent, plus one proof lifetime), and at most [`MAX_REISSUES`] times per
//! proposal (counted from its `proof_reissued` events inside the ledger's
//! write transaction). Never on SQLite: its file is writable by its owner,
//! every head of a development installation, so an issuance row there proves nothing the
//! signer did; only PostgreSQL, where the heads' role cannot write
//! issuances, lets the signer trust its own rows. Every call is counted in
//! the `countersign_reissues` metric by result.
//! The nonce stays consumed and the intent stays as recorded: the proof
//! can start no execution, only let reconcile complete the recorded one.
//! Recorded as a `proof_reissued` event (the new proof's SHA-256, never the
//! proof). This module must not log or store a proof.

use countersign_identity::PeerIdentity;
use countersign_ledger::{LedgerError, ProofReissue, ProposalStatus};
use countersign_metrics::Issuance;
use countersign_proto::v1 as wire;
use countersign_verifier::Claims;
use time::Duration;
use tonic::Request;

use crate::convert::{format_time, parse_proposal_id};
use crate::error::RpcError;
use crate::issue::sign_claims_with;
use crate::service::{SignerService, now_seconds};

/// How many times one proposal's proof may be re-issued for reconcile.
pub(crate) const MAX_REISSUES: u32 = 3;

impl SignerService {
    /// `ReissueForReconcile`, as the module doc describes; each call is
    /// counted by result.
    pub(crate) async fn reissue_for_reconcile(
        &self,
        peer: PeerIdentity,
        request: Request<wire::ReissueForReconcileRequest>,
    ) -> Result<wire::ReissueForReconcileResponse, RpcError> {
        let result = self.reissue_checked(peer, request).await;
        self.state.metrics.reissue(match &result {
            Ok(_) => "reissued",
            Err(e) => e.reason().code(),
        });
        result
    }

    async fn reissue_checked(
        &self,
        peer: PeerIdentity,
        request: Request<wire::ReissueForReconcileRequest>,
    ) -> Result<wire::ReissueForReconcileResponse, RpcError> {
        let id = parse_proposal_id(request.into_inner().proposal_id)?;
        let record = self.owned_proposal(&id, &peer.principal).await?;
        if record.status != ProposalStatus::Uncertain {
            return Err(RpcError::NotUncertain(record.proposal.id.into()));
        }
        let issuance = record.issuance.clone().ok_or_else(|| {
            RpcError::Internal(format!("{} is uncertain without an issuance", id.as_str()))
        })?;
        // The contract and the policy a person approved, unchanged; the
        // stored arguments intact (the same check as an approval's).
        let registry = self.registry_now()?;
        let (op, args) = self.approvable(&registry, &record)?;
        if issuance.contract_revision != op.contract_revision() {
            return Err(RpcError::ContractChanged(record.proposal.operation));
        }
        if issuance.policy_revision != self.state.policy.revision() {
            return Err(RpcError::PolicyChanged);
        }
        // Only a kind whose receiver verifies the proof itself (a webhook)
        // has a proof worth signing again; its lease bounds the window.
        let effect = op.effect.kind();
        let lease = match effect.intent_lease() {
            Some(lease) if effect.proof_reissuable() => lease,
            _ => return Err(RpcError::NotAWebhook(op.name.clone())),
        };
        if !op.replay_safe {
            return Err(RpcError::NotReplaySafe(op.name.clone()));
        }
        // The issuance the signer recorded binds this proposal; anything
        // else is a ledger that was written by someone other than the
        // signer, and nothing is signed from it.
        let p = &record.proposal;
        if args.sha256_hex() != issuance.arguments_sha256
            || issuance.proposal_id != p.id
            || issuance.principal != p.principal
            || issuance.operation != p.operation
            || issuance.contract_revision != p.contract_revision
            || issuance.policy_revision != p.policy_revision
        {
            return Err(RpcError::Internal(format!(
                "the issuance of {} does not bind its proposal",
                id.as_str()
            )));
        }
        let lifetime = i64::try_from(self.state.policy.lifetime_for(op))
            .map_err(|_| RpcError::Internal("lifetime out of range".into()))?;
        let now = now_seconds()?;
        // The window: the original expiry, plus the execution lease as the
        // registry sets it (a head writes the intent's own lease), plus
        // one lifetime for reconcile to re-send in.
        let closes_at = issuance
            .expires_at
            .saturating_add(lease)
            .saturating_add(Duration::seconds(lifetime));
        if now > closes_at {
            return Err(RpcError::ReissueWindowClosed {
                id: record.proposal.id.to_string(),
                closed_at: format_time(closes_at)?,
            });
        }
        if self.state.ledger.is_sqlite() {
            return Err(RpcError::ReissueUnavailableOnSqlite);
        }
        let expires_at = now + Duration::seconds(lifetime);
        // The issued claims, as the ledger recorded them (the handoff's
        // recovery rebuilds the same); only the times are new.
        let claims = Claims {
            iat: now,
            nbf: now,
            exp: expires_at,
            ..self.issued_claims(&record, &issuance).await?
        };
        let keys = self
            .state
            .keys
            .current()
            .map_err(|e| RpcError::Internal(format!("signing keys: {e}")))?;
        let proof = sign_claims_with(keys.signer.as_ref(), &claims)
            .map_err(|e| RpcError::Internal(format!("signing: {e}")))?;
        let proof_sha256 = proof.sha256_hex();
        // Checked again inside the ledger's write transaction: still
        // uncertain under this nonce, and no head running it. On a refusal
        // the proof is dropped (zeroized) unseen, and nothing is recorded.
        let recorded = self
            .state
            .ledger
            .record_reissue(&ProofReissue {
                proposal_id: issuance.proposal_id.clone(),
                nonce: issuance.nonce.clone(),
                proof_sha256: proof_sha256.clone(),
                expires_at,
                actor: peer.principal.to_string(),
                max_reissues: MAX_REISSUES,
            })
            .await;
        match recorded {
            Ok(()) => {}
            Err(LedgerError::NotUncertain(id)) => return Err(RpcError::NotUncertain(id)),
            Err(LedgerError::StillRunning(id, until)) => {
                return Err(RpcError::StillRunning { id, until });
            }
            Err(LedgerError::ReissueLimitReached(id, count)) => {
                return Err(RpcError::ReissueLimitReached { id, count });
            }
            Err(other) => return Err(other.into()),
        }
        self.state.metrics.issued(Issuance::Reissue, None);
        let expires_at = format_time(expires_at)?;
        tracing::info!(
            proposal_id = id.as_str(), %proof_sha256, %expires_at,
            "proof re-issued for reconcile"
        );
        // The wire message needs a plain String; prost owns it from here.
        Ok(wire::ReissueForReconcileResponse {
            proof: proof.expose_secret().to_owned(),
            proof_sha256,
            expires_at,
        })
    }
}

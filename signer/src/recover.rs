//! Handing over an approval that waited for a head across a signer
//! restart, without ever storing the proof.
//!
//! The handoff store (`handoff.rs`) lives in memory. When a claim finds no
//! entry, this module looks in the ledger for an approval recorded for a
//! handoff (`Ledger::approved_for_handoff`) that is still approved (issued,
//! not consumed, not revoked, not expired) and re-derives its proof: every
//! claim is recorded (the issuance row, the proposal's canonical arguments,
//! the passkey assertion's credential for `amr`/`pkh`; `grant` from a
//! rule approval's provenance `rule:<id>@<version>`), and Ed25519 signing, like PASETO v4.public over it, is
//! deterministic, so the same claims signed by the same key are the same
//! proof, byte for byte. The result counts only if its SHA-256 is the
//! issuance's `proof_sha256` (and its consume key's digest the recorded
//! one, where recorded): so the signer never hands out a proof it did not
//! issue, and a row written into the ledger by anyone else cannot make it
//! sign claims of their choosing (they cannot know the hash of a signature
//! they cannot make). The active key is tried first, then the verifying
//! ones (the approval may predate a rotation); a retired key is gone, and
//! so is the approval (`handoff_unrecoverable`).
//!
//! With two signers of one PostgreSQL ledger, each holding its own key, a
//! handoff claimed through the signer that did not issue it (the issuing
//! one was lost, or the head reached the other first) is reproduced by no
//! key that one holds. It then signs the same recorded claims under its
//! own key and records that proof's hash and
//! consume digest beside the issuance (`resign`, `resigned_proofs`), once
//! per nonce: a consumption may present either proof, and the ledger's
//! single-use nonce still allows one. Not on SQLite, and not for a key
//! the ledger retired.
//!
//! Must not: store or log a proof, sign anything the ledger does not
//! record as issued, or hand over a direct approval.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_ledger::{
    IssuanceRecord, LedgerError, ProposalRecord, ProposalStatus, ResignedProof,
};
use countersign_registry::CanonicalArgs;
use countersign_verifier::claims::ISSUER;
use countersign_verifier::{AuthMethod, Claims, Grant, KeyStatus, PasskeyAssurance, Proof};
use time::OffsetDateTime;

use crate::error::RpcError;
use crate::issue::sign_claims_with;
use crate::key::ProofSigner;
use crate::service::SignerService;

impl SignerService {
    /// Puts the approval of `record` back into the handoff store if the
    /// ledger shows one waiting for a head and this signer can re-derive
    /// its proof. `NoLiveHandoff` when there is none (pending, decided
    /// otherwise, approved for direct delivery, revoked, expired, used);
    /// `HandoffUnrecoverable` when no key reproduces the issued proof.
    /// The caller then claims from the store as usual, which checks the
    /// session.
    pub(crate) async fn recover_handoff(
        &self,
        record: &ProposalRecord,
        now: OffsetDateTime,
    ) -> Result<(), RpcError> {
        let id = &record.proposal.id;
        let issuance = match (&record.status, &record.issuance) {
            (ProposalStatus::Approved, Some(issuance)) if now < issuance.expires_at => issuance,
            _ => return Err(RpcError::NoLiveHandoff),
        };
        let ledger = &self.state.ledger;
        if !ledger
            .approved_for_handoff(id, &issuance.proof_sha256)
            .await?
        {
            // Approved for the person's own use (a proof file): never a
            // head's to claim.
            return Err(RpcError::NoLiveHandoff);
        }
        let claims = self.issued_claims(record, issuance).await?;
        let proof = match self.rederive(&claims, issuance) {
            Err(RpcError::HandoffUnrecoverable(_)) => self.resign(&claims, issuance).await?,
            derived => derived?,
        };
        let adopted = self.state.handoffs.adopt(
            id,
            proof,
            &issuance.principal,
            &issuance.session,
            issuance.expires_at,
            now,
        );
        tracing::info!(
            proposal_id = %id, proof_sha256 = %issuance.proof_sha256, adopted,
            "handoff re-derived from the ledger"
        );
        Ok(())
    }

    /// The claims `Decide` signed for `issuance`, as the ledger recorded
    /// them (see `claims_of`), with the credential of the passkey
    /// assertion stored with the approval, if one authorized it. Shared by
    /// the handoff's recovery and `ReissueForReconcile`.
    pub(crate) async fn issued_claims(
        &self,
        record: &ProposalRecord,
        issuance: &IssuanceRecord,
    ) -> Result<Claims, RpcError> {
        let id = &record.proposal.id;
        let credential = match self.state.ledger.passkey_assertion_for(id).await? {
            Some(stored) => Some(
                URL_SAFE_NO_PAD
                    .decode(&stored.assertion.credential_id)
                    .map_err(|e| {
                        RpcError::Internal(format!("stored credential id of {id}: {e}"))
                    })?,
            ),
            None => None,
        };
        claims_of(record, issuance, credential.as_deref())
    }

    /// The proof `claims` make under one of this signer's keys, if it is
    /// the one `issuance` records.
    pub(crate) fn rederive(
        &self,
        claims: &Claims,
        issuance: &IssuanceRecord,
    ) -> Result<Proof, RpcError> {
        let id = &issuance.proposal_id;
        let keys = &self.state.keys;
        let active = keys
            .current()
            .map_err(|e| RpcError::Internal(format!("signing keys: {e}")))?
            .signer;
        if let Some(proof) = reproduce(active.as_ref(), claims, issuance)? {
            return Ok(proof);
        }
        let verifying = keys
            .verifying_signers()
            .map_err(|e| RpcError::Internal(format!("signing keys: {e}")))?;
        for (key_id, signer) in verifying {
            match signer {
                Ok(signer) => {
                    if let Some(proof) = reproduce(signer.as_ref(), claims, issuance)? {
                        return Ok(proof);
                    }
                }
                Err(e) => {
                    tracing::warn!(proposal_id = %id, key_id, error = %e, "a verifying key could not be opened to re-derive a handoff");
                }
            }
        }
        tracing::warn!(
            proposal_id = %id, proof_sha256 = %issuance.proof_sha256,
            "no key this signer holds reproduces the issued proof"
        );
        Err(RpcError::HandoffUnrecoverable(id.clone()))
    }

    /// `claims`, the issuance's, signed again by this signer's active key
    /// because another signer issued them and holds (or held, if it was
    /// lost) the proof for a head, and recorded as such
    /// (`Ledger::record_resigned_proof`): only on PostgreSQL, where the
    /// head role cannot write issuances, so the rows are the signers' own; only once per nonce; and only if the issuing
    /// key is one the ledger's key set still serves (another signer's,
    /// active or verifying): a retired key's approvals stay unrecoverable,
    /// as a retirement promises. Everything else is `HandoffUnrecoverable`;
    /// an issuance consumed, revoked or expired meanwhile `NoLiveHandoff`.
    async fn resign(&self, claims: &Claims, issuance: &IssuanceRecord) -> Result<Proof, RpcError> {
        let id = &issuance.proposal_id;
        let unrecoverable = || RpcError::HandoffUnrecoverable(id.clone());
        let ledger = &self.state.ledger;
        let Some(issued_by) = issuance.key_id.as_deref() else {
            return Err(unrecoverable());
        };
        if ledger.is_sqlite() || issuance.resigned.is_some() {
            return Err(unrecoverable());
        }
        let served = ledger
            .signer_keys()
            .await?
            .iter()
            .any(|k| k.kid == issued_by && k.status != KeyStatus::Retired);
        if !served {
            tracing::warn!(
                proposal_id = %id, key_id = issued_by,
                "the key that issued a handoff is retired or unknown; not signed again"
            );
            return Err(unrecoverable());
        }
        let active = self
            .state
            .keys
            .current()
            .map_err(|e| RpcError::Internal(format!("signing keys: {e}")))?
            .signer;
        let proof = sign_claims_with(active.as_ref(), claims)
            .map_err(|e| RpcError::Internal(format!("signing: {e}")))?;
        let resigned = ResignedProof {
            proposal_id: id.clone(),
            nonce: issuance.nonce.clone(),
            proof_sha256: proof.sha256_hex(),
            consume_digest: proof.consume_key().digest(),
            key_id: active.key_id().to_owned(),
            replaces_key_id: issued_by.to_owned(),
        };
        let actor = format!(
            "countersign-signer@{}",
            countersign_identity::host::host_name()
        );
        match ledger.record_resigned_proof(&resigned, &actor).await {
            Ok(()) => {
                tracing::info!(
                    proposal_id = %id, proof_sha256 = %resigned.proof_sha256,
                    key_id = %resigned.key_id, replaces_key_id = issued_by,
                    "a handoff another signer issued, signed again under this signer's key"
                );
                Ok(proof)
            }
            // Another claim signed it again first: through this signer,
            // whose key reproduces it; through another, whose does not.
            Err(LedgerError::AlreadyResigned(_)) => {
                let record = ledger
                    .proposal(id)
                    .await?
                    .ok_or_else(|| RpcError::Internal(format!("{id} is gone")))?;
                match &record.issuance {
                    Some(again) => self.rederive(claims, again),
                    None => Err(unrecoverable()),
                }
            }
            Err(LedgerError::NotPending(_)) => Err(RpcError::NoLiveHandoff),
            Err(e) => Err(e.into()),
        }
    }
}

/// `claims` signed by `signer`, if that is the proof `issuance` records.
fn reproduce(
    signer: &dyn ProofSigner,
    claims: &Claims,
    issuance: &IssuanceRecord,
) -> Result<Option<Proof>, RpcError> {
    let proof = sign_claims_with(signer, claims)
        .map_err(|e| RpcError::Internal(format!("signing: {e}")))?;
    Ok(is_issued(&proof, issuance).then_some(proof))
}

/// Whether `proof` is one `issuance` records: the issued proof (its hash,
/// and its consume key's digest where the ledger keeps one), or the one
/// another signer signed again for it (`resigned_proofs`).
fn is_issued(proof: &Proof, issuance: &IssuanceRecord) -> bool {
    let sha256 = proof.sha256_hex();
    let issued = sha256 == issuance.proof_sha256
        && issuance
            .consume_digest
            .as_ref()
            .is_none_or(|digest| *digest == proof.consume_key().digest());
    issued
        || issuance.resigned.as_ref().is_some_and(|r| {
            r.proof_sha256 == sha256 && r.consume_digest == proof.consume_key().digest()
        })
}

/// The claims `Decide` signed for `issuance`, rebuilt from what the ledger
/// recorded: the issuance's bound fields, the proposal's stored canonical
/// arguments (checked against the recorded hash) and, when a passkey
/// authorized the approval, its credential id (`amr`, `pkh`).
fn claims_of(
    record: &ProposalRecord,
    issuance: &IssuanceRecord,
    passkey_credential: Option<&[u8]>,
) -> Result<Claims, RpcError> {
    let id = &record.proposal.id;
    let args = CanonicalArgs::from_stored(&record.proposal.arguments_json)
        .map_err(|e| RpcError::Internal(format!("stored arguments of {id}: {e}")))?;
    if args.sha256_hex() != issuance.arguments_sha256 {
        return Err(RpcError::Internal(format!(
            "stored arguments of {id} do not match the issuance"
        )));
    }
    let passkey = passkey_credential
        .map(|credential| {
            PasskeyAssurance::for_credential(vec![AuthMethod::PasskeyUv], credential)
                .map_err(|e| RpcError::Internal(format!("passkey assurance: {e}")))
        })
        .transpose()?;
    Ok(Claims {
        iss: ISSUER.to_owned(),
        aud: issuance.audience.clone(),
        sub: issuance.principal.clone(),
        sid: issuance.session.clone(),
        pid: issuance.proposal_id.clone(),
        op: issuance.operation.clone(),
        args: args.value().clone(),
        args_sha256: issuance.arguments_sha256.clone(),
        crev: issuance.contract_revision.clone(),
        prev: issuance.policy_revision.clone(),
        // A rule's approval: the grant its provenance names.
        grant: Grant::from_provenance(&issuance.provenance),
        prov: issuance.provenance.clone(),
        passkey,
        premise: record.proposal.premise.clone(),
        jti: issuance.nonce.clone(),
        iat: issuance.issued_at,
        nbf: issuance.issued_at,
        exp: issuance.expires_at,
    })
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use countersign_ledger::Proposal;

    use crate::key::ProofKey;

    const P: &str = "pr_0123456789abcdef0123456789abcdef";

    fn record() -> ProposalRecord {
        let args = CanonicalArgs::from_stored(r#"{"cron":"0 3 * * *","name":"nightly"}"#).unwrap();
        ProposalRecord {
            proposal: Proposal {
                id: "prop_0123456789abcdef0123456789abcdef".parse().unwrap(),
                principal: P.parse().unwrap(),
                session: "mcp-0123456789abcdef".parse().unwrap(),
                operation: "schedule.create".into(),
                arguments_json: args.text().to_owned(),
                arguments_sha256: args.sha256_hex().to_owned(),
                contract_revision: "1".repeat(64),
                policy_revision: "2".repeat(64),
                note: String::new(),
                preview: String::new(),
                created_at: OffsetDateTime::from_unix_timestamp(1_700_000_000).unwrap(),
                premise: None,
                decide_by: None,
                policy: None,
            },
            status: ProposalStatus::Approved,
            reason: None,
            issuance: None,
        }
    }

    /// The claims `Decide` would sign for `record`, as it builds them.
    fn issued_claims(record: &ProposalRecord, credential: Option<&[u8]>) -> Claims {
        let args = CanonicalArgs::from_stored(&record.proposal.arguments_json).unwrap();
        let iat = OffsetDateTime::from_unix_timestamp(1_700_000_100).unwrap();
        Claims {
            iss: ISSUER.to_owned(),
            aud: format!("countersign:{P}"),
            sub: P.into(),
            sid: "mcp-other".into(),
            pid: record.proposal.id.to_string(),
            op: record.proposal.operation.clone(),
            args: args.value().clone(),
            args_sha256: args.sha256_hex().to_owned(),
            crev: record.proposal.contract_revision.clone(),
            prev: record.proposal.policy_revision.clone(),
            grant: None,
            prov: format!("human:cert:{P}/console"),
            passkey: credential
                .map(|c| PasskeyAssurance::for_credential(vec![AuthMethod::PasskeyUv], c).unwrap()),
            premise: record.proposal.premise.clone(),
            jti: "n".repeat(43),
            iat,
            nbf: iat,
            exp: iat + time::Duration::minutes(5),
        }
    }

    #[test]
    fn the_recorded_claims_rederive_the_issued_proof_byte_for_byte() {
        let key = ProofKey::from_seed(&[7u8; 32]);
        let other = ProofKey::from_seed(&[8u8; 32]);
        let record = record();
        for credential in [None, Some(&b"credential-bytes"[..])] {
            let claims = issued_claims(&record, credential);
            let issued = sign_claims_with(&key, &claims).unwrap();
            let issuance = IssuanceRecord::from_claims(&claims, &issued);
            let rebuilt = claims_of(&record, &issuance, credential).unwrap();
            let again = reproduce(&key, &rebuilt, &issuance).unwrap().unwrap();
            assert_eq!(again.expose_secret(), issued.expose_secret());
            // Another key makes another proof, which is not the issued one.
            assert!(reproduce(&other, &rebuilt, &issuance).unwrap().is_none());
            // Without the passkey claims, or with them where there were
            // none, the proof differs: never handed out.
            let flipped = claims_of(
                &record,
                &issuance,
                credential.map_or(Some(&b"x"[..]), |_| None),
            )
            .unwrap();
            assert!(reproduce(&key, &flipped, &issuance).unwrap().is_none());
        }
    }

    #[test]
    fn a_recorded_hash_or_consume_digest_that_differs_is_not_the_issued_proof() {
        let key = ProofKey::from_seed(&[7u8; 32]);
        let record = record();
        let claims = issued_claims(&record, None);
        let issued = sign_claims_with(&key, &claims).unwrap();
        let mut issuance = IssuanceRecord::from_claims(&claims, &issued);
        assert!(is_issued(&issued, &issuance));
        issuance.consume_digest = None;
        assert!(is_issued(&issued, &issuance), "older rows keep no digest");
        issuance.consume_digest = Some("0".repeat(64));
        assert!(!is_issued(&issued, &issuance));
        let mut issuance = IssuanceRecord::from_claims(&claims, &issued);
        issuance.proof_sha256 = "0".repeat(64);
        assert!(!is_issued(&issued, &issuance));
    }

    #[test]
    fn the_proof_another_signer_signed_again_is_one_the_issuance_records() {
        let (key, other) = (
            ProofKey::from_seed(&[7u8; 32]),
            ProofKey::from_seed(&[8u8; 32]),
        );
        let claims = issued_claims(&record(), None);
        let issued = sign_claims_with(&key, &claims).unwrap();
        let again = sign_claims_with(&other, &claims).unwrap();
        let mut issuance = IssuanceRecord::from_claims(&claims, &issued);
        assert_eq!(issuance.key_id.as_deref(), Some(key.key_id()));
        assert!(!is_issued(&again, &issuance), "not without its record");
        let resigned = ResignedProof {
            proposal_id: issuance.proposal_id.clone(),
            nonce: issuance.nonce.clone(),
            proof_sha256: again.sha256_hex(),
            consume_digest: again.consume_key().digest(),
            key_id: other.key_id().to_owned(),
            replaces_key_id: key.key_id().to_owned(),
        };
        issuance.resigned = Some(resigned.clone());
        assert!(is_issued(&again, &issuance));
        assert!(is_issued(&issued, &issuance), "the issued proof still is");
        // The record's consume digest must be the proof's too.
        issuance.resigned = Some(ResignedProof {
            consume_digest: "0".repeat(64),
            ..resigned
        });
        assert!(!is_issued(&again, &issuance));
    }

    #[test]
    fn refuses_stored_arguments_that_do_not_match_the_issuance() {
        let key = ProofKey::from_seed(&[7u8; 32]);
        let record = record();
        let claims = issued_claims(&record, None);
        let issued = sign_claims_with(&key, &claims).unwrap();
        let mut issuance = IssuanceRecord::from_claims(&claims, &issued);
        issuance.arguments_sha256 = "0".repeat(64);
        assert!(matches!(
            claims_of(&record, &issuance, None),
            Err(RpcError::Internal(_))
        ));
    }
}

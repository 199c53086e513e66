//! Enrolling, removing and listing passkeys.
//!
//! The first passkey of a principal is enrolled with the enrolment code
//! (`code.rs`); every later enrolment, and every removal, with an
//! assertion of an active passkey over a challenge bound to that change.
//! The last active passkey is removed only through the administrative
//! path (`countersign-signer passkeys remove`), so approvals that need a
//! passkey are never left without a way to enrol one again except the
//! administrator's.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_ledger::{
    AssertionPurpose, ENROLMENT_CODE, LedgerError, PasskeyEnrolment, PasskeyRemoval,
};
use countersign_proto::v1 as wire;
use countersign_webauthn::challenge::{EnrolmentChallenge, RemovalChallenge};
use countersign_webauthn::parse_registration;
use sha2::{Digest, Sha256};
use time::OffsetDateTime;
use tonic::Request;

use super::challenges::random_bytes;
use super::decision::{challenge_reply, timeout_ms};
use super::{Purpose, active, assertion_from_wire, b64, check_assertion, passkey_view, raw_ids};
use crate::decide::approver_path;
use crate::error::RpcError;
use crate::service::{SignerService, authorize, roles};

/// Longest passkey name, in characters.
const MAX_NAME_CHARS: usize = 64;

impl SignerService {
    pub(crate) async fn begin_enrolment(
        &self,
        request: Request<wire::BeginEnrolmentRequest>,
    ) -> Result<wire::EnrolmentChallenge, RpcError> {
        let peer = authorize(&request, "BeginEnrolment", roles::PASSKEYS)?;
        let policy = self.passkey_policy()?;
        let passkeys = active(self.state.ledger.passkeys(&peer.principal).await?);
        let creation_challenge = random_bytes()?;
        let first = passkeys.is_empty();
        let (random, challenge) = if first {
            (creation_challenge, creation_challenge)
        } else {
            let random = random_bytes()?;
            (
                random,
                EnrolmentChallenge::derive(random, &creation_challenge),
            )
        };
        let challenge_id = self.state.challenges.insert(
            &peer.principal,
            Purpose::Enrol { creation_challenge },
            random,
            challenge,
        )?;
        let ids = raw_ids(&passkeys);
        Ok(wire::EnrolmentChallenge {
            challenge_id,
            creation_challenge: creation_challenge.to_vec(),
            rp_id: policy.rp.rp_id.clone(),
            user_id: user_handle(&peer.principal),
            user_name: peer.principal.clone(),
            exclude_credential_ids: ids.clone(),
            needs_enrolment_code: first,
            authorization_challenge: if first {
                Vec::new()
            } else {
                challenge.to_vec()
            },
            allowed_credential_ids: if first { Vec::new() } else { ids },
            timeout_ms: timeout_ms(),
        })
    }

    pub(crate) async fn enrol(
        &self,
        request: Request<wire::EnrolRequest>,
    ) -> Result<wire::PasskeyView, RpcError> {
        let peer = authorize(&request, "Enrol", roles::PASSKEYS)?;
        let policy = self.passkey_policy()?;
        let r = request.into_inner();
        let name = passkey_name(&r.name)?;
        let open = self
            .state
            .challenges
            .take(&r.challenge_id, &peer.principal)?;
        let Purpose::Enrol { creation_challenge } = open.purpose else {
            return Err(RpcError::ChallengeMismatch);
        };
        let credential = parse_registration(
            &r.attestation_object,
            &r.client_data_json,
            &policy.rp,
            &creation_challenge,
        )
        .map_err(RpcError::PasskeyRefused)?;
        let credential_id = b64(&credential.id);
        let _guard = self.state.passkey_lock.lock().await;
        if self.state.ledger.passkey(&credential_id).await?.is_some() {
            return Err(RpcError::PasskeyAlreadyEnrolled);
        }
        let passkeys = active(self.state.ledger.passkeys(&peer.principal).await?);
        let authorization = if passkeys.is_empty() {
            if r.authorization.is_some() || r.enrolment_code.is_empty() {
                return Err(RpcError::EnrolmentCodeRequired);
            }
            self.state
                .enrolment_codes
                .spend(&r.enrolment_code, OffsetDateTime::now_utc())?;
            None
        } else {
            let wire_assertion = r.authorization.ok_or(RpcError::AuthorizationRequired)?;
            if !r.enrolment_code.is_empty() {
                return Err(RpcError::AuthorizationRequired);
            }
            let (answered, assertion) = assertion_from_wire("authorization", wire_assertion)?;
            if answered != r.challenge_id || open.challenge == creation_challenge {
                return Err(RpcError::ChallengeMismatch);
            }
            Some(check_assertion(
                &passkeys,
                &policy.rp,
                &assertion,
                &open,
                AssertionPurpose::Enrol,
                credential_id.clone(),
                "",
            )?)
        };
        let authorized_by = authorization
            .as_ref()
            .map_or_else(|| ENROLMENT_CODE.to_owned(), |a| a.credential_id.clone());
        let enrolment = PasskeyEnrolment {
            credential_id: credential_id.clone(),
            principal: peer.principal.clone(),
            name,
            public_key: b64(&credential.public_key.to_cose()),
            sign_count: credential.sign_count,
            attestation_object: b64(&r.attestation_object),
            client_data_json: b64(&r.client_data_json),
            enrolled_by: approver_path(&peer),
            authorized_by: authorized_by.clone(),
        };
        self.state
            .ledger
            .enrol_passkey(&enrolment, authorization.as_ref())
            .await
            .map_err(challenge_used)?;
        tracing::info!(%credential_id, %authorized_by, "passkey enrolled");
        self.passkey_view_of(&credential_id).await
    }

    pub(crate) async fn begin_removal(
        &self,
        request: Request<wire::BeginRemovalRequest>,
    ) -> Result<wire::PasskeyChallenge, RpcError> {
        let peer = authorize(&request, "BeginRemoval", roles::PASSKEYS)?;
        let policy = self.passkey_policy()?;
        let id = request.into_inner().credential_id;
        let passkeys = active(self.state.ledger.passkeys(&peer.principal).await?);
        let raw = removable(&passkeys, &id)?;
        let random = random_bytes()?;
        let challenge = RemovalChallenge::derive(random, &raw);
        let challenge_id = self.state.challenges.insert(
            &peer.principal,
            Purpose::Remove { credential_id: raw },
            random,
            challenge,
        )?;
        Ok(challenge_reply(challenge_id, challenge, policy, &passkeys))
    }

    pub(crate) async fn remove_passkey(
        &self,
        request: Request<wire::RemovePasskeyRequest>,
    ) -> Result<wire::PasskeyView, RpcError> {
        let peer = authorize(&request, "RemovePasskey", roles::PASSKEYS)?;
        let policy = self.passkey_policy()?;
        let r = request.into_inner();
        let wire_assertion = r.authorization.ok_or(RpcError::AuthorizationRequired)?;
        let (challenge_id, assertion) = assertion_from_wire("authorization", wire_assertion)?;
        let open = self.state.challenges.take(&challenge_id, &peer.principal)?;
        let _guard = self.state.passkey_lock.lock().await;
        let passkeys = active(self.state.ledger.passkeys(&peer.principal).await?);
        let raw = removable(&passkeys, &r.credential_id)?;
        match &open.purpose {
            Purpose::Remove { credential_id } if *credential_id == raw => {}
            _ => return Err(RpcError::ChallengeMismatch),
        }
        let stored = check_assertion(
            &passkeys,
            &policy.rp,
            &assertion,
            &open,
            AssertionPurpose::Remove,
            r.credential_id.clone(),
            "",
        )?;
        let removal = self
            .state
            .ledger
            .remove_passkey(
                &r.credential_id,
                &approver_path(&peer),
                &stored.credential_id,
                Some(&stored),
            )
            .await
            .map_err(challenge_used)?;
        if removal != PasskeyRemoval::Removed {
            return Err(RpcError::UnknownPasskey);
        }
        tracing::info!(credential_id = %r.credential_id, authorized_by = %stored.credential_id, "passkey removed");
        self.passkey_view_of(&r.credential_id).await
    }

    pub(crate) async fn list_passkeys(
        &self,
        request: Request<wire::ListPasskeysRequest>,
    ) -> Result<wire::ListPasskeysResponse, RpcError> {
        let peer = authorize(&request, "ListPasskeys", roles::PASSKEYS)?;
        let records = self.state.ledger.passkeys(&peer.principal).await?;
        Ok(wire::ListPasskeysResponse {
            passkeys: records
                .iter()
                .map(super::passkey_view)
                .collect::<Result<_, _>>()?,
            required: self.state.passkeys.as_ref().is_some_and(|p| p.required),
        })
    }

    async fn passkey_view_of(&self, credential_id: &str) -> Result<wire::PasskeyView, RpcError> {
        let record = self
            .state
            .ledger
            .passkey(credential_id)
            .await?
            .ok_or_else(|| RpcError::Internal(format!("passkey {credential_id} vanished")))?;
        passkey_view(&record)
    }
}

/// The raw id of the active passkey `id` names, if it is not the last one.
fn removable(
    passkeys: &[countersign_ledger::PasskeyRecord],
    id: &str,
) -> Result<Vec<u8>, RpcError> {
    if !passkeys.iter().any(|p| p.credential_id == id) {
        return Err(RpcError::UnknownPasskey);
    }
    if passkeys.len() == 1 {
        return Err(RpcError::LastPasskey);
    }
    URL_SAFE_NO_PAD
        .decode(id)
        .map_err(|_| RpcError::UnknownPasskey)
}

/// The WebAuthn user handle of a principal: 16 bytes, stable, and not the
/// principal itself (handles should not be personal data).
fn user_handle(principal: &str) -> Vec<u8> {
    let mut hash = Sha256::new();
    hash.update(b"countersign-webauthn-user-v1\0");
    hash.update(principal.as_bytes());
    hash.finalize()[..16].to_vec()
}

/// A person's label for a passkey: 1 to 64 characters, no control characters.
fn passkey_name(name: &str) -> Result<String, RpcError> {
    let name = name.trim();
    let count = name.chars().count();
    if count == 0 || count > MAX_NAME_CHARS || name.chars().any(char::is_control) {
        return Err(RpcError::InvalidField {
            field: "name",
            reason: format!("1 to {MAX_NAME_CHARS} characters, no control characters"),
        });
    }
    Ok(name.to_owned())
}

/// What the ledger refused when it recorded a passkey write: an answered
/// challenge it already holds is a replay, and it repeats the signer's
/// checks on the credential (a race with a removal lands here).
pub(crate) fn challenge_used(e: LedgerError) -> RpcError {
    match e {
        LedgerError::ChallengeUsed => RpcError::ChallengeUnknown,
        LedgerError::DuplicatePasskey(_) => RpcError::PasskeyAlreadyEnrolled,
        LedgerError::UnusablePasskey(_) => RpcError::UnknownPasskey,
        other => other.into(),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_are_bounded_and_printable() {
        assert_eq!(passkey_name("  laptop ").unwrap(), "laptop");
        assert!(passkey_name("").is_err());
        assert!(passkey_name("a\u{7}b").is_err());
        assert!(passkey_name(&"x".repeat(65)).is_err());
        assert!(passkey_name(&"é".repeat(64)).is_ok());
    }

    #[test]
    fn the_user_handle_is_stable_and_per_principal() {
        assert_eq!(user_handle("pr_a"), user_handle("pr_a"));
        assert_ne!(user_handle("pr_a"), user_handle("pr_b"));
        assert_eq!(user_handle("pr_a").len(), 16);
    }
}

//! Enrolling, removing and listing passkeys.
//!
//! A passkey belongs to one approver: the approver certificate that
//! enrolled it (`enrolled_by`, its approver path). Every enrolment needs a
//! one-time enrolment code the signer's administrator drew for that
//! approver (`code.rs`); no assertion of another passkey stands in for it.
//! A removal needs an assertion of one of the caller's own passkeys over a
//! challenge bound to the removed one, which must be the caller's too. An
//! approver's last active passkey is removed only through the
//! administrative path (`countersign-signer passkeys remove`). Every
//! enrolment and removal is notified on the configured channels.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_identity::PeerIdentity;
use countersign_ledger::{
    AssertionPurpose, ENROLMENT_CODE, LedgerError, PasskeyEnrolment, PasskeyRecord, PasskeyRemoval,
};
use countersign_proto::v1 as wire;
use countersign_webauthn::challenge::RemovalChallenge;
use countersign_webauthn::{Assertion, WebAuthnError, parse_registration};
use sha2::{Digest, Sha256};
use tonic::Request;

use super::challenges::random_bytes;
use super::decision::{challenge_reply, timeout_ms};
use super::{
    Open, Purpose, active, assertion_from_wire, b64, check_assertion, passkey_view, raw_ids,
};
use crate::decide::approver_path;
use crate::error::RpcError;
use crate::notify::PasskeyChange;
use crate::service::SignerService;

/// Longest passkey name, in characters.
const MAX_NAME_CHARS: usize = 64;

impl SignerService {
    pub(crate) async fn begin_enrolment(
        &self,
        peer: PeerIdentity,
        _request: Request<wire::BeginEnrolmentRequest>,
    ) -> Result<wire::EnrolmentChallenge, RpcError> {
        let policy = self.passkey_policy()?;
        // Every active credential of the principal is excluded, whoever's:
        // a browser then refuses to make a second credential on an
        // authenticator that already holds one here (the ledger refuses
        // the same credential twice in any case).
        let passkeys = active(self.state.ledger.passkeys(&peer.principal).await?);
        let creation_challenge = random_bytes()?;
        let approver = approver_path(&peer);
        let challenge_id = self
            .state
            .challenges
            .insert(
                &approver,
                Purpose::Enrol,
                creation_challenge,
                creation_challenge,
            )
            .await?;
        Ok(wire::EnrolmentChallenge {
            challenge_id,
            creation_challenge: creation_challenge.to_vec(),
            rp_id: policy.rp.rp_id.clone(),
            user_id: user_handle(&approver),
            user_name: approver,
            exclude_credential_ids: raw_ids(&passkeys),
            timeout_ms: timeout_ms(),
        })
    }

    pub(crate) async fn enrol(
        &self,
        peer: PeerIdentity,
        request: Request<wire::EnrolRequest>,
    ) -> Result<wire::PasskeyView, RpcError> {
        self.passkey_policy()?;
        let r = request.into_inner();
        let name = passkey_name(&r.name)?;
        let owner = approver_path(&peer);
        let challenge_id = r.challenge_id.clone();
        let open = self.state.challenges.open(&challenge_id, &owner).await?;
        self.discarding_on_refusal(&challenge_id, self.enrol_answering(peer, r, open, name))
            .await
    }

    /// The rest of [`Self::enrol`], once its challenge is open.
    async fn enrol_answering(
        &self,
        peer: PeerIdentity,
        r: wire::EnrolRequest,
        open: Open,
        name: String,
    ) -> Result<wire::PasskeyView, RpcError> {
        let policy = self.passkey_policy()?;
        let owner = approver_path(&peer);
        let (Purpose::Enrol, creation_challenge) = (open.purpose, open.challenge) else {
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
        if self.state.ledger.passkey(&credential_id).await?.is_some() {
            return Err(RpcError::PasskeyAlreadyEnrolled);
        }
        if r.enrolment_code.trim().is_empty() {
            return Err(RpcError::EnrolmentCodeRequired);
        }
        // The code drawn for the approver this certificate names, and no
        // other: right or wrong, this attempt spends it.
        self.state
            .enrolment_codes
            .spend(peer.approver.as_ref(), &r.enrolment_code)
            .await?;
        let enrolment = PasskeyEnrolment {
            credential_id: credential_id.clone(),
            principal: peer.principal.to_string(),
            name: name.clone(),
            public_key: b64(&credential.public_key.to_cose()),
            sign_count: credential.sign_count,
            attestation_object: b64(&r.attestation_object),
            client_data_json: b64(&r.client_data_json),
            enrolled_by: owner.clone(),
            authorized_by: ENROLMENT_CODE.to_owned(),
            challenge: b64(&creation_challenge),
        };
        self.state
            .ledger
            .enrol_passkey(&enrolment, None)
            .await
            .map_err(challenge_used)?;
        tracing::info!(%credential_id, approver = %owner, "passkey enrolled");
        self.state
            .outbox
            .passkey_changed(
                &peer.principal,
                PasskeyChange::enrolled(&owner, &credential_id, &name),
            )
            .await;
        self.passkey_view_of(&credential_id).await
    }

    pub(crate) async fn begin_removal(
        &self,
        peer: PeerIdentity,
        request: Request<wire::BeginRemovalRequest>,
    ) -> Result<wire::PasskeyChallenge, RpcError> {
        let policy = self.passkey_policy()?;
        let id = request.into_inner().credential_id;
        let owner = approver_path(&peer);
        let passkeys = active(self.state.ledger.passkeys(&peer.principal).await?);
        let raw = removable(&passkeys, &owner, &id)?;
        let own = owned_by(passkeys, &owner);
        let random = random_bytes()?;
        let challenge = RemovalChallenge::derive(random, &raw);
        let challenge_id = self
            .state
            .challenges
            .insert(
                &owner,
                Purpose::Remove {
                    credential_id: b64(&raw),
                },
                random,
                challenge,
            )
            .await?;
        Ok(challenge_reply(challenge_id, challenge, policy, &own))
    }

    pub(crate) async fn remove_passkey(
        &self,
        peer: PeerIdentity,
        request: Request<wire::RemovePasskeyRequest>,
    ) -> Result<wire::PasskeyView, RpcError> {
        self.passkey_policy()?;
        let mut r = request.into_inner();
        let wire_assertion = r
            .authorization
            .take()
            .ok_or(RpcError::AuthorizationRequired)?;
        let (challenge_id, assertion) = assertion_from_wire("authorization", wire_assertion)?;
        let owner = approver_path(&peer);
        let open = self.state.challenges.open(&challenge_id, &owner).await?;
        self.discarding_on_refusal(
            &challenge_id,
            self.remove_answering(peer, r, open, assertion),
        )
        .await
    }

    /// The rest of [`Self::remove_passkey`], once its challenge is open.
    async fn remove_answering(
        &self,
        peer: PeerIdentity,
        r: wire::RemovePasskeyRequest,
        open: Open,
        assertion: Assertion,
    ) -> Result<wire::PasskeyView, RpcError> {
        let policy = self.passkey_policy()?;
        let owner = approver_path(&peer);
        let passkeys = active(self.state.ledger.passkeys(&peer.principal).await?);
        let raw = removable(&passkeys, &owner, &r.credential_id)?;
        match &open.purpose {
            Purpose::Remove { credential_id } if *credential_id == b64(&raw) => {}
            _ => return Err(RpcError::ChallengeMismatch),
        }
        let stored = check_assertion(
            &passkeys,
            &owner,
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
                &owner,
                &stored.credential_id,
                Some(&stored),
            )
            .await
            .map_err(challenge_used)?;
        if removal != PasskeyRemoval::Removed {
            return Err(RpcError::UnknownPasskey);
        }
        tracing::info!(credential_id = %r.credential_id, authorized_by = %stored.credential_id, approver = %owner, "passkey removed");
        let view = self.passkey_view_of(&r.credential_id).await?;
        self.state
            .outbox
            .passkey_changed(
                &peer.principal,
                PasskeyChange::removed(&owner, &r.credential_id, &view.name),
            )
            .await;
        Ok(view)
    }

    pub(crate) async fn list_passkeys(
        &self,
        peer: PeerIdentity,
        _request: Request<wire::ListPasskeysRequest>,
    ) -> Result<wire::ListPasskeysResponse, RpcError> {
        let records = owned_by(
            self.state.ledger.passkeys(&peer.principal).await?,
            &approver_path(&peer),
        );
        Ok(wire::ListPasskeysResponse {
            passkeys: records
                .iter()
                .map(super::passkey_view)
                .collect::<Result<_, _>>()?,
            required: self.state.passkeys.as_ref().is_some_and(|p| p.required),
        })
    }

    /// Runs `answer` to the open challenge `challenge_id`; if it fails,
    /// the challenge is discarded, as a challenge is given back at most
    /// once (a recorded answer took it in its own transaction already).
    pub(crate) async fn discarding_on_refusal<T>(
        &self,
        challenge_id: &str,
        answer: impl std::future::Future<Output = Result<T, RpcError>>,
    ) -> Result<T, RpcError> {
        let answered = answer.await;
        if answered.is_err() {
            self.state.challenges.discard(challenge_id).await;
        }
        answered
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

/// The passkeys of `records` that `owner` (an approver path) enrolled:
/// the only ones that approver sees and uses.
pub(crate) fn owned_by(records: Vec<PasskeyRecord>, owner: &str) -> Vec<PasskeyRecord> {
    records
        .into_iter()
        .filter(|p| p.enrolled_by == owner)
        .collect()
}

/// The raw id of the active passkey `id` names, if `owner` enrolled it and
/// it is not the last one `owner` has.
fn removable(passkeys: &[PasskeyRecord], owner: &str, id: &str) -> Result<Vec<u8>, RpcError> {
    let target = passkeys
        .iter()
        .find(|p| p.credential_id == id)
        .ok_or(RpcError::UnknownPasskey)?;
    if target.enrolled_by != owner {
        return Err(RpcError::NotYourPasskey);
    }
    if passkeys.iter().filter(|p| p.enrolled_by == owner).count() == 1 {
        return Err(RpcError::LastPasskey);
    }
    URL_SAFE_NO_PAD
        .decode(id)
        .map_err(|_| RpcError::UnknownPasskey)
}

/// The WebAuthn user handle of an approver (its path `<principal>` or
/// `<principal>/<name>`): 16 bytes, stable, and not the path itself
/// (handles should not be personal data). One per approver, so an
/// authenticator keeps each approver's discoverable credential apart.
fn user_handle(approver: &str) -> Vec<u8> {
    let mut hash = Sha256::new();
    hash.update(b"countersign-webauthn-user-v1\0");
    hash.update(approver.as_bytes());
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
        LedgerError::CounterNotIncreased { stored, received } => {
            RpcError::PasskeyRefused(WebAuthnError::CounterNotIncreased { stored, received })
        }
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
    fn the_user_handle_is_stable_and_per_approver() {
        assert_eq!(user_handle("pr_a"), user_handle("pr_a"));
        assert_ne!(user_handle("pr_a"), user_handle("pr_b"));
        assert_ne!(user_handle("pr_a/alice"), user_handle("pr_a/bob"));
        assert_eq!(user_handle("pr_a").len(), 16);
    }
}

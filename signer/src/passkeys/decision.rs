//! A passkey approval: the challenge `BeginDecision` derives from what the
//! approval will sign, and the check `Decide` runs on the assertion that
//! answers it.

use countersign_identity::PeerIdentity;
use countersign_ledger::{AssertionPurpose, PasskeyAssertionRecord, ProposalRecord};
use countersign_proto::v1 as wire;
use countersign_webauthn::Assertion;
use countersign_webauthn::challenge::{DecisionChallenge, ProposalDigest, ProposalFields};
use tonic::Request;

use super::challenges::{CHALLENGE_TTL, random_bytes};
use super::rpc::owned_by;
use super::{Purpose, active, check_assertion, raw_ids};
use crate::convert::{Delivery, parse_delivery, parse_proposal_id, parse_session};
use crate::decide::approver_path;
use crate::error::RpcError;
use crate::quorum::member;
use crate::service::SignerService;

/// A decision's assertion that passed every check, to be stored with the
/// issuance it authorizes.
#[derive(Debug)]
pub(crate) struct VerifiedDecision {
    pub(crate) record: PasskeyAssertionRecord,
    /// The raw credential id (the proof's `pkh` is its SHA-256).
    pub(crate) credential_id: Vec<u8>,
}

/// Whose approval an assertion must authorize.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Decider<'a> {
    /// The approver's principal (from its certificate).
    pub(crate) principal: &'a str,
    /// The approver's path (`<principal>` or `<principal>/<name>`, from its
    /// certificate): only a passkey this approver enrolled may answer.
    pub(crate) approver: &'a str,
}

pub(super) fn delivery_name(delivery: Delivery) -> &'static str {
    match delivery {
        Delivery::Direct => "direct",
        Delivery::Handoff => "handoff",
    }
}

/// The digest of what approving `record` with `delivery` into `session`
/// signs.
fn digest_of(record: &ProposalRecord, delivery: Delivery, session: &str) -> ProposalDigest {
    ProposalDigest::of(&ProposalFields {
        operation: &record.proposal.operation,
        arguments_sha256: &record.proposal.arguments_sha256,
        contract_revision: &record.proposal.contract_revision,
        policy_revision: &record.proposal.policy_revision,
        session,
        delivery: delivery_name(delivery),
    })
}

impl SignerService {
    pub(crate) async fn begin_decision(
        &self,
        peer: PeerIdentity,
        request: Request<wire::BeginDecisionRequest>,
    ) -> Result<wire::PasskeyChallenge, RpcError> {
        let policy = self.passkey_policy()?;
        let r = request.into_inner();
        let id = parse_proposal_id(r.proposal_id)?;
        let delivery = parse_delivery(r.delivery)?;
        let record = self.owned_proposal(&id, &peer.principal).await?;
        SignerService::still_pending(&record)?;
        let session = if r.execute_in_session.is_empty() {
            record.proposal.session.clone()
        } else {
            parse_session("execute_in_session", r.execute_in_session)?
        };
        // Only a quorum's approver may decide its proposal.
        if let Some(quorum) = self.quorum_of(&record) {
            member(&peer, &quorum)?;
        }
        // Every approver decides with a passkey of their own: the browser
        // is offered only the ones this approver enrolled.
        let approver = approver_path(&peer);
        let passkeys = owned_by(
            active(self.state.ledger.passkeys(&peer.principal).await?),
            &approver,
        );
        if passkeys.is_empty() {
            return Err(RpcError::NoPasskeyEnrolled);
        }
        let digest = digest_of(&record, delivery, &session);
        let random = random_bytes()?;
        let challenge = DecisionChallenge::derive(random, &digest);
        let challenge_id = self
            .state
            .challenges
            .insert(
                &approver,
                Purpose::Decision {
                    proposal_id: record.proposal.id.to_string(),
                    delivery,
                    session: session.to_string(),
                },
                random,
                challenge,
            )
            .await?;
        Ok(challenge_reply(challenge_id, challenge, policy, &passkeys))
    }

    /// Checks the assertion of an approval of `record` with `delivery` into
    /// `session`: its challenge was issued to `approver` for exactly that
    /// (and derived from the proposal's digest as it is now), and an
    /// active passkey of `principal` that `approver` enrolled
    /// (`enrolled_by`) signed it with UV: another approver's is
    /// `not_your_passkey`. The challenge stays in the ledger for the write
    /// that records the approval to take; the caller discards it if
    /// anything fails first.
    pub(crate) async fn check_decision(
        &self,
        decider: Decider<'_>,
        record: &ProposalRecord,
        delivery: Delivery,
        session: &str,
        challenge_id: &str,
        assertion: &Assertion,
    ) -> Result<VerifiedDecision, RpcError> {
        let Decider {
            principal,
            approver,
        } = decider;
        let policy = self.passkey_policy()?;
        let open = self.state.challenges.open(challenge_id, approver).await?;
        let now = DecisionChallenge::derive(open.random, &digest_of(record, delivery, session));
        match &open.purpose {
            Purpose::Decision {
                proposal_id,
                delivery: asked,
                session: bound,
            } if proposal_id.as_str() == record.proposal.id.as_str()
                && *asked == delivery
                && bound.as_str() == session
                && now == open.challenge => {}
            _ => return Err(RpcError::ChallengeMismatch),
        }
        let passkeys = active(self.state.ledger.passkeys(principal).await?);
        let stored = check_assertion(
            &passkeys,
            approver,
            &policy.rp,
            assertion,
            &open,
            AssertionPurpose::Decision,
            record.proposal.id.to_string(),
            delivery_name(delivery),
        )?;
        Ok(VerifiedDecision {
            record: stored,
            credential_id: assertion.credential_id.clone(),
        })
    }
}

/// A challenge for `navigator.credentials.get`, answerable by `passkeys`.
pub(crate) fn challenge_reply(
    challenge_id: String,
    challenge: [u8; 32],
    policy: &super::PasskeyPolicy,
    passkeys: &[countersign_ledger::PasskeyRecord],
) -> wire::PasskeyChallenge {
    wire::PasskeyChallenge {
        challenge_id,
        challenge: challenge.to_vec(),
        rp_id: policy.rp.rp_id.clone(),
        allowed_credential_ids: raw_ids(passkeys),
        timeout_ms: timeout_ms(),
    }
}

/// The challenge lifetime browsers are told, in milliseconds.
pub(crate) fn timeout_ms() -> u32 {
    u32::try_from(CHALLENGE_TTL.as_millis()).unwrap_or(u32::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_delivery_names_are_the_digest_encoding() {
        assert_eq!(delivery_name(Delivery::Direct), "direct");
        assert_eq!(delivery_name(Delivery::Handoff), "handoff");
        assert_eq!(crate::passkeys::b64(&[0xfb, 0xff]), "-_8");
    }
}

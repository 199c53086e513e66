//! `Decide`: a person's approval or denial of a pending proposal.
//!
//! Approval rebuilds the claims from the stored canonical arguments and
//! the registry file as it is now and the policy (refusing if either
//! changed since the proposal), signs them with the proof key (`issue.rs`), records the
//! issuance in the ledger (hashes and nonce, never the proof, and for a
//! handoff the delivery, so a restarted signer can re-derive it), then
//! either returns the proof (direct) or keeps it for one handoff. This
//! module must not log or store a proof.

use std::time::Instant;

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use countersign_identity::PeerIdentity;
use countersign_ledger::fault::crash_point;
use countersign_ledger::{IssuanceRecord, ProposalRecord, ProposalStatus, run_premise_command};
use countersign_metrics::{Decision as MetricsDecision, Issuance};
use countersign_proto::v1 as wire;
use countersign_registry::{CanonicalArgs, Effect, Operation, Registry};
use countersign_verifier::claims::ISSUER;
use countersign_verifier::{AuthMethod, Claims, Grant, PasskeyAssurance, Premise, Proof};
use time::{Duration, OffsetDateTime};
use tonic::Request;

use crate::convert::{DecideCommand, Decision, Delivery, Session, format_time};
use crate::error::RpcError;
use crate::issue::sign_claims_with;
use crate::offer::offered;
use crate::passkeys::{Decider, VerifiedDecision};
use crate::service::{SignerService, now_seconds};

impl SignerService {
    pub(crate) async fn decide(
        &self,
        peer: PeerIdentity,
        request: Request<wire::DecideRequest>,
    ) -> Result<wire::DecideResponse, RpcError> {
        let started = Instant::now();
        let cmd = DecideCommand::try_from(request.into_inner())?;
        let record = self
            .owned_proposal(&cmd.proposal_id, &peer.principal)
            .await?;
        if record.status == ProposalStatus::Approved
            && let Decision::Approve {
                delivery: Delivery::Handoff,
                execute_in_session: None,
            } = &cmd.decision
        {
            // An approval run nowhere: the person hands it off.
            return self.hand_off_approved(&peer, record, cmd.dry_run).await;
        }
        SignerService::still_pending(&record)?;
        // Every decision that records something is announced to the
        // proposal's watches once this RPC's writes have ended (whatever
        // it answers); a dry run records nothing.
        let _changed = (!cmd.dry_run).then(|| {
            self.state
                .changes
                .on_drop(&peer.principal, &record.proposal.id)
        });
        if let Some(quorum) = self.quorum_of(&record) {
            return self
                .decide_in_quorum(&peer, cmd, record, &quorum, started)
                .await;
        }
        if cmd.dry_run {
            if let Decision::Approve {
                delivery,
                execute_in_session,
            } = &cmd.decision
            {
                let registry = self.registry_now()?;
                let (op, args) = self.approvable(&registry, &record)?;
                offered(&record, op, *delivery, execute_in_session.as_ref())?;
                self.decision_holds(&record).await?;
                if matches!(op.effect, Effect::Rule) {
                    self.creatable_value(args.value())?;
                }
            }
            return Ok(wire::DecideResponse {
                proposal: Some(self.view_of(&record).await?),
                ..Default::default()
            });
        }
        let decided = match cmd.decision {
            Decision::Deny { reason } => {
                self.state
                    .ledger
                    .record_denial(&record.proposal.id, &peer.principal, &reason)
                    .await?;
                tracing::info!(proposal_id = %record.proposal.id, "denied");
                self.state.metrics.decided(MetricsDecision::Deny);
                wire::DecideResponse {
                    proposal: Some(self.view(&cmd.proposal_id).await?),
                    ..Default::default()
                }
            }
            Decision::Approve {
                delivery,
                execute_in_session,
            } => {
                let registry = self.registry_now()?;
                let (op, args) = self.approvable(&registry, &record)?;
                offered(&record, op, delivery, execute_in_session.as_ref())?;
                if matches!(op.effect, Effect::Rule) {
                    // rule.create: the approval creates the rule, no proof.
                    return self.approve_rule_creation(&record, &peer, &args).await;
                }
                let provenance = provenance_of(&peer);
                let approver = approver_path(&peer);
                let decided = self
                    .approve(
                        record,
                        (op, &args),
                        Approval {
                            principal: &peer.principal,
                            approver: &approver,
                            delivery,
                            provenance: &provenance,
                            execute_in_session,
                            passkey: cmd.passkey,
                        },
                    )
                    .await?;
                let metrics = &self.state.metrics;
                metrics.decided(match delivery {
                    Delivery::Direct => MetricsDecision::ApproveDirect,
                    Delivery::Handoff => MetricsDecision::ApproveHandoff,
                });
                metrics.issued(Issuance::Approval, Some(started.elapsed().as_secs_f64()));
                decided
            }
        };
        // Test-only: the decision committed (and a handoff's proof is
        // kept), the answer not yet sent.
        crash_point("signer_after_decision_commit");
        Ok(decided)
    }

    async fn approve(
        &self,
        record: ProposalRecord,
        (op, args): (&Operation, &CanonicalArgs),
        approval: Approval<'_>,
    ) -> Result<wire::DecideResponse, RpcError> {
        let Approval {
            principal,
            approver,
            delivery,
            provenance,
            execute_in_session,
            passkey,
        } = approval;
        let state = &self.state;
        // `op` and `args` were checked by `approvable` from the registry as
        // it is now; the premise is read again here, as late as possible.
        self.decision_holds(&record).await?;
        let session = execute_in_session.unwrap_or_else(|| record.proposal.session.clone());
        let challenge_id = passkey.as_ref().map(|(id, _)| id.clone());
        // The write that records the assertion takes its challenge and
        // compares its counter again under the credential's row lock, in
        // its own transaction: another signer may be answering too.
        let answer = async {
            let decider = Decider {
                principal,
                approver,
            };
            let verified = self
                .checked_passkey(decider, &record, op, delivery, &session, passkey)
                .await?;
            let signed =
                self.sign_for(&record, op, args, &session, provenance, verified.as_ref())?;
            // A handoff approval says so in its event, so that a restarted
            // signer can still hand it over (`recover.rs`); a direct one never
            // becomes a head's to claim.
            let assertion = verified.as_ref().map(|v| &v.record);
            match (delivery, assertion) {
                (Delivery::Handoff, assertion) => state
                    .ledger
                    .record_handoff_approval(&signed.issuance, assertion)
                    .await
                    .map_err(crate::passkeys::challenge_used)?,
                (Delivery::Direct, Some(assertion)) => state
                    .ledger
                    .record_passkey_approval(&signed.issuance, assertion)
                    .await
                    .map_err(crate::passkeys::challenge_used)?,
                (Delivery::Direct, None) => state.ledger.record_approval(&signed.issuance).await?,
            }
            // Test-only: the issuance committed, its handoff not yet kept.
            crash_point("signer_after_issuance_commit");
            self.deliver(record, signed, delivery, verified.as_ref())
                .await
        };
        match challenge_id {
            Some(id) => self.discarding_on_refusal(&id, answer).await,
            None => answer.await,
        }
    }

    /// The passkey check of an approval: the assertion, when one came,
    /// verified against the passkeys the deciding approver enrolled
    /// (another approver's is `not_your_passkey`); none
    /// when the operation needs one is `passkey_required`. The caller
    /// records the assertion (which takes its challenge) or discards the
    /// challenge.
    pub(crate) async fn checked_passkey(
        &self,
        decider: Decider<'_>,
        record: &ProposalRecord,
        op: &Operation,
        delivery: Delivery,
        session: &str,
        passkey: Option<(String, countersign_webauthn::Assertion)>,
    ) -> Result<Option<VerifiedDecision>, RpcError> {
        match passkey {
            Some((challenge_id, assertion)) => Ok(Some(
                self.check_decision(
                    decider,
                    record,
                    delivery,
                    session,
                    &challenge_id,
                    &assertion,
                )
                .await?,
            )),
            None if self.passkey_required(op) => Err(RpcError::PasskeyRequired),
            None => Ok(None),
        }
    }

    /// Build and sign the claims of an approval of `record`, issued now,
    /// bound to `session`, with `provenance` and the passkey assurance of
    /// `verified`. Records nothing.
    pub(crate) fn sign_for(
        &self,
        record: &ProposalRecord,
        op: &Operation,
        args: &CanonicalArgs,
        session: &str,
        provenance: &str,
        verified: Option<&VerifiedDecision>,
    ) -> Result<Signed, RpcError> {
        let passkey = verified
            .map(|v| {
                PasskeyAssurance::for_credential(vec![AuthMethod::PasskeyUv], &v.credential_id)
            })
            .transpose()
            .map_err(|e| RpcError::Internal(format!("passkey assurance: {e}")))?;
        let claims = self.approval_claims(
            record,
            op,
            args,
            session,
            Issuer::Person {
                provenance,
                passkey,
            },
        )?;
        let expires_at = claims.exp;
        let proof = self.sign(&claims)?;
        let issuance = IssuanceRecord::from_claims(&claims, &proof);
        Ok(Signed {
            proof,
            issuance,
            expires_at,
        })
    }

    /// After the issuance was recorded: return the proof (direct) or keep
    /// it for one handoff, with the proposal's view. `pending` is the
    /// proposal's record as read before the approval; the view is that
    /// record once the approval committed ([`ProposalRecord::after_approval`]),
    /// so nothing is read again.
    pub(crate) async fn deliver(
        &self,
        pending: ProposalRecord,
        signed: Signed,
        delivery: Delivery,
        verified: Option<&VerifiedDecision>,
    ) -> Result<wire::DecideResponse, RpcError> {
        let Signed {
            proof,
            issuance,
            expires_at,
        } = signed;
        let approved = pending.after_approval(issuance.clone())?;
        let proof_sha256 = issuance.proof_sha256.clone();
        tracing::info!(
            proposal_id = %issuance.proposal_id, %proof_sha256, ?delivery,
            provenance = %issuance.provenance, session = %issuance.session,
            passkey = verified.map(|v| v.record.credential_id.as_str()),
            expires_at = %format_time(expires_at)?, "proof issued"
        );
        let expires_at_text = format_time(expires_at)?;
        let proof_text = match delivery {
            // The wire message needs a plain String; prost owns it from here.
            Delivery::Direct => proof.expose_secret().to_owned(),
            Delivery::Handoff => {
                self.state.handoffs.insert(
                    &issuance.proposal_id,
                    proof,
                    &issuance.principal,
                    &issuance.session,
                    expires_at,
                );
                String::new()
            }
        };
        Ok(wire::DecideResponse {
            proposal: Some(self.view_of(&approved).await?),
            proof: proof_text,
            proof_sha256,
            expires_at: expires_at_text,
            created_rule_id: String::new(),
        })
    }
}

/// A proof signed for a proposal, with its issuance record, not yet recorded.
pub(crate) struct Signed {
    proof: Proof,
    pub(crate) issuance: IssuanceRecord,
    expires_at: OffsetDateTime,
}

/// Who approves, as the claims record it.
pub(crate) enum Issuer<'a> {
    /// A person, through an approver interface: `prov` as checked from the
    /// certificate, and the passkey assertion's assurance if one was made.
    Person {
        provenance: &'a str,
        passkey: Option<PasskeyAssurance>,
    },
    /// A rule a person created: `grant`, and `prov` `rule:<id>@<version>`;
    /// never passkey assurance.
    Rule(Grant),
}

impl SignerService {
    /// The claims approving `record` (checked by [`Self::approvable`] into
    /// `op` and `args`) for `session` issues now, with a fresh nonce and
    /// the operation's lifetime.
    pub(crate) fn approval_claims(
        &self,
        record: &ProposalRecord,
        op: &Operation,
        args: &CanonicalArgs,
        session: &str,
        issuer: Issuer<'_>,
    ) -> Result<Claims, RpcError> {
        let policy = &self.state.policy;
        let lifetime = i64::try_from(policy.lifetime_for(op))
            .map_err(|_| RpcError::Internal("lifetime out of range".into()))?;
        let now = now_seconds()?;
        let (grant, prov, passkey) = match issuer {
            Issuer::Person {
                provenance,
                passkey,
            } => (None, provenance.to_owned(), passkey),
            Issuer::Rule(grant) => {
                let prov = grant.provenance();
                (Some(grant), prov, None)
            }
        };
        Ok(Claims {
            iss: ISSUER.to_owned(),
            aud: policy.audience.clone(),
            sub: record.proposal.principal.to_string(),
            sid: session.to_owned(),
            pid: record.proposal.id.to_string(),
            op: record.proposal.operation.clone(),
            args: args.value().clone(),
            args_sha256: args.sha256_hex().to_owned(),
            crev: record.proposal.contract_revision.clone(),
            prev: record.proposal.policy_revision.clone(),
            grant,
            prov,
            passkey,
            // The premise the person was shown, read again by the caller.
            premise: record.proposal.premise.clone(),
            jti: nonce()?,
            iat: now,
            nbf: now,
            exp: now + Duration::seconds(lifetime),
        })
    }

    /// `claims` signed with the active key. The key index is re-read here
    /// when it changed: a rotation takes effect at the next decision,
    /// without a restart.
    pub(crate) fn sign(&self, claims: &Claims) -> Result<Proof, RpcError> {
        let keys = self
            .state
            .keys
            .current()
            .map_err(|e| RpcError::Internal(format!("signing keys: {e}")))?;
        sign_claims_with(keys.signer.as_ref(), claims)
            .map_err(|e| RpcError::Internal(format!("signing: {e}")))
    }
}

impl SignerService {
    /// What an approval of `record` needs, checked: its operation with the
    /// contract it was proposed under (`contract_changed` otherwise), the
    /// policy it was proposed under (`policy_changed`), and its stored
    /// arguments, intact. `Decide` and its dry run share this check.
    pub(crate) fn approvable<'r>(
        &self,
        registry: &'r Registry,
        record: &ProposalRecord,
    ) -> Result<(&'r Operation, CanonicalArgs), RpcError> {
        let op = registry
            .get(&record.proposal.operation)
            .filter(|op| op.contract_revision() == record.proposal.contract_revision)
            .ok_or_else(|| RpcError::ContractChanged(record.proposal.operation.clone()))?;
        if self.state.policy.revision() != record.proposal.policy_revision {
            return Err(RpcError::PolicyChanged);
        }
        let args = CanonicalArgs::from_stored(&record.proposal.arguments_json).map_err(|e| {
            RpcError::Internal(format!("stored arguments of {}: {e}", record.proposal.id))
        })?;
        if args.sha256_hex() != record.proposal.arguments_sha256 {
            return Err(RpcError::Internal(format!(
                "stored arguments of {} do not match their hash",
                record.proposal.id
            )));
        }
        Ok((op, args))
    }
}

impl SignerService {
    /// What an approval of `record` needs now, beyond `approvable`: the
    /// operator's policy set it was proposed under does not forbid it at
    /// this time (`forbidden_by_policy`), and its premise holds.
    pub(crate) async fn decision_holds(&self, record: &ProposalRecord) -> Result<(), RpcError> {
        if let Some(policies) = self.forbidden_now(record).await? {
            return Err(RpcError::ForbiddenByPolicy {
                id: record.proposal.id.to_string(),
                policies: policies.join(", "),
            });
        }
        self.premise_holds(record).await
    }

    /// The policies of the set `record` was proposed under that forbid
    /// approving it now; without such a set, nothing is read.
    async fn forbidden_now(
        &self,
        record: &ProposalRecord,
    ) -> Result<Option<Vec<String>>, RpcError> {
        if !crate::operator_policy::was_judged(record) {
            return Ok(None);
        }
        let registry = self.registry_now()?;
        let now = now_seconds()?.unix_timestamp();
        self.state
            .operator_policy
            .forbids_at_decision(&self.state.ledger, &registry, record, now)
            .await
    }

    /// `premise_changed` unless the premise `record` was proposed under
    /// (if any) still holds: the person approves only what they were
    /// shown. Read again by the ledger inside the consume transaction.
    /// A premise command runs again (`premise_unavailable` if it fails).
    pub(crate) async fn premise_holds(&self, record: &ProposalRecord) -> Result<(), RpcError> {
        let proposal = &record.proposal;
        let (now, what) = match &proposal.premise {
            None => return Ok(()),
            Some(Premise::State(shown)) => (
                Premise::State(
                    self.state
                        .ledger
                        .read_premise(&proposal.principal, &shown.namespace, &shown.key)
                        .await?,
                ),
                format!("{} {:?}", shown.namespace, shown.key),
            ),
            Some(Premise::Command(shown)) => (
                Premise::Command(
                    run_premise_command(
                        self.state.ledger.premise_runner(),
                        &shown.argv,
                        &proposal.arguments_json,
                    )
                    .await?,
                ),
                format!("the output of {:?}", shown.argv),
            ),
        };
        if proposal.premise.as_ref() != Some(&now) {
            return Err(RpcError::PremiseChanged(what));
        }
        Ok(())
    }
}

/// What an approval was asked for, as checked from the request.
struct Approval<'a> {
    /// The approver's principal (from its certificate).
    principal: &'a str,
    /// The approver's path (from its certificate): whose passkey must answer.
    approver: &'a str,
    delivery: Delivery,
    provenance: &'a str,
    execute_in_session: Option<Session>,
    /// The passkey assertion and the challenge id it answers.
    passkey: Option<(String, countersign_webauthn::Assertion)>,
}

/// The proof's `prov` for a decision made over this connection:
/// `human:cert:<principal>` for an unnamed approver certificate,
/// `human:cert:<principal>/<name>` for a named one (e.g. the web console's
/// `console`), from what the signer checked, the approver certificate's
/// identity (no request field plays any part). It means an approver
/// credential of that principal (with that name), issued by the
/// installation's CA, made the decision; it does not say which person, or
/// that anyone was at a terminal.
fn provenance_of(peer: &PeerIdentity) -> String {
    format!("human:cert:{}", approver_path(peer))
}

/// `<principal>` or `<principal>/<name>`: the approver a decision is
/// recorded for, in `prov` and in `ResolveUncertain`'s `resolved_by`.
pub(crate) fn approver_path(peer: &PeerIdentity) -> String {
    match &peer.approver {
        None => peer.principal.to_string(),
        Some(name) => format!("{}/{name}", peer.principal),
    }
}

/// `jti`: base64url (no padding) of 32 random bytes.
fn nonce() -> Result<String, RpcError> {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).map_err(|e| RpcError::Internal(format!("random: {e}")))?;
    Ok(URL_SAFE_NO_PAD.encode(bytes))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use countersign_identity::{ApproverName, Role};

    use super::*;

    const P: &str = "pr_0123456789abcdef0123456789abcdef";

    fn approver(name: Option<&str>) -> PeerIdentity {
        PeerIdentity {
            role: Role::Approver,
            principal: P.parse().unwrap(),
            approver: name.map(|n| ApproverName::parse(n).unwrap()),
        }
    }

    #[test]
    fn provenance_names_the_principal_of_an_unnamed_approver() {
        assert_eq!(provenance_of(&approver(None)), format!("human:cert:{P}"));
    }

    #[test]
    fn provenance_names_the_principal_and_name_of_a_named_approver() {
        assert_eq!(
            provenance_of(&approver(Some("console"))),
            format!("human:cert:{P}/console")
        );
    }
}

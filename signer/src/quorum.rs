//! `Decide` on a proposal whose operation requires a quorum: M approvals
//! out of N named approvers, each a named approver certificate of the
//! principal (`countersign://approver/<principal>/<name>`) that the
//! operation's `quorum` lists.
//!
//! Each approval is recorded with its event (the ledger's
//! `record_quorum_approval`) and the proposal stays pending until the M-th
//! distinct approval, which signs the proof, naming every approver in its
//! provenance (`human:quorum:<principal>/<a>,<principal>/<b>`), with its
//! lifetime counted from that last approval, and records the issuance in
//! the same transaction. The signer reads the approvals, signs if this one
//! completes the quorum, and asks the ledger to record it only if the
//! approvals are still what it read; if another approver decided meanwhile
//! it reads again. So two approvers at the same instant produce exactly
//! one issuance. Any listed approver's denial ends the proposal.
//!
//! This module must not let an unnamed or unlisted approver certificate
//! decide a quorum proposal, nor count an approver twice.

use std::time::Instant;

use countersign_identity::PeerIdentity;
use countersign_ledger::{LedgerError, ProposalRecord, QuorumApproval, QuorumOutcome};
use countersign_metrics::{Decision as MetricsDecision, Issuance};
use countersign_proto::v1 as wire;
use countersign_registry::{ApproverName, CanonicalArgs, Operation, Quorum};
use countersign_verifier::claims::quorum_provenance;

use crate::convert::{DecideCommand, Decision, Delivery, ProposalId, quorum_view};
use crate::decide::approver_path;
use crate::error::RpcError;
use crate::passkeys::Decider;
use crate::service::SignerService;

/// How often an approval is re-read and retried when other approvers'
/// decisions keep landing between its read and its write; each retry means
/// another approval was recorded, so a quorum of at most 16 settles well
/// within this.
const ATTEMPTS: usize = 64;

impl SignerService {
    /// The quorum of `record`'s operation, from the registry as its file
    /// says now, when the operation is still at the proposal's contract
    /// (a changed contract is refused as `contract_changed` by an approval,
    /// and a denial of such a proposal needs no quorum). A file that cannot
    /// be read or parsed falls back to the registry last loaded, so a
    /// quorum is not forgotten and a denial still works; an approval fails
    /// closed on the file in `approvable`.
    pub(crate) fn quorum_of(&self, record: &ProposalRecord) -> Option<Quorum> {
        let current = &self.state.registry;
        let registry = current.now().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "registry unreadable; using the one last loaded");
            current.last_loaded()
        });
        let own = registry
            .get(&record.proposal.operation)
            .filter(|op| op.contract_revision() == record.proposal.contract_revision)
            .and_then(|op| op.quorum.clone());
        crate::operator_policy::quorum_of(record, own)
    }

    /// The quorum part of `record`'s view (from the registry as last
    /// loaded, like `passkey_required`), or `None` without a quorum.
    pub(crate) async fn quorum_view(
        &self,
        record: &ProposalRecord,
    ) -> Result<Option<wire::QuorumView>, RpcError> {
        let registry = self.state.registry.last_loaded();
        let own = registry
            .get(&record.proposal.operation)
            .filter(|op| op.contract_revision() == record.proposal.contract_revision)
            .and_then(|op| op.quorum.clone());
        let Some(quorum) = crate::operator_policy::quorum_of(record, own) else {
            return Ok(None);
        };
        let decisions = self
            .state
            .ledger
            .quorum_decisions(&record.proposal.id)
            .await?;
        Ok(Some(quorum_view(&quorum, &decisions)?))
    }

    /// `Decide` for a pending proposal whose operation requires `quorum`.
    pub(crate) async fn decide_in_quorum(
        &self,
        peer: &PeerIdentity,
        cmd: DecideCommand,
        record: ProposalRecord,
        quorum: &Quorum,
        started: Instant,
    ) -> Result<wire::DecideResponse, RpcError> {
        let approver = member(peer, quorum)?;
        let path = approver_path(peer);
        let decided = self
            .state
            .ledger
            .quorum_decisions(&record.proposal.id)
            .await?;
        if decided.iter().any(|d| d.approver == path) {
            return Err(RpcError::AlreadyApproved(approver.as_str().to_owned()));
        }
        let id = cmd.proposal_id;
        match cmd.decision {
            Decision::Approve {
                execute_in_session: Some(_),
                ..
            } => Err(RpcError::InvalidField {
                field: "execute_in_session",
                reason: "a quorum proposal executes in its own session: every approver approves it as proposed".into(),
            }),
            Decision::Approve { delivery, .. } if cmd.dry_run => {
                let registry = self.registry_now()?;
                let (op, _) = self.approvable(&registry, &record)?;
                crate::offer::offered(&record, op, delivery, None)?;
                self.decision_holds(&record).await?;
                self.view_only(&record).await
            }
            Decision::Deny { .. } if cmd.dry_run => self.view_only(&record).await,
            Decision::Deny { reason } => {
                self.state
                    .ledger
                    .record_quorum_denial(
                        &record.proposal.id,
                        &peer.principal,
                        &path,
                        quorum.required(),
                        &reason,
                    )
                    .await?;
                tracing::info!(proposal_id = %record.proposal.id, approver = %path, "quorum denied");
                self.state.metrics.decided(MetricsDecision::Deny);
                self.view_only_of(&id).await
            }
            Decision::Approve {
                delivery,
                execute_in_session: None,
            } => {
                let response = self
                    .approve_in_quorum(&id, record, quorum, peer, delivery, cmd.passkey)
                    .await?;
                let metrics = &self.state.metrics;
                metrics.decided(match delivery {
                    Delivery::Direct => MetricsDecision::ApproveDirect,
                    Delivery::Handoff => MetricsDecision::ApproveHandoff,
                });
                if !response.proof_sha256.is_empty() {
                    metrics.issued(Issuance::Approval, Some(started.elapsed().as_secs_f64()));
                }
                Ok(response)
            }
        }
    }

    /// Record `peer`'s approval; with the M-th, sign and deliver the proof.
    async fn approve_in_quorum(
        &self,
        id: &ProposalId,
        record: ProposalRecord,
        quorum: &Quorum,
        peer: &PeerIdentity,
        delivery: Delivery,
        passkey: Option<(String, countersign_webauthn::Assertion)>,
    ) -> Result<wire::DecideResponse, RpcError> {
        let registry = self.registry_now()?;
        let (op, args) = self.approvable(&registry, &record)?;
        crate::offer::offered(&record, op, delivery, None)?;
        // Every approver approves under the premise as it still is.
        self.decision_holds(&record).await?;
        let approval = QuorumAnswer {
            id,
            quorum,
            peer,
            delivery,
            op,
            args: &args,
        };
        match passkey.as_ref().map(|(id, _)| id.clone()) {
            Some(challenge_id) => {
                let answer = self.quorum_answering(record, approval, passkey);
                self.discarding_on_refusal(&challenge_id, answer).await
            }
            None => self.quorum_answering(record, approval, passkey).await,
        }
    }

    /// The rest of [`Self::approve_in_quorum`], after the premise: the
    /// passkey check, then the approval recorded (which takes the passkey
    /// challenge, and compares its counter again, in its transaction),
    /// and with the M-th the proof.
    async fn quorum_answering(
        &self,
        record: ProposalRecord,
        approval: QuorumAnswer<'_>,
        passkey: Option<(String, countersign_webauthn::Assertion)>,
    ) -> Result<wire::DecideResponse, RpcError> {
        let QuorumAnswer {
            id,
            quorum,
            peer,
            delivery,
            op,
            args,
        } = approval;
        let state = &self.state;
        let path = approver_path(peer);
        let session = record.proposal.session.clone();
        let decider = Decider {
            principal: &peer.principal,
            approver: &path,
        };
        let verified = self
            .checked_passkey(decider, &record, op, delivery, &session, passkey)
            .await?;
        for _ in 0..ATTEMPTS {
            let prior: Vec<String> = state
                .ledger
                .quorum_decisions(&record.proposal.id)
                .await?
                .into_iter()
                .map(|d| d.approver)
                .collect();
            let completes = prior.len() + 1 == quorum.required() as usize;
            let signed = if completes {
                let mut names = Vec::with_capacity(prior.len() + 1);
                for approver in prior.iter().chain([&path]) {
                    names.push(name_of(approver)?);
                }
                let provenance = quorum_provenance(&peer.principal, &names);
                Some(self.sign_for(&record, op, args, &session, &provenance, verified.as_ref())?)
            } else {
                None
            };
            let outcome = state
                .ledger
                .record_quorum_approval(&QuorumApproval {
                    proposal_id: &record.proposal.id,
                    principal: &peer.principal,
                    approver: &path,
                    required: quorum.required(),
                    prior: &prior,
                    issuance: signed.as_ref().map(|s| &s.issuance),
                    handoff: delivery == Delivery::Handoff,
                    passkey: verified.as_ref().map(|v| &v.record),
                })
                .await;
            match (outcome, signed) {
                (Err(LedgerError::QuorumMoved(_)), _) => continue,
                (Err(e), _) => return Err(crate::passkeys::challenge_used(e)),
                (Ok(QuorumOutcome::Issued), Some(signed)) => {
                    return self
                        .deliver(record.clone(), signed, delivery, verified.as_ref())
                        .await;
                }
                (Ok(QuorumOutcome::Counted { approvals }), None) => {
                    tracing::info!(
                        proposal_id = %record.proposal.id, approver = %path, approvals,
                        required = quorum.required(), "quorum approval recorded"
                    );
                    // Test-only: one approval of several committed, the
                    // answer not yet sent.
                    countersign_ledger::fault::crash_point("signer_after_quorum_approval_commit");
                    return self.view_only_of(id).await;
                }
                (Ok(_), _) => {
                    return Err(RpcError::Internal(format!(
                        "quorum of {}: the ledger's outcome differs from the request",
                        record.proposal.id
                    )));
                }
            }
        }
        Err(RpcError::Internal(format!(
            "quorum of {}: approvals kept changing",
            record.proposal.id
        )))
    }

    async fn view_only(&self, record: &ProposalRecord) -> Result<wire::DecideResponse, RpcError> {
        Ok(wire::DecideResponse {
            proposal: Some(self.view_of(record).await?),
            ..Default::default()
        })
    }

    async fn view_only_of(&self, id: &ProposalId) -> Result<wire::DecideResponse, RpcError> {
        Ok(wire::DecideResponse {
            proposal: Some(self.view(id).await?),
            ..Default::default()
        })
    }
}

/// What an approver's quorum approval is of, checked before its passkey.
struct QuorumAnswer<'a> {
    id: &'a ProposalId,
    quorum: &'a Quorum,
    peer: &'a PeerIdentity,
    delivery: Delivery,
    op: &'a Operation,
    args: &'a CanonicalArgs,
}

/// The caller's name in `quorum`: a named approver certificate the quorum
/// lists; anything else is `not_a_quorum_approver`.
pub(crate) fn member(peer: &PeerIdentity, quorum: &Quorum) -> Result<ApproverName, RpcError> {
    match &peer.approver {
        Some(name) if quorum.is_member(name) => Ok(name.clone()),
        _ => Err(RpcError::NotAQuorumApprover(approver_path(peer))),
    }
}

/// The name of a recorded approver path `<principal>/<name>`.
fn name_of(path: &str) -> Result<ApproverName, RpcError> {
    path.rsplit_once('/')
        .and_then(|(_, name)| ApproverName::parse(name).ok())
        .ok_or_else(|| RpcError::Internal(format!("recorded quorum approver {path:?}")))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use countersign_identity::Role;
    use countersign_registry::Registry;

    use super::*;

    const P: &str = "pr_0123456789abcdef0123456789abcdef";

    fn quorum() -> Quorum {
        let text = Registry::default_toml().replacen(
            "[[operation]]\nname = \"schedule.create\"",
            "[[operation]]\nname = \"schedule.create\"\nquorum = { required = 2, approvers = [\"alice\", \"bob\"] }",
            1,
        );
        let registry = Registry::from_toml_str(&text).unwrap();
        registry
            .get("schedule.create")
            .unwrap()
            .quorum
            .clone()
            .unwrap()
    }

    fn peer(name: Option<&str>) -> PeerIdentity {
        PeerIdentity {
            role: Role::Approver,
            principal: P.parse().unwrap(),
            approver: name.map(|n| ApproverName::parse(n).unwrap()),
        }
    }

    #[test]
    fn only_a_listed_named_approver_is_a_member() {
        assert_eq!(
            member(&peer(Some("alice")), &quorum()).unwrap().as_str(),
            "alice"
        );
        assert_eq!(
            member(&peer(Some("carol")), &quorum()),
            Err(RpcError::NotAQuorumApprover(format!("{P}/carol")))
        );
        assert_eq!(
            member(&peer(None), &quorum()),
            Err(RpcError::NotAQuorumApprover(P.to_owned()))
        );
    }
}

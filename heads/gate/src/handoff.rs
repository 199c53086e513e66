//! Execute a proposal with a proof the signer holds for it: a person
//! approved it with `--hand-off` (or the web console), and the signer hands
//! the proof once to a head of the same principal and session. The head
//! never shows it to its caller: it goes straight into `Gate::execute`.
//!
//! Only a proposal of this head's own principal is answered: another
//! principal's proposal, executed or not, is refused as unknown before its
//! disposition is read, as `result` refuses it.
//!
//! Whenever the execution consumed nothing (any refusal: a proof not yet
//! valid under clock skew, a key id unknown to a head whose key set is
//! stale, a contract changed under it; or any fault: the ledger
//! unavailable, a write refused), the head releases the handoff, so the
//! person's approval is not lost with the proof it dropped: the next
//! execution claims it again. That is safe whatever the fault left behind,
//! because the ledger, not the handoff, makes a proof single-use: a proof
//! whose nonce was burned only gets its recorded disposition.

use std::time::Instant;

use countersign_ledger::ProposalStatus;
use countersign_proto::reason::Reason;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{ClaimHandoffRequest, ReleaseHandoffRequest};
use countersign_verifier::{Proof, ProposalId, Session};
use tonic::transport::Channel;

use crate::execute::{Gate, GateError};
use crate::outcome::{Outcome, Refused};
use crate::signer_client::SignerCallError;

impl Gate {
    /// Claim the proof waiting for `proposal_id` and execute it from
    /// `session`. A proposal of another principal is refused as unknown
    /// before anything about it is read; one that was already executed gets
    /// its recorded disposition; one with no live handoff is refused,
    /// applying nothing; one whose handoff another request holds is
    /// `in_progress` (or, once recorded, that execution's disposition). Whenever nothing was consumed, the claimed handoff
    /// is released.
    pub async fn execute_handoff(
        &self,
        head: &mut SignerClient<Channel>,
        proposal_id: &ProposalId,
        session: &Session,
    ) -> Result<Outcome, GateError> {
        let started = Instant::now();
        let result = self.execute_handoff_once(head, proposal_id, session).await;
        self.count(&result, started);
        result
    }

    async fn execute_handoff_once(
        &self,
        head: &mut SignerClient<Channel>,
        proposal_id: &ProposalId,
        session: &Session,
    ) -> Result<Outcome, GateError> {
        let record = self.ledger().proposal(proposal_id).await?;
        let Some(record) = record.filter(|r| r.proposal.principal == self.principal()) else {
            return Ok(Outcome::Refused(Refused::UnknownProposal(
                proposal_id.to_string(),
            )));
        };
        // For an approved proposal, an upstream tool's definition is asked
        // for now, to overlap the claim and the verification; the
        // execution still checks it before consuming anything.
        let tool_check = match record.status {
            ProposalStatus::Approved => self.tool_check(&record.proposal.operation),
            _ => None,
        };
        // Only a proposal that is no longer just approved can have a
        // recorded outcome to answer with; an approved one goes straight to
        // the claim (a consumption racing this read is answered by the
        // claim's refusal or, inside its transaction, by the ledger).
        if record.status != ProposalStatus::Approved
            && let Some(recorded) = self.ledger().disposition(proposal_id).await?
        {
            return Ok(Outcome::Recorded(recorded));
        }
        if record.status == ProposalStatus::Expired {
            return Ok(Outcome::Refused(Refused::ApprovalExpired(
                proposal_id.to_string(),
            )));
        }
        if let ProposalStatus::Denied | ProposalStatus::Withdrawn | ProposalStatus::Revoked =
            record.status
        {
            return Ok(Outcome::Refused(Refused::Decided {
                proposal_id: proposal_id.to_string(),
                status: record.status.as_str(),
                reason: record
                    .reason
                    .as_deref()
                    .filter(|r| !r.is_empty())
                    .map(|r| format!(" ({})", countersign_registry::terminal_safe(r)))
                    .unwrap_or_default(),
            }));
        }
        let claimed = head
            .claim_handoff(ClaimHandoffRequest {
                proposal_id: proposal_id.to_string(),
                session: session.to_string(),
            })
            .await;
        let mut response = match claimed {
            Ok(response) => response.into_inner(),
            Err(status) => {
                return match SignerCallError::from_status(&status) {
                    SignerCallError::Refused(refusal) if refusal.code == Reason::NoLiveHandoff => {
                        Ok(Outcome::Refused(Refused::NoHandoff {
                            proposal_id: proposal_id.to_string(),
                            refusal,
                        }))
                    }
                    // Claimed by another request, which is executing it: its
                    // result if recorded by now, else "in progress", never
                    // "not approved" (a caller would ask for a new approval).
                    SignerCallError::Refused(refusal) if refusal.code == Reason::HandoffInUse => {
                        match self.ledger().disposition(proposal_id).await? {
                            Some(recorded) => Ok(Outcome::Recorded(recorded)),
                            None => Ok(Outcome::Refused(Refused::InProgress(
                                proposal_id.to_string(),
                            ))),
                        }
                    }
                    SignerCallError::Refused(mut refusal)
                        if refusal.code == Reason::HandoffSessionMismatch =>
                    {
                        refusal.message = format!(
                            "{}; a proposal approved for another session runs in session {session} only if the person approves it for this one: `countersign approve {proposal_id} --hand-off --execute-in-session {session}`",
                            refusal.message
                        );
                        Ok(Outcome::Refused(Refused::HandoffRefused(refusal)))
                    }
                    SignerCallError::Refused(refusal) => {
                        Ok(Outcome::Refused(Refused::HandoffRefused(refusal)))
                    }
                    fault => Err(GateError::Signer(fault.to_string())),
                };
            }
        };
        let proof = Proof::from_text(std::mem::take(&mut response.proof)).map_err(|e| {
            GateError::Signer(format!("the signer handed over an unusable proof: {e}"))
        })?;
        crate::fault::crash_point(crate::fault::FaultPoint::HandoffClaimed);
        // The record read above serves the execution: what it binds (the
        // operation, the arguments' digest) never changes, and every status
        // change since (a revocation, a consumption) is checked again by
        // the ledger inside the consumption's transaction.
        let executed = self
            .execute_once(proposal_id, session, &proof, tool_check, Some(record))
            .await;
        drop(proof);
        let consumed_nothing = match &executed {
            Ok(Outcome::Refused(_)) | Err(_) => true,
            Ok(
                Outcome::Applied(_)
                | Outcome::Failed(_)
                | Outcome::Recorded(_)
                | Outcome::Uncertain { .. },
            ) => false,
        };
        if consumed_nothing {
            let released = head
                .release_handoff(ReleaseHandoffRequest {
                    proposal_id: proposal_id.to_string(),
                    session: session.to_string(),
                })
                .await;
            let why = match &executed {
                Ok(outcome) => outcome.summary(),
                Err(fault) => fault.to_string(),
            };
            match released {
                Ok(_) => tracing::warn!(
                    proposal_id = proposal_id.as_str(),
                    why,
                    "nothing consumed; handoff released"
                ),
                Err(status) => tracing::error!(
                    proposal_id = proposal_id.as_str(),
                    why,
                    release = status.message(),
                    "nothing consumed and the handoff could not be released"
                ),
            }
        }
        executed
    }
}

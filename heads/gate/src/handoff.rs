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

use countersign_ledger::{ProposalRecord, ProposalStatus};
use countersign_proto::reason::Reason;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{ClaimHandoffRequest, ClaimHandoffResponse, ReleaseHandoffRequest};
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
    /// `in_progress` (or, once recorded, that execution's disposition).
    /// Whenever nothing was consumed, the claimed handoff is released.
    pub async fn execute_handoff(
        &self,
        head: &mut SignerClient<Channel>,
        proposal_id: &ProposalId,
        session: &Session,
    ) -> Result<Outcome, GateError> {
        self.counted(head, proposal_id, session, Known::Nothing)
            .await
    }

    /// [`Gate::execute_handoff`] for a caller that made the proposal, of
    /// `operation` if it says so: an upstream tool's definition is asked
    /// for beside the read of the proposal instead of after it, and used
    /// only if the record says the proposal is approved, of that very
    /// operation. The answers are those of [`Gate::execute_handoff`].
    pub async fn execute_handoff_of(
        &self,
        head: &mut SignerClient<Channel>,
        proposal_id: &ProposalId,
        session: &Session,
        operation: Option<&str>,
    ) -> Result<Outcome, GateError> {
        let known = operation.map_or(Known::Nothing, Known::Made);
        self.counted(head, proposal_id, session, known).await
    }

    /// [`Gate::execute_handoff`] for a caller the signer has just told that
    /// `proposal_id`, of `operation`, is approved (its `Propose` answer, or
    /// the end of its wait for the decision): the claim goes out together
    /// with the read of the proposal instead of after it, and an upstream
    /// tool's definition is asked for at once. The answers are the same:
    /// a claim the signer refuses is answered from the record as
    /// [`Gate::execute_handoff`] answers, and a claimed proof whose record
    /// is not this principal's proposal of `operation` is released, unused.
    pub async fn execute_approved_handoff(
        &self,
        head: &mut SignerClient<Channel>,
        proposal_id: &ProposalId,
        session: &Session,
        operation: &str,
    ) -> Result<Outcome, GateError> {
        self.counted(head, proposal_id, session, Known::Approved(operation))
            .await
    }

    /// One execution, counted once, of a proposal the caller knows as
    /// `known` says.
    async fn counted(
        &self,
        head: &mut SignerClient<Channel>,
        proposal_id: &ProposalId,
        session: &Session,
        known: Known<'_>,
    ) -> Result<Outcome, GateError> {
        let started = Instant::now();
        let result = match known {
            Known::Approved(operation) => {
                self.execute_approved_handoff_once(head, proposal_id, session, operation)
                    .await
            }
            Known::Made(operation) => {
                self.execute_handoff_once(head, proposal_id, session, Some(operation))
                    .await
            }
            Known::Nothing => {
                self.execute_handoff_once(head, proposal_id, session, None)
                    .await
            }
        };
        self.count(&result, started);
        result
    }

    /// `made`: the operation of the proposal, if the caller made it.
    async fn execute_handoff_once(
        &self,
        head: &mut SignerClient<Channel>,
        proposal_id: &ProposalId,
        session: &Session,
        made: Option<&str>,
    ) -> Result<Outcome, GateError> {
        let early = made.and_then(|operation| self.tool_check(operation));
        let record = match self.before_claim(proposal_id).await? {
            Ok(record) => record,
            Err(answered) => return Ok(answered),
        };
        // For an approved proposal, an upstream tool's definition is asked
        // for now (or was, beside the read), to overlap the claim and the
        // verification; the execution still checks it before consuming
        // anything. Any other listing asked for early is abandoned here.
        let tool_check = match (record.status, early) {
            (ProposalStatus::Approved, Some(early))
                if made == Some(record.proposal.operation.as_str()) =>
            {
                Some(early)
            }
            (ProposalStatus::Approved, _) => self.tool_check(&record.proposal.operation),
            _ => None,
        };
        match claim(head, proposal_id, session).await {
            Ok(response) => {
                self.execute_claimed(head, proposal_id, session, response, tool_check, record)
                    .await
            }
            Err(status) => self.claim_refused(proposal_id, session, &status).await,
        }
    }

    async fn execute_approved_handoff_once(
        &self,
        head: &mut SignerClient<Channel>,
        proposal_id: &ProposalId,
        session: &Session,
        operation: &str,
    ) -> Result<Outcome, GateError> {
        let tool_check = self.tool_check(operation);
        let (read, claimed) = tokio::join!(
            self.ledger().proposal(proposal_id),
            claim(head, proposal_id, session)
        );
        let response = match claimed {
            Ok(response) => response,
            // Refused (or failed): answered from the record, as the
            // sequential path answers; a record that does not stop it
            // first gets the claim's own refusal.
            Err(status) => {
                return match self.checked_before_claim(proposal_id, read?).await? {
                    Err(answered) => Ok(answered),
                    Ok(_) => self.claim_refused(proposal_id, session, &status).await,
                };
            }
        };
        match read {
            Ok(Some(record))
                if record.proposal.principal == self.principal()
                    && record.proposal.operation == operation =>
            {
                self.execute_claimed(head, proposal_id, session, response, tool_check, record)
                    .await
            }
            other => {
                release(
                    head,
                    proposal_id,
                    session,
                    "the proposal's record does not match the claim",
                )
                .await;
                match other {
                    Err(fault) => Err(fault.into()),
                    Ok(_) => Ok(Outcome::Refused(Refused::UnknownProposal(
                        proposal_id.to_string(),
                    ))),
                }
            }
        }
    }

    /// The proposal's record, read and checked before a claim: `Err` with
    /// the answer when there is nothing to claim (another principal's or
    /// no proposal, a recorded outcome, an expired or decided one).
    async fn before_claim(
        &self,
        proposal_id: &ProposalId,
    ) -> Result<Result<ProposalRecord, Outcome>, GateError> {
        let record = self.ledger().proposal(proposal_id).await?;
        self.checked_before_claim(proposal_id, record).await
    }

    async fn checked_before_claim(
        &self,
        proposal_id: &ProposalId,
        record: Option<ProposalRecord>,
    ) -> Result<Result<ProposalRecord, Outcome>, GateError> {
        let Some(record) = record.filter(|r| r.proposal.principal == self.principal()) else {
            return Ok(Err(Outcome::Refused(Refused::UnknownProposal(
                proposal_id.to_string(),
            ))));
        };
        // Only a proposal that is no longer just approved can have a
        // recorded outcome to answer with; an approved one goes straight to
        // the claim (a consumption racing this read is answered by the
        // claim's refusal or, inside its transaction, by the ledger).
        if record.status != ProposalStatus::Approved
            && let Some(recorded) = self.ledger().disposition(proposal_id).await?
        {
            return Ok(Err(Outcome::Recorded(recorded)));
        }
        if record.status == ProposalStatus::Expired {
            return Ok(Err(Outcome::Refused(Refused::ApprovalExpired(
                proposal_id.to_string(),
            ))));
        }
        if let ProposalStatus::Denied | ProposalStatus::Withdrawn | ProposalStatus::Revoked =
            record.status
        {
            return Ok(Err(Outcome::Refused(Refused::Decided {
                proposal_id: proposal_id.to_string(),
                status: record.status.as_str(),
                reason: record
                    .reason
                    .as_deref()
                    .filter(|r| !r.is_empty())
                    .map(|r| format!(" ({})", countersign_registry::terminal_safe(r)))
                    .unwrap_or_default(),
            })));
        }
        Ok(Ok(record))
    }

    /// The answer to a claim the signer refused (or could not answer).
    async fn claim_refused(
        &self,
        proposal_id: &ProposalId,
        session: &Session,
        status: &tonic::Status,
    ) -> Result<Outcome, GateError> {
        let refused = match SignerCallError::from_status(status) {
            SignerCallError::Refused(refusal) if refusal.code == Reason::NoLiveHandoff => {
                Refused::NoHandoff {
                    proposal_id: proposal_id.to_string(),
                    refusal,
                }
            }
            // Claimed by another request, which is executing it: its
            // result if recorded by now, else "in progress", never
            // "not approved" (a caller would ask for a new approval).
            SignerCallError::Refused(refusal) if refusal.code == Reason::HandoffInUse => {
                return Ok(match self.ledger().disposition(proposal_id).await? {
                    Some(recorded) => Outcome::Recorded(recorded),
                    None => Outcome::Refused(Refused::InProgress(proposal_id.to_string())),
                });
            }
            SignerCallError::Refused(mut refusal)
                if refusal.code == Reason::HandoffSessionMismatch =>
            {
                refusal.message = format!(
                    "{}; a proposal approved for another session runs in session {session} only if the person approves it for this one: `countersign approve {proposal_id} --hand-off --execute-in-session {session}`",
                    refusal.message
                );
                Refused::HandoffRefused(refusal)
            }
            SignerCallError::Refused(refusal) => Refused::HandoffRefused(refusal),
            fault => return Err(GateError::Signer(fault.to_string())),
        };
        Ok(Outcome::Refused(refused))
    }

    /// Execute the claimed proof; release the handoff when nothing was
    /// consumed.
    async fn execute_claimed(
        &self,
        head: &mut SignerClient<Channel>,
        proposal_id: &ProposalId,
        session: &Session,
        mut response: ClaimHandoffResponse,
        tool_check: Option<crate::effect::mcp::ToolCheck>,
        record: ProposalRecord,
    ) -> Result<Outcome, GateError> {
        let proof = match Proof::from_text(std::mem::take(&mut response.proof)) {
            Ok(proof) => proof,
            Err(e) => {
                release(
                    head,
                    proposal_id,
                    session,
                    "the signer handed over an unusable proof",
                )
                .await;
                return Err(GateError::Signer(format!(
                    "the signer handed over an unusable proof: {e}"
                )));
            }
        };
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
            let why = match &executed {
                Ok(outcome) => outcome.summary(),
                Err(fault) => fault.to_string(),
            };
            release(head, proposal_id, session, &why).await;
        }
        executed
    }
}

/// What the caller of an execution knows of the proposal before its
/// record is read.
#[derive(Clone, Copy)]
enum Known<'a> {
    /// Nothing.
    Nothing,
    /// It made the proposal, of this operation.
    Made(&'a str),
    /// The signer has just told it the proposal is approved, of this
    /// operation.
    Approved(&'a str),
}

/// Ask the signer for the proof waiting for `proposal_id` in `session`.
async fn claim(
    head: &mut SignerClient<Channel>,
    proposal_id: &ProposalId,
    session: &Session,
) -> Result<ClaimHandoffResponse, tonic::Status> {
    head.claim_handoff(ClaimHandoffRequest {
        proposal_id: proposal_id.to_string(),
        session: session.to_string(),
    })
    .await
    .map(tonic::Response::into_inner)
}

/// Make a claimed proof claimable again: nothing was consumed, `why`.
async fn release(
    head: &mut SignerClient<Channel>,
    proposal_id: &ProposalId,
    session: &Session,
    why: &str,
) {
    let released = head
        .release_handoff(ReleaseHandoffRequest {
            proposal_id: proposal_id.to_string(),
            session: session.to_string(),
        })
        .await;
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

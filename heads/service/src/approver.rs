//! The approver operations every approver interface calls: approve (with
//! the proof handed off, returned for a file, or run now), deny, revoke and
//! resolve an uncertain execution.
//!
//! Owns: the steps of each decision (the signer's dry run before a person
//! commits, the decision, reading its answer into a typed [`Approved`]) and
//! "approve and run now", which runs on the service's execution tracker like
//! every other execution, so a caller that goes away never cuts an effect
//! off between intent and completion.
//!
//! Must not: parse a transport, ask the person (a typed challenge, a
//! passkey ceremony), render text, or log a proof. The CLI and the console
//! parse, ask, call and render.

use countersign_gate::Outcome;
use countersign_gate::signer_client::{SignerCallError, SignerRefusal};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    DecideRequest, DecideResponse, Deliveries, Delivery as WireDelivery, GetProposalRequest,
    PasskeyAssertion, ProposalView, QuorumDecision, QuorumDecisionView, QuorumView,
    ResolveUncertainRequest, RevokeOutcome, RevokeRequest,
};
use countersign_verifier::{Proof, ProposalId, Session};
use tonic::transport::Channel;

use crate::Service;

/// Where an approval's proof goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Delivery {
    /// The signer keeps the proof for one claim by a head of the principal
    /// in `session` (`None`: the proposing session).
    Handoff {
        /// The session that may execute, when not the proposing one.
        session: Option<String>,
    },
    /// The proof comes back to the approver interface, which writes it to
    /// a private file.
    Proof,
    /// The proof comes back and runs now, once, on the service's tracker.
    RunNow,
}

/// What approving a proposal does at an approver interface (each also a
/// head that runs what any head runs): the one table every approver
/// interface renders from, read from the deliveries the signer's view
/// carries, so that none offers a decision the signer would refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApprovalDoes {
    /// The interface runs it here, now, once (or writes its proof to a
    /// private file, where the person asks); handing it off to a session
    /// is offered too.
    RunHere,
    /// It is handed off to the proposing session, whose head runs it: the
    /// gateway calls the upstream tool, or the agent's hook lets the agent
    /// run its call. Nothing runs at the interface.
    HandOff {
        /// Whether the person may name another session (a gateway call;
        /// never a hook's, which only the asking hook answers).
        other_session: bool,
    },
    /// Approving creates the proposed auto-approval rule; no proof.
    CreateRule,
}

impl ApprovalDoes {
    /// What approving `view` does, from the deliveries the signer says it
    /// accepts. A view without them (its operation is no longer registered
    /// at its contract) reads [`ApprovalDoes::RunHere`]: the signer's dry
    /// run refuses it (`contract_changed`) before anyone is asked.
    pub fn of(view: &ProposalView) -> Self {
        match view.deliveries() {
            Deliveries::AnyHead | Deliveries::Unspecified => ApprovalDoes::RunHere,
            Deliveries::HandoffOnly => ApprovalDoes::HandOff {
                other_session: true,
            },
            Deliveries::ProposingSession => ApprovalDoes::HandOff {
                other_session: false,
            },
            Deliveries::NoProof => ApprovalDoes::CreateRule,
        }
    }

    /// The delivery an approval asks for when the person chose none.
    pub fn default_delivery(self) -> Delivery {
        match self {
            ApprovalDoes::RunHere => Delivery::RunNow,
            ApprovalDoes::HandOff { .. } => Delivery::Handoff { session: None },
            ApprovalDoes::CreateRule => Delivery::Proof,
        }
    }

    /// Whether `delivery` is one this table offers (the signer refuses the
    /// others, `delivery_not_offered`).
    pub fn offers(self, delivery: &Delivery) -> bool {
        match (self, delivery) {
            (ApprovalDoes::RunHere | ApprovalDoes::CreateRule, _) => true,
            (ApprovalDoes::HandOff { other_session }, Delivery::Handoff { session }) => {
                other_session || session.is_none()
            }
            (ApprovalDoes::HandOff { .. }, Delivery::Proof | Delivery::RunNow) => false,
        }
    }
}

/// One approval as an approver interface asked for it.
#[derive(Debug, Clone)]
pub struct Approval {
    /// The proposal approved.
    pub proposal_id: String,
    /// Where the proof goes.
    pub delivery: Delivery,
    /// The person's passkey assertion, when the interface asked for one.
    pub passkey: Option<PasskeyAssertion>,
}

/// What an approval did.
#[derive(Debug)]
pub enum Approved {
    /// A quorum approval short of the required count: recorded, no proof
    /// issued, nothing run.
    QuorumPending {
        /// The proposal after the decision.
        proposal: Box<ProposalView>,
        /// Approvals so far (this one included).
        approvals: usize,
        /// Approvals required.
        required: u32,
    },
    /// A `rule.create` proposal: the rule exists; no proof, nothing run.
    RuleCreated {
        /// The proposal after the decision.
        proposal: Box<ProposalView>,
        /// The rule's id.
        rule_id: String,
    },
    /// The signer keeps the proof for one claim by a head of the principal.
    HandedOff {
        /// The proposal after the decision.
        proposal: Box<ProposalView>,
        /// When the authorization expires (RFC 3339).
        expires_at: String,
    },
    /// The proof, for the interface to put where the person asked. A
    /// secret: never log it.
    ProofIssued {
        /// The proposal after the decision.
        proposal: Box<ProposalView>,
        /// The proof.
        proof: Proof,
        /// The proof's SHA-256, hex (what the ledger records).
        proof_sha256: String,
        /// When the proof expires (RFC 3339).
        expires_at: String,
    },
    /// Approved and run, once.
    Ran {
        /// The proposal after the decision.
        proposal: Box<ProposalView>,
        /// What the execution did.
        outcome: Outcome,
    },
}

/// What a revocation did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Revoked {
    /// The proof can no longer be consumed.
    Revoked,
    /// Too late: the proof was already consumed.
    AlreadyUsed,
    /// The proposal has no unconsumed proof.
    NothingToRevoke,
}

/// Why an approver operation did not complete.
#[derive(Debug, thiserror::Error)]
pub enum ApproverError {
    /// The signer refused, was unreachable or failed; nothing was done.
    #[error(transparent)]
    Signer(#[from] SignerCallError),
    /// The signer approved but answered with something unusable; the
    /// approval stands and should be revoked.
    #[error("the signer returned an unusable answer for {proposal_id}: {detail}")]
    Unusable {
        /// The proposal approved.
        proposal_id: String,
        /// What was wrong.
        detail: String,
    },
    /// Approved, but the execution failed before an outcome was recorded
    /// (or the gate could not be built); the proposal's status says what
    /// the ledger knows.
    #[error(
        "approved {proposal_id}, but the execution failed before an outcome was recorded: {detail}"
    )]
    RunFailed {
        /// The proposal approved.
        proposal_id: String,
        /// What failed.
        detail: String,
    },
}

impl ApproverError {
    /// The signer's refusal, when this is one.
    pub fn refusal(&self) -> Option<&SignerRefusal> {
        match self {
            ApproverError::Signer(SignerCallError::Refused(r)) => Some(r),
            _ => None,
        }
    }
}

/// The approver operations of one approver credential: the signer client
/// authenticated with it, and the service whose gate and tracker "run now"
/// uses. Clones share both.
#[derive(Clone)]
pub struct Approver {
    signer: SignerClient<Channel>,
    service: Service,
}

impl Approver {
    /// The operations of `signer` (a client authenticated with an approver
    /// credential), running approved effects through `service`.
    pub fn new(signer: SignerClient<Channel>, service: Service) -> Self {
        Self { signer, service }
    }

    /// The executions "run now" started (the service's tracker): a server
    /// closes and waits on it before it returns.
    pub fn executions(&self) -> tokio_util::task::TaskTracker {
        self.service.executions()
    }

    /// One proposal, as this approver may see it.
    pub async fn proposal(&self, id: &str) -> Result<ProposalView, ApproverError> {
        Ok(self
            .signer
            .clone()
            .get_proposal(GetProposalRequest {
                proposal_id: id.to_owned(),
            })
            .await
            .map_err(SignerCallError::from)?
            .into_inner())
    }

    /// Everything the signer would refuse about `approval` (no longer
    /// pending, a changed contract or policy, a premise that no longer
    /// holds, a bad session), checked before the person commits. Records
    /// and issues nothing.
    pub async fn check(&self, approval: &Approval) -> Result<ProposalView, ApproverError> {
        let decided = self.decide(decide_request(approval, true)).await?;
        decided.proposal.ok_or_else(|| ApproverError::Unusable {
            proposal_id: approval.proposal_id.clone(),
            detail: "the answer has no proposal".to_owned(),
        })
    }

    /// Approve: the decision, then what its answer means; with
    /// [`Delivery::RunNow`] the execution, on the service's tracker.
    pub async fn approve(&self, approval: Approval) -> Result<Approved, ApproverError> {
        let mut decided = self.decide(decide_request(&approval, false)).await?;
        let id = approval.proposal_id;
        let unusable = |detail: &str| ApproverError::Unusable {
            proposal_id: id.clone(),
            detail: detail.to_owned(),
        };
        let proposal = Box::new(
            decided
                .proposal
                .take()
                .ok_or_else(|| unusable("the answer has no proposal"))?,
        );
        if !decided.created_rule_id.is_empty() {
            return Ok(Approved::RuleCreated {
                proposal,
                rule_id: decided.created_rule_id,
            });
        }
        if decided.proof_sha256.is_empty() {
            let quorum = proposal
                .quorum
                .as_ref()
                .ok_or_else(|| unusable("approved, yet no proof was issued"))?;
            let (approvals, required) = (approvals(quorum).count(), quorum.required);
            return Ok(Approved::QuorumPending {
                proposal,
                approvals,
                required,
            });
        }
        if let Delivery::Handoff { .. } = approval.delivery {
            return Ok(Approved::HandedOff {
                proposal,
                expires_at: decided.expires_at,
            });
        }
        let proof = Proof::from_text(std::mem::take(&mut decided.proof))
            .map_err(|e| unusable(&format!("an unusable proof ({e})")))?;
        if approval.delivery == Delivery::Proof {
            return Ok(Approved::ProofIssued {
                proposal,
                proof,
                proof_sha256: decided.proof_sha256,
                expires_at: decided.expires_at,
            });
        }
        let run_failed = |detail: String| ApproverError::RunFailed {
            proposal_id: id.clone(),
            detail,
        };
        let gate = self.service.built_gate().await.map_err(run_failed)?;
        // The signer's view, parsed once: what the gate runs is typed.
        let session = Session::parse(proposal.session.as_str())
            .map_err(|e| run_failed(format!("the signer's view has a malformed session: {e}")))?;
        let executing = ProposalId::parse(proposal.id.as_str())
            .map_err(|e| run_failed(format!("the signer's view has a malformed id: {e}")))?;
        // Its own task on the service's tracker: a caller that goes away
        // must not cut the effect off between intent and completion.
        let run = self
            .service
            .executions
            .spawn(async move { gate.execute(&executing, &session, &proof).await });
        match run.await {
            Ok(Ok(outcome)) => Ok(Approved::Ran { proposal, outcome }),
            Ok(Err(e)) => Err(run_failed(e.to_string())),
            Err(e) => Err(run_failed(format!("execution task: {e}"))),
        }
    }

    /// Deny with `reason` (the signer refuses an empty one).
    pub async fn deny(&self, id: &str, reason: &str) -> Result<ProposalView, ApproverError> {
        let decided = self
            .decide(DecideRequest {
                proposal_id: id.to_owned(),
                approve: false,
                reason: reason.to_owned(),
                ..Default::default()
            })
            .await?;
        decided.proposal.ok_or_else(|| ApproverError::Unusable {
            proposal_id: id.to_owned(),
            detail: "the answer has no proposal".to_owned(),
        })
    }

    /// Revoke the unconsumed proof of `id`.
    pub async fn revoke(&self, id: &str, reason: &str) -> Result<Revoked, ApproverError> {
        let response = self
            .signer
            .clone()
            .revoke(RevokeRequest {
                proposal_id: id.to_owned(),
                reason: reason.to_owned(),
            })
            .await
            .map_err(SignerCallError::from)?
            .into_inner();
        match RevokeOutcome::try_from(response.outcome) {
            Ok(RevokeOutcome::Revoked) => Ok(Revoked::Revoked),
            Ok(RevokeOutcome::AlreadyUsed) => Ok(Revoked::AlreadyUsed),
            Ok(RevokeOutcome::NothingToRevoke) => Ok(Revoked::NothingToRevoke),
            _ => Err(ApproverError::Unusable {
                proposal_id: id.to_owned(),
                detail: format!("an unknown revocation outcome {}", response.outcome),
            }),
        }
    }

    /// Record whether the uncertain execution of `id` happened; the answer
    /// names who recorded it.
    pub async fn resolve(&self, id: &str, applied: bool) -> Result<String, ApproverError> {
        Ok(self
            .signer
            .clone()
            .resolve_uncertain(ResolveUncertainRequest {
                proposal_id: id.to_owned(),
                applied,
            })
            .await
            .map_err(SignerCallError::from)?
            .into_inner()
            .resolved_by)
    }

    async fn decide(&self, request: DecideRequest) -> Result<DecideResponse, ApproverError> {
        Ok(self
            .signer
            .clone()
            .decide(request)
            .await
            .map_err(SignerCallError::from)?
            .into_inner())
    }
}

/// The approvals among a quorum's decisions: the one place a decision is
/// read as an approval.
pub fn approvals(quorum: &QuorumView) -> impl Iterator<Item = &QuorumDecisionView> {
    quorum
        .decisions
        .iter()
        .filter(|d| d.decision() == QuorumDecision::Approve)
}

/// The signer's request for `approval`.
fn decide_request(approval: &Approval, dry_run: bool) -> DecideRequest {
    let (delivery, execute_in_session) = match &approval.delivery {
        Delivery::Handoff { session } => (WireDelivery::Handoff, session.clone()),
        Delivery::Proof | Delivery::RunNow => (WireDelivery::Direct, None),
    };
    DecideRequest {
        proposal_id: approval.proposal_id.clone(),
        approve: true,
        delivery: delivery.into(),
        execute_in_session: execute_in_session.unwrap_or_default(),
        dry_run,
        // A dry run checks what the signer would refuse; the assertion
        // answers a single-use challenge and is spent on the decision.
        passkey: if dry_run {
            None
        } else {
            approval.passkey.clone()
        },
        ..Default::default()
    }
}

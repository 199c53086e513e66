//! The data-operation service every head calls.
//!
//! Owns: what each data operation of the surface table does (one handler per
//! [`Operation`], matched exhaustively, so a new operation without a handler
//! does not compile), the one ownership check of a proposal's record, the
//! task each execution runs in (a caller that goes away never cuts an effect
//! off between intent and completion), the one [`Answer`] type: a
//! result, a refusal with a stable reason code, or a fault; and the one
//! wait for a person's decision ([`wait_for_decision`], over the signer's
//! `WatchProposal` stream).
//!
//! Must not: parse a transport, authenticate a caller, render text or wire
//! responses (it renders only the JSON results of an execution,
//! [`results`], the one shape every head returns), or log a proof. Heads
//! parse their transport into an [`Operation`], call [`Service::call`],
//! and render the [`Answer`].
//!
//! It is its own crate rather than a module of `countersign-surface`: the
//! surface is a pure description (names, schemas, results) that the parity
//! gate and the manifest read without a signer client, a gate or a ledger.
#![forbid(unsafe_code)]

mod answer;
pub mod approver;
pub mod hook;
mod params;
mod recent;
mod resources;
pub mod results;
mod schemas;
pub mod wait;

use std::sync::Arc;

use countersign_gate::Gate;
use countersign_gate::signer_client::SignerCallError;
use countersign_proto::reason::Reason;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    GetProposalRequest, ListProposalsRequest, ProposalStatus, ProposeRequest, WithdrawRequest,
};
use countersign_registry::Registry;
use countersign_surface::operations::OperationKey;
use countersign_verifier::{Proof, ProposalId, Session};
use tokio::sync::OnceCell;
use tokio_util::task::TaskTracker;
use tonic::transport::Channel;

pub use answer::{Answer, Done, Fault};
pub use approver::{Approval, ApprovalDoes, Approved, Approver, ApproverError, Delivery, Revoked};
pub use params::DEFAULT_LIST_LIMIT;
pub use resources::{Building, Resources};
pub use schemas::{ParamsError, Schemas};
pub use wait::{Waited, wait_for_decision};

/// One data operation with its typed parameters, as a head parsed it.
#[derive(Debug)]
pub enum Operation {
    /// The operations that can be proposed.
    ListOperations,
    /// Propose registry operation `operation`.
    Propose {
        /// The registry operation's name.
        operation: String,
        /// The arguments, already parsed by the strict parser (JSON text).
        arguments: String,
        /// The model-supplied note.
        note: String,
    },
    /// One proposal.
    GetProposal {
        /// The proposal id.
        id: ProposalId,
    },
    /// The caller's proposals, newest first.
    ListProposals {
        /// Only this status (`None`: any).
        status: Option<ProposalStatus>,
        /// At most this many.
        limit: u32,
    },
    /// Withdraw a proposal.
    Withdraw {
        /// The proposal id.
        id: ProposalId,
    },
    /// Execute with the signer's handoff.
    ExecuteHandoff {
        /// The proposal id.
        id: ProposalId,
    },
    /// Execute with a proof the person carried.
    ExecuteWithProof {
        /// The proposal id.
        id: ProposalId,
        /// The proof, already parsed.
        proof: Proof,
    },
    /// The recorded disposition of an executed proposal.
    GetResult {
        /// The proposal id.
        id: ProposalId,
    },
}

impl Operation {
    /// The key of this operation in the surface table.
    pub fn key(&self) -> OperationKey {
        match self {
            Operation::ListOperations => OperationKey::ListOperations,
            Operation::Propose { .. } => OperationKey::Propose,
            Operation::GetProposal { .. } => OperationKey::GetProposal,
            Operation::ListProposals { .. } => OperationKey::ListProposals,
            Operation::Withdraw { .. } => OperationKey::Withdraw,
            Operation::ExecuteHandoff { .. } => OperationKey::ExecuteHandoff,
            Operation::ExecuteWithProof { .. } => OperationKey::ExecuteWithProof,
            Operation::GetResult { .. } => OperationKey::GetResult,
        }
    }
}

/// What the service acts with: this installation's head connection to the
/// signer and principal, the gate, ledger and registry (ready or built on
/// first use), the executions still running, and the compiled parameter
/// schemas. Clones share all of it.
#[derive(Clone)]
pub struct Service {
    principal: String,
    resources: Arc<dyn Resources>,
    gate: Arc<OnceCell<Gate>>,
    executions: TaskTracker,
    schemas: Arc<Schemas>,
    /// The operations of the proposals made through this service lately.
    recent: Arc<recent::Recent>,
    /// The head this service proposes through (`ProposeRequest.head`);
    /// `None` until the head says, and the signer refuses a proposal that
    /// names none.
    through: Option<Through>,
}

/// The heads that propose through a [`Service`], as the operator's Cedar
/// policy names them (`context.head`). A coding agent's hook proposes
/// without the service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Through {
    /// The command line.
    Cli,
    /// The private HTTP API.
    Api,
    /// The MCP head.
    Mcp,
    /// The approval console.
    Console,
    /// The MCP gateway's gated calls.
    Gateway,
}

impl Through {
    /// The name the signer and the policy use.
    pub fn as_str(self) -> &'static str {
        match self {
            Through::Cli => "cli",
            Through::Api => "api",
            Through::Mcp => "mcp",
            Through::Console => "console",
            Through::Gateway => "gateway",
        }
    }
}

impl Service {
    /// A service over `head`, `gate` and the `registry` the head serves.
    pub fn new(head: SignerClient<Channel>, gate: Gate, registry: Arc<Registry>) -> Self {
        Self::ready(head, gate, Some(registry))
    }

    /// A service over `head` and `gate` that lists the registry as the gate
    /// last loaded it.
    pub fn over_gate(head: SignerClient<Channel>, gate: Gate) -> Self {
        Self::ready(head, gate, None)
    }

    fn ready(head: SignerClient<Channel>, gate: Gate, registry: Option<Arc<Registry>>) -> Self {
        let principal = gate.principal().to_string();
        let cell = OnceCell::new_with(Some(gate.clone()));
        Self {
            principal,
            resources: Arc::new(resources::Ready {
                head,
                gate,
                registry,
            }),
            gate: Arc::new(cell),
            executions: TaskTracker::new(),
            schemas: Arc::default(),
            recent: Arc::default(),
            through: None,
        }
    }

    /// The same service, proposing through `head`.
    pub fn through(mut self, head: Through) -> Self {
        self.through = Some(head);
        self
    }

    /// A service for `principal` that connects to the signer and builds
    /// the gate, the ledger and the registry from `resources` only when an
    /// operation needs them (a CLI process runs one operation).
    pub fn lazy(principal: String, resources: Arc<dyn Resources>) -> Self {
        Self {
            principal,
            resources,
            gate: Arc::default(),
            executions: TaskTracker::new(),
            schemas: Arc::default(),
            recent: Arc::default(),
            through: None,
        }
    }

    /// The executions this service started: each runs in a task of its
    /// own, so a caller that goes away never cuts an effect off between
    /// its intent and its completion. A head that serves until its client
    /// leaves closes and waits on this before it returns.
    pub fn executions(&self) -> TaskTracker {
        self.executions.clone()
    }

    /// The compiled parameter schemas every head validates with
    /// ([`Schemas::check`]).
    pub fn schemas(&self) -> &Schemas {
        &self.schemas
    }

    /// Wait until a person (or a rule) decides `id`, or until `deadline`,
    /// over this head's signer connection ([`wait_for_decision`]).
    pub async fn wait_for_decision(
        &self,
        id: &ProposalId,
        deadline: tokio::time::Instant,
    ) -> Result<Waited, String> {
        let mut head = self.resources.head().await?;
        wait_for_decision(&mut head, id, deadline)
            .await
            .map_err(|e| format!("cannot wait for proposal {id}: {e}"))
    }

    /// Run `operation` for `session` of this installation's principal.
    pub async fn call(&self, operation: Operation, session: &str) -> Answer {
        match operation {
            // These two need no signer connection.
            Operation::ListOperations => self.list_operations(),
            Operation::GetResult { id } => self.result(&id).await,
            operation => match self.resources.head().await {
                Ok(head) => self.with_signer(head, operation, session).await,
                Err(e) => Answer::Fault(Fault::Unavailable(e)),
            },
        }
    }

    /// Run `operation` with the signer connection `head`. The match is
    /// exhaustive: an operation without a handler does not compile.
    async fn with_signer(
        &self,
        mut head: SignerClient<Channel>,
        operation: Operation,
        session: &str,
    ) -> Answer {
        let signer = |status: tonic::Status| signer_answer(&status);
        match operation {
            Operation::ListOperations => self.list_operations(),
            Operation::Propose { operation, .. }
                if self
                    .resources
                    .registry()
                    .is_ok_and(|r| r.get(&operation).is_some_and(|op| op.proposed_by_hooks())) =>
            {
                Answer::refused(
                    Reason::HookOperation,
                    format!(
                        "{operation} is proposed only by a coding agent's hook (countersign hook AGENT); nothing was proposed"
                    ),
                )
            }
            Operation::Propose {
                operation,
                arguments,
                note,
            } => head
                .propose(ProposeRequest {
                    operation,
                    arguments_json: arguments,
                    session: session.to_string(),
                    note,
                    // Only a hook keys its proposals (by the agent's tool
                    // call id); it proposes without the service.
                    idempotency_key: String::new(),
                    head: self
                        .through
                        .map(Through::as_str)
                        .unwrap_or_default()
                        .to_owned(),
                })
                .await
                .map_or_else(signer, |r| {
                    let view = r.into_inner();
                    self.recent.remember(&view.id, &view.operation);
                    Answer::done(Done::Proposal(Box::new(view)))
                }),
            Operation::GetProposal { id } => head
                .get_proposal(GetProposalRequest {
                    proposal_id: id.into(),
                })
                .await
                .map_or_else(signer, |r| {
                    Answer::done(Done::Proposal(Box::new(r.into_inner())))
                }),
            Operation::ListProposals { status, limit } => head
                .list_proposals(ListProposalsRequest {
                    status: status.unwrap_or(ProposalStatus::Unspecified).into(),
                    limit,
                })
                .await
                .map_or_else(signer, |r| {
                    Answer::done(Done::Proposals(r.into_inner().proposals))
                }),
            Operation::Withdraw { id } => head
                .withdraw(WithdrawRequest {
                    proposal_id: id.into(),
                })
                .await
                .map_or_else(signer, |r| {
                    Answer::done(Done::Proposal(Box::new(r.into_inner())))
                }),
            Operation::ExecuteHandoff { id } => {
                let session = match executing_session(session) {
                    Ok(session) => session,
                    Err(refused) => return refused,
                };
                let gate = match self.gate().await {
                    Ok(gate) => gate,
                    Err(fault) => return fault,
                };
                // Its own task: a caller that goes away must not cut an
                // effect off between intent and completion.
                let made = self.recent.operation_of(id.as_str());
                let run = self.executions.spawn(async move {
                    let outcome = gate
                        .execute_handoff_of(&mut head, &id, &session, made.as_deref())
                        .await;
                    (id, outcome)
                });
                execution(run.await)
            }
            Operation::ExecuteWithProof { id, proof } => {
                let session = match executing_session(session) {
                    Ok(session) => session,
                    Err(refused) => return refused,
                };
                let gate = match self.gate().await {
                    Ok(gate) => gate,
                    Err(fault) => return fault,
                };
                let run = self.executions.spawn(async move {
                    let outcome = gate.execute(&id, &session, &proof).await;
                    (id, outcome)
                });
                execution(run.await)
            }
            Operation::GetResult { id } => self.result(&id).await,
        }
    }

    fn list_operations(&self) -> Answer {
        match self.resources.registry() {
            Ok(registry) => Answer::done(Done::Operations(
                registry
                    .proposable()
                    .map(countersign_surface::results::operation)
                    .collect(),
            )),
            Err(e) => Answer::Fault(Fault::Internal(e)),
        }
    }

    /// The gate, built on first use.
    async fn gate(&self) -> Result<Gate, Answer> {
        self.built_gate()
            .await
            .map_err(|e| Answer::Fault(Fault::Internal(e)))
    }

    /// The gate, built on first use; the error says why it could not be.
    pub(crate) async fn built_gate(&self) -> Result<Gate, String> {
        self.gate
            .get_or_try_init(|| self.resources.gate())
            .await
            .cloned()
    }

    /// The disposition of one of this principal's proposals. The one
    /// ownership check: another principal's proposal is refused exactly as
    /// an unknown one.
    async fn result(&self, id: &ProposalId) -> Answer {
        let ledger = match self.gate.get() {
            Some(gate) => gate.ledger().clone(),
            None => match self.resources.ledger().await {
                Ok(ledger) => ledger,
                Err(e) => return Answer::Fault(Fault::Internal(e)),
            },
        };
        let owned = match ledger.proposal(id).await {
            Ok(record) => record.is_some_and(|p| p.proposal.principal == self.principal),
            Err(e) => return Answer::Fault(Fault::Internal(e.to_string())),
        };
        if !owned {
            return Answer::refused(
                Reason::UnknownProposal,
                format!("no proposal {id} for this principal"),
            );
        }
        match ledger.disposition(id).await {
            Ok(Some(d)) => Answer::done(Done::Disposition(d)),
            Ok(None) => Answer::refused(Reason::NotExecuted, format!("{id} has not been executed")),
            Err(e) => Answer::Fault(Fault::Internal(e.to_string())),
        }
    }
}

/// A proposal id as a head received it, parsed once: a malformed one is
/// refused as the signer refuses it (`invalid_field`), before anything runs.
pub fn proposal_id(text: &str) -> Result<ProposalId, Answer> {
    ProposalId::parse(text)
        .map_err(|e| Answer::refused(Reason::InvalidField, format!("invalid proposal_id: {e}")))
}

/// The session an execution runs for, parsed once: a proof binds a
/// well-formed session, so a malformed one is refused before the gate.
fn executing_session(session: &str) -> Result<Session, Answer> {
    Session::parse(session)
        .map_err(|e| Answer::refused(Reason::InvalidField, format!("invalid session: {e}")))
}

type Execution = (
    ProposalId,
    Result<countersign_gate::Outcome, countersign_gate::GateError>,
);

fn execution(joined: Result<Execution, tokio::task::JoinError>) -> Answer {
    match joined {
        Ok((proposal_id, Ok(outcome))) => Answer::done(Done::Outcome {
            proposal_id: proposal_id.into(),
            outcome,
        }),
        Ok((_, Err(e))) => Answer::Fault(Fault::Internal(e.to_string())),
        Err(e) => Answer::Fault(Fault::Internal(format!("execution task: {e}"))),
    }
}

/// The signer's answer to a call that failed: its refusals keep the
/// signer's reason code.
fn signer_answer(status: &tonic::Status) -> Answer {
    match SignerCallError::from_status(status) {
        SignerCallError::Refused(r) => Answer::Refused {
            reason: r.code,
            message: r.message,
        },
        unavailable @ SignerCallError::Unavailable(_) => {
            Answer::Fault(Fault::Unavailable(unavailable.to_string()))
        }
        failed @ SignerCallError::Failed(_) => Answer::Fault(Fault::Internal(failed.to_string())),
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_signer_refusal_keeps_the_signers_own_reason_code() {
        let mut status = tonic::Status::failed_precondition("operation \"x\" changed");
        status
            .metadata_mut()
            .insert("countersign-reason", "contract_changed".parse().unwrap());
        let answer = signer_answer(&status);
        assert_eq!(
            answer.to_value().unwrap(),
            countersign_surface::results::refusal("contract_changed", "operation \"x\" changed")
        );
    }

    #[test]
    fn every_key_is_the_key_of_an_operation_and_has_a_table_entry() {
        for key in OperationKey::ALL {
            assert!(key.entry().is_some(), "{key:?}");
        }
        assert_eq!(
            Operation::ListOperations.key(),
            OperationKey::ListOperations
        );
        assert_eq!(
            Operation::GetResult {
                id: ProposalId::from_random([0; 16])
            }
            .key()
            .entry()
            .map(|e| e.name),
            Some("get_result")
        );
    }
}

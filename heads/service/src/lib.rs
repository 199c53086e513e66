//! The data-operation service every head calls.
//!
//! Owns: what each data operation of the surface table does (one handler per
//! [`Operation`], matched exhaustively, so a new operation without a handler
//! does not compile), the one ownership check of a proposal's record, the
//! task each execution runs in (a caller that goes away never cuts an effect
//! off between intent and completion), and the one [`Answer`] type: a
//! result, a refusal with a stable reason code, or a fault.
//!
//! Must not: parse a transport, authenticate a caller, render text or wire
//! responses, or log a proof. Heads parse their transport into an
//! [`Operation`], call [`Service::call`], and render the [`Answer`].
//!
//! It is its own crate rather than a module of `countersign-surface`: the
//! surface is a pure description (names, schemas, results) that the parity
//! gate and the manifest read without a signer client, a gate or a ledger.
#![forbid(unsafe_code)]

mod answer;

use std::sync::Arc;

use countersign_gate::Gate;
use countersign_gate::signer_client::SignerCallError;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    GetProposalRequest, ListProposalsRequest, ProposeRequest, WithdrawRequest,
};
use countersign_registry::Registry;
use countersign_surface::operations::OperationKey;
use countersign_verifier::Proof;
use tonic::transport::Channel;

pub use answer::{Answer, Done, Fault};

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
        id: String,
    },
    /// The caller's proposals, newest first.
    ListProposals {
        /// Only this status (empty: any).
        status: String,
        /// At most this many.
        limit: u32,
    },
    /// Withdraw a proposal.
    Withdraw {
        /// The proposal id.
        id: String,
    },
    /// Execute with the signer's handoff.
    ExecuteHandoff {
        /// The proposal id.
        id: String,
    },
    /// Execute with a proof the person carried.
    ExecuteWithProof {
        /// The proposal id.
        id: String,
        /// The proof, already parsed.
        proof: Proof,
    },
    /// The recorded disposition of an executed proposal.
    GetResult {
        /// The proposal id.
        id: String,
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
/// signer, its gate, and the registry the head serves.
#[derive(Clone)]
pub struct Service {
    head: SignerClient<Channel>,
    gate: Gate,
    registry: Arc<Registry>,
}

impl Service {
    /// A service over `head`, `gate` and `registry`.
    pub fn new(head: SignerClient<Channel>, gate: Gate, registry: Arc<Registry>) -> Self {
        Self {
            head,
            gate,
            registry,
        }
    }

    /// Run `operation` for `session` of this installation's principal.
    pub async fn call(&self, operation: Operation, session: &str) -> Answer {
        let mut head = self.head.clone();
        let signer = |status: tonic::Status| signer_answer(&status);
        match operation {
            Operation::ListOperations => Answer::done(Done::Operations(
                self.registry
                    .operations()
                    .map(countersign_surface::results::operation)
                    .collect(),
            )),
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
                })
                .await
                .map_or_else(signer, |r| Answer::done(Done::Proposal(r.into_inner()))),
            Operation::GetProposal { id } => head
                .get_proposal(GetProposalRequest { proposal_id: id })
                .await
                .map_or_else(signer, |r| Answer::done(Done::Proposal(r.into_inner()))),
            Operation::ListProposals { status, limit } => head
                .list_proposals(ListProposalsRequest { status, limit })
                .await
                .map_or_else(signer, |r| {
                    Answer::done(Done::Proposals(r.into_inner().proposals))
                }),
            Operation::Withdraw { id } => head
                .withdraw(WithdrawRequest { proposal_id: id })
                .await
                .map_or_else(signer, |r| Answer::done(Done::Proposal(r.into_inner()))),
            Operation::ExecuteHandoff { id } => {
                let gate = self.gate.clone();
                let session = session.to_string();
                // Its own task: a caller that goes away must not cut an
                // effect off between intent and completion.
                let run = tokio::spawn(async move {
                    let outcome = gate.execute_handoff(&mut head, &id, &session).await;
                    (id, outcome)
                });
                execution(run.await)
            }
            Operation::ExecuteWithProof { id, proof } => {
                let gate = self.gate.clone();
                let session = session.to_string();
                let run = tokio::spawn(async move {
                    let outcome = gate.execute(&id, &session, &proof).await;
                    (id, outcome)
                });
                execution(run.await)
            }
            Operation::GetResult { id } => self.result(&id).await,
        }
    }

    /// The disposition of one of this principal's proposals. The one
    /// ownership check: another principal's proposal is refused exactly as
    /// an unknown one.
    async fn result(&self, id: &str) -> Answer {
        let ledger = self.gate.ledger();
        let owned = match ledger.proposal(id).await {
            Ok(record) => record.is_some_and(|p| p.proposal.principal == self.gate.principal()),
            Err(e) => return Answer::Fault(Fault::Internal(e.to_string())),
        };
        if !owned {
            return Answer::refused(
                "unknown_proposal",
                format!("no proposal {id} for this principal"),
            );
        }
        match ledger.disposition(id).await {
            Ok(Some(d)) => Answer::done(Done::Disposition(d)),
            Ok(None) => Answer::refused("not_executed", format!("{id} has not been executed")),
            Err(e) => Answer::Fault(Fault::Internal(e.to_string())),
        }
    }
}

type Execution = (
    String,
    Result<countersign_gate::Outcome, countersign_gate::GateError>,
);

fn execution(joined: Result<Execution, tokio::task::JoinError>) -> Answer {
    match joined {
        Ok((proposal_id, Ok(outcome))) => Answer::done(Done::Outcome {
            proposal_id,
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
        SignerCallError::Unavailable(_) => Answer::Fault(Fault::Unavailable),
        SignerCallError::Failed(detail) => Answer::Fault(Fault::Internal(detail)),
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
            Operation::GetResult { id: String::new() }
                .key()
                .entry()
                .map(|e| e.name),
            Some("get_result")
        );
    }
}

//! The one answer type every head renders.
//!
//! Owns: [`Answer`] (a result, a refusal with a stable reason code, or a
//! fault) and the surface's JSON value of each result. Must not: render
//! text, choose a wire status, or carry a fault's detail to a caller.

use countersign_gate::Outcome;
use countersign_ledger::Disposition;
use countersign_proto::reason::{Code, Reason};
use countersign_proto::v1::ProposalView;
use countersign_surface::results;
use serde_json::Value;

/// The answer to one data operation.
#[derive(Debug)]
pub enum Answer {
    /// The operation's result.
    Done(Box<Done>),
    /// Refused: nothing was done. `reason` is the catalogue's code (or a
    /// newer signer's, kept as it came).
    Refused {
        /// The reason code.
        reason: Code,
        /// What was refused and why.
        message: String,
    },
    /// A fault; callers get a generic message, the detail goes to the log.
    Fault(Fault),
}

impl Answer {
    /// A result.
    pub fn done(done: Done) -> Self {
        Answer::Done(Box::new(done))
    }

    /// A refusal for `reason` with `message`.
    pub fn refused(reason: Reason, message: String) -> Self {
        Answer::Refused {
            reason: Code::Known(reason),
            message,
        }
    }

    /// The surface's JSON value: the result, or the refusal shape.
    /// `None` for a fault.
    pub fn to_value(&self) -> Option<Value> {
        match self {
            Answer::Done(done) => Some(done.to_value()),
            Answer::Refused { reason, message } => Some(results::refusal(reason.as_str(), message)),
            Answer::Fault(_) => None,
        }
    }
}

/// A data operation's result, typed, so a head can render text from it.
#[derive(Debug)]
pub enum Done {
    /// `list_operations`: the surface value of each operation.
    Operations(Vec<Value>),
    /// One proposal.
    Proposal(Box<ProposalView>),
    /// Proposals, newest first.
    Proposals(Vec<ProposalView>),
    /// The outcome of an execution.
    Outcome {
        /// The proposal executed.
        proposal_id: String,
        /// What happened.
        outcome: Outcome,
    },
    /// A recorded disposition.
    Disposition(Disposition),
}

impl Done {
    /// The surface's result value, as every head returns it.
    pub fn to_value(&self) -> Value {
        match self {
            Done::Operations(ops) => Value::Array(ops.clone()),
            Done::Proposal(view) => results::proposal(view),
            Done::Proposals(views) => results::proposals(views),
            Done::Outcome {
                proposal_id,
                outcome,
            } => crate::results::outcome(proposal_id, outcome),
            Done::Disposition(d) => crate::results::disposition(d),
        }
    }
}

/// Why an operation got no answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Fault {
    /// The signer cannot be reached; the detail says where it was sought.
    Unavailable(String),
    /// Anything else. The detail is for the log and for local heads (the
    /// CLI, MCP on stdio); the API answers a generic message.
    Internal(String),
}

//! Tool results: what the model and the person read. The service's
//! [`Answer`] becomes a [`Reply`] here: a short plain summary that says
//! whether anything was done or applied, the answer's own JSON value (the
//! surface's result or refusal) as structured content, and whether the call
//! did what it asked. What the answer is, and the refusal's reason code and
//! message, are the service's; only the summary text is this head's.
//!
//! Must not: put a proof, or anything derived from one, in a reply.

use countersign_proto::v1::ProposalView;
use countersign_service::{Answer, Done, Fault};
use countersign_surface::operations::OperationKey;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use crate::tools::structured;

/// The service's answer to a call of operation `key`, as a tool result.
pub(crate) fn reply(key: OperationKey, answer: Answer) -> Reply {
    let value = answer.to_value();
    let (text, is_error) = match &answer {
        Answer::Done(done) => done_text(key, done),
        Answer::Refused { message, .. } => (format!("refused: {message}; nothing was done"), true),
        Answer::Fault(Fault::Unavailable(detail)) => (
            format!("{detail}; is `countersign up` running? Nothing was done"),
            true,
        ),
        Answer::Fault(Fault::Internal(detail)) => {
            tracing::error!(operation = key.name(), "{detail}");
            let text = match key {
                OperationKey::ExecuteHandoff | OperationKey::ExecuteWithProof => format!(
                    "execution could not complete: {detail}. A builtin operation is recorded all at once or not at all: executing it again applies it once or returns what was recorded. For a command, if it got as far as recording its intent the outcome is uncertain and `countersign reconcile` resolves it; otherwise nothing was applied"
                ),
                _ => format!("countersign failed: {detail}"),
            };
            (text, true)
        }
    };
    Reply {
        text,
        structured: value,
        is_error,
    }
}

/// The summary of a result, and whether it is an error (an execution that
/// applied nothing now).
fn done_text(key: OperationKey, done: &Done) -> (String, bool) {
    match done {
        Done::Operations(ops) => {
            let names: Vec<&str> = ops.iter().filter_map(|op| op["name"].as_str()).collect();
            let text = format!(
                "{} operations can be proposed: {}",
                names.len(),
                names.join(", ")
            );
            (text, false)
        }
        Done::Proposal(view) => {
            let text = match key {
                OperationKey::Propose => proposed_text(view),
                OperationKey::Withdraw => {
                    format!("withdrew {}; it can no longer be approved", view.id)
                }
                _ => status_text(view),
            };
            (text, false)
        }
        Done::Proposals(list) => {
            let mut text = format!("{} proposal(s)", list.len());
            for view in list {
                text.push_str(&format!("\n{}", status_text(view)));
            }
            (text, false)
        }
        Done::Outcome { outcome, .. } => {
            let mut text = outcome.summary();
            if let Some(d) = outcome.disposition().filter(|d| !d.result.is_null()) {
                text.push_str(&format!("\nresult: {}", d.result));
            }
            (text, !outcome.applied_now())
        }
        Done::Disposition(d) => (format!("{}: {}", d.proposal_id, d.status.as_str()), false),
    }
}

/// After proposing: what happens next, and the exact command for the person.
pub(crate) fn proposed_text(view: &ProposalView) -> String {
    format!(
        "proposed {id} ({op}) in session {session}; status {status}. Nothing runs until a person approves it at their terminal with:\n  countersign approve {id} --for-mcp\nThen call execute_approved with proposal_id {id}.\n\nThe preview the person sees:\n{preview}",
        id = view.id,
        op = view.operation,
        session = view.session,
        status = view.status,
        preview = view.preview.trim_end()
    )
}

/// One line about a proposal.
pub(crate) fn status_text(view: &ProposalView) -> String {
    let mut text = format!(
        "{}: {} ({}, session {})",
        view.id, view.status, view.operation, view.session
    );
    if view.handoff_waiting {
        text.push_str("; approved for one execution: call execute_approved");
    } else if view.status == "pending" {
        text.push_str(&format!(
            "; waiting for a person: `countersign approve {} --for-mcp`",
            view.id
        ));
    }
    text
}

/// A tool result: a short summary for people and models, the surface's
/// JSON as structured content, and whether the call did what it asked.
pub(crate) struct Reply {
    pub(crate) text: String,
    pub(crate) structured: Option<Value>,
    pub(crate) is_error: bool,
}

impl Reply {
    /// A failure with no structured content (the call never reached the
    /// service: an unknown tool's arguments, a schema mismatch).
    pub(crate) fn error(text: String) -> Self {
        Self {
            text,
            structured: None,
            is_error: true,
        }
    }

    /// The result the SDK sends.
    pub(crate) fn into_result(self) -> CallToolResult {
        let mut result = match self.structured {
            Some(value) => {
                let value = structured(value);
                if self.is_error {
                    CallToolResult::structured_error(value)
                } else {
                    CallToolResult::structured(value)
                }
            }
            None => CallToolResult::error(Vec::new()),
        };
        result.content.insert(0, ContentBlock::text(self.text));
        result
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_refusal_carries_the_services_reason_code_and_message() {
        let reply = reply(
            OperationKey::GetResult,
            Answer::refused(
                "unknown_proposal",
                "no proposal p for this principal".into(),
            ),
        );
        assert!(reply.is_error);
        assert_eq!(
            reply.structured,
            Some(countersign_surface::results::refusal(
                "unknown_proposal",
                "no proposal p for this principal"
            ))
        );
        assert_eq!(
            reply.text,
            "refused: no proposal p for this principal; nothing was done"
        );
    }

    #[test]
    fn a_fault_has_no_structured_content() {
        let reply = reply(
            OperationKey::GetProposal,
            Answer::Fault(Fault::Unavailable("the signer is unavailable: x".into())),
        );
        assert!(reply.is_error && reply.structured.is_none());
        assert!(reply.text.contains("countersign up"), "{}", reply.text);
    }
}

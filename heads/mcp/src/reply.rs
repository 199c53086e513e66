//! Tool results: what the model and the person read. Every answer of the
//! signer and the gate becomes a [`Reply`] here, in one place: a short plain
//! summary that says whether anything was done or applied, the surface's
//! JSON as structured content, and whether the call did what it asked.
//!
//! Must not: put a proof, or anything derived from one, in a reply.

use countersign_gate::GateError;
use countersign_gate::signer_client::SignerCallError;
use countersign_proto::v1::ProposalView;
use countersign_surface::results;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use crate::tools::structured;

/// The signer's answer about one proposal, as a tool result.
pub(crate) fn proposal_reply(
    answer: Result<tonic::Response<ProposalView>, tonic::Status>,
    text: fn(&ProposalView) -> String,
) -> Reply {
    match answer {
        Ok(view) => {
            let view = view.into_inner();
            Reply::ok(text(&view), results::proposal(&view))
        }
        Err(status) => Reply::from_status(&status),
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
    pub(crate) fn ok(text: String, value: Value) -> Self {
        Self {
            text,
            structured: Some(value),
            is_error: false,
        }
    }

    pub(crate) fn error(text: String) -> Self {
        Self {
            text,
            structured: None,
            is_error: true,
        }
    }

    /// The one rendering of the signer's failed answers as tool results:
    /// a refusal carries the signer's own reason code (as structured
    /// content, like every refusal), faults say the signer failed.
    pub(crate) fn from_status(status: &tonic::Status) -> Self {
        match SignerCallError::from_status(status) {
            SignerCallError::Refused(refusal) => Reply {
                text: format!("refused: {}; nothing was done", refusal.message),
                structured: Some(results::refusal(&refusal.code, &refusal.message)),
                is_error: true,
            },
            SignerCallError::Unavailable(message) => Reply::error(format!(
                "the countersign signer is unavailable ({message}); is `countersign up` running? Nothing was done"
            )),
            SignerCallError::Failed(message) => {
                Reply::error(format!("the countersign signer failed: {message}"))
            }
        }
    }

    pub(crate) fn from_gate_error(error: &GateError) -> Self {
        Reply::error(format!(
            "execution could not complete: {error}. A builtin operation is recorded all at once or not at all: executing it again applies it once or returns what was recorded. For a command, if it got as far as recording its intent the outcome is uncertain and `countersign reconcile` resolves it; otherwise nothing was applied"
        ))
    }

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
    fn a_signer_refusal_keeps_the_signers_own_reason_code() {
        let mut status = tonic::Status::failed_precondition("operation \"x\" changed");
        status
            .metadata_mut()
            .insert("countersign-reason", "contract_changed".parse().unwrap());
        let reply = Reply::from_status(&status);
        assert!(reply.is_error);
        let value = reply.structured.unwrap();
        assert_eq!(value["reason"], "contract_changed");
        assert_eq!(value["applied"], false);
    }
}

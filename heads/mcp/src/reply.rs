//! Tool results: what the model and the person read. The service's
//! [`Answer`] becomes a [`Reply`] here: a short plain summary that says
//! whether anything was done or applied, the answer's own JSON value (the
//! surface's result or refusal) as structured content, and whether the call
//! did what it asked. What the answer is, and the refusal's reason code and
//! message, are the service's; only the summary text is this head's.
//!
//! Where a person can decide (their terminal, and the web console's page of
//! the proposal when one is configured) is this head's text too; the
//! console's URL joins an execution's structured content only as
//! `console_url`, which the surface's outcome schema documents.
//!
//! Must not: put a proof, or anything derived from one, in a reply.

use countersign_proto::v1::{ProposalStatus, ProposalView};
use countersign_registry::terminal_safe;
use countersign_service::{Answer, Done, Fault};
use countersign_surface::operations::OperationKey;
use countersign_surface::results;
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::Value;

use crate::console::Console;
use crate::tools::structured;

/// The service's answer to a call of operation `key`, as a tool result;
/// proposals waiting for a person name `console`'s page of them.
pub(crate) fn reply(key: OperationKey, answer: Answer, console: &Console) -> Reply {
    let value = answer.to_value();
    let (text, is_error) = match &answer {
        Answer::Done(done) => done_text(key, done, console),
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
        content: upstream_content(&answer),
    }
}

/// The content an upstream MCP tool answered, when `answer` is the
/// execution (now or recorded) of a gated gateway call: what the agent
/// would have read had it called the tool directly. Anything else has none.
fn upstream_content(answer: &Answer) -> Vec<ContentBlock> {
    let Answer::Done(done) = answer else {
        return Vec::new();
    };
    let Done::Outcome { outcome, .. } = &**done else {
        return Vec::new();
    };
    outcome
        .disposition()
        .and_then(|d| d.result.get("content"))
        .and_then(|content| serde_json::from_value(content.clone()).ok())
        .unwrap_or_default()
}

/// The summary of a result, and whether it is an error (an execution that
/// applied nothing now).
fn done_text(key: OperationKey, done: &Done, console: &Console) -> (String, bool) {
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
            let url = console.proposal_url(&view.id);
            let text = match key {
                OperationKey::Propose => proposed_text(view, url.as_deref()),
                OperationKey::Withdraw => {
                    format!("withdrew {}; it can no longer be approved", view.id)
                }
                _ => status_text(view, url.as_deref()),
            };
            (text, false)
        }
        Done::Proposals(list) => {
            let mut text = format!("{} proposal(s)", list.len());
            for view in list {
                let url = console.proposal_url(&view.id);
                text.push_str(&format!("\n{}", status_text(view, url.as_deref())));
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

/// After proposing: what happens next, and where the person decides: the
/// exact command, and the console's page (`console_url`) if configured;
/// only the console when approving needs a passkey (a terminal cannot).
pub(crate) fn proposed_text(view: &ProposalView, console_url: Option<&str>) -> String {
    // Denied in the same call (the operator's policy forbids it): nobody
    // will be asked, so nothing is worth waiting for.
    if view.status() == ProposalStatus::Denied {
        return format!(
            "proposed {id} ({op}) in session {session}; status denied: {reason}.\nNobody can approve it and nothing runs; do not propose it again.",
            id = view.id,
            op = view.operation,
            session = view.session,
            reason = terminal_safe(&view.reason),
        );
    }
    let place = if view.passkey_required {
        match console_url {
            Some(url) => format!("with their passkey in the web console at:\n  {url}"),
            None => "with their passkey in the web console (`countersign console`)".to_owned(),
        }
    } else {
        let console = console_url
            .map(|url| format!("\nor in the web console at:\n  {url}"))
            .unwrap_or_default();
        format!(
            "at their terminal with:\n  countersign approve {} --hand-off{console}",
            view.id
        )
    };
    let place = match &view.quorum {
        Some(q) => {
            let how = if view.passkey_required {
                "each in their own console with their own passkey: `countersign console --as NAME`"
                    .to_owned()
            } else {
                format!(
                    "with their own credential: `countersign approve {} --hand-off --as NAME`",
                    view.id
                )
            };
            format!(
                "{place}\n({} of the approvers {} must each approve, {how})",
                q.required,
                q.approvers.join(", ")
            )
        }
        None => place,
    };
    // The action first, as the person sees it first (escaped like the
    // preview).
    let action = view
        .action
        .as_ref()
        .map(|a| format!("\nAction: {}", terminal_safe(&a.summary)))
        .unwrap_or_default();
    format!(
        "proposed {id} ({op}) in session {session}; status {status}.{action}\nNothing runs until a person approves it {place}\nThen call execute_approved with proposal_id {id}.\n\nThe preview the person sees:\n{preview}",
        id = view.id,
        op = view.operation,
        session = view.session,
        status = view.status().name(),
        preview = view.preview.trim_end()
    )
}

/// One line about a proposal; a pending one names where a person decides.
pub(crate) fn status_text(view: &ProposalView, console_url: Option<&str>) -> String {
    let mut text = format!(
        "{}: {} ({}, session {})",
        view.id,
        view.status().name(),
        view.operation,
        view.session
    );
    if let Some(q) = view
        .quorum
        .as_ref()
        .filter(|_| view.status().awaits_decision())
    {
        let approved: Vec<&str> = countersign_service::approver::approvals(q)
            .map(|d| d.approver.as_str())
            .collect();
        text.push_str(&format!(
            "; needs {} approvals from {} ({} so far{})",
            q.required,
            q.approvers.join(", "),
            approved.len(),
            if approved.is_empty() {
                String::new()
            } else {
                format!(": {}", approved.join(", "))
            }
        ));
    }
    if view.handoff_waiting {
        text.push_str("; approved for one execution: call execute_approved");
    } else if view.status().awaits_decision() && view.passkey_required {
        text.push_str("; waiting for a person with their passkey in the web console");
        if let Some(url) = console_url {
            text.push_str(&format!(" at {url}"));
        }
    } else if view.status().awaits_decision() {
        let named = if view.quorum.is_some() {
            " --as NAME"
        } else {
            ""
        };
        text.push_str(&format!(
            "; waiting for a person: `countersign approve {} --hand-off{named}`",
            view.id
        ));
        if let Some(url) = console_url {
            text.push_str(&format!(" or the web console at {url}"));
        }
    }
    if let Some(left) = results::time_left_text(view, time::OffsetDateTime::now_utc()) {
        text.push_str(&format!("; {left}, then it expires"));
    }
    text
}

/// A tool result: a short summary for people and models, the surface's
/// JSON as structured content, and whether the call did what it asked.
pub(crate) struct Reply {
    pub(crate) text: String,
    pub(crate) structured: Option<Value>,
    pub(crate) is_error: bool,
    /// Content blocks after the summary: an upstream tool's result.
    pub(crate) content: Vec<ContentBlock>,
}

impl Reply {
    /// A failure with no structured content (the call never reached the
    /// service: an unknown tool's arguments, a schema mismatch).
    pub(crate) fn error(text: String) -> Self {
        Self {
            text,
            structured: None,
            is_error: true,
            content: Vec::new(),
        }
    }

    /// The refusal of an execution of a proposal still waiting for a
    /// person, naming the console's page of it (text and `console_url`).
    pub(crate) fn pointing_at(mut self, console_url: &str, terminal_approves: bool) -> Self {
        let terminal = if terminal_approves {
            " (or at their terminal)"
        } else {
            ""
        };
        self.text.push_str(&format!(
            "\nA person can review and approve it in the web console at {console_url}{terminal}; then call execute_approved again."
        ));
        if let Some(Value::Object(result)) = &mut self.structured {
            result.insert("console_url".into(), Value::from(console_url));
        }
        self
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
        result.content.extend(self.content);
        result
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use countersign_proto::v1::{ProposalStatus, QuorumDecision, QuorumDecisionView, QuorumView};

    #[test]
    fn a_refusal_carries_the_services_reason_code_and_message() {
        let reply = reply(
            OperationKey::GetResult,
            Answer::refused(
                countersign_proto::reason::Reason::UnknownProposal,
                "no proposal p for this principal".into(),
            ),
            &Console::default(),
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

    const URL: &str = "https://console.localhost:7444/proposals/prop_1";

    fn view(status: &str, handoff_waiting: bool) -> ProposalView {
        let status: ProposalStatus = status.parse().unwrap();
        ProposalView {
            id: "prop_1".into(),
            operation: "schedule.create".into(),
            session: "mcp-0123456789abcdef".into(),
            status: status.into(),
            preview: "create nightly\n".into(),
            handoff_waiting,
            ..ProposalView::default()
        }
    }

    #[test]
    fn the_proposal_text_names_the_terminal_command_and_the_console_page() {
        let text = proposed_text(&view("pending", false), Some(URL));
        assert!(
            text.contains("countersign approve prop_1 --hand-off\nor in the web console at:\n  https://console.localhost:7444/proposals/prop_1\nThen call execute_approved"),
            "{text}"
        );
        let text = proposed_text(&view("pending", false), None);
        assert!(
            text.contains("countersign approve prop_1 --hand-off\nThen"),
            "{text}"
        );
        assert!(!text.contains("console"), "{text}");
    }

    #[test]
    fn a_proposal_that_needs_a_passkey_names_only_the_console() {
        let mut pending = view("pending", false);
        pending.passkey_required = true;
        let text = proposed_text(&pending, Some(URL));
        assert!(
            text.contains("approves it with their passkey in the web console at:\n  https://console.localhost:7444/proposals/prop_1\nThen call execute_approved"),
            "{text}"
        );
        assert!(!text.contains("countersign approve"), "{text}");
        assert_eq!(
            status_text(&pending, Some(URL)),
            "prop_1: pending (schedule.create, session mcp-0123456789abcdef); waiting for a person with their passkey in the web console at https://console.localhost:7444/proposals/prop_1"
        );
        let text = proposed_text(&pending, None);
        assert!(
            text.contains("(`countersign console`)") && !text.contains("countersign approve"),
            "{text}"
        );
    }

    #[test]
    fn a_pending_status_names_the_console_page_and_no_other_status_does() {
        assert_eq!(
            status_text(&view("pending", false), Some(URL)),
            "prop_1: pending (schedule.create, session mcp-0123456789abcdef); waiting for a person: `countersign approve prop_1 --hand-off` or the web console at https://console.localhost:7444/proposals/prop_1"
        );
        assert!(!status_text(&view("pending", false), None).contains("console"));
        for (status, waiting) in [("pending", true), ("denied", false), ("applied", false)] {
            let text = status_text(&view(status, waiting), Some(URL));
            assert!(!text.contains(URL), "{text}");
        }
    }

    #[test]
    fn a_quorum_proposal_says_who_approved_and_how_many_are_needed() {
        let mut pending = view("pending", false);
        pending.quorum = Some(QuorumView {
            required: 2,
            approvers: vec!["alice".into(), "bob".into(), "carol".into()],
            decisions: vec![QuorumDecisionView {
                approver: "alice".into(),
                decision: QuorumDecision::Approve.into(),
                decided_at: "2026-01-01T00:00:00Z".into(),
                reason: String::new(),
            }],
        });
        assert_eq!(
            status_text(&pending, None),
            "prop_1: pending (schedule.create, session mcp-0123456789abcdef); needs 2 approvals from alice, bob, carol (1 so far: alice); waiting for a person: `countersign approve prop_1 --hand-off --as NAME`"
        );
        let text = proposed_text(&pending, None);
        assert!(
            text.contains("(2 of the approvers alice, bob, carol must each approve, with their own credential: `countersign approve prop_1 --hand-off --as NAME`)"),
            "{text}"
        );
        pending.passkey_required = true;
        let text = proposed_text(&pending, None);
        assert!(
            text.contains("must each approve, each in their own console with their own passkey: `countersign console --as NAME`)"),
            "{text}"
        );
        let mut approved = pending.clone();
        approved.set_status(ProposalStatus::Approved);
        assert!(!status_text(&approved, None).contains("needs"));
    }

    #[test]
    fn get_proposal_names_the_console_page_of_a_pending_proposal() {
        let console = &Console::at(Some(crate::console::tests::test_console()));
        let answer = Answer::done(Done::Proposal(Box::new(view("pending", false))));
        let reply = reply(OperationKey::GetProposal, answer, console);
        assert!(reply.text.ends_with(URL), "{}", reply.text);
        let answer = Answer::done(Done::Proposal(Box::new(view("pending", false))));
        let reply = super::reply(OperationKey::Propose, answer, console);
        assert!(reply.text.contains(URL), "{}", reply.text);
    }

    #[test]
    fn an_execution_of_a_waiting_proposal_points_at_the_console_in_text_and_structure() {
        let refusal = countersign_gate::signer_client::SignerRefusal {
            code: countersign_proto::reason::Reason::NoLiveHandoff.into(),
            message: "no approval is waiting".into(),
        };
        let outcome = countersign_gate::Outcome::Refused(countersign_gate::Refused::NoHandoff {
            proposal_id: "prop_1".into(),
            refusal,
        });
        let answer = Answer::done(Done::Outcome {
            proposal_id: "prop_1".into(),
            outcome,
        });
        let reply =
            reply(OperationKey::ExecuteHandoff, answer, &Console::default()).pointing_at(URL, true);
        assert!(reply.is_error);
        assert!(
            reply.text.contains("countersign approve prop_1 --hand-off")
                && reply.text.contains("nothing was applied")
                && reply.text.contains(&format!("web console at {URL}")),
            "{}",
            reply.text
        );
        let structured = reply.structured.unwrap();
        assert_eq!(structured["console_url"], URL);
        assert_eq!(structured["reason"], "no_live_handoff");
        assert_eq!(structured["applied"], false);
    }

    #[test]
    fn a_fault_has_no_structured_content() {
        let reply = reply(
            OperationKey::GetProposal,
            Answer::Fault(Fault::Unavailable("the signer is unavailable: x".into())),
            &Console::default(),
        );
        assert!(reply.is_error && reply.structured.is_none());
        assert!(reply.text.contains("countersign up"), "{}", reply.text);
    }
}

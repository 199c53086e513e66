//! Pointing a person at the web console: when `execute_approved` finds a
//! proposal still waiting for a person and the installation has a console
//! (`[console] addr` in `config.toml`), the result names the console's page
//! of that proposal; and a client that declared URL-mode elicitation (MCP
//! 2025-11-25, capability `elicitation.url`) is asked, with
//! `elicitation/create` in mode `url`, to open that page. Once the client
//! answers (or [`ELICITATION_WAIT`] passes), the signer is asked again: if
//! a person approved meanwhile, the approved action runs, once, exactly as
//! a second `execute_approved` would run it.
//!
//! Must not: treat the client's answer as anything but "the client is done
//! showing the link". `accept`, `decline`, `cancel`, an error and a
//! timeout all lead to the same thing, a fresh look at the signer; an
//! approval only ever comes from a person, through the signer's handoff.
//! Nor ask for form-mode input: nothing a client types is wanted here.

use std::time::Duration;

use countersign_gate::{Outcome, Refused};
use countersign_identity::ConsoleConfig;
use countersign_service::{Answer, Done, Operation};
use countersign_verifier::ProposalId;
use rmcp::model::{ElicitRequestParams, ElicitationAction};
use rmcp::service::{ElicitationMode, Peer};
use rmcp::{RoleServer, ServiceError};

/// How long `execute_approved` waits for a client to answer a request to
/// open the console. The wait ends early on any answer; 10 minutes lets a
/// person read a preview and decide, and is well inside a proposal's
/// lifetime in the ledger. After it, the client gets a cancellation and
/// the tool call returns (the approved action, or the refusal with the
/// link), so a client that never answers holds nothing for longer.
pub(crate) const ELICITATION_WAIT: Duration = Duration::from_secs(600);

/// This installation's console, if it has one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Console {
    console: Option<ConsoleConfig>,
    /// Passkeys are configured: approvals are made in the console.
    passkeys: bool,
}

impl Console {
    /// The console `console`; `None`: no console configured.
    pub(crate) fn at(console: Option<ConsoleConfig>) -> Self {
        Self {
            console,
            passkeys: false,
        }
    }

    /// The same console, where passkeys are configured or not.
    pub(crate) fn for_passkeys(self, passkeys: bool) -> Self {
        Self { passkeys, ..self }
    }

    /// Whether a person may also approve at a terminal: not where passkeys
    /// are configured (a terminal cannot ask for one; an approval that
    /// needs it is made in the console).
    pub(crate) fn terminal_approves(&self) -> bool {
        !self.passkeys
    }

    /// The console's page of proposal `id`, if a console is configured.
    pub(crate) fn proposal_url(&self, id: &str) -> Option<String> {
        self.console.as_ref().map(|c| c.proposal_url(id))
    }
}

/// Whether an execution was refused only because no person has approved
/// the proposal for this head yet (no handoff is waiting).
pub(crate) fn found_nothing_approved(answer: &Answer) -> bool {
    matches!(
        answer,
        Answer::Done(done) if matches!(
            &**done,
            Done::Outcome { outcome: Outcome::Refused(Refused::NoHandoff { .. }), .. }
        )
    )
}

/// The `GetProposal` operation a head runs to see whether a proposal is
/// still waiting for a person, and the check of its answer.
pub(crate) fn status_of(id: &ProposalId) -> Operation {
    Operation::GetProposal { id: id.clone() }
}

/// Whether the answer to [`status_of`] is a proposal a person can still
/// approve (pending, no handoff waiting).
pub(crate) fn is_waiting_for_a_person(answer: &Answer) -> bool {
    matches!(
        answer,
        Answer::Done(done) if matches!(
            &**done,
            Done::Proposal(view) if view.status().awaits_decision() && !view.handoff_waiting
        )
    )
}

/// Whether the client declared URL-mode elicitation when it connected.
pub(crate) fn opens_urls(peer: &Peer<RoleServer>) -> bool {
    peer.supported_elicitation_modes()
        .contains(&ElicitationMode::Url)
}

/// How a request to open the console ended. None of these is an approval.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Asked {
    /// The client answered (accept, decline or cancel).
    Answered(ElicitationAction),
    /// No answer within [`ELICITATION_WAIT`].
    TimedOut,
    /// The request failed (the client refused it, went away, or the
    /// protocol version forbids server-to-client requests).
    Failed(String),
}

/// Ask the client to open `url`, the console's page of proposal `id`, and
/// wait at most [`ELICITATION_WAIT`] for its answer.
pub(crate) async fn ask_to_open(
    peer: &Peer<RoleServer>,
    id: &str,
    url: &str,
    terminal_approves: bool,
) -> Asked {
    let elicitation_id = match crate::session::random_id("elicit") {
        Ok(elicitation_id) => elicitation_id,
        Err(e) => return Asked::Failed(e),
    };
    let params = ElicitRequestParams::UrlElicitationParams {
        meta: None,
        message: open_message(id, terminal_approves),
        url: url.to_string(),
        elicitation_id,
    };
    match peer
        .create_elicitation_with_timeout(params, Some(ELICITATION_WAIT))
        .await
    {
        Ok(result) => Asked::Answered(result.action),
        Err(ServiceError::Timeout { .. }) => Asked::TimedOut,
        Err(e) => Asked::Failed(e.to_string()),
    }
}

/// What the client shows the person with the link.
pub(crate) fn open_message(id: &str, terminal_approves: bool) -> String {
    let terminal = if terminal_approves {
        format!(" (or with `countersign approve {id} --hand-off`)")
    } else {
        String::new()
    };
    format!(
        "An agent asks to run proposal {id}. Open the countersign console to review it and approve or deny it. Nothing runs unless you approve it there{terminal}; answering this prompt approves nothing."
    )
}

#[cfg(test)]
pub(crate) mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn a_console_is_named_only_when_configured() {
        assert_eq!(Console::default().proposal_url("prop_1"), None);
        let console = Console::at(Some(test_console()));
        assert_eq!(
            console.proposal_url("prop_1").as_deref(),
            Some("https://console.localhost:7444/proposals/prop_1")
        );
        assert!(console.terminal_approves());
        assert!(!console.for_passkeys(true).terminal_approves());
    }

    /// The console a default installation configures.
    pub(crate) fn test_console() -> ConsoleConfig {
        ConsoleConfig {
            addr: "127.0.0.1:7444".parse().unwrap(),
            names: vec!["console.localhost".into()],
            own_cert: None,
            mdns: false,
        }
    }

    #[test]
    fn the_prompt_says_that_answering_it_approves_nothing() {
        let message = open_message("prop_1", true);
        assert!(!open_message("prop_1", false).contains("countersign approve"));
        assert!(message.contains("approves nothing"), "{message}");
        assert!(message.contains("countersign approve prop_1 --hand-off"));
    }

    #[test]
    fn only_a_missing_handoff_counts_as_nothing_approved() {
        let refused = Answer::refused(countersign_proto::reason::Reason::NoLiveHandoff, "x".into());
        assert!(!found_nothing_approved(&refused));
        let in_progress = Answer::done(Done::Outcome {
            proposal_id: "p".into(),
            outcome: Outcome::Refused(Refused::InProgress("p".into())),
        });
        assert!(!found_nothing_approved(&in_progress));
    }
}

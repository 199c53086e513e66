//! Answering a coding agent's hook, for every head that does (the
//! `countersign hook` command, the HTTP API's hook endpoint).
//!
//! Owns: the one flow from a parsed tool call to its answer: propose the
//! call as its agent operation, in the session `<agent>:<session id>`,
//! keyed by the agent's tool call id; wait up to the hook's wait; withdraw
//! a proposal nobody decided (so a late approval applies nothing); consume
//! an approval through a gate that answers hooks (the answer "allow" is
//! recorded before the agent hears it); and the answer of every other
//! state. Every failure is a deny with its reason: never an allow on error.
//!
//! Must not: parse or render an agent's wire format (`countersign-hook`
//! does), run the call (the agent does), or show a proof.

use std::future::Future as _;
use std::task::Poll;
use std::time::Duration;

use countersign_gate::{Gate, Outcome};
use countersign_hook::{Answer, ToolCall};
use countersign_ledger::DispositionStatus;
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    GetProposalRequest, ProposalStatus, ProposalView, ProposeRequest, WithdrawRequest,
};
use countersign_verifier::{ProposalId, Session};
use tokio::time::Instant;
use tonic::transport::Channel;

use crate::wait::{Waited, wait_for_decision};

/// How long a hook waits for a decision unless told otherwise: below each
/// agent's own hook timeout as `countersign init` writes it.
pub const DEFAULT_WAIT: Duration = Duration::from_secs(300);

/// The answer to `call`, waiting up to `wait`; `gate` builds the gate
/// that consumes an approval (it must answer hooks), only once one came.
/// `proposing` is called once the proposal is on its way to the signer: a
/// head that has work to do before it can consume (open its ledger, fetch
/// the key set) starts it there, beside the signer's work, rather than in
/// the way of the proposal on a machine with few cores.
pub async fn answer(
    head: &mut SignerClient<Channel>,
    gate: impl AsyncFnOnce() -> Result<Gate, String>,
    call: &ToolCall,
    wait: Duration,
    proposing: impl FnOnce(),
) -> Answer {
    decide(head, gate, call, wait, proposing)
        .await
        .unwrap_or_else(|why| unavailable(&why))
}

/// The answer for a head that could not get as far as the signer (an
/// installation that does not load, say).
pub fn unavailable(why: &str) -> Answer {
    Answer::deny(format!("countersign denied this call: {why}"))
}

/// Propose `call`, wait, and consume an approval; `Err` is a reason to
/// deny.
async fn decide(
    head: &mut SignerClient<Channel>,
    gate: impl AsyncFnOnce() -> Result<Gate, String>,
    call: &ToolCall,
    wait: Duration,
    proposing: impl FnOnce(),
) -> Result<Answer, String> {
    let deadline = Instant::now() + wait;
    let session = Session::parse(format!("{}:{}", call.agent().name(), call.session_id()))
        .map_err(|e| format!("the agent's session id cannot name a session: {e}"))?;
    let request = ProposeRequest {
        operation: call.operation().to_owned(),
        arguments_json: call.arguments().to_string(),
        session: session.to_string(),
        note: String::new(),
        idempotency_key: call.tool_use_id().unwrap_or_default().to_owned(),
        head: "hook".into(),
    };
    let mut view = {
        let mut proposed = std::pin::pin!(head.propose(request));
        // One poll hands the request to the connection; then the rest starts.
        let first = std::future::poll_fn(|cx| Poll::Ready(proposed.as_mut().poll(cx))).await;
        proposing();
        match first {
            Poll::Ready(answered) => answered,
            Poll::Pending => proposed.await,
        }
    }
    .map_err(|status| format!("the signer did not take the proposal: {}", status.message()))?
    .into_inner();
    loop {
        let id = ProposalId::parse(view.id.clone()).map_err(|e| e.to_string())?;
        match view.status() {
            ProposalStatus::Pending => {
                view = match decision(head, &id, deadline).await? {
                    Some(decided) => decided,
                    None => match withdraw(head, &id).await? {
                        // Withdrawn: a late approval can no longer apply.
                        None => {
                            return Ok(Answer::deny(format!(
                                "no decision within {} s; countersign withdrew proposal {id}",
                                wait.as_secs()
                            )));
                        }
                        // Decided just as the wait ran out.
                        Some(decided) => decided,
                    },
                };
            }
            ProposalStatus::Approved => {
                let gate = gate().await?;
                let outcome = gate
                    .execute_approved_handoff(head, &id, &session, &view.operation)
                    .await
                    .map_err(|e| e.to_string())?;
                return Ok(answered(&id, &view, &outcome));
            }
            ProposalStatus::Applied => return Ok(allowed_before(&id)),
            ProposalStatus::Denied => {
                let reason = match view.reason.as_str() {
                    "" => "no reason given",
                    reason => reason,
                };
                return Ok(Answer::deny(format!(
                    "a person denied this call in countersign: {reason} (proposal {id})"
                )));
            }
            status @ (ProposalStatus::Withdrawn
            | ProposalStatus::Revoked
            | ProposalStatus::Expired
            | ProposalStatus::Failed
            | ProposalStatus::Uncertain
            | ProposalStatus::Unspecified) => {
                let why = match view.reason.as_str() {
                    "" => String::new(),
                    reason => format!(": {reason}"),
                };
                return Ok(Answer::deny(format!(
                    "proposal {id} is {}, so this call is not allowed{why}",
                    status.name()
                )));
            }
        }
    }
}

/// The proposal once it is no longer pending, or `None` when `deadline`
/// passed first: the signer's stream tells the moment it is decided.
async fn decision(
    head: &mut SignerClient<Channel>,
    id: &ProposalId,
    deadline: Instant,
) -> Result<Option<ProposalView>, String> {
    match wait_for_decision(head, id, deadline).await {
        Ok(Waited::Decided(view)) => Ok(Some(view)),
        Ok(Waited::TimedOut { .. }) => Ok(None),
        Err(e) => Err(format!("cannot wait for proposal {id}: {e}")),
    }
}

/// The proposal as it stands.
async fn current(
    head: &mut SignerClient<Channel>,
    id: &ProposalId,
) -> Result<ProposalView, String> {
    head.get_proposal(GetProposalRequest {
        proposal_id: id.to_string(),
    })
    .await
    .map(tonic::Response::into_inner)
    .map_err(|status| format!("cannot read proposal {id}: {}", status.message()))
}

/// Withdraw the proposal whose wait ran out: `None` once withdrawn, or
/// its view if it was decided meanwhile.
async fn withdraw(
    head: &mut SignerClient<Channel>,
    id: &ProposalId,
) -> Result<Option<ProposalView>, String> {
    let withdrawn = head
        .withdraw(WithdrawRequest {
            proposal_id: id.to_string(),
        })
        .await;
    match withdrawn {
        Ok(_) => Ok(None),
        Err(_) => current(head, id).await.map(Some),
    }
}

/// The answer to an execution of an approved call.
fn answered(id: &ProposalId, view: &ProposalView, outcome: &Outcome) -> Answer {
    let by = match view.provenance.as_str() {
        "" => String::new(),
        provenance => format!(" ({provenance})"),
    };
    match outcome {
        Outcome::Applied(_) => Answer::allow(format!(
            "approved in countersign{by}; proposal {id}, allowed once"
        )),
        Outcome::Recorded(d) if d.status == DispositionStatus::Applied => allowed_before(id),
        other => Answer::deny(format!(
            "countersign did not allow this call: {}",
            other.summary()
        )),
    }
}

/// The recorded answer to a call asked again.
fn allowed_before(id: &ProposalId) -> Answer {
    Answer::allow(format!(
        "countersign allowed this call before (proposal {id})"
    ))
}

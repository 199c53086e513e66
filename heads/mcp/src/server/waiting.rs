//! A call that finds a proposal waiting for a person: `execute_approved`
//! of a proposal nobody approved yet, or a gated gateway call just
//! proposed. Its result names the console's page of the proposal, and a
//! client that declared URL-mode elicitation is asked to open it
//! ([`crate::console`]): during the call with an `elicitation/create`
//! request, or, on protocol 2026-07-28 (no server-to-client requests), with
//! an `input_required` result whose retry carries a sealed `requestState`
//! ([`crate::request_state`]). Once the client answers or retries, the
//! signer is asked again, and the action runs only if a person approved it
//! meanwhile.
//!
//! Must not: treat the client's answer, its `inputResponses` or its retry
//! as an approval, or propose again on a retry.

use std::time::Duration;

use countersign_proto::v1::ProposalView;
use countersign_service::{Answer, Operation, Waited};
use countersign_surface::operations::OperationKey;
use countersign_verifier::ProposalId;
use rmcp::RoleServer;
use rmcp::model::{
    CallToolResponse, CallToolResult, ElicitRequest, ElicitRequestParams, InputRequest,
    InputRequests, InputRequiredResult, JsonObject, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::Peer;
use tokio::time::Instant;

use super::McpHead;
use crate::console::{self, Asked};
use crate::reply::{Reply, reply};
use crate::request_state::Binding;
use countersign_registry::gateway::split_agent_tool_name;

/// How a call that finds a proposal waiting for a person may ask the client
/// to open the console's page of it. Whatever the client answers decides
/// nothing.
#[derive(Clone, Copy)]
pub(super) enum Asking<'a> {
    /// With a URL-mode `elicitation/create` request during the call, if the
    /// client declared URL-mode elicitation (protocol before 2026-07-28).
    Peer(&'a Peer<RoleServer>),
    /// With an `input_required` result (protocol 2026-07-28), if the
    /// client declared URL-mode elicitation in this request.
    InputRequired,
    /// Not at all (no client to ask, or a retry that already asked).
    Never,
}

/// How often a call waiting for a person's decision tells its client.
const PROGRESS_EVERY: Duration = Duration::from_secs(5);

/// Where a call's progress goes: its client, under the token its request
/// carried.
pub(crate) struct Progress {
    pub(crate) peer: Peer<RoleServer>,
    pub(crate) token: ProgressToken,
}

impl Progress {
    /// Tell the client the call has waited `waited` of `wait` for a
    /// person's decision on `id`. A client that is gone is no error.
    async fn waited(&self, id: &ProposalId, waited: Duration, wait: Duration) {
        let param = ProgressNotificationParam::new(self.token.clone(), waited.as_secs_f64())
            .with_total(wait.as_secs_f64())
            .with_message(format!(
                "waiting for a person to decide {id} (at most {} s more)",
                wait.saturating_sub(waited).as_secs()
            ));
        if let Err(e) = self.peer.notify_progress(param).await {
            tracing::debug!(proposal = %id, "progress not sent: {e}");
        }
    }
}

/// What a tool call came to.
pub(super) enum Response {
    /// Its result.
    Result(CallToolResult),
    /// A proposal waits for a person: ask the client to open `url` (the
    /// console's page of proposal `id`) and retry, or, if it cannot be
    /// asked, `fallback`.
    Ask {
        id: ProposalId,
        url: String,
        fallback: CallToolResult,
    },
}

impl Response {
    /// The result, without asking anyone.
    pub(super) fn into_result(self) -> CallToolResult {
        match self {
            Response::Result(result)
            | Response::Ask {
                fallback: result, ..
            } => result,
        }
    }
}

impl McpHead {
    /// `execute_approved`: execute what a person approved for this session.
    /// If nothing is approved yet and a console is configured, the refusal
    /// names the console's page of the proposal; a client that declared
    /// URL-mode elicitation is first asked to open it (as `asking` says),
    /// and once it answers (whatever it answers) the signer is asked
    /// again, so an approval made meanwhile runs now. The client's answer
    /// itself decides nothing.
    pub(super) async fn execute_approved(
        &self,
        asking: Asking<'_>,
        session: &str,
        id: ProposalId,
    ) -> Response {
        let key = OperationKey::ExecuteHandoff;
        let answer = self.execute_handoff(session, &id).await;
        let Some(url) = self.waiting_for_a_person(session, &id, &answer).await else {
            return Response::Result(reply(key, answer, &self.console).into_result());
        };
        let waiting = |answer| {
            reply(key, answer, &self.console)
                .pointing_at(&url, self.console.terminal_approves())
                .into_result()
        };
        let peer = match asking {
            Asking::Peer(peer) if console::opens_urls(peer) => peer,
            Asking::InputRequired => {
                let fallback = waiting(answer);
                return Response::Ask { id, url, fallback };
            }
            _ => return Response::Result(waiting(answer)),
        };
        let asked = console::ask_to_open(peer, &id, &url, self.console.terminal_approves()).await;
        // Logged as what it is: the client's answer, never an approval.
        tracing::info!(proposal = %id, session = %session, answer = ?asked, "asked the client to open the console");
        if let Asked::Failed(e) = &asked {
            tracing::warn!(proposal = %id, "asking the client to open the console failed: {e}");
        }
        Response::Result(self.looked_again(session, &id).await)
    }

    /// After the client was asked to open the console: what the signer says
    /// now. The approved action runs if a person approved meanwhile;
    /// otherwise the refusal names the console's page again.
    pub(super) async fn looked_again(&self, session: &str, id: &ProposalId) -> CallToolResult {
        let key = OperationKey::ExecuteHandoff;
        let answer = self.execute_handoff(session, id).await;
        match self.waiting_for_a_person(session, id, &answer).await {
            Some(url) => reply(key, answer, &self.console)
                .pointing_at(&url, self.console.terminal_approves())
                .into_result(),
            None => reply(key, answer, &self.console).into_result(),
        }
    }

    /// A gated gateway call just proposed as `id`: the agent hears the
    /// decision in this same call. A client before protocol 2026-07-28
    /// that opens URLs is first asked to open the console's page. The call
    /// waits for the decision on the signer's watch, for at most the
    /// gateway's `decision_wait_secs`, telling a client that asked for
    /// progress every few seconds that it still waits: approved in time,
    /// the upstream is called once and its result is the call's; decided
    /// otherwise, the call says so; still undecided, its result is
    /// `proposed` (it waits for a person; `execute_approved` runs it
    /// later; a client on protocol 2026-07-28 that opens URLs gets an
    /// `input_required` result naming the console's page instead, whose
    /// retry runs what a person approved meanwhile). The client's answers
    /// decide nothing.
    pub(super) async fn proposed_by_gateway(
        &self,
        asking: Asking<'_>,
        progress: Option<Progress>,
        session: &str,
        id: ProposalId,
        proposed: CallToolResult,
    ) -> Response {
        let wait = self
            .gateway
            .as_ref()
            .map_or(Duration::ZERO, |g| g.decision_wait());
        let url = self.console.proposal_url(&id);
        let asked = match (asking, url) {
            // No request can reach this client during the call: wait first,
            // and only an undecided call asks it to open the console.
            (Asking::InputRequired, Some(url)) => {
                if self
                    .decided_within(&id, wait, progress.as_ref())
                    .await
                    .is_some()
                {
                    return Response::Result(self.looked_again(session, &id).await);
                }
                return Response::Ask {
                    id,
                    url,
                    fallback: proposed,
                };
            }
            (Asking::Peer(peer), Some(url)) if console::opens_urls(peer) => {
                let asked =
                    console::ask_to_open(peer, &id, &url, self.console.terminal_approves()).await;
                tracing::info!(proposal = %id, session = %session, answer = ?asked, "asked the client to open the console");
                true
            }
            _ => false,
        };
        let decided = self.decided_within(&id, wait, progress.as_ref()).await;
        if decided.is_none() && !asked {
            return Response::Result(proposed);
        }
        // Decided, or the client answered (a person may have approved
        // meanwhile): what the signer says now; still nothing approved
        // after an answer, the proposal as it stands.
        let executed = self.looked_again(session, &id).await;
        if decided.is_none() && executed.is_error == Some(true) {
            return Response::Result(proposed);
        }
        Response::Result(executed)
    }

    /// The first view of `id` that is not pending, if a person (or a rule)
    /// decides it within `wait`; progress sent to `progress` while it waits.
    async fn decided_within(
        &self,
        id: &ProposalId,
        wait: Duration,
        progress: Option<&Progress>,
    ) -> Option<ProposalView> {
        if wait.is_zero() {
            return None;
        }
        let started = Instant::now();
        let waiting = self.service.wait_for_decision(id, started + wait);
        tokio::pin!(waiting);
        let mut ticks = tokio::time::interval_at(started + PROGRESS_EVERY, PROGRESS_EVERY);
        loop {
            tokio::select! {
                waited = &mut waiting => return match waited {
                    Ok(Waited::Decided(view)) => Some(view),
                    Ok(Waited::TimedOut { .. }) => None,
                    Err(e) => {
                        tracing::warn!(proposal = %id, "waiting for a decision: {e}");
                        None
                    }
                },
                _ = ticks.tick() => {
                    if let Some(progress) = progress {
                        progress.waited(id, started.elapsed(), wait).await;
                    }
                }
            }
        }
    }

    /// The retry of `tool` with `arguments`, carrying the `requestState`
    /// `sealed` of an earlier `input_required` result: nothing is proposed
    /// again. If the state opens for exactly this call, the proposal it
    /// names runs if a person approved it meanwhile; a gated gateway call
    /// still waiting for a person returns its proposal as it stands. A
    /// state that does not open is refused and nothing runs.
    pub(super) async fn resumed(
        &self,
        session: &str,
        tool: &str,
        arguments: &JsonObject,
        sealed: &str,
    ) -> CallToolResult {
        let binding = self.binding(session, tool, arguments);
        let id = match self.sealer.open(&binding, sealed) {
            Ok(id) => id,
            Err(refused) => {
                tracing::warn!(
                    tool,
                    session,
                    "a retry's requestState was refused: {refused}"
                );
                return Reply::error(format!(
                    "refused: the requestState of this call is not valid ({refused}); nothing was done. Call {tool} again without it."
                ))
                .into_result();
            }
        };
        tracing::info!(proposal = %id, session, tool, "retried after input_required");
        let executed = self.looked_again(session, &id).await;
        let gateway_call = self.gateway.is_some() && split_agent_tool_name(tool).is_some();
        if !gateway_call || executed.is_error != Some(true) {
            return executed;
        }
        let status = self.service.call(console::status_of(&id), session).await;
        if console::is_waiting_for_a_person(&status) {
            reply(OperationKey::GetProposal, status, &self.console).into_result()
        } else {
            executed
        }
    }

    /// What a sealed request state of a call is bound to.
    pub(super) fn binding<'a>(
        &'a self,
        session: &'a str,
        tool: &'a str,
        arguments: &'a JsonObject,
    ) -> Binding<'a> {
        Binding {
            principal: &self.principal,
            session,
            tool,
            arguments,
        }
    }

    /// `response` as the protocol 2026-07-28 answers it: an [`Response::Ask`]
    /// becomes an `input_required` result asking the client to open the
    /// console (URL-mode elicitation) and retry with the sealed state.
    pub(super) fn input_required(
        &self,
        session: &str,
        tool: &str,
        arguments: &JsonObject,
        response: Response,
    ) -> CallToolResponse {
        let Response::Ask { id, url, fallback } = response else {
            return response.into_result().into();
        };
        let Some(state) = self
            .sealer
            .seal(&self.binding(session, tool, arguments), &id)
        else {
            return fallback.into();
        };
        let Ok(elicitation_id) = crate::session::random_id("elicit") else {
            return fallback.into();
        };
        let open = ElicitRequest::new(ElicitRequestParams::UrlElicitationParams {
            meta: None,
            message: console::open_message(&id, self.console.terminal_approves()),
            url,
            elicitation_id,
        });
        let requests =
            InputRequests::from([("open_console".to_owned(), InputRequest::Elicitation(open))]);
        tracing::info!(proposal = %id, session, tool, "input_required: asked the client to open the console");
        InputRequiredResult::new(Some(requests), Some(state)).into()
    }

    pub(super) async fn execute_handoff(&self, session: &str, id: &ProposalId) -> Answer {
        let operation = Operation::ExecuteHandoff { id: id.clone() };
        self.service.call(operation, session).await
    }

    /// The console's page of proposal `id`, if a console is configured and
    /// `answer` (to an execution) refused only because no person approved
    /// it yet, and the proposal is still pending (a person can approve it).
    pub(super) async fn waiting_for_a_person(
        &self,
        session: &str,
        id: &ProposalId,
        answer: &Answer,
    ) -> Option<String> {
        let url = self.console.proposal_url(id)?;
        if !console::found_nothing_approved(answer) {
            return None;
        }
        let status = self.service.call(console::status_of(id), session).await;
        console::is_waiting_for_a_person(&status).then_some(url)
    }
}

//! The MCP server: `tools/list` from [`crate::tools`]; `tools/call` checks
//! the arguments against the tool's schema (compiled once, in the service),
//! turns them into the service's [`Operation`], calls it and renders its
//! [`countersign_service::Answer`] ([`crate::reply`]). No operation is
//! implemented here. When `execute_approved` finds a proposal still waiting
//! for a person, the result names the console's page of it, and a client
//! that opens URLs is asked to open it ([`crate::console`]).
//!
//! Must not: accept, return or log a proof; approve, deny or create a rule;
//! treat a tool argument, an elicitation answer or any client claim as a
//! person's approval. The session is chosen here, never by the client: at
//! random per stdio connection, or, over HTTP, derived from the bearer
//! credential that [`crate::http`] authenticated for the request.

use std::sync::Arc;

use countersign_gate::Gate;
use countersign_identity::ConsoleConfig;
use countersign_identity::shutdown::{Drained, SHUTDOWN_GRACE, drain, shutdown_signal};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_registry::Registry;
use countersign_service::{Answer, Operation, ParamsError, Service};
use countersign_surface::DATA_OPERATIONS;
use countersign_surface::operations::OperationKey;
use countersign_verifier::ProposalId;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ElicitRequest, ElicitRequestParams,
    Implementation, InputRequest, InputRequests, InputRequiredResult, JsonObject, ListToolsResult,
    PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::{Peer, RequestContext};
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio_util::task::TaskTracker;
use tonic::transport::Channel;
use tracing::Instrument as _;

use crate::console::{self, Asked, Console};
use crate::gateway::{Called, Gateway};
use crate::reply::{Reply, reply};
use crate::request_state::{Binding, Sealer};
use crate::tools::{ToolEntry, tool_entries};
use countersign_registry::gateway::split_agent_tool_name;

/// What the server tells every client when it connects.
const INSTRUCTIONS: &str = "countersign is a human-approval gate. Propose an exact action with a `propose_<operation>` tool; \
a person reviews the preview and approves it at their own terminal with `countersign approve ID --for-mcp`. \
Then call `execute_approved` with the proposal id: it runs the approved action once. \
No tool here can approve, deny or see an approval, and no argument or answer you give counts as one.";

/// Why the server could not start or stopped abnormally.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ServeError {
    /// The server could not be built (a tool schema, the session id).
    #[error("the MCP head cannot start: {0}")]
    Setup(String),
    /// The MCP handshake with the client failed.
    #[error("MCP initialization failed: {0}")]
    Initialize(String),
    /// The server task ended abnormally.
    #[error("the MCP server stopped: {0}")]
    Stopped(String),
}

/// The MCP head of one installation, for one connection (one session).
#[derive(Clone)]
pub struct McpHead {
    service: Service,
    /// The registry the tools were built from: calls are checked against
    /// the schemas this head advertised.
    registry: Arc<Registry>,
    session: String,
    /// Served over HTTP: each call's session comes from its request's
    /// authenticated credential, and a call without one is refused.
    per_credential: bool,
    tools: Arc<Vec<ToolEntry>>,
    /// The service's executions, each in a task of its own, so that a
    /// client going away (and the SDK dropping its request handlers) never
    /// cuts an effect off between its intent and its completion;
    /// [`Self::serve_stdio`] waits for them before it returns.
    executions: TaskTracker,
    /// Where the person can decide in a browser, if configured.
    console: Console,
    /// The upstream MCP servers this head fronts, if `gateway.toml` names any.
    gateway: Option<Gateway>,
    /// The gate's principal, bound into every sealed request state.
    principal: String,
    /// Seals and opens the `requestState` of `input_required` results
    /// (MCP 2026-07-28), with a key of this process's own.
    sealer: Arc<Sealer>,
}

/// How a call that finds a proposal waiting for a person may ask the client
/// to open the console's page of it. Whatever the client answers decides
/// nothing.
#[derive(Clone, Copy)]
enum Asking<'a> {
    /// With a URL-mode `elicitation/create` request during the call, if the
    /// client declared URL-mode elicitation (protocol before 2026-07-28).
    Peer(&'a Peer<RoleServer>),
    /// With an `input_required` result (protocol 2026-07-28), if the
    /// client declared URL-mode elicitation in this request.
    InputRequired,
    /// Not at all (no client to ask, or a retry that already asked).
    Never,
}

/// What a tool call came to.
enum Response {
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
    fn into_result(self) -> CallToolResult {
        match self {
            Response::Result(result)
            | Response::Ask {
                fallback: result, ..
            } => result,
        }
    }
}

impl McpHead {
    /// A server for the gate's principal, proposing through the signer
    /// client `head` (authenticated with the head certificate) and executing
    /// through `gate`, with a fresh random session.
    pub fn new(head: SignerClient<Channel>, gate: Gate) -> Result<Self, ServeError> {
        let registry = gate.registry();
        let principal = gate.principal().to_owned();
        let tools = tool_entries(&registry);
        let service = Service::over_gate(head, gate);
        service
            .schemas()
            .compile_all(&registry, DATA_OPERATIONS)
            .map_err(|e| ServeError::Setup(e.to_string()))?;
        Ok(Self {
            executions: service.executions(),
            service,
            registry,
            session: crate::session::new_session_id().map_err(ServeError::Setup)?,
            tools: Arc::new(tools),
            console: Console::default(),
            per_credential: false,
            gateway: None,
            principal,
            sealer: Arc::new(Sealer::new().map_err(ServeError::Setup)?),
        })
    }

    /// This server fronting the upstream MCP servers of `gateway`: their
    /// tools are listed beside countersign's own, and a call of one is
    /// forwarded, proposed or refused as the gateway says. The gate this
    /// head executes through must run `mcp` effects through the same
    /// upstreams (`Gate::with_mcp_upstreams`).
    pub fn with_gateway(mut self, gateway: Gateway) -> Self {
        self.gateway = Some(gateway);
        self
    }

    /// This server pointing people at the web console `console` (the
    /// installation's `[console]`); `None`: no console is configured, and
    /// only the terminal command is named. With `passkeys` configured, only
    /// the console is named (a terminal cannot ask for a passkey).
    pub fn with_console(mut self, console: Option<ConsoleConfig>, passkeys: bool) -> Self {
        self.console = Console::at(console).for_passkeys(passkeys);
        self
    }

    /// This connection's session: bound into every proposal it makes, and
    /// the only session its executions claim approvals for.
    pub fn session(&self) -> &str {
        &self.session
    }

    /// The tools this server advertises.
    pub fn tools(&self) -> Vec<Tool> {
        self.tools.iter().map(|e| e.tool.clone()).collect()
    }

    /// Serve one MCP connection on this process's stdin and stdout until the
    /// client closes it or [`shutdown_signal`] resolves (SIGINT, SIGTERM;
    /// every frame screened strictly by [`crate::StrictTransport`] before
    /// the SDK parses it), then let every execution still running record
    /// its outcome. After the client closed, that wait is unbounded until a
    /// signal (cutting an effect off would leave it `uncertain`); after a
    /// signal, it is the one [`drain`] for [`SHUTDOWN_GRACE`] every
    /// long-running process uses. Nothing else may write to stdout
    /// meanwhile.
    pub async fn serve_stdio(self) -> Result<(), ServeError> {
        let executions = self.executions.clone();
        // One signal future for the whole life of the connection, so a
        // signal between two phases is not lost.
        let shutdown = shutdown_signal();
        tokio::pin!(shutdown);
        let serving = self.serve(crate::StrictTransport::new(
            tokio::io::stdin(),
            tokio::io::stdout(),
        ));
        let running = tokio::select! {
            running = serving => running.map_err(|e| ServeError::Initialize(e.to_string()))?,
            () = &mut shutdown => return Ok(()),
        };
        let stop = running.cancellation_token();
        let waiting = running.waiting();
        tokio::pin!(waiting);
        let stopped = |e: tokio::task::JoinError| ServeError::Stopped(e.to_string());
        let (served, signalled) = tokio::select! {
            quit = &mut waiting => (quit.map(|_| ()).map_err(stopped), false),
            () = &mut shutdown => {
                stop.cancel();
                ((&mut waiting).await.map(|_| ()).map_err(stopped), true)
            }
        };
        executions.close();
        if !executions.is_empty() {
            tracing::warn!(
                running = executions.len(),
                "the MCP connection ended; waiting for executions still running to finish"
            );
        }
        if !signalled {
            tokio::select! {
                () = executions.wait() => return served,
                () = &mut shutdown => {}
            }
        }
        drain_executions(&executions).await;
        served
    }

    /// What `tools/call` does: validate `arguments` against the tool's input
    /// schema, then run its operation on the service. An unknown tool is a
    /// protocol error; everything else, refusals included, is a tool result
    /// the model can read.
    pub async fn call(
        &self,
        tool: &str,
        arguments: JsonObject,
    ) -> Result<CallToolResult, ErrorData> {
        let session = self.session.clone();
        self.call_from(Asking::Never, &session, tool, arguments)
            .await
            .map(Response::into_result)
    }

    /// [`Self::call`] for a client that may be asked to open the console
    /// as `asking` says.
    async fn call_from(
        &self,
        asking: Asking<'_>,
        session: &str,
        tool: &str,
        arguments: JsonObject,
    ) -> Result<Response, ErrorData> {
        let Some(entry) = self.tools.iter().find(|e| e.tool.name == tool) else {
            if let (Some(gateway), Some(upstream_tool)) =
                (&self.gateway, split_agent_tool_name(tool))
            {
                let span = tracing::info_span!("gateway_call", otel.name = %tool, tool = %tool);
                let called = gateway
                    .call(
                        &self.service,
                        &self.console,
                        session,
                        upstream_tool,
                        arguments,
                    )
                    .instrument(span)
                    .await;
                match called {
                    Some(Called::Done(result)) => return Ok(Response::Result(result)),
                    Some(Called::Proposed(id, proposed)) => {
                        return Ok(self
                            .proposed_by_gateway(asking, session, id, proposed)
                            .await);
                    }
                    None => {}
                }
            }
            return Err(ErrorData::invalid_params(
                format!("unknown tool {tool}"),
                None,
            ));
        };
        // One span per call, named by the tool as the table names it (an
        // unknown name was refused above): what a trace shows of the call.
        let span =
            tracing::info_span!("tool_call", otel.name = %entry.tool.name, tool = %entry.tool.name);
        self.run_tool(asking, session, entry, arguments)
            .instrument(span)
            .await
    }

    /// The body of [`Self::call_from`] for a known tool `entry`.
    async fn run_tool(
        &self,
        asking: Asking<'_>,
        session: &str,
        entry: &ToolEntry,
        arguments: JsonObject,
    ) -> Result<Response, ErrorData> {
        tracing::info!(tool = %entry.tool.name, session = %session, "tool call");
        let registry_op = entry
            .registry_op
            .as_deref()
            .and_then(|name| self.registry.get(name));
        let args = Value::Object(arguments);
        let checked =
            self.service
                .schemas()
                .check(&self.registry, entry.data_op, registry_op, &args);
        let reply = match checked {
            Ok(()) => {
                let Value::Object(params) = args else {
                    return Err(ErrorData::internal_error("arguments are an object", None));
                };
                match Operation::from_params(entry.key, entry.registry_op.as_deref(), params) {
                    Ok(Operation::ExecuteHandoff { id }) => {
                        return Ok(self.execute_approved(asking, session, id).await);
                    }
                    Ok(operation) => reply(
                        entry.key,
                        self.service.call(operation, session).await,
                        &self.console,
                    ),
                    Err(answer) => reply(entry.key, answer, &self.console),
                }
            }
            Err(ParamsError::Invalid(lines)) => Reply::error(format!(
                "the arguments do not match the input schema of {} ({}); nothing was done",
                entry.tool.name,
                lines.join("; ")
            )),
            Err(fault @ ParamsError::Schema { .. }) => Reply::error(fault.to_string()),
        };
        Ok(Response::Result(reply.into_result()))
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
    async fn execute_approved(
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
    async fn looked_again(&self, session: &str, id: &ProposalId) -> CallToolResult {
        let key = OperationKey::ExecuteHandoff;
        let answer = self.execute_handoff(session, id).await;
        match self.waiting_for_a_person(session, id, &answer).await {
            Some(url) => reply(key, answer, &self.console)
                .pointing_at(&url, self.console.terminal_approves())
                .into_result(),
            None => reply(key, answer, &self.console).into_result(),
        }
    }

    /// A gated gateway call just proposed as `id`: a client that opens URLs
    /// is asked to open the console's page of it, and if a person approved
    /// it meanwhile it runs now and its result (the upstream's) is the
    /// call's; otherwise the call's result is `proposed` (it waits for a
    /// person; `execute_approved` runs it later). The client's answer
    /// decides nothing.
    async fn proposed_by_gateway(
        &self,
        asking: Asking<'_>,
        session: &str,
        id: ProposalId,
        proposed: CallToolResult,
    ) -> Response {
        let Some(url) = self.console.proposal_url(&id) else {
            return Response::Result(proposed);
        };
        match asking {
            Asking::Peer(peer) if console::opens_urls(peer) => {
                let executed = self
                    .execute_approved(asking, session, id)
                    .await
                    .into_result();
                Response::Result(if executed.is_error == Some(true) {
                    proposed
                } else {
                    executed
                })
            }
            Asking::InputRequired => Response::Ask {
                id,
                url,
                fallback: proposed,
            },
            _ => Response::Result(proposed),
        }
    }

    /// The retry of `tool` with `arguments`, carrying the `requestState`
    /// `sealed` of an earlier `input_required` result: nothing is proposed
    /// again. If the state opens for exactly this call, the proposal it
    /// names runs if a person approved it meanwhile; a gated gateway call
    /// still waiting for a person returns its proposal as it stands. A
    /// state that does not open is refused and nothing runs.
    async fn resumed(
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
    fn binding<'a>(
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
    fn input_required(
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

    async fn execute_handoff(&self, session: &str, id: &ProposalId) -> Answer {
        let operation = Operation::ExecuteHandoff { id: id.clone() };
        self.service.call(operation, session).await
    }

    /// The console's page of proposal `id`, if a console is configured and
    /// `answer` (to an execution) refused only because no person approved
    /// it yet, and the proposal is still pending (a person can approve it).
    async fn waiting_for_a_person(
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

/// After a signal: let executions still running (their tracker closed)
/// record their outcome, for up to [`SHUTDOWN_GRACE`].
pub(crate) async fn drain_executions(executions: &TaskTracker) {
    match drain(executions.wait(), SHUTDOWN_GRACE).await {
        Drained::Finished(()) => {}
        Drained::GraceOver => tracing::warn!(
            running = executions.len(),
            "exiting with executions still running; they will read as uncertain"
        ),
    }
}

impl McpHead {
    /// The same head for [`crate::http`]: every call's session comes from
    /// its request's credential.
    pub(crate) fn per_credential(mut self) -> Self {
        self.per_credential = true;
        self
    }

    /// The executions this head runs, for a server that drains them.
    pub(crate) fn executions(&self) -> TaskTracker {
        self.executions.clone()
    }

    /// The session a call acts in: this connection's, or over HTTP the one
    /// of the credential its request was authenticated with.
    fn session_of(&self, context: &RequestContext<RoleServer>) -> Result<String, ErrorData> {
        if !self.per_credential {
            return Ok(self.session.clone());
        }
        crate::http::credential_session(&context.extensions).ok_or_else(|| {
            tracing::error!("an HTTP tool call reached the server without a credential");
            ErrorData::internal_error("the request carries no authenticated credential", None)
        })
    }
}

impl ServerHandler for McpHead {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                "countersign",
                env!("CARGO_PKG_VERSION"),
            ))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        let mut tools = self.tools();
        if let Some(gateway) = &self.gateway {
            tools.extend(gateway.tools().await);
        }
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let session = self.session_of(&context)?;
        let arguments = request.arguments.unwrap_or_default();
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if !modern {
            return self
                .call_from(
                    Asking::Peer(&context.peer),
                    &session,
                    &request.name,
                    arguments,
                )
                .await
                .map(|response| response.into_result().into());
        }
        if let Some(sealed) = &request.request_state {
            let result = self
                .resumed(&session, &request.name, &arguments, sealed)
                .await;
            return Ok(result.into());
        }
        let opens_urls = context
            .client_capabilities()
            .and_then(|c| c.elicitation)
            .is_some_and(|e| e.url.is_some());
        let asking = if opens_urls {
            Asking::InputRequired
        } else {
            Asking::Never
        };
        let response = self
            .call_from(asking, &session, &request.name, arguments.clone())
            .await?;
        Ok(self.input_required(&session, &request.name, &arguments, response))
    }
}

//! The MCP server: `tools/list` from [`crate::tools`]; `tools/call` checks
//! the arguments against the tool's schema (compiled once, in the service),
//! turns them into the service's [`Operation`], calls it and renders its
//! [`countersign_service::Answer`] ([`crate::reply`]). No operation is
//! implemented here. A call that finds a proposal waiting for a person
//! names the console's page of it and asks a client that opens URLs to open
//! it (`waiting`: an elicitation request, or on protocol 2026-07-28 an
//! `input_required` result whose retry carries a sealed state).
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
use countersign_service::{Operation, ParamsError, Service};
use countersign_surface::DATA_OPERATIONS;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ProtocolVersion, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio_util::task::TaskTracker;
use tonic::transport::Channel;
use tracing::Instrument as _;

use crate::console::Console;
use crate::gateway::{Called, Gateway};
use crate::reply::{Reply, reply};
use crate::request_state::Sealer;
use crate::tools::{ToolEntry, tool_entries};

mod waiting;

use countersign_registry::gateway::split_agent_tool_name;
use waiting::{Asking, Progress, Response};

/// What the server tells every client when it connects.
const INSTRUCTIONS: &str = "countersign is a human-approval gate. Propose an exact action with a `propose_<operation>` tool; \
a person reviews the preview and approves it at their own terminal with `countersign approve ID --hand-off`. \
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

impl McpHead {
    /// A server for the gate's principal, proposing through the signer
    /// client `head` (authenticated with the head certificate) and executing
    /// through `gate`, with a fresh random session.
    pub fn new(head: SignerClient<Channel>, gate: Gate) -> Result<Self, ServeError> {
        let registry = gate.registry();
        let principal = gate.principal().to_owned();
        let tools = tool_entries(&registry);
        let service = Service::over_gate(head, gate).through(countersign_service::Through::Mcp);
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
        self.call_from(Asking::Never, None, &session, tool, arguments)
            .await
            .map(Response::into_result)
    }

    /// [`Self::call`] for a client that may be asked to open the console
    /// as `asking` says.
    async fn call_from(
        &self,
        asking: Asking<'_>,
        progress: Option<Progress>,
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
                            .proposed_by_gateway(asking, progress, session, id, proposed)
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

    /// This head for one more connection: the same service, registry and
    /// executions, with a fresh random session of its own.
    pub(crate) fn for_connection(&self) -> Result<Self, ServeError> {
        let mut head = self.clone();
        head.session = crate::session::new_session_id().map_err(ServeError::Setup)?;
        Ok(head)
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
        // A gated gateway call tells a client that asked for progress how
        // its wait for a person goes.
        let progress = context.meta.get_progress_token().map(|token| Progress {
            peer: context.peer.clone(),
            token,
        });
        let modern = context
            .protocol_version()
            .is_some_and(|v| v >= ProtocolVersion::V_2026_07_28);
        if !modern {
            return self
                .call_from(
                    Asking::Peer(&context.peer),
                    progress,
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
            .call_from(asking, progress, &session, &request.name, arguments.clone())
            .await?;
        Ok(self.input_required(&session, &request.name, &arguments, response))
    }
}

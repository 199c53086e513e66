//! The MCP server: `tools/list` from [`crate::tools`]; `tools/call` checks
//! the arguments against the tool's schema (compiled once, in the service),
//! turns them into the service's [`Operation`], calls it and renders its
//! [`countersign_service::Answer`] ([`crate::reply`]). No operation is
//! implemented here.
//!
//! Must not: accept, return or log a proof; approve, deny or create a rule;
//! treat a tool argument, an elicitation answer or any client claim as a
//! person's approval. The session is chosen here, at random, per connection,
//! never by the client.

use std::sync::Arc;

use countersign_gate::Gate;
use countersign_identity::shutdown::{Drained, SHUTDOWN_GRACE, drain, shutdown_signal};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_registry::Registry;
use countersign_service::{Operation, ParamsError, Service};
use countersign_surface::DATA_OPERATIONS;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio_util::task::TaskTracker;
use tonic::transport::Channel;

use crate::reply::{Reply, reply};
use crate::tools::{ToolEntry, tool_entries};

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
    tools: Arc<Vec<ToolEntry>>,
    /// The service's executions, each in a task of its own, so that a
    /// client going away (and the SDK dropping its request handlers) never
    /// cuts an effect off between its intent and its completion;
    /// [`Self::serve_stdio`] waits for them before it returns.
    executions: TaskTracker,
}

impl McpHead {
    /// A server for the gate's principal, proposing through the signer
    /// client `head` (authenticated with the head certificate) and executing
    /// through `gate`, with a fresh random session.
    pub fn new(head: SignerClient<Channel>, gate: Gate) -> Result<Self, ServeError> {
        let registry = gate.registry();
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
        })
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
        match drain(executions.wait(), SHUTDOWN_GRACE).await {
            Drained::Finished(()) => {}
            Drained::GraceOver => tracing::warn!(
                running = executions.len(),
                "exiting with executions still running; they will read as uncertain"
            ),
        }
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
        let Some(entry) = self.tools.iter().find(|e| e.tool.name == tool) else {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {tool}"),
                None,
            ));
        };
        tracing::info!(tool = %entry.tool.name, session = %self.session, "tool call");
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
                let answer =
                    match Operation::from_params(entry.key, entry.registry_op.as_deref(), params) {
                        Ok(operation) => self.service.call(operation, &self.session).await,
                        Err(answer) => answer,
                    };
                reply(entry.key, answer)
            }
            Err(ParamsError::Invalid(lines)) => Reply::error(format!(
                "the arguments do not match the input schema of {} ({}); nothing was done",
                entry.tool.name,
                lines.join("; ")
            )),
            Err(fault @ ParamsError::Schema { .. }) => Reply::error(fault.to_string()),
        };
        Ok(reply.into_result())
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
        Ok(ListToolsResult::with_all_items(self.tools()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.call(&request.name, request.arguments.unwrap_or_default())
            .await
            .map(Into::into)
    }
}

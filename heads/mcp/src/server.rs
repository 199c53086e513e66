//! The MCP server: `tools/list` from [`crate::tools`], `tools/call`
//! forwarded to the signer as a head (propose, read, withdraw) or to the
//! embedded gate (execute through the signer's handoff, read results).
//!
//! Must not: accept, return or log a proof; approve, deny or create a rule;
//! treat a tool argument, an elicitation answer or any client claim as a
//! person's approval. The session is chosen here, at random, per connection,
//! never by the client.

use std::collections::HashMap;
use std::sync::Arc;

use countersign_gate::{Gate, GateError, Outcome};
use countersign_identity::shutdown::{Drained, SHUTDOWN_GRACE, drain, shutdown_signal};
use countersign_proto::v1::signer_client::SignerClient;
use countersign_proto::v1::{
    GetProposalRequest, ListProposalsRequest, ProposeRequest, WithdrawRequest,
};
use countersign_surface::results;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, Implementation, JsonObject,
    ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use serde_json::Value;
use tokio_util::task::TaskTracker;
use tonic::transport::Channel;

use crate::reply::{Reply, proposal_reply, proposed_text, status_text};
use crate::tools::{Action, ToolEntry, tool_entries};

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
    head: SignerClient<Channel>,
    gate: Gate,
    principal: String,
    session: String,
    tools: Arc<Vec<ToolEntry>>,
    validators: Arc<HashMap<String, jsonschema::Validator>>,
    /// Executions run here, in tasks of their own, so that a client going
    /// away (and the SDK dropping its request handlers) never cuts an effect
    /// off between its intent and its completion; [`Self::serve_stdio`]
    /// waits for them before it returns.
    executions: TaskTracker,
}

impl McpHead {
    /// A server for `principal`, proposing through the signer client `head`
    /// (authenticated with the head certificate) and executing through
    /// `gate`, with a fresh random session.
    pub fn new(
        head: SignerClient<Channel>,
        gate: Gate,
        principal: String,
    ) -> Result<Self, ServeError> {
        let tools = tool_entries(&gate.registry());
        let mut validators = HashMap::new();
        for entry in &tools {
            let validator = jsonschema::options()
                .with_draft(jsonschema::Draft::Draft202012)
                .offline()
                .should_validate_formats(true)
                .build(&entry.params)
                .map_err(|e| {
                    ServeError::Setup(format!(
                        "the input schema of {} does not compile: {e}",
                        entry.tool.name
                    ))
                })?;
            validators.insert(entry.tool.name.to_string(), validator);
        }
        Ok(Self {
            head,
            gate,
            principal,
            session: crate::session::new_session_id().map_err(ServeError::Setup)?,
            tools: Arc::new(tools),
            validators: Arc::new(validators),
            executions: TaskTracker::new(),
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
    /// schema, then run it. An unknown tool is a protocol error; everything
    /// else, refusals included, is a tool result the model can read.
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
        let args = Value::Object(arguments);
        tracing::info!(tool = %entry.tool.name, session = %self.session, "tool call");
        let reply = match self.check(entry, &args) {
            Ok(()) => self.dispatch(&entry.action, args).await,
            Err(message) => Reply::error(message),
        };
        Ok(reply.into_result())
    }

    /// Validate `args` against the tool's input schema; the message names
    /// where, never the value.
    fn check(&self, entry: &ToolEntry, args: &Value) -> Result<(), String> {
        let Some(validator) = self.validators.get(entry.tool.name.as_ref()) else {
            return Err(format!("{} has no input schema", entry.tool.name));
        };
        let problems: Vec<String> = validator
            .iter_errors(args)
            .take(5)
            .map(|e| {
                let at = e.instance_path().to_string();
                format!("{}: {}", if at.is_empty() { "/" } else { &at }, e.masked())
            })
            .collect();
        if problems.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the arguments do not match the input schema of {} ({}); nothing was done",
                entry.tool.name,
                problems.join("; ")
            ))
        }
    }

    async fn dispatch(&self, action: &Action, args: Value) -> Reply {
        let mut head = self.head.clone();
        let id = || {
            args["proposal_id"]
                .as_str()
                .map(str::to_string)
                .unwrap_or_default()
        };
        match action {
            Action::ListOperations => {
                let registry = self.gate.registry();
                let ops: Vec<Value> = registry.operations().map(results::operation).collect();
                let names: Vec<&str> = registry.operations().map(|o| o.name.as_str()).collect();
                Reply::ok(
                    format!(
                        "{} operations can be proposed: {}",
                        names.len(),
                        names.join(", ")
                    ),
                    Value::Array(ops),
                )
            }
            Action::Propose(operation) => {
                let arguments_json = args["arguments"].to_string();
                let note = args["note"].as_str().unwrap_or_default().to_string();
                let request = ProposeRequest {
                    operation: operation.clone(),
                    arguments_json,
                    session: self.session.clone(),
                    note,
                };
                proposal_reply(head.propose(request).await, proposed_text)
            }
            Action::GetProposal => {
                let request = GetProposalRequest { proposal_id: id() };
                proposal_reply(head.get_proposal(request).await, status_text)
            }
            Action::ListProposals => {
                let request = ListProposalsRequest {
                    status: args["status"].as_str().unwrap_or_default().to_string(),
                    limit: args["limit"]
                        .as_u64()
                        .and_then(|n| u32::try_from(n).ok())
                        .unwrap_or(100),
                };
                match head.list_proposals(request).await {
                    Ok(list) => {
                        let list = list.into_inner().proposals;
                        let mut text = format!("{} proposal(s)", list.len());
                        for view in &list {
                            text.push_str(&format!("\n{}", status_text(view)));
                        }
                        Reply::ok(text, results::proposals(&list))
                    }
                    Err(status) => Reply::from_status(&status),
                }
            }
            Action::Withdraw => {
                let request = WithdrawRequest { proposal_id: id() };
                proposal_reply(head.withdraw(request).await, |view| {
                    format!("withdrew {}; it can no longer be approved", view.id)
                })
            }
            Action::ExecuteApproved => {
                let id = id();
                let (gate, session, task_id) =
                    (self.gate.clone(), self.session.clone(), id.clone());
                // Its own task: the SDK drops this handler when the client
                // goes away, which must not cut the effect off.
                let executed = self
                    .executions
                    .spawn(async move { gate.execute_handoff(&mut head, &task_id, &session).await })
                    .await;
                match executed {
                    Ok(Ok(outcome)) => self.outcome_reply(&id, &outcome),
                    Ok(Err(e)) => Reply::from_gate_error(&e),
                    Err(e) => {
                        tracing::error!(proposal_id = %id, "execution task: {e}");
                        Reply::from_gate_error(&GateError::Effect(
                            "the execution stopped unexpectedly".into(),
                        ))
                    }
                }
            }
            Action::GetResult => self.result(&id()).await,
        }
    }

    fn outcome_reply(&self, id: &str, outcome: &Outcome) -> Reply {
        let mut text = outcome.summary();
        if let Some(d) = outcome.disposition().filter(|d| !d.result.is_null()) {
            text.push_str(&format!("\nresult: {}", d.result));
        }
        let value = results::outcome(id, outcome);
        Reply {
            text,
            structured: Some(value),
            is_error: !outcome.applied_now(),
        }
    }

    async fn result(&self, id: &str) -> Reply {
        let ledger = self.gate.ledger();
        let owned = match ledger.proposal(id).await {
            Ok(p) => p.is_some_and(|p| p.proposal.principal == self.principal),
            Err(e) => return Reply::error(format!("the ledger failed: {e}")),
        };
        if !owned {
            return Reply::error(format!("refused: no proposal {id} for this principal"));
        }
        match ledger.disposition(id).await {
            Ok(Some(d)) => Reply::ok(
                format!("{id}: {}", d.status.as_str()),
                results::disposition(&d),
            ),
            Ok(None) => Reply::error(format!(
                "refused: {id} has not been executed (see get_proposal for its status)"
            )),
            Err(e) => Reply::error(format!("the ledger failed: {e}")),
        }
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

//! The gateway: the tools of the upstream MCP servers in `gateway.toml`,
//! listed to the agent as `<upstream>__<tool>` beside countersign's own.
//! A call of a tool the operator allows, whose definition is still the one
//! a person pinned, is forwarded to the upstream and its result returned
//! as is; a call of a gated tool becomes a proposal of the operation
//! `mcp:<upstream>/<tool>` with the exact arguments, which runs once, by
//! the gate, after a person's approval (`execute_approved`, or at once when
//! a client that opens URLs was shown the console and a person approved
//! meanwhile: `crate::server`). An allowed call is checked against the
//! upstream's listing at most one second old; the gate asks afresh before
//! a gated call runs.
//!
//! Before any upstream sees a call, it is refused here if the tool is
//! denied, unknown to the upstream, not pinned, or changed since it was
//! pinned: any field of its definition, title and annotations included
//! (a changed tool is listed with its pinned definition, so a poisoned
//! description, title or hint never reaches the model), and if its
//! arguments are not strict JSON within the limits or do not match the
//! pinned schema.
//!
//! Must not: forward a call of a tool the configuration denies or nobody
//! pinned, let an annotation an upstream declares loosen the operator's
//! policy, treat any argument as an approval, or log argument values.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use countersign_gateway::{CallFailure, ListedTool, Upstreams};
use countersign_registry::gateway::{
    PinnedTool, ToolPolicy, Upstream, agent_tool_name, operation_name,
};
use countersign_registry::{CurrentRegistry, Registry};
use countersign_service::{Answer, Done, Operation};
use countersign_surface::operations::OperationKey;
use countersign_verifier::ProposalId;
use countersign_verifier::canonical;
use rmcp::model::{CallToolResult, JsonObject, Tool, ToolAnnotations};
use serde_json::Value;

use crate::console::Console;
use crate::reply::{Reply, reply};

/// The gateway of one MCP head: the upstreams it reaches and the registry
/// (with the gateway's configuration and pins) as its files say now.
#[derive(Clone)]
pub struct Gateway {
    upstreams: Upstreams,
    registry: Arc<CurrentRegistry>,
    /// Each upstream's tools as last listed, and when: an allowed call is
    /// checked against a listing at most [`LISTING_TTL`] old (the gate asks
    /// the upstream afresh before a gated call runs).
    listed: Arc<Mutex<HashMap<String, Listing>>>,
}

/// An upstream's tools as listed, and when.
type Listing = (Instant, Arc<Vec<ListedTool>>);

/// How long an upstream's tool listing is used for the calls that follow
/// it, before the upstream is asked again.
const LISTING_TTL: Duration = Duration::from_secs(1);

/// Where a listed tool stands against its pin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Standing {
    /// Listed exactly as pinned.
    Pinned,
    /// Pinned, and listed now with another definition.
    Changed,
    /// Nobody pinned it.
    Unpinned,
}

/// How one upstream tool is handled now.
struct Resolved<'a> {
    policy: ToolPolicy,
    standing: Standing,
    pinned: Option<&'a PinnedTool>,
}

impl Gateway {
    /// A gateway over `upstreams`, reading its configuration and pins from
    /// `registry` at each use.
    pub fn new(upstreams: Upstreams, registry: Arc<CurrentRegistry>) -> Self {
        Self {
            upstreams,
            registry,
            listed: Arc::default(),
        }
    }

    /// How long a gated call waits for a person's decision in the agent's
    /// call, as `gateway.toml` says now (its default if it does not load:
    /// the call itself then refuses).
    pub(crate) fn decision_wait(&self) -> Duration {
        let secs = self
            .registry()
            .ok()
            .and_then(|r| r.gateway().map(|g| g.decision_wait_secs))
            .unwrap_or(countersign_registry::gateway::DEFAULT_DECISION_WAIT_SECS);
        Duration::from_secs(secs)
    }

    /// The tools `upstream` lists: asked now if `fresh` or the last listing
    /// is older than [`LISTING_TTL`], else that listing.
    async fn listing(
        &self,
        upstream: &str,
        fresh: bool,
    ) -> Result<Arc<Vec<ListedTool>>, countersign_gateway::UpstreamError> {
        if !fresh {
            let cached = self
                .listed
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(upstream)
                .cloned();
            if let Some((at, tools)) = cached
                && at.elapsed() < LISTING_TTL
            {
                return Ok(tools);
            }
        }
        let tools = Arc::new(self.upstreams.list_tools(upstream).await?);
        self.listed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(upstream.to_owned(), (Instant::now(), Arc::clone(&tools)));
        Ok(tools)
    }

    /// The upstreams (for the gate, and to shut them down).
    pub fn upstreams(&self) -> &Upstreams {
        &self.upstreams
    }

    /// The registry now; on a file that does not load, the last good one
    /// is not used (calls are refused) and listing shows no upstream tool.
    fn registry(&self) -> Result<Arc<Registry>, String> {
        self.registry.now().map_err(|e| e.to_string())
    }

    /// The upstream tools the agent sees now: every tool each reachable
    /// upstream lists and the configuration does not deny.
    pub(crate) async fn tools(&self) -> Vec<Tool> {
        let registry = match self.registry() {
            Ok(registry) => registry,
            Err(e) => {
                tracing::warn!("gateway tools not listed: {e}");
                return Vec::new();
            }
        };
        let Some(file) = registry.gateway() else {
            return Vec::new();
        };
        let mut tools = Vec::new();
        for upstream in &file.upstream {
            let listed = match self.listing(&upstream.name, true).await {
                Ok(listed) => listed,
                Err(e) => {
                    tracing::warn!(upstream = %upstream.name, "tools not listed: {e}");
                    continue;
                }
            };
            for tool in listed.iter() {
                if let Some(resolved) = resolve(&registry, upstream, tool) {
                    tools.push(agent_tool(upstream, tool, &resolved));
                }
            }
        }
        tools
    }

    /// A call of `tool` of `upstream` by the agent, in `session`: refused,
    /// forwarded, or proposed, as the module doc says. `None` if no
    /// configured upstream has that name (an unknown tool).
    pub(crate) async fn call(
        &self,
        service: &countersign_service::Service,
        console: &Console,
        session: &str,
        (upstream, tool): (&str, &str),
        arguments: JsonObject,
    ) -> Option<Called> {
        let registry = match self.registry() {
            Ok(registry) => registry,
            Err(e) => {
                return Some(refused_call(format!(
                    "the gateway's configuration does not load ({e})"
                )));
            }
        };
        let config = registry.gateway()?.upstream(upstream)?;
        let name = agent_tool_name(upstream, tool);
        if config.policy(tool) == ToolPolicy::Deny {
            return Some(refused_call(format!(
                "the operator's configuration denies {name}"
            )));
        }
        // Checked before any upstream is asked anything: strictly parsed
        // within the limits, and against the pinned schema if there is a pin.
        let arguments_text = Value::Object(arguments.clone()).to_string();
        let operation = operation_name(upstream, tool);
        let op = registry.get(&operation);
        let checked = match op {
            Some(op) => op.validate_arguments(arguments_text.as_bytes()).map(drop),
            None => canonical::parse(arguments_text.as_bytes(), canonical::MAX_ARGS_BYTES)
                .map(drop)
                .map_err(Into::into),
        };
        if let Err(e) = checked {
            return Some(refused_call(e.to_string()));
        }
        let listed = match self.listing(upstream, false).await {
            Ok(listed) => listed,
            Err(e) => {
                return Some(refused_call(format!(
                    "the MCP server {upstream} is unavailable ({e})"
                )));
            }
        };
        let Some(listed) = listed.iter().find(|t| t.definition.name == tool) else {
            return Some(refused_call(format!("{upstream} lists no tool {tool}")));
        };
        let resolved = resolve(&registry, config, listed)?;
        match resolved.standing {
            Standing::Unpinned => {
                return Some(refused_call(format!(
                    "{name} has not been reviewed: it can be called once a person accepts its definition (`countersign gateway tools --accept {upstream}/{tool}` proposes it)"
                )));
            }
            Standing::Changed => {
                return Some(refused_call(format!(
                    "the MCP server {upstream} lists {tool} with another definition (description, input schema, title, annotations, output schema or another field a client shows) than the one pinned and approved (tool_changed): a person must review the change (`countersign gateway tools`) before it is called again"
                )));
            }
            Standing::Pinned => {}
        }
        // Pinned and not denied: the registry has its operation.
        if op.is_none() {
            return Some(refused_call(format!("{operation} is not in the registry")));
        }
        if resolved.policy == ToolPolicy::Allow {
            let arguments_sha256 = canonical::sha256_hex(arguments_text.as_bytes());
            return Some(Called::Done(
                self.forward(config, tool, arguments, &arguments_sha256)
                    .await,
            ));
        }
        let proposed = service
            .clone()
            .through(countersign_service::Through::Gateway)
            .call(
                Operation::Propose {
                    operation,
                    arguments: arguments_text,
                    note: String::new(),
                },
                session,
            )
            .await;
        let id = match &proposed {
            Answer::Done(done) => match &**done {
                Done::Proposal(view) => countersign_service::proposal_id(&view.id).ok(),
                _ => None,
            },
            _ => None,
        };
        let result = reply(OperationKey::Propose, proposed, console).into_result();
        Some(match id {
            Some(id) => Called::Proposed(id, result),
            None => Called::Done(result),
        })
    }

    /// An allowed call, forwarded: the upstream's result as it answered.
    async fn forward(
        &self,
        upstream: &Upstream,
        tool: &str,
        arguments: JsonObject,
        arguments_sha256: &str,
    ) -> CallToolResult {
        tracing::info!(upstream = %upstream.name, tool, %arguments_sha256, "allowed call forwarded");
        match self
            .upstreams
            .call(&upstream.name, tool, arguments, upstream.timeout())
            .await
        {
            Ok(result) => serde_json::from_value(result).unwrap_or_else(|e| {
                Reply::error(format!(
                    "the MCP server {} answered a result that is not a tool result: {e}",
                    upstream.name
                ))
                .into_result()
            }),
            Err(failure) => {
                let why = match failure {
                    CallFailure::NotSent(why) => format!("it was not sent ({why})"),
                    CallFailure::Unanswered(why) => {
                        format!("it was sent and not answered, so it may have run ({why})")
                    }
                    CallFailure::Rejected(why) => format!("the server refused it ({why})"),
                };
                Reply::error(format!(
                    "the call of {tool} to {} failed: {why}",
                    upstream.name
                ))
                .into_result()
            }
        }
    }
}

/// How `tool` of `upstream` is handled now, or `None` if it is hidden
/// (denied, or a name that is not an MCP tool name).
fn resolve<'a>(
    registry: &'a Registry,
    upstream: &Upstream,
    tool: &ListedTool,
) -> Option<Resolved<'a>> {
    let name = &tool.definition.name;
    if !countersign_registry::gateway::is_tool_name(name) {
        return None;
    }
    let policy = upstream.policy(name);
    if policy == ToolPolicy::Deny {
        return None;
    }
    let pinned = registry.pins().get(&upstream.name, name);
    let standing = match pinned {
        None => Standing::Unpinned,
        Some(pin) if tool.definition.sha256_hex().as_deref() == Some(pin.sha256.as_str()) => {
            Standing::Pinned
        }
        Some(_) => Standing::Changed,
    };
    Some(Resolved {
        policy,
        standing,
        pinned,
    })
}

/// The tool as the agent sees it: where there is a pin, the pinned
/// description, schema, title and annotations (so a changed description,
/// title or `readOnlyHint` never reaches the model), and a note saying
/// what a call does. A tool nobody pinned shows its name and the note
/// only: no description, schema (whose property descriptions the model
/// reads too), title or hint nobody reviewed. The output schema, icons
/// and metadata are pinned but not passed on: a gated call answers with a
/// proposal, not the tool's structured output.
fn agent_tool(upstream: &Upstream, tool: &ListedTool, resolved: &Resolved<'_>) -> Tool {
    let name = agent_tool_name(&upstream.name, &tool.definition.name);
    let (description, schema, shown) = match resolved.pinned {
        Some(pin)
            if resolved.standing == Standing::Pinned || resolved.standing == Standing::Changed =>
        {
            (
                pin.description.clone().unwrap_or_default(),
                pin.input_schema.clone(),
                Some(&pin.shown),
            )
        }
        _ => (
            String::new(),
            JsonObject::from_iter([("type".into(), "object".into())]),
            None,
        ),
    };
    let note = match (resolved.standing, resolved.policy) {
        (Standing::Pinned, ToolPolicy::Allow) => "countersign: forwarded without approval.".to_owned(),
        (Standing::Pinned, _) => "countersign: each exact call needs a person's approval; a call returns a proposal id, and once a person approved it, `execute_approved` runs it once and returns the tool's result.".to_owned(),
        (Standing::Changed, _) => "countersign: this tool changed since it was reviewed; calls are refused until a person reviews the change.".to_owned(),
        (Standing::Unpinned, _) => "countersign: this tool has not been reviewed; calls are refused until a person accepts its definition.".to_owned(),
    };
    let description = if description.is_empty() {
        format!("[{}] {note}", upstream.name)
    } else {
        format!("{description}\n\n[{}] {note}", upstream.name)
    };
    let mut agent = Tool::new(name, description, Arc::new(schema));
    if let Some(shown) = shown {
        agent.title = shown
            .get("title")
            .and_then(Value::as_str)
            .map(str::to_owned);
        agent.annotations = shown
            .get("annotations")
            .and_then(|a| serde_json::from_value::<ToolAnnotations>(a.clone()).ok());
    }
    agent
}

/// What a gateway call came to.
pub(crate) enum Called {
    /// Refused, forwarded, or a proposal that failed: the result.
    Done(CallToolResult),
    /// Proposed as this proposal: the result says it waits for a person.
    Proposed(ProposalId, CallToolResult),
}

/// A call refused before any upstream saw it, as a [`Called`].
fn refused_call(reason: String) -> Called {
    Called::Done(refused(reason))
}

/// A call refused before any upstream saw it.
fn refused(reason: String) -> CallToolResult {
    Reply::error(format!(
        "refused: {reason}; nothing was sent to the MCP server"
    ))
    .into_result()
}

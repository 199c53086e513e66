//! The MCP gateway's upstream side: the MCP servers `gateway.toml` names,
//! started as child processes (stdio) or reached over streamable HTTP,
//! their tools listed and called.
//!
//! This crate owns each upstream's connection and its lifetime: a stdio
//! upstream's child runs with a cleared environment (only the configured
//! names and secret files), in its own process group, and is restarted with
//! backoff when it exits; an HTTP upstream is reached with rustls on ring
//! and its configured trust roots only. It answers the gate's
//! [`McpUpstreams`](countersign_gate::mcp::McpUpstreams) and the MCP head's
//! listing. It must not decide anything about a call (policy, pins and
//! approval are the head's and the gate's), must not log arguments, results
//! or secrets, and must not reach anything `gateway.toml` does not name.
#![forbid(unsafe_code)]

mod failure;
mod gate;
mod http;
mod secret;
mod stdio;
mod supervise;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use countersign_registry::gateway::{GatewayFile, ToolDefinition, Transport};
use rmcp::model::{CallToolRequest, CallToolRequestParams, ClientRequest, ServerResult, Tool};
use rmcp::service::{Peer, PeerRequestOptions, RoleClient};
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

pub use countersign_gate::mcp::CallFailure;

use crate::failure::Kind;
use crate::stdio::Group;
use crate::supervise::{Link, Supervisor};

/// The longest a tools/list waits for its answer (or the upstream's own
/// timeout, if shorter): listing is a control request, not a tool's work.
const MAX_LIST_WAIT: Duration = Duration::from_secs(10);

/// How long past its own timeout a call waits for rmcp to report it, so
/// that a timeout is always reported as one.
const CALL_GRACE: Duration = Duration::from_secs(1);

/// The gateway's upstreams, started by [`Upstreams::start`]. Cloning shares
/// them; when the last clone is dropped every child's process group is
/// killed.
#[derive(Clone)]
pub struct Upstreams {
    inner: Arc<Inner>,
}

struct Inner {
    upstreams: BTreeMap<String, Running>,
}

/// One upstream as its supervisor runs it.
struct Running {
    kind: Kind,
    /// The upstream's configured call timeout: bounds a tools/list.
    timeout: Duration,
    link: watch::Receiver<Link>,
    stop: CancellationToken,
    group: Arc<Group>,
    task: Mutex<Option<JoinHandle<()>>>,
}

/// A tool as an upstream lists it.
#[derive(Debug, Clone, PartialEq)]
pub struct ListedTool {
    /// Everything the upstream lists of it (name, description, input
    /// schema, and what else a client shows): what is pinned and hashed.
    pub definition: ToolDefinition,
    /// Its display title (the tool's `title`, else its annotations' one).
    pub title: Option<String>,
    /// `annotations.readOnlyHint` as the upstream declared it.
    pub read_only_hint: Option<bool>,
    /// `annotations.destructiveHint` as the upstream declared it.
    pub destructive_hint: Option<bool>,
}

/// Why an upstream's tools cannot be listed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UpstreamError {
    /// `gateway.toml` names no such upstream.
    #[error("no upstream is named {0:?}")]
    UnknownUpstream(String),
    /// The upstream is not connected (did not start, exited, unreachable)
    /// or did not answer in time.
    #[error("upstream {upstream:?} is unavailable: {reason}")]
    Unavailable {
        /// The upstream's name.
        upstream: String,
        /// Why.
        reason: String,
    },
    /// The upstream answered with an error or something that is not a
    /// tool list.
    #[error("upstream {upstream:?} answered wrongly: {reason}")]
    Protocol {
        /// The upstream's name.
        upstream: String,
        /// What it answered.
        reason: String,
    },
}

impl Upstreams {
    /// Starts every stdio upstream of `file` now (one child process each,
    /// restarted with backoff when it exits) and prepares every HTTP one
    /// (connection reuse). Never fails: an upstream that cannot start is
    /// reported by [`Upstreams::list_tools`] and [`Upstreams::call`] as
    /// unavailable, and logged. Must be called within a Tokio runtime.
    pub fn start(file: &GatewayFile) -> Upstreams {
        let mut upstreams = BTreeMap::new();
        for upstream in &file.upstream {
            let (link, watching) = watch::channel(Link::Starting);
            let stop = CancellationToken::new();
            let group = Arc::new(Group::default());
            // Without a transport nothing is ever sent; `Http` claims the
            // least of a failed send.
            let kind = match upstream.transport {
                Some(Transport::Stdio(_)) => Kind::Stdio,
                Some(Transport::Http(_)) | None => Kind::Http,
            };
            let supervisor = Supervisor {
                upstream: upstream.clone(),
                link,
                stop: stop.clone(),
                group: group.clone(),
            };
            let task = tokio::spawn(supervisor.run());
            upstreams.insert(
                upstream.name.clone(),
                Running {
                    kind,
                    timeout: upstream.timeout(),
                    link: watching,
                    stop,
                    group,
                    task: Mutex::new(Some(task)),
                },
            );
        }
        Upstreams {
            inner: Arc::new(Inner { upstreams }),
        }
    }

    fn running(&self, upstream: &str) -> Result<&Running, UpstreamError> {
        self.inner
            .upstreams
            .get(upstream)
            .ok_or_else(|| UpstreamError::UnknownUpstream(upstream.to_owned()))
    }

    /// The tools `upstream` lists now (all pages of tools/list), each with
    /// its definition and its annotations as the upstream declared them.
    pub async fn list_tools(&self, upstream: &str) -> Result<Vec<ListedTool>, UpstreamError> {
        Ok(self
            .tools(upstream)
            .await?
            .into_iter()
            .map(listed)
            .collect())
    }

    /// The tool named `tool` as `upstream` lists it now (all pages of
    /// tools/list), `None` if it lists no such tool: what
    /// [`Upstreams::list_tools`] would give of it, without making the
    /// definitions of the others.
    pub async fn list_tool(
        &self,
        upstream: &str,
        tool: &str,
    ) -> Result<Option<ListedTool>, UpstreamError> {
        let tools = self.tools(upstream).await?;
        Ok(tools.into_iter().find(|t| t.name == tool).map(listed))
    }

    /// The tools `upstream` lists now, as rmcp reads them.
    async fn tools(&self, upstream: &str) -> Result<Vec<Tool>, UpstreamError> {
        let running = self.running(upstream)?;
        let unavailable = |reason: String| UpstreamError::Unavailable {
            upstream: upstream.to_owned(),
            reason,
        };
        let deadline = Instant::now() + running.timeout.min(MAX_LIST_WAIT);
        let (peer, session) = running.peer(deadline).await.map_err(unavailable)?;
        let answer = tokio::time::timeout_at(deadline, peer.list_all_tools()).await;
        let tools = match answer {
            Ok(Ok(tools)) => tools,
            failed => {
                // A session that cannot list its tools (a server that
                // restarted and forgot it, a connection that hangs) is
                // ended: the supervisor connects again.
                tracing::warn!(upstream, "tools/list failed; reconnecting");
                session.cancel();
                return Err(match failed {
                    Ok(Err(e)) => failure::list_error(upstream, e),
                    _ => unavailable("tools/list was not answered in time".into()),
                });
            }
        };
        Ok(tools)
    }

    /// Calls `tool` of `upstream` with `arguments` within `timeout`: the
    /// tool's result (`CallToolResult` as JSON; one with `isError: true`
    /// too), or why there is none and whether it can have run.
    pub async fn call(
        &self,
        upstream: &str,
        tool: &str,
        arguments: serde_json::Map<String, serde_json::Value>,
        timeout: Duration,
    ) -> Result<serde_json::Value, CallFailure> {
        let running = self
            .running(upstream)
            .map_err(|e| CallFailure::NotSent(e.to_string()))?;
        let deadline = Instant::now() + timeout;
        let (peer, _) = running.peer(deadline).await.map_err(|reason| {
            CallFailure::NotSent(format!("upstream {upstream:?} is unavailable: {reason}"))
        })?;
        let remaining = deadline.saturating_duration_since(Instant::now());
        if remaining.is_zero() {
            return Err(CallFailure::NotSent(format!(
                "upstream {upstream:?}: the timeout expired before the call was sent"
            )));
        }
        let params = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
        let request = ClientRequest::CallToolRequest(CallToolRequest::new(params));
        // Until the request is queued on the session nothing can have left.
        let pending = peer
            .send_request_with_option(request, PeerRequestOptions::with_timeout(remaining))
            .await
            .map_err(|e| CallFailure::NotSent(format!("upstream {upstream:?}: {e}")))?;
        let answer = tokio::time::timeout(remaining + CALL_GRACE, pending.await_response())
            .await
            .map_err(|_| {
                CallFailure::Unanswered(format!(
                    "upstream {upstream:?} did not answer within {timeout:?}"
                ))
            })?;
        match answer {
            Ok(ServerResult::CallToolResult(result)) => serde_json::to_value(result).map_err(|e| {
                CallFailure::Unanswered(format!("upstream {upstream:?}: the result: {e}"))
            }),
            Ok(_) => Err(CallFailure::Unanswered(format!(
                "upstream {upstream:?} answered the call with something else than a tool result"
            ))),
            Err(error) => Err(failure::call_failure(upstream, running.kind, error)),
        }
    }

    /// Stops every upstream: closes each MCP session, stops each child (its
    /// whole process group, SIGTERM then SIGKILL) and closes connections;
    /// returns when all have stopped.
    pub async fn shutdown(&self) {
        let mut tasks = Vec::new();
        for running in self.inner.upstreams.values() {
            running.stop.cancel();
            let task = running
                .task
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            tasks.extend(task);
        }
        for task in tasks {
            let _ = task.await;
        }
    }
}

impl std::fmt::Debug for Upstreams {
    /// The upstreams' names only: nothing of a connection or a secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Upstreams")
            .field("names", &self.inner.upstreams.keys().collect::<Vec<_>>())
            .finish()
    }
}

impl Running {
    /// The upstream's session, waiting until `deadline` while it starts.
    async fn peer(
        &self,
        deadline: Instant,
    ) -> Result<(Peer<RoleClient>, CancellationToken), String> {
        let mut link = self.link.clone();
        let settled =
            tokio::time::timeout_at(deadline, link.wait_for(|l| !matches!(l, Link::Starting)))
                .await;
        let link = match settled {
            Err(_) => return Err("it is still starting".into()),
            Ok(Err(_)) => return Err("it is stopped".into()),
            Ok(Ok(link)) => link.clone(),
        };
        match link {
            Link::Ready(peer, session) if !peer.is_transport_closed() => Ok((peer, session)),
            Link::Ready(..) => Err("its session just closed".into()),
            Link::Down(reason) => Err(reason),
            Link::Stopped => Err("it is stopped".into()),
            Link::Starting => Err("it is still starting".into()),
        }
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        for running in self.upstreams.values() {
            running.stop.cancel();
            running.group.signal(rustix::process::Signal::KILL);
        }
    }
}

fn listed(tool: Tool) -> ListedTool {
    let shown = shown_of(&tool);
    let annotations = tool.annotations.as_ref();
    ListedTool {
        title: tool
            .title
            .clone()
            .or_else(|| annotations.and_then(|a| a.title.clone())),
        read_only_hint: annotations.and_then(|a| a.read_only_hint),
        destructive_hint: annotations.and_then(|a| a.destructive_hint),
        definition: ToolDefinition {
            name: tool.name.into_owned(),
            description: tool.description.map(|d| d.into_owned()),
            input_schema: Arc::unwrap_or_clone(tool.input_schema),
            shown,
        },
    }
}

/// Every field of `tool` but its name, description and input schema, as
/// MCP names them (`title`, `annotations`, `outputSchema`, `icons`,
/// `_meta`): what a client may show of it, pinned with the rest. Taken
/// from the whole serialized tool, so a field rmcp adds later is pinned
/// too, not forgotten.
fn shown_of(tool: &Tool) -> serde_json::Map<String, serde_json::Value> {
    let mut shown = match serde_json::to_value(tool) {
        Ok(serde_json::Value::Object(fields)) => fields,
        // A tool always serializes as an object; were it not, pinning
        // nothing more would let a change through, so keep a marker that
        // no upstream's real fields can match.
        _ => serde_json::Map::from_iter([("unreadable".to_owned(), serde_json::Value::Null)]),
    };
    for pinned_apart in ["name", "description", "inputSchema"] {
        shown.remove(pinned_apart);
    }
    shown
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use rmcp::model::{Tool, ToolAnnotations};
    use serde_json::json;

    use super::listed;

    fn tool(title: &str, read_only: bool) -> Tool {
        let schema = json!({"type": "object"})
            .as_object()
            .cloned()
            .unwrap_or_default();
        let mut annotations = ToolAnnotations::new();
        annotations.read_only_hint = Some(read_only);
        let mut tool = Tool::new("delete_file", "Delete a file", Arc::new(schema))
            .with_annotations(annotations);
        tool.title = Some(title.to_owned());
        tool
    }

    #[test]
    fn the_title_and_annotations_are_part_of_the_pinned_definition() {
        let listed_tool = listed(tool("Delete a file", false));
        let shown = &listed_tool.definition.shown;
        assert_eq!(shown.get("title"), Some(&json!("Delete a file")));
        assert_eq!(
            shown.get("annotations"),
            Some(&json!({"readOnlyHint": false}))
        );
        for pinned_apart in ["name", "description", "inputSchema"] {
            assert!(!shown.contains_key(pinned_apart), "{pinned_apart}");
        }
        let digest = listed_tool.definition.sha256_hex();
        assert_ne!(
            listed(tool("SYSTEM: harmless", false))
                .definition
                .sha256_hex(),
            digest
        );
        assert_ne!(
            listed(tool("Delete a file", true)).definition.sha256_hex(),
            digest
        );
    }
}

//! The `mcp` effect: one call of a pinned tool of an upstream MCP server,
//! through the gateway's connections ([`McpUpstreams`]), with the intent's
//! canonical arguments, between the intent and the completion
//! transactions. Only a head given the gateway's upstreams runs it; any
//! other head refuses it (`unsupported_effect`) before consuming anything.
//!
//! Before anything is consumed the upstream is asked for the tool's
//! definition now: an upstream that cannot be reached is refused
//! (`upstream_unavailable`) and one that lists another definition than
//! the pinned one the person approved is refused (`tool_changed`); neither
//! spends the proof. The tool's result is stored as the effect's result
//! (bounded) and a tool that reports an error (`isError`) failed. A call
//! that was sent and never answered leaves the intent uncertain; reconcile
//! calls it again only if the operator marked the tool replay-safe.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use countersign_ledger::{EffectOutcome, Intent};
use countersign_registry::effect::{McpTool, intent_lease_for};
use serde_json::{Value, json};

use super::{Apply, Approved, Ran, Replay, Running};
use crate::execute::Gate;
use crate::outcome::{Outcome, Refused};
use crate::reconcile::Replayed;

/// The largest tool result stored (and returned) whole, in bytes of its
/// JSON; a larger one is stored cut, with its size and digest.
pub const MAX_RESULT_BYTES: usize = 64 * 1024;

/// A boxed future borrowing the upstreams.
pub type UpstreamFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// The gateway's connections to its upstream MCP servers, as the gate uses
/// them. Implemented by the gateway; a head without one never runs an
/// `mcp` effect.
pub trait McpUpstreams: Send + Sync {
    /// The SHA-256 digest of `tool`'s definition as `upstream` lists it
    /// now (`countersign_registry::gateway::ToolDefinition::sha256_hex`),
    /// `Ok(None)` if it lists no such tool, or why it cannot be asked.
    fn tool_sha256<'a>(
        &'a self,
        upstream: &'a str,
        tool: &'a str,
    ) -> UpstreamFuture<'a, Result<Option<String>, String>>;

    /// Calls `tool` of `upstream` with `arguments` (a canonical JSON
    /// object), waiting at most `timeout`: the tool's result
    /// (`CallToolResult` as JSON), or why there is none.
    fn call<'a>(
        &'a self,
        upstream: &'a str,
        tool: &'a str,
        arguments: &'a str,
        timeout: Duration,
    ) -> UpstreamFuture<'a, Result<Value, CallFailure>>;
}

/// Why a tool call has no result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CallFailure {
    /// The call was never sent (no connection, a refused request): nothing
    /// happened upstream.
    NotSent(String),
    /// The call was sent and no answer came (timeout, the connection or
    /// the server lost): it may have happened.
    Unanswered(String),
    /// The upstream answered with a JSON-RPC error: the tool did not run.
    Rejected(String),
}

/// The `mcp` effect of one operation, with the upstreams that run it.
pub(super) struct McpCall {
    pub(super) tool: McpTool,
    pub(super) upstreams: Arc<dyn McpUpstreams>,
}

impl McpCall {
    /// The refusal, if the upstream cannot run the approved tool now.
    async fn unusable(&self) -> Option<Refused> {
        let McpTool { upstream, tool, .. } = &self.tool;
        match self.upstreams.tool_sha256(upstream, tool).await {
            Err(reason) => Some(Refused::UpstreamUnavailable {
                upstream: upstream.clone(),
                reason,
            }),
            Ok(None) => Some(Refused::ToolChanged {
                upstream: upstream.clone(),
                tool: tool.clone(),
                change: "it no longer lists the tool",
            }),
            Ok(Some(now)) if now != self.tool.tool_sha256 => Some(Refused::ToolChanged {
                upstream: upstream.clone(),
                tool: tool.clone(),
                change: "its description or input schema changed",
            }),
            Ok(Some(_)) => None,
        }
    }

    /// Call the tool with the intent's arguments, as recorded from the
    /// verified claims.
    async fn run(&self, intent: &Intent) -> Ran {
        let McpTool {
            upstream,
            tool,
            timeout_secs,
            ..
        } = &self.tool;
        let timeout = Duration::from_secs(*timeout_secs);
        match self
            .upstreams
            .call(upstream, tool, intent.arguments_json(), timeout)
            .await
        {
            Ok(result) => {
                let failed = result.get("isError") == Some(&Value::Bool(true));
                let result = bounded(result);
                Ran::Completed(if failed {
                    EffectOutcome::Failed {
                        error: format!("the tool {tool} of {upstream} reported an error"),
                        result,
                    }
                } else {
                    EffectOutcome::Applied { result }
                })
            }
            Err(CallFailure::NotSent(reason)) => Ran::Completed(EffectOutcome::Failed {
                error: format!("the call never reached {upstream}: {reason}"),
                result: Value::Null,
            }),
            Err(CallFailure::Rejected(reason)) => Ran::Completed(EffectOutcome::Failed {
                error: format!("{upstream} refused the call: {reason}"),
                result: Value::Null,
            }),
            Err(CallFailure::Unanswered(reason)) => Ran::MaybeApplied(format!(
                "the call of {tool} was sent to {upstream} and not answered: {reason}"
            )),
        }
    }
}

/// `result` if its JSON is at most [`MAX_RESULT_BYTES`], else what of it
/// can be kept: its text cut at the bound, its size and digest.
fn bounded(result: Value) -> Value {
    let text = result.to_string();
    if text.len() <= MAX_RESULT_BYTES {
        return result;
    }
    let mut end = MAX_RESULT_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    json!({
        "content": [{"type": "text", "text": text.get(..end).unwrap_or_default()}],
        "isError": result.get("isError").cloned().unwrap_or(Value::Bool(false)),
        "truncated": {
            "bytes": text.len(),
            "sha256": countersign_verifier::canonical::sha256_hex(text.as_bytes()),
        },
    })
}

impl Apply for McpCall {
    fn execute<'a>(&'a self, gate: &'a Gate, approved: Approved<'a>) -> Running<'a, Outcome> {
        Box::pin(async move {
            if let Some(refused) = self.unusable().await {
                tracing::info!(
                    proposal_id = approved.proposal_id,
                    code = refused.reason().code(),
                    "upstream tool not callable; nothing consumed"
                );
                return Ok(Outcome::Refused(refused));
            }
            let lease = intent_lease_for(Duration::from_secs(self.tool.timeout_secs));
            gate.two_phase(approved, lease, async |intent: &Intent| {
                Ok(self.run(intent).await)
            })
            .await
        })
    }

    fn replay<'a>(&'a self, replay: Replay<'a>) -> Running<'a, Replayed> {
        Box::pin(async move {
            if let Some(refused) = self.unusable().await {
                return Ok(Replayed::new(
                    "still_uncertain",
                    format!("not called again: {refused}"),
                ));
            }
            match self.run(replay.intent).await {
                Ran::Completed(outcome) => replay.completed(outcome).await,
                Ran::MaybeApplied(reason) => Ok(Replayed::new(
                    "still_uncertain",
                    format!("called again and still not answered: {reason}"),
                )),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_result_over_the_bound_is_stored_cut_with_its_size_and_digest() {
        let small = json!({"content": [{"type": "text", "text": "ok"}]});
        assert_eq!(bounded(small.clone()), small);
        let big = json!({"content": [{"type": "text", "text": "é".repeat(MAX_RESULT_BYTES)}], "isError": false});
        let cut = bounded(big.clone());
        let kept = cut["content"][0]["text"].as_str().unwrap_or_default();
        assert!(kept.len() <= MAX_RESULT_BYTES && !kept.is_empty());
        assert_eq!(cut["truncated"]["bytes"], big.to_string().len());
        assert_eq!(cut["isError"], false);
    }
}

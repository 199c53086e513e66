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

/// The upstream's definition of a tool, asked for as soon as an execution
/// knows its operation (before the handoff is claimed and the proof
/// verified), so that the listing overlaps that work instead of following
/// it. Still asked for each execution, never cached across executions;
/// dropped unused, the request is abandoned.
pub(crate) struct ToolCheck {
    /// The effect it was asked for: used only by an execution of the same.
    tool: McpTool,
    listing: tokio::task::JoinHandle<Result<Option<String>, String>>,
}

impl ToolCheck {
    /// Ask `upstreams` now for the definition of `tool`'s tool.
    pub(crate) fn start(tool: &McpTool, upstreams: Arc<dyn McpUpstreams>) -> ToolCheck {
        let (upstream, name) = (tool.upstream.clone(), tool.tool.clone());
        let listing = tokio::spawn(async move { upstreams.tool_sha256(&upstream, &name).await });
        ToolCheck {
            tool: tool.clone(),
            listing,
        }
    }
}

impl Drop for ToolCheck {
    fn drop(&mut self) {
        self.listing.abort();
    }
}

impl McpCall {
    /// The refusal, if the upstream cannot run the approved tool now: from
    /// `early`, the listing this execution began when it learned its
    /// operation, if it was for this very effect; else from a listing
    /// asked for now.
    async fn unusable(&self, early: Option<ToolCheck>) -> Option<Refused> {
        let McpTool { upstream, tool, .. } = &self.tool;
        let listed = match early {
            Some(mut early) if early.tool == self.tool => (&mut early.listing)
                .await
                .unwrap_or_else(|e| Err(format!("the tool listing stopped: {e}"))),
            _ => self.upstreams.tool_sha256(upstream, tool).await,
        };
        match listed {
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
    fn execute<'a>(&'a self, gate: &'a Gate, mut approved: Approved<'a>) -> Running<'a, Outcome> {
        Box::pin(async move {
            if let Some(refused) = self.unusable(approved.take_tool_check()).await {
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
            if let Some(refused) = self.unusable(None).await {
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
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    /// Upstreams listing `write_file` at `pinned` and every other tool at
    /// another digest, counting the listings.
    struct Listing {
        listings: AtomicUsize,
    }

    const PINNED: &str = "aa";

    impl McpUpstreams for Listing {
        fn tool_sha256<'a>(
            &'a self,
            _upstream: &'a str,
            tool: &'a str,
        ) -> UpstreamFuture<'a, Result<Option<String>, String>> {
            self.listings.fetch_add(1, Ordering::SeqCst);
            let sha = if tool == "write_file" { PINNED } else { "bb" };
            Box::pin(async move { Ok(Some(sha.to_owned())) })
        }

        fn call<'a>(
            &'a self,
            _upstream: &'a str,
            _tool: &'a str,
            _arguments: &'a str,
            _timeout: Duration,
        ) -> UpstreamFuture<'a, Result<Value, CallFailure>> {
            Box::pin(async { Err(CallFailure::NotSent("not in this test".into())) })
        }
    }

    fn effect(tool: &str, sha: &str) -> McpTool {
        McpTool {
            upstream: "files".into(),
            tool: tool.into(),
            tool_sha256: sha.into(),
            timeout_secs: 5,
        }
    }

    #[test]
    fn an_early_listing_serves_only_an_execution_of_the_same_effect() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap_or_else(|e| panic!("{e}"));
        runtime.block_on(async {
            let upstreams = Arc::new(Listing {
                listings: AtomicUsize::new(0),
            });
            let call = McpCall {
                tool: effect("write_file", PINNED),
                upstreams: upstreams.clone(),
            };
            // The same effect: its early listing is the check, no other.
            let early = ToolCheck::start(&call.tool, upstreams.clone());
            assert_eq!(call.unusable(Some(early)).await, None);
            assert_eq!(upstreams.listings.load(Ordering::SeqCst), 1);
            // An early listing of another effect is never used: this
            // one's own tool is listed afresh (and is unchanged).
            let other = ToolCheck::start(&effect("other", "bb"), upstreams.clone());
            assert_eq!(call.unusable(Some(other)).await, None);
            // A tool listed at another digest than pinned is refused.
            let changed = McpCall {
                tool: effect("write_file", "cc"),
                upstreams: upstreams.clone(),
            };
            let early = ToolCheck::start(&changed.tool, upstreams.clone());
            assert_eq!(
                changed.unusable(Some(early)).await,
                Some(Refused::ToolChanged {
                    upstream: "files".into(),
                    tool: "write_file".into(),
                    change: "its description or input schema changed",
                })
            );
        });
    }

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

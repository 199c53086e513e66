//! The gate's view of the upstreams ([`McpUpstreams`]): the digest of a
//! tool's definition as listed now, and a call with canonical JSON
//! arguments.
//!
//! This module only adapts: it must not cache a definition (the gate asks
//! so that a changed tool is caught before a proof is spent) and must not
//! change the arguments it is given.

use std::time::Duration;

use countersign_gate::mcp::{CallFailure, McpUpstreams, UpstreamFuture};
use serde_json::Value;

use crate::Upstreams;

impl McpUpstreams for Upstreams {
    fn tool_sha256<'a>(
        &'a self,
        upstream: &'a str,
        tool: &'a str,
    ) -> UpstreamFuture<'a, Result<Option<String>, String>> {
        Box::pin(async move {
            let listed = self
                .list_tool(upstream, tool)
                .await
                .map_err(|e| e.to_string())?;
            let Some(listed) = listed else {
                return Ok(None);
            };
            listed.definition.sha256_hex().map(Some).ok_or_else(|| {
                format!("the definition of {upstream}/{tool} cannot be written as canonical JSON")
            })
        })
    }

    fn call<'a>(
        &'a self,
        upstream: &'a str,
        tool: &'a str,
        arguments: &'a str,
        timeout: Duration,
    ) -> UpstreamFuture<'a, Result<Value, CallFailure>> {
        Box::pin(async move {
            let arguments = match serde_json::from_str::<Value>(arguments) {
                Ok(Value::Object(arguments)) => arguments,
                _ => {
                    return Err(CallFailure::NotSent(
                        "the arguments are not a JSON object".into(),
                    ));
                }
            };
            Upstreams::call(self, upstream, tool, arguments, timeout).await
        })
    }
}

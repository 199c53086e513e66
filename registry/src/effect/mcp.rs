//! The `mcp` effect kind: one call of a tool of an upstream MCP server,
//! with the canonical arguments, by the gateway between an intent and a
//! completion. Its operations are never written in the registry file: they
//! are made from the gateway's configuration and the tool definitions a
//! person pinned (`crate::gateway`), so the definition names the pinned
//! tool's digest and an upstream that changes the tool no longer matches.
//! This module checks the definition only; it must not connect anywhere.

use serde::{Deserialize, Serialize};

use super::{EffectKind, TIMEOUT_SECS, invalid};
use crate::RegistryError;
use crate::gateway::{is_tool_name, is_upstream_name};

/// An `mcp` effect: which upstream tool, at which pinned definition.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct McpTool {
    /// The upstream's name in the gateway's configuration.
    pub upstream: String,
    /// The tool's name as the upstream lists it.
    pub tool: String,
    /// SHA-256 hex of the pinned definition (name, description, input
    /// schema): the gateway calls the tool only while the upstream still
    /// lists exactly this definition.
    pub tool_sha256: String,
    /// Seconds one call may take before it is abandoned, 1..=300.
    pub timeout_secs: u64,
}

impl EffectKind for McpTool {
    fn name(&self) -> &'static str {
        "mcp"
    }

    fn check(&self, operation: &str, _require_passkey: bool) -> Result<(), RegistryError> {
        if !is_upstream_name(&self.upstream) {
            return Err(invalid(
                operation,
                "upstream",
                "is not an upstream name".into(),
            ));
        }
        if !is_tool_name(&self.tool) {
            return Err(invalid(operation, "tool", "is not an MCP tool name".into()));
        }
        let hex = self.tool_sha256.len() == 64
            && self
                .tool_sha256
                .bytes()
                .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
        if !hex {
            return Err(invalid(
                operation,
                "tool_sha256",
                "is not 64 lowercase hex digits".into(),
            ));
        }
        if !TIMEOUT_SECS.contains(&self.timeout_secs) {
            return Err(invalid(
                operation,
                "timeout_secs",
                format!("{} is outside 1..=300", self.timeout_secs),
            ));
        }
        Ok(())
    }

    fn timeout(&self) -> Option<std::time::Duration> {
        Some(std::time::Duration::from_secs(self.timeout_secs))
    }

    fn proof_reissuable(&self) -> bool {
        // The upstream never sees the proof: nothing could check it again.
        false
    }

    /// Only the gateway holds the upstream's connection and credentials.
    fn deliveries(&self) -> crate::Deliveries {
        crate::Deliveries::HandoffOnly
    }
}

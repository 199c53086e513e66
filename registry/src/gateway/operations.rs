//! The operations of the gateway's gated calls: for every pinned tool of a
//! configured upstream that the configuration does not deny, the operation
//! `mcp:<upstream>/<tool>`, whose schema is the pinned input schema (closed
//! to undeclared top-level arguments when it does not say otherwise) and
//! whose effect names the pinned definition's digest, so that its contract
//! revision changes whenever the pin, the upstream's settings or the tool's
//! timeout do.

use std::sync::OnceLock;

use countersign_verifier::canonical;
use serde_json::{Value, json};

use super::{GatewayFile, Pins, ToolPolicy};
use crate::effect::{EffectKind, McpTool};
use crate::preview::Template;
use crate::{Class, Effect, Operation, RegistryError, Schemas, schema};

/// The prefix of every gateway operation's name.
pub const OPERATION_PREFIX: &str = "mcp:";

/// `mcp:<upstream>/<tool>`.
pub fn operation_name(upstream: &str, tool: &str) -> String {
    format!("{OPERATION_PREFIX}{upstream}/{tool}")
}

/// The upstream and tool of a gateway operation's name, if it is one.
pub fn parse_operation_name(name: &str) -> Option<(&str, &str)> {
    let (upstream, tool) = name.strip_prefix(OPERATION_PREFIX)?.split_once('/')?;
    (super::is_upstream_name(upstream) && super::is_tool_name(tool)).then_some((upstream, tool))
}

/// How many hex digits of a tool digest a preview shows.
const SHORT_DIGEST: usize = 12;

/// The operations of `pins` under `file`.
pub(crate) fn gateway_operations(
    file: &GatewayFile,
    pins: &Pins,
    schemas: Schemas,
) -> Result<Vec<Operation>, RegistryError> {
    let mut operations = Vec::new();
    for upstream in &file.upstream {
        for (tool, pinned) in pins.of(&upstream.name) {
            if upstream.policy(tool) == ToolPolicy::Deny {
                continue;
            }
            let name = operation_name(&upstream.name, tool);
            let effect = McpTool {
                upstream: upstream.name.clone(),
                tool: tool.clone(),
                tool_sha256: pinned.sha256.clone(),
                timeout_secs: upstream.timeout_secs,
            };
            effect.check(&name, upstream.require_passkey)?;
            let short = pinned.sha256.get(..SHORT_DIGEST).unwrap_or_default();
            let description = format!("Call the tool {tool} of the MCP server {}", upstream.name);
            let preview = format!(
                "Call {tool} of MCP server {} (pinned definition {short})",
                upstream.name
            );
            // Closed where the upstream left it open: an argument its
            // schema does not declare is refused, never passed on unseen
            // by the schema (many servers drop unknown keys silently).
            let mut closed = pinned.input_schema.clone();
            if closed.contains_key("properties") && !closed.contains_key("additionalProperties") {
                closed.insert("additionalProperties".into(), Value::Bool(false));
            }
            let generated = Generated {
                name,
                class: upstream.risk.get(tool).copied().unwrap_or(Class::Write),
                description,
                preview,
                schema: Value::Object(closed),
                effect: Effect::Mcp(effect),
                replay_safe: upstream.replay_safe.contains(tool),
                require_passkey: upstream.require_passkey,
                lifetime_secs: upstream.lifetime_secs,
                decision_window_secs: upstream.decision_window_secs,
                upstream_schema: true,
                upstream_annotations: pinned.shown.get("annotations").cloned(),
            };
            operations.push(generated.build(schemas)?);
        }
    }
    Ok(operations)
}

/// An operation made from the gateway's files, not the registry file.
pub(super) struct Generated {
    pub(super) name: String,
    /// What a call risks, as the operator says (`write` if not).
    pub(super) class: Class,
    pub(super) description: String,
    pub(super) preview: String,
    pub(super) schema: Value,
    pub(super) effect: Effect,
    pub(super) replay_safe: bool,
    pub(super) require_passkey: bool,
    pub(super) lifetime_secs: Option<u64>,
    pub(super) decision_window_secs: Option<u64>,
    /// The schema is an upstream tool's: compiled in the draft it declares.
    pub(super) upstream_schema: bool,
    /// The pinned tool's annotations, if its upstream declared any.
    pub(super) upstream_annotations: Option<Value>,
}

impl Generated {
    /// The operation, whose contract revision is the
    /// digest of its whole definition, its schema compiled now if
    /// `schemas` says so.
    pub(super) fn build(self, schemas: Schemas) -> Result<Operation, RegistryError> {
        let bad = |reason: String| RegistryError::BadSchema {
            operation: self.name.clone(),
            reason,
        };
        let template = Template::parse(&self.preview).map_err(bad)?;
        let validator = OnceLock::new();
        if schemas == Schemas::Compiled {
            let compiled = if self.upstream_schema {
                schema::compile_upstream(&self.schema)
            } else {
                schema::compile(&self.schema)
            };
            let _ = validator.set(Ok(compiled.map_err(bad)?));
        }
        let mut definition = json!({
            "name": self.name,
            "description": self.description,
            "class": self.class,
            "replay_safe": self.replay_safe,
            "lifetime_secs": self.lifetime_secs,
            "preview": self.preview,
            "unverified_fields": [],
            "effect": self.effect,
            "schema": self.schema,
        });
        if self.require_passkey {
            definition["require_passkey"] = Value::Bool(true);
        }
        let contract = canonical::to_canonical(&definition).map_err(|e| bad(e.to_string()))?;
        let revision = canonical::sha256_hex(contract.as_bytes());
        Ok(Operation {
            name: self.name,
            description: self.description,
            class: self.class,
            schema: self.schema,
            preview: self.preview,
            effect: self.effect,
            replay_safe: self.replay_safe,
            require_passkey: self.require_passkey,
            quorum: None,
            lifetime_secs: self.lifetime_secs,
            decision_window_secs: self.decision_window_secs,
            escalation: None,
            premise: None,
            target: None,
            unverified_fields: Vec::new(),
            revision,
            contract,
            template,
            validator,
            upstream_schema: self.upstream_schema,
            upstream_annotations: self.upstream_annotations,
        })
    }
}

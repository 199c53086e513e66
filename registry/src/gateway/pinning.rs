//! The operation `gateway.pin`: a person's acceptance of upstream tool
//! definitions. `countersign gateway tools --accept` proposes the exact
//! definitions an upstream lists now; a person reviews them (the preview
//! shows each tool's digest, the digest it replaces, and its description)
//! and approves at an approver interface, with a passkey or a quorum where
//! the configuration asks for one; the head that executes the proof writes
//! them into `gateway-pins.json` ([`Pins::accept`]).
//!
//! An acceptance is bound to the pin it replaces: it applies only while
//! each tool is still pinned as it was when proposed (or already pinned as
//! accepted), so an old approval can never put back a definition someone
//! has since replaced. This module owns the operation, its arguments and
//! that check; it must not read or write a file.

use countersign_verifier::canonical;
use serde::Deserialize;
use serde_json::{Map, Value, json};

use super::operations::Generated;
use super::{GatewayFile, Pins, ToolDefinition};
use crate::effect::{EffectKind, PinTools};
use crate::{Effect, Operation, RegistryError, Schemas};

/// The operation's name.
pub const PIN_OPERATION: &str = "gateway.pin";
/// The most tool definitions one acceptance carries.
pub const MAX_PINNED_AT_ONCE: usize = 64;

/// One tool definition to pin, as the arguments carry it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinRequest {
    /// The upstream's name in `gateway.toml`.
    pub upstream: String,
    /// The tool's name.
    pub tool: String,
    /// Its description as the upstream lists it (`null` when it has none).
    pub description: Option<String>,
    /// Its input schema as the upstream lists it.
    pub input_schema: Map<String, Value>,
    /// What else a client may show of it, as the upstream lists it
    /// ([`ToolDefinition::shown`]); absent means none.
    #[serde(default)]
    pub shown: Map<String, Value>,
    /// The digest pinned when this was proposed (`null`: not pinned then).
    pub replaces: Option<String>,
}

impl PinRequest {
    /// The requested definition.
    pub fn definition(&self) -> ToolDefinition {
        ToolDefinition {
            name: self.tool.clone(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            shown: self.shown.clone(),
        }
    }

    /// The arguments object of one tool for `gateway.pin`.
    pub fn to_value(&self) -> Value {
        json!({
            "upstream": self.upstream,
            "tool": self.tool,
            "description": self.description,
            "input_schema": self.input_schema,
            "shown": self.shown,
            "replaces": self.replaces,
        })
    }
}

/// The tool definitions of a `gateway.pin` proposal's arguments
/// (`{"tools": [...]}`), or why they are not such.
pub fn pin_requests(args: &Value) -> Result<Vec<PinRequest>, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Args {
        tools: Vec<PinRequest>,
    }
    let Args { tools } = serde_json::from_value(args.clone()).map_err(|e| e.to_string())?;
    let mut seen = std::collections::BTreeSet::new();
    for request in &tools {
        if !seen.insert((&request.upstream, &request.tool)) {
            return Err(format!(
                "{}/{} is named twice",
                request.upstream, request.tool
            ));
        }
    }
    Ok(tools)
}

/// The arguments of a `gateway.pin` proposal for `requests`.
pub fn pin_arguments(requests: &[PinRequest]) -> Value {
    json!({ "tools": requests.iter().map(PinRequest::to_value).collect::<Vec<_>>() })
}

/// What pinning came to for one tool.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Accepted {
    /// `<upstream>/<tool>`.
    pub tool: String,
    /// The digest now pinned.
    pub sha256: String,
    /// Whether it was already pinned so (an acceptance applied again).
    pub already: bool,
}

impl Pins {
    /// Pins every one of `requests`, or none: each must still be pinned as
    /// its `replaces` says (or already be pinned as requested), and its
    /// definition must be pinnable. The reason names the first that is not.
    pub fn accept(&mut self, requests: &[PinRequest]) -> Result<Vec<Accepted>, String> {
        let mut next = self.clone();
        let mut accepted = Vec::with_capacity(requests.len());
        for request in requests {
            let name = format!("{}/{}", request.upstream, request.tool);
            let definition = request.definition();
            let sha256 = definition
                .sha256_hex()
                .ok_or_else(|| format!("{name}: not representable as canonical JSON"))?;
            let current = self
                .get(&request.upstream, &request.tool)
                .map(|p| p.sha256.as_str());
            if current == Some(sha256.as_str()) {
                accepted.push(Accepted {
                    tool: name,
                    sha256,
                    already: true,
                });
                continue;
            }
            if current != request.replaces.as_deref() {
                return Err(format!(
                    "{name} is pinned at {} now, not at {} as when this was proposed; nothing was pinned",
                    current.unwrap_or("nothing"),
                    request.replaces.as_deref().unwrap_or("nothing")
                ));
            }
            next.pin(&request.upstream, definition)?;
            accepted.push(Accepted {
                tool: name,
                sha256,
                already: false,
            });
        }
        *self = next;
        Ok(accepted)
    }
}

/// The lines the preview adds for a `gateway.pin` proposal: per tool, the
/// digest it pins and the one it replaces, then its description and every
/// other field a client shows (title, annotations, ...), so a
/// person compares them with `countersign gateway tools` and reads what the
/// agent would read. Unescaped: the preview escapes every line.
pub(crate) fn preview_lines(args: &Value) -> Vec<String> {
    let requests = match pin_requests(args) {
        Ok(requests) => requests,
        Err(e) => return vec![format!("<not tool definitions: {e}>")],
    };
    let mut lines = Vec::new();
    for request in requests {
        let sha256 = request
            .definition()
            .sha256_hex()
            .unwrap_or_else(|| "<not canonical>".into());
        lines.push(format!(
            "Pin {}/{} at {sha256}, replacing {}",
            request.upstream,
            request.tool,
            request
                .replaces
                .as_deref()
                .unwrap_or("nothing (never pinned)")
        ));
        let description = request.description.as_deref().map_or_else(
            || "<none>".to_owned(),
            |d| canonical::to_canonical(&Value::String(d.to_owned())).unwrap_or_default(),
        );
        lines.push(format!("  description: {description}"));
        // Title, annotations (readOnlyHint, ...), output schema: what the
        // agent and a person are shown of the tool, reviewed with it.
        for (field, value) in &request.shown {
            let value = canonical::to_canonical(value).unwrap_or_default();
            lines.push(format!("  {field}: {value}"));
        }
    }
    lines
}

/// `gateway.pin` for the upstreams of `file`. Its contract revision
/// depends on the upstreams' names and settings, never on the pins, so
/// pinning does not change the contract of the next acceptance.
pub(crate) fn pin_operation(
    file: &GatewayFile,
    schemas: Schemas,
) -> Result<Operation, RegistryError> {
    let upstreams: Vec<&str> = file.upstream.iter().map(|u| u.name.as_str()).collect();
    // An acceptance is as strong as the strongest upstream it may pin for.
    let require_passkey = file.upstream.iter().any(|u| u.require_passkey);
    PinTools.check(PIN_OPERATION, require_passkey)?;
    let schema = json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["tools"],
        "properties": {
            "tools": {
                "type": "array",
                "minItems": 1,
                "maxItems": MAX_PINNED_AT_ONCE,
                "items": {
                    "type": "object",
                    "additionalProperties": false,
                    "required": ["upstream", "tool", "description", "input_schema", "replaces"],
                    "properties": {
                        "upstream": { "enum": upstreams },
                        "tool": { "type": "string", "pattern": "^[A-Za-z0-9_.-]{1,128}$" },
                        "description": { "type": ["string", "null"] },
                        "shown": { "type": "object" },
                        "input_schema": {
                            "type": "object",
                            "required": ["type"],
                            "properties": { "type": { "const": "object" } }
                        },
                        "replaces": {
                            "anyOf": [
                                { "type": "null" },
                                { "type": "string", "pattern": "^[0-9a-f]{64}$" }
                            ]
                        }
                    }
                }
            }
        }
    });
    Generated {
        name: PIN_OPERATION.to_owned(),
        class: crate::Class::Write,
        description: "Pin the tool definitions of upstream MCP servers".to_owned(),
        preview: "Pin upstream MCP tool definitions (each below, with its digest)".to_owned(),
        schema,
        effect: Effect::Pin,
        replay_safe: true,
        require_passkey,
        lifetime_secs: None,
        decision_window_secs: None,
        upstream_schema: false,
        upstream_annotations: None,
    }
    .build(schemas)
}

#[cfg(test)]
mod tests;

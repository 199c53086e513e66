//! The tool definitions a person pinned (`gateway-pins.json`): per upstream
//! and tool, everything the upstream listed of it when the person accepted
//! it (description, input schema, and what else a client shows: title,
//! annotations, output schema, icons, metadata), and their digest. A gated call is proposed and
//! approved against the pinned definition, and runs only while the upstream
//! lists the same one.

use std::collections::BTreeMap;

use countersign_verifier::canonical;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use super::{is_tool_name, is_upstream_name};
use crate::RegistryError;

/// The largest pins file accepted, in bytes.
const MAX_PINS_BYTES: usize = 4 * 1024 * 1024;
/// The pins file's format version.
const VERSION: u32 = 1;

/// A tool as an upstream lists it: all of it is pinned and hashed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolDefinition {
    /// The tool's name.
    pub name: String,
    /// Its description, if the upstream gives one.
    pub description: Option<String>,
    /// Its input schema (a JSON Schema object).
    pub input_schema: Map<String, Value>,
    /// Every other field of the tool as the upstream lists it, under its
    /// MCP name (`title`, `annotations`, `outputSchema`, `icons`,
    /// `_meta`): what an agent or a person may be shown of it. Empty when
    /// the upstream lists none.
    pub shown: Map<String, Value>,
}

impl ToolDefinition {
    /// SHA-256 hex of the canonical JSON (RFC 8785) of `{name, description
    /// (null when absent), input_schema}`, with `shown` added when it is
    /// not empty; `None` if a value canonical JSON cannot write is in it
    /// (such a tool cannot be pinned).
    ///
    /// Why `shown` only when not empty: a pin made before these fields
    /// were pinned holds a digest of the first three alone. A tool that
    /// lists none of the others keeps that digest, so its pin stays valid
    /// and nobody is asked again for a definition that did not change; a
    /// tool that lists any of them (a title, an annotation) gets a new
    /// digest, so its old pin no longer matches and a person reviews the
    /// fields nobody reviewed before. An empty `shown` and an absent one
    /// cannot be told apart, and need not be: both show nothing more.
    pub fn sha256_hex(&self) -> Option<String> {
        let mut definition = json!({
            "name": self.name,
            "description": self.description,
            "input_schema": self.input_schema,
        });
        if !self.shown.is_empty()
            && let Some(object) = definition.as_object_mut()
        {
            object.insert("shown".into(), Value::Object(self.shown.clone()));
        }
        canonical::canonical_sha256_hex(&definition).ok()
    }
}

/// One pinned tool.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinnedTool {
    /// The description as pinned.
    pub description: Option<String>,
    /// The input schema as pinned.
    pub input_schema: Map<String, Value>,
    /// The other fields a client may show, as pinned
    /// ([`ToolDefinition::shown`]); absent from the file when empty, so a
    /// file written before they were pinned still loads.
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub shown: Map<String, Value>,
    /// [`ToolDefinition::sha256_hex`] of the pinned definition, checked
    /// at load.
    pub sha256: String,
}

/// The whole pins file.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Pins {
    version: u32,
    /// Upstream name, then tool name, to the pinned definition.
    upstream: BTreeMap<String, BTreeMap<String, PinnedTool>>,
}

impl Pins {
    /// No pinned tool.
    pub fn empty() -> Pins {
        Pins {
            version: VERSION,
            upstream: BTreeMap::new(),
        }
    }

    /// Parses the pins file strictly (duplicate keys refused) and checks
    /// every name and digest.
    pub fn parse(text: &str) -> Result<Pins, RegistryError> {
        let bad =
            |reason: String| RegistryError::Gateway(format!("{}: {reason}", super::PINS_FILE));
        let value =
            canonical::parse(text.as_bytes(), MAX_PINS_BYTES).map_err(|e| bad(e.to_string()))?;
        let pins: Pins = serde_json::from_value(value).map_err(|e| bad(e.to_string()))?;
        if pins.version != VERSION {
            return Err(bad(format!("version {} is not {VERSION}", pins.version)));
        }
        for (upstream, tools) in &pins.upstream {
            if !is_upstream_name(upstream) {
                return Err(bad(format!("{upstream:?} is not an upstream name")));
            }
            for (tool, pinned) in tools {
                if !is_tool_name(tool) {
                    return Err(bad(format!("{upstream}: {tool:?} is not an MCP tool name")));
                }
                if pinned.definition(tool).sha256_hex().as_deref() != Some(pinned.sha256.as_str()) {
                    return Err(bad(format!(
                        "{upstream}/{tool}: the digest does not match the definition"
                    )));
                }
            }
        }
        Ok(pins)
    }

    /// The file's text (pretty JSON, keys sorted), as [`Pins::parse`] reads it.
    pub fn to_text(&self) -> String {
        let mut text = serde_json::to_string_pretty(self).unwrap_or_default();
        text.push('\n');
        text
    }

    /// The pinned definition of `tool` of `upstream`.
    pub fn get(&self, upstream: &str, tool: &str) -> Option<&PinnedTool> {
        self.upstream.get(upstream)?.get(tool)
    }

    /// Every pinned tool of `upstream`, by name.
    pub fn of(&self, upstream: &str) -> impl Iterator<Item = (&String, &PinnedTool)> {
        self.upstream.get(upstream).into_iter().flatten()
    }

    /// Pins `definition` for `upstream` (replacing an earlier pin of the
    /// same tool); the reason if it cannot be pinned.
    pub fn pin(&mut self, upstream: &str, definition: ToolDefinition) -> Result<(), String> {
        if !is_upstream_name(upstream) || !is_tool_name(&definition.name) {
            return Err(format!(
                "{upstream}/{}: not an upstream and tool name",
                definition.name
            ));
        }
        if definition.input_schema.get("type") != Some(&Value::String("object".into())) {
            return Err(format!(
                "{upstream}/{}: its input schema is not `type: object`",
                definition.name
            ));
        }
        let sha256 = definition.sha256_hex().ok_or_else(|| {
            format!(
                "{upstream}/{}: its definition is not representable as canonical JSON",
                definition.name
            )
        })?;
        self.upstream
            .entry(upstream.to_owned())
            .or_default()
            .insert(
                definition.name,
                PinnedTool {
                    description: definition.description,
                    input_schema: definition.input_schema,
                    shown: definition.shown,
                    sha256,
                },
            );
        Ok(())
    }
}

impl PinnedTool {
    /// The pinned definition of the tool named `name`.
    pub fn definition(&self, name: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.to_owned(),
            description: self.description.clone(),
            input_schema: self.input_schema.clone(),
            shown: self.shown.clone(),
        }
    }
}

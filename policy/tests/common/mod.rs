//! Registries and requests the policy tests share.
#![allow(dead_code, clippy::unwrap_used)]

use countersign_policy::{GeneratedSchema, Head, PolicyRequest, PolicySet};
use countersign_registry::gateway::{Pins, ToolDefinition};
use countersign_registry::{Registry, Schemas, Sources};
use serde_json::{Value, json};

/// An example file's text (`policy/examples/<name>`).
pub(crate) fn example(name: &str) -> String {
    let path = format!("{}/examples/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The default registry.
pub(crate) fn default_registry() -> Registry {
    Registry::from_toml_str(Registry::default_toml()).unwrap()
}

/// The default registry with the gateway example's upstream, its
/// `read_file` and `write_file` tools pinned.
pub(crate) fn gateway_registry() -> Registry {
    let mut pins = Pins::empty();
    for (name, properties, required) in [
        (
            "read_file",
            json!({"path": {"type": "string"}}),
            json!(["path"]),
        ),
        (
            "write_file",
            json!({"path": {"type": "string"}, "content": {"type": "string"}}),
            json!(["path", "content"]),
        ),
    ] {
        let schema = json!({"type": "object", "properties": properties, "required": required});
        pins.pin(
            "files",
            ToolDefinition {
                name: name.into(),
                description: Some(format!("{name} of the example")),
                input_schema: schema.as_object().cloned().unwrap(),
                shown: serde_json::Map::new(),
            },
        )
        .unwrap();
    }
    let sources = Sources {
        registry: Registry::default_toml().to_owned(),
        gateway: Some(example("gateway.toml")),
        pins: Some(pins.to_text()),
    };
    Registry::from_sources(&sources, Schemas::Compiled).unwrap()
}

/// The payments example's registry.
pub(crate) fn payments_registry() -> Registry {
    Registry::from_toml_str(&example("payments.toml")).unwrap()
}

/// The schema of `registry`.
pub(crate) fn schema_of(registry: &Registry) -> GeneratedSchema {
    countersign_policy::schema(registry).unwrap_or_else(|e| panic!("{e}"))
}

/// Parses and validates `text` against `schema`, panicking with the issues.
pub(crate) fn valid_set(text: &str, schema: &GeneratedSchema) -> PolicySet {
    let set = PolicySet::parse(text).unwrap_or_else(|e| panic!("{e}"));
    if let Err(issues) = set.validate(schema) {
        panic!("{issues:#?}");
    }
    set
}

/// A request of `operation` with `arguments` by a Claude Code session.
pub(crate) fn request<'a>(operation: &'a str, arguments: &'a Value) -> PolicyRequest<'a> {
    PolicyRequest {
        principal: "pr_0123456789abcdef0123456789abcdef",
        agent: Some("claude-code"),
        session: "s-1",
        operation,
        arguments,
        time_unix: 1_796_558_400,
        head: Head::Hook,
    }
}

/// Arguments of an agent operation with `tool_input`.
pub(crate) fn agent_args(tool_name: &str, tool_input: Value) -> Value {
    json!({
        "agent": "claude-code",
        "tool_name": tool_name,
        "cwd": "/srv/app",
        "diff": "",
        "tool_input": tool_input,
    })
}

//! The MCP tool list, generated from the surface table
//! ([`DATA_OPERATIONS`]) and the operation registry: one tool per data
//! operation, and one `propose_<operation>` tool per registry operation so a
//! model sees each operation's own argument schema.
//!
//! Must not: invent a tool the table does not name, or describe a tool that
//! takes, returns or decides a proof. The table's `execute_with_proof` has no
//! MCP tool, by its documented exception.

use std::sync::Arc;

use countersign_registry::{Class, Registry};
use countersign_surface::operations::OperationKey;
use countersign_surface::{
    DATA_OPERATIONS, DataOperation, Exposure, Head, ParamSchema, propose_tool_name,
};
use rmcp::model::{JsonObject, Tool, ToolAnnotations};
use serde_json::{Value, json};

/// One advertised tool and the data operation it exposes: a call is that
/// operation of the service, nothing of this head's own.
#[derive(Debug, Clone)]
pub(crate) struct ToolEntry {
    /// The definition sent in `tools/list`.
    pub(crate) tool: Tool,
    /// The service operation a call runs.
    pub(crate) key: OperationKey,
    /// Its entry in the surface table (for its parameter schema).
    pub(crate) data_op: &'static DataOperation,
    /// For `propose_<operation>`: the registry operation.
    pub(crate) registry_op: Option<String>,
    /// The data operation (`propose:<registry operation>` for proposals).
    pub(crate) operation: String,
}

/// Every tool this head advertises, in table order.
pub(crate) fn tool_entries(registry: &Registry) -> Vec<ToolEntry> {
    let mut entries = Vec::new();
    for data_op in DATA_OPERATIONS {
        let Some(tool_name) = data_op.entries.mcp() else {
            continue;
        };
        // The surface's own test keeps every table entry keyed.
        let Some(key) = OperationKey::of(data_op.name) else {
            continue;
        };
        match data_op.params {
            ParamSchema::Propose => {
                // A gateway operation is called as its upstream tool
                // (`<upstream>__<tool>`, `crate::gateway`), not proposed by name.
                for op in registry
                    .proposable()
                    .filter(|op| !matches!(op.effect, countersign_registry::Effect::Mcp(_)))
                {
                    let description = format!(
                        "Propose `{}` for a person to review: {} {}",
                        op.name,
                        op.description.trim_end_matches('.'),
                        PROPOSE_NOTE
                    );
                    entries.push(entry(
                        data_op,
                        key,
                        propose_tool_name(&op.name),
                        description,
                        data_op.params.schema(Some(op)),
                        Some(op.name.clone()),
                    ));
                }
            }
            ParamSchema::Fixed(_) => {
                let description = match key {
                    OperationKey::ExecuteHandoff => {
                        format!("{} {}", data_op.description, EXECUTE_NOTE)
                    }
                    _ => data_op.description.to_string(),
                };
                entries.push(entry(
                    data_op,
                    key,
                    tool_name.to_string(),
                    description,
                    data_op.params.schema(None),
                    None,
                ));
            }
        }
    }
    entries
}

const PROPOSE_NOTE: &str = "(nothing runs until a person approves it at their terminal with `countersign approve ID --hand-off`; then call `execute_approved`). Returns the proposal id, its status and the preview the person will see.";

const EXECUTE_NOTE: &str = "Refused, applying nothing, until a person has approved it with `countersign approve ID --hand-off`. Calling it again returns the recorded disposition and never runs the effect twice.";

fn entry(
    data_op: &'static DataOperation,
    key: OperationKey,
    name: String,
    description: String,
    params: Value,
    registry_op: Option<String>,
) -> ToolEntry {
    let tool = Tool::new(name, description, Arc::new(object(params)))
        .with_raw_output_schema(Arc::new(object(output_schema((data_op.result)()))))
        .with_annotations(annotations(data_op, key));
    let operation = match &registry_op {
        Some(op) => format!("{}:{op}", data_op.name),
        None => data_op.name.to_string(),
    };
    ToolEntry {
        tool,
        key,
        data_op,
        registry_op,
        operation,
    }
}

/// Hints for clients: reads are read-only; executing runs an effect that
/// may destroy or reach outside (a command, a webhook) but never twice;
/// proposing and withdrawing only change countersign's own records.
fn annotations(data_op: &DataOperation, key: OperationKey) -> ToolAnnotations {
    let title = data_op.name.replace('_', " ");
    let hints = ToolAnnotations::with_title(title);
    match (data_op.class, key) {
        (Class::Read, _) => hints.read_only(true).open_world(false),
        (_, OperationKey::ExecuteHandoff) => hints
            .read_only(false)
            .destructive(true)
            .idempotent(true)
            .open_world(true),
        (_, OperationKey::Withdraw) => hints
            .read_only(false)
            .destructive(true)
            .idempotent(true)
            .open_world(false),
        _ => hints
            .read_only(false)
            .destructive(false)
            .idempotent(false)
            .open_world(false),
    }
}

/// The output schema MCP allows: structured content is an object (protocol
/// versions up to 2025-11-25 require `type: object` at the root), so a
/// result that is an array is wrapped as `{"items": [...]}`. Every other
/// result schema is the surface's own, unchanged.
pub fn output_schema(result_schema: Value) -> Value {
    if result_schema["type"] == "array" {
        json!({
            "type": "object",
            "required": ["items"],
            "properties": {"items": result_schema}
        })
    } else {
        result_schema
    }
}

/// The structured content of a result, wrapped as [`output_schema`] says.
pub fn structured(result: Value) -> Value {
    if result.is_array() {
        json!({ "items": result })
    } else {
        result
    }
}

fn object(value: Value) -> JsonObject {
    match value {
        Value::Object(map) => map,
        // Every schema in the surface table is an object; keep the tool
        // callable rather than panic if one ever is not.
        _ => JsonObject::new(),
    }
}

/// What this head really exposes, read back from the tool list it
/// advertises (names, input schemas, read-only annotation, output schemas),
/// for the parity gate. Result schemas are as advertised: see
/// [`output_schema`] for the one rule by which they can differ from the
/// surface table's.
pub fn exposures(registry: &Registry) -> Vec<Exposure> {
    tool_entries(registry)
        .into_iter()
        .map(|entry| {
            let read_only = entry
                .tool
                .annotations
                .as_ref()
                .and_then(|a| a.read_only_hint)
                .unwrap_or(false);
            Exposure {
                operation: entry.operation,
                head: Head::Mcp,
                entry: entry.tool.name.to_string(),
                class: if read_only { Class::Read } else { Class::Write },
                params: Value::Object((*entry.tool.input_schema).clone()),
                result: entry
                    .tool
                    .output_schema
                    .as_ref()
                    .map_or(Value::Null, |s| Value::Object((**s).clone())),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn registry() -> Registry {
        Registry::from_toml_str(Registry::default_toml()).unwrap()
    }

    #[test]
    fn every_mcp_entry_of_the_table_is_advertised() {
        let registry = registry();
        let names: Vec<String> = tool_entries(&registry)
            .iter()
            .map(|e| e.tool.name.to_string())
            .collect();
        for op in DATA_OPERATIONS {
            match (op.entries.mcp(), op.params) {
                (None, _) => {}
                (Some(_), ParamSchema::Propose) => {
                    for reg in registry.proposable() {
                        assert!(names.contains(&propose_tool_name(&reg.name)), "{names:?}");
                    }
                }
                (Some(name), ParamSchema::Fixed(_)) => {
                    assert!(
                        names.contains(&name.to_string()),
                        "{name} missing: {names:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn no_tool_takes_a_proof_a_challenge_or_a_decision() {
        for entry in tool_entries(&registry()) {
            let params = Value::Object((*entry.tool.input_schema).clone());
            let props = params["properties"].as_object().unwrap();
            for key in props.keys() {
                for banned in ["proof", "token", "challenge", "approve", "decision", "deny"] {
                    assert!(
                        !key.to_lowercase().contains(banned),
                        "{} takes {key}",
                        entry.tool.name
                    );
                }
            }
            assert_eq!(params["additionalProperties"], false, "{}", entry.tool.name);
            // `execute_approved` executes what a person approved; no tool
            // is a verb of deciding. A model may propose a rule
            // (`propose_rule_create`, an ordinary proposal a person decides)
            // but no tool creates, changes or revokes one.
            let proposes_a_rule = entry.registry_op.as_deref()
                == Some(countersign_registry::rule::RULE_CREATE)
                && entry.tool.name == "propose_rule_create";
            for word in entry.tool.name.split('_') {
                if proposes_a_rule && matches!(word, "rule" | "create") {
                    continue;
                }
                assert!(
                    ![
                        "approve", "deny", "decide", "rule", "revoke", "sign", "proof"
                    ]
                    .contains(&word),
                    "{}",
                    entry.tool.name
                );
            }
        }
    }

    #[test]
    fn reads_are_read_only_and_execute_is_destructive() {
        for entry in tool_entries(&registry()) {
            let hints = entry.tool.annotations.clone().unwrap();
            match entry.key {
                OperationKey::ListOperations
                | OperationKey::GetProposal
                | OperationKey::ListProposals
                | OperationKey::GetResult => assert_eq!(hints.read_only_hint, Some(true)),
                OperationKey::ExecuteHandoff => {
                    assert_eq!(hints.read_only_hint, Some(false));
                    assert_eq!(hints.destructive_hint, Some(true));
                }
                OperationKey::Propose | OperationKey::Withdraw => {
                    assert_eq!(hints.read_only_hint, Some(false))
                }
                OperationKey::ExecuteWithProof => panic!("MCP takes no proof"),
            }
        }
    }

    #[test]
    fn output_schemas_are_objects_and_arrays_are_wrapped() {
        for entry in tool_entries(&registry()) {
            let schema = entry.tool.output_schema.clone().unwrap();
            assert_eq!(schema["type"], "object", "{}", entry.tool.name);
        }
        assert_eq!(structured(json!([1])), json!({"items": [1]}));
        assert_eq!(structured(json!({"a": 1})), json!({"a": 1}));
    }

    #[test]
    fn exposures_match_the_table_but_for_the_documented_wrapping() {
        let registry = registry();
        let exposures = exposures(&registry);
        for exposure in &exposures {
            let name = exposure.operation.split(':').next().unwrap();
            let op = DATA_OPERATIONS.iter().find(|o| o.name == name).unwrap();
            assert_eq!(exposure.class, op.class, "{}", exposure.entry);
            assert_eq!(exposure.result, output_schema((op.result)()));
            let reg = exposure
                .operation
                .strip_prefix("propose:")
                .and_then(|r| registry.get(r));
            assert_eq!(exposure.params, op.params.schema(reg), "{}", exposure.entry);
        }
        assert!(
            !exposures
                .iter()
                .any(|e| e.operation == "execute_with_proof")
        );
    }
}

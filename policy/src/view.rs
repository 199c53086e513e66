//! The Cedar view of an operation's arguments: which parts of its JSON
//! Schema Cedar can hold exactly, and as which Cedar type.
//!
//! This module owns the typing rules, used both to write the schema
//! (`schema.rs`) and to convert a request's arguments (`value.rs`), so
//! the two cannot disagree. It must not widen the view: a schema node it
//! cannot type exactly is left out of the view, never typed loosely.
//!
//! The rules, for a schema node whose `type` is one string:
//!
//! - `string` is `String`, `integer` is `Long`, `boolean` is `Bool`;
//! - `array` with `items` that are typed is `Set` of that type (Cedar
//!   forgets order, and refuses duplicates at conversion);
//! - `object` with `properties` is a record of those properties that are
//!   typed, each required when `required` lists it; properties the object
//!   does not declare (if it is open) are not in the view.
//!
//! Left out: `number` (Cedar has no exact decimal for it), `null`, a
//! `type` that is a list or absent, an object without `properties` (an
//! open bag like the agents' `tool_input`), an array without typed
//! `items` or with `prefixItems`, and any node using `anyOf`, `oneOf`,
//! `allOf`, `not`, `if`, `$ref` or `$dynamicRef` (its type is not one
//! Cedar type).

use std::collections::BTreeMap;

use serde_json::{Map, Value, json};

/// The Cedar type of a typed part of the arguments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum ArgType {
    /// A Cedar `String`.
    String,
    /// A Cedar `Long` (a 64-bit signed integer).
    Long,
    /// A Cedar `Bool`.
    Bool,
    /// A Cedar `Set` of the element type.
    Set(Box<ArgType>),
    /// A Cedar record.
    Record(RecordType),
}

/// A record: its typed attributes, by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct RecordType {
    pub(crate) attributes: BTreeMap<String, Attribute>,
}

/// One attribute of a record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Attribute {
    pub(crate) ty: ArgType,
    /// Listed in the object's `required`.
    pub(crate) required: bool,
}

/// Keywords whose presence makes a node's type something other than one
/// Cedar type.
const UNTYPABLE_KEYWORDS: [&str; 7] = [
    "anyOf",
    "oneOf",
    "allOf",
    "not",
    "if",
    "$ref",
    "$dynamicRef",
];

/// The view of a whole arguments schema: its record, or the empty record
/// when the top level is not a typed object.
pub(crate) fn arguments(schema: &Value) -> RecordType {
    match of(schema) {
        Some(ArgType::Record(record)) => record,
        _ => RecordType::default(),
    }
}

/// The type of one schema node, or `None` when it is left out.
pub(crate) fn of(node: &Value) -> Option<ArgType> {
    let node = node.as_object()?;
    if UNTYPABLE_KEYWORDS.iter().any(|k| node.contains_key(*k)) {
        return None;
    }
    match node.get("type")?.as_str()? {
        "string" => Some(ArgType::String),
        "integer" => Some(ArgType::Long),
        "boolean" => Some(ArgType::Bool),
        "array" if !node.contains_key("prefixItems") => {
            Some(ArgType::Set(Box::new(of(node.get("items")?)?)))
        }
        "object" => record(node).map(ArgType::Record),
        _ => None,
    }
}

/// An object node with `properties` as a record.
fn record(node: &Map<String, Value>) -> Option<RecordType> {
    let properties = node.get("properties")?.as_object()?;
    let required: Vec<&str> = node
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let attributes = properties
        .iter()
        .filter_map(|(name, schema)| {
            let ty = of(schema)?;
            let required = required.contains(&name.as_str());
            Some((name.clone(), Attribute { ty, required }))
        })
        .collect();
    Some(RecordType { attributes })
}

impl ArgType {
    /// The type in Cedar's JSON schema format.
    pub(crate) fn to_cedar_json(&self) -> Value {
        match self {
            ArgType::String => json!({ "type": "String" }),
            ArgType::Long => json!({ "type": "Long" }),
            ArgType::Bool => json!({ "type": "Boolean" }),
            ArgType::Set(element) => json!({ "type": "Set", "element": element.to_cedar_json() }),
            ArgType::Record(record) => record.to_cedar_json(),
        }
    }
}

impl RecordType {
    /// The record type in Cedar's JSON schema format.
    pub(crate) fn to_cedar_json(&self) -> Value {
        let attributes: Map<String, Value> = self
            .attributes
            .iter()
            .map(|(name, attribute)| {
                let mut ty = attribute.ty.to_cedar_json();
                if let Value::Object(map) = &mut ty {
                    map.insert("required".into(), Value::Bool(attribute.required));
                }
                (name.clone(), ty)
            })
            .collect();
        json!({ "type": "Record", "attributes": attributes })
    }
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use serde_json::json;

    use super::{ArgType, arguments, of};

    #[test]
    fn types_what_cedar_holds_exactly_and_leaves_out_the_rest() {
        assert_eq!(
            of(&json!({"type": "string", "pattern": "^a"})),
            Some(ArgType::String)
        );
        assert_eq!(of(&json!({"type": "integer"})), Some(ArgType::Long));
        assert_eq!(of(&json!({"type": "boolean"})), Some(ArgType::Bool));
        assert_eq!(
            of(&json!({"type": "array", "items": {"type": "string"}})),
            Some(ArgType::Set(Box::new(ArgType::String)))
        );
        for untyped in [
            json!({"type": "number"}),
            json!({"type": "null"}),
            json!({"type": ["string", "null"]}),
            json!({}),
            json!({"type": "object"}),
            json!({"type": "array"}),
            json!({"type": "array", "items": {"type": "number"}}),
            json!({"type": "string", "anyOf": [{"maxLength": 3}]}),
            json!({"oneOf": [{"type": "string"}, {"type": "integer"}]}),
        ] {
            assert_eq!(of(&untyped), None, "{untyped}");
        }
    }

    #[test]
    fn an_object_keeps_its_typed_properties_and_their_requiredness() {
        let record = arguments(&json!({
            "type": "object",
            "required": ["a", "n"],
            "properties": {
                "a": {"type": "string"},
                "b": {"type": "integer"},
                "n": {"type": "number"},
                "open": {"type": "object"}
            }
        }));
        let names: Vec<_> = record.attributes.keys().map(String::as_str).collect();
        assert_eq!(names, ["a", "b"]);
        assert!(record.attributes["a"].required);
        assert!(!record.attributes["b"].required);
    }
}

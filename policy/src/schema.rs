//! The Cedar schema generated from a registry: the entity types, one action
//! per operation, and each action's context (the arguments' typed view,
//! the time, the head, the class).
//!
//! This module owns the schema's shape, its canonical text and digest. It
//! must stay deterministic (the digest is what a decision record cites)
//! and must not type an argument loosely (see `view.rs`).
//!
//! Namespace-less, so that policies read as the operator writes them:
//!
//! ```text
//! entity Principal, Agent;
//! entity Session in [Principal, Agent];
//! entity Target = { value: String };
//! entity Operation;
//! action "agent.shell" appliesTo {
//!   principal: Session,
//!   resource: [Target, Operation],
//!   context: { arguments: {...}, time: Long, head: String, class: String,
//!              argv?: { count: Long, w0?: String, ..., w32?: String } },
//! };
//! ```
//!
//! The resource of an operation the registry names a target for is
//! `Target::"<value>"` (with `value`), or, when the arguments hold no
//! string there, `Operation::"<name>"`: a policy that reads
//! `resource.value` says `resource is Target` first (the strict validator
//! insists). Any other operation's resource is `Operation::"<name>"`.
//! `time` is unix seconds (a Long: the `datetime` extension is left out to
//! keep the build small); `head` is one of `Head::as_str`; `class` is the
//! operation's class as approvers see it (`Operation::risk`). Only
//! `agent.shell` has `argv`: its command's words (see `argv.rs`).

use std::collections::BTreeMap;

use std::str::FromStr;

use cedar_policy::{EntityTypeName, Schema, SchemaFragment, Validator};
use countersign_registry::{Class, Registry};
use countersign_verifier::canonical;
use serde_json::{Map, Value, json};

use crate::argv;
use crate::view::{self, RecordType};

/// The principal entity type: a person or service account's principal.
pub const PRINCIPAL_TYPE: &str = "Principal";
/// The agent entity type: the coding agent a hook named.
pub const AGENT_TYPE: &str = "Agent";
/// The session entity type: the request's principal in Cedar's sense.
pub const SESSION_TYPE: &str = "Session";
/// The target entity type: an operation's target string.
pub const TARGET_TYPE: &str = "Target";
/// The operation entity type: the resource when there is no target.
pub const OPERATION_TYPE: &str = "Operation";

/// Why a schema could not be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// Cedar refused the generated schema (a bug here, or a registry that
    /// names something Cedar cannot hold).
    #[error("the generated Cedar schema is refused: {0}")]
    Cedar(String),
    /// The schema has no canonical JSON form.
    #[error("the generated Cedar schema has no canonical form: {0}")]
    Canonical(String),
}

/// What evaluation needs of one operation, beside its Cedar action.
#[derive(Debug, Clone)]
pub(crate) struct OperationView {
    /// The typed view of its arguments.
    pub(crate) arguments: RecordType,
    /// Its target's pointer, if the registry names one.
    pub(crate) target: Option<String>,
    /// Its class as approvers see it.
    pub(crate) class: Class,
}

/// The entity type names, parsed once (Cedar parses a name with its
/// policy grammar: too slow to repeat for every request).
#[derive(Debug, Clone)]
pub(crate) struct TypeNames {
    pub(crate) principal: EntityTypeName,
    pub(crate) agent: EntityTypeName,
    pub(crate) session: EntityTypeName,
    pub(crate) target: EntityTypeName,
    pub(crate) operation: EntityTypeName,
    pub(crate) action: EntityTypeName,
}

impl TypeNames {
    fn new() -> Result<TypeNames, SchemaError> {
        let parse = |name: &str| {
            EntityTypeName::from_str(name).map_err(|e| SchemaError::Cedar(e.to_string()))
        };
        Ok(TypeNames {
            principal: parse(PRINCIPAL_TYPE)?,
            agent: parse(AGENT_TYPE)?,
            session: parse(SESSION_TYPE)?,
            target: parse(TARGET_TYPE)?,
            operation: parse(OPERATION_TYPE)?,
            action: parse("Action")?,
        })
    }
}

/// A Cedar schema generated from a registry, with its canonical text
/// (RFC 8785 JSON of Cedar's JSON schema format) and that text's SHA-256.
#[derive(Debug)]
pub struct GeneratedSchema {
    validator: Validator,
    text: String,
    digest: String,
    pub(crate) operations: BTreeMap<String, OperationView>,
    pub(crate) types: TypeNames,
}

/// Generates the Cedar schema of `registry`'s operations (see the module
/// documentation for its shape).
pub fn schema(registry: &Registry) -> Result<GeneratedSchema, SchemaError> {
    let mut actions = Map::new();
    let mut operations = BTreeMap::new();
    for op in registry.operations() {
        let arguments = view::arguments(&op.schema);
        let resources = match op.target() {
            Some(_) => json!([TARGET_TYPE, OPERATION_TYPE]),
            None => json!([OPERATION_TYPE]),
        };
        let mut context = json!({
            "type": "Record",
            "attributes": {
                "arguments": arguments.to_cedar_json(),
                "time": { "type": "Long" },
                "head": { "type": "String" },
                "class": { "type": "String" },
            }
        });
        if argv::applies_to(&op.name) {
            context["attributes"][argv::ARGV_ATTRIBUTE] = argv::cedar_type();
        }
        actions.insert(
            op.name.clone(),
            json!({ "appliesTo": {
                "principalTypes": [SESSION_TYPE],
                "resourceTypes": resources,
                "context": context,
            }}),
        );
        operations.insert(
            op.name.clone(),
            OperationView {
                arguments,
                target: op.target().map(str::to_owned),
                class: op.risk(),
            },
        );
    }
    let json = json!({ "": {
        "entityTypes": {
            PRINCIPAL_TYPE: {},
            AGENT_TYPE: {},
            SESSION_TYPE: { "memberOfTypes": [PRINCIPAL_TYPE, AGENT_TYPE] },
            TARGET_TYPE: { "shape": {
                "type": "Record",
                "attributes": { "value": { "type": "String" } },
            }},
            OPERATION_TYPE: {},
        },
        "actions": actions,
    }});
    let text = canonical::to_canonical(&json).map_err(|e| SchemaError::Canonical(e.to_string()))?;
    let schema = Schema::from_json_value(json).map_err(|e| SchemaError::Cedar(e.to_string()))?;
    Ok(GeneratedSchema {
        digest: canonical::sha256_hex(text.as_bytes()),
        validator: Validator::new(schema),
        text,
        operations,
        types: TypeNames::new()?,
    })
}

impl GeneratedSchema {
    /// The Cedar schema.
    pub fn cedar(&self) -> &Schema {
        self.validator.schema()
    }

    /// The strict validator over it.
    pub(crate) fn validator(&self) -> &Validator {
        &self.validator
    }

    /// The canonical text: RFC 8785 JSON of the schema in Cedar's JSON
    /// schema format. The same registry gives the same text.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// SHA-256 hex of [`GeneratedSchema::text`].
    pub fn digest(&self) -> &str {
        &self.digest
    }

    /// The schema in Cedar's human-readable schema syntax, for people
    /// (the digest is of [`GeneratedSchema::text`], not of this).
    pub fn to_cedarschema(&self) -> Result<String, SchemaError> {
        let json: Value =
            serde_json::from_str(&self.text).map_err(|e| SchemaError::Canonical(e.to_string()))?;
        SchemaFragment::from_json_value(json)
            .map_err(|e| SchemaError::Cedar(e.to_string()))?
            .to_cedarschema()
            .map_err(|e| SchemaError::Cedar(e.to_string()))
    }
}

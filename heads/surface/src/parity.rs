//! The parity gate: every data operation in the table is exposed by every
//! head with the table's parameter schema, result schema and class, or the
//! table names the head as an exception with a reason; no head exposes a
//! data operation the table does not have. The heads report what they
//! really expose ([`Exposure`], read from clap, the OpenAPI document, the
//! MCP tool list); this module only compares.
//!
//! The entries that are not data operations live in [`crate::non_data`];
//! the generated manifest in [`crate::manifest`].
//!
//! Must not: ask a head what it "should" expose; only what it does.

use std::collections::BTreeSet;
use std::fmt;

use countersign_registry::Registry;
use serde_json::Value;

use crate::non_data::NON_DATA;
use crate::operations::{DataOperation, Exposure, Head, ParamSchema};

/// A difference in the shape of results that one head's transport imposes,
/// with its reason. The gate compares the result inside the wrapping; any
/// other difference still fails.
#[derive(Debug, Clone, Copy)]
pub struct ResultWrapping {
    /// The head.
    pub head: Head,
    /// Why.
    pub reason: &'static str,
}

/// The only transport difference in results: MCP wraps an array as
/// `{"items": [...]}` (`countersign_mcp::output_schema`).
pub const RESULT_WRAPPINGS: &[ResultWrapping] = &[ResultWrapping {
    head: Head::Mcp,
    reason: "MCP structured content must be a JSON object (protocol versions up to 2025-11-25 require `type: object` at the root of an output schema), so a result that is an array is returned as `{\"items\": [...]}`; the array inside is the table's.",
}];

/// The result schema `found` of `head` as compared with `expected`: the
/// array inside an `{"items": ...}` wrapping for a head whose transport
/// wraps arrays, else `found` itself.
fn unwrapped<'a>(head: Head, found: &'a Value, expected: &Value) -> &'a Value {
    let wraps = RESULT_WRAPPINGS.iter().any(|w| w.head == head);
    let is_wrapper = found.as_object().is_some_and(|o| {
        o.len() == 3
            && o.get("type") == Some(&Value::from("object"))
            && o.get("required") == Some(&serde_json::json!(["items"]))
            && o.get("properties")
                .and_then(Value::as_object)
                .is_some_and(|p| p.len() == 1 && p.contains_key("items"))
    });
    if wraps && is_wrapper && expected["type"] == "array" {
        &found["properties"]["items"]
    } else {
        found
    }
}

/// One difference the gate found.
#[derive(Debug, Clone, PartialEq)]
pub enum ParityError {
    /// A head lacks a data operation and the table names no exception.
    Missing {
        /// The operation (`propose:<op>` for proposals).
        operation: String,
        /// The head.
        head: Head,
    },
    /// An exception without a reason.
    ExceptionWithoutReason {
        /// The operation.
        operation: String,
        /// The head.
        head: Head,
    },
    /// A head exposes an operation the table says it lacks.
    ExposedDespiteException {
        /// The operation.
        operation: String,
        /// The head.
        head: Head,
    },
    /// A head exposes something that is neither in the table nor excepted.
    NotInTable {
        /// What the head called it.
        operation: String,
        /// The head.
        head: Head,
        /// The command, route or tool.
        entry: String,
    },
    /// The parameters differ from the table's.
    ParamsDiffer {
        /// The operation.
        operation: String,
        /// The head.
        head: Head,
        /// What the head accepts.
        found: Value,
        /// What the table says.
        expected: Value,
    },
    /// The result differs from the table's.
    ResultDiffers {
        /// The operation.
        operation: String,
        /// The head.
        head: Head,
    },
    /// The read/write class differs from the table's.
    ClassDiffers {
        /// The operation.
        operation: String,
        /// The head.
        head: Head,
    },
    /// A head exposes one operation more than once.
    Duplicate {
        /// The operation.
        operation: String,
        /// The head.
        head: Head,
    },
    /// A non-data entry has no reason.
    NonDataWithoutReason {
        /// Its name.
        name: String,
    },
}

impl fmt::Display for ParityError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ParityError::Missing { operation, head } => {
                write!(
                    f,
                    "{operation}: missing on {head}, and no exception says why"
                )
            }
            ParityError::ExceptionWithoutReason { operation, head } => {
                write!(f, "{operation}: the exception for {head} has no reason")
            }
            ParityError::ExposedDespiteException { operation, head } => write!(
                f,
                "{operation}: {head} exposes it although the table lists an exception"
            ),
            ParityError::NotInTable {
                operation,
                head,
                entry,
            } => write!(
                f,
                "{head} exposes {entry} ({operation}), which is not a data operation in the table"
            ),
            ParityError::ParamsDiffer {
                operation,
                head,
                found,
                expected,
            } => write!(
                f,
                "{operation}: parameters on {head} differ from the table: {found} != {expected}"
            ),
            ParityError::ResultDiffers { operation, head } => {
                write!(
                    f,
                    "{operation}: the result on {head} differs from the table"
                )
            }
            ParityError::ClassDiffers { operation, head } => {
                write!(f, "{operation}: read/write class on {head} differs")
            }
            ParityError::Duplicate { operation, head } => {
                write!(f, "{operation}: exposed more than once on {head}")
            }
            ParityError::NonDataWithoutReason { name } => {
                write!(f, "non-data entry {name} has no reason")
            }
        }
    }
}

/// One operation as every head must expose it: `propose` expands to
/// `propose:<registry operation>`.
#[derive(Debug, Clone)]
pub struct Expected<'a> {
    /// The key heads report in [`Exposure::operation`].
    pub key: String,
    /// The table entry.
    pub op: &'a DataOperation,
    /// The registry operation, for `propose`.
    pub registry_operation: Option<String>,
    /// The parameter schema.
    pub params: Value,
    /// The result schema.
    pub result: Value,
}

/// Every operation heads must expose, from the table and the registry.
pub fn expected<'a>(table: &'a [DataOperation], registry: &Registry) -> Vec<Expected<'a>> {
    let mut out = Vec::new();
    for op in table {
        match op.params {
            ParamSchema::Propose => {
                for reg in registry.proposable() {
                    out.push(Expected {
                        key: format!("{}:{}", op.name, reg.name),
                        op,
                        registry_operation: Some(reg.name.clone()),
                        params: op.params.schema(Some(reg)),
                        result: (op.result)(),
                    });
                }
            }
            ParamSchema::Fixed(_) => out.push(Expected {
                key: op.name.to_string(),
                op,
                registry_operation: None,
                params: op.params.schema(None),
                result: (op.result)(),
            }),
        }
    }
    out
}

/// Compare what `heads` really expose against the table.
pub fn check_parity(
    table: &[DataOperation],
    registry: &Registry,
    heads: &[Head],
    exposures: &[Exposure],
) -> Result<(), Vec<ParityError>> {
    let mut errors = Vec::new();
    let expected = expected(table, registry);
    let keys: BTreeSet<&str> = expected.iter().map(|e| e.key.as_str()).collect();
    for exp in &expected {
        for &head in heads {
            let found: Vec<&Exposure> = exposures
                .iter()
                .filter(|x| x.head == head && x.operation == exp.key)
                .collect();
            let exception = exp.op.exception(head);
            let operation = exp.key.clone();
            if let Some(exception) = exception {
                if exception.reason.trim().is_empty() {
                    errors.push(ParityError::ExceptionWithoutReason {
                        operation: operation.clone(),
                        head,
                    });
                }
                if !found.is_empty() {
                    errors.push(ParityError::ExposedDespiteException { operation, head });
                }
                continue;
            }
            let Some(first) = found.first() else {
                errors.push(ParityError::Missing { operation, head });
                continue;
            };
            if found.len() > 1 {
                errors.push(ParityError::Duplicate {
                    operation: operation.clone(),
                    head,
                });
            }
            if normalized(&first.params) != normalized(&exp.params) {
                errors.push(ParityError::ParamsDiffer {
                    operation: operation.clone(),
                    head,
                    found: first.params.clone(),
                    expected: exp.params.clone(),
                });
            }
            if *unwrapped(head, &first.result, &exp.result) != exp.result {
                errors.push(ParityError::ResultDiffers {
                    operation: operation.clone(),
                    head,
                });
            }
            if first.class != exp.op.class {
                errors.push(ParityError::ClassDiffers { operation, head });
            }
        }
    }
    for x in exposures {
        if heads.contains(&x.head) && !keys.contains(x.operation.as_str()) {
            errors.push(ParityError::NotInTable {
                operation: x.operation.clone(),
                head: x.head,
                entry: x.entry.clone(),
            });
        }
    }
    for entry in NON_DATA {
        if entry.reason.trim().is_empty() {
            errors.push(ParityError::NonDataWithoutReason {
                name: entry.name.to_string(),
            });
        }
    }
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors)
    }
}

/// A parameter schema with its top-level `required` list sorted (the order
/// of required names carries no meaning).
fn normalized(schema: &Value) -> Value {
    let mut schema = schema.clone();
    if let Some(required) = schema.get_mut("required").and_then(Value::as_array_mut) {
        required.sort_by(|a, b| a.as_str().cmp(&b.as_str()));
    }
    schema
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::operations::{DATA_OPERATIONS, Exception};
    const HEADS: [Head; 3] = Head::ALL;
    use countersign_registry::Class;
    use serde_json::json;

    fn registry() -> Registry {
        Registry::from_toml_str(Registry::default_toml()).unwrap()
    }

    /// Exposures exactly as the table says, for `heads`.
    fn faithful(table: &[DataOperation], heads: &[Head]) -> Vec<Exposure> {
        let reg = registry();
        let mut out = Vec::new();
        for e in expected(table, &reg) {
            for &head in heads {
                if e.op.exception(head).is_some() {
                    continue;
                }
                out.push(Exposure {
                    operation: e.key.clone(),
                    head,
                    entry: e.key.clone(),
                    class: e.op.class,
                    params: e.params.clone(),
                    result: e.result.clone(),
                });
            }
        }
        out
    }

    #[test]
    fn a_faithful_set_of_heads_passes() {
        let x = faithful(DATA_OPERATIONS, &HEADS);
        assert_eq!(
            check_parity(DATA_OPERATIONS, &registry(), &HEADS, &x),
            Ok(())
        );
    }

    #[test]
    fn fails_when_a_head_lacks_an_operation() {
        let mut x = faithful(DATA_OPERATIONS, &HEADS);
        x.retain(|e| !(e.head == Head::Mcp && e.operation == "get_result"));
        let errors = check_parity(DATA_OPERATIONS, &registry(), &HEADS, &x).unwrap_err();
        assert_eq!(
            errors,
            vec![ParityError::Missing {
                operation: "get_result".into(),
                head: Head::Mcp
            }]
        );
    }

    #[test]
    fn fails_when_an_exception_has_no_reason() {
        let mut table = DATA_OPERATIONS.to_vec();
        let i = table
            .iter()
            .position(|o| o.name == "execute_with_proof")
            .unwrap();
        table[i].exceptions = &[Exception {
            head: Head::Mcp,
            reason: " ",
        }];
        let x = faithful(&table, &HEADS);
        let errors = check_parity(&table, &registry(), &HEADS, &x).unwrap_err();
        assert_eq!(
            errors,
            vec![ParityError::ExceptionWithoutReason {
                operation: "execute_with_proof".into(),
                head: Head::Mcp
            }]
        );
    }

    #[test]
    fn fails_when_schemas_differ_between_heads() {
        let mut x = faithful(DATA_OPERATIONS, &HEADS);
        let e = x
            .iter_mut()
            .find(|e| e.head == Head::Api && e.operation == "list_proposals")
            .unwrap();
        e.params["properties"]["limit"]["maximum"] = json!(10_000);
        let errors = check_parity(DATA_OPERATIONS, &registry(), &HEADS, &x).unwrap_err();
        assert!(
            matches!(&errors[..], [ParityError::ParamsDiffer { operation, head, .. }] if operation == "list_proposals" && *head == Head::Api),
            "{errors:?}"
        );
    }

    #[test]
    fn fails_when_a_head_exposes_an_operation_not_in_the_table() {
        let mut x = faithful(DATA_OPERATIONS, &HEADS);
        x.push(Exposure {
            operation: "export_everything".into(),
            head: Head::Api,
            entry: "GET /v1/export".into(),
            class: Class::Read,
            params: json!({}),
            result: json!({}),
        });
        let errors = check_parity(DATA_OPERATIONS, &registry(), &HEADS, &x).unwrap_err();
        assert!(
            matches!(&errors[..], [ParityError::NotInTable { head, .. }] if *head == Head::Api),
            "{errors:?}"
        );
    }

    fn wrap(schema: Value) -> Value {
        json!({"type": "object", "required": ["items"], "properties": {"items": schema}})
    }

    #[test]
    fn only_mcp_may_wrap_an_array_result_and_only_as_items() {
        let reg = registry();
        let mut x = faithful(DATA_OPERATIONS, &HEADS);
        for e in x
            .iter_mut()
            .filter(|e| e.head == Head::Mcp && e.result["type"] == "array")
        {
            e.result = wrap(e.result.clone());
        }
        assert_eq!(check_parity(DATA_OPERATIONS, &reg, &HEADS, &x), Ok(()));

        let mut api_wraps = faithful(DATA_OPERATIONS, &HEADS);
        let e = api_wraps
            .iter_mut()
            .find(|e| e.head == Head::Api && e.operation == "list_proposals")
            .unwrap();
        e.result = wrap(e.result.clone());
        assert!(check_parity(DATA_OPERATIONS, &reg, &HEADS, &api_wraps).is_err());

        let mut extra = x.clone();
        let e = extra
            .iter_mut()
            .find(|e| e.head == Head::Mcp && e.operation == "list_proposals")
            .unwrap();
        e.result["properties"]["next"] = json!({"type": "string"});
        assert!(check_parity(DATA_OPERATIONS, &reg, &HEADS, &extra).is_err());
    }

    #[test]
    fn every_non_data_entry_has_a_reason() {
        for n in NON_DATA {
            assert!(!n.reason.trim().is_empty(), "{}", n.name);
        }
    }
}

//! The parity gate: every data operation in the table is exposed by every
//! head with the table's parameter schema, result schema and class, or the
//! table names the head as an exception with a reason; no head exposes a
//! data operation the table does not have. The heads report what they
//! really expose ([`Exposure`], read from clap, the OpenAPI document, the
//! MCP tool list); this module only compares.
//!
//! Also: the commands, routes and tools that are not data operations
//! ([`NON_DATA`]), each with the reason it lives where it does, and the
//! generated operation-surface manifest (`docs/operations.json` and
//! `docs/operations.md`).
//!
//! Must not: ask a head what it "should" expose; only what it does.

use std::collections::BTreeSet;
use std::fmt;

use countersign_registry::{Class, Registry};
use serde_json::{Value, json};

use crate::operations::{DataOperation, Exposure, ParamSchema, propose_tool_name};

/// The heads the gate knows.
pub const HEADS: [&str; 3] = ["cli", "api", "mcp"];

/// A command, route or tool that is not a data operation, and why it is
/// only where it is.
#[derive(Debug, Clone, Copy)]
pub struct NonData {
    /// A name for the manifest.
    pub name: &'static str,
    /// The CLI command, if any.
    pub cli: Option<&'static str>,
    /// The API route, if any.
    pub api: Option<(&'static str, &'static str)>,
    /// The MCP tool, if any.
    pub mcp: Option<&'static str>,
    /// Why it is not on every head.
    pub reason: &'static str,
}

const APPROVER_ONLY: &str = "Deciding is for approver interfaces only (an interactive terminal with a typed challenge, or the paired web console): no head and no model-visible tool can approve, deny or revoke.";
const TOKEN_CLI_ONLY: &str = "API credentials are created and revoked by the local user at the CLI; a bearer of one credential must not be able to mint or revoke others, and MCP clients are models.";
const TRANSPORT: &str = "Transport control and administration differ per head by design: they start, describe or maintain a head, not act on proposals.";

/// Everything on a head that is not a data operation.
pub const NON_DATA: &[NonData] = &[
    NonData {
        name: "approve",
        cli: Some("countersign approve <id> [--for-mcp | --proof-out FILE]"),
        api: None,
        mcp: None,
        reason: APPROVER_ONLY,
    },
    NonData {
        name: "deny",
        cli: Some("countersign deny <id> --reason TEXT"),
        api: None,
        mcp: None,
        reason: APPROVER_ONLY,
    },
    NonData {
        name: "revoke",
        cli: Some("countersign revoke <id>"),
        api: None,
        mcp: None,
        reason: APPROVER_ONLY,
    },
    NonData {
        name: "list_pending_decisions",
        cli: Some("countersign pending"),
        api: None,
        mcp: None,
        reason: "The approver's queue is read over the approver's certificate; heads list their own proposals with `list_proposals` (status=pending).",
    },
    NonData {
        name: "api_token_create",
        cli: Some("countersign api token create --ttl DURATION (--out FILE | --stdout)"),
        api: None,
        mcp: None,
        reason: TOKEN_CLI_ONLY,
    },
    NonData {
        name: "api_token_revoke",
        cli: Some("countersign api token revoke <token id>"),
        api: None,
        mcp: None,
        reason: TOKEN_CLI_ONLY,
    },
    NonData {
        name: "api_token_list",
        cli: Some("countersign api token list"),
        api: None,
        mcp: None,
        reason: TOKEN_CLI_ONLY,
    },
    NonData {
        name: "api_serve",
        cli: Some("countersign api serve [--listen ADDR]"),
        api: None,
        mcp: None,
        reason: TRANSPORT,
    },
    NonData {
        name: "mcp_serve",
        cli: Some("countersign mcp"),
        api: None,
        mcp: None,
        reason: TRANSPORT,
    },
    NonData {
        name: "init",
        cli: Some("countersign init"),
        api: None,
        mcp: None,
        reason: TRANSPORT,
    },
    NonData {
        name: "up",
        cli: Some("countersign up"),
        api: None,
        mcp: None,
        reason: TRANSPORT,
    },
    NonData {
        name: "audit",
        cli: Some("countersign audit [--verify]"),
        api: None,
        mcp: None,
        reason: "The audit trail spans every session of the installation; it is read by the local user, not by a head's caller.",
    },
    NonData {
        name: "reconcile",
        cli: Some("countersign reconcile [--resolve ID --applied|--not-applied]"),
        api: None,
        mcp: None,
        reason: "Resolving an uncertain execution needs a person who has checked the world; it is local administration.",
    },
    NonData {
        name: "keys_list",
        cli: Some("countersign keys list"),
        api: None,
        mcp: None,
        reason: TRANSPORT,
    },
    NonData {
        name: "health",
        cli: None,
        api: Some(("GET", "/healthz")),
        mcp: None,
        reason: "A liveness probe for HTTP supervisors; it reveals nothing private and is not an operation.",
    },
    NonData {
        name: "openapi",
        cli: None,
        api: Some(("GET", "/openapi.json")),
        mcp: None,
        reason: "The HTTP API's own description; the CLI has --help and MCP lists its tools.",
    },
];

/// One difference the gate found.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub enum ParityError {
    /// A head lacks a data operation and the table names no exception.
    Missing {
        /// The operation (`propose:<op>` for proposals).
        operation: String,
        /// The head.
        head: String,
    },
    /// An exception without a reason.
    ExceptionWithoutReason {
        /// The operation.
        operation: String,
        /// The head.
        head: String,
    },
    /// A head exposes an operation the table says it lacks.
    ExposedDespiteException {
        /// The operation.
        operation: String,
        /// The head.
        head: String,
    },
    /// A head exposes something that is neither in the table nor excepted.
    NotInTable {
        /// What the head called it.
        operation: String,
        /// The head.
        head: String,
        /// The command, route or tool.
        entry: String,
    },
    /// The parameters differ from the table's.
    ParamsDiffer {
        /// The operation.
        operation: String,
        /// The head.
        head: String,
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
        head: String,
    },
    /// The read/write class differs from the table's.
    ClassDiffers {
        /// The operation.
        operation: String,
        /// The head.
        head: String,
    },
    /// A head exposes one operation more than once.
    Duplicate {
        /// The operation.
        operation: String,
        /// The head.
        head: String,
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
                for reg in registry.operations() {
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

/// Compare what `heads` really expose against the table. MCP joins by
/// passing `"mcp"` in `heads` and its exposures.
pub fn check_parity(
    table: &[DataOperation],
    registry: &Registry,
    heads: &[&str],
    exposures: &[Exposure],
) -> Result<(), Vec<ParityError>> {
    let mut errors = Vec::new();
    let expected = expected(table, registry);
    let keys: BTreeSet<&str> = expected.iter().map(|e| e.key.as_str()).collect();
    for exp in &expected {
        for head in heads {
            let found: Vec<&Exposure> = exposures
                .iter()
                .filter(|x| x.head == *head && x.operation == exp.key)
                .collect();
            let exception = exp.op.exceptions.iter().find(|e| e.head == *head);
            let (operation, head_name) = (exp.key.clone(), head.to_string());
            if let Some(exception) = exception {
                if exception.reason.trim().is_empty() {
                    errors.push(ParityError::ExceptionWithoutReason {
                        operation: operation.clone(),
                        head: head_name.clone(),
                    });
                }
                if !found.is_empty() {
                    errors.push(ParityError::ExposedDespiteException {
                        operation,
                        head: head_name,
                    });
                }
                continue;
            }
            let Some(first) = found.first() else {
                errors.push(ParityError::Missing {
                    operation,
                    head: head_name,
                });
                continue;
            };
            if found.len() > 1 {
                errors.push(ParityError::Duplicate {
                    operation: operation.clone(),
                    head: head_name.clone(),
                });
            }
            if normalized(&first.params) != normalized(&exp.params) {
                errors.push(ParityError::ParamsDiffer {
                    operation: operation.clone(),
                    head: head_name.clone(),
                    found: first.params.clone(),
                    expected: exp.params.clone(),
                });
            }
            if first.result != exp.result {
                errors.push(ParityError::ResultDiffers {
                    operation: operation.clone(),
                    head: head_name.clone(),
                });
            }
            if first.class != exp.op.class {
                errors.push(ParityError::ClassDiffers {
                    operation,
                    head: head_name,
                });
            }
        }
    }
    for x in exposures {
        if heads.contains(&x.head) && !keys.contains(x.operation.as_str()) {
            errors.push(ParityError::NotInTable {
                operation: x.operation.clone(),
                head: x.head.to_string(),
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

fn class_str(class: Class) -> &'static str {
    class.as_str()
}

/// The operation-surface manifest (`docs/operations.json`), generated from
/// the table, the registry and [`NON_DATA`].
pub fn manifest(table: &[DataOperation], registry: &Registry) -> Value {
    let data: Vec<Value> = table
        .iter()
        .map(|op| {
            let expanded: Vec<Value> = expected(std::slice::from_ref(op), registry)
                .into_iter()
                .map(|e| {
                    let reg = e.registry_operation.clone();
                    json!({
                        "key": e.key,
                        "cli": op.cli.map(|c| match &reg { Some(r) => c.replace("<operation>", r), None => c.to_string() }),
                        "api": op.api.map(|(m, p)| format!("{m} {}", match &reg { Some(r) => p.replace("{operation}", r), None => p.to_string() })),
                        "mcp": op.mcp.map(|t| match &reg { Some(r) => propose_tool_name(r), None => t.to_string() }),
                        "params": e.params,
                    })
                })
                .collect();
            json!({
                "name": op.name,
                "description": op.description,
                "class": class_str(op.class),
                "cli": op.cli,
                "api": op.api.map(|(m, p)| format!("{m} {p}")),
                "mcp": op.mcp,
                "result": (op.result)(),
                "exceptions": op.exceptions.iter().map(|e| json!({"head": e.head, "reason": e.reason})).collect::<Vec<_>>(),
                "entries": expanded,
            })
        })
        .collect();
    let non_data: Vec<Value> = NON_DATA
        .iter()
        .map(|n| {
            json!({
                "name": n.name,
                "cli": n.cli,
                "api": n.api.map(|(m, p)| format!("{m} {p}")),
                "mcp": n.mcp,
                "reason": n.reason,
            })
        })
        .collect();
    json!({
        "generated_by": "countersign-surface (the DATA_OPERATIONS table and the default registry); regenerate with COUNTERSIGN_REGENERATE=1",
        "heads": HEADS,
        "data_operations": data,
        "non_data": non_data,
    })
}

/// The manifest as Markdown (`docs/operations.md`).
pub fn manifest_markdown(table: &[DataOperation], registry: &Registry) -> String {
    let manifest = manifest(table, registry);
    let mut md = String::from(
        "# Operation surface\n\n\
         Generated from the `DATA_OPERATIONS` table (`heads/surface`) and the default\n\
         registry; do not edit by hand. Regenerate with\n\
         `COUNTERSIGN_REGENERATE=1 cargo test -p countersign-api --test docs_are_current`.\n\
         The parity gate (`check_parity`, run by `cargo test -p countersign --test parity`)\n\
         fails when a head lacks a data operation without an exception and a reason,\n\
         when its parameter or result schema differs from this table, or when it\n\
         exposes something not listed here. The full schemas are in `operations.json`\n\
         beside this file.\n\n\
         The session a proposal belongs to is transport context, not a parameter:\n\
         `--session` (or `COUNTERSIGN_SESSION`) on the CLI, `api:<token id>` on the\n\
         HTTP API (from the bearer credential), the MCP server's own session on MCP.\n\n\
         ## Data operations\n\n\
         | operation | class | CLI | HTTP API | MCP tool |\n|---|---|---|---|---|\n",
    );
    let cell = |v: &Value| match v.as_str() {
        Some(s) => format!("`{}`", s.replace('|', "\\|")),
        None => "—".to_string(),
    };
    let ops = manifest["data_operations"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    for op in &ops {
        let entries = op["entries"].as_array().cloned().unwrap_or_default();
        for e in &entries {
            md.push_str(&format!(
                "| {} | {} | {} | {} | {} |\n",
                e["key"].as_str().unwrap_or_default(),
                op["class"].as_str().unwrap_or_default(),
                cell(&e["cli"]),
                cell(&e["api"]),
                cell(&e["mcp"]),
            ));
        }
    }
    md.push_str("\n## Exceptions\n\n| operation | head | reason |\n|---|---|---|\n");
    for op in &ops {
        for ex in op["exceptions"].as_array().cloned().unwrap_or_default() {
            md.push_str(&format!(
                "| {} | {} | {} |\n",
                op["name"].as_str().unwrap_or_default(),
                ex["head"].as_str().unwrap_or_default(),
                ex["reason"].as_str().unwrap_or_default()
            ));
        }
    }
    md.push_str(
        "\n## Not data operations\n\n| name | CLI | HTTP API | MCP | reason |\n|---|---|---|---|---|\n",
    );
    for n in manifest["non_data"].as_array().cloned().unwrap_or_default() {
        md.push_str(&format!(
            "| {} | {} | {} | {} | {} |\n",
            n["name"].as_str().unwrap_or_default(),
            cell(&n["cli"]),
            cell(&n["api"]),
            cell(&n["mcp"]),
            n["reason"].as_str().unwrap_or_default()
        ));
    }
    md
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::operations::{DATA_OPERATIONS, Exception};

    fn registry() -> Registry {
        Registry::from_toml_str(Registry::default_toml()).unwrap()
    }

    /// Exposures exactly as the table says, for `heads`.
    fn faithful(table: &[DataOperation], heads: &[&'static str]) -> Vec<Exposure> {
        let reg = registry();
        let mut out = Vec::new();
        for e in expected(table, &reg) {
            for head in heads {
                if e.op.exceptions.iter().any(|x| x.head == *head) {
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
        x.retain(|e| !(e.head == "mcp" && e.operation == "get_result"));
        let errors = check_parity(DATA_OPERATIONS, &registry(), &HEADS, &x).unwrap_err();
        assert_eq!(
            errors,
            vec![ParityError::Missing {
                operation: "get_result".into(),
                head: "mcp".into()
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
            head: "mcp",
            reason: " ",
        }];
        let x = faithful(&table, &HEADS);
        let errors = check_parity(&table, &registry(), &HEADS, &x).unwrap_err();
        assert_eq!(
            errors,
            vec![ParityError::ExceptionWithoutReason {
                operation: "execute_with_proof".into(),
                head: "mcp".into()
            }]
        );
    }

    #[test]
    fn fails_when_schemas_differ_between_heads() {
        let mut x = faithful(DATA_OPERATIONS, &HEADS);
        let e = x
            .iter_mut()
            .find(|e| e.head == "api" && e.operation == "list_proposals")
            .unwrap();
        e.params["properties"]["limit"]["maximum"] = json!(10_000);
        let errors = check_parity(DATA_OPERATIONS, &registry(), &HEADS, &x).unwrap_err();
        assert!(
            matches!(&errors[..], [ParityError::ParamsDiffer { operation, head, .. }] if operation == "list_proposals" && head == "api"),
            "{errors:?}"
        );
    }

    #[test]
    fn fails_when_a_head_exposes_an_operation_not_in_the_table() {
        let mut x = faithful(DATA_OPERATIONS, &HEADS);
        x.push(Exposure {
            operation: "export_everything".into(),
            head: "api",
            entry: "GET /v1/export".into(),
            class: Class::Read,
            params: json!({}),
            result: json!({}),
        });
        let errors = check_parity(DATA_OPERATIONS, &registry(), &HEADS, &x).unwrap_err();
        assert!(
            matches!(&errors[..], [ParityError::NotInTable { head, .. }] if head == "api"),
            "{errors:?}"
        );
    }

    #[test]
    fn every_non_data_entry_has_a_reason() {
        for n in NON_DATA {
            assert!(!n.reason.trim().is_empty(), "{}", n.name);
        }
    }
}

//! The table of data operations and where each lives on every head.
//!
//! `propose` expands per registry operation: the CLI takes the operation as
//! an argument, the API as a path segment, MCP as one tool per operation
//! (so a model sees each operation's own argument schema). Every other entry
//! is one command, one route and one tool. A head that lacks an operation
//! must name it in `exceptions`, with the reason.

use countersign_registry::{Class, Operation};
use serde_json::{Value, json};

use crate::results;

/// The parameters of a data operation, as one JSON Schema on every head.
#[derive(Debug, Clone, Copy)]
pub enum ParamSchema {
    /// The same schema for every call.
    Fixed(fn() -> Value),
    /// `{arguments: <the registry operation's schema>, note?: string}`.
    Propose,
}

impl ParamSchema {
    /// The schema, for `op` when the operation is per registry operation.
    pub fn schema(&self, op: Option<&Operation>) -> Value {
        match (self, op) {
            (ParamSchema::Fixed(f), _) => f(),
            (ParamSchema::Propose, Some(op)) => propose_params(op),
            (ParamSchema::Propose, None) => propose_params_any(),
        }
    }
}

/// A head deliberately without an operation, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exception {
    /// `cli`, `api` or `mcp`.
    pub head: &'static str,
    /// Why the operation is not there.
    pub reason: &'static str,
}

/// One data operation and its name on each head.
#[derive(Debug, Clone, Copy)]
pub struct DataOperation {
    /// The operation's name in the manifest.
    pub name: &'static str,
    /// What it does.
    pub description: &'static str,
    /// Whether it changes state.
    pub class: Class,
    /// The CLI command (`<operation>` stands for a registry operation).
    pub cli: Option<&'static str>,
    /// The API method and route (`{operation}` and `{proposal_id}` are path
    /// parameters; the other parameters are the query of a `GET` or the flat
    /// JSON body of a `POST`).
    pub api: Option<(&'static str, &'static str)>,
    /// The MCP tool (for `propose`, see [`propose_tool_name`]).
    pub mcp: Option<&'static str>,
    /// The parameters.
    pub params: ParamSchema,
    /// The result's JSON Schema.
    pub result: fn() -> Value,
    /// Heads that deliberately lack it.
    pub exceptions: &'static [Exception],
}

/// The data operations as a closed set. The service matches on it
/// exhaustively, so an operation without a handler does not compile; each
/// key names its entry in [`DATA_OPERATIONS`] (a test checks the round trip
/// key → table → key for every key and every entry).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum OperationKey {
    /// `list_operations`
    ListOperations,
    /// `propose`
    Propose,
    /// `get_proposal`
    GetProposal,
    /// `list_proposals`
    ListProposals,
    /// `withdraw`
    Withdraw,
    /// `execute` (the signer's handoff)
    ExecuteHandoff,
    /// `execute_with_proof`
    ExecuteWithProof,
    /// `get_result`
    GetResult,
}

impl OperationKey {
    /// Every key.
    pub const ALL: [OperationKey; 8] = [
        OperationKey::ListOperations,
        OperationKey::Propose,
        OperationKey::GetProposal,
        OperationKey::ListProposals,
        OperationKey::Withdraw,
        OperationKey::ExecuteHandoff,
        OperationKey::ExecuteWithProof,
        OperationKey::GetResult,
    ];

    /// The operation's name in the table and the manifest.
    pub fn name(self) -> &'static str {
        match self {
            OperationKey::ListOperations => "list_operations",
            OperationKey::Propose => "propose",
            OperationKey::GetProposal => "get_proposal",
            OperationKey::ListProposals => "list_proposals",
            OperationKey::Withdraw => "withdraw",
            OperationKey::ExecuteHandoff => "execute",
            OperationKey::ExecuteWithProof => "execute_with_proof",
            OperationKey::GetResult => "get_result",
        }
    }

    /// The key of the table entry named `name`.
    pub fn of(name: &str) -> Option<OperationKey> {
        OperationKey::ALL.into_iter().find(|k| k.name() == name)
    }

    /// This operation's entry in [`DATA_OPERATIONS`].
    pub fn entry(self) -> Option<&'static DataOperation> {
        DATA_OPERATIONS.iter().find(|op| op.name == self.name())
    }
}

/// What one head actually exposes for one data operation, read from the
/// head itself (its clap commands, its OpenAPI document, its MCP tool list),
/// for the parity gate to compare against [`DATA_OPERATIONS`] and across heads.
#[derive(Debug, Clone, PartialEq)]
pub struct Exposure {
    /// The data operation (`propose:<registry operation>` for proposals).
    pub operation: String,
    /// `cli`, `api` or `mcp`.
    pub head: &'static str,
    /// The command, route or tool name.
    pub entry: String,
    /// Whether the head marks it read-only.
    pub class: Class,
    /// The parameter schema the head really accepts.
    pub params: Value,
    /// The result schema the head really returns.
    pub result: Value,
}

/// Why MCP has no tool that takes a proof.
pub const MCP_TAKES_NO_PROOF: &str = "MCP clients keep tool arguments and transcripts, so a proof passed as a tool parameter would be retained and visible to the model; MCP executes only through the signer's handoff (`execute`).";

/// Every data operation. Deciding (approve, deny), revoking, token
/// management and transport control are not data operations: they belong to
/// approver interfaces or to one head, and the manifest lists them apart.
pub const DATA_OPERATIONS: &[DataOperation] = &[
    DataOperation {
        name: "list_operations",
        description: "List the operations that can be proposed, with their argument schemas.",
        class: Class::Read,
        cli: Some("countersign ops list"),
        api: Some(("GET", "/v1/operations")),
        mcp: Some("list_operations"),
        params: ParamSchema::Fixed(no_params),
        result: results::operations_schema,
        exceptions: &[],
    },
    DataOperation {
        name: "propose",
        description: "Propose an exact action for a person to review; returns the proposal and the preview the person will see.",
        class: Class::Write,
        cli: Some("countersign propose <operation> --args-file FILE|- [--note TEXT]"),
        api: Some(("POST", "/v1/operations/{operation}/proposals")),
        mcp: Some("propose_<operation>"),
        params: ParamSchema::Propose,
        result: results::proposal_schema,
        exceptions: &[],
    },
    DataOperation {
        name: "get_proposal",
        description: "A proposal, its status and its authoritative preview.",
        class: Class::Read,
        cli: Some("countersign show <id>"),
        api: Some(("GET", "/v1/proposals/{proposal_id}")),
        mcp: Some("get_proposal"),
        params: ParamSchema::Fixed(proposal_id_params),
        result: results::proposal_schema,
        exceptions: &[],
    },
    DataOperation {
        name: "list_proposals",
        description: "The caller's proposals, newest first, optionally in one status.",
        class: Class::Read,
        cli: Some("countersign list [--status S] [--limit N]"),
        api: Some(("GET", "/v1/proposals")),
        mcp: Some("list_proposals"),
        params: ParamSchema::Fixed(list_params),
        result: results::proposals_schema,
        exceptions: &[],
    },
    DataOperation {
        name: "withdraw",
        description: "Withdraw the caller's own proposal before a decision.",
        class: Class::Write,
        cli: Some("countersign withdraw <id>"),
        api: Some(("POST", "/v1/proposals/{proposal_id}/withdraw")),
        mcp: Some("withdraw_proposal"),
        params: ParamSchema::Fixed(proposal_id_params),
        result: results::proposal_schema,
        exceptions: &[],
    },
    DataOperation {
        name: "execute",
        description: "Execute an approved proposal once, with the approval a person authorized for a later execution (claimed from the signer; never shown to the caller).",
        class: Class::Write,
        cli: Some("countersign exec <id> --handoff"),
        api: Some(("POST", "/v1/proposals/{proposal_id}/execute-handoff")),
        mcp: Some("execute_approved"),
        params: ParamSchema::Fixed(proposal_id_params),
        result: results::outcome_schema,
        exceptions: &[],
    },
    DataOperation {
        name: "execute_with_proof",
        description: "Execute an approved proposal once with a proof the person carried (a file or stdin on the CLI, a request body field on the API).",
        class: Class::Write,
        cli: Some("countersign exec <id> --proof-file FILE|-"),
        api: Some(("POST", "/v1/proposals/{proposal_id}/execute")),
        mcp: None,
        params: ParamSchema::Fixed(proof_params),
        result: results::outcome_schema,
        exceptions: &[Exception {
            head: "mcp",
            reason: MCP_TAKES_NO_PROOF,
        }],
    },
    DataOperation {
        name: "get_result",
        description: "The recorded disposition of an executed proposal: applied, failed or uncertain.",
        class: Class::Read,
        cli: Some("countersign result <id>"),
        api: Some(("GET", "/v1/proposals/{proposal_id}/result")),
        mcp: Some("get_result"),
        params: ParamSchema::Fixed(proposal_id_params),
        result: results::disposition_schema,
        exceptions: &[],
    },
];

/// The MCP tool that proposes registry operation `operation`
/// (`schedule.create` → `propose_schedule_create`).
pub fn propose_tool_name(operation: &str) -> String {
    format!("propose_{}", operation.replace('.', "_"))
}

fn no_params() -> Value {
    json!({"type": "object", "additionalProperties": false, "properties": {}})
}

/// Whether `text` has the shape of a proposal id (`prop_` and 32 lowercase
/// hex digits): what the `proposal_id` parameter's schema pattern accepts.
pub fn is_proposal_id(text: &str) -> bool {
    text.parse::<countersign_verifier::ProposalId>().is_ok()
}

fn proposal_id_schema() -> Value {
    json!({"type": "string", "pattern": "^prop_[0-9a-f]{32}$"})
}

fn proposal_id_params() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["proposal_id"],
        "properties": {"proposal_id": proposal_id_schema()}
    })
}

fn proof_params() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["proposal_id", "proof"],
        "properties": {
            "proposal_id": proposal_id_schema(),
            // The token alphabet and size bound of `countersign_verifier::Proof`:
            // every proof this schema accepts is ASCII and fits any body limit.
            "proof": {"type": "string", "minLength": 1, "maxLength": 196_608,
                      "pattern": "^[A-Za-z0-9._-]+$",
                      "description": "the proof, a secret: never logged"}
        }
    })
}

fn list_params() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "properties": {
            "status": {"enum": ["pending", "denied", "withdrawn", "approved", "revoked", "expired",
                                "applied", "failed", "uncertain"]},
            "limit": {"type": "integer", "minimum": 1, "maximum": 500}
        }
    })
}

fn note_schema() -> Value {
    json!({"type": "string", "maxLength": 2000, "description": "shown to the person as model-supplied and unverified"})
}

fn propose_params(op: &Operation) -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["arguments"],
        "properties": {"arguments": op.schema, "note": note_schema()}
    })
}

fn propose_params_any() -> Value {
    json!({
        "type": "object",
        "additionalProperties": false,
        "required": ["arguments"],
        "properties": {"arguments": {"type": "object"}, "note": note_schema()}
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_has_a_table_entry_and_every_entry_a_key() {
        for key in OperationKey::ALL {
            let entry = key
                .entry()
                .unwrap_or_else(|| panic!("{key:?} has no entry"));
            assert_eq!(OperationKey::of(entry.name), Some(key));
        }
        for op in DATA_OPERATIONS {
            let key = OperationKey::of(op.name).unwrap_or_else(|| panic!("{} has no key", op.name));
            assert_eq!(key.name(), op.name);
        }
        assert_eq!(DATA_OPERATIONS.len(), OperationKey::ALL.len());
    }

    #[test]
    fn a_proposal_id_is_prop_and_32_lowercase_hex_digits() {
        assert!(is_proposal_id(&format!("prop_{}", "0a".repeat(16))));
        for bad in ["prop_0123", "", "prop_", "PROP_0000", "x"] {
            assert!(!is_proposal_id(bad), "{bad}");
        }
        assert!(!is_proposal_id(&format!("prop_{}", "A".repeat(32))));
        assert!(!is_proposal_id(&format!("prop_{}", "0".repeat(33))));
        assert!(!is_proposal_id(&format!("prop_{}g", "0".repeat(31))));
    }

    #[test]
    fn every_operation_is_on_every_head_or_names_why_not() {
        for op in DATA_OPERATIONS {
            for (head, present) in [
                ("cli", op.cli.is_some()),
                ("api", op.api.is_some()),
                ("mcp", op.mcp.is_some()),
            ] {
                let excused = op
                    .exceptions
                    .iter()
                    .any(|e| e.head == head && !e.reason.is_empty());
                assert!(
                    present != excused,
                    "{} on {head}: present={present}, excused={excused}",
                    op.name
                );
            }
        }
    }

    #[test]
    fn propose_tools_are_named_after_the_operation() {
        assert_eq!(
            propose_tool_name("schedule.create"),
            "propose_schedule_create"
        );
    }
}

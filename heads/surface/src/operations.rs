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

/// A head an agent reaches the data operations through. Everything a
/// head exposes, lacks or wraps is keyed by it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Head {
    /// The `countersign` command line.
    Cli,
    /// The private HTTP API.
    Api,
    /// The MCP server.
    Mcp,
}

impl Head {
    /// Every head.
    pub const ALL: [Head; 3] = [Head::Cli, Head::Api, Head::Mcp];

    /// `cli`, `api` or `mcp`, as the manifest and the gate's messages name it.
    pub fn name(self) -> &'static str {
        match self {
            Head::Cli => "cli",
            Head::Api => "api",
            Head::Mcp => "mcp",
        }
    }
}

impl std::fmt::Display for Head {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Where a data operation lives on one head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// The CLI command (`<operation>` stands for a registry operation).
    Cli(&'static str),
    /// The API method and route (`{operation}` and `{proposal_id}` are path
    /// parameters; the other parameters are the query of a `GET` or the
    /// flat JSON body of a `POST`).
    Api(&'static str, &'static str),
    /// The MCP tool (for `propose`, see [`propose_tool_name`]).
    Mcp(&'static str),
}

impl Entry {
    /// The head this entry is on.
    pub fn head(self) -> Head {
        match self {
            Entry::Cli(_) => Head::Cli,
            Entry::Api(..) => Head::Api,
            Entry::Mcp(_) => Head::Mcp,
        }
    }
}

/// Where one operation (or non-data entry) lives: at most one entry per
/// head, looked up by [`Head`].
#[derive(Debug, Clone, Copy)]
pub struct Entries(pub &'static [Entry]);

impl Entries {
    /// The entry on `head`, if that head has one.
    pub fn on(self, head: Head) -> Option<Entry> {
        self.0.iter().copied().find(|entry| entry.head() == head)
    }

    /// The CLI command.
    pub fn cli(self) -> Option<&'static str> {
        match self.on(Head::Cli) {
            Some(Entry::Cli(command)) => Some(command),
            _ => None,
        }
    }

    /// The API method and route.
    pub fn api(self) -> Option<(&'static str, &'static str)> {
        match self.on(Head::Api) {
            Some(Entry::Api(method, route)) => Some((method, route)),
            _ => None,
        }
    }

    /// The MCP tool.
    pub fn mcp(self) -> Option<&'static str> {
        match self.on(Head::Mcp) {
            Some(Entry::Mcp(tool)) => Some(tool),
            _ => None,
        }
    }
}

/// A head deliberately without an operation, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Exception {
    /// The head that lacks it.
    pub head: Head,
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
    /// Where it lives, one entry per head that has it.
    pub entries: Entries,
    /// The parameters.
    pub params: ParamSchema,
    /// The result's JSON Schema.
    pub result: fn() -> Value,
    /// Heads that deliberately lack it.
    pub exceptions: &'static [Exception],
}

impl DataOperation {
    /// The exception that says why `head` lacks it, if one does.
    pub fn exception(&self, head: Head) -> Option<&'static Exception> {
        self.exceptions.iter().find(|e| e.head == head)
    }
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
    /// The head.
    pub head: Head,
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
        entries: Entries(&[
            Entry::Cli("countersign ops list"),
            Entry::Api("GET", "/v1/operations"),
            Entry::Mcp("list_operations"),
        ]),
        params: ParamSchema::Fixed(no_params),
        result: results::operations_schema,
        exceptions: &[],
    },
    DataOperation {
        name: "propose",
        description: "Propose an exact action for a person to review; returns the proposal and the preview the person will see.",
        class: Class::Write,
        entries: Entries(&[
            Entry::Cli("countersign propose <operation> --args-file FILE|- [--note TEXT]"),
            Entry::Api("POST", "/v1/operations/{operation}/proposals"),
            Entry::Mcp("propose_<operation>"),
        ]),
        params: ParamSchema::Propose,
        result: results::proposal_schema,
        exceptions: &[],
    },
    DataOperation {
        name: "get_proposal",
        description: "A proposal, its status and its authoritative preview.",
        class: Class::Read,
        entries: Entries(&[
            Entry::Cli("countersign show <id>"),
            Entry::Api("GET", "/v1/proposals/{proposal_id}"),
            Entry::Mcp("get_proposal"),
        ]),
        params: ParamSchema::Fixed(proposal_id_params),
        result: results::proposal_schema,
        exceptions: &[],
    },
    DataOperation {
        name: "list_proposals",
        description: "The caller's proposals, newest first, optionally in one status.",
        class: Class::Read,
        entries: Entries(&[
            Entry::Cli("countersign list [--status S] [--limit N]"),
            Entry::Api("GET", "/v1/proposals"),
            Entry::Mcp("list_proposals"),
        ]),
        params: ParamSchema::Fixed(list_params),
        result: results::proposals_schema,
        exceptions: &[],
    },
    DataOperation {
        name: "withdraw",
        description: "Withdraw the caller's own proposal before a decision.",
        class: Class::Write,
        entries: Entries(&[
            Entry::Cli("countersign withdraw <id>"),
            Entry::Api("POST", "/v1/proposals/{proposal_id}/withdraw"),
            Entry::Mcp("withdraw_proposal"),
        ]),
        params: ParamSchema::Fixed(proposal_id_params),
        result: results::proposal_schema,
        exceptions: &[],
    },
    DataOperation {
        name: "execute",
        description: "Execute an approved proposal once, with the approval a person authorized for a later execution (claimed from the signer; never shown to the caller).",
        class: Class::Write,
        entries: Entries(&[
            Entry::Cli("countersign exec <id> --handoff"),
            Entry::Api("POST", "/v1/proposals/{proposal_id}/execute-handoff"),
            Entry::Mcp("execute_approved"),
        ]),
        params: ParamSchema::Fixed(proposal_id_params),
        result: results::outcome_schema,
        exceptions: &[],
    },
    DataOperation {
        name: "execute_with_proof",
        description: "Execute an approved proposal once with a proof the person carried (a file or stdin on the CLI, a request body field on the API).",
        class: Class::Write,
        entries: Entries(&[
            Entry::Cli("countersign exec <id> --proof-file FILE|-"),
            Entry::Api("POST", "/v1/proposals/{proposal_id}/execute"),
        ]),
        params: ParamSchema::Fixed(proof_params),
        result: results::outcome_schema,
        exceptions: &[Exception {
            head: Head::Mcp,
            reason: MCP_TAKES_NO_PROOF,
        }],
    },
    DataOperation {
        name: "get_result",
        description: "The recorded disposition of an executed proposal: applied, failed or uncertain.",
        class: Class::Read,
        entries: Entries(&[
            Entry::Cli("countersign result <id>"),
            Entry::Api("GET", "/v1/proposals/{proposal_id}/result"),
            Entry::Mcp("get_result"),
        ]),
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
    fn every_head_has_each_operation_once_or_names_why_not_and_never_both() {
        for op in DATA_OPERATIONS {
            for head in Head::ALL {
                let entries = op.entries.0.iter().filter(|e| e.head() == head).count();
                let excepted = op
                    .exceptions
                    .iter()
                    .filter(|e| e.head == head && !e.reason.trim().is_empty())
                    .count();
                assert_eq!(
                    entries + excepted,
                    1,
                    "{} on {head}: {entries} entries, {excepted} exceptions",
                    op.name
                );
            }
        }
        for entry in crate::NON_DATA {
            for head in Head::ALL {
                let entries = entry.entries.0.iter().filter(|e| e.head() == head).count();
                assert!(entries <= 1, "{} on {head}: {entries} entries", entry.name);
            }
        }
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
    fn propose_tools_are_named_after_the_operation() {
        assert_eq!(
            propose_tool_name("schedule.create"),
            "propose_schedule_create"
        );
    }
}

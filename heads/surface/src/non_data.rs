//! Everything on a head that is not a data operation (deciding, token
//! management, transport control, administration), each with the reason it
//! is only where it is. The manifest lists them; the parity gate requires a
//! reason for each, and the CLI's exposures treat every command not listed
//! here or in the table as an undeclared operation.

use crate::operations::{Entries, Entry};

/// A command, route or tool that is not a data operation, and why it is
/// only where it is.
#[derive(Debug, Clone, Copy)]
pub struct NonData {
    /// A name for the manifest.
    pub name: &'static str,
    /// Where it is, one entry per head that has it.
    pub entries: Entries,
    /// Why it is not on every head.
    pub reason: &'static str,
}

const APPROVER_ONLY: &str = "Deciding is for approver interfaces only (an interactive terminal with a typed challenge, or the paired web console): no head and no model-visible tool can approve, deny or revoke.";
const RULES_APPROVER_ONLY: &str = "An auto-approval rule approves without asking a person, so only a person creates, lists or revokes one, through an approver interface (an interactive terminal with a typed challenge, or the paired web console); a model can at most propose a rule as an ordinary proposal.";
const TOKEN_CLI_ONLY: &str = "API credentials are created and revoked by the local user at the CLI; a bearer of one credential must not be able to mint or revoke others, and MCP clients are models.";
const CONSOLE_CLI_ONLY: &str = "A browser is paired, and its pairing revoked, by the local user at an interactive terminal; a paired browser or an agent must not be able to pair others.";
const CREDENTIAL_CLI_ONLY: &str = "Approver credentials are issued by the local user from the installation's CA; no head may mint a credential that can decide.";
const TRANSPORT: &str = "Transport control and administration differ per head by design: they start, describe or maintain a head, not act on proposals.";

const POLICY_CHECK: &str = "Checking the operator's Cedar policy against the registry's schema, and running its test table, is for the operator and a policy repository's CI, with files and no signer, ledger or proposal; it decides nothing, and a model-facing head must not probe the policy that judges its proposals.";

/// Everything on a head that is not a data operation.
pub const NON_DATA: &[NonData] = &[
    NonData {
        name: "approve",
        entries: Entries(&[Entry::Cli(
            "countersign approve <id> [--hand-off | --proof-out FILE]",
        )]),
        reason: APPROVER_ONLY,
    },
    NonData {
        name: "deny",
        entries: Entries(&[Entry::Cli("countersign deny <id> --reason TEXT")]),
        reason: APPROVER_ONLY,
    },
    NonData {
        name: "revoke",
        entries: Entries(&[Entry::Cli("countersign revoke <id>")]),
        reason: APPROVER_ONLY,
    },
    NonData {
        name: "rules_create",
        entries: Entries(&[Entry::Cli("countersign rules create --file FILE")]),
        reason: RULES_APPROVER_ONLY,
    },
    NonData {
        name: "rules_revise",
        entries: Entries(&[Entry::Cli(
            "countersign rules revise <rule id> --version N --file FILE",
        )]),
        reason: RULES_APPROVER_ONLY,
    },
    NonData {
        name: "rules_list",
        entries: Entries(&[Entry::Cli("countersign rules list")]),
        reason: RULES_APPROVER_ONLY,
    },
    NonData {
        name: "rules_suggest",
        entries: Entries(&[Entry::Cli(
            "countersign rules suggest [--min N] [--prefix P]",
        )]),
        reason: RULES_APPROVER_ONLY,
    },
    NonData {
        name: "rules_revoke",
        entries: Entries(&[Entry::Cli("countersign rules revoke <rule id>")]),
        reason: RULES_APPROVER_ONLY,
    },
    NonData {
        name: "list_pending_decisions",
        entries: Entries(&[Entry::Cli("countersign pending")]),
        reason: "The approver's queue is read over the approver's certificate; heads list their own proposals with `list_proposals` (status=pending).",
    },
    NonData {
        name: "api_token_create",
        entries: Entries(&[Entry::Cli(
            "countersign api token create --ttl DURATION (--out FILE | --stdout)",
        )]),
        reason: TOKEN_CLI_ONLY,
    },
    NonData {
        name: "api_token_revoke",
        entries: Entries(&[Entry::Cli("countersign api token revoke <token id>")]),
        reason: TOKEN_CLI_ONLY,
    },
    NonData {
        name: "api_token_list",
        entries: Entries(&[Entry::Cli("countersign api token list")]),
        reason: TOKEN_CLI_ONLY,
    },
    NonData {
        name: "api_serve",
        entries: Entries(&[Entry::Cli("countersign api serve [--listen ADDR]")]),
        reason: TRANSPORT,
    },
    NonData {
        name: "console_serve",
        entries: Entries(&[Entry::Cli("countersign console [--listen ADDR]")]),
        reason: TRANSPORT,
    },
    NonData {
        name: "console_trust",
        entries: Entries(&[Entry::Cli("countersign console trust")]),
        reason: CONSOLE_CLI_ONLY,
    },
    NonData {
        name: "console_pair",
        entries: Entries(&[Entry::Cli("countersign console pair")]),
        reason: CONSOLE_CLI_ONLY,
    },
    NonData {
        name: "console_sessions_list",
        entries: Entries(&[Entry::Cli("countersign console sessions list")]),
        reason: CONSOLE_CLI_ONLY,
    },
    NonData {
        name: "console_sessions_revoke",
        entries: Entries(&[Entry::Cli(
            "countersign console sessions revoke <session id>",
        )]),
        reason: CONSOLE_CLI_ONLY,
    },
    NonData {
        name: "credential_create",
        entries: Entries(&[Entry::Cli(
            "countersign credential create --approver NAME --out-dir DIR",
        )]),
        reason: CREDENTIAL_CLI_ONLY,
    },
    NonData {
        name: "mcp_serve",
        entries: Entries(&[Entry::Cli("countersign mcp [--listen [ADDR]]")]),
        reason: TRANSPORT,
    },
    NonData {
        name: "init",
        entries: Entries(&[Entry::Cli("countersign init")]),
        reason: TRANSPORT,
    },
    NonData {
        name: "up",
        entries: Entries(&[Entry::Cli("countersign up")]),
        reason: TRANSPORT,
    },
    NonData {
        name: "audit",
        entries: Entries(&[Entry::Cli("countersign audit [--verify]")]),
        reason: "The audit trail spans every session of the installation; it is read by the local user, not by a head's caller.",
    },
    NonData {
        name: "audit_export",
        entries: Entries(&[Entry::Cli(
            "countersign audit export --format ocsf [--since TIME] [--output FILE]",
        )]),
        reason: "Writes every event of the installation's audit trail, across all its sessions, as OCSF for a SIEM: read by the local user from the ledger, as `audit` is, not by a head's caller.",
    },
    NonData {
        name: "evidence_export",
        entries: Entries(&[Entry::Cli(
            "countersign evidence export <id> [--output FILE] [--commit-arguments SALT_FILE]",
        )]),
        reason: "Writes one applied action's evidence for an auditor: read by the local user from the ledger, as `audit` is, with the spent proof the signer re-derives only once it is consumed and expired; a model-facing head never handles a proof.",
    },
    NonData {
        name: "evidence_verify",
        entries: Entries(&[Entry::Cli(
            "countersign evidence verify <file> --trust POLICY [--keys FILE] [--reveal SALT_FILE]",
        )]),
        reason: "Offline verification of an evidence bundle for an auditor, with public keys only and no home, signer or ledger; it decides nothing and is no operation on proposals.",
    },
    NonData {
        name: "gateway_tools",
        entries: Entries(&[Entry::Cli(
            "countersign gateway tools [--accept UPSTREAM/TOOL]",
        )]),
        reason: "Listing an upstream MCP server's tools starts the installation's upstreams with its credentials; accepting their definitions is proposed as `gateway.pin`, which a person approves like any proposal.",
    },
    NonData {
        name: "hook",
        entries: Entries(&[
            Entry::Cli("countersign hook <agent> [--wait-secs N]"),
            Entry::Api("POST", "/v1/hooks/claude-code"),
        ]),
        reason: "A coding agent's hook answers the agent about to run one tool call, in that agent's own format and exit code, and proposes the call as an agent operation, which no data operation proposes; it is where an agent calls it: a command for command hooks, a route for Claude Code's http hooks. An MCP client is a model, not an agent's runtime.",
    },
    NonData {
        name: "reconcile",
        entries: Entries(&[Entry::Cli(
            "countersign reconcile [--resolve ID --applied|--not-applied]",
        )]),
        reason: "Resolving an uncertain execution needs a person who has checked the world; it is local administration.",
    },
    NonData {
        name: "keys_list",
        entries: Entries(&[Entry::Cli("countersign keys list")]),
        reason: TRANSPORT,
    },
    NonData {
        name: "keys_export",
        entries: Entries(&[Entry::Cli("countersign keys export [--out FILE]")]),
        reason: "Writes the published verifying keys to a file an operator hands to the services that receive proofs; it is the same transport fact as keys list, in the form a receiver pins, and no operation on proposals.",
    },
    NonData {
        name: "verify",
        entries: Entries(&[Entry::Cli(
            "countersign verify --proof-file FILE|- --keys FILE [--operation OP] [--audience AUD]",
        )]),
        reason: "Offline verification for an operator or a receiving service, with a pinned key set and no signer or ledger; a head verifies while it executes, and handing proofs to a model-facing head for checking would widen where proofs travel.",
    },
    NonData {
        name: "doctor",
        entries: Entries(&[Entry::Cli("countersign doctor")]),
        reason: "Checking an installation reads the local home (its certificates, keys' files and configuration) and connects with each of its credentials; it is local administration, not an operation on proposals, and reveals nothing a head should pass on.",
    },
    NonData {
        name: "setup",
        entries: Entries(&[Entry::Cli("countersign setup --agent-user USER")]),
        reason: "Making the hardened installation creates system users' homes, database roles and the schema as root on this host; it is host administration, not an operation on proposals, and no head's caller may run it.",
    },
    NonData {
        name: "setup_schema",
        entries: Entries(&[Entry::Cli("countersign setup-schema")]),
        reason: "What setup runs as the PostgreSQL administrator's OS user to apply the ledger's schema as the owner role; hidden, and no operation on proposals.",
    },
    NonData {
        name: "notify_serve",
        entries: Entries(&[Entry::Cli("countersign notify serve")]),
        reason: "The notify process delivers the signer's notifications with the notifier certificate (which can do nothing else); it is a process the installation runs, not an operation on proposals.",
    },
    NonData {
        name: "witness_serve",
        entries: Entries(&[Entry::Cli("countersign witness serve")]),
        reason: "The witnessing client sends the log's checkpoints to the witnesses of the tlog policy and stores their cosignatures; it is a process the installation runs, not an operation on proposals.",
    },
    NonData {
        name: "witness_status",
        entries: Entries(&[Entry::Cli("countersign witness status")]),
        reason: "The witnesses' queue state describes the transparency log's witnessing (acknowledged sizes, failures, rollbacks), read from the ledger; it is not an operation on proposals, and a head's caller has no use for it.",
    },
    NonData {
        name: "notify_status",
        entries: Entries(&[Entry::Cli("countersign notify status")]),
        reason: "The notification deliveries are read from the notify process's own state and the signer's outbox over the notifier's certificate: they describe the person's own alerts (channels, failures), not an operation on proposals, and a head's caller has no use for them.",
    },
    NonData {
        name: "policy_validate",
        entries: Entries(&[Entry::Cli(
            "countersign policy validate <file> [--registry PATH]",
        )]),
        reason: POLICY_CHECK,
    },
    NonData {
        name: "policy_test",
        entries: Entries(&[Entry::Cli(
            "countersign policy test <table> --policies FILE [--registry PATH]",
        )]),
        reason: POLICY_CHECK,
    },
    NonData {
        name: "policy_schema",
        entries: Entries(&[Entry::Cli("countersign policy schema [--registry PATH]")]),
        reason: POLICY_CHECK,
    },
    NonData {
        name: "policy_rule_scope",
        entries: Entries(&[Entry::Cli(
            "countersign policy rule-scope <file> [--id ID] [--registry PATH]",
        )]),
        reason: POLICY_CHECK,
    },
    NonData {
        name: "policy_diff",
        entries: Entries(&[Entry::Cli("countersign policy diff [--limit N]")]),
        reason: "The log-only policy set's differences are read from the audit trail for the operator reviewing a policy change; a model-facing head must not probe the policy that judges its proposals.",
    },
    NonData {
        name: "health",
        entries: Entries(&[Entry::Api("GET", "/healthz")]),
        reason: "A liveness probe for HTTP supervisors; it reveals nothing private and is not an operation.",
    },
    NonData {
        name: "openapi",
        entries: Entries(&[Entry::Api("GET", "/openapi.json")]),
        reason: "The HTTP API's own description; the CLI has --help and MCP lists its tools.",
    },
];

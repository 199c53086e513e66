//! Everything on a head that is not a data operation (deciding, token
//! management, transport control, administration), each with the reason it
//! is only where it is. The manifest lists them; the parity gate requires a
//! reason for each, and the CLI's exposures treat every command not listed
//! here or in the table as an undeclared operation.

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
const RULES_APPROVER_ONLY: &str = "An auto-approval rule approves without asking a person, so only a person creates, lists or revokes one, through an approver interface (an interactive terminal with a typed challenge, or the paired web console); a model can at most propose a rule as an ordinary proposal.";
const TOKEN_CLI_ONLY: &str = "API credentials are created and revoked by the local user at the CLI; a bearer of one credential must not be able to mint or revoke others, and MCP clients are models.";
const CONSOLE_CLI_ONLY: &str = "A browser is paired, and its pairing revoked, by the local user at an interactive terminal; a paired browser or an agent must not be able to pair others.";
const CREDENTIAL_CLI_ONLY: &str = "Approver credentials are issued by the local user from the installation's CA; no head may mint a credential that can decide.";
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
        name: "rules_create",
        cli: Some("countersign rules create --file FILE"),
        api: None,
        mcp: None,
        reason: RULES_APPROVER_ONLY,
    },
    NonData {
        name: "rules_revise",
        cli: Some("countersign rules revise <rule id> --version N --file FILE"),
        api: None,
        mcp: None,
        reason: RULES_APPROVER_ONLY,
    },
    NonData {
        name: "rules_list",
        cli: Some("countersign rules list"),
        api: None,
        mcp: None,
        reason: RULES_APPROVER_ONLY,
    },
    NonData {
        name: "rules_revoke",
        cli: Some("countersign rules revoke <rule id>"),
        api: None,
        mcp: None,
        reason: RULES_APPROVER_ONLY,
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
        name: "console_serve",
        cli: Some("countersign console [--listen ADDR]"),
        api: None,
        mcp: None,
        reason: TRANSPORT,
    },
    NonData {
        name: "console_trust",
        cli: Some("countersign console trust"),
        api: None,
        mcp: None,
        reason: CONSOLE_CLI_ONLY,
    },
    NonData {
        name: "console_pair",
        cli: Some("countersign console pair"),
        api: None,
        mcp: None,
        reason: CONSOLE_CLI_ONLY,
    },
    NonData {
        name: "console_sessions_list",
        cli: Some("countersign console sessions list"),
        api: None,
        mcp: None,
        reason: CONSOLE_CLI_ONLY,
    },
    NonData {
        name: "console_sessions_revoke",
        cli: Some("countersign console sessions revoke <session id>"),
        api: None,
        mcp: None,
        reason: CONSOLE_CLI_ONLY,
    },
    NonData {
        name: "credential_create",
        cli: Some("countersign credential create --approver NAME --out-dir DIR"),
        api: None,
        mcp: None,
        reason: CREDENTIAL_CLI_ONLY,
    },
    NonData {
        name: "mcp_serve",
        cli: Some("countersign mcp [--listen [ADDR]]"),
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
        name: "keys_export",
        cli: Some("countersign keys export [--out FILE]"),
        api: None,
        mcp: None,
        reason: "Writes the published verifying keys to a file an operator hands to the services that receive proofs; it is the same transport fact as keys list, in the form a receiver pins, and no operation on proposals.",
    },
    NonData {
        name: "verify",
        cli: Some(
            "countersign verify --proof-file FILE|- --keys FILE [--operation OP] [--audience AUD]",
        ),
        api: None,
        mcp: None,
        reason: "Offline verification for an operator or a receiving service, with a pinned key set and no signer or ledger; a head verifies while it executes, and handing proofs to a model-facing head for checking would widen where proofs travel.",
    },
    NonData {
        name: "doctor",
        cli: Some("countersign doctor"),
        api: None,
        mcp: None,
        reason: "Checking an installation reads the local home (its certificates, keys' files and configuration) and connects with each of its credentials; it is local administration, not an operation on proposals, and reveals nothing a head should pass on.",
    },
    NonData {
        name: "notify_serve",
        cli: Some("countersign notify serve"),
        api: None,
        mcp: None,
        reason: "The notify process delivers the signer's notifications with the notifier certificate (which can do nothing else); it is a process the installation runs, not an operation on proposals.",
    },
    NonData {
        name: "notify_status",
        cli: Some("countersign notify status"),
        api: None,
        mcp: None,
        reason: "The notification deliveries are read from the notify process's own state and the signer's outbox over the notifier's certificate: they describe the person's own alerts (channels, failures), not an operation on proposals, and a head's caller has no use for them.",
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

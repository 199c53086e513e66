//! The command-line surface, declared with clap. No flag takes a proof, a
//! token or a challenge answer as a value: proofs come from a file or stdin,
//! challenge answers from the controlling terminal.

use std::path::PathBuf;

pub use crate::proposal_ref::ProposalRef;
use clap::{Args, Parser, Subcommand};
use countersign_identity::ApproverName;
use countersign_proto::v1::ProposalStatus;
pub use countersign_surface::policy_command::{PolicyArgs, PolicyCommand};

/// countersign: a human-approval gate for the actions of AI agents.
#[derive(Debug, Parser)]
#[command(name = "countersign", version, about, long_about = None)]
pub struct Cli {
    /// Configuration directory (absolute path). Default: $COUNTERSIGN_HOME,
    /// else ~/.config/countersign.
    #[arg(long, global = true, value_name = "DIR", value_parser = absolute_path)]
    pub home: Option<PathBuf>,
    /// Print machine-readable JSON instead of text.
    #[arg(long, global = true)]
    pub json: bool,
    // The command (clap reads each variant's doc comment for its help).
    #[allow(missing_docs)]
    #[command(subcommand)]
    pub command: Command,
}

/// Every command.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create the identity, development PKI, configuration and signer key (idempotent)
    ///
    /// With AGENT (claude-code, codex, gemini or cursor), instead write
    /// `countersign hook AGENT` into that agent's settings for the project
    /// in the current directory (or --project DIR, or --user), merged with
    /// what is there and a backup kept; running it again changes nothing.
    Init(InitArgs),
    /// Initialize on first use, then run and supervise the signer until interrupted.
    Up(UpArgs),
    /// The operation registry.
    #[command(subcommand)]
    Ops(OpsCommand),
    /// Propose an action for a person to review (as a head).
    Propose(ProposeArgs),
    /// Show a proposal and its authoritative preview.
    Show(IdArg),
    /// List this principal's proposals, newest first (as a head).
    List(ListArgs),
    /// Withdraw a proposal that has no decision yet (as a head).
    Withdraw(IdArg),
    /// List proposals awaiting your decision (as an approver).
    Pending,
    /// Approve a proposal at an interactive terminal (as an approver).
    Approve(ApproveArgs),
    /// Deny a proposal, with a reason (as an approver).
    Deny(DenyArgs),
    /// Execute an approved proposal with a proof read from a file or stdin.
    Exec(ExecArgs),
    /// Show the recorded result of an executed proposal.
    Result(IdArg),
    /// Revoke the unconsumed proof of a proposal (as an approver).
    Revoke(RevokeArgs),
    /// Show the audit trail; with --verify, check its hash chain.
    Audit(AuditArgs),
    /// Resolve executions that were interrupted between intent and completion.
    Reconcile(ReconcileArgs),
    /// One applied action as evidence anyone checks offline (docs/evidence.md).
    #[command(subcommand)]
    Evidence(EvidenceCommand),
    /// The signer's verifying keys.
    #[command(subcommand)]
    Keys(KeysCommand),
    /// Check a proof offline against a pinned key set: no signer, no ledger
    ///
    /// Checks the signature, the claims, expiry (strict) and not-before, and
    /// the audience and operation when given. Prints the claims as JSON, or
    /// exactly one refusal (exit 3). Does not consume the proof: single use
    /// is the receiver's own concern. The proof is never printed.
    Verify(VerifyArgs),
    /// Check this installation: home, certificates, signer, approver,
    /// registry, keys, ledger, clock and console
    ///
    /// One line per check (ok, warn or FAIL), with what to do about each
    /// failure; exits 1 if any check fails. Reads only: migrates nothing and
    /// calls only read-only signer RPCs. Each network check gives up after 5 s.
    Doctor,
    /// Serve the MCP head on stdio for an MCP client (as a head), or over HTTP
    ///
    /// An MCP client (Claude Desktop, Claude Code, Cursor, ...) launches it.
    /// Its tools propose and execute approved actions; none can approve,
    /// deny or see a proof. With --listen, the same tools are served over
    /// streamable HTTP at /mcp to clients holding an API credential
    /// (countersign api token create), each credential its own session.
    Mcp(McpArgs),
    /// The private HTTP API: serve it, and manage its bearer credentials.
    #[command(subcommand)]
    Api(ApiCommand),
    /// The approval console: serve it, pair browsers, manage their sessions
    ///
    /// Without a subcommand, serves the console (loopback only unless
    /// --listen says otherwise) until interrupted.
    Console(ConsoleArgs),
    /// Client credentials for trusted approver interfaces (see docs/trusted-ui.md).
    #[command(subcommand)]
    Credential(CredentialCommand),
    /// Deliver the signer's notifications, and show their delivery (as the notifier).
    #[command(subcommand)]
    Notify(NotifyCommand),
    /// Send the log's checkpoints to witnesses, and show what they cosigned.
    #[command(subcommand)]
    Witness(WitnessCommand),
    /// Auto-approval rules: create (interactive terminal only), list, revoke (as an approver).
    #[command(subcommand)]
    Rules(RulesCommand),
    /// The MCP gateway: the upstream MCP servers of gateway.toml.
    #[command(subcommand)]
    Gateway(GatewayCommand),
    /// Check a Cedar policy set against the registry (runs countersign-signer)
    ///
    /// Runs `countersign-signer policy ...` (found beside this program, else
    /// on PATH) with the same arguments: the Cedar engine is linked into
    /// the signer's binary only. Exit codes: 0 valid (every case passed), 1
    /// invalid (a case failed), 2 a file, the home or the registry could not
    /// be read.
    /// See docs/policy.md.
    Policy(PolicyArgs),
    /// Make the hardened installation on this host for an agent's OS user (as root)
    ///
    /// The local PostgreSQL server, reached over its Unix socket with peer
    /// authentication (no password anywhere): the database, a role per
    /// service user and the agent's, the schema and the grants; the
    /// service users' homes and the agent's head-only home; the systemd
    /// units enabled and started (or, without systemd, what to run). Ends
    /// with what the person does next. Running it again changes nothing and
    /// says so; run it again after upgrading the package.
    Setup(SetupArgs),
    /// Apply the ledger's schema with the owner's URL (what `setup` runs as
    /// the PostgreSQL administrator's OS user)
    #[command(hide = true)]
    SetupSchema(SetupSchemaArgs),
    /// Answer a coding agent's pre-tool-call hook (as a head)
    ///
    /// The agent runs it before each tool call with the call as JSON on
    /// stdin. The call is proposed (agent.shell, agent.edit, ...), a person
    /// decides in the console or at a terminal (or a rule does), and the
    /// answer is written in the agent's own shape. No decision within the
    /// wait, an error or a refusal is a deny: never an allow on error. See
    /// docs/hooks.md for each agent's setup (`countersign init AGENT`).
    Hook(HookArgs),
}

/// `countersign setup`
#[derive(Debug, Args)]
pub struct SetupArgs {
    /// The agent's OS user: it gets a head-only home and a database role of
    /// its own, and nothing that can approve.
    #[arg(long, value_name = "USER")]
    pub agent_user: String,
    /// The ledger's PostgreSQL database (created if missing).
    #[arg(long, value_name = "NAME", default_value = "countersign")]
    pub database: String,
    /// The directory of the local PostgreSQL server's Unix socket.
    #[arg(long, value_name = "DIR", default_value = "/run/postgresql", value_parser = absolute_path)]
    pub pg_socket_dir: PathBuf,
    /// The local PostgreSQL server's port (names its socket file).
    #[arg(long, value_name = "PORT", default_value_t = 5432)]
    pub pg_port: u16,
    /// The OS user of the PostgreSQL administrator (a superuser by peer
    /// authentication, as Debian's `postgres`).
    #[arg(long, value_name = "USER", default_value = "postgres")]
    pub pg_admin: String,
    /// The signer's address (loopback).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7443")]
    pub signer_addr: std::net::SocketAddr,
    /// The console's address (loopback).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:7444")]
    pub console_addr: std::net::SocketAddr,
}

/// `countersign setup-schema`
#[derive(Debug, Args)]
pub struct SetupSchemaArgs {
    /// The owner's ledger URL (read from the environment, never the command line).
    #[arg(long, env = "COUNTERSIGN_SETUP_SCHEMA_URL", hide_env_values = true)]
    pub url: String,
}

/// `countersign init`
#[derive(Debug, Args)]
pub struct InitArgs {
    /// Set up this coding agent's hook instead: claude-code, codex, gemini or cursor.
    pub agent: Option<countersign_hook::Agent>,
    /// The project whose agent settings get the hook (default: the current directory).
    #[arg(long, value_name = "DIR", requires = "agent", conflicts_with = "user")]
    pub project: Option<PathBuf>,
    /// Write the hook into your user settings (every project) instead.
    #[arg(long, requires = "agent")]
    pub user: bool,
}

/// `countersign hook`
#[derive(Debug, Args)]
pub struct HookArgs {
    /// The agent asking: claude-code, codex, gemini or cursor.
    pub agent: countersign_hook::Agent,
    /// How long to wait for a decision, in seconds (default 300); keep it
    /// below the agent's own hook timeout.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..=3600))]
    pub wait_secs: Option<u64>,
}

/// `countersign gateway ...`
#[derive(Debug, Subcommand)]
pub enum GatewayCommand {
    /// List each upstream's tools against their pinned definitions; pin some
    ///
    /// Asks every upstream of gateway.toml for its tools now and prints,
    /// per tool, the operator's policy (allow, approve, deny) and where it
    /// stands: pinned (as reviewed), new (never pinned), changed (another
    /// description or schema than pinned) or gone. With --accept, proposes
    /// gateway.pin with the definitions listed now: once a person approves
    /// it, `countersign exec ID --handoff` pins them in gateway-pins.json
    /// beside the registry, and approvals given under an older definition
    /// of those tools no longer execute. Only pinned tools can be called
    /// through the gateway.
    Tools(GatewayToolsArgs),
}

/// `countersign gateway tools`
#[derive(Debug, Args)]
pub struct GatewayToolsArgs {
    /// Propose pinning the definition this upstream's tool has now, for a
    /// person to approve (repeatable; one proposal for all).
    #[arg(long, value_name = "UPSTREAM/TOOL", value_parser = upstream_tool)]
    pub accept: Vec<UpstreamTool>,
    /// The session the proposal belongs to; `exec --handoff` must come from it.
    #[arg(long, env = "COUNTERSIGN_SESSION", default_value = "cli")]
    pub session: String,
}

/// A tool of an upstream, as `--accept` names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpstreamTool {
    /// The upstream's name in gateway.toml.
    pub upstream: String,
    /// The tool's name as the upstream lists it.
    pub tool: String,
}

fn upstream_tool(text: &str) -> Result<UpstreamTool, String> {
    use countersign_registry::gateway::{is_tool_name, is_upstream_name};
    match text.split_once('/') {
        Some((upstream, tool)) if is_upstream_name(upstream) && is_tool_name(tool) => {
            Ok(UpstreamTool {
                upstream: upstream.to_owned(),
                tool: tool.to_owned(),
            })
        }
        _ => {
            Err("expected UPSTREAM/TOOL (an upstream of gateway.toml and an MCP tool name)".into())
        }
    }
}

/// `countersign notify ...`
#[derive(Debug, Subcommand)]
pub enum NotifyCommand {
    /// Deliver the notifications the signer records, until interrupted
    ///
    /// Takes what waits in the signer's outbox with the notifier
    /// certificate (which can do nothing else), and delivers it through the
    /// `[notify]` channels: webhook, email, desktop, Web Push. The signer itself opens
    /// no outbound connection. `countersign up` runs this too.
    Serve,
    /// Per channel: the last deliveries, pending retries, failures with reason
    ///
    /// Reads this home's delivery state (written by `notify serve`) and asks
    /// the signer, as the notifier, how many notifications wait untaken. A
    /// notification carries no proof and no link that decides; neither does
    /// this list.
    Status,
}

/// `countersign witness ...`
#[derive(Debug, Subcommand)]
pub enum WitnessCommand {
    /// Send each signed checkpoint to the witnesses of `[tlog] policy`, until interrupted
    ///
    /// Speaks c2sp.org/tlog-witness: each checkpoint with a consistency
    /// proof from the size the witness last cosigned; stores a cosignature
    /// only once it verifies under the witness's key from the policy.
    /// Records a witness that fails for `[tlog] gap_secs` as a gap event,
    /// and a witness that has seen a larger or different log as a
    /// rollback. Holds no key. `countersign up` runs this too.
    Serve,
    /// Per witness: the size it acknowledged, failures, and whether it was halted
    ///
    /// Read from the ledger: the witnessing client's queue state, the
    /// latest checkpoint and the latest one with a stored cosignature.
    Status,
}

/// `countersign rules ...`
#[derive(Debug, Subcommand)]
pub enum RulesCommand {
    /// Create a rule from a JSON or TOML file, after showing its exact scope (interactive terminal only)
    ///
    /// The signer then approves, without asking anyone, every proposal the
    /// rule covers (operations, argument constraints, sessions), up to its
    /// uses and hourly rate, until it expires or is revoked. Needs
    /// `[rules] enabled = true` in the signer's configuration.
    Create(RuleFileArg),
    /// Change a rule's definition (its next version), after showing the new scope (interactive terminal only)
    ///
    /// Unused proofs issued under the earlier version are refused from then
    /// on (`rule_revoked`). Refused (`rule_changed`) if the rule is no
    /// longer at --version, the version you looked at.
    Revise(RuleReviseArgs),
    /// List this principal's rules with their uses and remaining budget.
    List,
    /// Revoke a rule: it approves nothing more, and its unused proofs are refused.
    Revoke(RuleRevokeArgs),
    /// Suggest rules from the agent calls people approved one by one (creates none)
    ///
    /// Reads this principal's newest 500 applied agent calls that a person
    /// approved and suggests rules that allow exactly those calls: shell
    /// commands as their approved words, no further arguments (never one
    /// with shell syntax a rule cannot see through; each line of an
    /// interpreter or runner on its own), reads and web calls by their
    /// approved paths, URLs or queries (or --prefix), other tools by their
    /// whole input, never edits. Prints each group asked at least --min
    /// times, the widest call its rule allows, and a rule definition for
    /// `rules create --file`.
    Suggest(RuleSuggestArgs),
}

/// `countersign rules suggest`
#[derive(Debug, Args)]
pub struct RuleSuggestArgs {
    /// Suggest only what a person approved at least this many times.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    pub min: u64,
    /// Group the reads and web calls whose path, URL or query starts with
    /// this (for example `https://docs.rs/`) into one rule allowing ANY
    /// value that starts with it; others are suggested as their approved
    /// values. Never applies to shell commands.
    #[arg(long, value_name = "PREFIX", value_parser = clap::builder::NonEmptyStringValueParser::new())]
    pub prefix: Option<String>,
}

/// `countersign rules create --file FILE`
#[derive(Debug, Args)]
pub struct RuleFileArg {
    /// The rule definition: JSON, or TOML when the name ends in .toml (`-`: JSON on stdin).
    #[arg(long, value_name = "FILE")]
    pub file: PathBuf,
}

/// `countersign rules revise ID --version N --file FILE`
#[derive(Debug, Args)]
pub struct RuleReviseArgs {
    /// The rule id (rule_ followed by 32 lowercase hex digits).
    #[arg(value_parser = rule_id)]
    pub id: String,
    /// The version you looked at (`rules list`): refused if the rule changed since.
    #[arg(long, value_name = "N")]
    pub version: u64,
    /// The new definition: as for `rules create --file`.
    #[command(flatten)]
    pub file: RuleFileArg,
}

/// `countersign rules revoke ID`
#[derive(Debug, Args)]
pub struct RuleRevokeArgs {
    /// The rule id (rule_ followed by 32 lowercase hex digits).
    #[arg(value_parser = rule_id)]
    pub id: String,
    /// Why, recorded in the ledger.
    #[arg(long, default_value = "revoked by the principal")]
    pub reason: String,
}

/// `countersign console [--listen ADDR] [pair | sessions ...]`
#[derive(Debug, Args)]
pub struct ConsoleArgs {
    /// The address and port the console serves on, besides every address
    /// its names resolve to (`https://console.localhost:PORT` holds both
    /// 127.0.0.1 and ::1). Default: the configuration's console addr, else
    /// 127.0.0.1:7444.
    #[arg(long, value_name = "ADDR")]
    pub listen: Option<std::net::SocketAddr>,
    /// Decide as the named approver NAME (its certificate, from
    /// `countersign credential create --approver NAME`) instead of the
    /// console's own `console` credential: a quorum's approver runs a
    /// console of their own, with their own paired browsers and cookie.
    /// Also after a subcommand (`console pair --as NAME`).
    #[arg(long = "as", value_name = "NAME", value_parser = approver_name, global = true)]
    pub as_approver: Option<ApproverName>,
    // Without one, serve the console.
    #[allow(missing_docs)]
    #[command(subcommand)]
    pub command: Option<ConsoleCommand>,
}

/// `countersign console ...`
#[derive(Debug, Subcommand)]
pub enum ConsoleCommand {
    /// Create a one-time pairing link (interactive terminal only; expires in 5 minutes).
    Pair(PairArgs),
    /// The paired browsers.
    #[command(subcommand)]
    Sessions(SessionsCommand),
    /// Trust the console's certificate in a browser, once
    ///
    /// Prints the console CA's file, its SHA-256 fingerprint, the names it
    /// may vouch for (it is name-constrained: it can vouch for no other
    /// site) and the exact steps for Chromium and Firefox. --import adds it
    /// to this user's NSS databases (~/.pki/nssdb, which Chromium reads on
    /// Linux, and each Firefox profile) with certutil (Debian:
    /// libnss3-tools), as mkcert does.
    Trust(TrustArgs),
}

/// `countersign console pair`
#[derive(Debug, Args)]
pub struct PairArgs {
    /// Also show the link as a QR code at the terminal, for a phone's
    /// camera (the phone must reach the console by the link's name)
    #[arg(long)]
    pub qr: bool,
}

/// `countersign console trust`
#[derive(Debug, Args)]
pub struct TrustArgs {
    /// Import the CA into this user's NSS databases (Chromium, Firefox),
    /// only if its name constraints permit just the console's names and
    /// exclude every IP address, after you confirm its SHA-256 fingerprint
    /// at the terminal.
    #[arg(long)]
    pub import: bool,
    /// Print the CA certificate (PEM) alone, to hand to the person whose
    /// browser trusts it (it is public).
    #[arg(long, conflicts_with = "import")]
    pub pem: bool,
    /// The CA certificate to trust, if not this home's
    /// (pki/console-ca.pem): what the console's administrator handed you.
    /// Compare the fingerprint printed with theirs.
    #[arg(long, value_name = "FILE")]
    pub ca: Option<std::path::PathBuf>,
    /// With --import: a name of the console the CA may vouch for (again
    /// for each name); by default this home's `[console] names`, else
    /// console.localhost. A CA whose name constraints permit any other
    /// name, or do not exclude every IP address, is refused.
    #[arg(long = "name", value_name = "NAME", requires = "import")]
    pub names: Vec<String>,
    /// Make a new console CA for the configured `[console] names`, in place
    /// of this home's, to add a name the old one may not vouch for. Its key
    /// is deleted, its certificate kept as pki/console-ca.retired-*.pem and
    /// removed from this user's NSS databases that hold it (as --import put
    /// it there); restart the console, and trust the new CA wherever the
    /// old one was.
    #[arg(long, conflicts_with_all = ["import", "pem", "ca"])]
    pub new_ca: bool,
}

/// `countersign console sessions ...`
#[derive(Debug, Subcommand)]
pub enum SessionsCommand {
    /// List paired browsers (active, expired and revoked).
    List,
    /// Revoke a paired browser: it sees nothing from its next request on.
    Revoke(SessionIdArg),
}

/// `countersign console sessions revoke ID`
#[derive(Debug, Args)]
pub struct SessionIdArg {
    /// The session id (16 hex digits, from `console sessions list`).
    pub id: String,
}

/// `countersign credential ...`
#[derive(Debug, Subcommand)]
pub enum CredentialCommand {
    /// Issue a named approver certificate from this installation's CA
    ///
    /// Writes DIR/approver-NAME.pem, DIR/approver-NAME.key (mode 0600) and
    /// DIR/ca.pem; never overwrites. Decisions made with it are recorded as
    /// human:cert:PRINCIPAL/NAME. Whoever can read the key can approve:
    /// keep it away from the agent's user.
    Create(CredentialCreateArgs),
}

/// `countersign credential create`
#[derive(Debug, Args)]
pub struct CredentialCreateArgs {
    /// The approver's name: 1 to 32 of [a-z0-9-], the first a letter or digit.
    #[arg(long, value_name = "NAME", value_parser = approver_name)]
    pub approver: ApproverName,
    /// An existing directory to write the certificate, key and CA into.
    #[arg(long, value_name = "DIR")]
    pub out_dir: PathBuf,
}

/// `countersign api ...`
#[derive(Debug, Subcommand)]
pub enum ApiCommand {
    /// Serve the private HTTP API (loopback only unless --listen says otherwise).
    Serve(ApiServeArgs),
    /// Bearer credentials for the API (stored only as hashes).
    #[command(subcommand)]
    Token(TokenCommand),
}

/// `countersign mcp`
#[derive(Debug, Args)]
pub struct McpArgs {
    /// Serve over streamable HTTP on this address instead of stdio (127.0.0.1:8788
    /// when no address is given). Clients authenticate with an API bearer
    /// credential; any address other than loopback exposes the tools to the
    /// network (still behind those credentials). `unix:PATH` serves on a
    /// Unix socket instead, to the OS user `--client-user` only (the kernel
    /// reports each connection's user; no credential), one session per
    /// connection in the stdio framing: the agent connects with
    /// `countersign mcp --connect unix:PATH`.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, default_missing_value = "127.0.0.1:8788", conflicts_with = "connect")]
    pub listen: Option<ListenAddr>,
    /// With `--listen unix:PATH`: the only OS user (name or uid) whose
    /// connections are served.
    #[arg(long, value_name = "USER", requires = "listen")]
    pub client_user: Option<String>,
    /// Relay this process's stdin and stdout to the MCP head serving
    /// `unix:PATH` (an MCP client runs this as its stdio server), once the
    /// kernel reports that the socket's server runs as `--server-user`;
    /// otherwise nothing is sent.
    #[arg(long, value_name = "unix:PATH", requires = "server_user")]
    pub connect: Option<UnixSocketPath>,
    /// With `--connect`: the OS user (name or uid) the MCP head must run as.
    #[arg(long, value_name = "USER", requires = "connect")]
    pub server_user: Option<String>,
}

/// Where `mcp --listen` and `api serve --listen` serve: a TCP address,
/// or `unix:PATH`.
#[derive(Debug, Clone)]
pub enum ListenAddr {
    /// Streamable HTTP on a TCP address.
    Tcp(std::net::SocketAddr),
    /// The stdio framing on a Unix socket.
    Unix(UnixSocketPath),
}

impl std::str::FromStr for ListenAddr {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        if text.starts_with("unix:") {
            return text.parse().map(Self::Unix);
        }
        text.parse()
            .map(Self::Tcp)
            .map_err(|e| format!("{e}: give an IP address and port, or unix:/absolute/path"))
    }
}

/// `unix:PATH`, with an absolute path.
#[derive(Debug, Clone)]
pub struct UnixSocketPath(pub std::path::PathBuf);

impl std::str::FromStr for UnixSocketPath {
    type Err = String;

    fn from_str(text: &str) -> Result<Self, String> {
        let path = text
            .strip_prefix("unix:")
            .ok_or_else(|| format!("{text:?} is not unix:/absolute/path"))?;
        let path = std::path::PathBuf::from(path);
        if !path.is_absolute() {
            return Err(format!("unix:{} is not an absolute path", path.display()));
        }
        Ok(Self(path))
    }
}

/// `countersign up`
#[derive(Debug, Args)]
pub struct UpArgs {
    /// Also serve the HTTP API head on this address (for example
    /// 127.0.0.1:8787). Off unless asked: no network listener by default.
    #[arg(long, value_name = "ADDR")]
    pub api: Option<std::net::SocketAddr>,
    /// Also serve the approval console, on ADDR if given, else on the
    /// configuration's console addr, else 127.0.0.1:7444.
    #[arg(long, value_name = "ADDR", num_args = 0..=1, require_equals = true)]
    pub console: Option<Option<std::net::SocketAddr>>,
}

/// `countersign api serve`
#[derive(Debug, Args)]
pub struct ApiServeArgs {
    /// The address to listen on. The default is loopback; any other address
    /// exposes the API to the network (still behind bearer credentials).
    /// `unix:PATH` serves on a Unix socket instead, to the OS user
    /// `--client-user` only (the kernel reports each connection's user), in
    /// a directory no other user can write; clients still send a bearer
    /// credential, to the socket nobody else can hold.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:8787")]
    pub listen: ListenAddr,
    /// With `--listen unix:PATH`: the only OS user (name or uid) whose
    /// connections are served.
    #[arg(long, value_name = "USER")]
    pub client_user: Option<String>,
}

/// `countersign api token ...`
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a credential, written to a new private file (or to stdout if asked).
    Create(TokenCreateArgs),
    /// Revoke a credential by its id; it is refused from the next request on.
    Revoke(TokenIdArg),
    /// List credentials: id, status, expiry (never the credential itself).
    List,
}

/// `countersign api token create`
#[derive(Debug, Args)]
pub struct TokenCreateArgs {
    /// How long the credential lives: 90s, 30m, 12h, 7d (at most 90d).
    #[arg(long, value_name = "DURATION", value_parser = countersign_api::tokens::parse_ttl)]
    pub ttl: time::Duration,
    /// Write the credential to this new file (mode 0600; refused if it exists).
    #[arg(
        long,
        value_name = "FILE",
        required_unless_present = "stdout",
        conflicts_with = "stdout"
    )]
    pub out: Option<PathBuf>,
    /// Print the credential on stdout instead (for piping into a secret store).
    #[arg(long)]
    pub stdout: bool,
}

/// A credential id.
#[derive(Debug, Args)]
pub struct TokenIdArg {
    /// The credential id (16 hex digits, from `api token list`).
    pub id: String,
}

/// `countersign ops ...`
#[derive(Debug, Subcommand)]
pub enum OpsCommand {
    /// List the operations, their class and contract revision.
    List,
}

/// `countersign keys ...`
#[derive(Debug, Subcommand)]
pub enum KeysCommand {
    /// List the keys that verify proofs.
    List,
    /// Write the key set receivers pin: ids, PASERK public keys, status
    ///
    /// JSON, version 1: every key the signer publishes, the active key and,
    /// after a rotation, the keys still verifying (status verifying); a
    /// retired key is left out, so a receiver that re-exports refuses its
    /// proofs. Read back by `countersign verify --keys`.
    Export(KeysExportArgs),
}

/// `countersign keys export`
#[derive(Debug, Args)]
pub struct KeysExportArgs {
    /// Write the key set to this new file (refused if it exists) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub out: Option<PathBuf>,
}

/// `countersign verify`
#[derive(Debug, Args)]
pub struct VerifyArgs {
    /// A file holding the proof, or - for stdin (never an argument).
    #[arg(long, value_name = "FILE|-")]
    pub proof_file: PathBuf,
    /// The key set file written by `countersign keys export`.
    #[arg(long, value_name = "FILE")]
    pub keys: PathBuf,
    /// Refuse a proof issued for another operation.
    #[arg(long, value_name = "OP")]
    pub operation: Option<String>,
    /// Refuse a proof issued for another audience.
    #[arg(long, value_name = "AUD")]
    pub audience: Option<String>,
}

/// A proposal id.
#[derive(Debug, Args)]
pub struct IdArg {
    /// The proposal id (prop_...), or its start (at least 4 hex digits).
    #[arg(value_parser = proposal_ref)]
    pub id: ProposalRef,
}

/// `countersign propose`
#[derive(Debug, Args)]
pub struct ProposeArgs {
    /// The operation name (see `countersign ops list`).
    pub operation: String,
    /// A file holding the arguments as a JSON object, or - for stdin.
    #[arg(long, value_name = "FILE|-")]
    pub args_file: PathBuf,
    /// A note for the approver, shown as model-supplied and unverified.
    #[arg(long, default_value = "")]
    pub note: String,
    /// The session this proposal belongs to; execution must come from it.
    #[arg(long, env = "COUNTERSIGN_SESSION", default_value = "cli")]
    pub session: String,
}

/// `countersign list`
#[derive(Debug, Args)]
pub struct ListArgs {
    /// Only proposals in this status (pending, approved, applied, ...).
    #[arg(long)]
    pub status: Option<ProposalStatus>,
    /// At most this many (1 to 500).
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=500))]
    pub limit: u32,
}

/// `countersign approve`
#[derive(Debug, Args)]
pub struct ApproveArgs {
    /// The proposal id, or its start (at least 4 hex digits).
    #[arg(value_parser = proposal_ref)]
    pub id: ProposalRef,
    /// Hand the approval off to the proposing session instead of running
    /// it here: its head runs it once (the MCP head's `execute_approved`,
    /// `countersign exec ID --handoff`). A hook's or a gateway's call is
    /// always handed off, with or without this flag. `--hand-off` is an
    /// alias.
    #[arg(long, alias = "for-mcp", conflicts_with = "proof_out")]
    pub hand_off: bool,
    /// With --hand-off: authorize the execution from this session instead
    /// of the proposing one (for example another MCP connection's
    /// `mcp-...`; never for a hook's call).
    #[arg(long, requires = "hand_off", value_name = "SESSION")]
    pub execute_in_session: Option<String>,
    /// Do not execute now: write the proof to this new private (0600) file.
    #[arg(long, value_name = "FILE")]
    pub proof_out: Option<PathBuf>,
    /// Decide as the named approver NAME, with its certificate
    /// (`countersign credential create --approver NAME`), as a quorum's
    /// approvers do.
    #[arg(long = "as", value_name = "NAME", value_parser = approver_name)]
    pub as_approver: Option<ApproverName>,
}

/// `countersign deny`
#[derive(Debug, Args)]
pub struct DenyArgs {
    /// The proposal id, or its start (at least 4 hex digits).
    #[arg(value_parser = proposal_ref)]
    pub id: ProposalRef,
    /// Why, recorded in the ledger and shown to the proposer.
    #[arg(long)]
    pub reason: String,
    /// Decide as the named approver NAME, with its certificate
    /// (`countersign credential create --approver NAME`), as a quorum's
    /// approvers do.
    #[arg(long = "as", value_name = "NAME", value_parser = approver_name)]
    pub as_approver: Option<ApproverName>,
}

/// `countersign exec`
#[derive(Debug, Args)]
pub struct ExecArgs {
    /// The proposal id, or its start (at least 4 hex digits).
    #[arg(value_parser = proposal_ref)]
    pub id: ProposalRef,
    /// A file holding the proof, or - for stdin. There is deliberately no
    /// way to pass a proof as an argument: argv is visible to other users.
    #[arg(
        long,
        value_name = "FILE|-",
        required_unless_present = "handoff",
        conflicts_with = "handoff"
    )]
    pub proof_file: Option<PathBuf>,
    /// Use the approval a person handed off for one later execution
    /// (`countersign approve ID --hand-off`), claimed from the signer.
    #[arg(long)]
    pub handoff: bool,
    /// The session executing; it must be the one the proof is bound to.
    #[arg(long, env = "COUNTERSIGN_SESSION", default_value = "cli")]
    pub session: String,
}

/// `countersign revoke`
#[derive(Debug, Args)]
pub struct RevokeArgs {
    /// The proposal id, or its start (at least 4 hex digits).
    #[arg(value_parser = proposal_ref)]
    pub id: ProposalRef,
    /// Why, recorded in the ledger.
    #[arg(long, default_value = "revoked by the principal")]
    pub reason: String,
}

/// `countersign audit`
#[derive(Debug, Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct AuditArgs {
    // The subcommand (clap reads each variant's doc comment for its help).
    #[allow(missing_docs)]
    #[command(subcommand)]
    pub command: Option<AuditCommand>,
    /// Check the hash chains, the transparency log's tree and its latest
    /// signed checkpoint, and report the first edited or deleted row.
    #[arg(long)]
    pub verify: bool,
    /// With --verify: a log verifier key (`<origin>+<key id>+<base64>`, as
    /// `keys list` shows it) to check the latest checkpoint's signature
    /// with, instead of the keys the signer publishes; repeat it for a key
    /// the log retired.
    #[arg(long, value_name = "VKEY", requires = "verify", value_parser = log_key)]
    pub log_key: Vec<countersign_tlog::VerifierKey>,
}

/// `countersign audit <subcommand>`
#[derive(Debug, Subcommand)]
pub enum AuditCommand {
    /// Write every ledger event for a SIEM, one JSON document a line
    ///
    /// `--format ocsf`: OCSF 1.8.0 API Activity events (class 6003) with the
    /// Security Control profile, each carrying its ledger chain, position,
    /// hash and transparency-log leaf index (docs/audit.md, "SIEM export").
    /// Reads the ledger; needs no running signer.
    Export(AuditExportArgs),
}

/// `countersign audit export`
#[derive(Debug, Args)]
pub struct AuditExportArgs {
    /// The event format.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Only events recorded at or after this time (RFC 3339, for example
    /// 2026-12-06T09:30:00Z).
    #[arg(long, value_name = "TIME", value_parser = rfc3339_time)]
    pub since: Option<time::OffsetDateTime>,
    /// Write the events to this new file (refused if it exists) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// The formats `audit export` writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ExportFormat {
    /// OCSF 1.8.0 API Activity with the Security Control profile, as JSON Lines.
    Ocsf,
}

/// `countersign evidence ...`
#[derive(Debug, Subcommand)]
pub enum EvidenceCommand {
    /// Write one applied or failed action's evidence bundle
    ///
    /// The action, who proposed it, who or what approved it with each
    /// passkey assertion, the spent proof (re-derived by the signer, only
    /// once consumed and expired) and the key set, the consumption and the
    /// effect's recorded result, and every event's inclusion proof in the
    /// latest cosigned checkpoint (the latest signed one when no `[tlog]`
    /// policy is configured). Reads the ledger; asks the signer for the
    /// proof and the keys.
    Export(EvidenceExportArgs),
    /// Check an evidence bundle offline with public keys only
    ///
    /// Nineteen checks in order (docs/evidence.md); prints one `ok` line per
    /// claim, or `refused: <code>: <what failed>` (exit 3). Needs no home,
    /// signer or ledger.
    Verify(EvidenceVerifyArgs),
}

/// `countersign evidence export`
#[derive(Debug, Args)]
pub struct EvidenceExportArgs {
    /// The proposal (its id, or a unique prefix of it).
    #[arg(value_parser = proposal_ref)]
    pub id: ProposalRef,
    /// Write the bundle to this new file (refused if it exists) instead of stdout.
    #[arg(long, value_name = "FILE")]
    pub output: Option<PathBuf>,
    /// Leave the arguments and the proof out: the bundle carries a salted
    /// commitment, and the arguments and salt go to this new file (mode 0600).
    #[arg(long, value_name = "SALT_FILE")]
    pub commit_arguments: Option<PathBuf>,
}

/// `countersign evidence verify`
#[derive(Debug, Args)]
pub struct EvidenceVerifyArgs {
    /// The bundle file.
    pub file: PathBuf,
    /// The C2SP tlog-policy naming the log's key, the witnesses and the quorum.
    #[arg(long, value_name = "POLICY")]
    pub trust: PathBuf,
    /// The proof key set to pin (`countersign keys export`); without it the
    /// bundle's own is used, and the output says so.
    #[arg(long, value_name = "FILE")]
    pub keys: Option<PathBuf>,
    /// The salt file that opens a bundle's commitment to its arguments.
    #[arg(long, value_name = "SALT_FILE")]
    pub reveal: Option<PathBuf>,
}

/// `countersign reconcile`
#[derive(Debug, Args)]
pub struct ReconcileArgs {
    /// Resolve one uncertain proposal by hand (after checking the world).
    #[arg(long, value_name = "ID", requires = "resolution", value_parser = proposal_ref)]
    pub resolve: Option<ProposalRef>,
    /// With --resolve: the effect did happen.
    #[arg(long, group = "resolution")]
    pub applied: bool,
    /// With --resolve: the effect did not happen.
    #[arg(long, group = "resolution")]
    pub not_applied: bool,
}

/// `--home`: an absolute path, or a usage error (exit code 2) before anything
/// is read. (`$COUNTERSIGN_HOME` is configuration: a relative one is exit 1.)
fn absolute_path(value: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(value);
    if path.is_absolute() {
        Ok(path)
    } else {
        Err("the countersign home must be an absolute path".to_string())
    }
}

/// A proposal id on the command line: refused as a usage error (exit code 2)
/// before the signer is contacted.
fn proposal_ref(value: &str) -> Result<ProposalRef, String> {
    ProposalRef::parse(value)
}

/// `--since`: an RFC 3339 time, or a usage error (exit code 2).
fn rfc3339_time(value: &str) -> Result<time::OffsetDateTime, String> {
    time::OffsetDateTime::parse(value, &time::format_description::well_known::Rfc3339)
        .map_err(|_| "expected an RFC 3339 time, for example 2026-12-06T09:30:00Z".to_string())
}

/// A C2SP verifier key on the command line: refused as a usage error.
fn log_key(value: &str) -> Result<countersign_tlog::VerifierKey, String> {
    value
        .parse()
        .map_err(|e: countersign_tlog::KeyError| format!("expected a log verifier key: {e}"))
}

/// A rule id on the command line: refused as a usage error (exit code 2).
fn rule_id(value: &str) -> Result<String, String> {
    countersign_verifier::RuleId::parse(value)
        .map(|id| id.into_string())
        .map_err(|e| e.to_string())
}

/// An approver name on the command line: refused as a usage error (exit
/// code 2) before anything is read.
fn approver_name(value: &str) -> Result<ApproverName, String> {
    ApproverName::parse(value).map_err(|e| e.to_string())
}

//! The MCP gateway's configuration (`gateway.toml`, beside the registry
//! file) and the tool definitions a person pinned (`gateway-pins.json`):
//! the upstream MCP servers, how to reach them, what each of their tools
//! may do without a person, and the operations (`mcp:<upstream>/<tool>`)
//! a gated call of a pinned tool is proposed as.
//!
//! This module owns the file format and its checks, the digest of a tool
//! definition, and the operations made from both files. It must not start,
//! reach or read anything an upstream needs (secret files are read by the
//! gateway when it starts the upstream), and must not make an operation for
//! a tool nobody pinned or the configuration denies.
//!
//! ```toml
//! [[upstream]]
//! name = "files"                   # ^[a-z][a-z0-9-]{0,31}$, unique
//! timeout_secs = 30                # one call, 1..=300 (default 30)
//! replay_safe = ["create_directory"] # gated tools reconcile may call again
//! require_passkey = false          # gated calls need a passkey approval
//! lifetime_secs = 120              # a gated call's proof, 1..=1800 (default: the policy's)
//! decision_window_secs = 600       # a gated call waits this long for a decision, 1..=604800
//!                                  # (default: the policy's)
//! [upstream.stdio]
//! program = "/usr/bin/node"        # absolute, run without a shell
//! args = ["/opt/mcp/server-filesystem/dist/index.js", "/srv/files"]
//! env = ["HOME"]                   # passed through from the gateway's environment
//! secret_env = { API_TOKEN = "/etc/countersign/secrets/files" } # 0600 files
//! # or
//! [upstream.http]                  # streamable HTTP
//! url = "https://mcp.example/mcp"  # http:// only to a loopback IP address, with no credential
//! bearer_file = "/etc/countersign/secrets/example" # optional, a 0600 file; https only
//! trust_roots = "/etc/ssl/example-ca.pem" # required for https
//! # or, plain http over a Unix socket whose server runs as `peer_user`
//! # (checked with SO_PEERCRED on every connection):
//! # url = "http://127.0.0.1/mcp"  unix_socket = "/run/mcp-web/mcp.sock"  peer_user = "mcp-web"
//! [upstream.tools]                 # "allow" | "approve" | "deny"
//! read_file = "allow"              # forwarded (and logged)
//! write_file = "approve"           # gated: a person approves each exact call
//! move_file = "deny"               # hidden and refused
//! ```
//!
//! An upstream may leave out `[upstream.stdio]` and `[upstream.http]`: a
//! signer on a host of its own needs each upstream's name, policies and
//! limits (its operations are the same without them), never how the
//! gateway reaches it, so the signer host's copy of this file need not
//! name the gateway host's programs, URLs or secret files.
//!
//! A tool the configuration does not name is `approve`. A tool whose
//! definition the upstream changed since it was pinned is `approve` too, and
//! no call of it runs until a person pins the new definition.

mod operations;
mod pinning;
mod pins;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::{RegistryError, WebhookUrl};

pub(crate) use operations::gateway_operations;
pub use operations::{OPERATION_PREFIX, operation_name, parse_operation_name};
pub use pinning::{
    Accepted, MAX_PINNED_AT_ONCE, PIN_OPERATION, PinRequest, pin_arguments, pin_requests,
};
pub(crate) use pinning::{pin_operation, preview_lines as pin_preview_lines};
pub use pins::{PinnedTool, Pins, ToolDefinition};

/// The gateway's configuration file name, in the registry file's directory.
pub const GATEWAY_FILE: &str = "gateway.toml";
/// The pinned tool definitions' file name, in the same directory.
pub const PINS_FILE: &str = "gateway-pins.json";
/// The call timeout when an upstream names none, in seconds.
pub const DEFAULT_TIMEOUT_SECS: u64 = 30;

/// How long a gated call waits for a person's decision, in seconds, when
/// `gateway.toml` says nothing: below the 60 s that MCP clients commonly
/// give a tool call.
pub const DEFAULT_DECISION_WAIT_SECS: u64 = 45;
/// The longest a gated call may be told to wait, in seconds.
pub const MAX_DECISION_WAIT_SECS: u64 = 3600;

/// The whole `gateway.toml`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GatewayFile {
    /// How long a gated call waits, in the agent's call, for a person's
    /// decision before it answers that the call waits for one (0: it
    /// answers at once), at most [`MAX_DECISION_WAIT_SECS`]. Set it below
    /// the client's own tool-call timeout.
    #[serde(default = "default_decision_wait")]
    pub decision_wait_secs: u64,
    /// The upstream MCP servers, by name.
    #[serde(default)]
    pub upstream: Vec<Upstream>,
}

fn default_decision_wait() -> u64 {
    DEFAULT_DECISION_WAIT_SECS
}

/// One upstream MCP server, checked.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawUpstream")]
pub struct Upstream {
    /// Its name: the prefix of its tools (`<name>__<tool>`) and of its
    /// operations (`mcp:<name>/<tool>`).
    pub name: String,
    /// Seconds one call may take, 1..=300.
    pub timeout_secs: u64,
    /// Gated tools whose interrupted call reconcile may make again.
    pub replay_safe: BTreeSet<String>,
    /// Whether a gated call's proof must carry a passkey check.
    pub require_passkey: bool,
    /// The lifetime of a gated call's proof in seconds (1..=1800), else
    /// the policy's default.
    pub lifetime_secs: Option<u64>,
    /// How long a gated call waits for a decision before it expires, in
    /// seconds (1..=604800), else the policy's decision window.
    pub decision_window_secs: Option<u64>,
    /// How the gateway reaches it; `None` where this host's `gateway.toml`
    /// leaves it out (a signer's host: the signer needs each upstream's
    /// policies and never its programs, URLs or secret files, and the
    /// operations are the same without them). A gateway reports such an
    /// upstream unavailable.
    pub transport: Option<Transport>,
    /// The operator's policy per tool name.
    pub tools: BTreeMap<String, ToolPolicy>,
    /// What a gated call of each tool risks, as the operator says
    /// (`[upstream.risk]`, tool = "read" | "write" | "delete" | "exec" |
    /// "network"); a tool not named is `write`. The upstream's own
    /// annotations are its claim, shown as such, never this.
    pub risk: BTreeMap<String, crate::Class>,
}

/// One `[[upstream]]` as written.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUpstream {
    name: String,
    #[serde(default = "default_timeout")]
    timeout_secs: u64,
    #[serde(default)]
    replay_safe: BTreeSet<String>,
    #[serde(default)]
    require_passkey: bool,
    #[serde(default)]
    lifetime_secs: Option<u64>,
    #[serde(default)]
    decision_window_secs: Option<u64>,
    #[serde(default)]
    stdio: Option<Stdio>,
    #[serde(default)]
    http: Option<Http>,
    #[serde(default)]
    tools: BTreeMap<String, ToolPolicy>,
    #[serde(default)]
    risk: BTreeMap<String, crate::Class>,
}

impl TryFrom<RawUpstream> for Upstream {
    type Error = String;

    fn try_from(raw: RawUpstream) -> Result<Upstream, String> {
        let named = |reason: String| format!("upstream {:?}: {reason}", raw.name);
        if !is_upstream_name(&raw.name) {
            return Err(named("`name` must match ^[a-z][a-z0-9-]{0,31}$".into()));
        }
        if !(1..=300).contains(&raw.timeout_secs) {
            return Err(named(format!(
                "`timeout_secs` {} is outside 1..=300",
                raw.timeout_secs
            )));
        }
        if let Some(secs) = raw.lifetime_secs
            && !(1..=crate::definition::LIFETIME_CAP_SECS).contains(&secs)
        {
            return Err(named(format!(
                "`lifetime_secs` {secs} is outside 1..={}",
                crate::definition::LIFETIME_CAP_SECS
            )));
        }
        if let Some(secs) = raw.decision_window_secs
            && !(1..=crate::definition::DECISION_WINDOW_CAP_SECS).contains(&secs)
        {
            return Err(named(format!(
                "`decision_window_secs` {secs} is outside 1..={}",
                crate::definition::DECISION_WINDOW_CAP_SECS
            )));
        }
        for tool in raw
            .tools
            .keys()
            .chain(&raw.replay_safe)
            .chain(raw.risk.keys())
        {
            if !is_tool_name(tool) {
                return Err(named(format!(
                    "{tool:?} is not an MCP tool name (1 to 128 of A-Z a-z 0-9 _ - .)"
                )));
            }
        }
        let transport = match (raw.stdio, raw.http) {
            (Some(stdio), None) => {
                stdio.check().map_err(named)?;
                Some(Transport::Stdio(stdio))
            }
            (None, Some(http)) => {
                http.check().map_err(named)?;
                Some(Transport::Http(http))
            }
            (None, None) => None,
            (Some(_), Some(_)) => {
                return Err(named(
                    "configure at most one of [upstream.stdio] and [upstream.http]".into(),
                ));
            }
        };
        Ok(Upstream {
            name: raw.name,
            timeout_secs: raw.timeout_secs,
            replay_safe: raw.replay_safe,
            require_passkey: raw.require_passkey,
            lifetime_secs: raw.lifetime_secs,
            decision_window_secs: raw.decision_window_secs,
            transport,
            tools: raw.tools,
            risk: raw.risk,
        })
    }
}

fn default_timeout() -> u64 {
    DEFAULT_TIMEOUT_SECS
}

/// How the gateway starts a stdio upstream.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Stdio {
    /// Absolute path of the program, run without a shell.
    pub program: PathBuf,
    /// Fixed arguments (never from an agent).
    #[serde(default)]
    pub args: Vec<String>,
    /// Names of variables passed through from the gateway's environment;
    /// nothing else of it reaches the upstream.
    #[serde(default)]
    pub env: BTreeSet<String>,
    /// Variables whose values are read from files only the gateway's user
    /// can read (mode 0600 or stricter), by absolute path.
    #[serde(default)]
    pub secret_env: BTreeMap<String, PathBuf>,
}

/// How the gateway reaches a streamable HTTP upstream.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Http {
    /// The MCP endpoint: `https://`, or `http://` to a loopback IP address
    /// for an upstream with no credential.
    pub url: String,
    /// Absolute path of a file (mode 0600 or stricter) holding the bearer
    /// credential sent to the upstream, if it wants one: https only
    /// ([`BEARER_NEEDS_HTTPS`]).
    #[serde(default)]
    pub bearer_file: Option<PathBuf>,
    /// Absolute path of a PEM bundle of the CAs trusted for an https
    /// upstream (no system roots are built in).
    #[serde(default)]
    pub trust_roots: Option<PathBuf>,
    /// Absolute path of a Unix socket the upstream serves plain HTTP on,
    /// instead of the URL's address (the URL then gives only the `Host`
    /// header and the path). Needs `peer_user`.
    #[serde(default)]
    pub unix_socket: Option<PathBuf>,
    /// The local user the process serving `unix_socket` must run as: the
    /// kernel reports the peer's uid (SO_PEERCRED), and a connection to
    /// any other is closed before a request is sent.
    #[serde(default)]
    pub peer_user: Option<String>,
}

/// The refusal of an `[upstream.http]` that would send its bearer
/// credential over plain http (after `upstream "<name>": `).
pub const BEARER_NEEDS_HTTPS: &str = "`http.bearer_file` is sent only over https with \
`http.trust_roots` or over `http.unix_socket` with `http.peer_user`: over plain http the \
credential goes to whoever holds the port, and any local user can hold a loopback port \
while the upstream restarts";

/// How the gateway reaches an upstream: exactly one transport.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Transport {
    /// Started by the gateway, over stdio.
    Stdio(Stdio),
    /// Reached over streamable HTTP.
    Http(Http),
}

/// What the gateway does with a call of one tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ToolPolicy {
    /// Forwarded to the upstream without a person (and logged).
    Allow,
    /// Proposed; it runs once, after a person's approval.
    Approve,
    /// Not listed to the agent, and refused.
    Deny,
}

impl ToolPolicy {
    /// `"allow"`, `"approve"` or `"deny"`.
    pub fn as_str(self) -> &'static str {
        match self {
            ToolPolicy::Allow => "allow",
            ToolPolicy::Approve => "approve",
            ToolPolicy::Deny => "deny",
        }
    }
}

impl Upstream {
    /// The operator's policy for `tool`: as configured, else `approve`.
    pub fn policy(&self, tool: &str) -> ToolPolicy {
        self.tools.get(tool).copied().unwrap_or(ToolPolicy::Approve)
    }

    /// The call timeout.
    pub fn timeout(&self) -> std::time::Duration {
        std::time::Duration::from_secs(self.timeout_secs)
    }
}

impl Stdio {
    fn check(&self) -> Result<(), String> {
        if !self.program.is_absolute() {
            return Err(format!(
                "`stdio.program` {:?} is not an absolute path",
                self.program.display().to_string()
            ));
        }
        if self.args.iter().any(|a| a.contains('\0')) {
            return Err("`stdio.args`: an argument contains a NUL byte".into());
        }
        for name in self.env.iter().chain(self.secret_env.keys()) {
            if !is_env_name(name) {
                return Err(format!("{name:?} is not an environment variable name"));
            }
        }
        if let Some(both) = self.env.iter().find(|n| self.secret_env.contains_key(*n)) {
            return Err(format!("{both:?} is in both `env` and `secret_env`"));
        }
        for path in self.secret_env.values() {
            absolute("stdio.secret_env", path)?;
        }
        Ok(())
    }
}

impl Http {
    fn check(&self) -> Result<(), String> {
        let url = WebhookUrl::parse(&self.url).map_err(|r| format!("`http.url` {r}"))?;
        match (&self.unix_socket, &self.peer_user) {
            (Some(_), None) => {
                return Err("`http.unix_socket` needs `http.peer_user`: the user the \
                     socket's server must run as"
                    .into());
            }
            (None, Some(_)) => {
                return Err("`http.peer_user` applies only with `http.unix_socket`".into());
            }
            (Some(path), Some(user)) => {
                absolute("http.unix_socket", path)?;
                if !is_user_name(user) {
                    return Err(format!("`http.peer_user` {user:?} is not a user name"));
                }
                if url.is_https() {
                    return Err("`http.unix_socket` speaks plain http: the URL must be \
                         http:// (its host is only the Host header)"
                        .into());
                }
            }
            (None, None) => {}
        }
        match (url.is_https(), &self.trust_roots) {
            (true, None) => {
                return Err("`http.trust_roots` is required for an https URL".into());
            }
            (false, Some(_)) => {
                return Err("`http.trust_roots` applies only to an https URL".into());
            }
            (false, None) if !url.is_loopback() => {
                return Err(
                    "`http.url`: plain http is allowed only to a loopback IP address".into(),
                );
            }
            _ => {}
        }
        // A port is not an identity: any local user can bind a loopback
        // port the upstream leaves free while it restarts, and would
        // receive the credential. Only verified TLS authenticates the
        // far end of a TCP connection.
        if self.bearer_file.is_some() && !url.is_https() && self.unix_socket.is_none() {
            return Err(BEARER_NEEDS_HTTPS.into());
        }
        if let Some(path) = &self.trust_roots {
            absolute("http.trust_roots", path)?;
        }
        if let Some(path) = &self.bearer_file {
            absolute("http.bearer_file", path)?;
        }
        Ok(())
    }
}

fn absolute(field: &str, path: &Path) -> Result<(), String> {
    if path.is_absolute() {
        Ok(())
    } else {
        Err(format!(
            "`{field}` {:?} is not an absolute path",
            path.display().to_string()
        ))
    }
}

impl GatewayFile {
    /// Parses and checks `gateway.toml`; the error names the upstream and
    /// the field.
    pub fn parse(text: &str) -> Result<GatewayFile, RegistryError> {
        let file: GatewayFile = toml::from_str(text)
            .map_err(|e| RegistryError::Gateway(format!("{GATEWAY_FILE}: {e}")))?;
        if file.decision_wait_secs > MAX_DECISION_WAIT_SECS {
            return Err(RegistryError::Gateway(format!(
                "{GATEWAY_FILE}: `decision_wait_secs` {} is outside 0..={MAX_DECISION_WAIT_SECS}",
                file.decision_wait_secs
            )));
        }
        let mut names = BTreeSet::new();
        for upstream in &file.upstream {
            if !names.insert(upstream.name.as_str()) {
                return Err(RegistryError::Gateway(format!(
                    "upstream {:?} is defined more than once",
                    upstream.name
                )));
            }
        }
        Ok(file)
    }

    /// The upstream named `name`.
    pub fn upstream(&self, name: &str) -> Option<&Upstream> {
        self.upstream.iter().find(|u| u.name == name)
    }
}

/// `^[a-z][a-z0-9-]{0,31}$`: no `_`, so the first `__` of a gateway tool
/// name (`<upstream>__<tool>`) always ends the upstream's name.
pub fn is_upstream_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    name.len() <= 32
        && matches!(bytes.next(), Some(b'a'..=b'z'))
        && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'-'))
}

/// An MCP tool name (spec 2025-11-25): 1 to 128 of `A-Z a-z 0-9 _ - .`.
pub fn is_tool_name(name: &str) -> bool {
    (1..=128).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'_' | b'-' | b'.'))
}

/// A local user name (`^[a-z_][a-z0-9_-]{0,31}$`) or a uid.
fn is_user_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    (1..=32).contains(&name.len())
        && (name.bytes().all(|b| b.is_ascii_digit())
            || (matches!(bytes.next(), Some(b'a'..=b'z' | b'_'))
                && bytes.all(|b| matches!(b, b'a'..=b'z' | b'0'..=b'9' | b'_' | b'-'))))
}

fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b'A'..=b'Z' | b'a'..=b'z' | b'_'))
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// The name the agent sees for `tool` of `upstream`: `<upstream>__<tool>`.
pub fn agent_tool_name(upstream: &str, tool: &str) -> String {
    format!("{upstream}__{tool}")
}

/// The upstream and tool of an agent-facing gateway tool name, if it is one.
pub fn split_agent_tool_name(name: &str) -> Option<(&str, &str)> {
    let (upstream, tool) = name.split_once("__")?;
    (is_upstream_name(upstream) && is_tool_name(tool)).then_some((upstream, tool))
}

#[cfg(test)]
mod tests;

//! What applying an operation does: its [`Effect`], one kind per module
//! (`builtin`, `command`, `webhook`, `mcp`, `pin`, `rule`, `hook`), each a definition as the
//! registry file writes it and an [`EffectKind`]: its checks at load and
//! the properties the signer and every head read without running it.
//!
//! Adding a kind is a variant here and a module beside this one (and, for
//! a kind a head runs, a module in the gate). How a kind runs is the gate's
//! business: this module must not perform an effect or name a head.

mod builtin;
mod command;
pub(crate) mod hook;
mod mcp;
mod pin;
mod rule;
mod webhook;

use serde::{Deserialize, Serialize};

use crate::{Deliveries, RegistryError};
use countersign_verifier::lifetimes::INTENT_LEASE_MARGIN;

pub use builtin::Builtin;
pub use command::Command;
pub use hook::{AGENT_OPERATIONS, HookAnswer};
pub use mcp::McpTool;
pub use pin::PinTools;
pub use rule::Rule;
pub use webhook::{DEFAULT_ACCEPT_STATUS, Webhook};

/// What one effect kind is, read from its definition without running it.
/// Implemented once per kind, in that kind's module.
pub trait EffectKind {
    /// The kind as the registry file names it (`kind = "..."`).
    fn name(&self) -> &'static str;

    /// Refuses a definition of this kind that would make its effect
    /// ambiguous, for the operation `operation` (which requires a passkey
    /// when `require_passkey`); the error names the operation and the field.
    fn check(&self, operation: &str, require_passkey: bool) -> Result<(), RegistryError>;

    /// For a kind a head applies outside the ledger, between an intent and
    /// a completion: how long one application may run before it is
    /// stopped. `None` for a kind applied inside the ledger's one
    /// transaction, or by no head.
    fn timeout(&self) -> Option<std::time::Duration>;

    /// For a kind a head applies outside the ledger: how long its intent
    /// stays leased to the head that recorded it ([`intent_lease_for`] its
    /// timeout), so that neither reconcile nor a person settles it while it
    /// may still run. Derived from [`EffectKind::timeout`]; not overridden.
    fn intent_lease(&self) -> Option<time::Duration> {
        self.timeout().map(intent_lease_for)
    }

    /// Whether the signer may sign the proof of an uncertain, replay-safe
    /// application again (`ReissueForReconcile`) for reconcile to present
    /// anew: only for a kind whose receiver verifies the proof itself.
    fn proof_reissuable(&self) -> bool;

    /// Who carries out a person's approval of an operation of this kind:
    /// the deliveries the signer accepts and every approver interface
    /// offers, so that no interface asks for a decision whose delivery is
    /// then refused.
    fn deliveries(&self) -> Deliveries;
}

/// What applying an operation does. Matched exhaustively wherever it is
/// acted on: a new kind does not compile until each head decides, before
/// consuming a proof, to run it or refuse it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase", deny_unknown_fields)]
pub enum Effect {
    /// A built-in effect over the ledger's state store.
    Builtin(Builtin),
    /// A fixed program run without a shell, canonical arguments on stdin.
    Command(Command),
    /// An HTTP POST of the canonical arguments to a fixed URL, with the
    /// proof, the nonce and the proposal id in headers.
    Webhook(Webhook),
    /// A call of a pinned tool of an upstream MCP server, by the gateway.
    /// Made from `gateway.toml` and the pins, never written in the
    /// registry file.
    Mcp(McpTool),
    /// `gateway.pin` only: the arguments are tool definitions a person
    /// accepted, and the head that executes the proof pins them in the
    /// pins file beside its registry. Made from `gateway.toml`, never
    /// written in the registry file.
    Pin,
    /// `rule.create` only: the arguments are an auto-approval rule
    /// definition, and a person's approval of the proposal creates the rule
    /// in the signer. No proof is issued and no head ever applies it.
    Rule,
    /// The agent operations only (`agent.shell`, ...): a coding agent's
    /// hook proposed one tool call, and a proof lets a hook head answer
    /// "allow" to the agent once, recorded as the completion; the agent's
    /// own runtime then runs the call. No other head applies it.
    Hook,
}

impl Effect {
    /// This effect's kind: its name, checks and properties.
    pub fn kind(&self) -> &dyn EffectKind {
        match self {
            Effect::Builtin(builtin) => builtin,
            Effect::Command(command) => command,
            Effect::Webhook(webhook) => webhook,
            Effect::Mcp(mcp) => mcp,
            Effect::Pin => &PinTools,
            Effect::Rule => &Rule,
            Effect::Hook => &HookAnswer,
        }
    }

    /// The checks of this effect for the operation `operation`: the one
    /// operation `rule.create` is backed by a rule effect, and the kind's
    /// own checks.
    pub(crate) fn check(
        &self,
        operation: &str,
        require_passkey: bool,
    ) -> Result<(), RegistryError> {
        if operation == crate::rule::RULE_CREATE && !matches!(self, Effect::Rule) {
            return Err(rule::backs_only_rule_create(operation));
        }
        if AGENT_OPERATIONS.contains(&operation) != matches!(self, Effect::Hook) {
            return Err(hook::backs_only_agent_operations(operation));
        }
        if operation == crate::gateway::PIN_OPERATION {
            return Err(invalid(
                operation,
                "kind",
                "gateway.pin is made from gateway.toml, not declared in the registry file".into(),
            ));
        }
        if matches!(self, Effect::Mcp(_) | Effect::Pin) {
            return Err(invalid(
                operation,
                "kind",
                format!(
                    "\"{}\" operations come from gateway.toml and the pinned tools, not the registry file",
                    self.kind().name()
                ),
            ));
        }
        self.kind().check(operation, require_passkey)
    }
}

/// Bounds of an effect's timeout outside the ledger, in seconds.
const TIMEOUT_SECS: std::ops::RangeInclusive<u64> = 1..=300;

/// How long the intent of an effect that runs for at most `timeout` stays
/// leased to the head that recorded it: the timeout plus
/// [`INTENT_LEASE_MARGIN`], time to record the completion after the effect
/// ended or was killed.
pub fn intent_lease_for(timeout: std::time::Duration) -> time::Duration {
    let secs = i64::try_from(timeout.as_secs()).unwrap_or(i64::MAX);
    time::Duration::seconds(secs).saturating_add(INTENT_LEASE_MARGIN)
}

/// An [`RegistryError::InvalidField`] of `operation`'s `effect.<field>`.
fn invalid(operation: &str, field: &str, reason: String) -> RegistryError {
    RegistryError::InvalidField {
        operation: operation.to_owned(),
        field: format!("effect.{field}"),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One effect of every kind. The match makes this list fail to compile
    /// when a kind is added without a sample.
    fn one_of_every_kind() -> Vec<Effect> {
        let samples = vec![
            Effect::Builtin(Builtin {
                name: "schedule.create".into(),
            }),
            Effect::Command(Command {
                program: "/bin/true".into(),
                args: vec![],
                timeout_secs: 7,
            }),
            Effect::Webhook(Webhook {
                url: "http://127.0.0.1:9/hook".into(),
                timeout_secs: 9,
                accept_status: vec![204],
                trust_roots: None,
                allow_plain_http_loopback: true,
            }),
            Effect::Mcp(McpTool {
                upstream: "files".into(),
                tool: "write_file".into(),
                tool_sha256: "0".repeat(64),
                timeout_secs: 11,
            }),
            Effect::Pin,
            Effect::Rule,
            Effect::Hook,
        ];
        for effect in &samples {
            match effect {
                Effect::Builtin(_)
                | Effect::Command(_)
                | Effect::Webhook(_)
                | Effect::Mcp(_)
                | Effect::Pin
                | Effect::Rule
                | Effect::Hook => {}
            }
        }
        samples
    }

    #[test]
    fn each_kind_says_its_name_lease_reissue_and_deliveries() {
        let seconds = |s| Some(time::Duration::seconds(s) + INTENT_LEASE_MARGIN);
        use Deliveries::*;
        let expected = [
            ("builtin", None, false, AnyHead),
            ("command", seconds(7), false, AnyHead),
            ("webhook", seconds(9), true, AnyHead),
            ("mcp", seconds(11), false, HandoffOnly),
            ("pin", seconds(10), false, AnyHead),
            ("rule", None, false, NoProof),
            ("hook", None, false, ProposingSession),
        ];
        for (effect, (name, lease, reissuable, deliveries)) in
            one_of_every_kind().iter().zip(expected)
        {
            let kind = effect.kind();
            assert_eq!(kind.name(), name);
            assert_eq!(kind.intent_lease(), lease, "{name}");
            assert_eq!(kind.proof_reissuable(), reissuable, "{name}");
            assert_eq!(kind.deliveries(), deliveries, "{name}");
        }
    }

    #[test]
    fn each_kind_names_itself_as_it_serializes() {
        for effect in one_of_every_kind() {
            let json = serde_json::to_value(&effect).unwrap_or_default();
            assert_eq!(json["kind"], effect.kind().name());
        }
    }
}

//! One registered operation: its definition as loaded, its contract revision,
//! its compiled schema and parsed preview template, and the two things done
//! with proposed arguments (validate them into [`CanonicalArgs`], render the
//! preview from them).
//!
//! An `Operation` can only be built by loading a registry (`definition.rs`),
//! so its revision, validator and template always match its fields. This
//! module must not accept arguments without schema validation.

use std::fmt;
use std::sync::OnceLock;

use countersign_verifier::canonical;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::preview::{self, Template};
use crate::{ArgumentsError, CanonicalArgs, Effect, PremiseRead, PremiseSource, Quorum, schema};
use countersign_verifier::Premise;

/// What applying an operation risks, as the registry file declares it
/// (`class`) and every approver interface shows it: read operations
/// observe, the others change something, each in its own way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Class {
    /// Observes state only.
    Read,
    /// Changes state.
    Write,
    /// Deletes state: what it removes may not come back.
    Delete,
    /// Runs a program the arguments name: it can do whatever that program does.
    Exec,
    /// Sends data over the network, out of this installation's reach.
    Network,
}

impl Class {
    /// Every class, in the order the docs list them.
    pub const ALL: [Class; 5] = [
        Class::Read,
        Class::Write,
        Class::Delete,
        Class::Exec,
        Class::Network,
    ];

    /// The name, as written in the registry file.
    pub fn as_str(self) -> &'static str {
        match self {
            Class::Read => "read",
            Class::Write => "write",
            Class::Delete => "delete",
            Class::Exec => "exec",
            Class::Network => "network",
        }
    }

    /// The class named `name` as the registry file writes it.
    pub fn parse(name: &str) -> Option<Class> {
        Class::ALL.into_iter().find(|c| c.as_str() == name)
    }

    /// What the class means, in a few words a person reads beside it.
    pub fn meaning(self) -> &'static str {
        match self {
            Class::Read => "observes state only",
            Class::Write => "changes state",
            Class::Delete => "deletes state",
            Class::Exec => "runs a program",
            Class::Network => "sends data over the network",
        }
    }
}

/// A registered operation. Fields are the definition from the registry file;
/// the contract revision, compiled schema and template are derived at load.
pub struct Operation {
    /// Dotted lowercase name, e.g. `schedule.create`.
    pub name: String,
    /// One-line human description.
    pub description: String,
    /// Read or write.
    pub class: Class,
    /// JSON Schema (draft 2020-12) of the arguments: a closed object.
    pub schema: Value,
    /// Preview template with `{arg}` placeholders.
    pub preview: String,
    /// What applying the operation does.
    pub effect: Effect,
    /// Whether an interrupted application may be replayed with the same
    /// idempotency key.
    pub replay_safe: bool,
    /// Whether executing requires a proof whose signer checked a passkey
    /// assertion with user verification (`amr` containing `passkey-uv`);
    /// `require_passkey` in the registry file, false when absent.
    pub require_passkey: bool,
    /// The quorum of named approvers whose approvals the signer needs
    /// before it issues a proof (`quorum` in the registry file), or `None`
    /// for a decision by any one approver of the principal.
    pub quorum: Option<Quorum>,
    /// Requested proof lifetime in seconds (1..=1800), else the policy default.
    pub lifetime_secs: Option<u64>,
    /// How long a proposal of it waits for a decision before it expires,
    /// in seconds (1..=604800), else the policy's decision window.
    pub decision_window_secs: Option<u64>,
    /// Who is told again, and when, if no one decided a proposal of it
    /// (`escalation` in the registry file), or `None`.
    pub escalation: Option<crate::Escalation>,
    /// The fact about current state a proposal of this operation is
    /// approved under (`[operation.premise]`), if any.
    pub premise: Option<PremiseSource>,
    /// The RFC 6901 pointer of the string argument a Cedar policy sees as the
    /// request's resource (`target` in the registry file), checked at load
    /// against the schema; see [`Operation::target`].
    pub(crate) target: Option<String>,
    /// Free-text argument names, shown as model-supplied and unverified.
    pub unverified_fields: Vec<String>,
    pub(crate) revision: String,
    /// The canonical JSON its revision hashes.
    pub(crate) contract: String,
    pub(crate) template: Template,
    /// The compiled schema: at load ([`crate::Schemas::Compiled`]), or on
    /// the first validation ([`crate::Schemas::OnFirstUse`]); a schema that
    /// does not compile is kept as its reason.
    pub(crate) validator: OnceLock<Result<jsonschema::Validator, String>>,
    /// The schema is an upstream tool's (a gateway operation): compiled in
    /// the draft it declares, its unknown formats not asserted.
    pub(crate) upstream_schema: bool,
    /// A gateway tool's annotations as its upstream declared them when it
    /// was pinned (`readOnlyHint`, ...): the upstream's claim, shown as
    /// such on the card, never what decides.
    pub(crate) upstream_annotations: Option<Value>,
}

impl fmt::Debug for Operation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Operation")
            .field("name", &self.name)
            .field("class", &self.class)
            .field("effect", &self.effect)
            .field("replay_safe", &self.replay_safe)
            .field("require_passkey", &self.require_passkey)
            .field("quorum", &self.quorum)
            .field("lifetime_secs", &self.lifetime_secs)
            .field("decision_window_secs", &self.decision_window_secs)
            .field("escalation", &self.escalation)
            .field("premise", &self.premise)
            .field("target", &self.target)
            .field("contract_revision", &self.revision)
            .finish_non_exhaustive()
    }
}

impl Operation {
    /// SHA-256 hex of the canonical JSON of the full definition.
    pub fn contract_revision(&self) -> &str {
        &self.revision
    }

    /// The canonical JSON of the full definition, which the contract
    /// revision hashes: what an evidence bundle carries as the contract.
    pub fn contract(&self) -> &str {
        &self.contract
    }

    /// Whether a proof for this operation must carry passkey assurance
    /// (`amr` containing `passkey-uv`, see
    /// `countersign_verifier::Claims::passkey_verified`): a head refuses
    /// one without it as `passkey_required`, before consuming anything.
    pub fn requires_passkey(&self) -> bool {
        self.require_passkey
    }

    /// What approving it risks, as every approver interface shows it: an
    /// agent operation by its tool class (whatever the registry file's
    /// `class` says: `agent.shell` runs a program, `agent.web` reaches the
    /// network, `agent.read` observes), any other its `class`.
    pub fn risk(&self) -> Class {
        match (&self.effect, self.name.as_str()) {
            (crate::Effect::Hook, "agent.read") => Class::Read,
            (crate::Effect::Hook, "agent.shell") => Class::Exec,
            (crate::Effect::Hook, "agent.web") => Class::Network,
            (crate::Effect::Hook, _) => Class::Write,
            _ => self.class,
        }
    }

    /// The pointer (RFC 6901) of the string argument an operator's policy
    /// sees as the request's resource (`target = "/tool_input/command"` in
    /// the registry file), if the operation names one. Not part of the
    /// contract revision.
    pub fn target(&self) -> Option<&str> {
        self.target.as_deref()
    }

    /// The target these arguments name: the string at [`Operation::target`],
    /// or `None` when the operation names no target, or when the pointer
    /// goes inside an open object (as `tool_input`) and finds nothing there
    /// or something that is not a string.
    pub fn target_of<'a>(&self, arguments: &'a Value) -> Option<&'a str> {
        self.target
            .as_deref()
            .and_then(|pointer| crate::target::target_of(pointer, arguments))
    }

    /// Whether only a coding agent's hook proposes it (an agent operation,
    /// effect kind `hook`): a caller of the data operations could
    /// otherwise dress a request of its own as a tool call an agent is
    /// about to run.
    pub fn proposed_by_hooks(&self) -> bool {
        matches!(self.effect, crate::Effect::Hook)
    }

    /// The read (or command) these arguments' premise makes, if the operation
    /// declares one (`Ok(None)` if not); `PremiseKey` if one is declared
    /// and these arguments name no usable key.
    pub fn premise_read(
        &self,
        args: &CanonicalArgs,
    ) -> Result<Option<PremiseRead>, ArgumentsError> {
        match &self.premise {
            None => Ok(None),
            Some(source) => source
                .read_for(args)
                .map(Some)
                .map_err(|key| ArgumentsError::PremiseKey(key.to_owned())),
        }
    }

    pub(crate) fn template(&self) -> &Template {
        &self.template
    }

    /// Strictly parses `json` (at most 64 KiB), requires an object that
    /// matches the schema, and returns its canonical form and hash.
    pub fn validate_arguments(&self, json: &[u8]) -> Result<CanonicalArgs, ArgumentsError> {
        let value = canonical::parse(json, canonical::MAX_ARGS_BYTES)?;
        if !value.is_object() {
            return Err(ArgumentsError::NotAnObject);
        }
        let validator = self
            .validator
            .get_or_init(|| {
                if self.upstream_schema {
                    schema::compile_upstream(&self.schema)
                } else {
                    schema::compile(&self.schema)
                }
            })
            .as_ref()
            .map_err(|reason| ArgumentsError::Schema(vec![format!("the schema {reason}")]))?;
        let errors = schema::errors(validator, &value);
        if !errors.is_empty() {
            return Err(ArgumentsError::Schema(errors));
        }
        CanonicalArgs::from_value(value)
    }

    /// Renders the authoritative preview from canonical arguments, the
    /// premise the signer read (for an operation that declares one) and
    /// the proposer's note (model-supplied). See the crate docs for the
    /// layout.
    pub fn render_preview(
        &self,
        args: &CanonicalArgs,
        premise: Option<&Premise>,
        note: &str,
    ) -> String {
        preview::render(self, args, premise, note)
    }
}
